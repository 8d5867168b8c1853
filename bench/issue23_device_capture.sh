#!/usr/bin/env bash
# h23 (issue 23): a real capture with the new capture script, topo on it and live, doctor on it,
# a real NCCL_DEBUG=INFO log of bench nccl (1 GPU) with its JSON, nccl-tests if the machine has it.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cd "$(dirname "$0")"
O=${OUT:-/tmp/out}
start=$(date +%s)
timeout 120 bash ./capture-fsroot.sh "$O/cap" >"$O/capture.log" 2>&1; echo "capture rc=$?" >>"$O/capture.log"
ls -la "$O/cap/p2pscope" >>"$O/capture.log" 2>&1
timeout 30 ./p2pscope topo --root "$O/cap" >"$O/topo-capture.txt" 2>&1
timeout 30 ./p2pscope topo --root "$O/cap" --format json >"$O/topo-capture.json" 2>&1
timeout 30 ./p2pscope topo >"$O/topo-live.txt" 2>&1
timeout 30 nvidia-smi topo -m >"$O/nvidia-smi-topo-m.txt" 2>&1
timeout 60 ./p2pscope doctor --root "$O/cap" --report "$O/doctor-capture.md" >"$O/doctor-capture.txt" 2>&1
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV timeout 90 ./p2pscope bench nccl --op allreduce --sizes 1M:64M \
  --format json --out "$O/bench-nccl.json" >"$O/bench-nccl-info.log" 2>&1; echo "bench rc=$?" >>"$O/bench-nccl-info.log"
p=$(command -v all_reduce_perf || ls /opt/nccl-tests/build/all_reduce_perf /usr/local/bin/all_reduce_perf 2>/dev/null | head -1)
echo "all_reduce_perf: ${p:-none}" >"$O/nccl-tests.txt"
if [ -n "$p" ]; then NCCL_DEBUG=INFO timeout 60 "$p" -b 1M -e 64M -f 2 -g 1 >>"$O/nccl-tests.txt" 2>&1; fi
rm -rf "$O/cap"   # links do not come back; the tarball keeps them
echo "wall $(( $(date +%s) - start )) s"
ls -la "$O"
head -30 "$O/topo-capture.txt"
