#!/bin/bash
# Does where a link's two threads run set its rate? (issue 34: on the 64-core hosts a bench
# tcp or bench net process is fast or slow as a whole, up to 35 % apart, with the same
# work costing the sender more CPU per byte in the slow ones.) One link over loopback,
# its TX thread pinned to CPU A and its RX thread to CPU B, for A in TX_CPUS and every B
# the process may use; then the CPU topology the guest sees.
# Usage: bench/lease_pairs.sh OUTDIR; binaries in .device/; prints "A B GB/s" lines and a
# summary per A (min, median, max over B, and the Bs in the slowest and fastest fifth).
#   TX_CPUS ("0 32")  SIZE (512M)  ITERS (3)
set -u
OUT=${1:?usage: bench/lease_pairs.sh OUTDIR}
. "$(dirname "$0")/lease_common.sh"
TX_CPUS=${TX_CPUS:-0 32}; SIZE=${SIZE:-512M}; ITERS=${ITERS:-3}
for a in $TX_CPUS; do
  for b in $(seq 0 $(($(nproc) - 1))); do
    r=$(timeout -k 2 20 "$P" bench tcp --loopback --channels 1 --size "$SIZE" --iters "$ITERS" --tx-bind "lo:$a" \
          --rx-bind "lo:$b" --format json 2>/dev/null |
        python3 -c 'import json,sys; print("%.3f" % (json.load(sys.stdin)["server"]["rx_bytes_per_s"] / 1e9))' 2>/dev/null)
    echo "$a $b ${r:-failed}"
  done
done | tee "$OUT/pairs.txt"
python3 - "$OUT/pairs.txt" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1]) if l.strip() and not l.endswith("failed\n")]
for a in sorted({r[0] for r in rows}, key=int):
    xs = sorted(((float(r[2]), int(r[1])) for r in rows if r[0] == a))
    k = max(1, len(xs) // 5)
    print(f"tx on {a}: min {xs[0][0]:.2f} median {st.median(x for x, _ in xs):.2f} max {xs[-1][0]:.2f} GB/s;"
          f" slowest rx CPUs {sorted(b for _, b in xs[:k])}; fastest {sorted(b for _, b in xs[-k:])}")
PY
echo "== topology"; lscpu | grep -E "Model name|Thread|Core|Socket|Die|Cluster|NUMA|L2|L3"
for f in die_id cluster_id physical_package_id; do
  echo "$f: $(cat /sys/devices/system/cpu/cpu*/topology/$f 2>/dev/null | sort | uniq -c | tr '\n' ' ')"
done
echo "L3 shared: $(cat /sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list 2>/dev/null)"
