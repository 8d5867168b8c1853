#!/usr/bin/env bash
# `p2pscope survey` under a real mpirun on hosts made of network namespaces
# (tools/netns-cluster.sh): a healthy cluster flags nothing, a link slowed to 50 % is named
# as that link, --transport net runs the links over the reference plugin, --sizes writes
# link models that export reads (two dimensions with the device pairs), --per gpu runs a
# process per GPU, --expect sees a fleet below what it should carry, --rails crosses rails, a killed host is named and every other pair kept, a NIC a host lacks is
# a clear exit 2, and so is --transport nccl without a GPU. Exit 77 (ctest: skipped, with the reason) where namespaces, tc or
# mpirun are missing.  Usage: survey_cluster.sh P2PSCOPE SOURCE_DIR
set -uo pipefail
bin=$1 src=$2
skip() { echo "SKIPPED: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root to make network namespaces"
command -v mpirun >/dev/null || skip "no mpirun (apt-get install openmpi-bin)"
command -v tc >/dev/null || skip "no tc (apt-get install iproute2)"
probe=p2probe$$
ip netns add "$probe" 2>/dev/null || skip "cannot make a network namespace here"
ip netns del "$probe"
export P2PSCOPE_NETNS_PREFIX=t$$ P2PSCOPE_NETNS_NET=10.203 P2PSCOPE_NETNS_CPUS=0 P2PSCOPE=$bin
cluster=$src/tools/netns-cluster.sh
trap 'bash "$cluster" down' EXIT
bash "$cluster" up 4 2 200mbit >/dev/null 2>&1 || skip "netns-cluster up failed (veth, bridge or htb missing)"
out=$(mktemp -d)
fails=0
check() {  # NAME CONDITION-RESULT MESSAGE
  if [ "$2" = 0 ]; then echo "ok: $1"; else echo "FAILED: $1: $3"; fails=$((fails + 1)); fi
}
survey() {  # NAME ARGS...: runs, keeps stdout in $out/NAME.txt, rc in $rc
  local name=$1; shift
  bash "$cluster" survey --size 1M --round-timeout 20 --timeout 5 --out "$out/$name" "$@" >"$out/$name.txt" 2>"$out/$name.err"
  rc=$?
}
head_of() { sed -n 1p "$out/$1.txt"; }

survey healthy
check "healthy: exit 0" "$([ $rc = 0 ]; echo $?)" "rc $rc; $(tail -5 "$out/healthy.err")"
check "healthy: nothing flagged" "$(head_of healthy | grep -q '^survey: 0 of 12 links slow: every link within its class'; echo $?)" "$(head_of healthy)"
check "healthy: rounds.jsonl holds every session" "$([ "$(wc -l <"$out/healthy/rounds.jsonl")" -ge 28 ]; echo $?)" \
  "$(wc -l <"$out/healthy/rounds.jsonl") lines"

# Every link like its peers, but at half of what the user says it should carry (200mbit is
# 25 MB/s a direction): only --expect can see it.
survey expect --expect bw=50MB/s --no-latency --no-recheck
check "--expect above the fleet: exit 3 (found)" "$([ $rc = 3 ]; echo $?)" "rc $rc"
check "--expect above the fleet: the whole class named" \
  "$(head_of expect | grep -q "^survey: below --expect: the whole class '.*' at [3-5][0-9] % of the expected 50.00 MB/s"; echo $?)" "$(head_of expect)"
survey badexpect --expect bw=fast
check "--expect that does not parse: exit 2, named" \
  "$([ $rc = 2 ] && grep -q "'fast' is not a rate" "$out/badexpect.err"; echo $?)" "rc $rc; $(grep -v PMIX "$out/badexpect.err" | head -2)"

# A rail that crosses: each pair's lower-ranked host on eth1, the higher on eth2.
survey rails --rails 0:1 --no-latency --no-recheck --no-local --format json
check "--rails 0:1: one rail, eth1:eth2, every link measured" "$(python3 -c "
import json,sys; d=json.load(open('$out/rails/survey.json'))
bw=[r for r in d['records'] if r['step']=='bw']
sys.exit(0 if d['rails']==['eth1:eth2'] and len(bw)==6 and not any(r['failure'] for r in bw) else 1)"; echo $?)" \
  "rc $rc; $(head -c 300 "$out/rails.txt")"
survey badrails --rails 0:3
check "--rails past the hosts' NICs: exit 2, named" \
  "$([ $rc = 2 ] && grep -q -- '--rails 0:3 names NIC 3 but the hosts have 2 NICs' "$out/badrails.err"; echo $?)" "rc $rc"

# The links over an NCCL net plugin (p2pscope's reference plugin, told the rails' NICs):
# each rail's sessions on the plugin device that is its NIC, nothing flagged. Bandwidth
# only: the plugin's ping-pongs between namespace hosts on this machine's shared cores
# flagged one link's latency at 1.7x its class in 1 of 4 runs (13.9 against 8.0 us, the
# same again in the second pass), on links that are all alike: noise of the shared cores.
plugin=$(dirname "$bin")/lib/libnccl-net-p2pscope.so
P2PSCOPE_REFNET_IFS=eth1,eth2 P2PSCOPE_NETNS_ENV=P2PSCOPE_REFNET_IFS \
  survey net --transport net --plugin "$plugin" --no-recheck --no-local --no-latency
check "--transport net: exit 0, nothing flagged" \
  "$([ $rc = 0 ] && head_of net | grep -q '^survey: 0 of 12 links slow'; echo $?)" "rc $rc; $(head_of net); $(grep -v PMIX "$out/net.err" | tail -3)"
check "--transport net: every link over the plugin's device of its NIC" "$(python3 -c "
import json,sys; d=json.load(open('$out/net/survey.json'))
bw=[r for r in d['records'] if r['step']=='bw']
ok='p2pscope-refnet' in d['transport'] and len(bw)==12 and not any(r['failure'] for r in bw)
ok=ok and any('device 1 (eth2)' in n for n in d['notes'])
sys.exit(0 if ok else 1)"; echo $?)" "$(grep -o '"transport": "[^"]*"' "$out/net/survey.json" | head -1)"
P2PSCOPE_REFNET_IFS=eth1 P2PSCOPE_NETNS_ENV=P2PSCOPE_REFNET_IFS survey netmissing --transport net --plugin "$plugin"
check "--transport net, a rail's NIC not among the plugin's devices: exit 2, named" \
  "$([ $rc = 2 ] && grep -q 'has no device for NIC eth2 (its devices: eth1)' "$out/netmissing.err"; echo $?)" \
  "rc $rc; $(grep -v PMIX "$out/netmissing.err" | head -2)"

# NCCL's own send/recv needs a GPU on every host: where there is none (CI), a clear exit 2
# that says what to use instead, before any link runs. (On a GPU machine bench/survey_nccl.sh
# runs it for real.)
if ! nvidia-smi -L >/dev/null 2>&1; then
  survey nonccl --transport nccl
  check "--transport nccl without a GPU: exit 2, named, tcp or net offered" \
    "$([ $rc = 2 ] && grep -q -- '--transport nccl: .*--transport tcp or net' "$out/nonccl.err"; echo $?)" \
    "rc $rc; $(grep -v PMIX "$out/nonccl.err" | head -2)"
fi

# A campaign across hosts: each link ping-pongs each size; links.json holds its models and
# export reads the survey's folder as a campaign's (4 NPUs, one per host). A 1 MiB message
# cannot beat the 200mbit shaping (25 MB/s): its point must lie at or under it, +10 %.
survey sizes --sizes 1K,16K,256K,1M --no-recheck --no-local --no-latency
check "--sizes: exit 0, links.json with 24 links (6 pairs, 2 rails, both directions)" "$(python3 -c "
import json,sys; d=json.load(open('$out/sizes/links.json'))
ok=d['kind']=='p2pscope_link_models' and len(d['links'])==24 and d['source']['npu_hosts']==['h0','h1','h2','h3']
big=[p['bytes_per_s'] for l in d['links'] for p in l['points'] if p['size_bytes']==1048576]
ok=ok and len(big)==24 and all(15e6 < b < 27.5e6 for b in big)
sys.exit(0 if ok else 1)"; echo $?)" "rc $rc; $(grep -v PMIX "$out/sizes.err" | tail -2)"
"$bin" export "$out/sizes" --to astra-sim --backend "tcp eth2" >"$out/sizes.yml" 2>"$out/sizes-export.err"
check "--sizes: export --to astra-sim reads the survey (4 NPUs, rail eth2)" \
  "$(grep -q '^npus_count: \[ *4 *\]' "$out/sizes.yml" && grep -q 'backend tcp eth2' "$out/sizes.yml"; echo $?)" \
  "$(head -3 "$out/sizes-export.err"; grep -m2 'npus_count\|backend' "$out/sizes.yml")"

# With the local phase on, the device pairs inside the hosts (the host backend here: two
# buffers a host) are measured at the sizes too, and each rail is also a grid of two
# dimensions that export finds: 2 "devices" inside, 4 hosts across.
survey grid --sizes 1K,64K,1M --gpu-size 4M --no-recheck --no-latency
"$bin" export "$out/grid" --to astra-sim --backend "tcp eth1 + host" >"$out/grid.yml" 2>"$out/grid-export.err"
check "--sizes with device pairs: export writes two dimensions (2 devices x 4 hosts)" \
  "$([ $rc = 0 ] && grep -q '^npus_count: \[ *2, *4 *\]' "$out/grid.yml" && grep -q '^topology: \[ *Switch, *Switch *\]' "$out/grid.yml"; echo $?)" \
  "rc $rc; $(grep -v PMIX "$out/grid.err" | tail -2; head -3 "$out/grid-export.err"; grep -m2 'npus_count\|topology' "$out/grid.yml")"

bash "$cluster" slow-link 1 2 2 50 >/dev/null 2>&1
# One process per GPU (2 a host, as a launcher starts them): the ranks of a host make that
# host, rail r runs from its r-th rank; the slow link is found the same way.
P2PSCOPE_NETNS_PER_HOST=2 survey pergpu --per gpu --no-recheck --format json
check "--per gpu: 8 ranks make 4 hosts, 2 each" "$(python3 -c "
import json,sys; d=json.load(open('$out/pergpu/survey.json'))
sys.exit(0 if d['ranks']==[[0,1],[2,3],[4,5],[6,7]] and len(d['hosts'])==4 else 1)"; echo $?)" \
  "rc $rc; $(grep -v PMIX "$out/pergpu.err" | tail -3)"
check "--per gpu: exit 3, the slow link named" "$([ $rc = 3 ] && grep -q 'h1 eth2 <-> h2 eth2' "$out/pergpu.txt"; echo $?)" \
  "rc $rc; $(head -c 400 "$out/pergpu.txt")"
survey slow
check "slow link: exit 3 (found)" "$([ $rc = 3 ]; echo $?)" "rc $rc"
check "slow link: named as the link, h1 -> h2 the slower" \
  "$(head_of slow | grep -q '1 of 12 links slow: h1 eth2 <-> h2 eth2 at .*h1 -> h2.*the link or its switch port'; echo $?)" "$(head_of slow)"
bash "$cluster" down >/dev/null 2>&1; bash "$cluster" up 4 2 200mbit >/dev/null 2>&1

P2PSCOPE_NETNS_RECOVERY=1 KILL_RANK=3 KILL_WHEN=$out/killed/rounds.jsonl KILL_LINES=6 P2PSCOPE_NETNS_WRAP=$src/tools/netns-kill-rank.sh survey killed
check "killed host: named" "$(grep -q 'h3 dropped out: rank 3 stopped answering' "$out/killed.txt"; echo $?)" "$(head_of killed)"
check "killed host: the other pairs measured" \
  "$(python3 -c "
import json,sys; d=json.load(open('$out/killed/survey.json'))
ok=[r for r in d['records'] if r['step']=='bw' and not r['failure'] and 3 not in (r['server'],r['client'])]
sys.exit(0 if len(ok)>=6 else 1)"; echo $?)" "fewer than the 6 sessions of the 3 pairs without h3"

survey badnic --nics eth1,eth9
check "a NIC a host lacks: exit 2" "$([ $rc = 2 ]; echo $?)" "rc $rc"
check "a NIC a host lacks: names the host and the NIC" "$(grep -q 'on host h0: --nics eth9: unknown NIC' "$out/badnic.err"; echo $?)" \
  "$(grep -v PMIX "$out/badnic.err" | head -3)"

rm -rf "$out"
echo "survey_cluster: $fails failed"
[ $fails = 0 ]
