#!/bin/bash
# What a CUDA process start costs on the lent machine, and whether NCCL's host-bound
# regimes follow the CPU's clock. One call:
#  1. the GPUs' persistence mode (read, never changed) and the CPU governor;
#  2. `bench gpu --pattern latency --sizes 8` and `bench nccl --op allreduce --sizes 1M`,
#     3 each, with no other CUDA process, then 3 each while a keeper process holds a
#     context on every GPU (python3 torch, idle). NOT alternated: on 4 x H200 the keeper's
#     runs were 0.6-0.8 s shorter, but `p2pscope run` with a context holder built on that,
#     alternated on and off in one call (bench/lease_hold.sh), was 1-2 s longer: the
#     first runs of a call are slower, not the lone processes (bench/results/multigpu.md);
#  3. bench nccl alltoall and allreduce on every GPU at 16 B - 4 KiB, 5 spans spread over
#     passes, 4 runs, with the CPUs' MHz sampled beside: the two launch regimes (32-35 us
#     and 43-49 us per 4-GPU alltoall iteration on earlier leases) against the clock.
# Usage: bench/lease_init_cost.sh OUTDIR; binaries in .device/; packs OUTDIR.tar.gz.
set -u
OUT=${1:?usage: bench/lease_init_cost.sh OUTDIR}
. "$(dirname "$0")/lease_common.sh"
{ nvidia-smi --query-gpu=index,persistence_mode,clocks.sm,clocks.max.sm --format=csv
  cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>&1
  grep -m1 'model name' /proc/cpuinfo; } > "$OUT/settings.txt" 2>&1
mhz() { awk '/MHz/{s+=$4; n++; if ($4>m) m=$4} END{printf "cpu MHz mean %.0f max %.0f\n", s/n, m}' /proc/cpuinfo; }
cold() {
  for i in 1 2 3; do part "$1-lat-$i" 30 "$P" bench gpu --backend ce --pattern latency --sizes 8 --format json; done
  for i in 1 2 3; do part "$1-nccl-$i" 30 "$P" bench nccl --op allreduce --sizes 1M --format json; done
}
cold nokeeper
python3 -c "
import torch, time, sys
for i in range(torch.cuda.device_count()): torch.zeros(1, device=f'cuda:{i}')
print('keeper holds', torch.cuda.device_count(), 'GPUs', flush=True); time.sleep(90)" > "$OUT/keeper.log" 2>&1 &
KEEPER=$!
for _ in $(seq 50); do grep -q holds "$OUT/keeper.log" 2>/dev/null && break; sleep 0.2; done
cold keeper
kill $KEEPER 2>/dev/null; wait $KEEPER 2>/dev/null
for i in 1 2 3 4; do
  mhz > "$OUT/regime-$i.mhz"
  ( for _ in $(seq 20); do mhz; sleep 0.25; done ) >> "$OUT/regime-$i.mhz" &
  S=$!
  part "regime-$i" 60 "$P" bench nccl --op alltoall,allreduce --sizes 16:4K --spans 5 --format json --out "$OUT/regime-$i.json"
  wait $S
done
echo "== settings"; cat "$OUT/settings.txt"
echo "== walls"; cat "$OUT/walls.txt"
echo "== regimes (median span per op over 16 B - 4 KiB, each pass)"
for i in 1 2 3 4; do
  python3 - "$OUT/regime-$i.json" <<'PY'
import json, sys, statistics
j = json.load(open(sys.argv[1])); ops = j['ops'] if 'ops' in j else [j]
for o in ops:
    sp = [r.get('spans_us') for r in o['rows'] if r.get('spans_us')]
    print(sys.argv[1].split('/')[-1], o['op'], ' '.join('%.1f' % statistics.median(c) for c in zip(*sp)))
PY
  sort "$OUT/regime-$i.mhz" | uniq -c | sort -rn | head -3
done
tar czf "$OUT.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")" && rm -rf "$OUT"
