#!/bin/bash
# Issue 20: drive an NCCL net plugin the project did not write. Builds it from a
# source directory you already have (nothing is downloaded) in a temporary directory
# outside the repository, then runs p2pscope topo --net-plugin (by path and as NCCL
# would resolve it), bench net over loopback (host memory, verified) at each channel
# count next to bench tcp and the reference plugin at the same settings, and one
# server/client session over 127.0.0.1. Prints the figures (GB/s = 1e9 B/s).
#
# Usage: bench/third_party_plugin.sh SRC_DIR|PLUGIN.so
#   SRC_DIR: google/nccl-fastsocket's sources (net_fastsocket.cc, compat.h, utilities.h;
#            built with g++ against a small nccl_net.h written here, see below).
#   PLUGIN.so: an already built plugin, driven as is (NAME for NCCL_NET_PLUGIN taken
#            from libnccl-net-NAME.so).
# Env: P2PSCOPE (build/p2pscope), REFNET (build/lib/libnccl-net-p2pscope.so), CHANNELS
#   ("1 2"), SIZE (64M), CHUNK (1M), WINDOW (4), ITERS (5), PORT (18599), KEEP=1 keeps
#   the temporary directory, FLOW_PLACEMENT=1 leaves fastsocket's flow placement on.
set -euo pipefail
P2PSCOPE=$(realpath "${P2PSCOPE:-build/p2pscope}")
REFNET=${REFNET:-build/lib/libnccl-net-p2pscope.so}
CHANNELS=${CHANNELS:-1 2}
SIZE=${SIZE:-64M}; CHUNK=${CHUNK:-1M}; WINDOW=${WINDOW:-4}; ITERS=${ITERS:-5}; PORT=${PORT:-18599}
src=${1:?usage: bench/third_party_plugin.sh SRC_DIR|PLUGIN.so}
[ -x "$P2PSCOPE" ] || { echo "no p2pscope binary at $P2PSCOPE (build it: cmake --build build --target p2pscope)"; exit 2; }
[ -e "$src" ] || { echo "$src: no such file or directory"; exit 2; }
src=$(realpath "$src")
case "$src" in "$(git rev-parse --show-toplevel 2>/dev/null || echo /nonexistent)"/*)
  echo "$src is inside this repository: keep third-party sources outside it"; exit 2;; esac
tmp=$(mktemp -d /tmp/p2pscope-thirdparty.XXXXXX)
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lib" "$tmp/include" "$tmp/out"

# ---- build -----------------------------------------------------------------------
if [ -f "$src" ]; then
  so=$src
  name=$(basename "$so" .so); name=${name#libnccl-net-}; [ "$name" = libnccl-net ] && name=""
elif [ -f "$src/net_fastsocket.cc" ]; then
  # fastsocket includes "nccl_net.h" from an NCCL 2.13 source tree. This one declares
  # only the base types it needs (ncclResult_t, the logger, ncclNetProperties_v4_t);
  # NCCL_MINOR 14 makes the plugin's own compat.h declare its ncclNet_v2..v6 tables,
  # which it skips only inside NCCL 2.13 itself.
  cat > "$tmp/include/nccl_net.h" <<'EOF'
#ifndef P2PSCOPE_FASTSOCKET_NCCL_NET_H_
#define P2PSCOPE_FASTSOCKET_NCCL_NET_H_
#include <stddef.h>
#include <stdint.h>
#define NCCL_MAJOR 2
#define NCCL_MINOR 14
typedef enum { ncclSuccess = 0, ncclUnhandledCudaError = 1, ncclSystemError = 2, ncclInternalError = 3,
               ncclInvalidArgument = 4, ncclInvalidUsage = 5, ncclRemoteError = 6, ncclInProgress = 7,
               ncclNumResults = 8 } ncclResult_t;
#define NCCL_NET_HANDLE_MAXSIZE 128
#define NCCL_PTR_HOST 0x1
#define NCCL_PTR_CUDA 0x2
#define NCCL_PTR_DMABUF 0x4
typedef enum { NCCL_LOG_NONE = 0, NCCL_LOG_VERSION = 1, NCCL_LOG_WARN = 2, NCCL_LOG_INFO = 3,
               NCCL_LOG_ABORT = 4, NCCL_LOG_TRACE = 5 } ncclDebugLogLevel;
typedef enum { NCCL_INIT = 1, NCCL_COLL = 2, NCCL_P2P = 4, NCCL_SHM = 8, NCCL_NET = 16, NCCL_GRAPH = 32,
               NCCL_TUNING = 64, NCCL_ENV = 128, NCCL_ALLOC = 256, NCCL_CALL = 512, NCCL_ALL = ~0 } ncclDebugLogSubSys;
typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                                  const char* fmt, ...);
typedef struct { char* name; char* pciPath; uint64_t guid; int ptrSupport; int speed; int port;
                 int maxComms; } ncclNetProperties_v4_t;
#endif
EOF
  srcs=("$src/net_fastsocket.cc")
  # Older trees keep the v2/v3 tables in compat.cc and the logger in utilities.cc.
  grep -q 'ncclNetPlugin_v2' "$src/net_fastsocket.cc" || { [ -f "$src/compat.cc" ] && srcs+=("$src/compat.cc"); }
  grep -q 'static ncclDebugLogger_t' "$src/utilities.h" 2>/dev/null || { [ -f "$src/utilities.cc" ] && srcs+=("$src/utilities.cc"); }
  name=fastsocket
  so=$tmp/lib/libnccl-net-$name.so
  echo "## build: g++ -std=c++17 -O2 -fPIC -shared -I$tmp/include -I$src ${srcs[*]##*/} -o libnccl-net-$name.so -lpthread"
  g++ -std=c++17 -O2 -fPIC -shared -Wno-deprecated-declarations -I"$tmp/include" -I"$src" "${srcs[@]}" \
    -o "$so" -lpthread
