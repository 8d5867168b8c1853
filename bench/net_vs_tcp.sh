#!/bin/bash
# Issue 20: the net-plugin engine (bench net, through the project's reference plugin)
# against the sockets engine (bench tcp) at the same channels, sockets, chunk and
# window, host memory, over 127.0.0.1, alternating run by run in one call.
# Usage: bench/net_vs_tcp.sh [CHANNELS_LIST] [REPS]
#   P2PSCOPE (default build/p2pscope), REFNET (default build/lib/libnccl-net-p2pscope.so),
#   SIZE (256M), CHUNK (1M), WINDOW (4), ITERS (5), OUTDIR (keep the JSON)
set -euo pipefail
P2PSCOPE=${P2PSCOPE:-build/p2pscope}
REFNET=${REFNET:-build/lib/libnccl-net-p2pscope.so}
LIST=${1:-1,2,4,8}
REPS=${2:-3}
SIZE=${SIZE:-256M}; CHUNK=${CHUNK:-1M}; WINDOW=${WINDOW:-4}; ITERS=${ITERS:-5}
[ -x "$P2PSCOPE" ] || { echo "no p2pscope binary at $P2PSCOPE"; exit 2; }
[ -f "$REFNET" ] || { echo "no reference plugin at $REFNET"; exit 2; }
tmp=${OUTDIR:-$(mktemp -d)}; mkdir -p "$tmp"
export P2PSCOPE_REFNET_IFS=${P2PSCOPE_REFNET_IFS:-lo}
common=(--loopback --size "$SIZE" --chunk "$CHUNK" --window "$WINDOW" --iters "$ITERS" --format json)
rate() { python3 -c 'import json,sys; print("%.3f" % (json.load(open(sys.argv[1]))["server"]["rx_bytes_per_s"]/1e9))' "$1"; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
echo "| channels | bench tcp GB/s | bench net (reference plugin) GB/s | net / tcp | runs (tcp / net) |"
echo "|---:|---:|---:|---:|---|"
for c in ${LIST//,/ }; do
  : > "$tmp/t"; : > "$tmp/n"
  for r in $(seq "$REPS"); do
    timeout 300 "$P2PSCOPE" bench tcp "${common[@]}" --channels "$c" > "$tmp/tcp-$c-$r.json"
    rate "$tmp/tcp-$c-$r.json" >> "$tmp/t"
    timeout 300 "$P2PSCOPE" bench net --plugin "$REFNET" "${common[@]}" --channels "$c" > "$tmp/net-$c-$r.json" 2>"$tmp/net-$c-$r.err"
    rate "$tmp/net-$c-$r.json" >> "$tmp/n"
  done
  t=$(median < "$tmp/t"); n=$(median < "$tmp/n")
  echo "| $c | $t | $n | $(awk -v a="$n" -v b="$t" 'BEGIN {printf "%.2f", a/b}')x | $(paste -sd, "$tmp/t") / $(paste -sd, "$tmp/n") |"
done
