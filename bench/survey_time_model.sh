#!/usr/bin/env bash
# The survey's time model against measured surveys: a healthy survey at each host count
# (namespace hosts, tools/netns-cluster.sh), then `survey --plan N --from` the survey at
# FROM hosts predicts each count's time; measured and predicted side by side.
# Usage: bench/survey_time_model.sh OUTDIR   (root; env COUNTS="4 8 16" FROM=8 SIZE=2M RATE=200mbit)
set -uo pipefail
out=${1:?usage: bench/survey_time_model.sh OUTDIR}
COUNTS=${COUNTS:-4 8 16} FROM=${FROM:-8} SIZE=${SIZE:-2M} RATE=${RATE:-200mbit}
here=$(cd "$(dirname "$0")/.." && pwd)
cluster=$here/tools/netns-cluster.sh
export P2PSCOPE=${P2PSCOPE:-$here/build/p2pscope} P2PSCOPE_NETNS_CPUS=${P2PSCOPE_NETNS_CPUS-0}
mkdir -p "$out"
trap 'bash "$cluster" down' EXIT
for n in $COUNTS; do
  bash "$cluster" down; bash "$cluster" up "$n" 2 "$RATE" >/dev/null 2>&1
  bash "$cluster" survey --size "$SIZE" --out "$out/n$n" >"$out/n$n.txt" 2>"$out/n$n.err"
done
echo "| hosts | measured s (survey's own wall) | predicted s from the $FROM-host survey | error |"
echo "|---:|---:|---:|---:|"
for n in $COUNTS; do
  python3 - "$out/n$n/survey.json" "$("$P2PSCOPE" survey --plan "$n" --from "$out/n$FROM" | awk 'NR==3 {print $5}')" "$n" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); pred = float(sys.argv[2]); n = sys.argv[3]
# The plan leaves the second pass out: so does this measured figure (its rounds are priced apart).
print(f"| {n} | {d['wall_s']:.1f} | {pred:.1f} | {100 * (pred - d['wall_s']) / d['wall_s']:+.0f} % |")
PY
done
