#!/bin/bash
# The session's closing device call (issues 30 and 29) on the final binary: `p2pscope run`
# twice, the seed's torchrun campaign against one process with the bootstrap's spin on
# (the default) and off (P2PSCOPE_BOOTSTRAP_SPIN_US=0), the NCCL model out of sample once
# more (bench/predict_nccl.sh: spans and the GPU's own time), and test_gpu.
# Usage: bench/lease_last.sh OUTDIR; binaries in .device/; packs OUTDIR.tar.gz.
set -u
OUT=${1:?usage: bench/lease_last.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
D=$ROOT/.device
P=$D/p2pscope
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{ nvidia-smi -L; nproc; "$P" --version; date -u; } > "$OUT/machine.txt" 2>&1
. "$(dirname "$0")/part.sh"  # part NAME LIMIT_S CMD...
part run1 90 "$P" run --out "$OUT/run1"
part run2 90 "$P" run --out "$OUT/run2"
PLAN="--backend nccl --sizes 1:1G --reps 10 --warmup 5 --drift 0 --thermal-warmup off --nccl-calibration off"
TORCHRUN=(python3 -m torch.distributed.run); command -v torchrun > /dev/null && TORCHRUN=(torchrun)
part nccl-one 90 "$P" profile $PLAN --out "$OUT/nccl-one"
part torchrun-spin 120 "${TORCHRUN[@]}" --nproc-per-node 4 --no-python "$P" profile $PLAN --out "$OUT/torchrun-spin"
part torchrun-nospin 120 env P2PSCOPE_BOOTSTRAP_SPIN_US=0 "${TORCHRUN[@]}" --nproc-per-node 4 --no-python "$P" profile \
  $PLAN --out "$OUT/torchrun-nospin"
part predict 200 env P2PSCOPE="$P" bash "$ROOT/bench/predict_nccl.sh" "$OUT/predict"
part test_gpu 120 env P2PSCOPE_BIN="$P" P2PSCOPE_REFNET="$D/libnccl-net-p2pscope.so" "$D/test_gpu" --gtest_brief=1
echo "== walls"; cat "$OUT/walls.txt"
for r in run1 run2; do echo "== $r"; grep -h "ok in\|failed in\|timed out" "$OUT/$r.log" | tr '\n' ' '; echo; grep -A7 "^Results" "$OUT/$r.log"; grep -h "clock alignment" "$OUT/$r/profile.log"; done
echo "== torchrun"; grep -h "launcher path" "$OUT"/torchrun-*.log
python3 "$ROOT/bench/campaign_rates.py" "$OUT/nccl-one" "$OUT/torchrun-spin" "$OUT/torchrun-nospin" || echo "torchrun rates failed"
echo "== predict"; tail -34 "$OUT/predict.log"
echo "== test_gpu"; grep -E "PASSED|FAILED|SKIPPED|tests ran" "$OUT/test_gpu.log" | tail -15
rm -f "$OUT"/*/trace*.json "$OUT"/*/*/trace*.json 2>/dev/null
tar czf "$OUT.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && rm -rf "$OUT"
