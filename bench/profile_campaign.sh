#!/usr/bin/env bash
# Times the measurement phase (warmup pass + repetitions; not the thermal warm-up or
# drift windows) of the full `p2pscope profile` campaign and checks issue 4's targets:
# <= 60 s for 12 pairs x 31 sizes x (5+10) on 4 GPUs, CV < 5 % for every size >= 1 MiB,
# median bandwidth >= 380 GB/s at 1 GiB, median GPU time <= 5 us at 1 B.
#
#   bench/profile_campaign.sh                       # all GPUs, 1 B..1 GiB, default backend
#   P2PSCOPE=build/p2pscope GPUS=0-3 bench/profile_campaign.sh
#   BACKEND=host SIZES=1:64M bench/profile_campaign.sh   # smoke check without a GPU
# Extra arguments go to `p2pscope profile` (e.g. --drift 30s --thermal-warmup 50C:60s).
set -euo pipefail

BIN=${P2PSCOPE:-build/p2pscope}
SIZES=${SIZES:-1:1G}
OUT=${OUT:-p2pscope-out/bench-profile-$(date -u +%Y%m%d-%H%M%S)}
args=(profile --sizes "$SIZES" --out "$OUT" --drift "${DRIFT:-0}" --thermal-warmup "${THERMAL:-off}")
[[ -n "${GPUS:-}" ]] && args+=(--gpus "$GPUS")
[[ -n "${BACKEND:-}" ]] && args+=(--backend "$BACKEND")
[[ -x "$BIN" ]] || { echo "no p2pscope binary at $BIN (set P2PSCOPE=...)" >&2; exit 2; }

echo "# $BIN ${args[*]} $*"
start=$(date +%s.%N)
"$BIN" "${args[@]}" "$@"
end=$(date +%s.%N)
echo
echo "wall time of the whole command: $(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.1f s", b-a}')"

meta="$OUT/metadata.json"
summarize() {
python3 - "$meta" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
s = m["sessions"][-1]
plan = m["plan"]
pairs = len(plan["devices"]) * (len(plan["devices"]) - 1)
phase = s["warmup_phase_s"] + s["measure_phase_s"]
print(f"devices {plan['devices']} ({pairs} directed pairs) x {len(plan['sizes'])} sizes x "
      f"({plan['warmup']} warmup + {plan['reps']} reps), backend {','.join(plan['backends'])}")
print(f"measurement phase: {phase:.2f} s (warmup pass {s['warmup_phase_s']:.2f} s + reps {s['measure_phase_s']:.2f} s)"
      f"  target <= 60 s for 12 pairs: {'PASS' if phase <= 60 else 'FAIL'}")
big = [x for x in m["summary"] if x["size_bytes"] >= 1 << 20]
if big:
    worst = max(big, key=lambda x: x["worst_cv"])
    print(f"worst CV for sizes >= 1 MiB: {100*worst['worst_cv']:.2f} % at {worst['size_bytes']} B "
          f"(timed on {worst['timed_on']})  target < 5 %: {'PASS' if worst['worst_cv'] < 0.05 else 'FAIL'}")
for x in m["summary"]:
    if x["size_bytes"] == 1 << 30:
        print(f"1 GiB median bandwidth: {x['bytes_per_s']/1e9:.1f} GB/s  target >= 380: {'PASS' if x['bytes_per_s'] >= 380e9 else 'FAIL'}")
    if x["size_bytes"] == 1:
        print(f"1 B median time: {x['median_ns']/1e3:.2f} us (timed on {x['timed_on']})  target <= 5 us: "
              f"{'PASS' if x['median_ns'] <= 5000 else 'FAIL'}")
d = json.load(open(sys.argv[1].replace("metadata.json", "clock_drift.json")))
for dev in d.get("devices", []):
    f = dev.get("campaign_fit") or {}
    if f: print(f"GPU {dev['device']}: device timer vs host over the campaign {f['ppm']:+.3f} ppm, {f['points']} readings")
PY
}
if command -v python3 >/dev/null; then summarize; else echo "(python3 not found: see the table above and $meta)"; fi
