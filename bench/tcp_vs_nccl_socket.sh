#!/bin/bash
# The TCP engine with GPU memory (bench tcp --mem gpu, server and client over
# 127.0.0.1) against NCCL's own socket transport between the same GPUs, same run:
# NCCL driven by p2pscope (bench gpu --backend nccl, one process per GPU) and by torch
# (bench/torch_sendrecv_ranks.py). Issue 6's goal: TCP engine >= 1.5x NCCL socket.
# Two GPUs: GPU 0 sends to GPU 1, NCCL with P2P and SHM off. One GPU: both ends on GPU
# 0, and each NCCL rank gets its own NCCL_HOSTID so NCCL accepts two ranks on one GPU
# and must use its network transport (say so in the results: it is a stand-in).
# Also checks, on the device, the launch paths: mpirun (if present) and a rank killed
# in the middle of a run. Usage: bench/tcp_vs_nccl_socket.sh OUTDIR   (P2PSCOPE=binary)
set -u
P=${P2PSCOPE:-build/p2pscope}
OUT=${1:-tcp-vs-nccl-socket}
HERE=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$OUT"
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
SRC=0; DST=1; [ "$NGPU" -lt 2 ] && DST=0
SIZE=${SIZE:-256M}
log() { echo "$*" | tee -a "$OUT/commands.txt"; }
log "gpus: $NGPU; GPU $SRC -> GPU $DST; size $SIZE"

# 1. The TCP engine, GPU memory at both ends, 1/2/4 channels.
for ch in 1 2 4; do
  port=$((18600 + ch))
  log "CUDA_VISIBLE_DEVICES=$DST p2pscope bench tcp --server --sessions 1 --bind 127.0.0.1 --port $port --format json"
  log "CUDA_VISIBLE_DEVICES=$SRC p2pscope bench tcp --client 127.0.0.1 --port $port --mem gpu --gpus 0 --channels $ch --chunk 1M --window 8 --size $SIZE --iters 10 --verify"
  CUDA_VISIBLE_DEVICES=$DST timeout 120 "$P" bench tcp --server --sessions 1 --bind 127.0.0.1 --port $port --accept-timeout 30 \
      --format json > "$OUT/tcp_server_ch$ch.json" 2> "$OUT/tcp_server_ch$ch.err" &
  sleep 1
  CUDA_VISIBLE_DEVICES=$SRC timeout 120 "$P" bench tcp --client 127.0.0.1 --port $port --mem gpu --gpus 0 --channels $ch \
      --chunk 1M --window 8 --size $SIZE --iters 10 --verify > "$OUT/tcp_client_ch$ch.txt" 2>&1
  wait
done

# 2. NCCL's socket transport driven by p2pscope, one process per GPU.
NCCL_SOCK="NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1"
ranks() {  # NAME ARGS...: two ranks over env (RANK/WORLD_SIZE), rank 0's output to NAME.txt
  local name=$1; shift
  local port=$((29700 + RANDOM % 1000))
  log "2 ranks: $NCCL_SOCK p2pscope $*"
  for r in 1 0; do
    local hid=""; [ "$NGPU" -lt 2 ] && hid="NCCL_HOSTID=p2pscope-bench-host$r"
    local dev=$SRC; [ $r = 1 ] && dev=$DST
    env $NCCL_SOCK $hid RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 CUDA_VISIBLE_DEVICES=$dev P2PSCOPE_RENDEZVOUS=127.0.0.1:$port \
      timeout 200 "$P" "$@" > "$OUT/$name.rank$r.txt" 2>&1 &
  done
  wait
}
ranks nccl_socket_uni bench gpu --backend nccl --pairs 0:1 --sizes 8,1M,32M,$SIZE --iters 10 --warmup 3
ranks nccl_socket_latency bench gpu --backend nccl --pattern latency --pairs 0:1 --sizes 8 --iters 10 --warmup 3
ranks nccl_socket_blocking bench gpu --backend nccl --pattern blocking --pairs 0:1 --sizes 8,1M --iters 50 --warmup 10
# NVLink / PCIe path (no socket forcing) where there are two GPUs: the harness vs torch.
if [ "$NGPU" -ge 2 ]; then
  NCCL_SOCK="" ranks nccl_p2p_uni bench gpu --backend nccl --pairs 0:1 --sizes 8,1M,32M,1G --iters 20
