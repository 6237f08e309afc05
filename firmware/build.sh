#!/usr/bin/env bash
# Builds every demo in firmware/demos into OUTDIR (default: fixtures/firmware) as two images:
#   <name>.elf        console = sb to the MMIO byte 0x10000000 (the chipc CPU, golden emulator)
#   <name>.linux.elf  console = Linux write syscall (qemu-riscv32; the golden emulator too)
# The chip images (.elf and services) are built with -DCHIPC_BN_UNIT: firmware/lib/bignum.c then
# runs its limb loops on the chip's bignum unit (bn.mac, custom-0), which qemu-user does not have;
# the .linux.elf images keep the portable C loops.
# and every service in firmware/services (re-entrant request handlers, docs/firmware.md) as
#   <name>.elf        linked with runtime/link-service.ld (mmio console only),
# and the interpreter firmware/interp/*.c (docs/firmware.md "The interpreter") as interp.elf and
# interp.linux.elf: built with -Os (its code must fit the 16 KiB code region), a 2 KiB console input
# area and a 2 KiB stack.
# The libraries in firmware/lib (*.c) are linked into every image (--gc-sections drops what is unused).
# The build is deterministic: fixed flags, relative source paths, no debug info, no build id,
# no .comment, so the same compiler version gives byte-identical images on any machine/path.
# Usage: firmware/build.sh [OUTDIR]        (CROSS=prefix overrides riscv64-unknown-elf-)
set -euo pipefail

CROSS="${CROSS:-riscv64-unknown-elf-}"
CC="${CROSS}gcc"
if ! command -v "$CC" >/dev/null 2>&1; then
  echo "firmware/build.sh: cross compiler '$CC' not found on PATH." >&2
  echo "  Debian/Ubuntu: apt-get install -y --no-install-recommends gcc-riscv64-unknown-elf binutils-riscv64-unknown-elf" >&2
  exit 1
fi

FW_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$FW_DIR/.." && pwd)"
OUT_ARG="${1:-$REPO_DIR/fixtures/firmware}"
mkdir -p "$OUT_ARG"
OUT_DIR="$(cd "$OUT_ARG" && pwd)"

# Compile for rv32im_zba; libgcc (for __udivdi3 and friends) must come from the rv32im/ilp32
# multilib, which an -march with _zba does not select, so it is named explicitly.
LIBGCC="$("$CC" -march=rv32im -mabi=ilp32 -print-libgcc-file-name)"
case "$LIBGCC" in
  */rv32im/ilp32/*) ;;
  *) echo "firmware/build.sh: no rv32im/ilp32 libgcc multilib (got '$LIBGCC')." >&2; exit 1 ;;
esac

CFLAGS=(
  -march=rv32im_zba -mabi=ilp32 -O2 -std=c11
  -ffreestanding -fno-builtin -fno-tree-loop-distribute-patterns
  -ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables -fno-ident
  -ffile-prefix-map="$FW_DIR"=. -Wall -Wextra -Werror -Iruntime -Ilib
)
LDFLAGS=(
  -nostdlib -nostartfiles -static -T runtime/link.ld
  -Wl,--build-id=none -Wl,--strip-debug -Wl,--gc-sections -Wl,--no-warn-rwx-segments
)

cd "$FW_DIR"   # relative paths only from here on, so no absolute path reaches an image
demos=()
for src in demos/*.c; do demos+=("$(basename "$src" .c)"); done
libs=()
for src in lib/*.c; do [ -e "$src" ] && libs+=("$src"); done

for name in "${demos[@]}"; do
  for variant in mmio linux; do
    if [ "$variant" = mmio ]; then out="$OUT_DIR/$name.elf"; def=(-DCHIPC_BN_UNIT); else out="$OUT_DIR/$name.linux.elf"; def=(-DCHIPC_CONSOLE_LINUX); fi
    "$CC" "${CFLAGS[@]}" "${def[@]}" "${LDFLAGS[@]}" runtime/start.S runtime/runtime.c "${libs[@]}" "demos/$name.c" "$LIBGCC" -o "$out"
    chmod 0755 "$out"   # qemu-user refuses a non-executable file
  done
  echo "built $name.elf $name.linux.elf"
done

SERVICE_LDFLAGS=("${LDFLAGS[@]/runtime\/link.ld/runtime/link-service.ld}")
for src in services/*.c; do
  [ -e "$src" ] || continue
  name="$(basename "$src" .c)"
  out="$OUT_DIR/$name.elf"
  "$CC" "${CFLAGS[@]}" -DCHIPC_BN_UNIT "${SERVICE_LDFLAGS[@]}" runtime/start.S runtime/runtime.c "${libs[@]}" "$src" "$LIBGCC" -o "$out"
  chmod 0755 "$out"
  echo "built $name.elf (service)"
done

INTERP_CFLAGS=("${CFLAGS[@]/#-O2/-Os}")
INTERP_LDFLAGS=("${LDFLAGS[@]}" -Wl,--defsym=__input_size=2048 -Wl,--defsym=__stack_size=2048)
interp_srcs=(interp/*.c)
for variant in mmio linux; do
  if [ "$variant" = mmio ]; then out="$OUT_DIR/interp.elf"; def=(-DCHIPC_BN_UNIT); else out="$OUT_DIR/interp.linux.elf"; def=(-DCHIPC_CONSOLE_LINUX); fi
  "$CC" "${INTERP_CFLAGS[@]}" "${def[@]}" "${INTERP_LDFLAGS[@]}" runtime/start.S runtime/runtime.c "${libs[@]}" "${interp_srcs[@]}" "$LIBGCC" -o "$out"
  chmod 0755 "$out"
done
echo "built interp.elf interp.linux.elf"
