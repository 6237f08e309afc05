/**
 * The firmware bignum library (firmware/lib/bignum.c) through its service
 * (firmware/services/bignum.c, src/bignum/service.ts) on the golden RV32 emulator, against
 * JavaScript BigInt: fast-check operands (fixed seeds) of random lengths up to 4,096 bits (8,192
 * for add/sub and dividends), weighted toward edge limbs (0, 1, 0x7fffffff, 0x80000000,
 * 0xffffffff), every op and its result form (normalized, no negative zero); division by zero and
 * bad requests give their exit codes and leave the area unchanged; the bigfact demo's console
 * equals a BigInt computation of the same numbers. The images that link the library divide each
 * quotient once (no rem/remu in its functions) and convert to decimal without dividing.
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  BIGNUM_EXIT, BIGNUM_OPS, BN_MAX_LIMBS, BignumService, encodeRequest, operandOf, valueOf,
  type BignumOp, type DecodedNumber, type RawOperand,
} from '../src/bignum/service.ts';
import { ChipcError } from '../src/util/errors.ts';
import { divisionsByFunction } from './helpers/elf-divisions.ts';

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'firmware');
const SERVICE_ELF = new Uint8Array(fs.readFileSync(path.join(FIXTURES, 'bignum.elf')));

// ---------------------------------------------------------------------------------------------
// BigInt reference semantics.

function truncDivmod(a: bigint, b: bigint): [bigint, bigint] {
  return [a / b, a % b]; // BigInt division truncates toward zero, as C does
}

function floorDivmod(a: bigint, b: bigint): [bigint, bigint] {
  let q = a / b;
  if (a % b !== 0n && (a < 0n) !== (b < 0n)) q -= 1n;
  return [q, a - q * b];
}

const cmp = (a: bigint, b: bigint): bigint => (a < b ? -1n : a > b ? 1n : 0n);

/** The expected result numbers of op on (a, b) (values only; usub is checked separately). */
function reference(op: BignumOp, a: bigint, b: bigint): bigint[] {
  switch (op) {
    case 'uadd': case 'add': return [a + b];
    case 'sub': return [a - b];
    case 'umul': case 'mul': return [a * b];
    case 'udivmod': case 'divmod': return truncDivmod(a, b);
    case 'fdivmod': return floorDivmod(a, b);
    case 'ucmp': case 'cmp': return [cmp(a, b)];
    default: throw new Error(`no reference for ${op}`);
  }
}

/** The form every result number must have: len = limbs, no zero top limb, zero is never negative. */
function expectNormalized(n: DecodedNumber): void {
  expect(n.limbs.length).toBe(n.len);
  if (n.len > 0) expect(n.limbs[n.len - 1]).not.toBe(0);
  else expect(n.neg).toBe(0);
}

// ---------------------------------------------------------------------------------------------
// Operand generators.

const SPECIAL_LIMBS = [0, 1, 2, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff];
const limbArb = fc.oneof(
  { arbitrary: fc.integer({ min: 0, max: 0xffffffff }), weight: 3 },
  { arbitrary: fc.constantFrom(...SPECIAL_LIMBS), weight: 2 },
);

/** Magnitudes of up to maxLimbs limbs: random lengths, full lengths, and structured edge values. */
function magnitudeArb(maxLimbs: number): fc.Arbitrary<bigint> {
  const ofLength = (min: number) => fc.integer({ min, max: maxLimbs })
    .chain((n) => fc.array(limbArb, { minLength: n, maxLength: n }))
    .map((limbs) => valueOf(0, limbs));
  const k = fc.integer({ min: 0, max: maxLimbs - 1 });
  return fc.oneof(
    { arbitrary: ofLength(0), weight: 4 },
    { arbitrary: ofLength(maxLimbs), weight: 2 },
    { arbitrary: fc.constantFrom(0n, 1n, 0xffffffffn, 1n << 32n), weight: 1 },
    { arbitrary: k.map((i) => 1n << BigInt(32 * i + 31)), weight: 1 }, // INT_MIN-like: top bit alone
    { arbitrary: k.map((i) => (1n << BigInt(32 * (i + 1))) - 1n), weight: 1 }, // all-ones limbs
  );
}

