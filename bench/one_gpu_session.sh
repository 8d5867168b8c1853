#!/usr/bin/env bash
# Everything one lent GPU can check, in one device call: the GPU tests, the
# measurement-truth campaigns (bench/truth.sh), export and predict on the real staged
# campaign, contention between GPU and host memory, and TCP from GPU memory.
#   P2PSCOPE=.device/one/p2pscope TEST_GPU=.device/one/test_gpu bash bench/one_gpu_session.sh OUTDIR
set -uo pipefail
BIN=${P2PSCOPE:-build/p2pscope}
OUT=${1:-p2pscope-out/one-gpu}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
if [ -n "${TEST_GPU:-}" ]; then
  P2PSCOPE_BIN=$(readlink -f "$BIN") timeout 150 "$TEST_GPU" --gtest_brief=1 > "$OUT/test_gpu.log" 2>&1
  echo "test_gpu rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/test_gpu.log" | tr '\n' ' ')"
fi
LONG_SAMPLES=${LONG_SAMPLES:-1} P2PSCOPE=$BIN bash "$HERE/truth.sh" "$OUT/truth" > "$OUT/truth.txt" 2> "$OUT/truth.err"
echo "truth rc=$?"
echo "## export and predict on the staged campaign"
for f in astra-sim json csv; do "$BIN" export "$OUT/truth/staged" --to $f --out "$OUT/export.$f" 2>&1 | tail -2; done
head -40 "$OUT/export.astra-sim"
"$BIN" predict "$OUT/truth/staged" --ops allreduce,allgather --sizes 1M,64M,1G 2>&1 | tail -12
"$BIN" analyze "$OUT/truth/staged" --predictions "$OUT/export.csv" --out "$OUT/roundtrip" 2>&1 | grep -iE "error|compar|mape" | head -5
echo "## contention between GPU 0 and host memory (staged)"
for pat in fan-in fan-out all-to-all; do
  "$BIN" profile --pattern $pat --backend staged --sizes 64K,16M,256M --reps 5 --warmup 2 --out "$OUT/cont-$pat" 2>&1 | tail -8
done
echo "## TCP from GPU memory over loopback"
"$BIN" bench tcp --loopback --mem gpu --channels 2 --size 256M --iters 3 --verify 2>&1 | tail -6
