#!/usr/bin/env python3
"""Lists every C++ function body by counting braces (issue 45 item 3).

Universal ctags misses a member function defined inside a class body in a .cpp file
(NcclCollectiveRanks::run, 129 lines, was invisible to it), so tools/function-lengths.sh
runs this beside ctags and keeps the longer of the two for each body.

Reads file names, one a line, on stdin; prints "LINES FILE NAME FIRST_LINE LAST_LINE",
tab-separated, per body: FIRST_LINE is the line of the name, LAST_LINE that of the closing
brace (ctags' line: and end:, so the two lists merge on FILE and LAST_LINE).

How: comments, strings, character literals and preprocessor lines are blanked (newlines
kept, so offsets still map to lines), then every brace is classified by the text since the
last ';', '{' or '}' at its level. A brace opens a function when it sits at namespace or
class level and that text ends in a parameter list (plus qualifiers, a trailing return
type or a constructor's initializer list). Braces inside a function, lambdas included,
only count towards it. Standard library only: no new dependency.
"""
import re
import sys

CONTROL = {"if", "for", "while", "switch", "catch", "do", "else", "try", "return", "sizeof",
           "decltype", "alignas", "noexcept", "static_assert", "requires"}
# Words that may follow a parameter list before a function body.
QUALIFIERS = re.compile(
    r"(\s*(const|volatile|noexcept|override|final|mutable|constexpr|&&|&|"
    r"noexcept\s*\([^()]*\)|->[^{;]*|__attribute__\s*\(\(.*?\)\)|\[\[[^\]]*\]\]))*\s*$")


def blank(src):
    """Returns src with comments, literals and preprocessor lines turned into spaces."""
    out = []
    i, n = 0, len(src)
    line_start = True
    while i < n:
        c = src[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":
            # A directive runs to the end of the line, continued by a backslash.
            j = i
            while j < n and src[j] != "\n":
                j = j + 2 if src[j] == "\\" and j + 1 < n else j + 1
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
            continue
        line_start = c == "\n"
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == '"':
            m = re.match(r'R"([^(\s]{0,16})\(', src[i - 1:i + 20]) if i > 0 and src[i - 1] == "R" else None
            if m:  # raw string: R"delim( ... )delim"
                end = src.find(")" + m.group(1) + '"', i)
                j = n if end < 0 else end + len(m.group(1)) + 2
            else:
                j = i + 1
                while j < n and src[j] != '"' and src[j] != "\n":
                    j += 2 if src[j] == "\\" else 1
                j += 1
            out.append('"' + re.sub(r"[^\n]", " ", src[i + 1:j - 1]) + '"')
            i = j
        elif c == "'":
            # 1'000'000: a digit separator, not a character literal.
            k = i - 1
            while k >= 0 and (src[k].isalnum() or src[k] == "_"):
                k -= 1
            if k + 1 < i and src[k + 1].isdigit():
                out.append(c)
                i += 1
                continue
            j = i + 1
            while j < n and src[j] != "'" and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            j += 1
            out.append("'" + " " * (j - i - 2) + "'")
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def split_ctor_init(head):
    """Returns head up to a constructor's initializer colon (':' not '::', after ')')."""
    depth = 0
    for k, ch in enumerate(head):
        if ch in "([<":
            depth += 1
        elif ch in ")]>":
            depth = max(0, depth - 1)
        elif ch == ":" and depth == 0 and head[k - 1:k] != ":" and head[k + 1:k + 2] != ":":
            before = head[:k].rstrip()
            if re.search(r"\)\s*(noexcept)?\s*$", before):
                return before
    return None


def function_name(head):
    """(name, offset of the name in head) if head ends a function's signature, else None."""
    sig = split_ctor_init(head)
    if sig is None:
        sig = head.rstrip()
    m = QUALIFIERS.search(sig)
    sig = sig[:m.start()] if m else sig
    if not sig.endswith(")"):
        return None
    # Walk back over the parameter list to the name before it.
    depth, k = 0, len(sig) - 1
    while k >= 0:
        depth += {")": 1, "(": -1}.get(sig[k], 0)
        if depth == 0:
            break
        k -= 1
    before = sig[:k].rstrip()
    m = re.search(r"((?:[\w~]+\s*(?:<[^<>;{}()]*>)?\s*::\s*)*"
                  r"(?:operator\s*\(\s*\)|operator\s*[^\s\w(]+|operator\s+\w+|~?\w+))$", before)
    if not m:
        return None
    name = re.sub(r"\s+", "", m.group(1))
    if name.split("::")[-1] in CONTROL:
        return None
    if re.search(r"(=|\breturn)\s*$", before[:m.start()]):
        return None  # x = f(a) { ... } is not a head
    return name, m.start()


def scan(path, text):
    """Yields (lines, path, name, first_line, last_line) for each function body in text."""
    src = blank(text)
    line_of = []
    line = 1
    for ch in src:
        line_of.append(line)
        if ch == "\n":
            line += 1
    # Each open brace: (kind, name, name_offset, class_name). Kinds: ns, class, func, other.
    stack = []
    head_start = 0
    for i, ch in enumerate(src):
        if ch == ";":
            head_start = i + 1
        elif ch == "{":
            head = src[head_start:i]
            context = stack[-1][0] if stack else "ns"
            kind, name, at = "other", None, i
            if head.count("(") > head.count(")"):
                kind = "init"  # a default argument's braces: f(std::vector<int> v = {1, 2})
            elif context in ("ns", "class"):
                found = function_name(head)
                if found is not None:
                    kind, name = "func", found[0]
                    at = head_start + found[1]
                    if context == "class" and "::" not in name and stack[-1][1]:
                        name = stack[-1][1] + "::" + name
                elif re.search(r"\b(namespace|extern)\b[^()=]*$", head):
                    kind = "ns"
                elif re.search(r"\b(class|struct|union)\b[^()=]*$", head):
                    kind = "class"
                    m = re.search(r"\b(?:class|struct|union)\s+(?:\[\[[^\]]*\]\]\s*)?(\w+)[^()=]*$", head)
                    name = m.group(1) if m else ""
                elif split_ctor_init(head) is not None:
                    # A brace initializer in a constructor's list: a_{x}, not the body.
                    kind = "init"
            stack.append((kind, name, at))
            if kind != "init":
                head_start = i + 1
        elif ch == "}":
            if not stack:
                continue  # unbalanced after a blanked #if branch: keep going
            kind, name, at = stack.pop()
            if kind == "func":
                first, last = line_of[at], line_of[i]
                yield last - first + 1, path, name, first, last
            if kind != "init":
                head_start = i + 1


def main():
    for path in (p.strip() for p in sys.stdin):
        if not path:
            continue
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as e:
            print(f"brace-lengths: {path}: {e.strerror}", file=sys.stderr)
            return 2
        for row in scan(path, text):
            print("\t".join(str(x) for x in row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
