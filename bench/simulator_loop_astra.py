#!/usr/bin/env python3
"""The simulator loop closed with a real ASTRA-sim: for each campaign, `p2pscope export --to
astra-sim` (both analytical backends, with --system) and `p2pscope predict --algo ring` with the
same --astra-backend, then ASTRA-sim's binaries on the exported files as written (nothing edited)
for a ring all-reduce of 1 MiB, 64 MiB and 1 GiB; prints a markdown table of ASTRA-sim / predict.

Called by bench/simulator_loop.sh --astra; needs the binaries and Chakra traces of
../shared/astra-sim (apt-get install -y libprotobuf32 python3-yaml).
Usage: simulator_loop_astra.py P2PSCOPE ASTRA_DIR WORKDIR NAME=CAMPAIGN_DIR[@LINE_AT[@SIZES]] ...
(@LINE_AT: export with --astra-line-at LINE_AT; @SIZES: only these all-reduce sizes, comma-separated bytes;
such rows are shown but not counted in the 2 % verdict.)
A campaign whose default export says it is off beyond 2 % for some ring all-reduce sizes (its note names
`--for ring:S`) is exported once per all-reduce size with `--for ring:S`, as that note tells a user to; the
table's "file" column says which export each row ran on.
"""
import json
import os
import re
import shutil
import subprocess
import sys

SIZES = [1 << 20, 64 << 20, 1 << 30]
FINISH = re.compile(r"sys\[(\d+)\] finished, (\d+) cycles")


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return r


def astra(binary, astra_dir, net, sysj, npus, size, cwd):
    wl = os.path.join(astra_dir, "workloads", "bytes", f"{npus}npus_{size}B", "all_reduce")
    if not os.path.exists(wl + ".0.et"):
        return None, f"no trace {wl}"
    os.makedirs(cwd, exist_ok=True)
    cmd = [binary, f"--workload-configuration={wl}", f"--system-configuration={sysj}",
           f"--remote-memory-configuration={os.path.join(astra_dir, 'system', 'no_memory_expansion.json')}",
           f"--network-configuration={net}"]
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=1200)
    fins = [int(c) for _, c in FINISH.findall(p.stdout + p.stderr)]
    if not fins:
        return None, f"rc {p.returncode}: " + (p.stdout + p.stderr).strip().splitlines()[-1][-160:]
    return max(fins), ""


def main():
    p2p, astra_dir, work = sys.argv[1:4]
    campaigns = [a.split("=", 1) for a in sys.argv[4:]]
    rows, worst = [], 0.0
    for name, spec in campaigns:
        src, line_at, sizes = (spec.split("@") + ["", ""])[:3]
        sizes = [int(x) for x in sizes.split(",")] if sizes else SIZES
        d = os.path.join(work, name.replace(" ", "_").replace("/", "_"))
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(src, d)
        if not os.path.exists(os.path.join(d, "links.json")):
            run([p2p, "analyze", d, "--no-report"])
        for backend in ("unaware", "aware"):
            net, sysj = os.path.join(d, f"network-{backend}.yml"), os.path.join(d, f"system-{backend}.json")
            e = run([p2p, "export", d, "--to", "astra-sim", "--astra-backend", backend, "--out", net, "--system", sysj] +
                    (["--astra-line-at", line_at] if line_at else []))
            per_size = not line_at and "--for ring:S" in e.stderr
            files = {}
            for S in sizes:
                files[S] = (net, sysj, "default")
                if per_size:
                    n, j = os.path.join(d, f"network-{backend}-{S}.yml"), os.path.join(d, f"system-{backend}-{S}.json")
                    run([p2p, "export", d, "--to", "astra-sim", "--astra-backend", backend, "--out", n, "--system", j,
                         "--for", f"ring:{S}"])
                    files[S] = (n, j, f"--for ring:{S}")
            pj = os.path.join(d, f"predict-{backend}.json")
            run([p2p, "predict", d, "--ops", "allreduce", "--algo", "ring", "--astra-backend", backend, "--sizes",
                 ",".join(map(str, sizes)), "--format", "json", "--out", pj])
            pred = {int(r["size_bytes"]): float(r["predicted_us"]) * 1e3 for r in json.load(open(pj))["rows"]}
            npus = len(json.load(open(pj))["devices"])
            text = open(net).read()
            shape = re.search(r"^topology: (.*)$", text, re.M).group(1) + " x " + \
                re.search(r"^npus_count: (.*)$", text, re.M).group(1)
            binary = os.path.join(astra_dir, "bin", f"AstraSim_Analytical_Congestion_{backend.capitalize()}")
            for S in sizes:
                net, sysj, how = files[S]
                ns, why = astra(binary, astra_dir, net, sysj, npus, S, os.path.join(d, "runs", backend, str(S)))
                ratio = ns / pred[S] if ns else None
                if ratio and not line_at:
                    worst = max(worst, abs(ratio - 1))
                label = f"{name} (--astra-line-at {line_at})" if line_at else name
                if line_at:
                    how = f"--astra-line-at {line_at}"
                rows.append((label, backend, shape, npus, S, how, ns, pred[S], ratio, why))
    print("| campaign | ASTRA-sim backend | exported dimensions | NPUs | all-reduce S | file | ASTRA-sim ns | "
          "predict --algo ring ns | ASTRA-sim / predict |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, backend, shape, npus, S, how, ns, pr, ratio, why in rows:
        s = f"{S >> 30} GiB" if S >= 1 << 30 else f"{S >> 20} MiB"
        print(f"| {name} | {backend} | {shape.replace('|', '/')} | {npus} | {s} | {how} | {ns} | "
              f"{pr:.0f} | {ratio:.4f} |" if ratio else
              f"| {name} | {backend} | {shape} | {npus} | {s} | {how} | FAILED {why} | {pr:.0f} | |")
    print(f"\nworst |ASTRA-sim / predict - 1| = {100 * worst:.3f} % over {len(rows)} runs")
    return 0 if worst <= 0.02 and all(r[8] for r in rows) else 1  # (--astra-line-at rows not in the verdict)


if __name__ == "__main__":
    sys.exit(main())
