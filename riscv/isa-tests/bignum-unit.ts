/**
 * ISA test group `bn`: the chip's bignum unit, `bn.mac rd, rs1, rs2` and `bn.mac1` (custom-0,
 * docs/bignum-unit.md): t = rs1·rs2 + rd + C over unsigned 32-bit values, rd ← t mod 2^32,
 * C ← ⌊t / 2^32⌋, with C the carry bank C0 (bn.mac) or C1 (bn.mac1). Each check first clears both
 * banks (`bn.mac zero, zero, zero`: t = C, so C ← 0), runs a few instructions, and leaves in a3
 * either the last low word or a bank's carry (read by `li a3, 0; bn.mac a3, zero, zero`, which
 * gives a3 = C and clears it). Extremes: the all-ones operands and carry (t = 2^64 − 1, the largest
 * value), x0 as destination (only C changes), aliasing (rd = rs1 = rs2), a carry chain over three
 * limbs, and two interleaved chains, one per bank (neither disturbs the other). Expected values: a
 * BigInt model of the unit, written here from the definition. Not run under qemu (custom-0 is
 * illegal there): `chipOnly`.
 */
import type { Check, TestGroup } from './program.ts';
import { hx } from './ref.ts';

const ALL1 = 0xffffffffn;
const M32 = 1n << 32n;

/**
 * One bn.mac as (rd register, its value before or null to keep what the previous step left,
 * rs1 value, rs2 value, carry bank — 0 unless given).
 */
interface Mac { rd: 'a3' | 'zero'; acc: bigint | null; a: bigint; b: bigint; bank?: 0 | 1 }

const mnemonic = (bank: 0 | 1 | undefined) => (bank === 1 ? 'bn.mac1' : 'bn.mac');

/** BigInt model: the low word of the last mac into a3, and the final carries. */
function model(macs: Mac[]): { a3: bigint; carry: [bigint, bigint] } {
  const carry: [bigint, bigint] = [0n, 0n];
  let a3 = 0n;
  for (const m of macs) {
    const acc = m.rd === 'zero' ? 0n : (m.acc ?? a3);
    const b = m.bank ?? 0;
    const t = m.a * m.b + acc + carry[b];
    if (m.rd === 'a3') a3 = t % M32;
    carry[b] = t / M32;
  }
  return { a3, carry };
}

function macCheck(desc: string, macs: Mac[], read: 'low' | 'carry' | 'carry1'): Check {
  const m = model(macs);
  return {
    desc: `${desc} → ${read === 'low' ? 'low word' : read === 'carry' ? 'carry' : 'carry of bank 1'}`,
    asm: () => [
      'bn.mac zero, zero, zero', 'bn.mac1 zero, zero, zero',
      ...macs.flatMap((x) => [
        `li a1, ${hx(x.a)}`, `li a2, ${hx(x.b)}`,
        ...(x.rd === 'a3' && x.acc !== null ? [`li a3, ${hx(x.acc)}`] : []),
        `${mnemonic(x.bank)} ${x.rd}, a1, a2`,
      ]),
      ...(read === 'low' ? [] : ['li a3, 0', `${mnemonic(read === 'carry1' ? 1 : 0)} a3, zero, zero`]),
    ],
    expected: read === 'low' ? m.a3 : m.carry[read === 'carry1' ? 1 : 0],
  };
}

const one = (a: bigint, b: bigint, acc: bigint): Mac[] => [{ rd: 'a3', acc, a, b }];
const PAIRS: [string, Mac[]][] = [
  ['0·0 + 0', one(0n, 0n, 0n)],
  ['1·1 + 0', one(1n, 1n, 0n)],
  ['0x12345678·0xfedcba98 + 0x9abcdef0', one(0x12345678n, 0xfedcba98n, 0x9abcdef0n)],
  ['all-ones · all-ones + all-ones', one(ALL1, ALL1, ALL1)],
  ['0x80000000 · 2 + 0 (low word 0, carry 1)', one(0x80000000n, 2n, 0n)],
  ['0 · x + all-ones (the accumulator alone)', one(0n, 0x5555n, ALL1)],
  // With the carry left at all-ones by the first mac, the second reaches t = 2^64 − 1.
  ['2^64 − 1: carry all-ones in, all-ones operands and accumulator', [
    { rd: 'a3', acc: ALL1, a: ALL1, b: ALL1 }, { rd: 'a3', acc: ALL1, a: ALL1, b: ALL1 }]],
  ['a carry chain over three limbs (limb × 0xfffffffb)', [
    { rd: 'a3', acc: 0x11111111n, a: 0xfffffffbn, b: 0xdeadbeefn },
    { rd: 'a3', acc: 0x22222222n, a: 0xfffffffbn, b: 0xcafebaben },
    { rd: 'a3', acc: 0x33333333n, a: 0xfffffffbn, b: 0x8badf00dn }]],
  ['rd = x0: only the carry changes, then it is added', [
    { rd: 'zero', acc: null, a: 0xfedcba98n, b: 0x89abcdefn }, { rd: 'a3', acc: 7n, a: 0n, b: 0n }]],
];

/** Two chains interleaved, one per bank: each sees only its own carry. */
const INTERLEAVED: Mac[] = [
  { rd: 'a3', acc: 0x11111111n, a: 0xfffffffbn, b: 0xdeadbeefn, bank: 0 },
  { rd: 'a3', acc: 0x99999999n, a: 0xffffffffn, b: 0xfffffffen, bank: 1 },
  { rd: 'a3', acc: 0x22222222n, a: 0xfffffffbn, b: 0xcafebaben, bank: 0 },
  { rd: 'a3', acc: 0xaaaaaaaan, a: 0xffffffffn, b: 0xfffffffdn, bank: 1 },
  { rd: 'a3', acc: 0x33333333n, a: 0xfffffffbn, b: 0x8badf00dn, bank: 0 },
];

export const bnGroup: TestGroup = {
  name: 'bn',
  summary: 'bn.mac / bn.mac1 (the chip\'s bignum unit, custom-0): low word and carry at the extremes, carry chains, two banks interleaved, rd = x0, aliasing',
  covers: ['bn.mac', 'bn.mac1'],
  chipOnly: true,
  checks: [
    ...PAIRS.flatMap(([d, macs]) => [macCheck(d, macs, 'low'), macCheck(d, macs, 'carry')]),
    ...PAIRS.slice(2, 5).flatMap(([d, macs]) => {
      const on1 = macs.map((x) => ({ ...x, bank: 1 as const }));
      return [macCheck(`bn.mac1: ${d}`, on1, 'low'), macCheck(`bn.mac1: ${d}`, on1, 'carry1')];
    }),
    macCheck('two chains interleaved, bank 0 and bank 1', INTERLEAVED, 'low'),
    macCheck('two chains interleaved, bank 0 and bank 1', INTERLEAVED, 'carry'),
    macCheck('two chains interleaved, bank 0 and bank 1', INTERLEAVED, 'carry1'),
    {
      desc: 'bn.mac a3, a3, a3 with a3 = 0xfffffffe (rd = rs1 = rs2) → low word',
      asm: () => ['bn.mac zero, zero, zero', 'li a3, 0xfffffffe', 'bn.mac a3, a3, a3'],
      expected: (0xfffffffen * 0xfffffffen + 0xfffffffen) % M32,
    },
    {
      desc: 'the carry clears itself: bn.mac zero, zero, zero twice leaves 0',
      asm: () => ['li a1, -1', 'bn.mac a1, a1, a1', 'bn.mac zero, zero, zero', 'li a3, 0', 'bn.mac a3, zero, zero'],
      expected: 0n,
    },
  ],
};
