#!/bin/bash
# One device call for issues 29 and 30 (4-GPU machine): the clock sync of two binaries
# side by side (OLD, NEW), the NCCL model's out-of-sample run (bench/predict_nccl.sh),
# `p2pscope run` with each step's time, and the fixed costs of a bench nccl process
# (process + CUDA + NCCL init) against its work. Everything lands in OUTDIR and is
# packed into OUTDIR.tar.gz (the device returns a limited number of files).
# Usage: OLD=bin NEW=bin bench/lease_probe.sh OUTDIR     (budgets in seconds: PREDICT_S, RUN_S)
set -u
OUT=${1:?usage: bench/lease_probe.sh OUTDIR}
NEW=${NEW:-build/p2pscope}
OLD=${OLD:-}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{ nvidia-smi -L; nproc; nvidia-smi -q | grep -i -m4 "persistence\|Driver Version"; "$NEW" --version; date -u; } > "$OUT/machine.txt" 2>&1
. "$(dirname "$0")/part.sh"  # part NAME LIMIT_S CMD...
clock_of() {  # the campaign's clock line and each GPU's bound
  grep -h "clock alignment" "$1" | head -2
}
# 1. Clocks: the same campaign with each binary (issue 30 item 3).
for b in ${OLD:+old} new; do
  bin=$NEW; [ $b = old ] && bin=$OLD
  part clock-$b 90 "$bin" profile --backend ce --sizes 1:1G:4 --reps 10 --drift 5s --thermal-warmup off \
    --nccl-calibration off --out "$OUT/clock-$b"
  echo "clock $b: $(clock_of "$OUT/clock-$b.log")"
done
# 2. Fixed costs of one bench nccl process, and the check's cost at 1 GiB (issue 30 item 4).
NC="$NEW bench nccl --check off --in-place off --format json --force"
part nccl-fixed-n4 40 $NC --op alltoall --gpus 0-3 --sizes 1:4K --settle 0 --out "$OUT/fixed-n4.json"
part nccl-fixed-n2 40 $NC --op alltoall --gpus 0,1 --sizes 1:4K --settle 0 --out "$OUT/fixed-n2.json"
part cuda-only 40 "$NEW" bench gpu --backend ce --pattern uni --sizes 8 --format json --out "$OUT/ce8.json" --force
part allreduce-run-step 60 "$NEW" bench nccl --op allreduce --sizes 1M,64M,1G --format json --out "$OUT/ar-check.json" --force
part allreduce-nocheck 60 "$NEW" bench nccl --op allreduce --sizes 1M,64M,1G --check off --format json --out "$OUT/ar-nocheck.json" --force
# 3. The main job, each step's time (issue 30 item 4).
part run "${RUN_S:-90}" "$NEW" run --out "$OUT/run"
# 4. The NCCL model out of sample (issue 29): this lease shaped nothing in it.
part predict "${PREDICT_S:-200}" env P2PSCOPE="$NEW" bash "$(dirname "$0")/predict_nccl.sh" "$OUT/predict"
echo "== walls"; cat "$OUT/walls.txt"
echo "== run"; tail -14 "$OUT/run.log"
echo "== calibration children"; grep -h '"seconds"\|"json"' "$OUT/run/"*/nccl-calibration/manifest.json 2>/dev/null | paste - - | head
echo "== predict"; tail -30 "$OUT/predict.log"
rm -f "$OUT"/clock-*/trace*.json 2>/dev/null
tar czf "$OUT.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && rm -rf "$OUT"
ls -la "$OUT.tar.gz"
