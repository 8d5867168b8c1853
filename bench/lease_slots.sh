#!/bin/bash
# Issue 34's whole table in one call on a 64-core host (nvidia-h100-x4 / nvidia-h200-x4),
# after the fold (--slot-memory 128K, the default: each ring slot on 128 KiB of memory,
# reused, as iperf3's buffer): bench/engines.sh at 1..32 channels, bench tcp, bench net
# (reference plugin), C iperf3 processes (sum of clients, and lo's counter while all run),
# 3 runs each alternating, medians, --monitor per thread; bench tcp --slot-memory 0 (the
# old whole-chunk slots) in the same alternation at 8, 16 and 32 channels; Fast Socket at
# 4 channels (--verify on both engines).
# Usage: bench/lease_slots.sh OUTDIR; binaries in .device/; packs OUTDIR.tar.gz.
set -u
OUT=${1:?usage: bench/lease_slots.sh OUTDIR}
. "$(dirname "$0")/lease_common.sh"
if [ -x "$D/iperf3/iperf3" ]; then
  export IPERF3=$D/iperf3/iperf3 LD_LIBRARY_PATH=$D/iperf3${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
part engines ${ENGINES_S:-420} env P2PSCOPE="$P" PLUGIN="$D/libnccl-net-p2pscope.so" \
  FASTSOCKET="$D/fastsocket/libnccl-net-fastsocket.so" MONITOR=1 SECS=2 BUDGET_S=$((${ENGINES_S:-420} - 40)) RUN_S=30 \
  WHOLE_SLOTS=1 WHOLE_CHANNELS=8,16,32 bash "$ROOT/bench/engines.sh" "$OUT/engines"
echo "== walls"; cat "$OUT/walls.txt"
echo "== engines"; grep -vE '^$' "$OUT/engines.log" | cut -c1-300
tar czf "$OUT.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && rm -rf "$OUT"
