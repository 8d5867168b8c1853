#!/usr/bin/env bash
# Prints the N longest C++ functions (lines, file, name, first line) of src, apps, include
# and tests, measured by universal ctags (issue 24), and exits 1 when any is LIMIT lines or
# longer, so that a function too long to read in one screen is caught before it grows.
# Usage: tools/function-lengths.sh [--top N] [--limit LINES] [--root DIR]
# Exit: 0 all under the limit, 1 one or more at or over it, 2 bad usage,
#       77 universal ctags missing (ctest reads 77 as a skip).
set -euo pipefail

top=10
limit=120
root="$(cd "$(dirname "$0")/.." && pwd)"
while [ $# -gt 0 ]; do
  case "$1" in
    --top) top=${2:?--top needs a number}; shift 2 ;;
    --limit) limit=${2:?--limit needs a number of lines}; shift 2 ;;
    --root) root=${2:?--root needs a directory}; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "function-lengths: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for n in "$top" "$limit"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "function-lengths: '$n' is not a positive whole number" >&2; exit 2; }
done
[ -d "$root" ] || { echo "function-lengths: no directory '$root'" >&2; exit 2; }

# Exuberant ctags has neither --kinds-C++ nor the end: field: only universal ctags will do.
if ! command -v ctags >/dev/null || ! ctags --version 2>/dev/null | grep -q "Universal Ctags"; then
  echo "function-lengths: SKIP: universal ctags not found (apt-get install universal-ctags," \
       "or scripts/install-deps.sh)" >&2
  exit 77
fi

cd "$root"
# Source files only: tests/fixtures holds captured /sys trees whose dangling links ctags
# would warn about, and none of it is code.
files=$(find src apps include tests -path tests/fixtures -prune -o -type f \
          \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.h' -o -name '*.c' \) -print |
        sort)
lengths=$(printf '%s\n' "$files" |
  ctags -L - --languages=C++,C --langmap=C++:+.cu.cuh --kinds-C++=f --kinds-C=f --fields=+ne --extras=-F -o - |
  awk -F'\t' '{l="";e="";for(i=4;i<=NF;i++){if($i~/^line:/)l=substr($i,6);if($i~/^end:/)e=substr($i,5)}
               if(l!=""&&e!="")print e-l+1,$2,$1,l}' |
  sort -k1,1rn -k2,2 -k4,4n)

# awk, not head: head closing the pipe early would fail the script under pipefail.
printf '%s\n' "$lengths" | awk -v top="$top" 'NR<=top'
over=$(printf '%s\n' "$lengths" | awk -v lim="$limit" '$1>=lim' | wc -l)
if [ "$over" -gt 0 ]; then
  echo "function-lengths: $over function(s) of $limit lines or more (split them into named steps)" >&2
  exit 1
fi
echo "function-lengths: all functions under $limit lines" >&2
