#!/usr/bin/env bash
# Builds the reference device's tests and emulator into OUT (default device/build):
#   bash device/build.sh [OUT] && OUT/test_vectors firmware_protocols/vectors.txt \
#       firmware_protocols/vectors_v3.txt
# The tests (tests/device/) build it this way, so scripts/test.sh covers it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/build}"
mkdir -p "$out"
CC="${CC:-gcc}"
FLAGS=(-std=c99 -pedantic -Wall -Wextra -Werror -O2)
"$CC" "${FLAGS[@]}" -o "$out/test_vectors" "$here"/src/*.c "$here/tests/test_vectors.c"
"$CC" "${FLAGS[@]}" -o "$out/emulator" "$here"/src/*.c "$here/emulator/emulator.c"
