#!/usr/bin/env bash
# Issue 2's goal: `p2pscope topo` on a 208-CPU host with 5 NICs and 8 GPUs in under
# 0.3 s. Builds that tree with tests/fixtures/make-two-socket.py (2 sockets x 52
# cores x 2 threads, 16 queues per NIC), then times text and JSON output over it
# and over this live machine, REPS runs each, and prints the median and max.
# Usage: P2PSCOPE=build/p2pscope bench/topo_bench.sh [REPS]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${P2PSCOPE:-build/p2pscope}
REPS=${1:-20}
TREE=$(mktemp -d)
trap 'rm -rf "$TREE"' EXIT
python3 tests/fixtures/make-two-socket.py "$TREE/big" --cores 52 --gpus 8 --queues 16 >/dev/null
cpus=$("$BIN" topo --root "$TREE/big" --format json | python3 -c 'import json,sys; j=json.load(sys.stdin); print(len(j["cpus"]), len(j["nics"]), len(j["gpus"]))')
read -r ncpu nnic ngpu <<<"$cpus"
echo "tree: $TREE/big: $ncpu CPUs, $nnic NICs (with lo and the management NIC), $ngpu GPUs"

time_it() {  # label, then the command; prints median and max wall seconds
  local label=$1; shift
  local t=()
  for _ in $(seq "$REPS"); do
    local s e
    s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N)
    t+=("$(( (e - s) / 1000 ))")
  done
  printf '%s\n' "${t[@]}" | sort -n | awk -v l="$label" -v n="$REPS" \
    '{a[NR]=$1} END {printf "| %s | %.3f | %.3f | %d |\n", l, a[int((n+1)/2)]/1e6, a[n]/1e6, n}'
}
echo "| case | median s | max s | runs |"
echo "|---|---:|---:|---:|"
time_it "$ncpu CPUs, $nnic NICs, $ngpu GPUs: text" "$BIN" topo --root "$TREE/big"
time_it "$ncpu CPUs, $nnic NICs, $ngpu GPUs: json" "$BIN" topo --root "$TREE/big" --format json
time_it "this machine (live): text" "$BIN" topo
time_it "this machine (live): json" "$BIN" topo --format json
