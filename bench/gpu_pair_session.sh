#!/bin/bash
# Everything issue 3 still needs a GPU pair for, in one device call (nvidia-h200-x2 or
# -x4): the anchors comparison (ce/sm/staged uni and bidir at 1 GiB, GPU ping-pong
# latency, nccl backend vs torch send/recv, blocking copies), the ce engines (push, pull,
# both, on 1-4 streams), two-path copies (ce+hostP), the one-process-per-GPU
# nccl harness and collectives vs torch over NVLink, the TCP engine vs NCCL sockets
# between two GPUs, and test_gpu. Carry a stripped p2pscope, test_gpu and a copy of
# shared/reference/torch_sendrecv.py in DIR (the device gets the working tree only).
# Usage: bench/gpu_pair_session.sh DIR OUTDIR   (DIR holds p2pscope, test_gpu, torch_sendrecv.py)
set -u
DIR=$(cd "${1:?DIR with p2pscope and test_gpu}" && pwd)
OUT=${2:-pair-session}
HERE=$(cd "$(dirname "$0")" && pwd)
P=$DIR/p2pscope
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
{ nvidia-smi -L; nvidia-smi topo -m; "$P" --version; } > "$OUT/machine.txt" 2>&1
( time P2PSCOPE=$P TORCH_SENDRECV=${TORCH_SENDRECV:-$DIR/torch_sendrecv.py} bash "$HERE/gpu_vs_anchors.sh" "$OUT/anchors" ) \
  > "$OUT/anchors.log" 2>&1
P2PSCOPE=$P bash "$HERE/ce_engines.sh" "$OUT/ce-engines" > "$OUT/ce-engines.log" 2>&1
P2PSCOPE=$P bash "$HERE/multipath.sh" "$OUT/multipath" > "$OUT/multipath.log" 2>&1
P2PSCOPE=$P bash "$HERE/nccl_collectives_ranks.sh" "$OUT/collectives" > "$OUT/collectives.log" 2>&1
DTYPE=bfloat16 OPS=allreduce P2PSCOPE=$P bash "$HERE/nccl_collectives_ranks.sh" "$OUT/collectives-bf16" > "$OUT/collectives-bf16.log" 2>&1
P2PSCOPE=$P bash "$HERE/tcp_vs_nccl_socket.sh" "$OUT/tcp-vs-nccl" > "$OUT/tcp-vs-nccl.log" 2>&1
( cd "$HERE/.." && P2PSCOPE_BIN=$P timeout 600 "$DIR/test_gpu" > "$OUT/test_gpu.txt" 2>&1; echo "test_gpu rc=$?" >> "$OUT/test_gpu.txt" )
echo "--- test_gpu"; grep -E "PASSED|FAILED|rc=" "$OUT/test_gpu.txt"
echo "--- anchors"; cat "$OUT/anchors/comparison.md" 2>/dev/null
echo "--- ce engines"; cat "$OUT/ce-engines/table.md" 2>/dev/null
echo "--- two paths (ce+hostP)"; cat "$OUT/multipath/table.md" 2>/dev/null
echo "--- collectives"; tail -n 30 "$OUT/collectives.log"
echo "--- tcp vs nccl"; tail -n 20 "$OUT/tcp-vs-nccl.log"
# One archive: the device tool brings back a limited number of files.
tar czf "$OUT.tgz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && echo "archive: $OUT.tgz"
