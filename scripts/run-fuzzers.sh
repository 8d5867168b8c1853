#!/usr/bin/env bash
# Builds the libFuzzer targets with clang into build-fuzz and runs each for a bounded
# time (FUZZ_SECONDS, default 20), seeded from the fixtures. Exits non-zero when a
# fuzzer finds a crash (its reproducer is left in build-fuzz/fuzz/artifacts/).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH="${FUZZ_SECONDS:-20}"
BUILD=build-fuzz
CXX="${FUZZ_CXX:-clang++}" CC="${FUZZ_CC:-clang}" cmake -S . -B "$BUILD" -G Ninja \
  -DP2PSCOPE_FUZZ=ON -DP2PSCOPE_WITH_CUDA=OFF -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
targets=(fuzz_cpulist fuzz_bindings fuzz_interrupts fuzz_nccl_log
  fuzz_frame_hello fuzz_frame_params fuzz_frame_go fuzz_frame_net_handles fuzz_frame_result fuzz_frame_challenge
  fuzz_frame_rendezvous fuzz_result_print)
cmake --build "$BUILD" --target "${targets[@]}" -j"${FUZZ_JOBS:-2}"

mkdir -p "$BUILD/fuzz/artifacts"
seeds() {  # corpus seeds per fuzzer, copied so the fixtures are never written to
  local name=$1 dir="$BUILD/fuzz/corpus/$1"
  mkdir -p "$dir"
  case "$name" in
    fuzz_nccl_log) cp tests/fixtures/nccl-logs/*.log "$dir"/ 2>/dev/null || true
      cp tests/fixtures/nccl-logs/faults/two-runs-*.log tests/fixtures/nccl-logs/faults/peer-killed.log "$dir"/ 2>/dev/null || true
      cp tests/fixtures/nccl-tests/h200-2.19/*.txt "$dir"/ 2>/dev/null || true ;;  # every nccl-tests layout
    fuzz_interrupts) find tests/fixtures/fsroot -path '*/proc/interrupts' -exec sh -c 'cp "$1" "$2/$(echo "$1" | tr / _)"' _ {} "$dir" \; ;;
    fuzz_cpulist) printf '0-3,8,10-11' >"$dir/list"; printf 'ff,ffffffff' >"$dir/mask" ;;
    fuzz_bindings) printf 'eth1:8-21,112-125;eth2:8-21,112-125;eth3:60-73,164-177' >"$dir/seed" ;;
    fuzz_frame_hello) printf '{"nonce":"0123456789abcdef0123456789abcdef"}' >"$dir/seed" ;;
    fuzz_frame_params) printf '%s' '{"proof":"","params":{"mode":"bw","mem":"host","channels":2,"sockets_per_channel":1,"window":4,"size_bytes":1048576,"chunk_bytes":262144,"iters":2,"warmup":1,"gpus":[0],"verify":true,"reverse":false,"nodelay":true,"sockbuf_bytes":0,"timeout_s":5.0,"transport":"tcp"}}' >"$dir/seed" ;;
    fuzz_frame_go) printf '{"round":3}' >"$dir/seed"; printf '{"round":[[[[1]]]]}' >"$dir/deep" ;;
    fuzz_frame_net_handles) printf '{"handles":[null,"%0256d"]}' 0 >"$dir/seed" ;;
    fuzz_frame_result) printf '%s' '{"side":"server","hostname":"h","tx_bytes_per_s":1.5,"rx_bytes_per_s":0,"round_tx_bytes_per_s":[1,2],"round_rx_bytes_per_s":[],"verified_bytes":0,"warnings":["w"],"buffers":["0"],"channels":[],"workers":[]}' >"$dir/seed" ;;
    fuzz_result_print)  # a result whose text a terminal would act on, one cut inside a character, raw bytes
      printf '%s' '{"side":"server","hostname":"h\u001b[2J","tx_bytes_per_s":1,"rx_bytes_per_s":0,"round_tx_bytes_per_s":[1],"round_rx_bytes_per_s":[],"verified_bytes":0,"warnings":["\u00e9\u009b"],"buffers":[],"channels":[],"workers":[]}' >"$dir/seed"
      printf '{"side":"\xc3' >"$dir/cut"; printf '{"warnings":["\xff\x1b[2J"]}' >"$dir/raw" ;;
    fuzz_frame_challenge) printf '{"nonce":"00","auth":"none","session":"s1"}' >"$dir/seed" ;;
    fuzz_frame_rendezvous) printf '["bench","nccl"]' >"$dir/seed"; printf '{"a":[' >"$dir/junk" ;;
  esac
  echo "$dir"
}
failed=()
for t in "${targets[@]}"; do
  corpus=$(seeds "$t")
  echo "== $t for ${SECONDS_EACH}s"
  if ! "$BUILD/fuzz/$t" -max_total_time="$SECONDS_EACH" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$BUILD/fuzz/artifacts/$t-" -print_final_stats=1 "$corpus" 2>"$BUILD/fuzz/$t.log"; then
    tail -40 "$BUILD/fuzz/$t.log"
    failed+=("$t")
  else
    grep -E 'stat::number_of_executed_units|Done' "$BUILD/fuzz/$t.log" | head -2 || true
  fi
done
if ((${#failed[@]})); then
  echo "fuzzers that found a crash: ${failed[*]} (reproducers in $BUILD/fuzz/artifacts/)" >&2
  exit 1
fi
echo "all ${#targets[@]} fuzzers ran ${SECONDS_EACH}s each without a crash"
