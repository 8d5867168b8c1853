#!/usr/bin/env python3
"""Ops per second of campaigns against a baseline campaign, per size (as
bench/multigpu_session.sh counts them: per size, 1 / mean time from the previous row's
end to this row's end). Usage: campaign_rates.py BASELINE_DIR DIR... (campaign folders)."""
import os
import sys


def rates(d):
    rows = []
    for line in open(os.path.join(d, "execution_log.csv")):
        if not line.strip() or line[0] == "#" or line.startswith("config_id"):
            continue
        f = line.rstrip("\n").split(",")
        rows.append((int(f[3]), int(f[6]), int(f[7])))  # size, host start, host end
    rows.sort(key=lambda r: r[2])
    per = {}
    for prev, r in zip(rows, rows[1:]):
        per.setdefault(r[0], []).append((r[2] - prev[2]) / 1e9)
    total = len(rows) / ((rows[-1][2] - rows[0][1]) / 1e9)
    return len(rows), total, {s: len(v) / sum(v) for s, v in per.items() if sum(v) > 0}


def main():
    n1, t1, a = rates(sys.argv[1])
    for d in sys.argv[2:]:
        n2, t2, b = rates(d)
        worst = min(b.get(s, 0) / a[s] for s in a)
        print(f"{os.path.basename(d)}: rows {n2}/{n1}, overall {t2 / t1:.2f}x, worst size {worst:.2f}x;",
              " ".join(f"{s}:{b.get(s, 0) / a[s]:.2f}" for s in sorted(a)))


if __name__ == "__main__":
    main()
