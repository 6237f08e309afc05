/**
 * The radix-16 division step (src/cpu/div.ts): (a) an independent BigInt reference of
 * the step and of the 8-step recurrence equals BigInt division (DIVU / REMU, by-zero included);
 * (b) the IR interpreter of one divStep equals the reference on valid (R < B) and on arbitrary
 * inputs; (c) 8 chained divSteps in the interpreter give exactly DIVU / REMU, and with absWord /
 * signedResult exactly DIV / REM; (d) negWord / absWord / nibble equal BigInt; (e) the compiled
 * demo (circuits/rv32im/div-demo.ts) equals the interpreter bit for bit at every placed signal,
 * in f32 and bf16, and emits what the reference says; (f) bad inputs throw ChipcError.
 * Every case is one token of a test circuit whose token fields carry the operands.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { buildCircuit } from '../src/dsl/load.ts';
import { defineCircuit, type CircuitBuilder, type Sig } from '../src/dsl/index.ts';
import { Interpreter } from '../src/ir/interpret.ts';
import { compileCircuit } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { checkCompiled } from '../src/verify/check.ts';
import { Prng } from '../src/model/random-weights.ts';
import { ChipcError } from '../src/util/errors.ts';
import { constWord, eq32, wordFromNibbles, wordFromTokens, type Word } from '../src/cpu/alu.ts';
import { absWord, divStep, negWord, nibble, signedResult } from '../src/cpu/div.ts';
import divDemo, { BOS, VOCAB, divisorOf, nibbleOf, remainderOf } from '../circuits/rv32im/div-demo.ts';

const M32 = (1n << 32n) - 1n;

// ── the reference (BigInt, independent of the circuit) ──────────────────────────────────────

/** One step: X = 16R + nib, q = min(15, ⌊X/B⌋) (15 for B = 0), rem = (X − q·B) mod 2^32. */
function stepRef(R: bigint, nib: bigint, B: bigint): { q: bigint; rem: bigint } {
  const X = 16n * R + nib;
  let q = B === 0n ? 15n : X / B;
  if (q > 15n) q = 15n;
  return { q, rem: (X - q * B) & M32 };
}

/** The 8-step recurrence: R_0 = 0, step s takes nibble 7 − s of a; Q = Σ q_s·16^(7−s). */
function divuSteps(a: bigint, b: bigint): { Q: bigint; R: bigint; q: bigint[]; rems: bigint[] } {
  let R = 0n;
  let Q = 0n;
  const q: bigint[] = [];
  const rems: bigint[] = [];
  for (let s = 0; s < 8; s++) {
    const r = stepRef(R, (a >> BigInt(4 * (7 - s))) & 15n, b);
    q.push(r.q);
    rems.push(r.rem);
    Q = 16n * Q + r.q;
    R = r.rem;
  }
  return { Q, R, q, rems };
}

/** RISC-V DIVU / REMU (b = 0: all ones, a). */
function divuRef(a: bigint, b: bigint): { q: bigint; r: bigint } {
  return b === 0n ? { q: M32, r: a } : { q: a / b, r: a % b };
}

/** RISC-V DIV / REM on uint32 bit patterns (BigInt division truncates toward zero). */
function divRef(a: bigint, b: bigint): { q: bigint; r: bigint } {
  const sa = a >= 1n << 31n ? a - (1n << 32n) : a;
  const sb = b >= 1n << 31n ? b - (1n << 32n) : b;
  if (sb === 0n) return { q: M32, r: a };
  if (sa === -(1n << 31n) && sb === -1n) return { q: a, r: 0n };
  return { q: (sa / sb) & M32, r: (sa % sb) & M32 };
}

const EDGE = [0, 1, 2, 3, 15, 16, 0xff, 0x100, 0xffff, 0x10000, 0x7fffffff, 0x80000000, 0x80000001, 0xfffffffe, 0xffffffff, 0x12345678];

/** All edge pairs, then powers of two, a < b, and random pairs with random bit lengths. */
function pairCases(n: number, seed: number): [number, number][] {
  const out: [number, number][] = [];
  for (const a of EDGE) for (const b of EDGE) out.push([a, b]);
  const rng = new Prng(seed);
  const rnd = (): number => rng.nextU32() >>> (rng.nextU32() % 32);
  while (out.length < n) {
    const k = out.length % 4;
    if (k === 0) out.push([rnd(), 2 ** (rng.nextU32() % 32)]);
    else if (k === 1) { const b = rnd() || 1; out.push([rng.nextU32() % b, b]); }
    else out.push([rng.nextU32(), rnd()]);
  }
  return out;
}

function wordValue(values: Int32Array, w: Word): bigint {
  return w.reduce((acc, byte, k) => acc | (BigInt(values[byte.id]!) << BigInt(8 * k)), 0n);
}

