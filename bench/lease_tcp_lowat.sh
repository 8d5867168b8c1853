#!/bin/bash
# Issue 34 after bench tcp's receiver reads by SO_RCVLOWAT (fd2d544), on a 64-core host:
#  1. bench/engines.sh (channels 1..32, bench tcp, bench net, iperf3 processes, 3 runs each,
#     --monitor per thread; the 128 KiB table at 16 and 32 channels);
#  2. bench tcp alone at 16 and 32 channels, the new read and the old one
#     (P2PSCOPE_TCP_RCVLOWAT=0) alternating, 3 runs each: the change's own A/B.
# Usage: bench/lease_tcp_lowat.sh OUTDIR; binaries in .device/; packs OUTDIR.tar.gz.
set -u
OUT=${1:?usage: bench/lease_tcp_lowat.sh OUTDIR}
. "$(dirname "$0")/lease_common.sh"
if [ -x "$D/iperf3/iperf3" ]; then
  export IPERF3=$D/iperf3/iperf3 LD_LIBRARY_PATH=$D/iperf3${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
part engines 300 env P2PSCOPE="$P" PLUGIN="$D/libnccl-net-p2pscope.so" MONITOR=1 SECS=1 BUDGET_S=260 RUN_S=30 \
  EXTRA_CHUNK=128K bash "$ROOT/bench/engines.sh" "$OUT/engines"
for c in 16 32; do
  for r in 1 2 3; do
    for mode in 1 0; do
      part "ab-$c-$mode-$r" 40 env P2PSCOPE_TCP_RCVLOWAT=$mode "$P" bench tcp --loopback --channels "$c" \
        --size $((256 * c))M --iters 5 --format json --out "$OUT/ab-$c-$mode-$r.json" --force
    done
  done
done
echo "== walls"; cat "$OUT/walls.txt" | grep -v '^ab-'
echo "== engines"; grep -E '^\||skipped' "$OUT/engines.log" | cut -c1-240
echo "== A/B (GB/s: new read, old read)"
python3 - "$OUT" <<'PY'
import json, sys, glob, statistics
out = sys.argv[1]
for c in (16, 32):
    row = []
    for mode in ('1', '0'):
        v = []
        for f in sorted(glob.glob(f"{out}/ab-{c}-{mode}-*.json")):
            try:
                j = json.load(open(f)); v.append(round(j["server"]["rx_bytes_per_s"] / 1e9, 2))
            except Exception as e:
                v.append(None)
        row.append(v)
    print(c, 'channels: new', row[0], 'old', row[1])
PY
tar czf "$OUT.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && rm -rf "$OUT"
