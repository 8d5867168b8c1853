#!/usr/bin/env bash
# analyze on a full 4-GPU campaign log (12 pairs x 31 sizes x 10 reps = 3720 ops,
# with temperatures, drift, monitor.csv, garbled rows and predictions): wall time of
# `p2pscope analyze`, best and median of N runs. Target: under 2 s on the 2-core box.
# Usage: bench/analyze_bench.sh [path/to/p2pscope] [runs]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$here/build-analyze/p2pscope}
runs=${2:-5}
[ -x "$bin" ] || { echo "no p2pscope binary at $bin (build it: cmake --build build-analyze --target p2pscope)" >&2; exit 1; }
dir=$(mktemp -d /tmp/p2pscope-analyze-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$here/tools/make-synthetic-campaign" --out "$dir/c" --gpus 4 --reps 10 --topology uniform \
  --garbled 5 --cooling --monitor --protocol-switch 64K >/dev/null
# Predictions: the uniform truth (2.5 us + n / 380 GB/s) for every config.
python3 - "$dir/c/metadata.json" "$dir/pred.csv" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
with open(sys.argv[2], "w") as f:
    f.write("src,dst,size_bytes,predicted_ns\n")
    for s in m["plan"]["devices"]:
        for d in m["plan"]["devices"]:
            if s != d:
                for n in m["plan"]["sizes"]:
                    f.write(f"{s},{d},{n},{2500 + n / 380e9 * 1e9:.1f}\n")
PY
rows=$(($(wc -l < "$dir/c/execution_log.csv") - 1))
times=()
for i in $(seq "$runs"); do
  t0=$(date +%s%N)
  "$bin" analyze "$dir/c" --predictions "$dir/pred.csv" >/dev/null 2>&1
  t1=$(date +%s%N)
  times+=($(( (t1 - t0) / 1000000 )))
done
sorted=($(printf '%s\n' "${times[@]}" | sort -n))
echo "log rows: $rows (incl. 5 garbled); runs: $runs"
echo "analyze wall ms: ${times[*]}"
echo "best ${sorted[0]} ms, median ${sorted[$((runs / 2))]} ms"
ls -la "$dir/c" | awk 'NR>1 {print "  " $5 "\t" $9}'
