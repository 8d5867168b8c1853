#!/bin/bash
# `p2pscope run` three times with its phases traced, each run's wall and steps, the clock bound of
# its campaign: the figure of issue 30's "main job in <= 30 s". Usage: OUT=DIR bench/run_wall.sh
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
P=.device/p2pscope
for k in 1 2 3; do
  t0=$(date +%s.%N)
  P2PSCOPE_TRACE_PHASES=1 $P run --out $OUT/run$k > $OUT/run$k.log 2>&1; rc=$?
  echo "run$k: rc $rc, $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}') s"
  grep -h "ok in" $OUT/run$k.log | grep -v "p2pscope +" | tr '\n' ' '; echo
  grep -h "run: \|p2pscope +.*exit" $OUT/run$k.log | tail -4 | tr '\n' ' '; echo
  python3 -c "
import json;j=json.load(open('$OUT/run$k/campaign/clock_drift.json'));a=j['alignment'];print('clock bound', round(a['offset_uncertainty_ns_max']), 'ns, violations', a.get('causality_violations'), 'pieces', [d['clock_map']['pieces'] for d in j['devices']])"
  grep -A7 "^Results" $OUT/run$k.log | head -7
done
cd $OUT && tar czf runs.tar.gz run1 run2 run3 run1.log run2.log run3.log && rm -rf run1 run2 run3
