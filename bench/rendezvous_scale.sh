#!/usr/bin/env bash
# The survey's start at fleet scale: N ranks (threads of one process, or with HOW=processes
# real processes, each with its own socket over 127.0.0.1) meet at one rendezvous with the
# shared secret and make one allgather of a host description.
# Usage: [HOW=threads|processes] bench/rendezvous_scale.sh [N...] (default 64 256 1024)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cmake --build "$here/build" --target bench_rendezvous >/dev/null
for n in "${@:-64 256 1024}"; do
  for n1 in $n; do "$here/build/bench_rendezvous" "$n1" $((29900 + n1 % 97)) "${HOW:-threads}"; done
done
