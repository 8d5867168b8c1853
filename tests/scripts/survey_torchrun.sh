#!/usr/bin/env bash
# `p2pscope survey` under PyTorch's torchrun (python3-torch; --standalone, one node) on
# hosts made of network namespaces: the ranks meet from RANK/WORLD_SIZE, a healthy cluster
# flags nothing and the survey says it ran under torchrun, a link slowed to 50 % is named.
# Exit 77 (skipped, with the reason) where torchrun or namespaces are missing.
# Usage: survey_torchrun.sh P2PSCOPE SOURCE_DIR
set -uo pipefail
bin=$1 src=$2
skip() { echo "SKIPPED: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root to make network namespaces"
command -v torchrun >/dev/null || skip "no torchrun (apt-get install python3-torch)"
command -v tc >/dev/null || skip "no tc (apt-get install iproute2)"
probe=p2tprobe$$
ip netns add "$probe" 2>/dev/null || skip "cannot make a network namespace here"
ip netns del "$probe"
export P2PSCOPE_NETNS_PREFIX=r$$ P2PSCOPE_NETNS_NET=10.206 P2PSCOPE_NETNS_CPUS=0 P2PSCOPE=$bin P2PSCOPE_NETNS_LAUNCHER=torchrun
cluster=$src/tools/netns-cluster.sh
trap 'bash "$cluster" down >/dev/null 2>&1' EXIT
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
head_of() { sed -n 's/^\[default0\]://p' "$out/$1.txt" | sed -n 1p; }  # rank 0's stdout, as torchrun tees it

survey healthy
check "torchrun healthy: exit 0" "$([ $rc = 0 ]; echo $?)" "rc $rc; $(tail -5 "$out/healthy.err")"
check "torchrun healthy: nothing flagged" "$(head_of healthy | grep -q '^survey: 0 of 12 links slow'; echo $?)" "$(head_of healthy)"
check "torchrun: the survey says it ran under torchrun, 4 ranks" "$(python3 -c "
import json,sys; d=json.load(open('$out/healthy/survey.json')); l=d['launch']
sys.exit(0 if l.get('launcher')=='torchrun' and l.get('ranks')==4 and len(d['hosts'])==4 else 1)"; echo $?)" \
  "$(python3 -c "import json; print(json.load(open('$out/healthy/survey.json')).get('launch'))" 2>&1 | head -c 300)"

bash "$cluster" slow-link 1 2 2 50 >/dev/null 2>&1
survey slow
# torchrun exits 1 when a rank exits non-zero: rank 0's 3 ("found") shows in its log.
check "torchrun slow link: named as the link, rank 0 exit 3" \
  "$(head_of slow | grep -q '1 of 12 links slow: h1 eth2 <-> h2 eth2' && grep -q 'exitcode: 3' "$out/slow.err"; echo $?)" \
  "rc $rc; $(head_of slow); $(grep -m2 exitcode "$out/slow.err")"

rm -rf "$out"
echo "survey_torchrun: $fails failed"
[ $fails = 0 ]
