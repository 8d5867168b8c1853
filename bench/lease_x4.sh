#!/bin/bash
# One device call on four GPUs for issues 30, 29 and 34 (session of 2026-11-27 afternoon).
#   30: `p2pscope run`; the seed's torchrun campaign against one process run before and after
#       it (a call's first one-process run is slower), bootstrap read spin 200 and 5000 us.
#   29: bench/predict_nccl.sh with the binary before (.device/old/p2pscope: spans back to
#       back) and after (spans spread over passes); and whether NCCL's host-bound figure
#       moves with the CPUs the process runs on: bench nccl on all GPUs at 1 B - 32 KiB, 3
#       times each, free and bound to each NUMA node's CPUs (taskset).
#   34: bench/engines.sh with the reference plugin as built now (.device/) and as before
#       (.device/old/), Fast Socket at 4 channels (.device/fastsocket/), and bench tcp at 16
#       and 32 channels with 128 KiB chunks beside iperf3 -l 1M (is the ceiling memory traffic?).
#   test_gpu on every GPU.
# Usage: bench/lease_x4.sh OUTDIR; binaries in .device/; packs OUTDIR.tar.gz. SKIP="a b"
# leaves parts out (run torchrun predict numa engines test_gpu).
set -u
OUT=${1:?usage: bench/lease_x4.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
D=$ROOT/.device
P=$D/p2pscope
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{ nvidia-smi -L; nproc; "$P" --version; date -u; nvidia-smi topo -m; } > "$OUT/machine.txt" 2>&1
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
ALL=0-$((NGPU - 1))
want() { case " ${SKIP:-} " in *" $1 "*) return 1;; esac; return 0; }
. "$(dirname "$0")/part.sh"  # part NAME LIMIT_S CMD...

want run && part run1 60 "$P" run --out "$OUT/run1"

if want torchrun; then
  PLAN="--backend nccl --sizes 1:1G --reps 10 --warmup 5 --drift 0 --thermal-warmup off --nccl-calibration off"
  TORCHRUN=(python3 -m torch.distributed.run); command -v torchrun > /dev/null && TORCHRUN=(torchrun)
  part nccl-one 45 "$P" profile $PLAN --out "$OUT/nccl-one"
  for s in 200 5000; do
    part "torchrun-$s" 60 env P2PSCOPE_BOOTSTRAP_SPIN_US=$s "${TORCHRUN[@]}" --nproc-per-node "$NGPU" --no-python \
      "$P" profile $PLAN --out "$OUT/torchrun-$s"
  done
  part nccl-one-b 45 "$P" profile $PLAN --out "$OUT/nccl-one-b"
fi

if want predict; then
  part predict-old 90 env P2PSCOPE="$D/old/p2pscope" bash "$ROOT/bench/predict_nccl.sh" "$OUT/predict-old"
  part predict-new 90 env P2PSCOPE="$P" bash "$ROOT/bench/predict_nccl.sh" "$OUT/predict-new"
fi

if want numa; then
  mkdir -p "$OUT/numa"
  for rep in 1 2 3; do
    for node in free /sys/devices/system/node/node[0-9]*; do
      if [ "$node" = free ]; then name=free; pre=(); else
        name=$(basename "$node"); pre=(taskset -c "$(cat "$node/cpulist")"); fi
      timeout 30 "${pre[@]}" "$P" bench nccl --op allreduce,allgather --gpus "$ALL" --sizes 1:32K --check off \
        --in-place off --spans 3 --format json --out "$OUT/numa/$name-$rep.json" --force > /dev/null 2>&1 \
        || echo "numa $name $rep failed" | tee -a "$OUT/walls.txt"
    done
  done
fi

if want engines; then
  if [ -x "$D/iperf3/iperf3" ]; then
    export IPERF3=$D/iperf3/iperf3 LD_LIBRARY_PATH=$D/iperf3${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  fi
  FS=; [ -f "$D/fastsocket/libnccl-net-fastsocket.so" ] && FS=$D/fastsocket/libnccl-net-fastsocket.so
  # EXTRA_CHUNK: bench tcp at 16 and 32 channels with 128 KiB chunks, iperf3 with -l 1M.
  part engines-new 150 env P2PSCOPE="$P" PLUGIN="$D/libnccl-net-p2pscope.so" FASTSOCKET="$FS" MONITOR=1 SECS=1 \
    BUDGET_S=125 RUN_S=30 EXTRA_CHUNK=128K bash "$ROOT/bench/engines.sh" "$OUT/engines-new"
  part engines-old 70 env P2PSCOPE="$P" PLUGIN="$D/old/libnccl-net-p2pscope.so" CHANNELS=2,4,8,16 SECS=1 BUDGET_S=55 \
    RUN_S=30 bash "$ROOT/bench/engines.sh" "$OUT/engines-old"
fi

want test_gpu && part test_gpu 100 env P2PSCOPE_BIN="$P" P2PSCOPE_REFNET="$D/libnccl-net-p2pscope.so" "$D/test_gpu" \
  --gtest_brief=1

echo "== walls"; cat "$OUT/walls.txt"
if [ -f "$OUT/run1.log" ]; then
  echo "== run"; grep -h "ok in\|failed in\|timed out" "$OUT/run1.log" | tr '\n' ' '; echo
  grep -A7 "^Results" "$OUT/run1.log"; grep -h "clock alignment" "$OUT/run1/profile.log" 2>/dev/null
fi
if [ -d "$OUT/nccl-one" ]; then
  echo "== torchrun"; grep -h "launcher path" "$OUT"/torchrun-*.log | cut -c1-200
  for base in nccl-one nccl-one-b; do
    echo "-- against $base"
    python3 "$ROOT/bench/campaign_rates.py" "$OUT/$base" "$OUT"/nccl-one* "$OUT/torchrun-200" "$OUT/torchrun-5000" \
      2>&1 | cut -c1-420
  done
fi
for v in old new; do
  [ -f "$OUT/predict-$v.log" ] && { echo "== predict-$v"; grep -v "^  predicted_gpu\|anchor:" "$OUT/predict-$v.log" | \
    grep -A12 "^predict.json\|^predict-holdout2" | cut -c1-200; }
done
if [ -d "$OUT/numa" ]; then
  echo "== numa: allreduce/allgather on $ALL at 1 B - 32 KiB, median over sizes of time_us per run"
  python3 - "$OUT/numa" <<'PY'
import json, os, sys, statistics as st
d = sys.argv[1]
for f in sorted(os.listdir(d)):
    try:
        j = json.load(open(os.path.join(d, f)))
        ops = j.get("ops", [j])
        print(f, " ".join(f"{o['op']} {st.median(r['time_us'] for r in o['rows']):.1f}us" for o in ops))
    except Exception as e:
        print(f, "unreadable:", e)
PY
fi
for e in new old; do
  [ -f "$OUT/engines-$e.log" ] && { echo "== engines-$e"; grep '^|' "$OUT/engines-$e.log" | cut -c1-230; grep -i fast "$OUT/engines-$e.log" | head -5; }
done
[ -f "$OUT/test_gpu.log" ] && { echo "== test_gpu"; grep -E "PASSED|FAILED|SKIPPED|tests ran" "$OUT/test_gpu.log" | tail -15; }
rm -f "$OUT"/*/trace*.json "$OUT"/*/*/trace*.json 2>/dev/null
tar czf "$OUT.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && rm -rf "$OUT"
ls -la "$OUT.tar.gz"
