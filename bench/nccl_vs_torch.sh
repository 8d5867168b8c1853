#!/bin/bash
# bench nccl (nccl-tests' method, docs/bench-nccl.md: --spans 1, nothing added) against
# torch.distributed's loop (bench/torch_collective_ranks.py, one process per GPU), REPS
# runs of each alternating in one call, so the machine's drift hits both; per size the
# median busbw of each and their ratio, and every run's figure. Issue 30's check of the
# replica. Usage: bench/nccl_vs_torch.sh OUTDIR   (P2PSCOPE=binary, OP (allreduce), REPS (3),
# SIZES (1M-1G), ITERS (20))
set -u
OUT=${1:?usage: bench/nccl_vs_torch.sh OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
P=${P2PSCOPE:-$HERE/../.device/p2pscope}
OP=${OP:-allreduce}; REPS=${REPS:-3}; ITERS=${ITERS:-20}
SIZES=${SIZES:-1048576,2097152,4194304,8388608,16777216,67108864,268435456,1073741824}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$OUT"
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
for r in $(seq "$REPS"); do
  timeout 120 "$P" bench nccl --op "$OP" --sizes "$SIZES" --iters "$ITERS" --check off --in-place off --spans 1 \
    --format json --out "$OUT/bench-$r.json" --force > /dev/null 2> "$OUT/bench-$r.err" || echo "bench nccl run $r failed"
  timeout 120 python3 "$HERE/torch_collective_ranks.py" --op "$OP" --nranks "$NGPU" --iters "$ITERS" \
    --port $((29600 + r)) --sizes "$SIZES" > "$OUT/torch-$r.txt" 2>&1 || echo "torch run $r failed"
done
python3 - "$OUT" "$REPS" <<'PY'
import json, re, statistics as st, sys
out, reps = sys.argv[1], int(sys.argv[2])
b, t = {}, {}
for r in range(1, reps + 1):
    try:
        for row in json.load(open(f"{out}/bench-{r}.json"))["rows"]:
            b.setdefault(row["size_bytes"], []).append(row["busbw_GBps"])
    except Exception as e:
        print(f"bench run {r}: {e}")
    for line in open(f"{out}/torch-{r}.txt"):
        m = re.search(r"size=(\d+) loop_us=([\d.]+).*busbw_GBps=([\d.]+)", line)
        if m: t.setdefault(int(m[1]), []).append(float(m[3]))
print("| size | bench nccl busbw GB/s (median) | torch busbw GB/s (median) | ratio | bench runs | torch runs |")
print("|---|---|---|---|---|---|")
for S in sorted(b):
    if S not in t: continue
    mb, mt = st.median(b[S]), st.median(t[S])
    print(f"| {S >> 20} MiB | {mb:.1f} | {mt:.1f} | {mb / mt:.3f}x | {', '.join(f'{x:.1f}' for x in b[S])} | {', '.join(f'{x:.1f}' for x in t[S])} |")
PY