const signed = (m: fc.Arbitrary<bigint>) => fc.tuple(m, fc.boolean()).map(([v, s]) => (s ? -v : v));

/** Nonzero divisors of up to maxLimbs limbs, often with top limb 1 or 0xffffffff. */
function divisorArb(maxLimbs: number): fc.Arbitrary<bigint> {
  const topped = fc.tuple(magnitudeArb(maxLimbs - 1), fc.constantFrom(1n, 0xffffffffn, 0x80000000n))
    .map(([low, top]) => (top << BigInt(32 * Math.max(1, Math.ceil(low.toString(2).length / 32)))) | low);
  return fc.oneof(
    { arbitrary: magnitudeArb(maxLimbs).filter((v) => v !== 0n), weight: 3 },
    { arbitrary: topped, weight: 2 },
    { arbitrary: fc.constantFrom(1n, 2n, 3n, 10n, 0xffffffffn, 1n << 32n, (1n << 64n) - 1n), weight: 1 },
  );
}

/** (a, b) pairs for division: random, a < b, a = b, a = q b + r with small or maximal r. */
function divisionPairArb(dividendLimbs: number, divisorLimbs: number): fc.Arbitrary<[bigint, bigint]> {
  const b = divisorArb(divisorLimbs);
  return fc.oneof(
    { arbitrary: fc.tuple(magnitudeArb(dividendLimbs), b), weight: 3 },
    { arbitrary: b.chain((d) => fc.tuple(magnitudeArb(divisorLimbs), fc.constant(d)).map(([x, d2]) => [x % d2, d2] as [bigint, bigint])), weight: 1 },
    { arbitrary: b.map((d) => [d, d] as [bigint, bigint]), weight: 1 },
    {
      arbitrary: fc.tuple(b, magnitudeArb(Math.max(1, dividendLimbs - divisorLimbs)), fc.constantFrom(0n, 1n, -1n)).map(([d, q, r]) => {
        const rr = r < 0n ? d - 1n : r; // remainder 0, 1 or b - 1
        return [q * d + (rr % d), d] as [bigint, bigint];
      }),
      weight: 2,
    },
  ).filter(([x]) => x.toString(2).length <= 32 * BN_MAX_LIMBS);
}

// ---------------------------------------------------------------------------------------------

let svc: BignumService;
beforeAll(() => {
  svc = BignumService.load(SERVICE_ELF);
});

/** Runs op through the service and checks every result number against BigInt. */
function check(op: BignumOp, a: bigint, b: bigint): void {
  const r = svc.request(op, operandOf(a), operandOf(b));
  const label = `${op}(${a}, ${b})`;
  if (op.includes('div') && b === 0n) {
    expect(r.exitCode, label).toBe(BIGNUM_EXIT.divisionByZero);
    return;
  }
  expect(r.exitCode, label).toBe(BIGNUM_EXIT.ok);
  r.numbers.forEach(expectNormalized);
  if (op === 'usub') {
    const n = Math.max(operandOf(a).limbs.length, operandOf(b).limbs.length);
    const mod = 1n << BigInt(32 * n);
    expect(r.numbers[0]!.neg, label).toBe(a < b ? 1 : 0); // the borrow out
    expect(valueOf(0, r.numbers[0]!.limbs), label).toBe((((a - b) % mod) + mod) % mod);
    return;
  }
  expect(r.numbers.map((n) => n.value), label).toEqual(reference(op, a, b));
}

const RUNS = { cheap: 300, costly: 300 };

