#!/usr/bin/env bash
# CPU cost of one monitor sample: on generated 208-CPU / 5-NIC fixture trees (the
# topology generator tests/fixtures/make-two-socket.py plus /proc/stat and NIC
# statistics added here) and on this machine. The sampler measures its own thread
# CPU time over every sample (CLOCK_THREAD_CPUTIME_ID around collect+diff+CSV), so
# "us per sample" at a 1 s interval is the share of one CPU in units of 1e-4 %.
# "moving" trees have a writer process bump every CPU's times, every IRQ (on one CPU
# each) and the NICs' counters every 10 ms, so each sample also pays for the CSV rows
# of a busy machine (static trees only pay for reading and parsing).
# Usage: bench/monitor_cost.sh [p2pscope binary]   (default build-monitor/p2pscope)
#        DURATION=10s INTERVAL=50ms bench/monitor_cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build-monitor/p2pscope}
DURATION=${DURATION:-10s}
INTERVAL=${INTERVAL:-200ms}
work=$(mktemp -d)
writer=""
trap '[ -n "$writer" ] && kill "$writer" 2>/dev/null; rm -rf "$work"' EXIT

make_tree() {  # out queues
  python3 tests/fixtures/make-two-socket.py "$1" --cores 52 --gpus 8 --queues "$2" >/dev/null
  python3 - "$1" <<'PY'
import os, sys
root = sys.argv[1]
ncpu = sum(1 for d in os.listdir(f"{root}/sys/devices/system/cpu") if d.startswith("cpu") and d[3:].isdigit())
lines = ["cpu  " + " ".join(["1000"] * 10)]
lines += [f"cpu{c} {1000+c} 0 {2000+c} {900000+c} 10 0 {300+c} 0 0 0" for c in range(ncpu)]
lines += ["intr 123456 0", "ctxt 999", "btime 1700000000", "processes 100"]
open(f"{root}/proc/stat", "w").write("\n".join(lines) + "\n")
counters = ["rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "rx_dropped", "tx_dropped", "rx_errors",
            "tx_errors", "rx_missed_errors", "rx_fifo_errors", "rx_crc_errors", "tx_fifo_errors", "multicast",
            "collisions", "rx_length_errors", "rx_over_errors", "rx_frame_errors", "tx_aborted_errors",
            "tx_carrier_errors", "tx_heartbeat_errors", "tx_window_errors", "rx_compressed", "tx_compressed"]
for nic in os.listdir(f"{root}/sys/class/net"):
    d = f"{root}/sys/class/net/{nic}"
    if not os.path.isdir(d):
        continue
    os.makedirs(f"{d}/statistics", exist_ok=True)
    for i, c in enumerate(counters):
        open(f"{d}/statistics/{c}", "w").write(f"{123456789 * (i + 1)}\n")
print(f"{root}: {ncpu} CPUs, NICs: {' '.join(sorted(os.listdir(root + '/sys/class/net')))}, "
      f"{sum(1 for l in open(root + '/proc/interrupts') if l.split(':')[0].strip().isdigit())} IRQ lines, "
      f"/proc/interrupts {os.path.getsize(root + '/proc/interrupts') // 1024} KiB", file=sys.stderr)
PY
}

# Rewrites the tree's counters every 10 ms (write + rename, as atomic as sysfs reads).
start_writer() {  # tree
  python3 - "$1" <<'PY' &
import os, sys, time
root = sys.argv[1]
def put(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
stat = open(f"{root}/proc/stat").read().splitlines()
irq = open(f"{root}/proc/interrupts").read().splitlines()
ncol = len(irq[0].split())
rows = []  # (prefix, counts, tail) of numbered lines; others kept as they are
for line in irq[1:]:
    head, _, rest = line.partition(":")
    parts = rest.split()
    if head.strip().isdigit() and len(parts) >= ncol:
        rows.append((head + ":", [int(x) for x in parts[:ncol]], " ".join(parts[ncol:])))
    else:
        rows.append((line, None, None))
nics = [n for n in os.listdir(f"{root}/sys/class/net") if os.path.isdir(f"{root}/sys/class/net/{n}/statistics")]
tick = 0
while True:
    tick += 1
    out = []
    for line in stat:
        f = line.split()
        if f[0].startswith("cpu") and f[0][3:].isdigit():
            v = [int(x) for x in f[1:]]
            v[0] += 1; v[2] += 1; v[3] += 1; v[6] += 1  # user, system, idle, softirq
            line = f[0] + " " + " ".join(map(str, v))
        out.append(line)
    stat = out
    put(f"{root}/proc/stat", "\n".join(out) + "\n")
    text = [irq[0]]
    for i, (head, counts, tail) in enumerate(rows):
        if counts is None:
            text.append(head)
            continue
        counts[i % ncol] += 7
        text.append(head + "".join(f" {c:10d}" for c in counts) + "  " + tail)
    put(f"{root}/proc/interrupts", "\n".join(text) + "\n")
    for n in nics:
        for c in ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets"):
            put(f"{root}/sys/class/net/{n}/statistics/{c}", f"{123456789 + tick * 100000}\n")
    time.sleep(0.01)
PY
  writer=$!
}

measure() {  # label, extra args...
  local label=$1; shift
  local out="$work/out-$(echo "$label" | tr -c 'a-zA-Z0-9' '_')"
  "$BIN" monitor --interval "$INTERVAL" --duration "$DURATION" --out "$out" "$@" >"$out.log" 2>/dev/null || true
  python3 - "$label" "$out/summary.json" "$out/monitor.csv" <<'PY'
import json, os, sys
m = json.load(open(sys.argv[2]))["monitor"]
us = m["monitor_cpu_ns_per_sample"] / 1e3
rows = sum(1 for _ in open(sys.argv[3])) - 1
print(f"| {sys.argv[1]} | {m['samples']} | {rows / max(1, m['samples'] - 1):.0f} | {us:.0f} us | {us / 1e6 * 100:.3f} % |")
PY
}

make_tree "$work/fx208q16" 16
make_tree "$work/fx208q64" 64
echo "binary: $BIN, interval $INTERVAL, duration $DURATION, $(nproc) CPUs here, $(date -u +%FT%TZ)"
echo "| tree | samples | CSV rows per sample | CPU per sample | share of one CPU at 1 s |"
echo "|---|---|---|---|---|"
measure "208 CPUs, 5 NICs x 16 queues (fixture, static)" --root "$work/fx208q16"
measure "208 CPUs, 5 NICs x 64 queues (fixture, static)" --root "$work/fx208q64"
start_writer "$work/fx208q16"
measure "208 CPUs, 5 NICs x 16 queues (fixture, moving)" --root "$work/fx208q16"
kill "$writer"; wait "$writer" 2>/dev/null || true
start_writer "$work/fx208q64"
measure "208 CPUs, 5 NICs x 64 queues (fixture, moving)" --root "$work/fx208q64"
kill "$writer"; wait "$writer" 2>/dev/null || true
writer=""
measure "this machine ($(nproc) CPUs, live, ethtool+NVML)"
