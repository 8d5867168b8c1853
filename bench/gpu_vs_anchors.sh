#!/bin/bash
# p2pscope bench gpu / bench nccl against the anchors of shared/reference/h200x4-anchors.md
# and against torch.distributed send/recv (shared/reference/torch_sendrecv.py) measured
# in the same run, on the same GPUs. Works on 1 GPU (staged host<->GPU, device-local
# copies, blocking) and on 2+ (pairs 0:1, latency, nccl, collectives).
# Usage: bench/gpu_vs_anchors.sh OUTDIR        (P2PSCOPE=path/to/p2pscope, default build/p2pscope;
#        TORCH_SENDRECV=path/to/torch_sendrecv.py, default shared/reference/torch_sendrecv.py)
# Writes OUTDIR/*.json (every p2pscope run), OUTDIR/commands.txt, OUTDIR/torch.txt and
# prints the markdown comparison table (also OUTDIR/comparison.md).
set -u
P2PSCOPE=${P2PSCOPE:-build/p2pscope}
TORCH_SENDRECV=${TORCH_SENDRECV:-shared/reference/torch_sendrecv.py}
OUT=${1:-gpu-vs-anchors}
# Multicast can take a shared host's GPUs down: never on here.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$OUT"
[ -x "$P2PSCOPE" ] || { echo "no p2pscope binary at $P2PSCOPE (make build, or set P2PSCOPE)"; exit 2; }
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
echo "gpus: $NGPU" > "$OUT/commands.txt"

p2p() {  # NAME ARGS...: one p2pscope run, JSON to OUT/NAME.json
  local name=$1; shift
  echo "p2pscope $* --format json" >> "$OUT/commands.txt"
  timeout 300 "$P2PSCOPE" "$@" --format json > "$OUT/$name.json" 2>> "$OUT/stderr.txt" \
    || echo "$name: exit $?" >> "$OUT/failures.txt"
}

G="bench gpu --warmup 5 --iters 20"
p2p staged_h2d $G --backend staged --pairs host:0 --sizes 1G
p2p staged_d2h $G --backend staged --pairs 0:host --sizes 1G
p2p staged_bidir $G --backend staged --pattern bidir --pairs host:0 --sizes 1G
if [ "$NGPU" -ge 2 ]; then
  P=0:1
  p2p ce_uni $G --backend ce --pairs $P --sizes 1G
  p2p ce_bidir $G --backend ce --pattern bidir --pairs $P --sizes 1G
  p2p ce_pull_uni $G --backend ce-pull --pairs $P --sizes 1G
  p2p ce_pull_bidir $G --backend ce-pull --pattern bidir --pairs $P --sizes 1G
  p2p ce_both_uni $G --backend ce-both@4 --pairs $P --sizes 1G
  p2p ce_both_bidir $G --backend ce-both@4 --pattern bidir --pairs $P --sizes 1G
  p2p sm_push_uni $G --backend sm --pairs $P --sizes 1G
  p2p sm_pull_uni $G --backend sm-pull --pairs $P --sizes 1G
  p2p sm_push_bidir $G --backend sm --pattern bidir --pairs $P --sizes 1G
  p2p sm_pull_bidir $G --backend sm-pull --pattern bidir --pairs $P --sizes 1G
  for v in push@1 push@2 push@8 pull@1 pull@2 pull@8; do  # blocks per SM (default 4)
    p2p "sm_${v/@/_}" $G --backend sm --variant $v --pairs $P --sizes 1G
  done
  p2p ce_latency $G --backend ce --pattern latency --pairs $P --sizes 8
  p2p ce_blocking bench gpu --warmup 20 --iters 200 --backend ce --pattern blocking --pairs $P --sizes 1
  p2p staged_gpu $G --backend staged --pairs $P --sizes 1G
  p2p nccl_uni $G --backend nccl --pairs $P --sizes 8,1K,128K,1M,2M,32M,64M,512M,1G
  p2p nccl_latency $G --backend nccl --pattern latency --pairs $P --sizes 8
  p2p nccl_allreduce bench nccl --op allreduce --gpus 0-1 --sizes 64M
  p2p nccl_sendrecv bench nccl --op sendrecv --gpus 0-1 --sizes 8,2M,32M,512M
  if [ -f "$TORCH_SENDRECV" ]; then
    echo "python3 $TORCH_SENDRECV --src 0 --dst 1" >> "$OUT/commands.txt"
    timeout 300 python3 "$TORCH_SENDRECV" --src 0 --dst 1 > "$OUT/torch.txt" 2>> "$OUT/stderr.txt" \
      || echo "torch: exit $?" >> "$OUT/failures.txt"
  fi
