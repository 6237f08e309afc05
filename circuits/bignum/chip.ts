/**
 * The bignum circuit (issue 5, docs/bignum-unit.md): the RV32 chip — whose bignum unit is bn.mac
 * (src/cpu/mac-unit.ts) — shaped for the bignum service (fixtures/firmware/bignum.elf, built from
 * firmware/lib/bignum.c with its limb loops on the unit): a code RAM sized to the image and the
 * 32 KiB data RAM that holds a request, its scratch and its result. add, sub, mul, divmod (truncating
 * and floor) and cmp on signed and unsigned numbers of up to 8,192 bits run as the firmware's token
 * traces through these layers (src/bignum/service.ts, src/chip/service.ts; bench/bignum-chip.ts).
 * `chipc compile circuits/bignum/chip.ts --target chip-test --report` prints the interface and limits.
 */
import fs from 'node:fs';
import type { CircuitDef, TargetShape } from '../../src/dsl/index.ts';
import path from 'node:path';
import { cpuCircuit } from '../../src/cpu/cpu.ts';
import { programOf } from '../../src/chip/run.ts';
import { BIGNUM_MEM_BYTES, BN_MAX_BITS } from '../../src/bignum/service.ts';
import { PACKAGE_ROOT } from '../../src/util/package-root.ts';

const ELF_PATH = path.join(PACKAGE_ROOT, 'fixtures', 'firmware', 'bignum.elf');
const ELF = fs.readFileSync(ELF_PATH);

/** The bignum chip, its data RAM in banks that fit one layer of `target` (or of chip-test without one). */
function bignumChip(target?: TargetShape): CircuitDef {
  const chip = cpuCircuit(programOf(ELF, BIGNUM_MEM_BYTES, target).chip);
  return { ...chip, meta: { ...chip.meta, name: 'bignum', notes: NOTES } };
}

const NOTES = [
  'bignum unit: bn.mac rd, rs1, rs2 (custom-0, funct3 0, funct7 0): t = rs1*rs2 + rd + C0, rd = t mod 2^32, C0 = t >> 32; bn.mac1 (funct7 1) the same with carry bank C1 (5 tokens each: D, H of C; D, H of rd; N)',
  `bignum service: add, sub, mul, divmod, fdivmod, cmp (signed and unsigned), operands up to ${BN_MAX_BITS.toLocaleString('en-US')} bits, in a ${BIGNUM_MEM_BYTES / 1024} KiB data RAM`,
  'firmware: fixtures/firmware/bignum.elf (a service: loaded once, called per request; docs/bignum.md)',
];

export default { ...bignumChip(), retarget: (t: TargetShape) => bignumChip(t) } satisfies CircuitDef;
