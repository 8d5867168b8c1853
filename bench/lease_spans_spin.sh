#!/bin/bash
# One device call for issues 30, 29 and 34 (session of 2026-11-27 afternoon):
#   1. `p2pscope run` once (the main job's wall on this card);
#   2. the seed's torchrun campaign against one process, with the bootstrap's read spin at
#      200 us (the default), 1000 us and 5000 us (P2PSCOPE_BOOTSTRAP_SPIN_US): does a rank
#      that sat out an op pay a wake-up when the next op needs it?
#   3. bench/predict_nccl.sh with the binary before (.device/old/p2pscope: spans back to
#      back) and after (spans of sizes up to 8 MiB spread over passes), one after the other;
#   4. bench/engines.sh at 16 and 32 channels with 128 KiB chunks (iperf3's buffer is
#      128 KiB: is bench tcp's 32-channel ceiling its 1 MiB chunks' memory traffic?).
# Usage: bench/lease_spans_spin.sh OUTDIR; binaries in .device/; packs OUTDIR.tar.gz.
set -u
OUT=${1:?usage: bench/lease_spans_spin.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
D=$ROOT/.device
P=$D/p2pscope
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{ nvidia-smi -L; nproc; "$P" --version; date -u; } > "$OUT/machine.txt" 2>&1
. "$(dirname "$0")/part.sh"  # part NAME LIMIT_S CMD...
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
part run1 90 "$P" run --out "$OUT/run1"
PLAN="--backend nccl --sizes 1:1G --reps 10 --warmup 5 --drift 0 --thermal-warmup off --nccl-calibration off"
TORCHRUN=(python3 -m torch.distributed.run); command -v torchrun > /dev/null && TORCHRUN=(torchrun)
part nccl-one 90 "$P" profile $PLAN --out "$OUT/nccl-one"
for s in 200 1000 5000; do
  part "torchrun-$s" 120 env P2PSCOPE_BOOTSTRAP_SPIN_US=$s "${TORCHRUN[@]}" --nproc-per-node "$NGPU" --no-python "$P" profile \
    $PLAN --out "$OUT/torchrun-$s"
done
part nccl-one-b 90 "$P" profile $PLAN --out "$OUT/nccl-one-b"
part predict-old 200 env P2PSCOPE="$D/old/p2pscope" bash "$ROOT/bench/predict_nccl.sh" "$OUT/predict-old"
part predict-new 200 env P2PSCOPE="$P" bash "$ROOT/bench/predict_nccl.sh" "$OUT/predict-new"
if [ -x "$D/iperf3/iperf3" ]; then
  export IPERF3=$D/iperf3/iperf3 LD_LIBRARY_PATH=$D/iperf3${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
# 32 channels where the host has 64 CPUs or more (two threads a channel), else 16.
CH=${ENGINE_CHANNELS:-$( [ "$(nproc)" -ge 64 ] && echo 16,32 || echo 16 )}
part engines-128k 170 env P2PSCOPE="$P" PLUGIN="$D/libnccl-net-p2pscope.so" CHANNELS=$CH CHUNK=128K BUDGET_S=140 \
  bash "$ROOT/bench/engines.sh" "$OUT/engines-128k"
[ -n "${ENGINE_1M:-}" ] && part engines-1m 120 env P2PSCOPE="$P" PLUGIN="$D/libnccl-net-p2pscope.so" CHANNELS=$CH BUDGET_S=90 \
  bash "$ROOT/bench/engines.sh" "$OUT/engines-1m"
echo "== walls"; cat "$OUT/walls.txt"
echo "== run"; grep -h "ok in\|failed in\|timed out" "$OUT/run1.log" | tr '\n' ' '; echo; grep -A7 "^Results" "$OUT/run1.log"
echo "== torchrun"; grep -h "launcher path" "$OUT"/torchrun-*.log | cut -c1-200
python3 "$ROOT/bench/campaign_rates.py" "$OUT/nccl-one" "$OUT/nccl-one-b" "$OUT/torchrun-200" "$OUT/torchrun-1000" \
  "$OUT/torchrun-5000" || echo "torchrun rates failed"
for v in old new; do echo "== predict-$v"; tail -32 "$OUT/predict-$v.log" | cut -c1-220; done
echo "== engines 128K"; tail -30 "$OUT/engines-128k.log" | cut -c1-220
[ -f "$OUT/engines-1m.log" ] && { echo "== engines 1M"; tail -30 "$OUT/engines-1m.log" | cut -c1-220; }
rm -f "$OUT"/*/trace*.json "$OUT"/*/*/trace*.json 2>/dev/null
tar czf "$OUT.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && rm -rf "$OUT"
ls -la "$OUT.tar.gz"
