#!/usr/bin/env bash
# CPU time of a fresh clone's `make build-p2pscope` (no ccache: every file compiled), for
# several revisions alternated, so that two trees are compared on the same machine in the
# same hour (a 2-core machine's speed changes from day to day and with other builds beside).
#
#   bench/build_cpu.sh [--rounds N] [--repo DIR] [--work DIR] REV [REV ...]
#
# Prints one Markdown row per build: revision, build steps, wall, user, sys, user+sys and the
# load average before and after (a load above the core count inflates CPU time as well).
set -euo pipefail

rounds=1
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
work=${TMPDIR:-/tmp}/p2pscope-build-cpu
revs=()
while (($#)); do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --repo) repo=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    -*) echo "build_cpu.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) revs+=("$1"); shift ;;
  esac
done
((${#revs[@]})) || { echo "build_cpu.sh: name at least one revision, e.g. c34e33e main" >&2; exit 2; }
for r in "${revs[@]}"; do
  git -C "$repo" rev-parse --verify -q "$r^{commit}" >/dev/null || { echo "build_cpu.sh: $r is not a commit of $repo" >&2; exit 2; }
done

load() { cut -d' ' -f1 /proc/loadavg; }
echo "| tree | build steps | wall | user | sys | user+sys | load average (start / end) |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for ((round = 1; round <= rounds; ++round)); do
  for r in "${revs[@]}"; do
    dir=$work/$r
    rm -rf "$dir"
    git clone -q "$repo" "$dir"
    git -C "$dir" checkout -q "$r"
    sha=$(git -C "$dir" rev-parse --short HEAD)
    before=$(load)
    log=$dir.log
    (cd "$dir" && CCACHE_DISABLE=1 /usr/bin/time -f "TIME %e %U %S" make build-p2pscope >"$log" 2>&1) ||
      { echo "build_cpu.sh: $r failed to build; see $log" >&2; exit 1; }
    after=$(load)
    read -r wall user sys < <(grep '^TIME ' "$log" | tail -1 | cut -d' ' -f2-)
    steps=$(grep -c '^\[[0-9]*/[0-9]*\]' "$log" || true)
    total=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.0f", u + s }')
    printf '| %s (%s) | %s | %.0f s | %.0f s | %.0f s | %s s | %s / %s |\n' "$r" "$sha" "$steps" "$wall" "$user" "$sys" \
      "$total" "$before" "$after"
    rm -rf "$dir"
  done
done
