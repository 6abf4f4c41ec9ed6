#!/usr/bin/env bash
# Builds the reference firmware for the LM3S6965 (QEMU's lm3s6965evb, a Cortex-M3): the
# unchanged device core (device/src), the portable application (device/firmware) and this
# board's support, one image per device, and prints their sizes:
#   bash device/board/lm3s6965/build.sh [OUT]   ->  OUT/shoe.elf, OUT/shuffler.elf, OUT/tumbler.elf
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
device="$(cd "$here/../.." && pwd)"
out="${1:-$here/build}"
mkdir -p "$out"
CC="${CC:-arm-none-eabi-gcc}"
# No heap: nothing defines _sbrk, so code that calls malloc does not link.
FLAGS=(-std=c99 -pedantic -Wall -Wextra -Werror -Os -g -mcpu=cortex-m3 -mthumb
       -ffunction-sections -fdata-sections -ffreestanding --specs=nano.specs -nostartfiles
       -Wl,--gc-sections -Wl,-T,"$here/lm3s6965.ld")
sources=("$device"/src/frame.c "$device"/src/link.c "$device"/src/msg.c "$device"/src/sha256.c
         "$device"/src/shuffler.c
         "$device"/firmware/*.c "$here"/*.c)
for kind in shoe:1 shuffler:2 tumbler:3; do
    name=${kind%%:*}
    "$CC" "${FLAGS[@]}" -DFW_KIND="${kind##*:}" -o "$out/$name.elf" "${sources[@]}" \
        -Wl,-Map,"$out/$name.map"
done
# flash: code, constants and .data's initial values; RAM: .data, .bss, what a reset keeps
# and the stack reserved (its use is measured at run time by painting: the test port's
# "stack" line, printed by tests/device/test_qemu_rig.py).
for name in shoe shuffler tumbler; do
    arm-none-eabi-size -A "$out/$name.elf" | awk -v n="$name" '
        $1 == ".text" { text = $2 } $1 == ".data" { data = $2 } $1 == ".bss" { bss = $2 }
        $1 == ".noinit" { noinit = $2 } $1 == ".stack" { stack = $2 }
        END { printf "%s: flash %d bytes, RAM %d bytes (.data %d, .bss %d, kept across resets %d, stack %d reserved)\n",
              n, text + data, data + bss + noinit + stack, data, bss, noinit, stack }'
done
