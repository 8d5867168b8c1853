#!/bin/bash
# `bench nccl` as one process per GPU (two ranks through the env launch, and mpirun
# when present) against the same NCCL collectives driven by torch.distributed
# (bench/torch_collective_ranks.py: nccl-tests' loop timing and the seeds' blocking
# timing), same run, same sizes. With one GPU both ranks share it under distinct
# NCCL_HOSTIDs, so NCCL uses its socket transport (a stand-in: say so). Also a rank
# killed mid-sweep: the survivor must keep the sizes already measured.
# Usage: bench/nccl_collectives_ranks.sh OUTDIR   (P2PSCOPE=binary; OPS, SIZES, DTYPE)
set -u
P=${P2PSCOPE:-build/p2pscope}
OUT=${1:-nccl-collectives-ranks}
HERE=$(cd "$(dirname "$0")" && pwd)
OPS=${OPS:-allreduce allgather reducescatter alltoall}
SIZES=${SIZES:-8,1048576,33554432,268435456}
DTYPE=${DTYPE:-float}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$OUT"
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
NET=""; [ "$NGPU" -lt 2 ] && NET="NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1"
log() { echo "$*" | tee -a "$OUT/commands.txt"; }
log "gpus: $NGPU; ops: $OPS; sizes: $SIZES; dtype: $DTYPE"

ranks() {  # NAME ARGS...: two ranks over env (RANK/WORLD_SIZE), each rank's output to NAME.rankR.txt
  local name=$1; shift
  local port=$((29700 + RANDOM % 1000))
  log "2 ranks: $NET p2pscope $*"
  for r in 1 0; do
    local hid="" dev=$r
    [ "$NGPU" -lt 2 ] && hid="NCCL_HOSTID=p2pscope-bench-host$r" && dev=0
    ( env $NET $hid RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 CUDA_VISIBLE_DEVICES=$dev P2PSCOPE_RENDEZVOUS=127.0.0.1:$port \
      timeout 300 "$P" "$@" > "$OUT/$name.rank$r.txt" 2>&1; echo "rc=$?" >> "$OUT/$name.rank$r.txt" ) &
  done
  wait
}
HID=""; [ "$NGPU" -lt 2 ] && HID=--hostid
for op in $OPS; do
  ranks "p2pscope_$op" bench nccl --op $op --dtype $DTYPE --sizes $SIZES --iters 20 --warmup 5
  log "$NET python3 torch_collective_ranks.py --op $op --dtype $DTYPE $HID --sizes $SIZES"
  env $NET timeout 300 python3 "$HERE/torch_collective_ranks.py" --op $op --dtype $DTYPE $HID --sizes $SIZES > "$OUT/torch_$op.txt" 2>&1
done
if command -v mpirun >/dev/null; then
  log "mpirun --bind-to none -np 2 sh -c 'NCCL_HOSTID=h\$OMPI_COMM_WORLD_RANK exec p2pscope bench nccl --op allreduce ...'"
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 200 mpirun --allow-run-as-root --oversubscribe --bind-to none \
    -np 2 -x NCCL_SOCKET_IFNAME=lo -x NCCL_IB_DISABLE=1 -x NCCL_NVLS_ENABLE=0 \
    sh -c "$([ "$NGPU" -lt 2 ] && echo 'NCCL_HOSTID=h$OMPI_COMM_WORLD_RANK') exec $P bench nccl --op allreduce --sizes 8,32M --iters 10 --format json" \
    > "$OUT/mpirun.json" 2> "$OUT/mpirun.err"
  echo "mpirun rc=$?" >> "$OUT/mpirun.err"
fi
# A rank killed mid-sweep: rank 0 must print the sizes done and why it stopped.
port=29691
for r in 1 0; do
  hid="" dev=$r; [ "$NGPU" -lt 2 ] && hid="NCCL_HOSTID=kill$r" && dev=0
  ( env $NET $hid RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 CUDA_VISIBLE_DEVICES=$dev P2PSCOPE_RENDEZVOUS=127.0.0.1:$port \
      timeout 120 "$P" bench nccl --op allreduce --sizes 1K:1G --iters 40 > "$OUT/killed.rank$r.txt" 2>&1;
    echo "rc=$? at $(date +%s.%N)" >> "$OUT/killed.rank$r.txt" ) &
done
sleep 8; echo "kill -9 rank 1 at $(date +%s.%N)" >> "$OUT/commands.txt"
for pid in $(pgrep -f "bench nccl --op allreduce --sizes 1K:1G"); do
  tr '\0' '\n' < /proc/$pid/environ 2>/dev/null | grep -qx "RANK=1" && kill -9 $pid && echo "killed pid $pid" >> "$OUT/commands.txt"
done
wait
echo "--- summary"
for op in $OPS; do cat "$OUT/p2pscope_$op.rank0.txt"; tail -n 1 "$OUT/p2pscope_$op.rank1.txt"; grep "^torch_" "$OUT/torch_$op.txt"; done
tail -n 4 "$OUT/killed.rank0.txt"; tail -n 2 "$OUT/mpirun.err" 2>/dev/null
