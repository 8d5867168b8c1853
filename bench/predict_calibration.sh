#!/usr/bin/env bash
# predict --calibration on nccl-tests output a user already has: allreduce and sendrecv at
# 2 and N ranks calibrate NCCL's model, the other ops are predicted and set against their
# own nccl-tests runs (--measured). Default files: the real nccl-tests 2.19.1 output of
# tests/fixtures/nccl-tests/h200-2.19 (ranks sharing one H200: the path, not a fabric).
# Usage: bench/predict_calibration.sh [DIR-of-nccl-tests-files] [CAMPAIGN]  (P2PSCOPE=build/p2pscope)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
F=${1:-$here/tests/fixtures/nccl-tests/h200-2.19}
C=${2:-$here/tests/fixtures/campaigns/h200x2}
P=${P2PSCOPE:-$here/build/p2pscope}
out=$(mktemp -d)
"$P" predict "$C" --algo nccl --ranks 2,4 --sizes 64K,256K,1M,4M,16M \
  --ops allreduce,sendrecv,allgather,reducescatter,alltoall,broadcast \
  --calibration "$F/01_all_reduce_plain.txt" "$F/03_sendrecv.txt" "$F/08_all_reduce_np4.txt" "$F/08_sendrecv_np4.txt" \
  --measured "$F"/04_all_gather.txt "$F"/04_reduce_scatter.txt "$F"/04_alltoall.txt "$F"/04_broadcast.txt \
             "$F"/08_all_gather_np4.txt "$F"/08_reduce_scatter_np4.txt "$F"/08_alltoall_np4.txt "$F"/08_broadcast_np4.txt \
  --format json --out "$out/p.json" 2>"$out/err.txt"
python3 - "$out/p.json" <<'PY'
import json, math, sys
d = json.load(open(sys.argv[1]))
print("| op | ranks | size | role | predicted us | measured us | error % |")
print("|---|---:|---:|---|---:|---:|---:|")
errs = []
for r in d["rows"]:
    m = r["measured_us"]
    e = r.get("error_pct")
    if r["role"] == "predicted" and e is not None: errs.append(abs(e))
    print(f"| {r['op']} | {r['ranks']} | {r['bytes'] if 'bytes' in r else r['size_bytes']} | {r['role']} | {r['predicted_us']:.1f} | "
          f"{'-' if m is None else f'{m:.1f}'} | {'-' if e is None else f'{e:+.1f}'} |")
g = math.exp(sum(math.log(max(x, 1e-9)) for x in errs) / len(errs)) if errs else float('nan')
print(f"\npredicted cells with a measurement: {len(errs)}; geomean |error| {g:.1f} %, worst {max(errs):.1f} %")
print("headline:", d["headline"])
PY
grep -v "^wrote" "$out/err.txt" | head -5
