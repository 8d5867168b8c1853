#!/usr/bin/env bash
# The simulator loop on a 4-GPU campaign (12 pairs x 31 sizes x 10 reps): after one
# `analyze`, the wall time of export (astra-sim, json, csv) + predict (5 ops x 21 sizes,
# ring and tree), process start to exit, best and median of N runs. Target (issue 15):
# under 1 s. Also checks the round trip export csv -> analyze --predictions (MAPE of
# the model against the measured medians; every prediction is the model itself).
# Usage: bench/simulator_loop.sh [path/to/p2pscope] [runs]
#
# With --astra: the loop closed with a real ASTRA-sim (issue 22). Both analytical backends
# on the files export writes (--astra-backend unaware|aware, --system), nothing edited,
# against `predict --algo ring` with the same --astra-backend, ring all-reduce at 1 MiB,
# 64 MiB and 1 GiB, on the fixtures h200x2 and h200-staged, an 8-GPU synthetic campaign in
# two link classes, a 4-GPU one with a protocol switch at 64 KiB, and a host campaign
# (HOST_CAMPAIGN=DIR, e.g. the campaign/ of `p2pscope run --out DIR`; profiled here with
# `make run`'s host settings when unset). A campaign whose default export says it is off beyond
# 2 % for some all-reduce sizes is exported once per size with `--for ring:S`. Prints the markdown table of
# bench/results/simulator_loop.md; exit 1 when a ratio is off by more than 2 %.
# Usage: bench/simulator_loop.sh --astra [path/to/p2pscope] [ASTRA_DIR (default ../shared/astra-sim)]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" = "--astra" ]; then
  bin=$(realpath "${2:-$here/build/p2pscope}")
  astra=$(realpath "${3:-$here/../shared/astra-sim}")
  [ -x "$bin" ] || { echo "no p2pscope binary at $bin" >&2; exit 1; }
  [ -x "$astra/bin/AstraSim_Analytical_Congestion_Unaware" ] || { echo "no ASTRA-sim binaries in $astra/bin" >&2; exit 1; }
  work=$(mktemp -d /tmp/p2pscope-astraloop.XXXXXX)
  trap 'rm -rf "$work"' EXIT
  "$here/tools/make-synthetic-campaign" --out "$work/src/syn8-two-class" --gpus 8 --reps 5 --topology mixed >/dev/null
  "$here/tools/make-synthetic-campaign" --out "$work/src/syn4-protocol-switch" --gpus 4 --reps 5 --topology uniform \
    --protocol-switch 64K >/dev/null
  host=${HOST_CAMPAIGN:-}
  if [ -z "$host" ]; then  # what `make run` profiles on a machine without GPUs
    host="$work/src/host-make-run"
    "$bin" profile --out "$host" --backend host --sizes 1:64M --reps 3 --warmup 2 --drift 0 --thermal-warmup off >/dev/null
  fi
  python3 "$here/bench/simulator_loop_astra.py" "$bin" "$astra" "$work/runs" \
    "h200x2=$here/tests/fixtures/campaigns/h200x2" "h200-staged=$here/tests/fixtures/campaigns/h200-staged" \
    "host (make run)=$host" "synthetic 8-GPU two-class=$work/src/syn8-two-class" \
    "synthetic 4-GPU protocol switch=$work/src/syn4-protocol-switch"
  exit $?
fi
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
