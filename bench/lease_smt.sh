#!/bin/bash
# Whether NCCL's two launch regimes on the lent VMs (4-GPU alltoall 33-35 or 47-54 us an
# iteration, a whole process at a time; bench/lease_init_cost.sh) come from the launching
# thread sharing a physical core with another busy thread (SMT). One call: the CPU
# topology, then bench nccl alltoall and allreduce on every GPU at 16 B - 4 KiB, 5 spans
# spread over passes, 4 runs free, 4 runs on one hardware thread per core (taskset with
# the first thread of each core), alternating.
# Usage: bench/lease_smt.sh OUTDIR; binaries in .device/; packs OUTDIR.tar.gz.
set -u
OUT=${1:?usage: bench/lease_smt.sh OUTDIR}
. "$(dirname "$0")/lease_common.sh"
{ lscpu; echo; for c in 0 1 2 32 33; do
    echo "cpu$c siblings $(cat /sys/devices/system/cpu/cpu$c/topology/thread_siblings_list 2>&1) core $(cat /sys/devices/system/cpu/cpu$c/topology/core_id 2>&1)"; done; } > "$OUT/cpus.txt" 2>&1
FIRST=$(for c in /sys/devices/system/cpu/cpu[0-9]*; do cut -d, -f1 "$c/topology/thread_siblings_list" | cut -d- -f1; done | sort -un | paste -sd, -)
echo "first threads: $FIRST" >> "$OUT/cpus.txt"
for i in 1 2 3 4; do
  part "free-$i" 60 "$P" bench nccl --op alltoall,allreduce --sizes 16:4K --spans 5 --format json --out "$OUT/free-$i.json"
  part "core-$i" 60 taskset -c "$FIRST" "$P" bench nccl --op alltoall,allreduce --sizes 16:4K --spans 5 --format json --out "$OUT/core-$i.json"
done
grep -E 'Thread|Core|Socket|NUMA node|Model name|siblings|first' "$OUT/cpus.txt"
echo "== walls"; cat "$OUT/walls.txt"
echo "== median span per op over 16 B - 4 KiB, each pass"
for f in "$OUT"/free-*.json "$OUT"/core-*.json; do
  python3 - "$f" <<'PY'
import json, sys, statistics
j = json.load(open(sys.argv[1])); ops = j['ops'] if 'ops' in j else [j]
for o in ops:
    sp = [r.get('spans_us') for r in o['rows'] if r.get('spans_us')]
    print(sys.argv[1].split('/')[-1], o['op'], ' '.join('%.1f' % statistics.median(c) for c in zip(*sp)))
PY
done
tar czf "$OUT.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && rm -rf "$OUT"
