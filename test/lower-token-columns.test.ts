/**
 * The embedding columns of token fields (src/lower/token-columns.ts) against the per-token loop
 * they replace, written here: for tables of every kind (Int8, Int16 and Int32 arrays, at word
 * aligned and unaligned offsets, plain arrays with holes), shorter or longer than the vocabulary,
 * mostly zero or dense, and encodings whose value 0 or default puts something or nothing.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { encodingColumns, nonZeroTokensInto } from '../src/lower/token-columns.ts';
import type { TokenValues } from '../src/ir/types.ts';

type Entries = (v: number, put: (j: number, x: number) => void) => void;

function refNonZero(values: TokenValues, n: number): number[] {
  const out: number[] = [];
  const len = Math.min(n, values.length);
  for (let t = 0; t < len; t++) if (values[t] !== 0 && values[t] !== undefined) out.push(t);
  return out;
}

/** The loop lowering ran before (LowerContext.embedFieldDims): count, then fill, per token. */
function refColumns(values: TokenValues, vocab: number, dflt: number, count: number, entries: Entries): { tokens: number[]; values: number[] }[] {
  const cols = Array.from({ length: count }, () => ({ tokens: [] as number[], values: [] as number[] }));
  for (let t = 0; t < vocab; t++) {
    entries(values[t] ?? dflt, (j, x) => {
      if (x === 0) return;
      if (x !== 1) throw new Error(`internal: f: bits dim ${j} would be ${x} at token ${t}, not 0 or 1`);
      cols[j]!.tokens.push(t);
      cols[j]!.values.push(x);
    });
  }
  return cols;
}

/** A table of `kind` holding `vals`, placed `shift` elements into a larger buffer (unaligned for a shift not a multiple of the word). */
function table(kind: 'i8' | 'i16' | 'i32' | 'plain', vals: number[], shift: number, holes: number[]): TokenValues {
  if (kind === 'plain') {
    const a: number[] = vals.slice();
    for (const h of holes) if (h < a.length) delete a[h];
    return a;
  }
  const C = kind === 'i8' ? Int8Array : kind === 'i16' ? Int16Array : Int32Array;
  const buf = new C(vals.length + shift + 3);
  buf.fill(7);
  const view = buf.subarray(shift, shift + vals.length);
  view.set(vals);
  return view;
}

const arbTable = fc.record({
  kind: fc.constantFrom('i8' as const, 'i16' as const, 'i32' as const, 'plain' as const),
  // mostly zero runs with a few values, so that whole words are skipped and others are not
  vals: fc.array(fc.oneof({ weight: 6, arbitrary: fc.constant(0) }, { weight: 2, arbitrary: fc.integer({ min: -5, max: 5 }) }), { maxLength: 70 }),
  shift: fc.integer({ min: 0, max: 5 }),
  holes: fc.array(fc.nat(80), { maxLength: 4 }),
  extra: fc.integer({ min: -10, max: 10 }),
});

describe('token field columns', () => {
  it('nonZeroTokensInto lists the ids of non-zero values, ascending, below n', () => {
    fc.assert(fc.property(arbTable, ({ kind, vals, shift, holes, extra }) => {
      const values = table(kind, vals, shift, holes);
      const n = Math.max(0, vals.length + extra);
      const out = new Int32Array(n + 1);
      const count = nonZeroTokensInto(values, n, out);
      expect(Array.from(out.subarray(0, count))).toEqual(refNonZero(values, n));
    }), { numRuns: 400 });
  });

  it('encodingColumns equals the per-token loop for bit and one-hot encodings, any default', () => {
    fc.assert(fc.property(arbTable, fc.integer({ min: -3, max: 3 }), fc.integer({ min: -6, max: 1 }), fc.boolean(),
      ({ kind, vals, shift, holes, extra }, dflt, lo, bits) => {
        const values = table(kind, vals, shift, holes);
        const vocab = Math.max(0, vals.length + extra);
        // bits of v − lo over 4 bits (value 0 puts nothing when lo = 0), or a one-hot over [lo, lo + 11]
        const count = bits ? 4 : 12;
        const entries: Entries = bits
          ? (v, put) => { for (let j = 0; j < 4; j++) put(j, Math.floor((v - lo) / 2 ** j) % 2 === 0 ? 0 : 1); }
          : (v, put) => { if (v >= lo && v < lo + 12) put(v - lo, 1); };
        const got = encodingColumns(values, vocab, dflt, count, entries, 'f', 'bits');
        const want = refColumns(values, vocab, dflt, count, entries);
        expect(got.map((c) => ({ tokens: Array.from(c.tokens), values: Array.from(c.values) }))).toEqual(want);
      }), { numRuns: 400 });
  });

  it('a put other than 0 or 1 fails at the first id whose value puts it', () => {
    const values = new Int8Array([0, 1, 0, 2, 2, 0, 1, 2]);
    const entries: Entries = (v, put) => put(0, v);
    expect(() => encodingColumns(values, values.length, 0, 1, entries, 'f', 'bits')).toThrow('internal: f: bits dim 0 would be 2 at token 3, not 0 or 1');
    expect(() => refColumns(values, values.length, 0, 1, entries)).toThrow('internal: f: bits dim 0 would be 2 at token 3, not 0 or 1');
  });
});
