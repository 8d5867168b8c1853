#!/bin/bash
# Issue 34 on a 64-core GPU host after the sender's fixes (i-plug merged), and the main job
# again on that binary, in one call:
#  1. bench/engines.sh: channels 1..32, bench tcp, bench net (reference plugin), iperf3
#     processes, 3 runs each alternating, --monitor per thread; Fast Socket at 4 channels
#     (--verify); the 128 KiB table at 16 and 32 channels;
#  2. `p2pscope run` twice (issue 30's main job on the merged binary);
#  3. test_gpu.
# Usage: bench/lease_engines.sh OUTDIR; binaries in .device/; packs OUTDIR.tar.gz.
set -u
OUT=${1:?usage: bench/lease_engines.sh OUTDIR}
. "$(dirname "$0")/lease_common.sh"
if [ -x "$D/iperf3/iperf3" ]; then
  export IPERF3=$D/iperf3/iperf3 LD_LIBRARY_PATH=$D/iperf3${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
part engines 330 env P2PSCOPE="$P" PLUGIN="$D/libnccl-net-p2pscope.so" FASTSOCKET="$D/fastsocket/libnccl-net-fastsocket.so" \
  MONITOR=1 SECS=1 BUDGET_S=290 RUN_S=30 EXTRA_CHUNK=128K bash "$ROOT/bench/engines.sh" "$OUT/engines"
for i in 1 2; do part "run-$i" 120 "$P" run --out "$OUT/run-$i"; done
part test_gpu 240 env P2PSCOPE_BIN="$P" "$D/test_gpu"
echo "== walls"; cat "$OUT/walls.txt"
echo "== engines"; grep -E '^\||Fast Socket|skipped' "$OUT/engines.log" | cut -c1-240
for d in "$OUT"/run-*; do
  python3 - "$d" <<'PY'
import json, sys
j = json.load(open(sys.argv[1] + '/run.json'))
print(sys.argv[1].split('/')[-1], 'sum %.1f' % sum(s['seconds'] for s in j['steps']), [s['status'] for s in j['steps']].count('ok'), 'ok')
PY
  grep -h 'clock alignment' "$d"/profile.log
done
echo "== test_gpu"; grep -E '^\[  (PASSED|FAILED)' "$OUT/test_gpu.log" | head
rm -f "$OUT"/*/campaign/trace*.json 2>/dev/null
tar czf "$OUT.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && rm -rf "$OUT"