else
  p2p ce_local $G --backend ce --pairs 0:0 --sizes 1G
  p2p sm_local $G --backend sm --pairs 0:0 --sizes 1G
  p2p ce_blocking bench gpu --warmup 20 --iters 200 --backend ce --pattern blocking --pairs 0:0 --sizes 1
  p2p sm_blocking bench gpu --warmup 20 --iters 200 --backend sm --pattern blocking --pairs 0:0 --sizes 1
  p2p local_latency $G --backend ce --pattern latency --pairs 0:0 --sizes 8
  p2p nccl_allreduce1 bench nccl --op allreduce --gpus 0 --sizes 8,64M
fi

# Same-run torch references for what one GPU can measure (bench/torch_copy.py): a
# blocking 1-byte copy and 1 GiB copies host(pinned)->GPU and GPU->GPU. DST = 1 with 2 GPUs.
DST=0; [ "$NGPU" -ge 2 ] && DST=1
echo "python3 bench/torch_copy.py --dst $DST --only blocking,h2d,d2d" >> "$OUT/commands.txt"
timeout 120 python3 "$(dirname "$0")/torch_copy.py" --dst "$DST" --only blocking,h2d,d2d > "$OUT/torch_copy.json" \
  2>> "$OUT/stderr.txt" || echo "torch_copy: exit $?" >> "$OUT/failures.txt"

python3 - "$OUT" <<'EOF' | tee "$OUT/comparison.md"
import json, os, re, sys
out = sys.argv[1]
def load(name):
    try:
        return json.load(open(os.path.join(out, name + ".json")))
    except Exception:
        return None
def row(name, size=None):
    j = load(name)
    if not j: return None
    for r in j["rows"]:
        if size is None or r["size_bytes"] == size:
            return r if r.get("supported", True) else None
    return None
def val(name, key, size=None):
    r = row(name, size)
    return None if r is None or r.get(key) is None else r[key]
def us(name, size):
    r = row(name, size)
    return None if r is None else r["time_ns"]["median"] / 1e3
try:
    tc = json.load(open(os.path.join(out, "torch_copy.json")))
except Exception:
    tc = {}
def tcs(key, d=1): return f"{tc[key]:.{d}f}" if key in tc else None
torch = {}
if os.path.exists(os.path.join(out, "torch.txt")):
    for line in open(os.path.join(out, "torch.txt")):
        m = re.search(r"size=(\d+) median_us=([\d.]+) GBps=([\d.]+)", line)
        if m: torch[int(m.group(1))] = (float(m.group(2)), float(m.group(3)))
G = 1 << 30
lines = ["| measure | p2pscope | same run: torch | anchor (h200x4-anchors.md) | p2pscope / anchor |",
         "|---|---:|---:|---:|---:|"]
def f(v, d=1): return "-" if v is None else f"{v:.{d}f}"
def add(what, v, anchor=None, anchor_text=None, same=None, d=1, ratio=True):
    r = f"{v / anchor:.3f}" if (v is not None and anchor and ratio) else "-"
    if v is None: same = None  # not measured here: no same-run reference either
    lines.append(f"| {what} | {f(v, d)} | {same or '-'} | {anchor_text or f(anchor, d)} | {r} |")
add("staged host->GPU 1 GiB, GB/s", val("staged_h2d", "algbw_GBps"), 55.4, "55.4 (nvbandwidth host_to_device_memcpy_ce)",
    same=tcs("h2d_1G_GBps") and tcs("h2d_1G_GBps") + " (torch pinned copy_)")
add("staged GPU->host 1 GiB, GB/s", val("staged_d2h", "algbw_GBps"))
add("staged host<->GPU bidir total 1 GiB, GB/s", val("staged_bidir", "total_GBps"))
add("ce device-local copy 1 GiB, GB/s (read+write counted once)", val("ce_local", "algbw_GBps"),
    same=tcs("d2d_1G_GBps") and tcs("d2d_1G_GBps") + " (torch copy_)")
add("sm device-local copy 1 GiB, GB/s", val("sm_local", "algbw_GBps"))
uni = {k: val(k, "algbw_GBps") for k in ("ce_uni", "ce_pull_uni", "ce_both_uni", "sm_push_uni", "sm_pull_uni")}
add("ce push (source's engine) GPU0->GPU1 1 GiB, GB/s", uni["ce_uni"], 396.4, "396.4 (nvbandwidth write_ce)",
    same=tcs("d2d_1G_GBps") and tcs("d2d_1G_GBps") + " (torch copy_ 0->1)")