describe('reference: the 8-step radix-16 recurrence = BigInt division', () => {
  it('Σ q_s·16^(7−s) = ⌊a/b⌋ and R_8 = a mod b; b = 0 gives RISC-V DIVU/REMU by zero', () => {
    const check = (a: bigint, b: bigint): void => {
      const { Q, R, q, rems } = divuSteps(a, b);
      const want = divuRef(a, b);
      expect([Q, R]).toEqual([want.q, want.r]);
      if (b !== 0n) for (let s = 0; s < 8; s++) expect(rems[s]! < b && q[s]! <= 15n).toBe(true);
    };
    for (const [a, b] of pairCases(600, 1)) check(BigInt(a), BigInt(b));
    fc.assert(fc.property(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 31 }),
      (a, b, sh) => check(BigInt(a), BigInt(b >>> sh))), { numRuns: 2000, seed: 7 });
  });

  it('the reference is not vacuous: a step saturates at 15 when R ≥ B', () => {
    expect(stepRef(5n, 3n, 5n)).toEqual({ q: 15n, rem: 83n - 75n });
    expect(stepRef(4n, 15n, 5n)).toEqual({ q: 15n, rem: 4n }); // 79 = 15·5 + 4
    expect(divuSteps(100n, 7n).Q).toBe(14n);
  });
});

// ── one step in the interpreter ─────────────────────────────────────────────────────────────

/** A circuit whose token t carries (R, nib, B) = cases[t] as nibble token fields, running one divStep. */
function stepCircuit(cases: [number, number, number][]): { q: Sig[]; rem: Word[]; steps: ReturnType<Interpreter['run']> } {
  const q: Sig[] = [];
  const rem: Word[] = [];
  const ir = buildCircuit(defineCircuit({ name: 'div-step', vocab: Math.max(cases.length, 16) }, (c) => {
    const at = (t: number): [number, number, number] => cases[t % cases.length]!;
    const R = wordFromTokens(c, 'R', (t) => at(t)[0]);
    const nib = c.tokenField('nib', (t) => at(t)[1], [0, 15]);
    const B = wordFromTokens(c, 'B', (t) => at(t)[2]);
    const r = divStep(c, R, nib, B);
    q.push(r.q);
    rem.push(r.rem);
    c.emit([r.q]);
  }));
  return { q, rem, steps: new Interpreter(ir).run(cases.map((_, t) => t)) };
}

function checkSteps(cases: [number, number, number][]): number {
  const { q, rem, steps } = stepCircuit(cases);
  cases.forEach(([R, nib, B], t) => {
    const want = stepRef(BigInt(R), BigInt(nib), BigInt(B));
    const got = { q: BigInt(steps[t]!.values[q[0]!.id]!), rem: wordValue(steps[t]!.values, rem[0]!) };
    if (got.q !== want.q || got.rem !== want.rem) {
      throw new Error(`divStep(R=0x${R.toString(16)}, nib=${nib}, B=0x${B.toString(16)}): got q=${got.q} rem=0x${got.rem.toString(16)}, want q=${want.q} rem=0x${want.rem.toString(16)}`);
    }
  });
  return cases.length;
}

describe('divStep in the IR interpreter = the reference', () => {
  it('valid steps (R < B): edge divisors and fast-check random (R, nib, B)', () => {
    const cases: [number, number, number][] = [];
    for (const B of EDGE.filter((b) => b > 0)) for (const nib of [0, 7, 15]) for (const R of [0, B - 1, Math.floor(B / 2)]) cases.push([R, nib, B]);
    const arb = fc.tuple(fc.integer({ min: 1, max: 0xffffffff }), fc.integer({ min: 0, max: 31 }), fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 15 }))
      .map(([b0, sh, r0, nib]): [number, number, number] => { const B = (b0 >>> sh) || 1; return [r0 % B, nib, B]; });
    cases.push(...fc.sample(arb, { numRuns: 400, seed: 3 }));
    expect(checkSteps(cases)).toBe(cases.length);
    // every quotient digit occurs
    const qs = new Set(cases.map(([R, n, B]) => stepRef(BigInt(R), BigInt(n), BigInt(B)).q));
    expect(qs.size).toBe(16);
  });

  it('arbitrary inputs (R ≥ B, B = 0): q = min(15, ⌊X/B⌋), rem = (X − q·B) mod 2^32', () => {
    const arb = fc.tuple(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 15 }), fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 31 }))
      .map(([R, nib, b0, sh]): [number, number, number] => [R, nib, b0 >>> sh]);
    const cases: [number, number, number][] = [[0xffffffff, 15, 0], [0xffffffff, 15, 1], [0, 0, 0], [0x12345678, 9, 0], [0xffffffff, 15, 0xffffffff]];
    cases.push(...fc.sample(arb, { numRuns: 200, seed: 4 }));
    expect(checkSteps(cases)).toBe(cases.length);
    // a violated precondition saturates: q ≠ ⌊X/B⌋ there (the precondition matters)
    expect(stepRef(0xffffffffn, 15n, 1n).q).toBe(15n);
  });
});

