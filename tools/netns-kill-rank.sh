#!/bin/bash
# netns-cluster.sh survey with P2PSCOPE_NETNS_WRAP=tools/netns-kill-rank.sh: the rank
# KILL_RANK (default 5) gets KILL_SIG (default 9: killed; STOP: hung) KILL_AFTER seconds in.
# A hung rank is killed KILL_HOLD seconds later (default 40), so that mpirun can end.
"$@" & pid=$!
if [ "${OMPI_COMM_WORLD_RANK:-${SLURM_PROCID:-}}" = "${KILL_RANK:-5}" ]; then
  ( sleep "${KILL_AFTER:-3}"; kill -"${KILL_SIG:-9}" $pid 2>/dev/null
    [ "${KILL_SIG:-9}" = STOP ] && { sleep "${KILL_HOLD:-40}"; kill -9 $pid 2>/dev/null; } ) &
fi
wait $pid
