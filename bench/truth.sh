#!/usr/bin/env bash
# Measurement truth on one GPU (issue 14), in one device call: the staged campaign
# (host<->GPU 0) and the ce --pairs 0:0 campaign (device-local copies), each with batch
# timing (the default) and, as the anchor in the same run, seed 004's single-op timing;
# then analyze and bench/truth_check.py on each; then the GPU ping-pong at 8 B, 1 KiB,
# 64 KiB against its bound 2 x (alpha + size / beta) (alpha: the 8 B one-way latency,
# beta: the ce 0:0 bandwidth at 256 MiB).
#   P2PSCOPE=.device/one/p2pscope bash bench/truth.sh OUTDIR
set -uo pipefail
BIN=${P2PSCOPE:-build/p2pscope}
OUT=${1:-p2pscope-out/truth}
REPS=${REPS:-10}
DRIFT=${DRIFT:-30s}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
run() { echo "+ $*" >&2; "$@"; }

campaign() {  # NAME ARGS...
  local name=$1; shift
  local t0=$(date +%s.%N)
  run "$BIN" profile --sizes 1:1G --reps "$REPS" --warmup 5 --drift "$DRIFT" --thermal-warmup off --out "$OUT/$name" "$@" \
    > "$OUT/$name.log" 2>&1 || { echo "campaign $name failed:"; tail -20 "$OUT/$name.log"; return 1; }
  echo "$name: $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s wall" >&2
  run "$BIN" analyze "$OUT/$name" > "$OUT/$name.analyze.log" 2>&1 || { tail -5 "$OUT/$name.analyze.log"; return 1; }
  python3 "$HERE/truth_check.py" "$OUT/$name" "$name" | tee "$OUT/$name.check.txt"
}

campaign staged --backend staged
campaign ce00 --backend ce --pairs 0:0
# The same staged campaign with samples 4x longer: does host<->GPU jitter average out?
[ -n "${LONG_SAMPLES:-}" ] && campaign staged-200us --backend staged --min-sample-time 200us
echo "## ping-pong on GPU 0 (two kernels, two streams)"
run "$BIN" bench gpu --backend ce --pairs 0:0 --pattern latency --sizes 8,1K,64K --format json > "$OUT/pingpong.json" 2> "$OUT/pingpong.err"
run "$BIN" bench gpu --backend ce --pairs 0:0 --sizes 64K,256M --format json > "$OUT/ce00_bw.json" 2> "$OUT/ce00_bw.err"
python3 - "$OUT/pingpong.json" "$OUT/ce00_bw.json" <<'PY'
import json, sys
def rows(path): return {r['size_bytes']: r for r in json.load(open(path))['rows']}
pp, bw = rows(sys.argv[1]), rows(sys.argv[2])
alpha = pp[8]['time_ns']['median']
beta = bw[256 << 20]['algbw_GBps'] * 1e9
print(f"alpha (8 B one-way) {alpha:.0f} ns, beta (ce 0:0 at 256 MiB) {beta / 1e9:.1f} GB/s")
for n in (8, 1024, 65536):
    t = pp[n]['time_ns']['median']; bound = 2 * (alpha + n / beta * 1e9)
    print(f"{n:>6} B: one-way {t:.0f} ns, bound {bound:.0f} ns -> {'PASS' if t <= bound else 'FAIL'}  ({pp[n]['note'][:100]})")
PY

# The anchor in the same run: seed 004's one blocking op per record (no drift window).
DRIFT=0 campaign staged-single --backend staged --timing single
DRIFT=0 campaign ce00-single --backend ce --pairs 0:0 --timing single