else
  echo "$src: no build recipe for these sources (known: google/nccl-fastsocket's net_fastsocket.cc);"
  echo "build the plugin with its own build system and pass the .so instead"
  exit 2
fi
[ -f "$so" ] && [ "$so" != "$tmp/lib/$(basename "$so")" ] && cp "$so" "$tmp/lib/"
echo "## exported tables: $(nm -D "$so" | awk '/ncclNetPlugin_v[0-9]+$/ {print $3}' | sort -V | paste -sd' ')"

# ---- environment for a socket plugin over loopback -------------------------------
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} P2PSCOPE_REFNET_IFS=${P2PSCOPE_REFNET_IFS:-lo}
if [ "$name" = fastsocket ] && [ "${FLOW_PLACEMENT:-0}" != 1 ]; then
  # Flow placement (its default) re-dials each data socket until the kernel's
  # SO_INCOMING_CPU matches a queue: on a 2-CPU loopback host that is 1000 dials per
  # socket and ~16k TIME_WAIT sockets per run. Off, it takes the socket/thread counts.
  export NCCL_FLOW_PLACEMENT_ENABLE=0
fi

# ---- topo ------------------------------------------------------------------------
echo "## p2pscope topo --net-plugin $so"
"$P2PSCOPE" topo --net-plugin "$so"
if [ -n "$name" ]; then
  echo "## LD_LIBRARY_PATH=$tmp/lib NCCL_NET_PLUGIN=$name p2pscope topo --net-plugin (resolved as NCCL would)"
  LD_LIBRARY_PATH=$tmp/lib NCCL_NET_PLUGIN=$name "$P2PSCOPE" topo --net-plugin | grep -E "^net plugin|^NCCL would load"
fi

# ---- bench net vs bench tcp vs the reference plugin, loopback ---------------------
common=(--loopback --size "$SIZE" --chunk "$CHUNK" --window "$WINDOW" --iters "$ITERS" --verify --format json)
summary() {  # JSON -> "rx GB/s, verified bytes" or the failure
  python3 - "$1" <<'EOF'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print("no JSON (%s)" % e); sys.exit()
if j.get("failure"):
    print("FAILED: " + j["failure"].splitlines()[0]); sys.exit()
s = j["server"]
rounds = ", ".join("%.3f" % (x / 1e9) for x in s["round_rx_bytes_per_s"])
print("%.3f | %d MiB | %s" % (s["rx_bytes_per_s"] / 1e9, s["verified_bytes"] >> 20, rounds))
EOF
}
run() {  # label, file, command...
  local label=$1 out=$2; shift 2
  timeout 300 "$@" > "$out" 2> "$out.err" || true
  echo "| $label | $(summary "$out") |"
}
socks() {  # fastsocket: data sockets and helper threads per comm
  if [ "$name" = fastsocket ]; then echo "NCCL_SOCKET_NTHREADS=$1 NCCL_NSOCKS_PERTHREAD=1"; fi
}
echo
echo "## bench net / bench tcp, loopback, host memory, size $SIZE, chunk $CHUNK, window $WINDOW, $ITERS rounds, verified"
echo "| run | server rx GB/s (median) | verified | rounds GB/s |"
echo "|---|---:|---:|---|"
for c in $CHANNELS; do
  run "bench tcp, $c channel(s)" "$tmp/out/tcp-$c.json" "$P2PSCOPE" bench tcp "${common[@]}" --channels "$c"
  [ -f "$REFNET" ] && run "bench net, reference plugin, $c channel(s)" "$tmp/out/ref-$c.json" \
    "$P2PSCOPE" bench net --plugin "$REFNET" "${common[@]}" --channels "$c"
  for t in 1 4; do
    [ "$name" = fastsocket ] || [ "$t" = 1 ] || continue
    run "bench net, $(basename "$so") $(socks "$t"), $c channel(s)" "$tmp/out/tp-$c-$t.json" \
      env $(socks "$t") "$P2PSCOPE" bench net --plugin "$so" "${common[@]}" --channels "$c"
  done
done
for f in "$tmp"/out/tp-*.json.err; do grep -h "^warning\|p2pscope:" "$f" 2>/dev/null | sed "s|^|  ${f##*/}: |" || true; done

# ---- server and client as two processes over 127.0.0.1 ----------------------------
echo
c=${CHANNELS##* }
echo "## server/client over 127.0.0.1: bench net --plugin $(basename "$so") --server --bind 127.0.0.1 --port $PORT --sessions 1;"
echo "##   bench net --plugin $(basename "$so") --client 127.0.0.1 --port $PORT --channels $c --size $SIZE --iters $ITERS --verify"
"$P2PSCOPE" bench net --plugin "$so" --server --bind 127.0.0.1 --port "$PORT" --sessions 1 --accept-timeout 30 \
  > "$tmp/out/server.txt" 2>&1 &
srv=$!
for _ in $(seq 50); do ss -ltn 2>/dev/null | grep -q ":$PORT " && break; sleep 0.1; done
timeout 120 "$P2PSCOPE" bench net --plugin "$so" --client 127.0.0.1 --port "$PORT" --channels "$c" --size "$SIZE" \
  --chunk "$CHUNK" --window "$WINDOW" --iters "$ITERS" --verify > "$tmp/out/client.txt" 2>&1 || true
wait "$srv" || true
sed -n '/^Total/,/^$/p' "$tmp/out/client.txt"
grep -h "p2pscope:" "$tmp/out/client.txt" "$tmp/out/server.txt" || true
[ "${KEEP:-0}" = 1 ] && echo "## outputs kept in $tmp"
exit 0
