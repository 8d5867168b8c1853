#!/bin/bash
# Third device call of the session (issues 30 and 29): `p2pscope run` with the timed NCCL
# calibration in the profile process and NCCL's choices at once (phases traced), the NCCL
# model out of sample on that calibration (bench/predict_nccl.sh), the clock bound on the
# issue's 4-GPU ce campaign (--drift 10s), and the seed's torchrun campaign against one
# process (same plan). Usage: bench/lease_probe3.sh OUTDIR; binaries in .device/.
set -u
OUT=${1:?usage: bench/lease_probe3.sh OUTDIR}
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
part run 90 env P2PSCOPE_TRACE_PHASES=1 "$P" run --out "$OUT/run"
part predict 200 env P2PSCOPE="$P" bash "$ROOT/bench/predict_nccl.sh" "$OUT/predict"
part clock 90 "$P" profile --backend ce --sizes 1:1G --reps 10 --drift 10s --thermal-warmup off --nccl-calibration off \
  --out "$OUT/clock"
PLAN="--backend nccl --sizes 1:1G --reps 10 --warmup 5 --drift 0 --thermal-warmup off --nccl-calibration off"
part nccl-one 90 "$P" profile $PLAN --out "$OUT/nccl-one"
TORCHRUN=(python3 -m torch.distributed.run); command -v torchrun > /dev/null && TORCHRUN=(torchrun)
part nccl-torchrun 120 "${TORCHRUN[@]}" --nproc-per-node 4 --no-python "$P" profile $PLAN --out "$OUT/nccl-torchrun"
echo "== walls"; cat "$OUT/walls.txt"
echo "== run"; grep -h "ok in\|failed in\|timed out" "$OUT/run.log" | head -12; grep -A8 "^Results" "$OUT/run.log"
echo "== run profile trace"; grep -h "p2pscope +" "$OUT/run/profile.log" | head -20
grep -h "nccl calibration" "$OUT/run/profile.log" | head; grep -h '"seconds"' "$OUT"/run/campaign/nccl-calibration/manifest.json
echo "== clock"; grep -h "clock alignment" "$OUT/clock.log" "$OUT/run/profile.log"
echo "== predict"; tail -32 "$OUT/predict.log"
echo "== torchrun"; grep -h "launcher path\|other process" "$OUT/nccl-torchrun.log" | head -5
python3 - "$OUT" <<'PY'
import csv, os, sys, collections
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
    return len(rows), {s: len(v) / sum(v) for s, v in per.items() if sum(v) > 0}
try:
    n1, a = rates("nccl-one"); n2, b = rates("nccl-torchrun")
    print(f"rows: one {n1}, torchrun {n2}")
    w = min(b.get(s, 0) / a[s] for s in a)
    print("per size ratio (torchrun/one, ops per second of op time):", " ".join(f"{s}:{b.get(s,0)/a[s]:.2f}" for s in sorted(a)))
    print(f"worst {w:.2f}")
except Exception as e:
    print("torchrun rates:", e)
PY
rm -f "$OUT"/clock/trace*.json "$OUT"/nccl-*/trace*.json 2>/dev/null
tar czf "$OUT.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && rm -rf "$OUT"
