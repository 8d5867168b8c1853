#!/bin/bash
# Issue 29's validation in one call on a multi-GPU machine: a ce campaign with its NCCL
# calibration, predict's NCCL model against NCCL (every op, 2 and all GPUs, 1 B - 1 GiB,
# timed as nccl-tests times; again with --hold-out 2 for predicted cells at 2 GPUs, and
# with --host-anchor off), export --for nccl:S at 1 MiB, 64 MiB, 1 GiB for ASTRA-sim
# (run it afterwards where ASTRA-sim is: ../shared/astra-sim/bin), and bench nccl beside
# torch.distributed's loop for the nccl-tests method. Raw files under OUTDIR; a summary
# on stdout.
# Usage: bench/predict_nccl.sh OUTDIR   (P2PSCOPE=binary; TORCH=1 adds the torch comparison)
set -u
P=${P2PSCOPE:-build/p2pscope}
OUT=${1:-predict-nccl}
HERE=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$OUT"
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
nvidia-smi -L > "$OUT/gpus.txt" 2>&1
t0=$(date +%s.%N)
timeout 200 "$P" profile --backend ce --sizes 1:1G --reps 10 --drift 0 --thermal-warmup off --out "$OUT/ce" \
  --nccl-calibration full > "$OUT/profile.txt" 2>&1 || echo "profile failed: $OUT/profile.txt"
t1=$(date +%s.%N)
"$P" analyze "$OUT/ce" > "$OUT/analyze.txt" 2>&1
# NCCL measured here as nccl-tests times it (the median of three spans), every op on 2
# GPUs and on all of them: the files predict compares with, kept for offline re-runs.
GPUS_ALL=$(seq -s, 0 $((NGPU - 1)))
for g in 0,1 "$GPUS_ALL"; do
  n=$(echo "$g" | tr ',' '\n' | wc -l)
  timeout 150 "$P" bench nccl --op all --gpus "$g" --sizes 1:1G --check off --in-place off --spans 3 --format json \
    --out "$OUT/measured-n$n.json" --force > /dev/null 2> "$OUT/measured-n$n.err" || echo "bench nccl on $g failed"
done
M="--measured $OUT/measured-n2.json --measured $OUT/measured-n$NGPU.json"
"$P" predict "$OUT/ce" --algo nccl --sizes 1:1G $M --format json --out "$OUT/predict.json" \
  --html "$OUT/predict.html" --force > "$OUT/predict.txt" 2>&1 || echo "predict failed: $OUT/predict.txt"
# Validation at 2 GPUs too: only allreduce and sendrecv of 2 ranks stay in the calibration.
"$P" predict "$OUT/ce" --algo nccl --sizes 1:1G $M --hold-out 2 --format json --out "$OUT/predict-holdout2.json" \
  --force > "$OUT/predict-holdout2.txt" 2>&1 || echo "predict --hold-out 2 failed"
"$P" predict "$OUT/ce" --algo nccl --sizes 1:1G $M --host-anchor off --format json \
  --out "$OUT/predict-noanchor.json" --force > /dev/null 2>&1 || echo "predict --host-anchor off failed"
t2=$(date +%s.%N)
for S in 1048576 67108864 1073741824; do
  "$P" export "$OUT/ce" --to astra-sim --for nccl:$S --out "$OUT/net-$S.yml" --system "$OUT/sys-$S.json" --force \
    2> "$OUT/export-$S.txt"
done
SIZES=1048576,2097152,8388608,67108864,536870912,1073741824
for op in ${TORCH:+allreduce allgather}; do  # TORCH=1: bench nccl beside torch's loop too
  timeout 120 python3 "$HERE/torch_collective_ranks.py" --op $op --nranks "$NGPU" --sizes $SIZES > "$OUT/torch_$op.txt" 2>&1
  timeout 120 "$P" bench nccl --op $op --sizes $SIZES --check off --format json --out "$OUT/bench_$op.json" --force \
    > /dev/null 2>&1
done
echo "campaign + calibration: $(awk "BEGIN{print $t1 - $t0}") s; NCCL measured + predict: $(awk "BEGIN{print $t2 - $t1}") s"
grep -h "Off by\|cells," "$OUT/predict.txt" "$OUT/predict.json" 2>/dev/null | head -3
python3 - "$OUT" <<'PY'
import json, sys, os, re
out = sys.argv[1]
import math
for name in ("predict.json", "predict-holdout2.json", "predict-noanchor.json"):
    try:
        j = json.load(open(os.path.join(out, name)))
        print(name, "|", j["headline"])
        for k, v in j["summary"].items(): print(f"  {k}: {v}")
        for l in j.get("host_anchor", []): print("  anchor:", l[:90])
        cells = {}
        for r in j["rows"]:
            if r["role"] != "predicted" or r["error_pct"] is None: continue
            band = "64K-1G" if r["size_bytes"] >= 65536 else "1-32K"
            cells.setdefault((r["op"], r["ranks"], band), []).append(abs(r["error_pct"]))
        for (op, n, band), v in sorted(cells.items()):
            g = math.exp(sum(math.log(max(x, 1e-3)) for x in v) / len(v))
            print(f"    {op:13} {n} ranks {band:7}: geomean {g:5.1f} %  worst {max(v):5.1f} %  ({len(v)} cells)")
    except Exception as e:
        print(name, ":", e)
for op in ("allreduce", "allgather"):
    try:
        b = {r["size_bytes"]: r for r in json.load(open(os.path.join(out, f"bench_{op}.json")))["rows"]}
        for line in open(os.path.join(out, f"torch_{op}.txt")):
            m = re.search(r"size=(\d+) loop_us=([\d.]+).*busbw_GBps=([\d.]+)", line)
            if not m: continue
            S = int(m[1]); r = b.get(S)
            if r: print(f"  {op} {S}: bench nccl {r['time_us']:.2f} us busbw {r['busbw_GBps']:.1f} | torch {float(m[2]):.2f} us busbw {float(m[3]):.1f} | ratio {r['busbw_GBps']/float(m[3]):.3f}")
    except Exception as e:
        print(op, e)
PY
