#!/bin/bash
# The session's closing device call (issues 30 and 29) on the final binary: `p2pscope run`
# twice, the seed's torchrun campaign against one process with the bootstrap's spin on
# (the default) and off (P2PSCOPE_BOOTSTRAP_SPIN_US=0), the NCCL model out of sample once
# more (bench/predict_nccl.sh: spans and the GPU's own time), and test_gpu.
# Usage: bench/lease_last.sh OUTDIR; binaries in .device/; packs OUTDIR.tar.gz.
set -u
OUT=${1:?usage: bench/lease_last.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
D=$ROOT/.device
P=$D/p2pscope
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{ nvidia-smi -L; nproc; "$P" --version; date -u; } > "$OUT/machine.txt" 2>&1
part() {  # NAME LIMIT_S CMD...
  local name=$1 limit=$2; shift 2
  local t0; t0=$(date +%s.%N)
  timeout -k 5 "$limit" "$@" > "$OUT/$name.log" 2>&1; local rc=$?
  echo "$name: rc $rc, $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}') s" | tee -a "$OUT/walls.txt"
}
part run1 90 "$P" run --out "$OUT/run1"
part run2 90 "$P" run --out "$OUT/run2"
PLAN="--backend nccl --sizes 1:1G --reps 10 --warmup 5 --drift 0 --thermal-warmup off --nccl-calibration off"
TORCHRUN=(python3 -m torch.distributed.run); command -v torchrun > /dev/null && TORCHRUN=(torchrun)
part nccl-one 90 "$P" profile $PLAN --out "$OUT/nccl-one"
part torchrun-spin 120 "${TORCHRUN[@]}" --nproc-per-node 4 --no-python "$P" profile $PLAN --out "$OUT/torchrun-spin"
part torchrun-nospin 120 env P2PSCOPE_BOOTSTRAP_SPIN_US=0 "${TORCHRUN[@]}" --nproc-per-node 4 --no-python "$P" profile \
  $PLAN --out "$OUT/torchrun-nospin"
part predict 200 env P2PSCOPE="$P" bash "$ROOT/bench/predict_nccl.sh" "$OUT/predict"
part test_gpu 120 env P2PSCOPE_BIN="$P" P2PSCOPE_REFNET="$D/libnccl-net-p2pscope.so" "$D/test_gpu" --gtest_brief=1
echo "== walls"; cat "$OUT/walls.txt"
for r in run1 run2; do echo "== $r"; grep -h "ok in\|failed in\|timed out" "$OUT/$r.log" | tr '\n' ' '; echo; grep -A7 "^Results" "$OUT/$r.log"; grep -h "clock alignment" "$OUT/$r/profile.log"; done
echo "== torchrun"; grep -h "launcher path" "$OUT"/torchrun-*.log
python3 - "$OUT" <<'PY'
import os, sys
out = sys.argv[1]
def rates(d):
    """As bench/multigpu_session.sh: per size, 1 / mean time from the previous row's end."""
    rows = []
    for line in open(os.path.join(out, d, "execution_log.csv")):
        if not line.strip() or line[0] == "#" or line.startswith("config_id"): continue
        f = line.rstrip("\n").split(",")
        rows.append((int(f[3]), int(f[6]), int(f[7])))
    rows.sort(key=lambda r: r[2])
    per = {}
    for prev, r in zip(rows, rows[1:]): per.setdefault(r[0], []).append((r[2] - prev[2]) / 1e9)
    total = len(rows) / ((rows[-1][2] - rows[0][1]) / 1e9)
    return len(rows), total, {s: len(v) / sum(v) for s, v in per.items() if sum(v) > 0}
try:
    n1, t1, a = rates("nccl-one")
    for d in ("torchrun-spin", "torchrun-nospin"):
        n2, t2, b = rates(d)
        w = min(b.get(s, 0) / a[s] for s in a)
        print(f"{d}: rows {n2}/{n1}, overall {t2 / t1:.2f}x, worst size {w:.2f}x;",
              " ".join(f"{s}:{b.get(s, 0) / a[s]:.2f}" for s in sorted(a)))
except Exception as e:
    print("torchrun rates:", e)
PY
echo "== predict"; tail -34 "$OUT/predict.log"
echo "== test_gpu"; grep -E "PASSED|FAILED|SKIPPED|tests ran" "$OUT/test_gpu.log" | tail -15
rm -f "$OUT"/*/trace*.json "$OUT"/*/*/trace*.json 2>/dev/null
tar czf "$OUT.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && rm -rf "$OUT"
