#!/usr/bin/env bash
# A cluster of hosts made of network namespaces on one machine, for `p2pscope survey`
# and its tests (docs/survey.md). Needs root, iproute2 (ip, tc) and unshare.
#
#   netns-cluster.sh up N [RAILS] [RATE]   N hosts h0..hN-1, each with mgmt0 on the management
#                                          bridge and eth1..ethRAILS on one bridge per rail
#                                          (default 2 rails); every NIC sends at RATE (htb,
#                                          default 200mbit), as a real NIC has a line rate
#   netns-cluster.sh down                  removes every namespace, bridge and cgroup it made
#   netns-cluster.sh slow-link A B RAIL PCT [both]  A's traffic to B on that rail at PCT % (htb
#                                          class + u32 filter on B's address; "both": B's to A too)
#   netns-cluster.sh slow-nic H RAIL PCT   host H's NIC on that rail at PCT %, both directions
#   netns-cluster.sh nic-down H RAIL       the NIC's link down
#   netns-cluster.sh busy H PCT            host H's processes get PCT % of one CPU (a CPU quota:
#                                          a host whose CPUs are kept busy by other work)
#   netns-cluster.sh addr H R              host H's address on rail R (0: management)
#   netns-cluster.sh rank-exec CMD...      run CMD in the host of this launcher rank
#                                          (OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMI_RANK or RANK)
#   netns-cluster.sh exec H CMD...         run CMD in host H, with its host name
#   netns-cluster.sh survey ARGS...        `p2pscope survey ARGS` on every host under mpirun
#                                          (P2PSCOPE_NETNS_LAUNCHER=srun: under Slurm's srun,
#                                          =torchrun: under PyTorch's torchrun;
#                                          P2PSCOPE_NETNS_ENV="VAR ...": more variables to the ranks)
#                                          ($P2PSCOPE: the binary, default build/p2pscope;
#                                          P2PSCOPE_NETNS_RECOVERY=1: a rank that dies does
#                                          not end the others; P2PSCOPE_NETNS_PER_HOST=K: K
#                                          ranks a host, ranks hK..hK+K-1 on host h, as a
#                                          launcher starts one process per GPU: survey --per gpu)
#
# Addresses: 10.201.R.(H+1)/24 on rail R (R = 0 is management), a range these tests own.
# P2PSCOPE_NETNS_PREFIX (default p2s) names everything, so that two clusters can coexist.
set -euo pipefail
P=${P2PSCOPE_NETNS_PREFIX:-p2s}
NET=${P2PSCOPE_NETNS_NET:-10.201}
STATE=/run/${P}-netns-cluster
CG1=/sys/fs/cgroup/cpu
CG2=/sys/fs/cgroup/unified

die() { echo "netns-cluster: $*" >&2; exit 2; }
ns() { echo "${P}h$1"; }
addr() { echo "${NET}.$2.$(($1 + 1))"; }
nic() { if [ "$1" = 0 ]; then echo mgmt0; else echo "eth$1"; fi; }
int() { [[ "$2" =~ ^[0-9]+$ ]] || die "$1 '$2': expected a whole number"; }
rate_of() { cat "$STATE/rate"; }
# "200mbit" x PCT / 100, in kbit (tc takes kbit).
scaled() { local r; r=$(rate_of); r=${r%mbit}; echo "$(( r * 1000 * $1 / 100 ))kbit"; }

shape() {  # NS DEV RATE: htb root, default class 1:10 at RATE
  ip netns exec "$1" tc qdisc replace dev "$2" root handle 1: htb default 10
  ip netns exec "$1" tc class replace dev "$2" parent 1: classid 1:10 htb rate "$3" ceil "$3" burst 64k quantum 60000
}

