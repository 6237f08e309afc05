/**
 * ISA test groups `mul` (MUL/MULH/MULHSU/MULHU), `div` (DIV/DIVU/REM/REMU) and `zba`
 * (SH1ADD/SH2ADD/SH3ADD): register-register operations on signed and unsigned extremes, the
 * spec's division-by-zero and overflow results, wraparound, and register aliasing.
 * Expected values: ref.ts (BigInt products, truncating quotients, the spec's special cases).
 */
import type { Check, TestGroup } from './program.ts';
import { REF, hx } from './ref.ts';

const INT_MIN = 0x80000000n;
const INT_MAX = 0x7fffffffn;
const ALL1 = 0xffffffffn;

function rCheck(op: string, a: bigint, b: bigint, note = ''): Check {
  return {
    desc: `${op} ${hx(a)}, ${hx(b)}${note}`,
    asm: () => [`li a1, ${hx(a)}`, `li a2, ${hx(b)}`, `${op} a3, a1, a2`],
    expected: REF[op](a, b),
  };
}

/** rd = rs1 = rs2 = a. */
function squareCheck(op: string, a: bigint): Check {
  return { desc: `${op} a3, a3, a3 with a3 = ${hx(a)}`, asm: () => [`li a3, ${hx(a)}`, `${op} a3, a3, a3`], expected: REF[op](a, a) };
}

const MUL_PAIRS: [bigint, bigint][] = [
  [0n, ALL1], [1n, ALL1], [ALL1, ALL1], [INT_MIN, INT_MIN], [INT_MIN, ALL1], [INT_MIN, INT_MAX],
  [INT_MAX, INT_MAX], [ALL1, INT_MIN], [0x10000n, 0x10000n], [0xffffn, 0xffffn],
  [0x12345678n, 0xfedcba98n], [0xfffffffen, INT_MAX], [INT_MAX, ALL1],
];

export const mulGroup: TestGroup = {
  name: 'mul',
  summary: 'mul/mulh/mulhsu/mulhu on signed and unsigned extremes',
  covers: ['mul', 'mulh', 'mulhsu', 'mulhu'],
  checks: [
    ...['mul', 'mulh', 'mulhsu', 'mulhu'].flatMap((op) => MUL_PAIRS.map(([a, b]) => rCheck(op, a, b))),
    ...['mul', 'mulh', 'mulhsu', 'mulhu'].map((op) => squareCheck(op, INT_MIN)),
  ],
};

const DIV_PAIRS: [bigint, bigint, string][] = [
  [20n, 6n, ''], [-20n, 6n, ''], [20n, -6n, ''], [-20n, -6n, ''],
  [7n, 0n, ' (division by zero)'], [-7n, 0n, ' (division by zero)'], [0n, 0n, ' (division by zero)'],
  [INT_MIN, ALL1, ' (INT_MIN / -1 overflow)'], [INT_MIN, 1n, ''], [INT_MIN, INT_MIN, ''],
  [ALL1, INT_MIN, ''], [ALL1, 2n, ''], [1n, ALL1, ''], [0x80000001n, INT_MAX, ''],
];

export const divGroup: TestGroup = {
  name: 'div',
  summary: 'div/divu/rem/remu: signs, truncation toward zero, division by zero, INT_MIN / -1',
  covers: ['div', 'divu', 'rem', 'remu'],
  checks: [
    ...['div', 'divu', 'rem', 'remu'].flatMap((op) => DIV_PAIRS.map(([a, b, note]) => rCheck(op, a, b, note))),
    ...['div', 'divu', 'rem', 'remu'].map((op) => squareCheck(op, ALL1)),
  ],
};

const ZBA_PAIRS: [bigint, bigint][] = [
  [0n, 0n], [1n, 2n], [INT_MAX, 1n], [INT_MIN, 0n], [ALL1, ALL1], [0x40000000n, 0x40000000n],
  [0x20000000n, 0xe0000000n], [0x12345678n, 0x9abcdef0n], [ALL1, 0n],
];

export const zbaGroup: TestGroup = {
  name: 'zba',
  summary: 'sh1add/sh2add/sh3add incl. overflow wraparound, x0 operands and aliasing',
  covers: ['sh1add', 'sh2add', 'sh3add'],
  checks: [
    ...['sh1add', 'sh2add', 'sh3add'].flatMap((op) => ZBA_PAIRS.map(([a, b]) => rCheck(op, a, b))),
    ...['sh1add', 'sh2add', 'sh3add'].map((op) => squareCheck(op, 0x30000001n)),
    { desc: 'sh2add a3, zero, a2 (rs1 = x0)', asm: () => ['li a2, 0x1234', 'sh2add a3, zero, a2'], expected: REF.sh2add(0n, 0x1234n) },
    { desc: 'sh3add a3, a1, zero (rs2 = x0)', asm: () => ['li a1, 0x1234', 'sh3add a3, a1, zero'], expected: REF.sh3add(0x1234n, 0n) },
  ],
};
