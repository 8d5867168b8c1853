#!/bin/bash
# The session's last device call (issues 30 and 29): `p2pscope run` twice (phases traced),
# the clock bound on the issue's 4-GPU ce campaign, the host rate's repeatability
# (bench/host_rate.sh), and test_gpu. Usage: bench/lease_final.sh OUTDIR; binaries in .device/.
set -u
OUT=${1:?usage: bench/lease_final.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
D=$ROOT/.device
P=$D/p2pscope
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{ nvidia-smi -L; nproc; "$P" --version; date -u; } > "$OUT/machine.txt" 2>&1
. "$(dirname "$0")/part.sh"  # part NAME LIMIT_S CMD...
part run1 90 env P2PSCOPE_TRACE_PHASES=1 "$P" run --out "$OUT/run1"
part run2 90 "$P" run --out "$OUT/run2"
part clock 90 "$P" profile --backend ce --sizes 1:1G --reps 10 --drift 10s --thermal-warmup off --nccl-calibration off \
  --out "$OUT/clock"
part host_rate 120 env P2PSCOPE="$P" bash "$ROOT/bench/host_rate.sh" "$OUT/host_rate"
part test_gpu 120 env P2PSCOPE_BIN="$P" P2PSCOPE_REFNET="$D/libnccl-net-p2pscope.so" "$D/test_gpu" --gtest_brief=1
echo "== walls"; cat "$OUT/walls.txt"
for r in run1 run2; do echo "== $r"; grep -h "ok in\|failed in\|timed out" "$OUT/$r.log" | head -12; grep -A8 "^Results" "$OUT/$r.log"; done
echo "== run1 profile trace"; grep -h "p2pscope +" "$OUT/run1/profile.log" | head -14; grep -h '"seconds"' "$OUT"/run1/campaign/nccl-calibration/manifest.json
echo "== clock"; grep -h "clock alignment" "$OUT/clock.log" "$OUT/run1/profile.log" "$OUT/run2/profile.log"
echo "== host rate"; cat "$OUT/host_rate.log"
echo "== test_gpu"; grep -E "PASSED|FAILED|SKIPPED|tests ran" "$OUT/test_gpu.log" | tail -15
rm -f "$OUT"/clock/trace*.json 2>/dev/null
tar czf "$OUT.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && rm -rf "$OUT"
