#!/usr/bin/env bash
# Every repository path a document names in backquotes exists (issue 33 item 6): a page
# that says where things are must fail the build when they move. A token counts as a path
# when it starts with one of the tree's top folders (src/ apps/ include/ tests/ tools/
# scripts/ bench/ docs/); "<area>" style placeholders are skipped.
# Usage: tools/doc-paths.sh [--root DIR] FILE...   (paths relative to the root)
# Exit: 0 every path exists, 1 one or more missing (listed), 2 bad usage.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
if [ "${1:-}" = "--root" ]; then root=${2:?--root needs a directory}; shift 2; fi
[ $# -gt 0 ] || { echo "usage: tools/doc-paths.sh [--root DIR] FILE..." >&2; exit 2; }
missing=0 checked=0
for doc in "$@"; do
  [ -f "$root/$doc" ] || { echo "doc-paths: no document $doc" >&2; exit 2; }
  while IFS= read -r p; do
    case "$p" in *'<'*|*'*'*) continue ;; esac
    checked=$((checked + 1))
    if [ ! -e "$root/$p" ]; then echo "$doc names $p, which does not exist"; missing=$((missing + 1)); fi
  done < <(grep -o '`[^` ]*`' "$root/$doc" | tr -d '`' | grep -E '^(src|apps|include|tests|tools|scripts|bench|docs)/' | sort -u)
done
echo "doc-paths: $checked path(s) checked, $missing missing"
[ "$missing" -eq 0 ]
