#!/bin/bash
# Issue 34's open cell, bench tcp against C iperf3 processes at 16 and 32 channels on a
# 64-core host, with the two doubts about last call's figures tested in the same call:
#  1. --monitor: engines.sh ran bench tcp with it (61.7 GB/s at 32 channels) and the A/B
#     runs after without it (71.6-73.8), same parameters. Here tcp and tcp --monitor alternate.
#  2. iperf3's sum: engines.sh adds the C clients' own averages, each over its own -t
#     seconds; clients launched one after another from a shell do not run over the same
#     second, so the sum can exceed the rate they reached together. Here the same C processes
#     run -t 3 and the loopback device's byte counter is read over a window where all
#     of them run (0.7 s after the last was launched, for 1.2 s): the aggregate rate
#     (lo counts each packet once; headers are ~0.1 % of lo's 64 KiB packets).
# Each cell alternates, REPS runs (5 at 32 channels, 3 at 16), medians.
# Answer on 4 x H200, 2026-11-27 (bench/results/engines.md): neither doubt held (the monitor
# cost nothing measurable; the sum equalled lo's aggregate), and bench tcp read 0.92x at 32.
# Usage: bench/lease_engines32.sh OUTDIR; binaries in .device/; packs OUTDIR.tar.gz.
#   C_LIST ("32 16": the first gets 5 runs, the others 3)  MIB_PER_CHANNEL (256: size per round)
set -u
OUT=${1:?usage: bench/lease_engines32.sh OUTDIR}
. "$(dirname "$0")/lease_common.sh"
IPERF3=iperf3
if [ -x "$D/iperf3/iperf3" ]; then
  IPERF3=$D/iperf3/iperf3; export LD_LIBRARY_PATH=$D/iperf3${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
BASE=$((21000 + RANDOM % 20000))
C_LIST=${C_LIST:-32 16}; MIB_PER_CHANNEL=${MIB_PER_CHANNEL:-256}
FIRST_C=${C_LIST%% *}
lo_bytes() { cat /sys/class/net/lo/statistics/rx_bytes; }
now_ns() { date +%s%N; }

tcp() {  # C REP TAG [--monitor ...]
  local c=$1 r=$2 tag=$3; shift 3
  timeout -k 5 60 "$P" bench tcp --loopback --channels "$c" --size $((MIB_PER_CHANNEL * c))M --chunk 1M --window 4 --iters 5 \
    --format json "$@" > "$OUT/$tag-$c-$r.json" 2> "$OUT/$tag-$c-$r.err"
}

iperf() {  # C REP SECS: C servers and C clients; writes each client's JSON and, for SECS >= 3, lo's window
  local c=$1 r=$2 secs=$3 i
  for i in $(seq 0 $((c - 1))); do
    timeout $((secs + 15)) "$IPERF3" -s -1 -p $((BASE + i)) -B 127.0.0.1 > /dev/null 2>&1 &
  done
  sleep 0.3
  for i in $(seq 0 $((c - 1))); do
    timeout $((secs + 15)) "$IPERF3" -c 127.0.0.1 -p $((BASE + i)) -t "$secs" -J > "$OUT/ip$secs-$c-$r-$i.json" 2> /dev/null &
  done
  if [ "$secs" -ge 3 ]; then
    sleep 0.7
    local b0 t0 b1 t1
    b0=$(lo_bytes); t0=$(now_ns)
    sleep 1.2
    b1=$(lo_bytes); t1=$(now_ns)
    echo "$b0 $t0 $b1 $t1" > "$OUT/lo-$c-$r.txt"
  fi
  wait
  BASE=$((BASE + c + 1))
}

for c in $C_LIST; do
  reps=3; [ "$c" = "$FIRST_C" ] && reps=5
  for r in $(seq "$reps"); do
    tcp "$c" "$r" tcp
    iperf "$c" "$r" 1
    tcp "$c" "$r" tcpmon --monitor --monitor-dir "$OUT/mon-$c-$r"
    iperf "$c" "$r" 3
  done
done

echo "== $(grep -m1 "^GPU" "$OUT/machine.txt"); $(grep -m1 "^p2pscope" "$OUT/machine.txt"); CPUs: $(nproc)"
python3 - "$OUT" "$C_LIST" <<'PY'
import json, sys, glob, statistics as st
out = sys.argv[1]
c_list = [int(x) for x in sys.argv[2].split()]
def tcp(tag, c, r):
    try: return json.load(open(f"{out}/{tag}-{c}-{r}.json"))["server"]["rx_bytes_per_s"] / 1e9
    except Exception: return None
def ipsum(secs, c, r):
    try: return sum(json.load(open(f"{out}/ip{secs}-{c}-{r}-{i}.json"))["end"]["sum_received"]["bits_per_second"] / 8e9 for i in range(c))
    except Exception: return None
def lo(c, r):
    try:
        b0, t0, b1, t1 = map(int, open(f"{out}/lo-{c}-{r}.txt").read().split())
        return (b1 - b0) / (t1 - t0)   # bytes per ns = GB/s
    except Exception: return None
med = lambda v: st.median([x for x in v if x is not None]) if any(x is not None for x in v) else None
f = lambda x: "n/a" if x is None else f"{x:.2f}"
print("| channels | bench tcp | bench tcp --monitor | iperf3 -t 1, sum of clients | iperf3 -t 3, sum of clients | iperf3 -t 3, lo counter while all run | tcp / iperf3 (lo) | tcp / iperf3 (-t 1 sum) |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|")
for c in sorted(c_list):
    reps = 5 if c == c_list[0] else 3
    cols = [[tcp("tcp", c, r) for r in range(1, reps + 1)], [tcp("tcpmon", c, r) for r in range(1, reps + 1)],
            [ipsum(1, c, r) for r in range(1, reps + 1)], [ipsum(3, c, r) for r in range(1, reps + 1)],
            [lo(c, r) for r in range(1, reps + 1)]]
    m = [med(v) for v in cols]
    ratio = lambda a, b: "n/a" if a is None or not b else f"{a / b:.2f}x"
    print(f"| {c} | " + " | ".join(f"{f(x)} ({', '.join(f(y) for y in v)})" for x, v in zip(m, cols)) +
          f" | {ratio(m[0], m[4])} | {ratio(m[0], m[2])} |")
for r in range(1, 6):
    try:
        j = json.load(open(f"{out}/tcpmon-{c_list[0]}-{r}.json")); mo = j.get("monitor", {})
        print(f"monitor run {r}: {mo.get('samples')} samples over {mo.get('duration_s', 0):.2f} s, "
              f"{mo.get('monitor_cpu_ns_per_sample', 0) / 1e6:.1f} ms CPU per sample; rounds {[round(x / 1e9, 1) for x in j['server']['round_rx_bytes_per_s']]}")
    except Exception as e:
        print(f"monitor run {r}: {e}")
PY
tar czf "$OUT.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && rm -rf "$OUT"
