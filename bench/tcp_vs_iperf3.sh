#!/bin/bash
# p2pscope bench tcp against Debian's iperf3 over 127.0.0.1, side by side in one run,
# with the same number of TCP streams (1 and 2), host memory. Loopback only.
# Usage: bench/tcp_vs_iperf3.sh [REPS]   (P2PSCOPE=path/to/p2pscope, default build/p2pscope)
# Prints a markdown table: GB/s (1e9 B/s) medians over REPS alternating runs, and the ratio.
set -euo pipefail
P2PSCOPE=${P2PSCOPE:-build/p2pscope}
IPERF3=${IPERF3:-/usr/bin/iperf3}
REPS=${1:-3}
SECS=${SECS:-3}                 # iperf3 run length
SIZE=${SIZE:-64M}               # p2pscope bytes per round
ITERS=${ITERS:-30}              # p2pscope timed rounds (~1-2 s in all)
PORT=${PORT:-$((20000 + RANDOM % 20000))}
command -v "$IPERF3" >/dev/null || { echo "no iperf3 at $IPERF3 (apt-get install iperf3)"; exit 2; }
[ -x "$P2PSCOPE" ] || { echo "no p2pscope binary at $P2PSCOPE (make build, or set P2PSCOPE)"; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

iperf_gbps() {  # streams
  timeout 30 "$IPERF3" -s -1 -p "$PORT" -B 127.0.0.1 >/dev/null 2>&1 &
  local spid=$!; sleep 0.3
  timeout 30 "$IPERF3" -c 127.0.0.1 -p "$PORT" -t "$SECS" -P "$1" -J > "$tmp/iperf.json"
  wait $spid || true
  python3 -c 'import json,sys; print("%.3f" % (json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"]/8e9))' "$tmp/iperf.json"
}

p2p_gbps() {  # channels (= TCP streams: one socket per channel)
  timeout 60 "$P2PSCOPE" bench tcp --server --sessions 1 --bind 127.0.0.1 --port "$PORT" --accept-timeout 10 --format json \
    > "$tmp/server.json" 2>"$tmp/server.err" &
  local spid=$!; sleep 0.3
  timeout 60 "$P2PSCOPE" bench tcp --client 127.0.0.1 --port "$PORT" --channels "$1" --sockets-per-channel 1 \
    --size "$SIZE" --chunk "${CHUNK:-1M}" --window "${WINDOW:-4}" --iters "$ITERS" --warmup 2 --format json > "$tmp/client.json"
  wait $spid || true
  python3 -c 'import json,sys; print("%.3f" % (json.load(open(sys.argv[1]))["server"]["rx_bytes_per_s"]/1e9))' "$tmp/client.json"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

echo "| streams | iperf3 GB/s | p2pscope GB/s | ratio | runs (iperf3 / p2pscope) |"
echo "|---:|---:|---:|---:|---|"
for n in 1 2; do
  : > "$tmp/i"; : > "$tmp/p"
  for r in $(seq "$REPS"); do  # alternate, so drift in the machine's load hits both
    iperf_gbps "$n" >> "$tmp/i"
    p2p_gbps "$n" >> "$tmp/p"
  done
  i=$(median < "$tmp/i"); p=$(median < "$tmp/p")
  ratio=$(awk -v a="$p" -v b="$i" 'BEGIN {printf "%.2f", a/b}')
  echo "| $n | $i | $p | ${ratio}x | $(paste -sd, "$tmp/i") / $(paste -sd, "$tmp/p") |"
done