up() {
  local n=$1 rails=${2:-2} rate=${3:-200mbit}
  int N "$n"; int RAILS "$rails"
  [ "$n" -ge 2 ] && [ "$n" -le 200 ] || die "N $n: expected 2..200 hosts"
  [[ "$rate" =~ ^[0-9]+mbit$ ]] || die "RATE '$rate': expected e.g. 200mbit"
  command -v ip >/dev/null && command -v tc >/dev/null || die "needs iproute2's ip and tc"
  [ -e "$STATE" ] && down
  mkdir -p "$STATE"
  echo "$n" > "$STATE/hosts"; echo "$rails" > "$STATE/rails"; echo "$rate" > "$STATE/rate"
  for r in $(seq 0 "$rails"); do
    ip link add "${P}br$r" type bridge
    ip link set "${P}br$r" up
  done
  for h in $(seq 0 $((n - 1))); do
    ip netns add "$(ns "$h")"
    ip netns exec "$(ns "$h")" ip link set lo up
    for r in $(seq 0 "$rails"); do
      local outer="${P}${h}r$r"
      ip link add "$outer" type veth peer name "$(nic "$r")" netns "$(ns "$h")"
      ip link set "$outer" mtu 9000 master "${P}br$r" up
      ip netns exec "$(ns "$h")" ip addr add "$(addr "$h" "$r")/24" dev "$(nic "$r")"
      ip netns exec "$(ns "$h")" ip link set "$(nic "$r")" mtu 9000 up
      if [ "$r" -gt 0 ]; then
        shape "$(ns "$h")" "$(nic "$r")" "$rate"          # what the host sends
        tc qdisc replace dev "$outer" root handle 1: htb default 10   # what it receives
        tc class replace dev "$outer" parent 1: classid 1:10 htb rate "$rate" ceil "$rate" burst 64k quantum 60000
      fi
    done
  done
  echo "netns-cluster: $n hosts x $rails rails at $rate each; management ${NET}.0.0/24, rail R ${NET}.R.0/24"
}

down() {
  for d in /run/netns/"${P}"h*; do [ -e "$d" ] && ip netns del "$(basename "$d")" 2>/dev/null || true; done
  for b in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep "^${P}br" || true); do
    ip link del "$b" 2>/dev/null || true
  done
  for g in "$CG1/${P}"h* "$CG2/${P}"h*; do [ -d "$g" ] && rmdir "$g" 2>/dev/null || true; done
  rm -rf "$STATE"
}

slow_link() {
  local a=$1 b=$2 r=$3 pct=$4 both=${5:-}
  int A "$a"; int B "$b"; int RAIL "$r"; int PCT "$pct"
  local i
  for pair in "$a $b" ${both:+"$b $a"}; do
    set -- $pair
    i=$(( $2 + 20 ))
    ip netns exec "$(ns "$1")" tc class replace dev "$(nic "$r")" parent 1: classid "1:$i" htb rate "$(scaled "$pct")" ceil "$(scaled "$pct")" burst 64k quantum 60000
    ip netns exec "$(ns "$1")" tc filter replace dev "$(nic "$r")" parent 1: protocol ip prio 1 u32 \
      match ip dst "$(addr "$2" "$r")/32" flowid "1:$i"
  done
}

slow_nic() {
  local h=$1 r=$2 pct=$3
  int H "$h"; int RAIL "$r"; int PCT "$pct"
  ip netns exec "$(ns "$h")" tc class replace dev "$(nic "$r")" parent 1: classid 1:10 htb rate "$(scaled "$pct")" ceil "$(scaled "$pct")" burst 64k quantum 60000
  tc class replace dev "${P}${h}r$r" parent 1: classid 1:10 htb rate "$(scaled "$pct")" ceil "$(scaled "$pct")" burst 64k quantum 60000
}

busy() {
  local h=$1 pct=$2
  int H "$h"; int PCT "$pct"
  if [ -d "$CG1" ] && [ -w "$CG1" ]; then
    mkdir -p "$CG1/$(ns "$h")"
    echo 100000 > "$CG1/$(ns "$h")/cpu.cfs_period_us"
    echo $(( 1000 * pct )) > "$CG1/$(ns "$h")/cpu.cfs_quota_us"
  elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    mkdir -p "/sys/fs/cgroup/$(ns "$h")"
    echo "$(( 1000 * pct )) 100000" > "/sys/fs/cgroup/$(ns "$h")/cpu.max"
  else
    die "no writable cgroup cpu controller here: a busy host cannot be made"
  fi
  echo "$h" >> "$STATE/busy"
}

enter() {  # H CMD...: the host's namespace, host name and CPU quota
  local h=$1; shift
  [ -e "/run/netns/$(ns "$h")" ] || die "no host $h (netns-cluster.sh up first)"
  for g in "$CG1/$(ns "$h")" "/sys/fs/cgroup/$(ns "$h")"; do
    [ -f "$g/cgroup.procs" ] && echo $$ > "$g/cgroup.procs"
  done
  # P2PSCOPE_NETNS_CPUS=LIST: every host's process on those CPUs. Hosts of one machine
  # share its cores, and a ping-pong between two processes on one core hands over at
  # once where one across cores waits for an idle core to wake (16 against 50 us in a
  # 2-core VM): on one core, every pair's latency is timed alike.
  # P2PSCOPE_NETNS_CPUS=each: host H on CPU H (mod the CPUs there are), a core of its own.
  local pin=() cpus=${P2PSCOPE_NETNS_CPUS:-}
  [ "$cpus" = each ] && cpus=$(( h % $(nproc) ))
  [ -n "$cpus" ] && pin=(taskset -c "$cpus")
  exec ip netns exec "$(ns "$h")" "${pin[@]}" unshare --uts sh -c 'hostname "$0"; exec "$@"' "h$h" "$@"
}

