#!/usr/bin/env python3
"""Prints the rows of docs/doctor.md's signature table from the catalogue's source
(src/tune/nccl_signature_rules.cpp) and the real logs the test asserts each on
(tests/unit/tune/nccl_signatures_test.cpp). With --write, replaces the rows in docs/doctor.md.
Usage: tools/doctor-signatures-table.py [--write]"""
import re
import sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent
src = (root / "src/tune/nccl_signature_rules.cpp").read_text()
tbl = src[src.index("const std::vector<Entry> kTable"):]
S = r'((?:"(?:[^"\\]|\\.)*"\s*)+)'
entries = re.findall(r"\{\{" + S + r",\s*" + S + r",\s*" + S + r",\s*" + S + r",\s*" + S + r"\}\s*,\s*(\w+)\}", tbl)


def lit(x):
    s = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', x))
    return s.replace('\\"', '"').replace("\\'", "'").replace("\\n", "; ")


test = (root / "tests/unit/tune/nccl_signatures_test.cpp").read_text()
shown = {}
for log, _run, want in re.findall(r'\{"([a-z0-9-]+\.log)",\s*(\d),\s*\{([^}]*)\}', test):
    for w in re.findall(r'"([^"]+)"', want):
        shown.setdefault(w, [])
        if log not in shown[w]:
            shown[w].append(log)
shown.setdefault("log.shm_path", []).append("../p2p-disabled-shm.log")  # the 2 x H200 log
rows = []
for e in entries:
    i, sev, name, cause, fix = (lit(x) for x in e[:5])
    logs = shown.get(i, [])
    where = ", ".join("`" + l + "`" for l in logs[:3]) + (f" (+{len(logs) - 3})" if len(logs) > 3 else "")
    fix_s = "`" + fix.replace("|", "\\|") + "`" if fix else "-"
    rows.append(f"| `{i}` | {sev} | {name.replace('|', '/')}: {cause.replace('|', '/')} | {fix_s} | {where} |")
if "--write" in sys.argv:
    doc_path = root / "docs/doctor.md"
    doc = doc_path.read_text().splitlines()
    head = next(k for k, l in enumerate(doc) if l.startswith("| Id | Severity |"))
    end = head + 2
    while end < len(doc) and doc[end].startswith("| `"):
        end += 1
    doc[head + 2:end] = rows
    doc_path.write_text("\n".join(doc) + "\n")
else:
    print("\n".join(rows))
