#!/bin/bash
# How far NCCL's host-bound figures (nccl-tests' method at 1 B - 32 KiB, where the span
# is the host's launch rate) move from one process to the next, unpinned and with the
# process pinned to a few CPUs: the repeatability a prediction at those sizes can be
# held to (issue 29). Usage: bench/host_rate.sh OUTDIR [GPUS] [CPUS]   (P2PSCOPE=binary)
set -u
P=${P2PSCOPE:-build/p2pscope}
OUT=${1:?usage: bench/host_rate.sh OUTDIR [GPUS] [CPUS]}
GPUS=${2:-0-3}
CPUS=${3:-4-11}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
for k in 1 2 3; do
  for how in free pinned; do
    pre=(); [ "$how" = pinned ] && pre=(taskset -c "$CPUS")
    "${pre[@]}" "$P" bench nccl --op allreduce,allgather,sendrecv --gpus "$GPUS" --sizes 16,256,4K,32K --check off \
      --in-place off --spans 3 --format json --out "$OUT/$how-$k.json" --force > /dev/null 2>&1 || echo "run $how $k failed"
  done
done
python3 - "$OUT" <<'PY'
import json, os, sys, statistics
out = sys.argv[1]
for how in ("free", "pinned"):
    cells = {}
    for k in (1, 2, 3):
        try: j = json.load(open(os.path.join(out, f"{how}-{k}.json")))
        except Exception as e: print(how, k, e); continue
        for o in j["ops"]:
            for r in o["rows"]: cells.setdefault((o["op"], r["size_bytes"]), []).append(r["time_us"])
    spreads = [max(v) / min(v) - 1 for v in cells.values() if len(v) == 3]
    print(f"{how:6}: process-to-process spread (max/min - 1) over {len(spreads)} cells: "
          f"median {100 * statistics.median(spreads):.1f} %, worst {100 * max(spreads):.1f} %")
    for (op, s), v in sorted(cells.items()):
        print(f"   {op:10} {s:>6} B: " + " ".join(f"{x:6.2f}" for x in v) + " us")
PY
