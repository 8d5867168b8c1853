#!/bin/bash
# What the NCCL model of `predict` (docs/predict.md) is built and checked on, in one call
# on a multi-GPU machine: every op of bench nccl at 2 GPUs and at all GPUs, with NCCL's
# own choices logged (NCCL_DEBUG_SUBSYS=TUNING: algorithm, protocol and channels per
# call; INIT/GRAPH: the channels it built), then with each protocol forced
# (NCCL_PROTO=LL / LL128 / Simple); torch.distributed's loop time beside bench nccl's as
# a second reference for nccl-tests' method. Raw files under OUTDIR, a summary on stdout.
# Every run here logs NCCL's TUNING lines, one per call, which slowed 4-GPU launches 1.5-2x:
# its small-size spans are the logging's, not NCCL's (the GPU's per-iteration times are
# unaffected); profile's calibration times with NCCL quiet for that reason.
# Usage: bench/nccl_model_data.sh OUTDIR   (P2PSCOPE=binary; SIZES, OPS, PROTOS, TORCH=0|1)
set -u
P=${P2PSCOPE:-build/p2pscope}
OUT=${1:-nccl-model-data}
HERE=$(cd "$(dirname "$0")" && pwd)
SIZES=${SIZES:-1:1G}
PSIZES=${PSIZES:-1,4,16,64,256,1K,4K,16K,64K,256K,1M,4M,16M,64M,256M,1G}  # forced protocols
OPS=${OPS:-allreduce allgather reducescatter alltoall broadcast sendrecv}
PROTOS=${PROTOS:-LL LL128 Simple}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$OUT"
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$NGPU" -ge 2 ] || { echo "nccl_model_data: needs 2 or more GPUs, found $NGPU" >&2; exit 2; }
LAST=$((NGPU - 1))
log() { echo "$*" >> "$OUT/commands.txt"; }
nccl() {  # NAME GPUS OP SIZES [ENV...]: one bench nccl sweep, its NCCL log beside
  local name=$1 gpus=$2 op=$3 sizes=$4; shift 4
  log "$* p2pscope bench nccl --op $op --gpus $gpus --sizes $sizes --check off --format json"
  env "$@" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,TUNING NCCL_DEBUG_FILE="$OUT/$name.nccl.%p.log" \
    timeout 240 "$P" bench nccl --op "$op" --gpus "$gpus" --sizes "$sizes" --check off --warmup 5 --iters 20 \
    --format json --out "$OUT/$name.json" 2> "$OUT/$name.err" || echo "FAILED $name (rc $?)" | tee -a "$OUT/commands.txt"
}
start=$(date +%s)
for gpus in 0,1 0-$LAST; do
  n=$([ "$gpus" = 0,1 ] && echo 2 || echo "$NGPU")
  for op in $OPS; do
    nccl "${op}_n${n}_default" "$gpus" "$op" "$SIZES"
    for proto in $PROTOS; do nccl "${op}_n${n}_${proto}" "$gpus" "$op" "$PSIZES" NCCL_PROTO=$proto; done
  done
done
echo "bench nccl runs: $(( $(date +%s) - start )) s"
if [ "${TORCH:-1}" = 1 ] && python3 -c 'import torch' 2>/dev/null; then
  for op in allreduce allgather; do
    log "python3 torch_collective_ranks.py --op $op --nranks $NGPU --sizes 1048576,8388608,67108864,536870912"
    timeout 200 python3 "$HERE/torch_collective_ranks.py" --op $op --nranks "$NGPU" \
      --sizes 1048576,8388608,67108864,536870912 > "$OUT/torch_${op}_n$NGPU.txt" 2>&1
  done
fi
# Summary: the default runs' busbw at a few sizes, and what NCCL chose there.
python3 - "$OUT" <<'EOF'
import json, glob, os, re, sys
out = sys.argv[1]
for f in sorted(glob.glob(os.path.join(out, "*_default.json"))):
    try:
        j = json.load(open(f))
    except Exception as e:
        print(os.path.basename(f), "unreadable:", e); continue
    rows = {r["size_bytes"]: r for r in j["rows"]}
    pick = [s for s in rows if s in (1 << 10, 1 << 16, 1 << 20, 1 << 23, 1 << 26, 1 << 29)]
    print(os.path.basename(f), " ".join(f"{s}:{rows[s]['time_us']:.1f}us/{rows[s]['busbw_GBps']:.1f}" for s in sorted(pick)))
EOF