case "${1:-}" in
  up) shift; up "$@" ;;
  down) down ;;
  slow-link) shift; slow_link "$@" ;;
  slow-nic) shift; slow_nic "$@" ;;
  nic-down) shift; int H "$1"; int RAIL "$2"; ip netns exec "$(ns "$1")" ip link set "$(nic "$2")" down ;;
  busy) shift; busy "$@" ;;
  addr) shift; addr "$1" "$2" ;;
  exec) shift; h=$1; shift; enter "$h" "$@" ;;
  survey)
    shift
    [ -e "$STATE/hosts" ] || die "no cluster (netns-cluster.sh up N first)"
    per=${P2PSCOPE_NETNS_PER_HOST:-1}
    int P2PSCOPE_NETNS_PER_HOST "$per"
    n=$(( $(cat "$STATE/hosts") * per ))
    export P2PSCOPE_TOKEN=${P2PSCOPE_TOKEN:-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')}
    export P2PSCOPE_RENDEZVOUS="$(addr 0 0):${P2PSCOPE_NETNS_PORT:-29777}"
    export P2PSCOPE_NETNS_PREFIX=$P P2PSCOPE_NETNS_NET=$NET
    if [ "${P2PSCOPE_NETNS_LAUNCHER:-mpirun}" = srun ]; then
      # Slurm's srun (tools/local-slurm.sh starts one here): every rank from SLURM_PROCID.
      command -v srun >/dev/null || die "needs Slurm's srun (apt-get install slurm-wlm)"
      exec srun --ntasks "$n" --overlap --kill-on-bad-exit=0 --export=ALL \
        "$0" rank-exec ${P2PSCOPE_NETNS_WRAP:-} "${P2PSCOPE:-build/p2pscope}" survey "$@"
    fi
    if [ "${P2PSCOPE_NETNS_LAUNCHER:-mpirun}" = torchrun ]; then
      # PyTorch's torchrun (python3-torch): every rank from RANK; --no_python runs the
      # script itself. It exits 1 when any rank exits non-zero (3 included: "found").
      # --redirects 1 --tee 1: Debian's torch 1.13 under Python 3.11 cannot read its own
      # default "0" (Std.NONE is no longer iterated); ranks' stdout comes as "[default0]:...".
      command -v torchrun >/dev/null || die "needs torchrun (apt-get install python3-torch)"
      exec torchrun --standalone --nnodes 1 --nproc_per_node "$n" --redirects 1 --tee 1 --no_python \
        "$0" rank-exec ${P2PSCOPE_NETNS_WRAP:-} "${P2PSCOPE:-build/p2pscope}" survey "$@"
    fi
    command -v mpirun >/dev/null || die "needs Open MPI's mpirun (apt-get install openmpi-bin)"
    # Root may run ranks only when told. P2PSCOPE_NETNS_RECOVERY=1: --enable-recovery keeps
    # the job when a rank dies, but mpirun then exits 0 whatever the ranks' codes.
    exec mpirun --allow-run-as-root --oversubscribe --bind-to none ${P2PSCOPE_NETNS_RECOVERY:+--enable-recovery} -np "$n" \
      -x P2PSCOPE_TOKEN -x P2PSCOPE_RENDEZVOUS -x P2PSCOPE_NETNS_PREFIX -x P2PSCOPE_NETNS_NET -x P2PSCOPE_NETNS_PER_HOST=$per \
      ${P2PSCOPE_NETNS_CPUS:+-x P2PSCOPE_NETNS_CPUS} ${P2PSCOPE_NETNS_WRAP:+-x KILL_RANK -x KILL_AFTER -x KILL_SIG -x KILL_WHEN -x KILL_LINES} \
      $(for v in ${P2PSCOPE_NETNS_ENV:-}; do printf -- '-x %s ' "$v"; done) \
      "$0" rank-exec ${P2PSCOPE_NETNS_WRAP:-} "${P2PSCOPE:-build/p2pscope}" survey "$@" ;;
  rank-exec)
    shift
    rank=${OMPI_COMM_WORLD_RANK:-${SLURM_PROCID:-${PMI_RANK:-${RANK:-}}}}
    [ -n "$rank" ] || die "rank-exec: no launcher rank in the environment (OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMI_RANK, RANK)"
    enter "$(( rank / ${P2PSCOPE_NETNS_PER_HOST:-1} ))" "$@" ;;
  *) sed -n '2,30p' "$0" >&2; exit 2 ;;
esac
