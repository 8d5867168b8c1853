#!/usr/bin/env python3
"""The file readers under mutation (issue 43 item 1: "for every file reader").

Takes a real campaign folder (a fixture made on an H200), lets `analyze` write its link
models, then, round after round, mutates one JSON or CSV file of a copy (a value made
invalid UTF-8, a control character, a wrong type, NaN, a huge or negative number, deep
nesting; or bytes flipped, cut, doubled) and runs every command that reads it:
analyze, predict, export (astra-sim and JSON) and compare. A reader may refuse (exit 1
or 2 with a message); a finding is a signal (a crash), an exit over 3, "internal error"
on stderr, a run past its time, or printed output that is not UTF-8 or holds a control
character the file supplied.

Usage: bench/file_fuzz.py --binary build/p2pscope --seconds N [--seed S]
         [--campaign tests/fixtures/campaigns/h200x2]
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default="build/p2pscope")
    ap.add_argument("--campaign", default=os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures",
                                                       "campaigns", "h200x2"))
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
    base = os.path.join(work, "base")
    shutil.copytree(a.campaign, base)
    r = subprocess.run([binary, "analyze", base], capture_output=True, timeout=120)
    if r.returncode != 0:
        print(f"file_fuzz: analyze of the unmutated campaign failed: {r.stderr.decode(errors='replace')[-400:]}",
              file=sys.stderr)
        return 2
    files = sorted(f for f in os.listdir(base) if f.endswith((".json", ".csv")))
    runs = findings = 0
    t0 = time.time()
    while time.time() - t0 < a.seconds:
        d = os.path.join(work, "case")
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(base, d)
        target = rng.choice(files)
        for _ in range(rng.choice([1, 1, 2, 3])):
            mutate(os.path.join(d, target), rng)
        out_dir = os.path.join(work, "out")
        shutil.rmtree(out_dir, ignore_errors=True)
        commands = [["analyze", d, "--out", os.path.join(work, "analyzed")],
                    ["predict", d, "--algo", "ring", "--sizes", "1K:1M"],
                    ["predict", d, "--algo", "ring", "--sizes", "1K:1M", "--format", "json"],
                    ["export", d, "--to", "astra-sim", "--out", out_dir],
                    ["compare", base, d]]
        for cmd in commands:
            runs += 1
            try:
                p = subprocess.run([binary] + cmd, capture_output=True, timeout=60)
                code, err, out = p.returncode, p.stderr, p.stdout
            except subprocess.TimeoutExpired:
                code, err, out = "timeout", b"", b""
            why = None
            if code == "timeout":
                why = "ran past 60 s"
            elif code < 0 or code > 3:
                why = f"exit {code}"
            elif b"internal error" in err:
                why = "internal error"
            else:
                try:
                    out.decode("utf-8")
                    err.decode("utf-8")
                except UnicodeDecodeError:
                    why = "output not UTF-8"
                if why is None and (controls_in(out) or controls_in(err)):
                    why = "a control character printed"
            if why:
                findings += 1
                dest = os.path.join(keep, f"finding-{findings}")
                shutil.copytree(d, dest, dirs_exist_ok=True)
                with open(os.path.join(dest, "WHY.txt"), "w") as f:
                    f.write(f"{why}\ncommand: p2pscope {' '.join(cmd)}\nmutated: {target}\n\n")
                    f.write(err.decode(errors="replace")[-2000:])
                print(f"finding {findings}: {why}: p2pscope {cmd[0]} on a mutated {target} ({dest})")
    print(f"file_fuzz {a.seconds:.0f}s seed {a.seed}: {runs} runs over {len(files)} files "
          f"({', '.join(files)}), {findings} findings" + (f" (kept in {keep})" if findings else ""))
    if not a.keep and not findings:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
