#!/usr/bin/env bash
# Two back-to-back campaigns on one host: does each config's median of the second fall in
# agreement with the first, within their intervals? (issue 22: >= 95 % of configs). Both
# campaigns are profiled with the same plan and seed, analyzed, and for every config the
# two 95 % intervals of the median (summary.json median_ci: order statistics) are compared:
# they agree when they overlap. Prints the fraction, the configs that disagree (worst
# first, by the gap between the intervals relative to the median) and exits 1 below 95 %.
#
# Usage: bench/repeatability.sh [p2pscope binary] [-- profile options...]
#   host (no GPU; what was run here):
#     bench/repeatability.sh build/p2pscope -- --backend host --sizes 1:64M --reps 10 --warmup 2 --drift 0 \
#       --thermal-warmup off
#   GPUs (the coordinator's command; about 2 x 3 minutes on 2 H100s):
#     bench/repeatability.sh build/p2pscope -- --backend ce --gpus 0,1 --sizes 1:1G --reps 10 --drift 0 \
#       --thermal-warmup 50C:30s
#   one GPU (the GPU and its pinned host memory):
#     bench/repeatability.sh build/p2pscope -- --backend staged --sizes 1:1G --reps 10 --drift 0 --thermal-warmup 50C:30s
# With --processes K (profile's default 3) each interval holds the spread between the K processes
# the repetitions ran in; --processes 1 gives the one-process interval (order statistics alone).
# Also prints the intervals' width relative to the median (what the honesty costs).
# OUT=DIR keeps both campaigns and the comparison (default a temp dir, removed).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$here/build/p2pscope}
shift || true
[ "${1:-}" = "--" ] && shift
opts=("$@")
[ ${#opts[@]} -gt 0 ] || opts=(--backend host --sizes 1:64M --reps 10 --warmup 2 --drift 0 --thermal-warmup off)
[ -x "$bin" ] || { echo "no p2pscope binary at $bin" >&2; exit 2; }
out=${OUT:-}
if [ -z "$out" ]; then
  out=$(mktemp -d /tmp/p2pscope-repeat.XXXXXX)
  trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"
for run in a b; do
  rm -rf "${out:?}/$run"
  t0=$(date +%s)
  "$bin" profile --out "$out/$run" "${opts[@]}" > "$out/$run.log" 2>&1 ||
    { tail -5 "$out/$run.log" >&2; exit 2; }
  "$bin" analyze "$out/$run" --no-report > "$out/$run.analyze.log" 2>&1 || { tail -5 "$out/$run.analyze.log" >&2; exit 2; }
  echo "campaign $run: $out/$run ($(( $(date +%s) - t0 )) s): profile ${opts[*]}"
done
python3 - "$out/a/summary.json" "$out/b/summary.json" <<'EOF'
import json
import sys

a, b = (json.load(open(p)) for p in sys.argv[1:3])
key = lambda c: (c["backend"], c["src"], c["dst"], c["size_bytes"])
A, B = ({key(c): c for c in j["configs"]} for j in (a, b))
common = sorted(set(A) & set(B))
levels = sorted({round(c["median_ci"]["level"], 4) for c in list(A.values()) + list(B.values())})
bad = []
for k in common:
    x, y = A[k]["median_ci"], B[k]["median_ci"]
    gap = max(x["lo_ns"], y["lo_ns"]) - min(x["hi_ns"], y["hi_ns"])  # > 0: the intervals do not overlap
    if gap > 0:
        bad.append((gap / A[k]["median_ns"], k, A[k]["median_ns"], B[k]["median_ns"], x, y))
agree = len(common) - len(bad)
frac = agree / len(common) if common else 0
procs = sorted({j.get("processes", 1) for j in (a, b)})
widths = sorted((c["median_ci"]["hi_ns"] - c["median_ci"]["lo_ns"]) / c["median_ns"] for j in (A, B) for c in j.values())
def pct(q):
    return 100 * widths[min(len(widths) - 1, int(q * len(widths)))]
print(f"configs in both: {len(common)} (only in one: {len(set(A) ^ set(B))}); interval levels {levels}; processes {procs}")
print(f"interval width / median over both campaigns: median {pct(0.5):.2f} %, p90 {pct(0.9):.2f} %, max {100 * widths[-1]:.2f} %")
print(f"agree within their intervals: {agree} / {len(common)} = {100 * frac:.1f} % (goal >= 95 %)")
bad.sort(reverse=True)
for gap, (bk, s, d, n), ma, mb, x, y in bad[:15]:
    print(f"  {bk} {s}->{d} {n} B: median {ma:.0f} vs {mb:.0f} ns ({100 * (mb - ma) / ma:+.1f} %), intervals "
          f"[{x['lo_ns']:.0f}, {x['hi_ns']:.0f}] and [{y['lo_ns']:.0f}, {y['hi_ns']:.0f}], gap {100 * gap:.1f} % of the median")
if len(bad) > 15:
    print(f"  ... and {len(bad) - 15} more")
sys.exit(0 if frac >= 0.95 else 1)
EOF
