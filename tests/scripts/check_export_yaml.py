#!/usr/bin/env python3
"""export --to astra-sim / json on the fixture campaigns, read back with real parsers.

The network.yml must load with a YAML parser and pass the checks ASTRA-sim's
analytical backend makes (NetworkParser::check_validity: one entry per dimension in
every list, npus_count > 1, bandwidth > 0, latency >= 0, known topology names), cover
every device, and carry each dimension's line: the upper regime of its links'
recommended models (largest alpha, smallest beta), bandwidth in ASTRA-sim's GB/s (2^30
B/s) and latency per hop. The system file (--system) must be JSON with one "ring" per
dimension and an endpoint delay of at least 1 ns.
The JSON must parse and hold every link of links.json.
Usage: check_export_yaml.py P2PSCOPE_BINARY FIXTURES_DIR
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import yaml  # Debian: python3-yaml

binary, fixtures = sys.argv[1], sys.argv[2]
# fixture -> (topology, npus_count) expected from its link classes
expect = {
    "mixed4": (["FullyConnected", "Switch"], [2, 2]),  # NV4 pairs {0,1}, {2,3}; SYS across
    "h200x2": (["Switch"], [2]),                       # NV18: NVSwitch board
    "host2": (["Switch"], [2]),                        # host memory
    "h200-staged": (["Switch"], [2]),                  # GPU <-> pinned host memory over PCIe
}
failures = []


def run(*args):
    r = subprocess.run([binary, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"p2pscope {' '.join(args)}: exit {r.returncode}\n{r.stdout}{r.stderr}")
    return r


with tempfile.TemporaryDirectory(prefix="p2pscope-export-yaml-") as tmp:
    for name, (topology, npus) in expect.items():
        d = os.path.join(tmp, name)
        shutil.copytree(os.path.join(fixtures, "campaigns", name), d)
        run("analyze", d, "--no-report")
        run("export", d, "--to", "astra-sim", "--out", os.path.join(d, "network.yml"),
            "--system", os.path.join(d, "system.json"))
        run("export", d, "--to", "json", "--out", os.path.join(d, "export.json"))
        with open(os.path.join(d, "network.yml")) as f:
            net = yaml.safe_load(f)
        links = json.load(open(os.path.join(d, "links.json")))["links"]
        exported = json.load(open(os.path.join(d, "export.json")))
        dims = len(net["topology"])

        def check(cond, what):
            if not cond:
                failures.append(f"{name}: {what}: {net}")

        check(all(len(net[k]) == dims for k in ("npus_count", "bandwidth", "latency")), "list lengths differ")
        check(set(net["topology"]) <= {"Ring", "FullyConnected", "Switch"}, "unknown topology name")
        check(all(isinstance(n, int) and n > 1 for n in net["npus_count"]), "npus_count must be integers > 1")
        check(all(b > 0 for b in net["bandwidth"]), "bandwidth must be > 0")
        check(all(l >= 0 for l in net["latency"]), "latency must be >= 0")
        devices = {l["src"] for l in links} | {l["dst"] for l in links}
        check(math.prod(net["npus_count"]) == len(devices), f"npus_count does not cover the {len(devices)} devices")
        check(net["topology"] == topology and net["npus_count"] == npus, f"expected {topology} {npus}")
        sysj = json.load(open(os.path.join(d, "system.json")))
        check(sysj["all-reduce-implementation"] == ["ring"] * dims, "one ring per dimension")
        check(isinstance(sysj["endpoint-delay"], int) and sysj["endpoint-delay"] >= 1, "endpoint-delay >= 1")

        def upper(l):
            m = l["model"]
            if m == "three_regime":
                return l["three_regime"]["high"]
            if m == "two_regime":
                return l["two_regime"]["above"]
            return l["alpha_beta"]

        if dims == 1:
            beta = min(upper(l)["beta_bytes_per_s"] for l in links)
            alpha = max(upper(l)["alpha_ns"] for l in links)
            hops = 2 if net["topology"][0] == "Switch" else 1
            check(abs(net["bandwidth"][0] - beta / 2**30) <= 1e-6 * beta / 2**30 + 1e-6, "bandwidth is not beta / 2^30")
            check(abs(net["latency"][0] - alpha / hops) <= 1e-3 + 1e-6 * alpha, "latency is not alpha / hops")
        check(exported["schema_version"] == 1 and exported["kind"] == "p2pscope_link_export", "json kind/version")
        check(len(exported["links"]) == len(links), "json does not hold every link")
        for e, l in zip(exported["links"], links):
            check(e["alpha_ns"] == l["alpha_beta"]["alpha_ns"] and
                  e["beta_bytes_per_s"] == l["alpha_beta"]["beta_bytes_per_s"], "json alpha/beta differ from links.json")
        print(f"{name}: topology {net['topology']} npus {net['npus_count']} bandwidth {net['bandwidth']} "
              f"latency {net['latency']}: {'ok' if not failures else 'FAILED'}")

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
