#!/bin/bash
# Aggregate throughput vs channels across several "NICs": a network namespace holds
# the server, joined to this namespace by NICS veth pairs (created here, removed on
# exit). Channels go round-robin over the NICs. Needs root. No traffic leaves the host.
# Usage: bench/tcp_channels_netns.sh [CHANNELS_LIST] [NICS]   (P2PSCOPE=path, default build/p2pscope)
set -euo pipefail
P2PSCOPE=$(realpath "${P2PSCOPE:-build/p2pscope}")
LIST=${1:-1,2,4,8}
NICS=${2:-4}
SIZE=${SIZE:-256M}
ITERS=${ITERS:-5}
REPS=${REPS:-3}
MODE=${MODE:-bw}
ID=$$; NS=p2pb$ID; PORT=${PORT:-$((20000 + RANDOM % 20000))}
[ -x "$P2PSCOPE" ] || { echo "no p2pscope binary at $P2PSCOPE"; exit 2; }
cleanup() { for i in $(seq 0 $((NICS - 1))); do ip link del "p2bc${i}x$ID" 2>/dev/null || true; done; ip netns del "$NS" 2>/dev/null || true; }
trap cleanup EXIT
ip netns add "$NS" || { echo "cannot create a network namespace (need root)"; exit 2; }
ip netns exec "$NS" ip link set lo up
hosts=(); nics=()
for i in $(seq 0 $((NICS - 1))); do
  c=p2bc${i}x$ID; s=p2bs${i}x$ID
  ip link add "$c" type veth peer name "$s" netns "$NS"
  ip addr add "10.232.$((i + 1)).1/24" dev "$c"; ip link set "$c" up
  ip netns exec "$NS" ip addr add "10.232.$((i + 1)).2/24" dev "$s"
  ip netns exec "$NS" ip link set "$s" up
  hosts+=("10.232.$((i + 1)).2"); nics+=("$c")
done
H=$(IFS=,; echo "${hosts[*]}"); N=$(IFS=,; echo "${nics[*]}")
tmp=$(mktemp -d); trap 'cleanup; rm -rf "$tmp"' EXIT
echo "# $NICS veth NICs, mode $MODE, size $SIZE, chunk 1M, window 8, $ITERS rounds, median of $REPS runs; $(nproc) CPUs"
echo "| channels | NICs used | GB/s (server recv) | per NIC GB/s | client CPU s | server CPU s |"
echo "|---:|---:|---:|---|---:|---:|"
for ch in ${LIST//,/ }; do
  : > "$tmp/runs"
  for r in $(seq "$REPS"); do
    timeout 60 ip netns exec "$NS" "$P2PSCOPE" bench tcp --server --sessions 1 --bind "$H" --port "$PORT" --accept-timeout 10 \
      --format json > "$tmp/s.json" 2>/dev/null &
    spid=$!; sleep 0.3
    timeout 60 "$P2PSCOPE" bench tcp --client "$H" --nics "$N" --port "$PORT" --mode "$MODE" --channels "$ch" \
      --size "$SIZE" --chunk 1M --window 8 --iters "$ITERS" --timeout 10 --format json > "$tmp/c.json"
    wait $spid || true
    python3 - "$tmp/c.json" >> "$tmp/runs" <<'PY'
import json, sys, collections
r = json.load(open(sys.argv[1]))
s = r["server"]
per = collections.defaultdict(lambda: [0, 0.0])
for c in s["channels"]:
    if not c["sent"]:
        per[c["nic"]][0] += c["bytes"]; per[c["nic"]][1] = max(per[c["nic"]][1], c["elapsed_s"])
nic = " ".join("%.2f" % (b / t / 1e9) for b, t in per.values() if t > 0)
cpu = lambda side: sum(w["cpu_time_s"] for w in r[side]["workers"])
print("%.3f\t%d\t%s\t%.2f\t%.2f" % ((s["rx_bytes_per_s"] + r["client"]["rx_bytes_per_s"]) / 1e9, len(per), nic, cpu("client"), cpu("server")))
PY
  done
  sort -n "$tmp/runs" | awk -F'\t' -v ch="$ch" '{a[NR]=$0} END {split(a[int((NR+1)/2)], f, "\t"); printf "| %s | %s | %s | %s | %s | %s |\n", ch, f[2], f[1], f[3], f[4], f[5]}'
done
