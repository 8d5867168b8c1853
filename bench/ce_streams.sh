#!/bin/bash
# Does cutting one peer copy across several streams (copy engines) beat one stream?
# ce@N for N = 1 2 4 8 at 1 GiB, GPU0->GPU1, GPU1->GPU0 and bidirectional, all in one
# run so the figures share the machine's state; then sm push/pull for comparison.
# Usage: bench/ce_streams.sh OUTDIR   (P2PSCOPE=path/to/p2pscope, default build/p2pscope)
set -u
P2PSCOPE=${P2PSCOPE:-build/p2pscope}
OUT=${1:-ce-streams}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$OUT"
G="bench gpu --warmup 5 --iters 20 --sizes ${SIZES:-1G} --format json"
run() {  # NAME ARGS...
  local name=$1; shift
  echo "p2pscope $*" >> "$OUT/commands.txt"
  timeout 300 "$P2PSCOPE" "$@" > "$OUT/$name.json" 2>> "$OUT/stderr.txt" || echo "$name: exit $?" >> "$OUT/failures.txt"
}
for n in 1 2 4 8; do
  run "ce${n}_01" $G --backend "ce@$n" --pairs 0:1
  run "ce${n}_10" $G --backend "ce@$n" --pairs 1:0
  run "ce${n}_bidir" $G --backend "ce@$n" --pattern bidir --pairs 0:1
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
print("| variant | 0->1 GB/s | 1->0 GB/s | bidir total GB/s |")
print("|---|---:|---:|---:|")
for n in (1, 2, 4, 8):
    print(f"| ce@{n} | {val(f'ce{n}_01', 'algbw_GBps')} | {val(f'ce{n}_10', 'algbw_GBps')} | {val(f'ce{n}_bidir', 'total_GBps')} |")
print(f"| sm push | {val('sm_push', 'algbw_GBps')} | | |")
print(f"| sm pull | {val('sm_pull', 'algbw_GBps')} | | |")
PY
