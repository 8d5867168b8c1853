#!/usr/bin/env python3
"""Same-run torch references for p2pscope's copies, printed as one JSON object.

blocking_1B_us: perf_counter around copy_ + synchronize of 1 byte GPU0 -> GPU DST, median
of 200 (after 20); h2d_1G_GBps / d2h_1G_GBps: pinned host <-> GPU0, d2d_1G_GBps: GPU0 ->
GPU DST, 1 GiB each, CUDA events around copy_(non_blocking), median of 20 (after 5).
Usage: python3 bench/torch_copy.py [--dst N] [--only blocking,h2d,d2h,d2d]
"""
import argparse
import json
import time

import torch

G = 1 << 30


def med(v):
    v = sorted(v)
    return v[len(v) // 2]


def blocking_1b_us(dst):
    a = torch.ones(1, dtype=torch.uint8, device="cuda:0")
    b = torch.empty(1, dtype=torch.uint8, device=f"cuda:{dst}")
    for _ in range(20):
        b.copy_(a); torch.cuda.synchronize(dst)
    t = []
    for _ in range(200):
        s = time.perf_counter(); b.copy_(a); torch.cuda.synchronize(dst); t.append(time.perf_counter() - s)
    return med(t) * 1e6


def gbps(src, out, dev):
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    v = []
    with torch.cuda.device(dev):
        for i in range(25):
            e0.record(); out.copy_(src, non_blocking=True); e1.record(); e1.synchronize()
            if i >= 5:
                v.append(e0.elapsed_time(e1) * 1e-3)
    return G / med(v) / 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dst", type=int, default=0)
    ap.add_argument("--only", default="blocking,h2d,d2h,d2d")
    a = ap.parse_args()
    want = set(a.only.split(","))
    res = {}
    if "blocking" in want:
        res["blocking_1B_us"] = blocking_1b_us(a.dst)
    g0 = torch.empty(G, dtype=torch.uint8, device="cuda:0")
    if want & {"h2d", "d2h"}:
        h = torch.empty(G, dtype=torch.uint8).pin_memory()
        if "h2d" in want:
            res["h2d_1G_GBps"] = gbps(h, g0, 0)
        if "d2h" in want:
            res["d2h_1G_GBps"] = gbps(g0, h, 0)
        del h
    if "d2d" in want:
        g1 = torch.empty(G, dtype=torch.uint8, device=f"cuda:{a.dst}")
        res["d2d_1G_GBps"] = gbps(g0, g1, 0)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