// ── 8 chained steps: DIVU / REMU, and DIV / REM with the sign helpers ───────────────────────

interface ChainOut { uq: Word; ur: Word; sq: Word; sr: Word; qs: Sig[]; rems: Word[] }

/** 8 divSteps on (a, b) = pairs[t] (unsigned), and on (|a|, |b|) followed by signedResult. */
function chainCircuit(pairs: [number, number][]): { o: ChainOut; steps: ReturnType<Interpreter['run']> } {
  const o: ChainOut = { uq: [], ur: [], sq: [], sr: [], qs: [], rems: [] };
  const chain = (c: CircuitBuilder, A: Word, B: Word, tag: string, keep: boolean): { Q: Word; R: Word } => {
    let R = constWord(c, 0);
    const digits: Sig[] = [];
    for (let s = 0; s < 8; s++) {
      const r = divStep(c, R, nibble(c, A, 7 - s), B, `${tag}${s}`);
      digits.unshift(r.q);
      R = r.rem;
      if (keep) { o.qs.push(r.q); o.rems.push(r.rem); }
    }
    return { Q: wordFromNibbles(c, digits), R };
  };
  const ir = buildCircuit(defineCircuit({ name: 'div-chain', vocab: Math.max(pairs.length, 16) }, (c) => {
    const A = wordFromTokens(c, 'a', (t) => pairs[t % pairs.length]![0]);
    const B = wordFromTokens(c, 'b', (t) => pairs[t % pairs.length]![1]);
    const u = chain(c, A, B, 'u', true);
    o.uq = u.Q;
    o.ur = u.R;
    const aa = absWord(c, A, 'absa');
    const ab = absWord(c, B, 'absb');
    const s = chain(c, aa.mag, ab.mag, 's', false);
    const res = signedResult(c, s.Q, s.R, aa.neg, ab.neg, eq32(c, B, constWord(c, 0)));
    o.sq = res.quot;
    o.sr = res.rem;
    c.emit([o.qs[7]!]);
  }));
  return { o, steps: new Interpreter(ir).run(pairs.map((_, t) => t)) };
}

function checkChain(pairs: [number, number][]): void {
  const { o, steps } = chainCircuit(pairs);
  pairs.forEach(([a, b], t) => {
    const v = steps[t]!.values;
    const A = BigInt(a);
    const B = BigInt(b);
    const ref = divuSteps(A, B);
    const what = `(0x${a.toString(16)}, 0x${b.toString(16)})`;
    for (let s = 0; s < 8; s++) {
      expect(BigInt(v[o.qs[s]!.id]!), `q_${s} ${what}`).toBe(ref.q[s]);
      expect(wordValue(v, o.rems[s]!), `R_${s + 1} ${what}`).toBe(ref.rems[s]);
    }
    const u = divuRef(A, B);
    expect([wordValue(v, o.uq), wordValue(v, o.ur)], `divu/remu ${what}`).toEqual([u.q, u.r]);
    const sg = divRef(A, B);
    expect([wordValue(v, o.sq), wordValue(v, o.sr)], `div/rem ${what}`).toEqual([sg.q, sg.r]);
  });
}

describe('8 chained divSteps in the IR interpreter = RISC-V division', () => {
  it('edge pairs (b = 0, 1, 2^32 − 1, powers of two, a < b, INT_MIN / −1, …) and random pairs', () => {
    checkChain(pairCases(320, 2));
  });

  it('fast-check samples: random (a, b ≥ 1) with random divisor bit lengths', () => {
    const pair = fc.tuple(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 1, max: 0xffffffff }), fc.integer({ min: 0, max: 31 }))
      .map(([a, b, sh]): [number, number] => [a, (b >>> sh) || 1]);
    // one circuit for all samples (building the 16-step circuit dominates the run time)
    checkChain(fc.sample(pair, { numRuns: 300, seed: 5 }));
  });
});

// ── helpers ─────────────────────────────────────────────────────────────────────────────────

