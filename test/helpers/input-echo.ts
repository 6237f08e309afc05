/**
 * A small program that reads console input (docs/token-protocol.md "Console input") without the
 * firmware runtime: it reads the byte count at __input_area, writes each byte to the console
 * (sb to 0x10000000) and exits with the count mod 256. Its input area holds `capacity` bytes.
 */
import { assemble } from '../../riscv/asm.ts';
import { writeElf } from '../../riscv/elf-write.ts';

export const ECHO_INPUT_AREA = 0x80001000;

export function inputEchoElf(capacity = 60): Uint8Array {
  const program = assemble(`
_start:
  li t0, ${ECHO_INPUT_AREA}
  lw t1, 0(t0)
  addi t2, t0, 4
  add t3, t2, t1
  li t4, 0x10000000
loop:
  bgeu t2, t3, done
  lbu a0, 0(t2)
  sb a0, 0(t4)
  addi t2, t2, 1
  jal zero, loop
done:
  andi a0, t1, 255
  li a7, 93
  ecall`);
  return writeElf({
    entry: program.labels.get('_start')!,
    segments: [
      { vaddr: program.origin, data: program.bytes, flags: 5 },
      { vaddr: ECHO_INPUT_AREA, data: new Uint8Array(0), memsz: 4 + capacity, flags: 6 },
    ],
    symbols: [{ name: '__input_area', value: ECHO_INPUT_AREA }, { name: '__input_size', value: 4 + capacity }],
  });
}
