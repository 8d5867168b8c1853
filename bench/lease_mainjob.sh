#!/bin/bash
# Issue 30's main job after its calibration shrank (in-process NCCL choices, a 20 ms span
# target at long sizes, the topology read beside the set-up), and the checks around it,
# in one call on four GPUs:
#  1. `p2pscope run` 3 times, each timed whole by the shell; per step seconds;
#  2. test_gpu (every GPU test; P2PSCOPE_BIN is the binary copied here);
#  3. bench/predict_nccl.sh (issue 29's table: the model on a calibration of the new method).
# Usage: bench/lease_mainjob.sh OUTDIR; binaries in .device/; packs OUTDIR.tar.gz.
set -u
OUT=${1:?usage: bench/lease_mainjob.sh OUTDIR}
. "$(dirname "$0")/lease_common.sh"
for i in 1 2 3; do part "run-$i" 120 "$P" run --out "$OUT/run-$i"; done
part test_gpu 240 env P2PSCOPE_BIN="$P" P2PSCOPE_REFNET_PATH="$D/libnccl-net-p2pscope.so" "$D/test_gpu"
part predict 150 env P2PSCOPE="$P" bash "$ROOT/bench/predict_nccl.sh" "$OUT/predict"
echo "== walls"; cat "$OUT/walls.txt"
echo "== run steps (s)"
for d in "$OUT"/run-*; do
  python3 - "$d" <<'PY'
import json, sys
j = json.load(open(sys.argv[1] + '/run.json'))
print(sys.argv[1].split('/')[-1], 'sum %.1f' % sum(s['seconds'] for s in j['steps']), '|',
      ' '.join('%s %.1f' % (s['name'], s['seconds']) for s in j['steps']))
m = json.load(open(sys.argv[1] + '/campaign/nccl-calibration/manifest.json'))
print('   calibration:', ' '.join('%s %.2f s (%s)' % (r['json'], r['seconds'], r['process'][:14]) for r in m['runs']))
PY
  grep -h "choices\|other process" "$d"/profile.log | head -4
done
echo "== test_gpu"; grep -E '^\[  (PASSED|FAILED|  SKIPPED)|tests ran' "$OUT/test_gpu.log" | head -20
echo "== predict"; grep -E 'Off by|geomean' "$OUT/predict.log" | head -12 | cut -c1-300
rm -f "$OUT"/*/campaign/trace*.json 2>/dev/null
tar czf "$OUT.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && rm -rf "$OUT"
