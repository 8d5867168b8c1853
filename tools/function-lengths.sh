#!/usr/bin/env bash
# Prints the N longest C++ functions (lines, file, name, first line) of src, apps, include
# and tests, and exits 1 when any is more than LIMIT lines, so that a function too long to
# read in one screen is caught before it grows. Two measures, the longer kept per body:
# universal ctags (issue 24) and tools/brace-lengths.py, a brace counter that also sees
# members defined inside a class body in a .cpp, which ctags misses (issue 45).
# Usage: tools/function-lengths.sh [--top N] [--limit LINES] [--root DIR] [--exempt DIR]...
# --exempt DIR: functions under DIR (e.g. apps) are listed, marked, but do not fail.
# Exit: 0 all within the limit, 1 one or more over it, 2 bad usage,
#       77 python3 missing (ctest reads 77 as a skip).
set -euo pipefail

top=10
limit=100
root="$(cd "$(dirname "$0")/.." && pwd)"
exempt=()
while [ $# -gt 0 ]; do
  case "$1" in
    --top) top=${2:?--top needs a number}; shift 2 ;;
    --limit) limit=${2:?--limit needs a number of lines}; shift 2 ;;
    --root) root=${2:?--root needs a directory}; shift 2 ;;
    --exempt) exempt+=("${2:?--exempt needs a directory}"); shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "function-lengths: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for n in "$top" "$limit"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "function-lengths: '$n' is not a positive whole number" >&2; exit 2; }
done
[ -d "$root" ] || { echo "function-lengths: no directory '$root'" >&2; exit 2; }

counter="$(cd "$(dirname "$0")" && pwd)/brace-lengths.py"
if ! command -v python3 >/dev/null; then
  echo "function-lengths: SKIP: python3 not found (tools/brace-lengths.py needs it)" >&2
  exit 77
fi

cd "$root"
# Source files only: tests/fixtures holds captured /sys trees whose dangling links ctags
# would warn about, and none of it is code.
files=$(find src apps include tests -path tests/fixtures -prune -o -type f \
          \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.h' -o -name '*.c' \) -print |
        sort)

# Rows "LINES<TAB>FILE<TAB>NAME<TAB>FIRST<TAB>LAST" from each measure.
braces=$(printf '%s\n' "$files" | python3 "$counter")
# Exuberant ctags has neither --kinds-C++ nor the end: field: only universal ctags will do.
# Without it the brace counter alone measures (it sees every body ctags sees).
tags=""
if command -v ctags >/dev/null && ctags --version 2>/dev/null | grep -q "Universal Ctags"; then
  tags=$(printf '%s\n' "$files" |
    ctags -L - --languages=C++,C --langmap=C++:+.cu.cuh --kinds-C++=f --kinds-C=f --fields=+ne --extras=-F -o - |
    awk -F'\t' '{l="";e="";for(i=4;i<=NF;i++){if($i~/^line:/)l=substr($i,6);if($i~/^end:/)e=substr($i,5)}
                 if(l!=""&&e!="")printf "%d\t%s\t%s\t%s\t%s\n",e-l+1,$2,$1,l,e}')
else
  echo "function-lengths: note: universal ctags not found, the brace counter measures alone" >&2
fi

# One row per body (file and closing line), the longer measure kept; exempt files marked.
ex=$(IFS=:; echo "${exempt[*]:-}")
lengths=$(printf '%s\n%s\n' "$braces" "$tags" |
  awk -F'\t' -v ex="$ex" 'NF>=5{k=$2 SUBSEP $5; if(!(k in n)||$1>n[k]){n[k]=$1;row[k]=$1" "$2" "$3" "$4}}
    END{m=split(ex,d,":"); for(k in row){split(k,f,SUBSEP); mark=""
          for(i=1;i<=m;i++) if(d[i]!=""&&index(f[1],d[i]"/")==1) mark=" (exempt)"
          print row[k] mark}}' |
  sort -k1,1rn -k2,2 -k4,4n)

# awk, not head: head closing the pipe early would fail the script under pipefail.
printf '%s\n' "$lengths" | awk -v top="$top" 'NR<=top'
over=$(printf '%s\n' "$lengths" | awk -v lim="$limit" '$1>lim && !/ \(exempt\)$/' | wc -l)
exempt_over=$(printf '%s\n' "$lengths" | awk -v lim="$limit" '$1>lim && / \(exempt\)$/')
if [ -n "$exempt_over" ]; then
  echo "function-lengths: over $limit lines but exempt (--exempt ${exempt[*]}), not counted:" >&2
  printf '%s\n' "$exempt_over" | sed 's/^/  /' >&2
fi
if [ "$over" -gt 0 ]; then
  echo "function-lengths: $over function(s) of more than $limit lines (split them into named steps)" >&2
  exit 1
fi
echo "function-lengths: all functions within $limit lines" >&2