describe('bignum service vs BigInt (golden emulator)', () => {
  const addSub = fc.tuple(signed(magnitudeArb(BN_MAX_LIMBS)), signed(magnitudeArb(BN_MAX_LIMBS)));
  const mulPair = fc.tuple(signed(magnitudeArb(128)), signed(magnitudeArb(128)));
  const equalish = signed(magnitudeArb(128)).map((x) => [x, x] as [bigint, bigint]);

  it('add and sub, signed, up to 8,192 bits', () => {
    fc.assert(fc.property(addSub, ([a, b]) => { check('add', a, b); check('sub', a, b); }), { seed: 501, numRuns: RUNS.cheap });
    fc.assert(fc.property(equalish, ([a]) => { check('sub', a, a); check('add', a, -a); }), { seed: 502, numRuns: 30 });
  });

  it('uadd and usub (borrow out, result mod 2^(32 n)), up to 8,192 bits', () => {
    const pair = fc.tuple(magnitudeArb(BN_MAX_LIMBS), magnitudeArb(BN_MAX_LIMBS));
    fc.assert(fc.property(pair, ([a, b]) => { check('uadd', a, b); check('usub', a, b); check('usub', b, a); }), { seed: 503, numRuns: RUNS.cheap });
  });

  it('mul and umul, up to 4,096 x 4,096 bits', () => {
    fc.assert(fc.property(mulPair, ([a, b]) => {
      check('mul', a, b);
      check('umul', a < 0n ? -a : a, b < 0n ? -b : b);
    }), { seed: 504, numRuns: RUNS.costly });
  });

  it('mul of two 8,192-bit numbers (a 16,384-bit product) fits the area', () => {
    const a = (1n << 8192n) - 1n, b = (1n << 8191n) + 12345n;
    check('mul', a, -b);
  });

  it('cmp and ucmp, including equal operands and equal magnitudes of opposite sign', () => {
    const pair = fc.oneof(
      fc.tuple(signed(magnitudeArb(BN_MAX_LIMBS)), signed(magnitudeArb(BN_MAX_LIMBS))),
      equalish,
      signed(magnitudeArb(8)).map((x) => [x, -x] as [bigint, bigint]),
      // equal lengths, differing in one limb only
      fc.tuple(magnitudeArb(64), fc.integer({ min: 0, max: 63 }), fc.boolean()).map(([x, i, neg]) => {
        const y = x ^ (1n << BigInt(32 * i));
        return (neg ? [-x, -y] : [x, y]) as [bigint, bigint];
      }),
    );
    fc.assert(fc.property(pair, ([a, b]) => {
      check('cmp', a, b);
      if (a >= 0n && b >= 0n) check('ucmp', a, b);
    }), { seed: 505, numRuns: RUNS.cheap });
  });

  it('udivmod: dividends up to 8,192 bits, divisors up to 4,096 bits', () => {
    fc.assert(fc.property(divisionPairArb(BN_MAX_LIMBS, 128), ([a, b]) => check('udivmod', a, b)), { seed: 506, numRuns: RUNS.costly });
  });

  it('divmod (truncating) and fdivmod (floor), all sign combinations', () => {
    const arb = fc.tuple(divisionPairArb(BN_MAX_LIMBS, 128), fc.boolean(), fc.boolean());
    fc.assert(fc.property(arb, ([[a, b], sa, sb]) => {
      const x = sa ? -a : a, y = sb ? -b : b;
      check('divmod', x, y);
      check('fdivmod', x, y);
    }), { seed: 507, numRuns: RUNS.costly });
  });

  it('division: every Knuth-D correction path, from structured limbs (dense edge patterns)', () => {
    // Limbs only from {0, 1, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff}: these make the
    // quotient estimate's refinement and the rare add-back step frequent.
    const edgeLimbs = (max: number) => fc.integer({ min: 1, max })
      .chain((n) => fc.array(fc.constantFrom(...SPECIAL_LIMBS.filter((l) => l !== 2)), { minLength: n, maxLength: n }))
      .map((l) => valueOf(0, l));
    const arb = fc.tuple(edgeLimbs(12), edgeLimbs(6)).filter(([, b]) => b !== 0n);
    fc.assert(fc.property(arb, ([a, b]) => { check('udivmod', a, b); check('fdivmod', -a, b); }), { seed: 508, numRuns: 300 });
    // Classic add-back triggers (Knuth's exercise cases, scaled to 32-bit limbs).
    const B = 1n << 32n;
    const cases: [bigint, bigint][] = [
      [0x7fffn * B ** 3n + 0x8000n * B ** 2n, 0x8000n * B + 1n],
      [3n * B ** 3n, 1n * B ** 2n + 0n * B + 3n * B ** 0n],
      [(B - 1n) * B ** 2n + (B - 1n) * B, B * (B - 1n) + (B - 1n)],
      [0x80000000n * B ** 3n, 0x80000000n * B ** 2n + 1n],
      [B ** 4n - 1n, 0x80000000n * B + 1n],
    ];
    for (const [a, b] of cases) { check('udivmod', a, b); check('divmod', -a, b); }
  });

  it('division by zero exits 1 (zero, negative zero, zero limbs) and leaves the area unchanged', () => {
    for (const op of ['udivmod', 'divmod', 'fdivmod'] as const) {
      for (const zero of [{ neg: 0, limbs: [] }, { neg: 1, limbs: [] }, { neg: 0, limbs: [0, 0, 0] }] as RawOperand[]) {
        if (op === 'udivmod' && zero.neg) continue;
        const a = operandOf(-(3n ** 300n));
        const words = encodeRequest(BIGNUM_OPS[op], svc.areaWords, op === 'udivmod' ? operandOf(3n ** 300n) : a, zero);
        const r = svc.request(op, op === 'udivmod' ? operandOf(3n ** 300n) : a, zero);
        expect(r.exitCode).toBe(BIGNUM_EXIT.divisionByZero);
        expect(r.numbers).toEqual([]);
        words.forEach((w, i) => expect(svc.emu.memory.read32(svc.area + 4 * i)).toBe(w));
      }
    }
    expect(() => svc.divmod(5n, 0n)).toThrow(ChipcError);
  });

  it('non-normalized operands (zero top limbs, negative zero) read as their values', () => {
    const r = svc.request('add', { neg: 1, limbs: [] }, { neg: 0, limbs: [5, 0, 0] }); // -0 + 5
    expect(r.exitCode).toBe(0);
    expect(r.numbers[0]).toEqual({ value: 5n, neg: 0, len: 1, limbs: [5] });
    const m = svc.request('mul', { neg: 1, limbs: [0, 0] }, { neg: 1, limbs: [7] }); // (-0) * (-7)
    expect(m.numbers[0]).toEqual({ value: 0n, neg: 0, len: 0, limbs: [] });
    const d = svc.request('divmod', { neg: 1, limbs: [6, 0] }, { neg: 0, limbs: [7, 0, 0, 0] }); // -6 / 7
    expect(d.numbers.map((n) => [n.value, n.neg])).toEqual([[0n, 0], [-6n, 1]]);
    const c = svc.request('cmp', { neg: 1, limbs: [] }, { neg: 0, limbs: [0] }); // -0 vs 0
    expect(c.numbers[0]!.value).toBe(0n);
  });

  it('bad requests exit 2 and leave the area unchanged', () => {
    const one = operandOf(1n);
    const long: RawOperand = { neg: 0, limbs: new Array(BN_MAX_LIMBS + 1).fill(1) };
    const bad: [number, RawOperand, RawOperand, number?][] = [
      [0, one, one], [12, one, one], [0xffffffff, one, one], // unknown ops
      [BIGNUM_OPS.add, { neg: 2, limbs: [1] }, one], // sign word not 0/1
      [BIGNUM_OPS.add, one, { neg: 0xffffffff, limbs: [1] }],
      [BIGNUM_OPS.add, long, one], [BIGNUM_OPS.mul, one, long], // over 8,192 bits
      [BIGNUM_OPS.uadd, operandOf(-1n), one], [BIGNUM_OPS.udivmod, one, operandOf(-3n)], // negative to unsigned
      [BIGNUM_OPS.ucmp, { neg: 1, limbs: [] }, one], // even -0
      [BIGNUM_OPS.mul, operandOf(2n ** 4000n), operandOf(3n ** 2000n), 300], // area too small for the product
      [BIGNUM_OPS.add, one, one, 5], // area smaller than the request itself
    ];
    for (const [op, a, b, areaWords] of bad) {
      const words = encodeRequest(op, areaWords ?? svc.areaWords, a, b);
      const c = svc.emu.call(words.map((w, i) => [svc.area + 4 * i, w] as const));
      expect(c.exitCode, `op ${op}`).toBe(BIGNUM_EXIT.badRequest);
      words.forEach((w, i) => expect(svc.emu.memory.read32(svc.area + 4 * i)).toBe(w));
    }
    // The host refuses the same before sending.
    expect(() => svc.run('add', 1n << 8192n, 1n)).toThrow(/8193 bits/);
    expect(() => svc.run('uadd', -1n, 1n)).toThrow(/non-negative/);
  });

  it('convenience methods agree with BigInt', () => {
    const a = -(7n ** 200n), b = 3n ** 111n + 5n;
    expect(svc.add(a, b)).toBe(a + b);
    expect(svc.sub(a, b)).toBe(a - b);
    expect(svc.mul(a, b)).toBe(a * b);
    expect(svc.cmp(a, b)).toBe(-1);
    expect(svc.divmod(a, b)).toEqual({ q: a / b, r: a % b });
    const [fq, fr] = floorDivmod(a, b);
    expect(svc.fdivmod(a, b)).toEqual({ q: fq, r: fr });
    expect(svc.usub(1n, 2n)).toEqual({ value: 0xffffffffn, borrow: 1 });
  });
});

