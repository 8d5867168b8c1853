#!/bin/bash
# Issue 30 in one device call on nvidia-h100-x4 or nvidia-h200-x4 (about 6-7 minutes):
# every goal beside its anchor, measured in the same call.
#  1. the seed's torchrun campaign (profile --backend nccl, one process per GPU) against
#     the same plan in one process: ops/s in all and per size, the bootstrap's cost
#     (the "launcher path" line), and whether rank 0 warned about its own ranks;
#  2. 8 B one-way latency over NVLink, every directed pair: the LL ping-pong (the
#     result) and the fenced ping-pong (the old method, from the note), p50 / p99 / an
#     interval;
#  3. sm copy at 1 GiB against the nvbandwidth-shaped kernel (sm --variant pull@nvb: its
#     read_sm replica; push@nvb: write_sm), every directed pair;
#  4. the ce campaign on all GPUs: clock offset bound and causality (truth_check.py);
#  5. `p2pscope run`: wall time and each step's time (run.json);
#  6. test_gpu on all GPUs (with the remaining time).
# Usage: P2PSCOPE=/path/p2pscope TEST_GPU=/path/test_gpu bench/multigpu_session.sh OUTDIR
# Raw logs go to OUTDIR; a short summary table to stdout (and OUTDIR/summary.txt).
set -u
P=${P2PSCOPE:?set P2PSCOPE to the p2pscope binary}
T=${TEST_GPU:-}
OUT=${1:?usage: P2PSCOPE=... TEST_GPU=... $0 OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
START=$(date +%s)
BUDGET=${SESSION_BUDGET_S:-420}  # test_gpu gets what is left of it (at least 90 s)
NGPU=$(nvidia-smi -L | grep -c '^GPU')
{ nvidia-smi -L; nvidia-smi topo -m; "$P" --version; date -u; } > "$OUT/machine.txt" 2>&1
timed() {  # NAME LIMIT_S CMD...: runs CMD under a time limit, logs it, records its wall time
  local name=$1 limit=$2; shift 2
  echo "+ $*" >> "$OUT/commands.txt"
  local t0; t0=$(date +%s.%N)
  timeout -k 10 "$limit" "$@" > "$OUT/$name.log" 2>&1; local rc=$?
  echo "$name: rc $rc, $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s wall" | tee -a "$OUT/walls.txt" >&2
}

# 1. The seed's campaign, the same plan in one process and under torchrun.
PLAN="--backend nccl --sizes 1:1G --reps 10 --warmup 5 --drift 0 --thermal-warmup off"
timed nccl-one 90 "$P" profile $PLAN --out "$OUT/nccl-one"
TORCHRUN=(python3 -m torch.distributed.run)
command -v torchrun > /dev/null && TORCHRUN=(torchrun)
timed nccl-torchrun 150 "${TORCHRUN[@]}" --nproc-per-node "$NGPU" --no-python "$P" profile $PLAN --out "$OUT/nccl-torchrun"

# 2. 8 B one-way latency, every directed pair (ce backend: the GPU ping-pongs).
timed latency 60 "$P" bench gpu --backend ce --pattern latency --sizes 8 --warmup 3 --iters 50 --format json \
  --out "$OUT/latency.json"

# 3. sm at 1 GiB against nvbandwidth's kernel shape, every directed pair.
for v in default:sm push@nvb:sm pull:sm pull@nvb:sm; do
  name=${v%%:*}
  if [ "$name" = default ]; then
    timed "sm-$name" 60 "$P" bench gpu --backend sm --sizes 1G --format json --out "$OUT/sm-$name.json"
  else
    timed "sm-${name/@/_}" 60 "$P" bench gpu --backend sm --variant "$name" --sizes 1G --format json \
      --out "$OUT/sm-${name/@/_}.json"
  fi
done

# 4. The ce campaign on every GPU: clock bound and causality.
timed ce-campaign 120 "$P" profile --backend ce --sizes 1:1G --reps 10 --warmup 5 --drift 10s --thermal-warmup off \
  --out "$OUT/ce"
"$P" analyze "$OUT/ce" --no-report > "$OUT/ce.analyze.txt" 2>&1
python3 "$HERE/truth_check.py" "$OUT/ce" ce > "$OUT/ce.check.txt" 2>&1

# 5. The main job.
timed run 150 "$P" run --out "$OUT/run"

# 6. test_gpu with what is left.
if [ -n "$T" ] && [ -x "$T" ]; then
  left=$((BUDGET - ($(date +%s) - START)))
  [ "$left" -lt 90 ] && left=90
  ( cd "$HERE/.." && export P2PSCOPE_BIN=$P && timed test_gpu "$left" "$T" --gtest_brief=1 )
fi

python3 - "$OUT" "$NGPU" <<'PY' | tee "$OUT/summary.txt"
import csv, glob, json, math, os, re, sys
out, ngpu = sys.argv[1], int(sys.argv[2])

def log_rows(d):
    rows = []
    try:
        for line in open(os.path.join(d, "execution_log.csv")):
            if not line.strip() or line[0] == "#" or line.startswith("config_id"):
                continue
            f = line.rstrip("\n").split(",")
            rows.append((int(f[3]), int(f[6]), int(f[7])))  # size, host start, host end
    except OSError:
        pass
    return rows

def rates(rows):
    """ops/s over the measured rows; per size, 1 / mean time from the previous row's end."""
    if len(rows) < 2:
        return 0.0, {}
    rows = sorted(rows, key=lambda r: r[2])
    total = len(rows) / ((rows[-1][2] - rows[0][1]) / 1e9)
    per = {}
    for prev, r in zip(rows, rows[1:]):
        per.setdefault(r[0], []).append((r[2] - prev[2]) / 1e9)
    return total, {s: len(v) / sum(v) for s, v in per.items() if sum(v) > 0}

def size_text(n):
    for u, k in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << k and n % (1 << k) == 0:
            return f"{n >> k}{u}"
    return str(n)

print(f"# issue 30 on {ngpu} GPUs: {open(os.path.join(out, 'machine.txt')).readline().strip()}")
print("\n## 1. torchrun campaign vs one process (same plan: nccl, 1:1G, 10 reps); goal >= 0.8x at every size")
one, tr = log_rows(os.path.join(out, "nccl-one")), log_rows(os.path.join(out, "nccl-torchrun"))
o_all, o_per = rates(one)
t_all, t_per = rates(tr)
print(f"rows logged: one process {len(one)}, torchrun {len(tr)}")
print(f"ops/s overall: one process {o_all:.1f}, torchrun {t_all:.1f}, ratio {t_all / o_all if o_all else float('nan'):.2f}x")
worst = None
print(f"{'size':>6} {'one ops/s':>10} {'torchrun':>10} {'ratio':>6}")
for s in sorted(o_per):
    r = t_per.get(s, 0) / o_per[s]
    worst = r if worst is None else min(worst, r)
    print(f"{size_text(s):>6} {o_per[s]:>10.1f} {t_per.get(s, 0):>10.1f} {r:>6.2f}")
print(f"worst size ratio {worst if worst is not None else float('nan'):.2f}x  (goal >= 0.80)")
tlog = open(os.path.join(out, "nccl-torchrun.log"), errors="replace").read() if os.path.exists(os.path.join(out, "nccl-torchrun.log")) else ""
for line in tlog.splitlines():
    if "launcher path" in line:
        print(line.strip())
warn = [l.strip() for l in tlog.splitlines() if "other process" in l]
print(f"'used by other process' warnings under torchrun: {len(warn)}" + ("".join("\n  " + w for w in warn[:4])))

print("\n## 2. 8 B one-way latency over NVLink (GPU-timed, all directed pairs); goal p50 <= 1.0 us")
try:
    j = json.load(open(os.path.join(out, "latency.json")))
    meds, olds = [], []
    print(f"{'pair':>6} {'LL p50':>8} {'p99':>8} {'95% CI of p50':>16} {'fenced p50':>11} {'p99':>8}  (ns)")
    for r in j["rows"]:
        if not r.get("supported", True):
            continue
        x = sorted(r["samples_ns"])
        n = len(x)
        p50, p99 = x[n // 2], x[min(n - 1, int(math.ceil(0.99 * n)) - 1)]
        k = int(max(0, math.floor(n / 2 - 1.96 * math.sqrt(n) / 2)))  # order statistics around the median
        lo, hi = x[k], x[min(n - 1, n - 1 - k)]
        m = re.search(r"one-way p50 (\d+) ns, p99 (\d+) ns", r.get("note", ""))
        old = (float(m.group(1)), float(m.group(2))) if m else (float("nan"), float("nan"))
        meds.append(p50)
        olds.append(old[0])
        print(f"{r['src']}>{r['dst']:<4} {p50:>8.0f} {p99:>8.0f} {lo:>7.0f}-{hi:<8.0f} {old[0]:>11.0f} {old[1]:>8.0f}")
    meds.sort(); olds.sort()
    print(f"median over pairs: LL {meds[len(meds) // 2]:.0f} ns, fenced (old method) {olds[len(olds) // 2]:.0f} ns"
          f"  (anchor: old method 1890 ns; nvbandwidth latency_sm round-trip load 825-832 ns)")
except Exception as e:  # noqa: BLE001
    print(f"latency: no result ({e})")

print("\n## 3. sm at 1 GiB vs nvbandwidth-shaped kernels (same call); goal sm >= 0.99x read_sm replica")
def sm(name):
    try:
        j = json.load(open(os.path.join(out, f"sm-{name}.json")))
        return {(r["src"], r["dst"]): r["algbw_GBps"] for r in j["rows"] if r.get("supported", True)}
    except Exception:  # noqa: BLE001
        return {}
base = sm("pull_nvb")
for name, label in (("default", "sm (push, 4 blocks/SM)"), ("pull", "sm-pull"), ("push_nvb", "push@nvb (write_sm shape)"),
                    ("pull_nvb", "pull@nvb (read_sm replica)")):
    v = sm(name)
    if not v:
        print(f"{label}: no result")
        continue
    vals = sorted(v.values())
    ratios = sorted(v[k] / base[k] for k in v if k in base and base[k])
    print(f"{label:<28} median {vals[len(vals) // 2]:7.1f} GB/s, min {vals[0]:7.1f}; vs read_sm replica: "
          f"median {ratios[len(ratios) // 2] if ratios else float('nan'):.3f}x, worst {ratios[0] if ratios else float('nan'):.3f}x")
print("  (anchor, another day: nvbandwidth read_sm 376.0-376.3 GB/s, write_sm n/a)")

print("\n## 4. ce campaign on all GPUs: clock bound (goal <= 1000 ns) and causality (goal 0)")
try:
    for line in open(os.path.join(out, "ce.check.txt")):
        if line.startswith(("GPU ", "worst CV", "PASS", "FAIL")):
            print(line.rstrip())
except OSError:
    print("no check")

print("\n## 5. p2pscope run (goal <= 30 s on 4 GPUs; predict --measure is the coordinator's)")
try:
    j = json.load(open(os.path.join(out, "run", "run.json")))
    total = 0.0
    for s in j.get("steps", []):
        total += s.get("seconds", 0) or 0
        print(f"  {s.get('name', '?'):<16} {s.get('status', '?'):<10} {s.get('seconds', 0):6.1f} s")
    print(f"  steps total {total:.1f} s")
except Exception as e:  # noqa: BLE001
    print(f"run: no run.json ({e})")
for line in open(os.path.join(out, "walls.txt")):
    if line.startswith("run:"):
        print("  " + line.strip())

print("\n## 6. test_gpu")
p = os.path.join(out, "test_gpu.log")
if os.path.exists(p):
    for line in open(p, errors="replace"):
        if re.search(r"PASSED|FAILED|SKIPPED \]|tests ran", line):
            print("  " + line.rstrip())
else:
    print("  not run (TEST_GPU unset)")
print("\n## walls")
print(open(os.path.join(out, "walls.txt")).read().rstrip())
PY
