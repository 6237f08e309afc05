/**
 * embeddingRows (src/passes/lower.ts): token t's embedding entries are every embedded dim whose
 * value at t is not 0, in the dims' order, with the value exactly as given — stored in float32
 * where every value is one, in float64 otherwise (a value such as 0.1 or 2^24 + 1 must come back
 * as it was). Compared with the columns read directly, value by value (Object.is).
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { embeddingRows } from '../src/passes/lower.ts';

type Col = { tokens: Int32Array; values: Float64Array | Int8Array | Int16Array | Int32Array | Uint8Array };

function rowsOf(row: (t: number, put: (d: number, x: number) => void) => void, vocab: number): [number, number][][] {
  return Array.from({ length: vocab + 2 }, (_, t) => { const out: [number, number][] = []; row(t, (d, x) => out.push([d, x])); return out; });
}

function reference(dims: [number, Col | ((t: number) => number)][], vocab: number): [number, number][][] {
  return Array.from({ length: vocab + 2 }, (_, t) => {
    const out: [number, number][] = [];
    if (t >= vocab) return out;
    for (const [d, c] of dims) {
      let v = 0;
      if (typeof c === 'function') v = c(t);
      else { const i = Array.from(c.tokens).indexOf(t); if (i >= 0) v = c.values[i]!; }
      if (v !== 0) out.push([d, v]);
    }
    return out;
  });
}

const vocab = 12;
const arbCol = fc.tuple(fc.uniqueArray(fc.integer({ min: 0, max: vocab + 3 }), { maxLength: 8 }), fc.constantFrom('i8', 'u8', 'i16', 'i32', 'f64'),
  fc.array(fc.oneof(fc.integer({ min: -300, max: 300 }), fc.constantFrom(0, 2 ** 24 + 1, -(2 ** 30) - 3, 0.1, 1.5, -0)), { minLength: 8, maxLength: 8 }))
  .map(([ids, kind, vals]): Col => {
    const tokens = Int32Array.from(ids.sort((a, b) => a - b));
    const raw = vals.slice(0, tokens.length);
    const values = kind === 'f64' ? Float64Array.from(raw) : kind === 'i32' ? Int32Array.from(raw.map((v) => Math.trunc(v)))
      : kind === 'i16' ? Int16Array.from(raw.map((v) => Math.trunc(v) % 32768)) : kind === 'i8' ? Int8Array.from(raw.map((v) => Math.trunc(v) % 128))
        : Uint8Array.from(raw.map((v) => Math.abs(Math.trunc(v)) % 256));
    return { tokens, values };
  });

describe('embeddingRows', () => {
  it('gives each token the non-zero values of the dims in order, exactly (float32 or float64 storage)', () => {
    fc.assert(fc.property(fc.array(fc.oneof(arbCol, fc.constant((t: number) => (t % 3 === 0 ? 0.1 : 0))), { maxLength: 6 }), (cols) => {
      const dims = cols.map((c, j): [number, Col | ((t: number) => number)] => [40 + 3 * j, c]);
      const got = rowsOf(embeddingRows(dims, vocab), vocab);
      const want = reference(dims, vocab);
      expect(got.length).toBe(want.length);
      for (let t = 0; t < got.length; t++) {
        expect(got[t]!.map(([d]) => d)).toEqual(want[t]!.map(([d]) => d));
        got[t]!.forEach(([, x], i) => { if (!Object.is(x, want[t]![i]![1])) expect(x).toBe(want[t]![i]![1]); });
      }
    }), { numRuns: 500 });
  });
});
