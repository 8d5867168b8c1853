#!/bin/bash
# Host<->GPU at 1 GiB: p2pscope's staged backend against torch's pinned copy_ (CUDA
# events, median of 20 after 5 warm-up), alternating ROUNDS times in one call, so a
# noisy machine (a VM's PCIe, another tenant) hits both alike. Prints one table.
# Usage: bench/h2d_vs_torch.sh OUTDIR   (P2PSCOPE=path/to/p2pscope, ROUNDS=3; GPU 0)
set -u
P2PSCOPE=${P2PSCOPE:-build/p2pscope}
OUT=${1:-h2d-vs-torch}
ROUNDS=${ROUNDS:-3}
GPU=0
mkdir -p "$OUT"
G="bench gpu --warmup 5 --iters 20 --backend staged --sizes 1G --format json"
for r in $(seq 1 "$ROUNDS"); do
  for dir in h2d d2h; do
    pairs="host:$GPU"; [ $dir = d2h ] && pairs="$GPU:host"
    echo "p2pscope $G --pairs $pairs" >> "$OUT/commands.txt"
    timeout 120 "$P2PSCOPE" $G --pairs "$pairs" > "$OUT/p2pscope_${dir}_$r.json" 2>> "$OUT/stderr.txt"
  done
  # GPU 0 only: torch_copy.py's host copies are to and from cuda:0.
  timeout 120 python3 "$(dirname "$0")/torch_copy.py" --only h2d,d2h > "$OUT/torch_$r.json" 2>> "$OUT/stderr.txt"
done
python3 - "$OUT" "$ROUNDS" <<'PY' | tee "$OUT/table.md"
import json, os, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def p2p(d, r):
    try:
        row = json.load(open(os.path.join(out, f"p2pscope_{d}_{r}.json")))["rows"][0]
        return row["algbw_GBps"], row["check"], row["time_ns"]["cv"] * 100
    except Exception:
        return None, "-", None
def torch(d, r):
    try: return json.load(open(os.path.join(out, f"torch_{r}.json")))[d + "_1G_GBps"]
    except Exception: return None
f = lambda v: "-" if v is None else f"{v:.2f}"
print("| round | direction | p2pscope staged GB/s (CV %, check) | torch pinned copy_ GB/s | ratio |")
print("|---|---|---:|---:|---:|")
for r in range(1, rounds + 1):
    for d in ("h2d", "d2h"):
        a, check, cv = p2p(d, r); b = torch(d, r)
        ratio = f"{a / b:.3f}" if a and b else "-"
        print(f"| {r} | {d} | {f(a)} ({f(cv)}, {check}) | {f(b)} | {ratio} |")
PY
