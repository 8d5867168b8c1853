#!/usr/bin/env bash
# survey --transport nccl on a cluster of network-namespace hosts (tools/netns-cluster.sh)
# on a GPU machine, with the tcp survey of the same cluster beside it as the anchor: every
# host's links over NCCL's own send/recv (each side a child on the host's GPU, its own
# NCCL_HOSTID, the rail's NIC as NCCL_SOCKET_IFNAME). Namespace hosts share the machine's
# GPUs, so one GPU is enough. Scenarios, each RUNS times (tcp once, as the anchor):
#   healthy   every pair, bandwidth and latency: nothing flagged?
#   slow      h1 -> h2 on rail 2 at SLOW_PCT % of the line rate: found and named?
# Usage: bench/survey_nccl.sh OUTDIR  (root; env HOSTS=4 RAILS=2 RATE=200mbit RUNS=3 SIZE=2M
#        SLOW_PCT=50 P2PSCOPE=build/p2pscope)
set -uo pipefail
out=${1:?usage: bench/survey_nccl.sh OUTDIR}
HOSTS=${HOSTS:-4} RAILS=${RAILS:-2} RATE=${RATE:-200mbit} RUNS=${RUNS:-3} SIZE=${SIZE:-2M} SLOW_PCT=${SLOW_PCT:-50}
here=$(cd "$(dirname "$0")/.." && pwd)
cluster=$here/tools/netns-cluster.sh
export P2PSCOPE=${P2PSCOPE:-$here/build/p2pscope} P2PSCOPE_NETNS_CPUS=${P2PSCOPE_NETNS_CPUS-each}
export NCCL_NVLS_ENABLE=0 P2PSCOPE_NETNS_ENV="NCCL_NVLS_ENABLE ${P2PSCOPE_NETNS_ENV:-}"
mkdir -p "$out"
trap 'bash "$cluster" down' EXIT

run_one() {  # SCENARIO TRANSPORT I
  local dir=$out/$1-$2-$3 t0 t1 rc
  t0=$(date +%s.%N)
  bash "$cluster" survey --transport "$2" --size "$SIZE" --round-timeout 60 --timeout 10 --format json --out "$dir" \
    >"$dir.json" 2>"$dir.err"
  rc=$?
  t1=$(date +%s.%N)
  python3 - "$dir/survey.json" "$1" "$2" "$3" "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" <<'PY'
import json, statistics, sys
path, scen, transport, i, rc, wall = sys.argv[1:]
try:
    d = json.load(open(path))
except Exception as e:
    print(f"| {scen} | {transport} | {i} | {float(wall):.1f} | {rc} | - | - | - | - | no survey.json ({e}) |"); sys.exit()
v = d["verdict"]
bw = [r for r in d["records"] if r["step"] == "bw" and r["pass"] == 1 and not r["failure"]]
meds = [statistics.median(x) for r in bw for x in (r["c2s_bytes_per_s"], r["s2c_bytes_per_s"]) if x]
lat = [statistics.median(r["latency_ns"]) for r in d["records"] if r["step"] == "lat" and not r["failure"] and r["latency_ns"]]
failed = sum(1 for r in d["records"] if r["failure"] and r["step"] in ("bw", "lat"))
rate = f"{min(meds)/1e6:.1f}-{max(meds)/1e6:.1f}" if meds else "-"
lat_s = f"{min(lat)/1e3:.0f}-{max(lat)/1e3:.0f}" if lat else "-"
kinds = ",".join(f["kind"] for f in v["findings"]) or "-"
print(f"| {scen} | {transport} | {i} | {float(wall):.1f} | {rc} | {v['slow_links']}/{v['links']} | {rate} | {lat_s} | {failed} | {kinds}: {v['headline'][:150]} |")
PY
}

{
  echo "# bench/survey_nccl.sh on $(hostname), $(nproc) CPUs, $(nvidia-smi -L 2>/dev/null | head -1), $(date -u +%FT%TZ)"
  echo "# $HOSTS hosts x $RAILS rails at $RATE, --size $SIZE; per-direction medians of each link (MB/s), latency medians (us)"
  echo
  echo "| scenario | transport | run | wall s | rc | slow links | link MB/s | latency us | failed sessions | verdict |"
  echo "|---|---|---:|---:|---:|---:|---|---|---:|---|"
} | tee "$out/summary.md"
for scen in healthy slow; do
  bash "$cluster" down >/dev/null 2>&1
  bash "$cluster" up "$HOSTS" "$RAILS" "$RATE" 2>&1 | grep -v Warning >/dev/null
  [ "$scen" = slow ] && bash "$cluster" slow-link 1 2 2 "$SLOW_PCT" 2>/dev/null
  run_one "$scen" tcp 1 | tee -a "$out/summary.md"
  for i in $(seq 1 "$RUNS"); do run_one "$scen" nccl "$i" | tee -a "$out/summary.md"; done
done
# The paths NCCL took, as the survey's notes say them (the last nccl run of each scenario).
for scen in healthy slow; do
  f=$out/$scen-nccl-$RUNS/survey.json
  [ -f "$f" ] && python3 -c "import json,sys; [print('$scen:', n) for n in json.load(open('$f'))['notes'] if 'NCCL' in n]" | tee -a "$out/summary.md"
done
