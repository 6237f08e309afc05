/**
 * The incremental matmuls' record buffers (src/exec/arena.ts): carveArrays' views and ZeroArena's
 * chunks — disjoint, aligned, zero-filled — and delta states whose records share a chunk giving
 * the dense linear's bits.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { carveArrays, ZeroArena } from '../src/exec/arena.ts';
import { deltaLinear } from '../src/exec/delta.ts';
import { linearEx } from '../src/exec/matmul.ts';
import { makeNumericContext } from '../src/exec/numeric.ts';
import { sparsifyMatrix } from '../src/model/random-weights.ts';
import type { Matrix } from '../src/model/weights.ts';

const bits = (a: Float32Array): number[] => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));

function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => { s = (Math.imul(s, 1103515245) + 12345) >>> 0; return s / 4294967296; };
}

describe('ZeroArena', () => {
  it('property: regions are disjoint, 8-byte aligned and zero; small requests get buffers of their own, large ones chunks', () => {
    fc.assert(fc.property(fc.array(fc.integer({ min: 0, max: 5000 }), { minLength: 1, maxLength: 40 }), (sizes) => {
      const arena = new ZeroArena(4096, 64);
      const taken: { buf: ArrayBufferLike; at: number; bytes: number }[] = [];
      for (const bytes of sizes) {
        const [buf, at] = arena.take(bytes);
        expect(at % 8).toBe(0);
        expect(at + bytes).toBeLessThanOrEqual(buf.byteLength);
        if (bytes < 64) expect([at, buf.byteLength]).toEqual([0, bytes]);
        else expect(buf.byteLength).toBe(Math.max(4096, Math.ceil(bytes / 8) * 8));
        expect(new Uint8Array(buf, at, bytes).every((b) => b === 0)).toBe(true);
        new Uint8Array(buf, at, bytes).fill(0xa5); // a later region that overlapped would not read 0
        for (const t of taken) if (t.buf === buf) expect(at >= t.at + t.bytes || at + bytes <= t.at || bytes === 0 || t.bytes === 0).toBe(true);
        taken.push({ buf, at, bytes });
      }
    }), { numRuns: 200 });
  });

  it('a chunk is filled before the next is taken', () => {
    const arena = new ZeroArena(1024, 8);
    const [a, at0] = arena.take(400);
    const [b, at1] = arena.take(400);
    const [c, at2] = arena.take(400); // 800 + 400 > 1024: a new chunk
    expect(b).toBe(a);
    expect([at0, at1, at2]).toEqual([0, 400, 0]);
    expect(c).not.toBe(a);
    // shared buffers, which V8 does not count as external memory (arena.ts); a small request's is not
    expect(a).toBeInstanceOf(SharedArrayBuffer);
    expect(arena.take(4)[0]).toBeInstanceOf(ArrayBuffer);
  });

  it('carveArrays from an arena: views into the chunk, each aligned to its element, zero, independent', () => {
    const arena = new ZeroArena(1 << 16, 1024);
    const spec = { a: [Float64Array, 300], b: [Uint16Array, 301], c: [Int32Array, 7], d: [Float32Array, 1000] } as const;
    const one = carveArrays(spec, arena);
    const two = carveArrays(spec, arena);
    for (const v of [...Object.values(one), ...Object.values(two)]) {
      expect(v.buffer).toBe(one.a.buffer);
      expect(v.byteOffset % v.BYTES_PER_ELEMENT).toBe(0);
      expect(Array.from(v as ArrayLike<number>).every((x) => x === 0)).toBe(true);
    }
    expect([one.a.length, one.b.length, one.c.length, one.d.length]).toEqual([300, 301, 7, 1000]);
    for (const v of Object.values(one)) (v as Float64Array).fill(1);
    for (const v of Object.values(two)) expect(Array.from(v as ArrayLike<number>).every((x) => x === 0)).toBe(true);
    // below the arena's minimum: a buffer of its own
    const small = carveArrays({ a: [Int32Array, 4] } as const, arena);
    expect(small.a.buffer).not.toBe(one.a.buffer);
  });
});

describe('delta states carved from one chunk', () => {
  it('matrices whose records share an executor\'s chunk: deltaLinear equals the dense linear, step after step', () => {
    const rnd = lcg(7);
    const rows = 10_000;
    const cols = 512;
    const mats: { dense: Matrix; csr: Matrix }[] = [];
    for (let i = 0; i < 2; i++) {
      const d = new Float32Array(rows * cols);
      for (let r = 0; r < rows; r++) {
        if (rnd() < 0.3) continue; // empty rows: never written, read as +0
        for (let t = 0; t < 3; t++) d[r * cols + Math.floor(rnd() * cols)] = [1, -2, 0.5, 3, -0.25][Math.floor(rnd() * 5)]!;
      }
      const dense: Matrix = { rows, cols, dense: d };
      mats.push({ dense, csr: { rows, cols, csr: sparsifyMatrix(dense).csr } });
    }
    const ctx = makeNumericContext({ profile: 'f32' });
    const plain = makeNumericContext({ profile: 'f32' });
    const x = new Float32Array(cols);
    for (let step = 0; step < 6; step++) {
      for (let c = 0; c < cols; c++) if (rnd() < 0.05) x[c] = [0, 1, 2, 5, 0.5, 7][Math.floor(rnd() * 6)]!;
      for (const m of mats) {
        const st = deltaLinear(ctx, m.csr, x, 0, null, 0);
        expect(st).not.toBeNull();
        expect(bits(st!.y)).toEqual(bits(linearEx(plain, m.dense, x, 'dense').out));
      }
    }
    // both states' records lie in one chunk of the context's arena, apart
    const [s0, s1] = mats.map((m) => ctx.memos.deltaStates.get(m.csr)!);
    expect(s0!.y.buffer).toBe(s1!.y.buffer);
    expect(s0!.y.buffer.byteLength).toBeGreaterThan(32 << 20);
    const span = (st: typeof s0) => [st!.colBits.byteOffset, st!.rowLowGap.byteOffset + st!.rowLowGap.byteLength];
    const [a0, a1] = span(s0);
    const [b0, b1] = span(s1);
    expect(a1 <= b0! || b1! <= a0!).toBe(true);
  });
});
