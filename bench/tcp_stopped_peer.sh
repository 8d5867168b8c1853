#!/bin/bash
# How long the other side of a bench tcp session takes to notice a SIGSTOPped peer
# (issue 32 item 9): seconds from the SIGSTOP to the other side's exit. Loopback only.
# The receiver notices (big chunks, so the stop lands inside one): the server when the
# client stops (c2s), the client when the server stops (--reverse); the client's time
# includes the second it waits for a failed server's figures.
#
# Usage: bench/tcp_stopped_peer.sh client|server [TIMEOUT]   (P2PSCOPE=path, default build/p2pscope)
set -euo pipefail
P2PSCOPE=${P2PSCOPE:-build/p2pscope}
WHO=${1:?client or server}
T=${2:-3}
[ -x "$P2PSCOPE" ] || { echo "no p2pscope binary at $P2PSCOPE"; exit 2; }
tmp=$(mktemp -d)
sp= cp=
cleanup() { kill -9 $sp $cp 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
extra=(); [ "$WHO" = server ] && extra=(--reverse)
"$P2PSCOPE" bench tcp --server --bind 127.0.0.1 --port "$port" --sessions 1 --max-timeout 60 >/dev/null 2>"$tmp/s.err" &
sp=$!
sleep 0.5
"$P2PSCOPE" bench tcp --client 127.0.0.1 --port "$port" --size 1G --chunk 16M --iters 100000 --timeout "$T" \
  "${extra[@]}" >/dev/null 2>"$tmp/c.err" &
cp=$!
sleep 2
if [ "$WHO" = server ]; then stop=$sp other=$cp err=$tmp/c.err; else stop=$cp other=$sp err=$tmp/s.err; fi
t0=$(date +%s.%N)
kill -STOP "$stop"
rc=0; wait "$other" || rc=$?
t1=$(date +%s.%N)
echo "stopped the $WHO, --timeout $T: the other side exited ($rc) $(echo "$t1 - $t0" | bc) s after the SIGSTOP"
echo "  $(grep -m1 'session failed' "$err" | cut -c1-200)"
