#!/bin/bash
# (Ran once, on the binary of 561feff, which had `run --hold-gpus`; that option was taken out
# after this call showed the holder slower. Kept as the record of the check.)
# Issue 30's main job with and without the GPU context holder, and the checks that go
# with it, in one call on four GPUs:
#  1. `p2pscope run` 4 times, --hold-gpus on and off alternating (on first), each timed
#     whole by the shell; per step seconds from run.json; any "used by other process"
#     warning in the profile (the holder must not be named as a stranger);
#  2. bench/predict_nccl.sh (issue 29's table on a new lease, out of sample);
#  3. bench/nccl_vs_torch.sh with 5 alternating runs (bench nccl's replica of nccl-tests
#     against torch.distributed).
# Usage: bench/lease_hold.sh OUTDIR; binaries in .device/; packs OUTDIR.tar.gz.
set -u
OUT=${1:?usage: bench/lease_hold.sh OUTDIR}
. "$(dirname "$0")/lease_common.sh"
for i in 1 2 3 4; do
  mode=on; [ $((i % 2)) -eq 0 ] && mode=off
  part "run-$i-$mode" 120 "$P" run --out "$OUT/run-$i-$mode" --hold-gpus "$mode"
done
part predict 150 env P2PSCOPE="$P" bash "$ROOT/bench/predict_nccl.sh" "$OUT/predict"
part torch 300 env P2PSCOPE="$P" REPS=5 bash "$ROOT/bench/nccl_vs_torch.sh" "$OUT/torch"
echo "== walls"; cat "$OUT/walls.txt"
echo "== run steps (s)"
for d in "$OUT"/run-*; do
  [ -f "$d/run.json" ] || continue
  python3 - "$d" <<'PY'
import json, sys
j = json.load(open(sys.argv[1] + '/run.json'))
steps = ' '.join('%s %.1f' % (s['name'], s['seconds']) for s in j['steps'])
print(sys.argv[1].split('/')[-1], 'sum %.1f' % sum(s['seconds'] for s in j['steps']), '|', steps, '| held', j.get('gpu_contexts_held'))
PY
  grep -h "other process" "$d"/*.log | head -2
done
echo "== predict"; tail -5 "$OUT/predict.log" | cut -c1-400
echo "== torch"; tail -14 "$OUT/torch.log"
rm -f "$OUT"/*/campaign/trace*.json "$OUT"/*/*/trace*.json 2>/dev/null
tar czf "$OUT.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && rm -rf "$OUT"
