#!/bin/bash
# Second device call of the session (issues 30 and 29): where `p2pscope run`'s time goes
# (P2PSCOPE_TRACE_PHASES in every step and child), the clock sync with 1, 4 and 8
# pollers (each on its own line) and host jitter, bench nccl's GPU-side check against
# none at the run's sizes, and test_gpu (the GPU check must pass every op's check).
# Usage: bench/lease_probe2.sh OUTDIR   (binaries in .device/); packs OUTDIR.tar.gz.
set -u
OUT=${1:?usage: bench/lease_probe2.sh OUTDIR}
D=$(cd "$(dirname "$0")/.." && pwd)/.device
P=$D/p2pscope
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{ nvidia-smi -L; nproc; "$P" --version; date -u; } > "$OUT/machine.txt" 2>&1
. "$(dirname "$0")/part.sh"  # part NAME LIMIT_S CMD...
for np in 1 4 8; do
  part clock-p$np 60 env P2PSCOPE_CLOCK_POLLERS=$np "$P" profile --backend ce --sizes 1:1G:4 --reps 10 --drift 5s \
    --thermal-warmup off --nccl-calibration off --out "$OUT/clock-p$np"
  echo "pollers $np: $(grep -h 'clock alignment' "$OUT/clock-p$np.log" | head -1)"
done
part ar-gpucheck 60 env P2PSCOPE_TRACE_PHASES=1 "$P" bench nccl --op allreduce --sizes 1M,64M,1G --format json --out "$OUT/ar-check.json" --force
part ar-nocheck 60 env P2PSCOPE_TRACE_PHASES=1 "$P" bench nccl --op allreduce --sizes 1M,64M,1G --check off --format json --out "$OUT/ar-nocheck.json" --force
part check-types 90 "$P" bench nccl --op all --dtype bfloat16 --sizes 1K,1M,256M --in-place on --format json --out "$OUT/check-bf16.json" --force
part check-int8 90 "$P" bench nccl --op all --dtype int8 --gpus 0-2 --sizes 3,1M,100M --format json --out "$OUT/check-int8.json" --force
part run 90 env P2PSCOPE_TRACE_PHASES=1 "$P" run --out "$OUT/run"
part test_gpu 120 env P2PSCOPE_BIN="$P" P2PSCOPE_REFNET="$D/libnccl-net-p2pscope.so" "$D/test_gpu" --gtest_brief=1
echo "== walls"; cat "$OUT/walls.txt"
echo "== traces (ar-gpucheck)"; grep -h "p2pscope +" "$OUT/ar-gpucheck.log" | head -20
echo "== run"; grep -h "ok in\|failed\|Results" -A0 "$OUT/run.log" | head -14
echo "== run traces"; for f in "$OUT"/run/*.log; do echo "-- $(basename "$f")"; grep -h "p2pscope +" "$f" | head -16; done 2>/dev/null | head -120
echo "== checks"; grep -h "wrong\|error" "$OUT"/check-*.log | head; tail -3 "$OUT"/check-*.log
echo "== test_gpu"; grep -E "PASSED|FAILED|SKIPPED|tests ran" "$OUT/test_gpu.log" | tail -15
rm -f "$OUT"/clock-*/trace*.json 2>/dev/null
tar czf "$OUT.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && rm -rf "$OUT"
