#!/usr/bin/env bash
# `p2pscope survey` under Slurm's srun (a one-node Slurm started here, tools/local-slurm.sh)
# on hosts made of network namespaces: the ranks meet from SLURM_PROCID/SLURM_NTASKS, a
# healthy cluster flags nothing, a link slowed to 50 % is named, and the survey says it ran
# under srun. Exit 77 (skipped, with the reason) where Slurm, munge or namespaces are missing
# or Slurm does not start.  Usage: survey_srun.sh P2PSCOPE SOURCE_DIR
set -uo pipefail
bin=$1 src=$2
skip() { echo "SKIPPED: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root to make network namespaces and start Slurm"
for b in srun slurmctld slurmd munged; do command -v $b >/dev/null || skip "no $b (apt-get install slurm-wlm munge)"; done
command -v tc >/dev/null || skip "no tc (apt-get install iproute2)"
probe=p2sprobe$$
ip netns add "$probe" 2>/dev/null || skip "cannot make a network namespace here"
ip netns del "$probe"
export P2PSCOPE_SLURM_DIR=/run/p2pscope-slurm-test$$ P2PSCOPE_SLURM_PORT=$((6930 + $$ % 50 * 2))
cluster=$src/tools/netns-cluster.sh
trap 'bash "$cluster" down >/dev/null 2>&1; bash "$src/tools/local-slurm.sh" down' EXIT
env_line=$(bash "$src/tools/local-slurm.sh" up 2>&1) || skip "Slurm did not start here: $env_line"
eval "$env_line"
export P2PSCOPE_NETNS_PREFIX=s$$ P2PSCOPE_NETNS_NET=10.205 P2PSCOPE_NETNS_CPUS=0 P2PSCOPE=$bin P2PSCOPE_NETNS_LAUNCHER=srun
bash "$cluster" up 4 2 200mbit >/dev/null 2>&1 || skip "netns-cluster up failed (veth, bridge or htb missing)"
out=$(mktemp -d)
fails=0
check() {  # NAME CONDITION-RESULT MESSAGE
  if [ "$2" = 0 ]; then echo "ok: $1"; else echo "FAILED: $1: $3"; fails=$((fails + 1)); fi
}
survey() {  # NAME ARGS...
  local name=$1; shift
  timeout 200 bash "$cluster" survey --size 1M --round-timeout 20 --timeout 5 --out "$out/$name" "$@" >"$out/$name.txt" 2>"$out/$name.err"
  rc=$?
}
head_of() { sed -n 1p "$out/$1.txt"; }

survey healthy
check "srun healthy: exit 0" "$([ $rc = 0 ]; echo $?)" "rc $rc; $(tail -5 "$out/healthy.err")"
check "srun healthy: nothing flagged" "$(head_of healthy | grep -q '^survey: 0 of 12 links slow'; echo $?)" "$(head_of healthy)"
check "srun: the survey says it ran under Slurm, 4 ranks" "$(python3 -c "
import json,sys; d=json.load(open('$out/healthy/survey.json')); l=d['launch']
sys.exit(0 if l.get('launcher')=='slurm' and l.get('ranks')==4 and len(d['hosts'])==4 else 1)"; echo $?)" \
  "$(python3 -c "import json; print(json.load(open('$out/healthy/survey.json')).get('launch'))" 2>&1 | head -c 300)"

bash "$cluster" slow-link 1 2 2 50 >/dev/null 2>&1
survey slow
check "srun slow link: exit 3, named as the link" \
  "$([ $rc = 3 ] && head_of slow | grep -q '1 of 12 links slow: h1 eth2 <-> h2 eth2'; echo $?)" "rc $rc; $(head_of slow)"

rm -rf "$out"
echo "survey_srun: $fails failed"
[ $fails = 0 ]
