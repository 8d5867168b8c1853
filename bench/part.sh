# Sourced by the one-call device scripts (bench/one_call.sh, bench/lease_*.sh):
#   part NAME LIMIT_S CMD...   runs CMD with a time limit, its output in $OUT/NAME.log, and
#                              adds "NAME: rc R, S s" to $OUT/walls.txt (and prints it).
part() {
  local name=$1 limit=$2; shift 2
  local t0; t0=$(date +%s.%N)
  timeout -k 5 "$limit" "$@" > "$OUT/$name.log" 2>&1; local rc=$?
  echo "$name: rc $rc, $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}') s" | tee -a "$OUT/walls.txt"
}
