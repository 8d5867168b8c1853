#!/bin/bash
# Issue 25: p2pscope bench tcp --loopback at C channels against C separate iperf3
# processes (client and server each), side by side in one run, over 127.0.0.1.
# Debian's iperf3 3.12 runs all -P streams in one thread, so -P is no fair anchor for
# several channels; C processes are. Runs alternate so the machine's drift hits both.
# Usage: bench/tcp_vs_iperf3_procs.sh [CHANNELS_LIST] [REPS]
#   P2PSCOPE=path (default build/p2pscope), IPERF3=path, SIZE (default 1G), ITERS (5),
#   SECS (iperf3 seconds, 3), EXTRA (more bench tcp flags), OUTDIR (keep the JSON there)
# Prints a markdown table (GB/s = 1e9 B/s) and, per C, p2pscope's CPU verdict and
# per-chunk costs (syscalls, context switches) from its JSON.
set -euo pipefail
P2PSCOPE=${P2PSCOPE:-build/p2pscope}
IPERF3=${IPERF3:-iperf3}
LIST=${1:-1,2,4,8}
REPS=${2:-3}
SIZE=${SIZE:-1G}
ITERS=${ITERS:-5}
SECS=${SECS:-3}
BASE=${PORT:-$((21000 + RANDOM % 20000))}
command -v "$IPERF3" >/dev/null || { echo "no iperf3 ($IPERF3)"; exit 2; }
[ -x "$P2PSCOPE" ] || { echo "no p2pscope binary at $P2PSCOPE"; exit 2; }
tmp=${OUTDIR:-$(mktemp -d)}; mkdir -p "$tmp"

iperf_procs() {  # C: C server processes, C client processes at once; prints the summed GB/s
  local c=$1 pids=() i
  for i in $(seq 0 $((c - 1))); do
    timeout $((SECS + 20)) "$IPERF3" -s -1 -p $((BASE + i)) -B 127.0.0.1 >/dev/null 2>&1 & pids+=($!)
  done
  sleep 0.5
  for i in $(seq 0 $((c - 1))); do
    timeout $((SECS + 20)) "$IPERF3" -c 127.0.0.1 -p $((BASE + i)) -t "$SECS" -J > "$tmp/iperf-$c-$i.json" &
  done
  wait
  python3 - "$tmp" "$c" <<'PY'
import json, sys, glob
tmp, c = sys.argv[1], int(sys.argv[2])
tot = sum(json.load(open(f"{tmp}/iperf-{c}-{i}.json"))["end"]["sum_received"]["bits_per_second"] / 8e9 for i in range(c))
print("%.3f" % tot)
PY
}

p2p() {  # C rep: prints GB/s (server receive, median over rounds)
  timeout 300 "$P2PSCOPE" bench tcp --loopback --channels "$1" --size "$SIZE" --iters "$ITERS" ${EXTRA:-} \
    --format json > "$tmp/p2p-$1-$2.json"
  python3 -c 'import json,sys; print("%.3f" % (json.load(open(sys.argv[1]))["server"]["rx_bytes_per_s"]/1e9))' "$tmp/p2p-$1-$2.json"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

echo "| channels | p2pscope GB/s | C iperf3 processes GB/s | ratio | runs (p2pscope / iperf3) |"
echo "|---:|---:|---:|---:|---|"
for c in ${LIST//,/ }; do
  : > "$tmp/p"; : > "$tmp/i"
  for r in $(seq "$REPS"); do
    p2p "$c" "$r" >> "$tmp/p"
    iperf_procs "$c" >> "$tmp/i"
    BASE=$((BASE + 16))
  done
  p=$(median < "$tmp/p"); i=$(median < "$tmp/i")
  echo "| $c | $p | $i | $(awk -v a="$p" -v b="$i" 'BEGIN {printf "%.2f", a/b}')x | $(paste -sd, "$tmp/p") / $(paste -sd, "$tmp/i") |"
done
echo
echo "Where p2pscope's time goes (last rep of each C; per chunk = per ${CHUNK:-1M} chunk):"
python3 - "$tmp" "$LIST" "$REPS" <<'PY'
import json, sys
tmp, lst, reps = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
print("| C | verdict | tx busy % | rx busy % | runq % (max) | tx syscalls/chunk | rx syscalls/chunk | tx vol sw/chunk | rx vol sw/chunk | invol sw/chunk |")
print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for c in lst:
    j = json.load(open(f"{tmp}/p2p-{c}-{reps}.json"))
    p = j["params"]
    chunks = -(-p["size_bytes"] // p["chunk_bytes"]) * (p["iters"] + p["warmup"])
    ws = j["client"]["workers"] + j["server"]["workers"]
    def agg(role, key):
        return sum(w[key] for w in ws if w["role"] == role)
    def busy(role):
        xs = [w["cpu_time_s"] / w["wall_time_s"] for w in ws if w["role"] == role and w["wall_time_s"] > 0]
        return 100 * sum(xs) / max(len(xs), 1)
    runq = max((100 * w.get("runqueue_wait_s", 0) / w["wall_time_s"] for w in ws if w["wall_time_s"] > 0), default=0)
    inv = agg("tx", "involuntary_switches") + agg("rx", "involuntary_switches")
    print(f"| {c} | {j['bound']['verdict']} | {busy('tx'):.0f} | {busy('rx'):.0f} | {runq:.0f} | "
          f"{agg('tx','syscalls')/chunks:.2f} | {agg('rx','syscalls')/chunks:.2f} | "
          f"{agg('tx','voluntary_switches')/chunks:.2f} | {agg('rx','voluntary_switches')/chunks:.2f} | {inv/chunks:.2f} |")
PY
