#!/usr/bin/env bash
# The survey's figures beside their anchors, in one run on one cluster of namespace hosts
# (tools/netns-cluster.sh): a survey of every pair, then, on each rail of the pair h0 <-> h1,
# iperf3 --bidir and bench tcp bidir over the same NICs, one after the other. Each tool's
# figure per direction is printed beside the survey's median for that link and direction
# (bench/results/survey.md). The NICs are shaped (htb) to RATE, so the three should read
# about RATE / 8 per direction.
# Usage: sudo bench/survey_anchor.sh OUTDIR   (env HOSTS=4 RAILS=2 RATE=200mbit SIZE=2M
#        SECONDS_PER_TOOL=10 TRANSPORT=tcp P2PSCOPE=build/p2pscope)
set -uo pipefail
out=${1:?usage: bench/survey_anchor.sh OUTDIR}
HOSTS=${HOSTS:-4} RAILS=${RAILS:-2} RATE=${RATE:-200mbit} SIZE=${SIZE:-2M} T=${SECONDS_PER_TOOL:-10}
here=$(cd "$(dirname "$0")/.." && pwd)
cluster=$here/tools/netns-cluster.sh
export P2PSCOPE=${P2PSCOPE:-$here/build/p2pscope} P2PSCOPE_NETNS_CPUS=${P2PSCOPE_NETNS_CPUS-0}
command -v iperf3 >/dev/null || { echo "needs iperf3" >&2; exit 2; }
mkdir -p "$out"
trap 'bash "$cluster" down >/dev/null 2>&1' EXIT
bash "$cluster" down >/dev/null 2>&1
bash "$cluster" up "$HOSTS" "$RAILS" "$RATE" >/dev/null 2>&1 || { echo "netns-cluster up failed" >&2; exit 2; }
net=${P2PSCOPE_NETNS_NET:-10.201}
addr() { echo "$net.$2.$(($1 + 1))"; }

bash "$cluster" survey --size "$SIZE" --round-timeout 20 --timeout 5 --no-recheck --format json --out "$out/survey" \
  >"$out/survey.json.txt" 2>"$out/survey.err"
echo "survey rc $?"
for r in $(seq 1 "$RAILS"); do
  a0=$(addr 0 "$r") a1=$(addr 1 "$r")
  ip netns exec "${P2PSCOPE_NETNS_PREFIX:-p2s}h1" iperf3 -s -1 -B "$a1" -p 5201 >/dev/null 2>&1 &
  sleep 0.5
  ip netns exec "${P2PSCOPE_NETNS_PREFIX:-p2s}h0" iperf3 -c "$a1" -B "$a0" -p 5201 --bidir -t "$T" -J >"$out/iperf3-eth$r.json" 2>&1
  wait
  ip netns exec "${P2PSCOPE_NETNS_PREFIX:-p2s}h1" "$P2PSCOPE" bench tcp --server --bind "$a1" --port 18600 --sessions 1 \
    >/dev/null 2>&1 &
  sleep 0.5
  # As many rounds as iperf3's seconds: at RATE / 8 a direction, SIZE each.
  ip netns exec "${P2PSCOPE_NETNS_PREFIX:-p2s}h0" "$P2PSCOPE" bench tcp --client "$a1" --port 18600 --nics "$a0" \
    --mode bidir --size "$SIZE" --iters $(( T * ${RATE%mbit} / 8 / ${SIZE%M} )) --format json >"$out/benchtcp-eth$r.json" 2>&1
  wait
done
python3 - "$out" "$RAILS" <<'PY'
import json, sys, statistics
out, rails = sys.argv[1], int(sys.argv[2])
d = json.load(open(f"{out}/survey/survey.json"))
def survey_fig(frm, to, rail):
    for f in d["figures"]:
        if f["metric"] == "bandwidth" and f["pass"] == 1 and f["from"] == frm and f["to"] == to and f["rail"] == rail:
            return f
print(f"| link, direction | survey median [interval] MB/s | iperf3 --bidir MB/s | bench tcp bidir MB/s |")
print("|---|---|---:|---:|")
for r in range(rails):
    ip = json.load(open(f"{out}/iperf3-eth{r+1}.json"))
    end = ip["end"]
    # iperf3's client is h0: sum_sent is h0 -> h1, sum_received_bidir_reverse h1 -> h0 (receiver side figures).
    i01 = end["sum_received"]["bits_per_second"] / 8e6
    i10 = end["sum_received_bidir_reverse"]["bits_per_second"] / 8e6
    def find(j):  # the results object wherever the document nests it
        if isinstance(j, dict):
            if "client" in j and "server" in j and isinstance(j["client"], dict): return j
            for v in j.values():
                x = find(v)
                if x: return x
        return None
    try:
        res = find(json.load(open(f"{out}/benchtcp-eth{r+1}.json"))) or {}
    except Exception:
        res = {}
    def bench(dirn):  # each direction as its receiver measured it, the survey's way: median of rounds
        side = res.get("server" if dirn == "c2s" else "client", {})
        v = side.get("round_rx_bytes_per_s") or []
        return f"{statistics.median(v)/1e6:.2f}" if v else "?"
    for frm, to, ipv, dirn in (("h0", "h1", i01, "c2s"), ("h1", "h0", i10, "s2c")):
        f = survey_fig(frm, to, r)
        s = f"{f['median']/1e6:.2f} [{f['lo']/1e6:.2f}, {f['hi']/1e6:.2f}]" if f else "?"
        print(f"| {frm} -> {to} eth{r+1} | {s} | {ipv:.2f} | {bench(dirn)} |")
PY
