#!/usr/bin/env python3
"""The file readers under mutation (issue 43 item 1: "for every file reader").

Real files, each family copied once, then round after round one file mutated in place
(a value made invalid UTF-8, a control character, a wrong type, NaN, a huge or negative
number, deep nesting; or bytes flipped, cut, doubled), every command that reads it run,
and the file restored:
- a campaign of an H200 (after `analyze` wrote its link models): analyze, predict,
  export and compare;
- bench nccl runs and their NCCL log, made on an H200: compare and doctor --nccl-log;
- a captured sysfs/proc tree of an H200x2: topo, irq plan, irq snapshot and doctor
  under --root.
A reader may refuse (exit 1 or 2, saying why); a finding is a signal (a crash), an exit
over 3, "internal error" on stderr, a run past 60 s, or output that is not UTF-8 or holds
a control character the file supplied.

Usage: bench/file_fuzz.py --binary build/p2pscope --seconds N [--seed S] [--keep DIR]
Exit 0 when no finding, 1 with findings (each reproducer kept under --keep DIR).
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_fuzz import byte_mutation, json_mutation  # noqa: E402  (one mutator for frames and files)

CSV_NASTY = [b"\xc3", b"\xff", b"\x1b[2J", b"nan", b"-1", b"1e309", b"", b"\"", b",,,,", b"18446744073709551616"]


def csv_mutation(data, rng):
    lines = data.split(b"\n")
    if len(lines) < 2 or rng.random() < 0.3:
        return byte_mutation(data, rng)
    i = rng.randrange(len(lines))
    cells = lines[i].split(b",")
    j = rng.randrange(len(cells))
    cells[j] = rng.choice(CSV_NASTY)
    lines[i] = b",".join(cells)
    return b"\n".join(lines)


def mutate(path, rng):
    data = open(path, "rb").read()
    if path.endswith(".json"):
        new = json_mutation(data, rng) if rng.random() < 0.75 else byte_mutation(data, rng)
    else:
        new = csv_mutation(data, rng)
    open(path, "wb").write(new)


def controls_in(out):
    return any((b < 0x20 and b not in (9, 10, 13)) or b == 0x7F for b in out)


def campaign_family(src, work, binary):
    base = os.path.join(work, "campaign")
    shutil.copytree(src, base)
    r = subprocess.run([binary, "analyze", base], capture_output=True, timeout=120)
    if r.returncode != 0:
        raise SystemExit(f"file_fuzz: analyze of the unmutated campaign failed: {r.stderr.decode(errors='replace')[-400:]}")
    ref = os.path.join(work, "campaign-ref")
    shutil.copytree(base, ref)
    files = sorted(os.path.join(base, f) for f in os.listdir(base) if f.endswith((".json", ".csv")))
    out = os.path.join(work, "out")
    return files, [["analyze", base, "--out", os.path.join(work, "analyzed")],
                   ["predict", base, "--algo", "ring", "--sizes", "1K:1M"],
                   ["predict", base, "--algo", "ring", "--sizes", "1K:1M", "--format", "json"],
                   ["export", base, "--to", "astra-sim", "--out", out, "--force"],
                   ["compare", ref, base]]


def bench_nccl_family(src, work, binary):
    base = os.path.join(work, "bench-nccl")
    shutil.copytree(src, base)
    j = lambda f: os.path.join(base, f)  # noqa: E731
    files = [j(f) for f in ("default-1.json", "slow-1.json", "default-text.text", "default-text.rank0.info.log")]
    return files, [["compare", j("default-1.json"), j("slow-1.json")],
                   ["compare", j("default-2.json"), j("default-1.json"), "--format", "json"],
                   ["compare", j("default-text.text"), j("slow-text.text")],
                   ["doctor", "--nccl-log", j("default-text.rank0.info.log")],
                   ["doctor", "--nccl-log", j("default-text.rank0.info.log"), "--format", "json"]]


def fsroot_family(src, work, binary):
    base = os.path.join(work, "fsroot")
    shutil.copytree(src, base, symlinks=True)
    files = []
    for dirpath, _, names in os.walk(base):
        for n in names:
            f = os.path.join(dirpath, n)
            if not os.path.islink(f) and os.path.getsize(f) < 1 << 16:
                files.append(f)
    return sorted(files), [["topo", "--root", base], ["topo", "--root", base, "--format", "json"],
                           ["irq", "plan", "--root", base], ["irq", "snapshot", "--root", base],
                           ["doctor", "--root", base]]


def judge(code, out, err):
    if code == "timeout":
        return "ran past 60 s"
    if code < 0 or code > 3:
        return f"exit {code}"
    if b"internal error" in err:
        return "internal error"
    try:
        out.decode("utf-8")
        err.decode("utf-8")
    except UnicodeDecodeError:
        return "output not UTF-8"
    if controls_in(out) or controls_in(err):
        return "a control character printed"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default="build/p2pscope")
    fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", default="", help="DIR for the reproducers of findings (default: a temporary folder)")
    a = ap.parse_args()
    binary = os.path.abspath(a.binary)
    if not os.access(binary, os.X_OK):
        print(f"file_fuzz: no p2pscope binary at {a.binary}", file=sys.stderr)
        return 2
    rng = random.Random(a.seed)
    work = tempfile.mkdtemp(prefix="p2pscope-filefuzz-")
    keep = a.keep or os.path.join(work, "findings")
    os.makedirs(keep, exist_ok=True)
    families = {
        "campaign": campaign_family(os.path.join(fixtures, "campaigns", "h200x2"), work, binary),
        "bench-nccl": bench_nccl_family(os.path.join(fixtures, "bench-nccl", "compare"), work, binary),
        "fsroot": fsroot_family(os.path.join(fixtures, "fsroot", "h200x2"), work, binary),
    }
    runs = findings = 0
    per_family = {k: 0 for k in families}
    t0 = time.time()
    while time.time() - t0 < a.seconds:
        name = rng.choice(sorted(families))
        files, commands = families[name]
        target = rng.choice(files)
        original = open(target, "rb").read()
        try:
            for _ in range(rng.choice([1, 1, 2, 3])):
                mutate(target, rng)
            mutated = open(target, "rb").read()
            for cmd in commands:
                runs += 1
                per_family[name] += 1
                try:
                    p = subprocess.run([binary] + cmd, capture_output=True, timeout=60, cwd=work)
                    code, err, out = p.returncode, p.stderr, p.stdout
                except subprocess.TimeoutExpired:
                    code, err, out = "timeout", b"", b""
                why = judge(code, out, err)
                if why:
                    findings += 1
                    dest = os.path.join(keep, f"finding-{findings}")
                    os.makedirs(dest, exist_ok=True)
                    open(os.path.join(dest, os.path.basename(target)), "wb").write(mutated)
                    with open(os.path.join(dest, "WHY.txt"), "w") as f:
                        f.write(f"{why}\ncommand: p2pscope {' '.join(cmd)}\nmutated: {target}\n\n")
                        f.write(err.decode(errors="replace")[-2000:])
                    print(f"finding {findings}: {why}: p2pscope {' '.join(cmd[:2])} on a mutated "
                          f"{os.path.relpath(target, work)} ({dest})")
        finally:
            open(target, "wb").write(original)
    print(f"file_fuzz {a.seconds:.0f}s seed {a.seed}: {runs} runs ("
          + ", ".join(f"{k} {v}" for k, v in per_family.items()) + f"), {findings} findings"
          + (f" (kept in {keep})" if findings else ""))
    shutil.rmtree(os.path.join(work, "campaign"), ignore_errors=True)
    if not a.keep and not findings:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
