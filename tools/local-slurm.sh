#!/usr/bin/env bash
# A one-node Slurm on this machine (Debian's slurm-wlm and munge), for the survey's srun tests:
#   eval "$(tools/local-slurm.sh up)"   starts munged, slurmctld and slurmd; prints the
#                                       `export SLURM_CONF=...` that srun then needs
#   tools/local-slurm.sh down           stops them and removes the state
# The node claims CPUS (default 64) CPUs whatever it has (config_overrides) and shares them
# (OverSubscribe), so that N ranks of a namespace cluster fit on a 2-core machine. Ports 6917
# and 6918 (P2PSCOPE_SLURM_PORT, P2PSCOPE_SLURM_PORT+1). Root only.
set -euo pipefail
D=${P2PSCOPE_SLURM_DIR:-/run/p2pscope-slurm}
PORT=${P2PSCOPE_SLURM_PORT:-6917}
die() { echo "local-slurm: $*" >&2; exit 1; }
case "${1:-}" in
  up)
    [ "$(id -u)" = 0 ] || die "needs root"
    for b in munged slurmctld slurmd srun; do command -v $b >/dev/null || die "no $b (apt-get install slurm-wlm munge)"; done
    mkdir -p "$D/state" "$D/spool" /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge 2>/dev/null || true
    [ -s /etc/munge/munge.key ] || die "no /etc/munge/munge.key (the munge package makes it; or mungekey -c)"
    if ! munge -n >/dev/null 2>&1; then
      su -s /bin/sh munge -c /usr/sbin/munged >/dev/null 2>&1 || /usr/sbin/munged --force >/dev/null 2>&1 || die "munged did not start"
    fi
    h=$(hostname -s)
    cat > "$D/slurm.conf" <<CONF
ClusterName=p2pscope
SlurmctldHost=$h
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
NodeName=$h CPUs=${CPUS:-64} State=UNKNOWN
PartitionName=p2p Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:64
CONF
    export SLURM_CONF=$D/slurm.conf
    slurmctld -c >/dev/null 2>&1 || die "slurmctld did not start ($D/slurmctld.log)"
    slurmd >/dev/null 2>&1 || die "slurmd did not start ($D/slurmd.log)"
    for _ in $(seq 1 40); do
      sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)' && { echo "export SLURM_CONF=$D/slurm.conf"; exit 0; }
      sleep 0.25
    done
    die "the node did not come up in 10 s ($D/slurmctld.log, $D/slurmd.log)" ;;
  down)
    export SLURM_CONF=$D/slurm.conf
    [ -e "$D/slurm.conf" ] && scontrol shutdown >/dev/null 2>&1 || true
    pids=""
    for f in slurmd slurmctld; do [ -e "$D/$f.pid" ] && pids="$pids $(cat "$D/$f.pid")"; done
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    for _ in $(seq 1 40); do  # they write their state as they stop
      alive=0; for p in $pids; do kill -0 "$p" 2>/dev/null && alive=1; done
      [ $alive = 0 ] && break; sleep 0.25
    done
    for p in $pids; do kill -9 "$p" 2>/dev/null || true; done
    rm -rf "$D" ;;
  *) sed -n '2,9p' "$0" >&2; exit 2 ;;
esac
