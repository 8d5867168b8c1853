#!/usr/bin/env bash
# The simulator loop on a 4-GPU campaign (12 pairs x 31 sizes x 10 reps): after one
# `analyze`, the wall time of export (astra-sim, json, csv) + predict (5 ops x 21 sizes,
# ring and tree), process start to exit, best and median of N runs. Target (issue 15):
# under 1 s. Also checks the round trip export csv -> analyze --predictions (MAPE of
# the model against the measured medians; every prediction is the model itself).
# Usage: bench/simulator_loop.sh [path/to/p2pscope] [runs]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$here/build-nocuda/p2pscope}
runs=${2:-5}
[ -x "$bin" ] || { echo "no p2pscope binary at $bin (cmake --build build-nocuda --target p2pscope)" >&2; exit 1; }
dir=$(mktemp -d /tmp/p2pscope-simloop.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$here/tools/make-synthetic-campaign" --out "$dir/c" --gpus 4 --reps 10 --topology uniform \
  --protocol-switch 64K >/dev/null
"$bin" analyze "$dir/c" --no-report >/dev/null
links=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['links']))" "$dir/c/links.json")
sizes=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['links'][0]['points']))" "$dir/c/links.json")
loop() {
  "$bin" export "$dir/c" --to astra-sim --out "$dir/network.yml" --force 2>/dev/null
  "$bin" export "$dir/c" --to json --out "$dir/export.json" --force 2>/dev/null
  "$bin" export "$dir/c" --to csv --out "$dir/pred.csv" --force 2>/dev/null
  "$bin" predict "$dir/c" --algo ring --format csv --out "$dir/ring.csv" --force 2>/dev/null
  "$bin" predict "$dir/c" --algo tree --format csv --out "$dir/tree.csv" --force 2>/dev/null
}
times=()
for i in $(seq "$runs"); do
  t0=$(date +%s%N)
  loop
  t1=$(date +%s%N)
  times+=($(( (t1 - t0) / 1000000 )))
done
sorted=($(printf '%s\n' "${times[@]}" | sort -n))
echo "campaign: $links links x $sizes sizes (10 reps each)"
echo "export x3 + predict x2 (5 ops x 21 sizes each), $runs runs: best ${sorted[0]} ms, median ${sorted[$((runs / 2))]} ms (all: ${times[*]} ms)"
echo "predictions: $(($(wc -l < "$dir/ring.csv") - 1)) ring rows, $(($(wc -l < "$dir/tree.csv") - 1)) tree rows"
"$bin" analyze "$dir/c" --no-report --predictions "$dir/pred.csv" | grep -E "predictions:|MAPE"
echo "network.yml:"; grep -v '^#' "$dir/network.yml" | sed '/^$/d; s/^/  /'
