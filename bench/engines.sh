#!/bin/bash
# Issue 34: both transfer engines and iperf3 at 1..32 channels in one call, over
# 127.0.0.1, host memory: bench tcp, bench net through the reference plugin, and C
# iperf3 processes (client and server each). Runs alternate (tcp, net, iperf3) so the
# machine's drift hits all three; each cell is the median of REPS runs, and net / tcp is
# also given paired (the median of each repetition's own ratio). Then, per
# engine and channel count, where the time went: per-thread CPU (busy = CPU / wall),
# run-queue wait, syscalls and context switches per chunk (the engines' own counters),
# and whether the worker threads outnumbered the CPUs.
#
# Usage: bench/engines.sh OUTDIR
#   P2PSCOPE  the binary (default: the first of build/p2pscope, .device/p2pscope under the
#             repository root, then p2pscope on PATH)
#   PLUGIN    the reference plugin (REFNET is the same; default: libnccl-net-p2pscope.so
#             in build/lib/, .device/, or next to the binary)
#   IPERF3    iperf3 binary (default: iperf3 on PATH; absent: that column says so)
#   FASTSOCKET  a built Fast Socket plugin .so (bench/third_party_plugin.sh): driven at
#             4 channels beside the reference plugin (no goal; not ours)
#   CHANNELS (1,2,4,8,16,32)  REPS (3)  CHUNK (1M)  WINDOW (4)  ITERS (5)  SECS (iperf3 -t, 2)
#             iperf3 is given two ways: the sum of the clients' own averages (each over its own
#             SECS; the clients start one after another) and, with SECS >= 2, lo's byte counter
#             over a window where every client runs (what they moved together)
#   SIZE      bytes per round; default 1G up to 4 channels, 256M x channels above (a
#             round of 1 GiB at 32 channels lasts ~10 ms, shorter than the set-up noise)
#   MONITOR=1 adds --monitor to every p2pscope run (its summary lands in the JSON)
#   EXTRA_CHUNK (unset: off), e.g. 128K: a second table at EXTRA_CHANNELS (16,32) that swaps
#             the buffer sizes: bench tcp with --chunk EXTRA_CHUNK (iperf3's 128 KiB buffer)
#             and iperf3 with -l EXTRA_IPERF_LEN (CHUNK: bench tcp's chunk), REPS each, beside
#             the first table's figures at the same channel counts: one call tells whether
#             the gap between them is the size of the buffer sent from (cache vs memory)
#   WHOLE_SLOTS=1 adds bench tcp --slot-memory 0 (a whole chunk of memory behind each ring
#             slot, every byte from and into its own memory: the default before the fold) at
#             WHOLE_CHANNELS (16,32), in the same alternation as the main table, and a table
#             of it beside the default (each socket's ring on 128 KiB, reused, as iperf3's buffer)
#   BUDGET_S (330): no run starts after BUDGET_S seconds and none outlives it by more than
#             RUN_S (60, each run's own limit); skipped runs are said (a device call is bounded)
# A bench net run that fails (no figure) stops the bench net column, said, so a broken
# plugin path costs one run's timeout, not eighteen.
# Writes the markdown tables to stdout and every run's JSON / iperf3 output under OUTDIR.
# On a 64-core machine: about 3-4 minutes with the defaults.
set -uo pipefail
OUT=${1:?usage: bench/engines.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
first() { local f; for f in "$@"; do [ -e "$f" ] && { echo "$f"; return; }; done; echo "$1"; }
P2PSCOPE=${P2PSCOPE:-$(first "$ROOT/build/p2pscope" "$ROOT/.device/p2pscope" "$(command -v p2pscope 2>/dev/null || echo "$ROOT/build/p2pscope")")}
REFNET=${PLUGIN:-${REFNET:-$(first "$ROOT/build/lib/libnccl-net-p2pscope.so" "$ROOT/.device/libnccl-net-p2pscope.so" \
                                   "$(dirname "$P2PSCOPE")/libnccl-net-p2pscope.so" "$(dirname "$P2PSCOPE")/lib/libnccl-net-p2pscope.so")}}
# iperf3: IPERF3, else PATH, else what a device call carries in .device/ (a binary, or a
# folder with the binary and its libraries, as bench/one_call.sh copies it).
if [ -z "${IPERF3:-}" ]; then
  if command -v iperf3 >/dev/null 2>&1; then IPERF3=iperf3
  elif [ -x "$ROOT/.device/iperf3/iperf3" ]; then
    IPERF3=$ROOT/.device/iperf3/iperf3; export LD_LIBRARY_PATH=$ROOT/.device/iperf3${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  elif [ -f "$ROOT/.device/iperf3" ]; then  # its libiperf.so.0 beside it, if carried
    IPERF3=$ROOT/.device/iperf3; export LD_LIBRARY_PATH=$ROOT/.device${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  else IPERF3=iperf3; fi
fi
CHANNELS=${CHANNELS:-1,2,4,8,16,32}
REPS=${REPS:-3}; CHUNK=${CHUNK:-1M}; WINDOW=${WINDOW:-4}; ITERS=${ITERS:-5}; SECS=${SECS:-2}
BASE=${PORT:-$((21000 + RANDOM % 20000))}
[ -x "$P2PSCOPE" ] || { echo "no p2pscope binary at $P2PSCOPE (P2PSCOPE=...)"; exit 2; }
have_net=1; [ -f "$REFNET" ] || { echo "note: no reference plugin at $REFNET (PLUGIN=...): bench net skipped"; have_net=0; }
have_iperf=1
if ! command -v "$IPERF3" >/dev/null 2>&1; then
  echo "note: no iperf3 ($IPERF3; IPERF3=...): the iperf3 column is empty"; have_iperf=0
fi
mkdir -p "$OUT" || exit 2
export P2PSCOPE_REFNET_IFS=${P2PSCOPE_REFNET_IFS:-lo} NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
export NCCL_FLOW_PLACEMENT_ENABLE=${NCCL_FLOW_PLACEMENT_ENABLE:-0}  # fastsocket on loopback
start=$(date +%s)
BUDGET_S=${BUDGET_S:-330}; RUN_S=${RUN_S:-60}
# Seconds a run started now may take: RUN_S; 0 once the budget is spent (not started).
limit() {
  local left=$(( BUDGET_S - ($(date +%s) - start) ))
  if [ "$left" -le 0 ]; then echo 0; else echo "$RUN_S"; fi
}
skipped=0

size_for() { if [ -n "${SIZE:-}" ]; then echo "$SIZE"; elif [ "$1" -le 4 ]; then echo 1G; else echo "$(($1 * 256))M"; fi; }
median() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) print "n/a"; else print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "n/a" || b == "n/a" || b == 0) print "n/a"; else printf "%.2fx", a/b}'; }
rate() {  # JSON file -> server receive GB/s (median over rounds), or nothing when the run failed
  python3 -c 'import json,sys
try: print("%.3f" % (json.load(open(sys.argv[1]))["server"]["rx_bytes_per_s"]/1e9))
except Exception: pass' "$1"
}