fi

# 3. The same socket transport driven by torch (the seeds' method).
HID=""; [ "$NGPU" -lt 2 ] && HID=--hostid
log "$NCCL_SOCK python3 torch_sendrecv_ranks.py --src $SRC --dst $DST $HID --sizes 8,1048576,33554432,268435456"
env $NCCL_SOCK timeout 300 python3 "$HERE/torch_sendrecv_ranks.py" --src $SRC --dst $DST $HID \
    --sizes 8,1048576,33554432,268435456 > "$OUT/torch_socket.txt" 2>&1

# 4. Launch paths on real hardware: mpirun (if any), a duplicate GPU, a rank killed mid-run.
if command -v mpirun >/dev/null; then
  log "mpirun -np 2 sh -c 'NCCL_HOSTID=h\$OMPI_COMM_WORLD_RANK exec p2pscope bench gpu --backend nccl ...' ($NCCL_SOCK)"
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 200 mpirun --allow-run-as-root --oversubscribe -np 2 \
    -x NCCL_P2P_DISABLE=1 -x NCCL_SHM_DISABLE=1 -x NCCL_SOCKET_IFNAME=lo -x NCCL_IB_DISABLE=1 -x NCCL_NVLS_ENABLE=0 \
    sh -c "NCCL_HOSTID=h\$OMPI_COMM_WORLD_RANK exec $P bench gpu --backend nccl --sizes 8,32M --iters 5" > "$OUT/mpirun.txt" 2>&1
  echo "mpirun rc=$?" >> "$OUT/mpirun.txt"
fi
if [ "$NGPU" -lt 2 ]; then  # two ranks on one GPU without NCCL_HOSTID: a clear refusal, no hang
  for r in 1 0; do RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 P2PSCOPE_RENDEZVOUS=127.0.0.1:29690 timeout 60 "$P" bench gpu --backend nccl \
      --sizes 1M > "$OUT/duplicate.rank$r.txt" 2>&1 & done; wait
fi
port=29691
for r in 1 0; do
  hid=""; [ "$NGPU" -lt 2 ] && hid="NCCL_HOSTID=kill$r"
  dev=$SRC; [ $r = 1 ] && dev=$DST
  ( env $NCCL_SOCK $hid RANK=$r WORLD_SIZE=2 LOCAL_RANK=0 CUDA_VISIBLE_DEVICES=$dev P2PSCOPE_RENDEZVOUS=127.0.0.1:$port \
      timeout 120 "$P" bench gpu --backend nccl --pairs 0:1,1:0 --sizes 1M:1G --iters 50 > "$OUT/killed.rank$r.txt" 2>&1;
    echo "rc=$? at $(date +%s.%N)" >> "$OUT/killed.rank$r.txt" ) &
done
sleep 8; echo "kill -9 rank 1 at $(date +%s.%N)" >> "$OUT/commands.txt"
for pid in $(pgrep -f "bench gpu --backend nccl --pairs 0:1,1:0"); do  # rank 1 (and its timeout wrapper)
  tr '\0' '\n' < /proc/$pid/environ 2>/dev/null | grep -qx "RANK=1" && kill -9 $pid && echo "killed pid $pid" >> "$OUT/commands.txt"
done
wait
echo "--- summary"; grep -h "GB/s\|recv\|total" "$OUT"/tcp_client_ch*.txt | head -20
tail -8 "$OUT/nccl_socket_uni.rank0.txt"; tail -5 "$OUT/nccl_socket_blocking.rank0.txt"; tail -5 "$OUT/torch_socket.txt"; tail -n 3 "$OUT"/killed.rank*.txt "$OUT/mpirun.txt"
