#!/bin/bash
# Packs what a GPU machine needs into one ignored folder (default .device/pair) for the
# device tool's `carry`: stripped p2pscope and test_gpu from BUILD (built first, CUDA
# and NCCL on) and shared/reference/torch_sendrecv.py when it is beside the checkout.
# Then, in one device call (nvidia-h200-x2):
#   bash bench/gpu_pair_session.sh .device/pair $OUT/pair
# Usage: tools/pack-device-dir.sh [DIR]     (BUILD=build by default)
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-.device/pair}
BUILD=${BUILD:-build}
grep -q "P2PSCOPE_HAVE_CUDA:INTERNAL=ON\|P2PSCOPE_WITH_CUDA" "$BUILD/CMakeCache.txt" 2>/dev/null ||
  { echo "no configured build in $BUILD (make build first)" >&2; exit 2; }
cmake --build "$BUILD" --target p2pscope test_gpu
mkdir -p "$DIR"
for b in p2pscope tests/test_gpu; do strip -o "$DIR/$(basename "$b")" "$BUILD/$b"; done
ref=../shared/reference/torch_sendrecv.py
[ -f "$ref" ] && cp "$ref" "$DIR/" || echo "note: $ref not found; the torch comparison will be skipped" >&2
du -sh "$DIR"
"$DIR/p2pscope" --version
