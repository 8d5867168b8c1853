#!/bin/bash
# Several issues' device figures in one call on nvidia-h100-x4 / nvidia-h200-x4, each part
# bounded so that the call fits a short device budget:
#   1. issue 29: bench/predict_nccl.sh (campaign + NCCL calibration, NCCL measured on 2 and
#      all GPUs, predict three ways, export for ASTRA-sim);
#   2. issue 34: bench/engines.sh (bench tcp, bench net, iperf3 at 1..32 channels);
#   3. issue 30: test_gpu on every GPU (the reference plugin beside it);
#   4. issue 30: `p2pscope run`, its wall time and each step's.
# Usage: bench/one_call.sh OUTDIR   with the binaries in .device/ (p2pscope, test_gpu,
# libnccl-net-p2pscope.so, optionally iperf3/ with its libraries). Budgets: PREDICT_S (150),
# ENGINES_S (170), TESTS_S (80), RUN_S (70). Each part's log is OUTDIR/<part>.log; the
# wall time of each part is in OUTDIR/walls.txt.
set -u
OUT=${1:?usage: bench/one_call.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
D=$ROOT/.device
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export P2PSCOPE=$D/p2pscope P2PSCOPE_BIN=$D/p2pscope P2PSCOPE_REFNET=$D/libnccl-net-p2pscope.so
export PLUGIN=$P2PSCOPE_REFNET
if [ -x "$D/iperf3/iperf3" ]; then
  export IPERF3=$D/iperf3/iperf3 LD_LIBRARY_PATH=$D/iperf3${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
{ nvidia-smi -L; nproc; "$P2PSCOPE" --version; date -u; } > "$OUT/machine.txt" 2>&1
. "$(dirname "$0")/part.sh"  # part NAME LIMIT_S CMD...
part predict "${PREDICT_S:-150}" bash "$ROOT/bench/predict_nccl.sh" "$OUT/predict"
part engines "${ENGINES_S:-170}" env BUDGET_S=$((${ENGINES_S:-170} - 25)) RUN_S=30 bash "$ROOT/bench/engines.sh" "$OUT/engines"
part test_gpu "${TESTS_S:-80}" "$D/test_gpu" --gtest_brief=1
part run "${RUN_S:-70}" "$P2PSCOPE" run --out "$OUT/run"
echo "== predict"; tail -40 "$OUT/predict.log"
echo "== engines"; tail -60 "$OUT/engines.log"
echo "== test_gpu"; grep -E "PASSED|FAILED|SKIPPED|tests ran" "$OUT/test_gpu.log" | tail -15
echo "== run"; tail -12 "$OUT/run.log"