# The median over repetitions of net / tcp of the same repetition (the two run one after
# the other): a process is fast or slow as a whole on the 64-core hosts (up to a third
# apart, threads pinned or not), and pairing the runs takes that spread out of the ratio
# the way a ratio of two medians does not.
paired() {
  python3 - "$OUT" "$1" "$REPS" <<'PY'
import json, statistics, sys
out, c, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
def rate(tag, r):
    try: return json.load(open(f"{out}/{tag}-{c}-{r}.json"))["server"]["rx_bytes_per_s"]
    except Exception: return None
xs = [n / t for r in range(1, reps + 1) for t, n in [(rate("tcp", r), rate("net", r))] if t and n]
print("%.2fx" % statistics.median(xs) if xs else "n/a")
PY
}

p2p() {  # engine C rep [tag [plugin [chunk]]]: one bench tcp / bench net --loopback run, its GB/s on stdout
  local engine=$1 c=$2 r=$3 tag=${4:-$1} chunk=${6:-$CHUNK}
  local f="$OUT/$tag-$c-$r.json"
  local args=(--loopback --channels "$c" --size "$(size_for "$c")" --chunk "$chunk" --window "$WINDOW"
              --iters "$ITERS" --format json ${P2P_EXTRA:-})
  [ "${MONITOR:-0}" = 1 ] && args+=(--monitor --monitor-dir "$OUT/mon-$tag-$c-$r")
  local t; t=$(limit)
  if [ "$t" = 0 ]; then skipped=$((skipped + 1)); return 3; fi
  if [ "$engine" = tcp ]; then
    timeout -k 5 "$t" "$P2PSCOPE" bench tcp "${args[@]}" > "$f" 2> "$OUT/$tag-$c-$r.err"
  else
    timeout -k 5 "$t" "$P2PSCOPE" bench net --plugin "$5" "${args[@]}" > "$f" 2> "$OUT/$tag-$c-$r.err"
  fi
  rate "$f"
}

