#!/bin/bash
# Where the main job's 28-30 s go on four GPUs: `p2pscope run` with P2PSCOPE_TRACE_PHASES set
# (every step's log then has its phases with seconds from its process start), twice, and
# the two short GPU steps alone with the same trace, plus `strace -c -f` of one
# bench-latency to see the time spent in the kernel and the driver's ioctls.
# Usage: bench/lease_trace.sh OUTDIR [run options...]; binaries in .device/; packs OUTDIR.tar.gz.
set -u
OUT=${1:?usage: bench/lease_trace.sh OUTDIR}; shift
. "$(dirname "$0")/lease_common.sh"
export P2PSCOPE_TRACE_PHASES=1
for i in 1 2; do part "run-$i" 120 "$P" run --out "$OUT/run-$i" "$@"; done
for i in 1 2; do
  part "lat-$i" 30 "$P" bench gpu --backend ce --pattern latency --sizes 8 --format json
  part "uni-$i" 30 "$P" bench gpu --backend ce --pattern uni --sizes 1G --format json
done
command -v strace > /dev/null && part strace-lat 60 strace -c -f -o "$OUT/strace-lat.txt" "$P" bench gpu --backend ce --pattern latency --sizes 8 --format json
echo "== walls"; cat "$OUT/walls.txt"
for f in "$OUT"/run-1/*.log "$OUT"/lat-1.log "$OUT"/uni-1.log; do
  echo "-- $(basename "$f")"; grep -h '^\[p2pscope +' "$f" | head -40
done
echo "-- strace"; head -25 "$OUT/strace-lat.txt" 2>/dev/null
rm -f "$OUT"/*/campaign/trace*.json 2>/dev/null
tar czf "$OUT.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && rm -rf "$OUT"
