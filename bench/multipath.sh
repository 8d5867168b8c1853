#!/bin/bash
# GPU -> GPU over two paths at once: the copy engine over NVLink plus a share through
# pinned host memory over PCIe (bench gpu --backend ce+hostP), against the copy engine
# alone, at 1 GiB and 256 MiB, both directions and bidirectional, data checked, in one
# run. Anchors: nvbandwidth write_ce 396.4, bidirectional 778.7-779.1 GB/s (NVLink only).
# Usage: bench/multipath.sh OUTDIR   (P2PSCOPE=path/to/p2pscope, SHARES="6 8 10 12 15")
set -u
P2PSCOPE=${P2PSCOPE:-build/p2pscope}
OUT=${1:-multipath}
SHARES=${SHARES:-6 8 10 12 15}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$OUT"
G="bench gpu --warmup 5 --iters 20 --sizes 256M,1G --format json"
run() {  # NAME ARGS...
  local name=$1; shift
  echo "p2pscope $*" >> "$OUT/commands.txt"
  timeout 300 "$P2PSCOPE" "$@" > "$OUT/$name.json" 2>> "$OUT/stderr.txt" || echo "$name: exit $?" >> "$OUT/failures.txt"
}
for v in ce $(for s in $SHARES; do echo ce+host$s; done); do
  run "${v}_01" $G --backend "$v" --pairs 0:1
  run "${v}_10" $G --backend "$v" --pairs 1:0
  run "${v}_bidir" $G --backend "$v" --pattern bidir --pairs 0:1
done
python3 - "$OUT" "$SHARES" <<'PY' | tee "$OUT/table.md"
import json, os, sys
out, shares = sys.argv[1], sys.argv[2].split()
def val(name, size, key):
    try:
        rows = json.load(open(os.path.join(out, name + ".json")))["rows"]
        row = next(r for r in rows if r["size_bytes"] == size)
        return f"{row[key]:.2f}" if row.get("check", "ok") == "ok" else "BAD"
    except Exception:
        return "-"
G, M = 1 << 30, 256 << 20
print("| backend | 0->1 1 GiB | 1->0 1 GiB | bidir total 1 GiB | 0->1 256 MiB | bidir total 256 MiB |")
print("|---|---:|---:|---:|---:|---:|")
for v in ["ce"] + [f"ce+host{s}" for s in shares]:
    print(f"| {v} | {val(v + '_01', G, 'algbw_GBps')} | {val(v + '_10', G, 'algbw_GBps')} | "
          f"{val(v + '_bidir', G, 'total_GBps')} | {val(v + '_01', M, 'algbw_GBps')} | {val(v + '_bidir', M, 'total_GBps')} |")
print("| anchor: nvbandwidth (NVLink only) | 396.4 | | 778.7-779.1 | | |")
PY