# Until C servers listen on ports BASE.. (at most 3 s): a client started before its server
# listens is refused, and a fixed 0.3 s lost one client of 16 on a busy 64-core host.
wait_listening() {
  local base=$1 c=$2 i k n t
  for i in $(seq 30); do
    t=$(cat /proc/net/tcp 2>/dev/null) || return 0
    n=0
    for k in $(seq 0 $((c - 1))); do
      [[ $t == *":$(printf '%04X' $((base + k))) 00000000:0000 0A"* ]] && n=$((n + 1))
    done
    [ "$n" -ge "$c" ] && return 0
    sleep 0.1
  done
  return 0
}

iperf_procs() {  # C rep [tag [client args...]]: C iperf3 servers and C clients at once; the summed GB/s
  local c=$1 r=$2 tag=${3:-iperf} i spids=()
  shift; shift; [ $# -gt 0 ] && shift
  if [ "$(limit)" = 0 ]; then skipped=$((skipped + 1)); return 3; fi
  for i in $(seq 0 $((c - 1))); do
    timeout $((SECS + 15)) "$IPERF3" -s -1 -p $((BASE + i)) -B 127.0.0.1 >/dev/null 2>&1 & spids+=($!)
  done
  wait_listening "$BASE" "$c"
  for i in $(seq 0 $((c - 1))); do
    timeout $((SECS + 15)) "$IPERF3" -c 127.0.0.1 -p $((BASE + i)) -t "$SECS" "$@" -J > "$OUT/$tag-$c-$r-$i.json" 2>/dev/null &
  done
  # The clients start one after another and each averages over its own SECS, so the sum
  # of their figures can exceed what they moved together. lo's byte counter over a window
  # where all of them run (0.5 s after the last started, until 0.3 s before the first
  # ends) gives that aggregate (each packet counted once; headers are ~0.1 % at lo's 64 KiB).
  if [ "$tag" = iperf ] && [ "$SECS" -ge 2 ] && [ -r /sys/class/net/lo/statistics/rx_bytes ]; then
    sleep 0.5
    local b0 t0 b1 t1
    b0=$(cat /sys/class/net/lo/statistics/rx_bytes); t0=$(date +%s%N)
    sleep "$(awk -v s="$SECS" 'BEGIN { print s - 0.8 }')"
    b1=$(cat /sys/class/net/lo/statistics/rx_bytes); t1=$(date +%s%N)
    awk -v b="$((b1 - b0))" -v t="$((t1 - t0))" 'BEGIN { printf "%.3f\n", b / t }' >> "$OUT/il-$c"
  fi
  wait
  BASE=$((BASE + c + 1))
  python3 - "$OUT" "$c" "$r" "$tag" <<'PY'
import json, sys
out, c, r, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
try:
    print("%.3f" % sum(json.load(open(f"{out}/{tag}-{c}-{r}-{i}.json"))["end"]["sum_received"]["bits_per_second"] / 8e9
                       for i in range(c)))
except Exception:
    pass
PY
}

echo "# engines: $(hostname), $(nproc) CPUs, $(date -u +%FT%TZ)"
echo
echo "p2pscope: $("$P2PSCOPE" --version 2>/dev/null | head -1); iperf3: $([ $have_iperf = 1 ] && "$IPERF3" --version 2>/dev/null | head -1 || echo absent)"
echo "loopback, host memory, chunk $CHUNK, window $WINDOW, $ITERS timed rounds (+1 warm-up), $REPS repetitions, medians; GB/s = 1e9 B/s"
echo
echo "| channels | size/round | bench tcp GB/s | bench net (ref plugin) GB/s | net / tcp | net / tcp, paired | $( [ $have_iperf = 1 ] && echo "C iperf3 procs GB/s (sum of clients)" || echo "iperf3 (absent)") | tcp / iperf3 | iperf3 GB/s, lo while all run | tcp / iperf3 (lo) | runs tcp / net / iperf3 / iperf3 lo |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
notes=()
for c in ${CHANNELS//,/ }; do
  if [ "$(limit)" = 0 ]; then
    echo "| $c | skipped: the script's time budget (BUDGET_S=$BUDGET_S s) was spent | | | | | | | | | |"
    continue
  fi
  : > "$OUT/t-$c"; : > "$OUT/n-$c"; : > "$OUT/i-$c"; : > "$OUT/il-$c"; : > "$OUT/tw-$c"
  for r in $(seq "$REPS"); do
    p2p tcp "$c" "$r" >> "$OUT/t-$c"
    if [ "${WHOLE_SLOTS:-0}" = 1 ] && [[ ",${WHOLE_CHANNELS:-16,32}," == *",$c,"* ]]; then
      P2P_EXTRA="${P2P_EXTRA:-} --slot-memory 0" p2p tcp "$c" "$r" tcpw >> "$OUT/tw-$c"
    fi
    if [ $have_net = 1 ]; then
      x=$(p2p net "$c" "$r" net "$REFNET"); rc=$?
      if [ -n "$x" ]; then echo "$x" >> "$OUT/n-$c"; elif [ $rc = 3 ]; then skipped=$((skipped + 1)); else
        have_net=0; notes+=("bench net failed at $c channels (rep $r): $(head -c 300 "$OUT/net-$c-$r.err" | tr '\n' ' '); later bench net runs skipped")
      fi
    fi
    [ $have_iperf = 1 ] && iperf_procs "$c" "$r" >> "$OUT/i-$c"
  done
  t=$(median < "$OUT/t-$c"); n=$(median < "$OUT/n-$c"); i=$(median < "$OUT/i-$c"); il=$(median < "$OUT/il-$c")
  echo "| $c | $(size_for "$c") | $t | $n | $(ratio "$n" "$t") | $(paired "$c") | $i | $(ratio "$t" "$i") | $il | $(ratio "$t" "$il") | $(paste -sd, "$OUT/t-$c") / $(paste -sd, "$OUT/n-$c") / $(paste -sd, "$OUT/i-$c") / $(paste -sd, "$OUT/il-$c") |"
done

table_head() { echo; echo "$1"; echo; echo "$2"; echo "$3"; }  # TITLE HEADER ALIGNMENT: a table after the first

if [ "${WHOLE_SLOTS:-0}" = 1 ]; then
  table_head "Ring slots on whole chunks of memory (WHOLE_SLOTS=1): bench tcp --slot-memory 0 beside the default (--slot-memory 128K), same alternation:" \
    "| channels | bench tcp GB/s (128K per socket) | bench tcp --slot-memory 0 GB/s | default / whole | iperf3 GB/s | whole / iperf3 | runs --slot-memory 0 |" \
    "|---:|---:|---:|---:|---:|---:|---|"
  WC=${WHOLE_CHANNELS:-16,32}
  for cc in ${WC//,/ }; do
    [ -s "$OUT/tw-$cc" ] || continue
    t=$(median < "$OUT/t-$cc"); w=$(median < "$OUT/tw-$cc"); i=$( [ -s "$OUT/i-$cc" ] && median < "$OUT/i-$cc" || echo n/a)
    echo "| $cc | $t | $w | $(ratio "$t" "$w") | $i | $(ratio "$w" "$i") | $(paste -sd, "$OUT/tw-$cc") |"
  done
fi

if [ -n "${EXTRA_CHUNK:-}" ]; then
  # The buffer sizes swapped: does bench tcp reach iperf3 from a cache-sized chunk, and
  # iperf3 fall to bench tcp from a chunk-sized buffer? (issue 34's 32-channel ceiling)
  ILEN=${EXTRA_IPERF_LEN:-$CHUNK}
  table_head "Buffer sizes swapped (EXTRA_CHUNK=$EXTRA_CHUNK): bench tcp --chunk $EXTRA_CHUNK, iperf3 -l $ILEN, beside the table above (chunk $CHUNK, iperf3's default 128K):" \
    "| channels | bench tcp --chunk $CHUNK GB/s | bench tcp --chunk $EXTRA_CHUNK GB/s | iperf3 128K (default) GB/s | iperf3 -l $ILEN GB/s | tcp $EXTRA_CHUNK / iperf3 128K | tcp $CHUNK / iperf3 -l $ILEN | runs tcp $EXTRA_CHUNK / iperf3 -l $ILEN |" \
    "|---:|---:|---:|---:|---:|---:|---:|---|"
  EXTRA_CHANNELS=${EXTRA_CHANNELS:-16,32}
  for c in ${EXTRA_CHANNELS//,/ }; do
    if [ "$(limit)" = 0 ]; then
      echo "| $c | skipped: the script's time budget (BUDGET_S=$BUDGET_S s) was spent | | | | | | |"
      continue
    fi
    : > "$OUT/tx-$c"; : > "$OUT/ix-$c"
    for r in $(seq "$REPS"); do
      p2p tcp "$c" "$r" tcpx "" "$EXTRA_CHUNK" >> "$OUT/tx-$c"
      [ $have_iperf = 1 ] && iperf_procs "$c" "$r" iperfx -l "$ILEN" >> "$OUT/ix-$c"
    done
    t1=$( [ -s "$OUT/t-$c" ] && median < "$OUT/t-$c" || echo n/a); i1=$( [ -s "$OUT/i-$c" ] && median < "$OUT/i-$c" || echo n/a)
    tx=$(median < "$OUT/tx-$c"); ix=$(median < "$OUT/ix-$c")
    echo "| $c | $t1 | $tx | $i1 | $ix | $(ratio "$tx" "$i1") | $(ratio "$t1" "$ix") | $(paste -sd, "$OUT/tx-$c") / $(paste -sd, "$OUT/ix-$c") |"
  done
fi

[ "$skipped" -gt 0 ] && notes+=("$skipped runs not started: the time budget (BUDGET_S=$BUDGET_S s) was spent")
for n in "${notes[@]}"; do echo; echo "note: $n"; done

if [ -n "${FASTSOCKET:-}" ]; then
  echo
  if [ -f "$FASTSOCKET" ]; then
    # Fast Socket's test() leaves a receive's size unset, so bench net cannot deal its
    # chunks as they go (the receiver learns each size from test()): both engines run with
    # --verify there, where each comm's share is fixed ahead and every byte is checked.
    : > "$OUT/f-4"; : > "$OUT/t-4f"
    for r in $(seq "$REPS"); do
      P2P_EXTRA=--verify p2p net 4 "$r" fastsocket "$FASTSOCKET" >> "$OUT/f-4"
      P2P_EXTRA=--verify p2p tcp 4 "$r" tcp4f >> "$OUT/t-4f"
    done
    f=$(median < "$OUT/f-4"); t=$(median < "$OUT/t-4f")
    echo "Fast Socket ($FASTSOCKET) at 4 channels, both engines with --verify: $f GB/s, bench tcp $t GB/s: $(ratio "$f" "$t") (runs $(paste -sd, "$OUT/f-4") / $(paste -sd, "$OUT/t-4f"))"
  else
    echo "FASTSOCKET=$FASTSOCKET: no such file, Fast Socket not driven"
  fi
fi

echo
echo "Where the time went (the last repetition run of each; per chunk = per $CHUNK chunk moved, both sides' threads):"
echo
python3 - "$OUT" "$CHANNELS" "$REPS" "$(nproc)" "${EXTRA_CHUNK:+${EXTRA_CHANNELS:-16,32}}" <<'PY'
import json, os, sys
out, lst, reps, ncpu = sys.argv[1], sys.argv[2].split(","), sys.argv[3], int(sys.argv[4])
extra = [c for c in sys.argv[5].split(",") if c]
print("| engine | C | threads / CPUs | verdict | tx busy % mean (max) | rx busy % mean (max) | runq % max | "
      "tx calls/chunk | rx calls/chunk | tx vol sw/chunk | rx vol sw/chunk | invol sw/chunk |")
print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for tag in ("tcp", "tcpw", "net", "tcpx"):  # tcpw: --slot-memory 0; tcpx: bench tcp at EXTRA_CHUNK
    for c in (extra if tag == "tcpx" else lst):
        got = [r for r in range(int(reps), 0, -1) if os.path.exists(f"{out}/{tag}-{c}-{r}.json")]
        if not got:
            continue
        f = f"{out}/{tag}-{c}-{got[0]}.json"
        try:
            j = json.load(open(f))
            p = j["params"]
        except Exception:
            print(f"| {tag} | {c} | failed: see {tag}-{c}-{got[0]}.err | | | | | | | | | |")
            continue
        chunks = -(-p["size_bytes"] // p["chunk_bytes"]) * (p["iters"] + p["warmup"])
        ws = j["client"]["workers"] + j["server"]["workers"]
        def busy(role):
            # A worker that found the chunks spent lives ~0.2 ms: its CPU / wall is clock noise (>100 %).
            xs = [100 * w["cpu_time_s"] / w["wall_time_s"] for w in ws if w["role"] == role and w["wall_time_s"] > 1e-3]
            return f"{sum(xs) / max(len(xs), 1):.0f} ({max(xs, default=0):.0f})"
        agg = lambda role, k: sum(w.get(k, 0) for w in ws if w["role"] == role)
        runq = max((100 * w.get("runqueue_wait_s", 0) / w["wall_time_s"] for w in ws if w["wall_time_s"] > 1e-3), default=0)
        inv = agg("tx", "involuntary_switches") + agg("rx", "involuntary_switches")
        verdict = j.get("bound", {}).get("verdict", "?")
        name = {"tcpx": f"tcp (chunk {p['chunk_bytes'] // 1024}K)", "tcpw": "tcp (--slot-memory 0)"}.get(tag, tag)
        print(f"| {name} | {c} | {len(ws)} / {ncpu} | {verdict} | {busy('tx')} | {busy('rx')} | {runq:.0f} | "
              f"{agg('tx','syscalls')/chunks:.2f} | {agg('rx','syscalls')/chunks:.2f} | "
              f"{agg('tx','voluntary_switches')/chunks:.2f} | {agg('rx','voluntary_switches')/chunks:.2f} | {inv/chunks:.2f} |")
PY
echo
echo "Wall time of this script: $(( $(date +%s) - start )) s. Raw JSON: $OUT"
