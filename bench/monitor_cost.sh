#!/usr/bin/env bash
# CPU cost of one monitor sample: on a generated 208-CPU / 5-NIC fixture tree (the
# topology generator tests/fixtures/make-two-socket.py plus /proc/stat and NIC
# statistics added here) and on this machine. The sampler measures its own thread
# CPU time over every sample (CLOCK_THREAD_CPUTIME_ID around collect+diff+CSV), so
# "us per sample" at a 1 s interval is the share of one CPU in units of 1e-4 %.
# Usage: bench/monitor_cost.sh [p2pscope binary]   (default build-monitor/p2pscope)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build-monitor/p2pscope}
DURATION=${DURATION:-4s}
INTERVAL=${INTERVAL:-20ms}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

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

measure() {  # label, extra args...
  local label=$1; shift
  local out="$work/out-$label"
  "$BIN" monitor --interval "$INTERVAL" --duration "$DURATION" --out "$out" "$@" >"$work/$label.log" 2>/dev/null || true
  python3 - "$label" "$out/summary.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[2]))["monitor"]
us = m["monitor_cpu_ns_per_sample"] / 1e3
print(f"| {sys.argv[1]} | {m['samples']} | {us:.0f} us | {us / 1e6 * 100:.3f} % |")
PY
}

make_tree "$work/fx208q16" 16
make_tree "$work/fx208q64" 64
echo "| tree | samples | CPU per sample | share of one CPU at 1 s |"
echo "|---|---|---|---|"
measure "208 CPUs, 5 NICs x 16 queues (fixture)" --root "$work/fx208q16"
measure "208 CPUs, 5 NICs x 64 queues (fixture)" --root "$work/fx208q64"
measure "this machine ($(nproc) CPUs, live, ethtool+NVML)"
