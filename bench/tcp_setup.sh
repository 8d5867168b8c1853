#!/bin/bash
# Set-up cost of p2pscope bench tcp (issue 17): wall time of the whole command against
# the time its rounds took, host memory over 127.0.0.1, for 64 MiB, 512 MiB and 1 GiB
# messages, without and with --verify. Loopback only.
# Usage: bench/tcp_setup.sh [REPS]   (P2PSCOPE=path/to/p2pscope, default build/p2pscope)
#   SIZES="64M 512M 1G"  ITERS=8 (timed rounds; one warm-up round more)  CHANNELS=2
# Prints a markdown table, medians over REPS runs of each case:
#   wall_s      the command, start to exit (process start, set-up, rounds, teardown)
#   transfer_s  the rounds, warm-up included (JSON client.rounds_s)
#   setup_s     the slower side's buffer set-up (JSON setup_s), and per MiB of message
#   ratio       wall_s / transfer_s (goal: <= 1.5 without --verify; setup < 1 ms/MiB)
set -euo pipefail
P2PSCOPE=${P2PSCOPE:-build/p2pscope}
REPS=${1:-3}
SIZES=${SIZES:-64M 512M 1G}
ITERS=${ITERS:-8}
CHANNELS=${CHANNELS:-2}
[ -x "$P2PSCOPE" ] || { echo "no p2pscope binary at $P2PSCOPE (make build, or set P2PSCOPE)"; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

one() {  # size, verify flag ("" or --verify): prints wall transfer setup buffer_MiB GBps
  local t0 t1
  t0=$(date +%s%N)
  "$P2PSCOPE" bench tcp --loopback --channels "$CHANNELS" --size "$1" --iters "$ITERS" --warmup 1 $2 \
    --format json > "$tmp/r.json"
  t1=$(date +%s%N)
  python3 - "$tmp/r.json" "$(( t1 - t0 ))" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); wall = int(sys.argv[2]) / 1e9
c, s = r["client"], r["server"]
setup = max(c.get("setup_s", float("nan")), s.get("setup_s", float("nan")))
buf = (c.get("buffer_bytes", 0) + s.get("buffer_bytes", 0)) / 2**20
print(f'{wall:.3f} {c.get("rounds_s", float("nan")):.3f} {setup:.4f} {buf:.0f} {s["rx_bytes_per_s"] / 1e9:.3f}')
PY
}

mib() { awk -v s="$1" 'BEGIN { n = s + 0; u = substr(s, length(s)); print (u == "G") ? n * 1024 : (u == "M") ? n : n / 1024 }'; }

echo "# $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); --channels $CHANNELS, chunk 1M, window 4, $ITERS timed rounds + 1 warm-up; median of $REPS"
echo "| size | verify | wall s | transfer s | ratio | setup s | setup ms/MiB | buffers MiB (both sides) | GB/s | runs (wall / transfer) |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|"
for size in $SIZES; do
  for v in "" --verify; do
    : > "$tmp/runs"
    for _ in $(seq "$REPS"); do one "$size" "$v" >> "$tmp/runs"; done
    w=$(cut -d' ' -f1 "$tmp/runs" | median); x=$(cut -d' ' -f2 "$tmp/runs" | median)
    st=$(cut -d' ' -f3 "$tmp/runs" | median); b=$(cut -d' ' -f4 "$tmp/runs" | median)
    g=$(cut -d' ' -f5 "$tmp/runs" | median)
    awk -v sz="$size" -v v="${v:-off}" -v w="$w" -v x="$x" -v st="$st" -v b="$b" -v g="$g" -v m="$(mib "$size")" \
      -v runs="$(cut -d' ' -f1 "$tmp/runs" | paste -sd,) / $(cut -d' ' -f2 "$tmp/runs" | paste -sd,)" \
      'BEGIN { printf "| %s | %s | %.3f | %.3f | %.2fx | %.4f | %.4f | %s | %s | %s |\n", sz, v, w, x, w / x, st, st * 1000 / m, b, g, runs }'
  done
done
