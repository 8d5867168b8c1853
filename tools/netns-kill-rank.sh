#!/bin/bash
# netns-cluster.sh survey with P2PSCOPE_NETNS_WRAP=tools/netns-kill-rank.sh: the rank
# KILL_RANK (default 5) gets KILL_SIG (default 9: killed; STOP: hung) KILL_AFTER seconds in,
# or, with KILL_WHEN=FILE, once FILE (rank 0's rounds.jsonl) holds KILL_LINES lines
# (default 1): mid-survey however slowly it started, waited for 120 s at most.
# A hung rank is killed KILL_HOLD seconds later (default 40), so that mpirun can end.
"$@" & pid=$!
if [ "${OMPI_COMM_WORLD_RANK:-${SLURM_PROCID:-}}" = "${KILL_RANK:-5}" ]; then
  ( if [ -n "${KILL_WHEN:-}" ]; then
      for _ in $(seq 1200); do
        [ "$(cat "$KILL_WHEN" 2>/dev/null | wc -l)" -ge "${KILL_LINES:-1}" ] && break
        sleep 0.1
      done
    else
      sleep "${KILL_AFTER:-3}"
    fi
    kill -"${KILL_SIG:-9}" $pid 2>/dev/null
    [ "${KILL_SIG:-9}" = STOP ] && { sleep "${KILL_HOLD:-40}"; kill -9 $pid 2>/dev/null; } ) &
fi
wait $pid
