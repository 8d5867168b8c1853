#!/bin/bash
# Issue 16 in one device call on nvidia-h200-x4 (or -x8; -x2 gives the pair rows):
#  1. the seed's campaign over every directed pair with the ce backend, and with the
#     nccl backend one process per GPU under mpirun (seed 004 used torchrun), each with
#     its wall time, analyze and bench/truth_check.py (causality, clock bound, CV,
#     monotone medians, model error per pair);
#  2. the all-pairs matrix at 1 GiB uni and bidir (bench gpu) and torch send/recv
#     (shared/reference/torch_sendrecv.py) for the same pairs;
#  3. ce+host8 on all GPUs, and the nccl collectives one process per GPU;
#  4. predict --measure on the ce campaign: NCCL allreduce/allgather predicted from the
#     link models against measured (goal: within 15 % at >= 1 MiB), on 2 GPUs and on all;
#  5. test_gpu.
# Usage: bench/multi_gpu_session.sh DIR OUTDIR  (DIR holds p2pscope, test_gpu, torch_sendrecv.py)
set -u
DIR=$(cd "${1:?DIR with p2pscope and test_gpu}" && pwd)
OUT=${2:-multi-gpu-session}
HERE=$(cd "$(dirname "$0")" && pwd)
P=$DIR/p2pscope
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
NGPU=$(nvidia-smi -L | grep -c '^GPU')
{ nvidia-smi -L; nvidia-smi topo -m; "$P" --version; } > "$OUT/machine.txt" 2>&1
timed() {  # NAME CMD...: runs CMD, logs it, records its wall time
  local name=$1; shift
  echo "+ $*" >> "$OUT/commands.txt"
  local t0; t0=$(date +%s.%N)
  "$@" > "$OUT/$name.log" 2>&1; local rc=$?
  echo "$name: rc $rc, $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s wall" | tee -a "$OUT/walls.txt"
}
CAMPAIGN="--sizes 1:1G --reps 10 --warmup 5 --drift 10s --thermal-warmup off"
timed ce-campaign "$P" profile --backend ce $CAMPAIGN --out "$OUT/ce"
"$P" analyze "$OUT/ce" > "$OUT/ce.analyze.log" 2>&1
python3 "$HERE/truth_check.py" "$OUT/ce" ce > "$OUT/ce.check.txt" 2>&1
if command -v mpirun > /dev/null; then
  timed nccl-campaign env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$NGPU" -x NCCL_NVLS_ENABLE=0 \
    "$P" profile --backend nccl $CAMPAIGN --out "$OUT/nccl"
  "$P" analyze "$OUT/nccl" > "$OUT/nccl.analyze.log" 2>&1
  python3 "$HERE/truth_check.py" "$OUT/nccl" nccl > "$OUT/nccl.check.txt" 2>&1
fi
timed matrix-uni "$P" bench gpu --sizes 1G --pattern uni --format json --out "$OUT/matrix-uni.json"
timed matrix-bidir "$P" bench gpu --sizes 1G --pattern bidir --format json --out "$OUT/matrix-bidir.json"
TS=${TORCH_SENDRECV:-$DIR/torch_sendrecv.py}
if [ -f "$TS" ]; then
  for s in $(seq 0 $((NGPU - 1))); do for d in $(seq 0 $((NGPU - 1))); do
    [ "$s" = "$d" ] && continue
    timeout 120 python3 "$TS" --src "$s" --dst "$d" > "$OUT/torch_${s}_${d}.txt" 2>&1
  done; done
fi
timed ce-host8 "$P" bench gpu --backend ce+host8 --sizes 1G --pattern uni
P2PSCOPE=$P bash "$HERE/nccl_collectives_ranks.sh" "$OUT/collectives" > "$OUT/collectives.log" 2>&1
timed predict-all "$P" predict "$OUT/ce" --ops allreduce,allgather --sizes 64K,1M,16M,256M,1G --measure \
  --html "$OUT/predict-all.html" --format csv --out "$OUT/predict-all.csv"
mkdir -p "$OUT/ce2" && python3 - "$OUT/ce/links.json" "$OUT/ce2/links.json" <<'PY'
import json, sys  # the links among GPUs 0 and 1 only: predict --measure on two GPUs
j = json.load(open(sys.argv[1])); j['links'] = [l for l in j['links'] if l['src'] < 2 and l['dst'] < 2]
json.dump(j, open(sys.argv[2], 'w'))
PY
timed predict-2 "$P" predict "$OUT/ce2" --ops allreduce,allgather --sizes 64K,1M,16M,256M,1G --measure \
  --html "$OUT/predict-2.html" --format csv --out "$OUT/predict-2.csv"
( cd "$HERE/.." && P2PSCOPE_BIN=$P timeout 600 "$DIR/test_gpu" --gtest_brief=1 > "$OUT/test_gpu.txt" 2>&1; echo "test_gpu rc=$?" >> "$OUT/test_gpu.txt" )
echo "--- walls"; cat "$OUT/walls.txt"
echo "--- truth checks"; grep -hE "^## |PASS|FAIL|worst CV" "$OUT"/*.check.txt
echo "--- predict vs NCCL (error_pct at >= 1 MiB, goal |error| <= 15 %)"
for f in "$OUT"/predict-*.csv; do echo "$f"; awk -F, 'NR==1 || $4 >= 1048576' "$f" | cut -d, -f1,3,6,10,11; done
echo "--- test_gpu"; grep -E "PASSED|FAILED|rc=" "$OUT/test_gpu.txt"
tar czf "$OUT.tgz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && echo "archive: $OUT.tgz"
