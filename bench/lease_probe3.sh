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
. "$(dirname "$0")/part.sh"  # part NAME LIMIT_S CMD...
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
python3 "$ROOT/bench/campaign_rates.py" "$OUT/nccl-one" "$OUT/nccl-torchrun" || echo "torchrun rates failed"
rm -f "$OUT"/clock/trace*.json "$OUT"/nccl-*/trace*.json 2>/dev/null
tar czf "$OUT.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && rm -rf "$OUT"