// ---------------------------------------------------------------------------------------------
// Instruction counts (docs/bignum.md): random full-length operands, one service call each.

/** A random odd full-length n-limb number from a fixed LCG (the top limb's top bit set). */
function fullLength(limbs: number, seed: number): bigint {
  let x = BigInt(seed);
  let v = 0n;
  for (let i = 0; i < limbs; i++) {
    x = (x * 6364136223846793005n + 1442695040888963407n) & ((1n << 64n) - 1n);
    v |= (x >> 32n) << BigInt(32 * i);
  }
  return v | (1n << BigInt(32 * limbs - 1)) | 1n;
}

describe('bignum instruction counts', () => {
  it('multiply n x n bits and divide 2n by n bits, n = 1,024 and 4,096', () => {
    const counts: Record<string, number> = {};
    for (const bits of [1024, 4096]) {
      const n = bits / 32;
      const a = fullLength(n, bits + 1), b = fullLength(n, bits + 2), a2 = fullLength(2 * n, bits + 3);
      const m = svc.request('umul', operandOf(a), operandOf(b));
      expect(m.numbers[0]!.value).toBe(a * b);
      const d = svc.request('udivmod', operandOf(a2), operandOf(b));
      expect(d.numbers.map((x) => x.value)).toEqual([a2 / b, a2 % b]);
      counts[`mul ${bits}`] = m.instructions;
      counts[`div ${2 * bits}/${bits}`] = d.instructions;
    }
    console.log('bignum instruction counts:', JSON.stringify(counts));
    // Schoolbook: about n^2 limb products; the bounds keep the documented figures honest.
    expect(counts['mul 1024']!).toBeLessThan(20_000);
    expect(counts['mul 4096']!).toBeLessThan(300_000);
    expect(counts['div 2048/1024']!).toBeLessThan(30_000);
    expect(counts['div 8192/4096']!).toBeLessThan(400_000);
  });
});

