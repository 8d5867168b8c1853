#!/usr/bin/env bash
# The fleet survey's goals on a cluster of network-namespace hosts (tools/netns-cluster.sh),
# each scenario RUNS times in a row, one table per scenario (bench/results/survey.md):
#   healthy   every pair, bandwidth and latency: wall time, links and latencies flagged
#   slow      one link (h3 -> h5 on rail 2) at SLOW_PCT % of the line rate: found and named?
#   busy      one host (h4) at BUSY_PCT % of one CPU: named as the host, not as links?
#   killed    one host (h6) killed KILL_AFTER s in: named, the other pairs kept?
# Usage: bench/survey.sh OUTDIR   (root; env HOSTS=8 RAILS=2 RATE=200mbit RUNS=20 SIZE=2M
#        SLOW_PCT=50 BUSY_PCT=2 SCENARIOS="healthy slow busy killed" P2PSCOPE=build/p2pscope)
set -uo pipefail
out=${1:?usage: bench/survey.sh OUTDIR}
HOSTS=${HOSTS:-8} RAILS=${RAILS:-2} RATE=${RATE:-200mbit} RUNS=${RUNS:-20} SIZE=${SIZE:-2M}
SLOW_PCT=${SLOW_PCT:-50} BUSY_PCT=${BUSY_PCT:-2} SCENARIOS=${SCENARIOS:-healthy slow busy killed}
here=$(cd "$(dirname "$0")/.." && pwd)
cluster=$here/tools/netns-cluster.sh
export P2PSCOPE=${P2PSCOPE:-$here/build/p2pscope} P2PSCOPE_NETNS_CPUS=${P2PSCOPE_NETNS_CPUS-0}
mkdir -p "$out"
trap 'bash "$cluster" down' EXIT
links=$(( HOSTS * (HOSTS - 1) / 2 * RAILS ))

fresh() { bash "$cluster" down; bash "$cluster" up "$HOSTS" "$RAILS" "$RATE" 2>&1 | grep -v Warning; }

# One run: wall time, exit code, the verdict's counts and headline, as one table row.
run_one() {  # SCENARIO I
  local dir=$out/$1-$2 t0 t1 rc
  t0=$(date +%s.%N)
  bash "$cluster" survey --size "$SIZE" --round-timeout 20 --timeout 5 --format json --out "$dir" \
    >"$dir.json" 2>"$dir.err"
  rc=$?
  t1=$(date +%s.%N)
  python3 - "$dir/survey.json" "$1" "$2" "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" <<'PY'
import json, sys
path, scen, i, rc, wall = sys.argv[1:]
try:
    d = json.load(open(path))
except Exception as e:
    print(f"| {scen} | {i} | {float(wall):.1f} | {rc} | - | - | - | no survey.json ({e}) |"); sys.exit()
v = d["verdict"]
kinds = ",".join(f["kind"] for f in v["findings"]) or "-"
print(f"| {scen} | {i} | {float(wall):.1f} | {rc} | {v['slow_links']}/{v['links']} | {v['latency_flags']} | {kinds} | {v['headline'][:160]} |")
PY
}

echo "# bench/survey.sh on $(hostname), $(nproc) CPUs, $(date -u +%FT%TZ): $HOSTS hosts x $RAILS rails at $RATE, --size $SIZE" | tee "$out/summary.md"
for scen in $SCENARIOS; do
  echo | tee -a "$out/summary.md"
  echo "| scenario | run | wall s | rc | slow links | latency flags | findings | headline |" | tee -a "$out/summary.md"
  echo "|---|---:|---:|---:|---:|---:|---|---|" | tee -a "$out/summary.md"
  fresh >/dev/null
  case $scen in
    slow) bash "$cluster" slow-link 3 5 2 "$SLOW_PCT" 2>/dev/null ;;
    busy) bash "$cluster" busy 4 "$BUSY_PCT" ;;
  esac
  for i in $(seq 1 "$RUNS"); do
    if [ "$scen" = killed ]; then
      P2PSCOPE_NETNS_RECOVERY=1 KILL_RANK=6 KILL_AFTER=${KILL_AFTER:-4} P2PSCOPE_NETNS_WRAP=$here/tools/netns-kill-rank.sh \
        run_one "$scen" "$i" | tee -a "$out/summary.md"
    else
      run_one "$scen" "$i" | tee -a "$out/summary.md"
    fi
  done
done
