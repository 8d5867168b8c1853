#!/bin/bash
# A short confirming call on four GPUs: the torchrun campaign with the bootstrap spin at its
# new default (no P2PSCOPE_BOOTSTRAP_SPIN_US set) against one process before and after it,
# and Fast Socket at 4 channels driven with --verify beside bench tcp (bench/engines.sh).
# Usage: bench/lease_x4_confirm.sh OUTDIR; binaries in .device/; packs OUTDIR.tar.gz.
set -u
OUT=${1:?usage: bench/lease_x4_confirm.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
D=$ROOT/.device
P=$D/p2pscope
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
unset P2PSCOPE_BOOTSTRAP_SPIN_US
{ nvidia-smi -L; nproc; "$P" --version; date -u; } > "$OUT/machine.txt" 2>&1
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
. "$(dirname "$0")/part.sh"  # part NAME LIMIT_S CMD...
PLAN="--backend nccl --sizes 1:1G --reps 10 --warmup 5 --drift 0 --thermal-warmup off --nccl-calibration off"
TORCHRUN=(python3 -m torch.distributed.run); command -v torchrun > /dev/null && TORCHRUN=(torchrun)
part nccl-one 45 "$P" profile $PLAN --out "$OUT/nccl-one"
part torchrun 60 "${TORCHRUN[@]}" --nproc-per-node "$NGPU" --no-python "$P" profile $PLAN --out "$OUT/torchrun"
part nccl-one-b 45 "$P" profile $PLAN --out "$OUT/nccl-one-b"
if [ -x "$D/iperf3/iperf3" ]; then
  export IPERF3=$D/iperf3/iperf3 LD_LIBRARY_PATH=$D/iperf3${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
part engines 90 env P2PSCOPE="$P" PLUGIN="$D/libnccl-net-p2pscope.so" FASTSOCKET="$D/fastsocket/libnccl-net-fastsocket.so" \
  CHANNELS=4 SECS=1 BUDGET_S=75 RUN_S=30 bash "$ROOT/bench/engines.sh" "$OUT/engines"
echo "== walls"; cat "$OUT/walls.txt"
echo "== torchrun"; grep -h "launcher path" "$OUT"/torchrun.log | cut -c1-200
for base in nccl-one nccl-one-b; do
  echo "-- against $base"; python3 "$ROOT/bench/campaign_rates.py" "$OUT/$base" "$OUT/torchrun" 2>&1 | cut -c1-600
done
echo "== engines"; grep -E '^\||Fast Socket' "$OUT/engines.log" | cut -c1-230
grep -h -v '^monitor' "$OUT"/engines/fastsocket-4-1.err 2>/dev/null | tail -3
rm -f "$OUT"/*/trace*.json 2>/dev/null
tar czf "$OUT.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && rm -rf "$OUT"