describe('the library divides each quotient once and prints without dividing', () => {
  // A division costs the chip 2 tokens per radix-16 quotient digit (docs/bignum.md "Library"):
  // gcc turns x − (x / d)·d into a second division (remu) unless the quotient is hidden from it,
  // and bnu_to_dec's divisors are constants with reciprocals.
  for (const image of ['bigfact.elf', 'bigfact.linux.elf', 'bignum.elf', 'interp.elf']) {
    it(image, () => {
      const byFn = divisionsByFunction(new Uint8Array(fs.readFileSync(path.join(FIXTURES, image))), /^(bnu?_|udiv_2by1)/);
      expect(byFn.size).toBeGreaterThan(5); // the library is linked and its symbols are named
      for (const [name, divs] of byFn) {
        expect(divs.filter((d) => d.startsWith('rem')), `${image} ${name}`).toEqual([]);
        if (name === 'bnu_to_dec' || name === 'bnu_divmod_1e9') expect(divs, `${image} ${name}`).toEqual([]);
      }
      // bnu_divmod_small divides twice a limb (its two 16-bit halves), once each
      const small = byFn.get('bnu_divmod_small');
      if (small !== undefined) expect(small).toEqual(['divu', 'divu']);
    });
  }
});

// ---------------------------------------------------------------------------------------------
// The bigfact demo.

/** bigfact's console, from BigInt: the same numbers and lines as firmware/demos/bigfact.c. */
// The bigfact demo's console is checked against BigInt in test/firmware.test.ts (DERIVED).