describe('negWord, absWord, nibble = BigInt', () => {
  it('on edge and random words, with nibble and byte token fields', () => {
    const rng = new Prng(9);
    const vals = [...EDGE, 0x80000000 - 1, 0xfffffff0, 0x00010000, ...Array.from({ length: 100 }, () => rng.nextU32() >>> (rng.nextU32() % 32))];
    for (const split of [true, false]) {
      let neg: Word = [];
      let abs: { mag: Word; neg: Sig } | null = null;
      const nibs: Sig[] = [];
      const ir = buildCircuit(defineCircuit({ name: 'div-helpers', vocab: vals.length }, (c) => {
        const A = wordFromTokens(c, 'a', (t) => vals[t]!, { splitNibbles: split });
        neg = negWord(c, A);
        abs = absWord(c, A);
        for (let k = 0; k < 8; k++) nibs.push(nibble(c, A, k));
        c.emit([abs.neg]);
      }));
      const steps = new Interpreter(ir).run(vals.map((_, t) => t));
      vals.forEach((a, t) => {
        const v = steps[t]!.values;
        const A = BigInt(a);
        const isNeg = A >= 1n << 31n;
        expect(wordValue(v, neg)).toBe(((1n << 32n) - A) & M32);
        expect(wordValue(v, abs!.mag)).toBe(isNeg ? (1n << 32n) - A : A);
        expect(v[abs!.neg.id]).toBe(isNeg ? 1 : 0);
        for (let k = 0; k < 8; k++) expect(BigInt(v[nibs[k]!.id]!)).toBe((A >> BigInt(4 * k)) & 15n);
      });
    }
  });
});

// ── compiled demo ───────────────────────────────────────────────────────────────────────────

describe('compiled divStep demo = the interpreter, bit for bit', () => {
  it('emitted tokens follow the reference; f32 and bf16 exact at every placed signal', () => {
    const tiny = resolveTarget('tiny').config;
    const target = { ...tiny, vocabSize: VOCAB, intermediateSize: 4096 };
    const ir = buildCircuit(divDemo);
    const res = compileCircuit(ir, target);
    const rng = new Prng(31);
    // BOS, edge tokens (B = 1, 2^32 − 1, 2^31, 0, …; R = B − 1, 0, B/2), random ones.
    const tokens = [BOS, 0, 1, 5, 11, 15, 21, 40, 63, ...Array.from({ length: 23 }, () => 64 + (rng.nextU32() % (VOCAB - 65)))];
    const out = new Interpreter(ir).run(tokens).map((p) => p.emitted);
    tokens.forEach((t, i) => {
      const { q, rem } = stepRef(BigInt(remainderOf(t)), BigInt(nibbleOf(t)), BigInt(divisorOf(t)));
      let sum = 0n;
      for (let k = 0; k < 8; k++) sum += (rem >> BigInt(4 * k)) & 15n;
      expect(out[i]).toBe(Number(q * 121n + sum));
    });
    for (const profile of ['f32', 'bf16'] as const) {
      const chk = checkCompiled(res, tokens, { profile });
      expect(chk.mismatches).toEqual([]);
      expect(chk.signalsCompared).toBeGreaterThan(tokens.length * 300);
    }
  });
});

describe('divStep depth at qwen3.5-4b', () => {
  it('q is ready after 3 FFN layers and the remainder after 4 (nibble token operands)', () => {
    const res = compileCircuit(buildCircuit(divDemo), resolveTarget('qwen3.5-4b').config);
    const births = (re: RegExp): number[] => [...new Set(res.signals.filter((s) => re.test(s.name)).map((s) => s.birth))];
    // sublayer 2L + 1 is layer L's FFN: the ge bits in layer 2's FFN; the remainder's nibbles (free
    // forms of one choice over the 16 multiples and two borrow sums, one dim each) in layer 3's
    expect(births(/^div\.ge\d+$/)).toEqual([5]);
    expect(births(/^div\.(p\d|b\d)$/)).toEqual([7]);
    expect(res.signals.filter((s) => /^div\.(p\d|b\d)$/.test(s.name)).length).toBe(8 + 7);
    expect(res.layers.length).toBe(5); // + the emit's one-hot layer
  });
});

// ── bad input ───────────────────────────────────────────────────────────────────────────────

describe('bad input', () => {
  const build = (body: (c: CircuitBuilder) => void): void => {
    buildCircuit(defineCircuit({ name: 'div-bad', vocab: 4 }, (c) => { body(c); c.emit([c.tokenField('z', () => 0, [0, 0])]); }));
  };
  it('throws ChipcError for a nibble out of range, a 3-byte word, a nibble index of 8, a non-bit sign', () => {
    const word = (c: CircuitBuilder): Word => wordFromTokens(c, 'w', (t) => t);
    expect(() => build((c) => divStep(c, word(c), c.tokenField('n', (t) => t, [0, 16]), word(c)))).toThrow(ChipcError);
    expect(() => build((c) => divStep(c, word(c).slice(0, 3), c.tokenField('n', () => 0, [0, 15]), word(c)))).toThrow(ChipcError);
    expect(() => build((c) => nibble(c, word(c), 8))).toThrow(ChipcError);
    expect(() => build((c) => signedResult(c, word(c), word(c), c.tokenField('s', (t) => t, [0, 2]), c.constant(0), c.constant(0)))).toThrow(ChipcError);
  });
});
