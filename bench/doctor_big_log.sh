#!/usr/bin/env bash
# doctor on a 200 MB NCCL_DEBUG=INFO log: wall time and peak RSS (issue 23: <= 10 s,
# <= 100 MB on the 2-core development machine). The log is the four nccl-tests logs of
# tests/fixtures/nccl-tests (real INFO lines, nccl-tests tables) repeated to SIZE_MB.
#   bench/doctor_big_log.sh [build/p2pscope] [SIZE_MB]
set -eu
bin=${1:-build/p2pscope}
size_mb=${2:-200}
here=$(cd "$(dirname "$0")/.." && pwd)
log=$(mktemp /tmp/p2pscope-big-XXXXXX.log)
trap 'rm -f "$log"' EXIT
src=$(cat "$here"/tests/fixtures/nccl-tests/{p2p,shm,socket-eth0,socket-lo}.log)
chunk=$(mktemp); printf '%s\n' "$src" >"$chunk"
while [ "$(stat -c %s "$log")" -lt $((size_mb * 1000 * 1000)) ]; do
  cat "$chunk" "$chunk" "$chunk" "$chunk" "$chunk" "$chunk" "$chunk" "$chunk" >>"$log"
done
rm -f "$chunk"
echo "log: $(stat -c %s "$log") bytes, $(wc -l <"$log") lines"
/usr/bin/time -v "$bin" doctor --root "$here/tests/fixtures/fsroot/h200x2" --nccl-log "$log" --format json >/dev/null 2>/tmp/p2pscope-big-time.txt || true
grep -E "Elapsed|Maximum resident|User time|System time|Exit status" /tmp/p2pscope-big-time.txt
