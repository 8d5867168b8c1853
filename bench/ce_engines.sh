#!/bin/bash
# Which copy engines move a peer copy fastest? The ce backend's push (the source's
# engine writes, nvbandwidth's write_ce), pull (the destination's engine reads,
# read_ce) and both (slices alternate between the two GPUs' engines), each on 1, 2 and
# 4 streams, at 1 GiB: GPU0->GPU1, GPU1->GPU0 and bidirectional, in one run so the
# figures share the machine's state; sm push/pull beside them. The anchors: write_ce
# 396.4, read_ce 393.7-394.1, bidirectional read_ce 778.7-779.1 GB/s (h200x4-anchors.md).
# Usage: bench/ce_engines.sh OUTDIR   (P2PSCOPE=path/to/p2pscope, default build/p2pscope)
set -u
P2PSCOPE=${P2PSCOPE:-build/p2pscope}
OUT=${1:-ce-engines}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$OUT"
G="bench gpu --warmup 5 --iters 20 --sizes ${SIZES:-1G} --format json"
run() {  # NAME ARGS...
  local name=$1; shift
  echo "p2pscope $*" >> "$OUT/commands.txt"
  timeout 300 "$P2PSCOPE" "$@" > "$OUT/$name.json" 2>> "$OUT/stderr.txt" || echo "$name: exit $?" >> "$OUT/failures.txt"
}
for e in push pull both; do
  for n in 1 2 4; do
    run "${e}${n}_01" $G --backend ce --variant "$e@$n" --pairs 0:1
    run "${e}${n}_10" $G --backend ce --variant "$e@$n" --pairs 1:0
    run "${e}${n}_bidir" $G --backend ce --variant "$e@$n" --pattern bidir --pairs 0:1
  done
done
run sm_push $G --backend sm --pairs 0:1
run sm_pull $G --backend sm-pull --pairs 0:1
python3 - "$OUT" <<'PY' | tee "$OUT/table.md"
import json, os, sys
out = sys.argv[1]
def val(name, key):  # the first row's figure, "-" when the run failed or the pair was n/a
    try:
        row = json.load(open(os.path.join(out, name + ".json")))["rows"][0]
    except Exception:
        return "-"
    v = row.get(key) if row.get("supported", True) else None
    return "-" if v is None else f"{v:.2f}"
print("| ce variant | 0->1 GB/s | 1->0 GB/s | bidir total GB/s |")
print("|---|---:|---:|---:|")
for e in ("push", "pull", "both"):
    for n in (1, 2, 4):
        k = f"{e}{n}"
        print(f"| {e}@{n} | {val(k + '_01', 'algbw_GBps')} | {val(k + '_10', 'algbw_GBps')} | {val(k + '_bidir', 'total_GBps')} |")
print("| anchors: write_ce / read_ce | 396.4 / 393.7-394.1 | | 778.7-779.1 (read_ce) |")
print(f"| sm push | {val('sm_push', 'algbw_GBps')} | | |")
print(f"| sm pull | {val('sm_pull', 'algbw_GBps')} | | |")
PY