add("ce pull (destination's engine) GPU0->GPU1 1 GiB, GB/s", uni["ce_pull_uni"], 394.1, "393.7-394.1 (nvbandwidth read_ce)")
add("ce both engines, 4 streams, GPU0->GPU1 1 GiB, GB/s", uni["ce_both_uni"], 396.4, "396.4 (best nvbandwidth)")
add("sm push GPU0->GPU1 1 GiB, GB/s", uni["sm_push_uni"], 376.4, "375.8-376.4 (nvbandwidth sm)")
add("sm pull GPU0->GPU1 1 GiB, GB/s", uni["sm_pull_uni"], 376.4, "375.8-376.4 (nvbandwidth sm)")
for v in ("push_1", "push_2", "push_8", "pull_1", "pull_2", "pull_8"):
    uni["sm_" + v] = val("sm_" + v, "algbw_GBps")
    if uni["sm_" + v] is not None:
        add(f"sm {v.replace('_', '@')} blocks/SM GPU0->GPU1 1 GiB, GB/s", uni["sm_" + v], 376.4, "376.4 (nvbandwidth sm)")
best = max([v for v in uni.values() if v is not None], default=None)
add("best unidirectional 1 GiB, GB/s (target >= 400)", best, 396.4, "396.4 (best nvbandwidth)")
bid = {k: val(k, "total_GBps") for k in ("ce_bidir", "ce_pull_bidir", "ce_both_bidir", "sm_push_bidir", "sm_pull_bidir")}
for k, v in bid.items():
    add(f"{k.replace('_', ' ')} total 1 GiB, GB/s", v, 779.1, "778.7-779.1 (nvbandwidth bidir read_ce)")
bb = max([v for v in bid.values() if v is not None], default=None)
add("best bidirectional total 1 GiB, GB/s (target >= 785)", bb, 779.1, "779.1")
t8 = torch.get(8); t1 = torch.get(1)
lat = val("ce_latency", "one_way_us")
add("GPU one-way latency 8 B (ping-pong on peer flags), us (target <= 2)", lat, 14.3,
    "14.3 (nccl-tests sendrecv 8 B); torch 53-63", same=f"{t8[0]:.1f}" if t8 else None, d=2)
add("nccl backend ping-pong one-way 8 B, us", val("nccl_latency", "one_way_us"), 14.3, "14.3 (nccl-tests)", d=2)
add("host-observed blocking 1 B ce copy, us (median of 200)", val("ce_blocking", "host_us"), 63.1, "63.1 (torch send/recv 1 B)",
    same="; ".join(x for x in [f"send/recv {t1[0]:.1f}" if t1 else None,
                               tcs("blocking_1B_us", 2) and "copy_ " + tcs("blocking_1B_us", 2)] if x), d=2)
add("staged GPU0->GPU1 1 GiB, GB/s", val("staged_gpu", "algbw_GBps"))
add("one GPU: ping-pong kernels on two streams, one-way 8 B, us (no link crossed)", val("local_latency", "one_way_us"), d=2)
add("host-observed blocking 1 B sm copy kernel, us (median of 200)", val("sm_blocking", "host_us"), d=2)
a1 = load("nccl_allreduce1")
if a1:
    for r in a1["rows"]:
        add(f"bench nccl allreduce, 1 GPU, {r['size_bytes']} B, us", r["time_ns"]["median"] / 1e3)
nccl_anchor = {8: (14.3, None), 128 << 10: (14.4, 9.1), 2 << 20: (21.7, 96.8), 32 << 20: (136.9, 245.0), 512 << 20: (1508.8, 355.8)}
for size in (8, 1 << 10, 128 << 10, 1 << 20, 2 << 20, 32 << 20, 64 << 20, 512 << 20, G):
    t = us("nccl_uni", size)
    if t is None: continue
    gb = val("nccl_uni", "algbw_GBps", size)
    tr = torch.get(size)
    a = nccl_anchor.get(size)
    same = f"{tr[0]:.1f} us, {tr[1]:.1f} GB/s" if tr else None
    if a:
        add(f"nccl backend GPU0->GPU1 {size} B, us (anchor: nccl-tests -g 2)", t, a[0], f"{a[0]} us", same=same, d=1)
    else:
        add(f"nccl backend GPU0->GPU1 {size} B, us", t, None, "-", same=same, d=1)
    if size >= 1 << 20:
        add(f"nccl backend GPU0->GPU1 {size} B, GB/s", gb, (tr[1] if tr else None),
            f"{tr[1]:.1f} (torch, this run)" if tr else "-", d=1)
ar = load("nccl_allreduce")
if ar:
    add("allreduce 2 GPUs 64 MiB busbw, GB/s", ar["rows"][0]["busbw_GBps"], 266, "266 (NCCL default P2P)")
sr = load("nccl_sendrecv")
if sr:
    for r in sr["rows"]:
        a = nccl_anchor.get(r["size_bytes"])
        add(f"bench nccl sendrecv ring {r['size_bytes']} B, us", r["time_ns"]["median"] / 1e3, a[0] if a else None,
            f"{a[0]} us (nccl-tests)" if a else "-")
print("\n".join(lines))
fails = os.path.join(out, "failures.txt")
if os.path.exists(fails):
    print("\nfailed runs:\n" + open(fails).read())
EOF
