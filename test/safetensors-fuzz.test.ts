/**
 * Fuzzing the reader: random bytes, and valid files with mutated header bytes, length prefix or
 * size, must give either a valid store (whose tensors then read without error other than a
 * ChipcError) or a ChipcError: never another exception, never a hang. Runs are bounded (< 5 s).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChipcError } from '../src/util/errors.ts';
import { openSafetensorsBuffer } from '../src/safetensors/reader.ts';
import { denseSource, sparseSource, writeSafetensors, zerosSource } from '../src/safetensors/writer.ts';

let seeds: Uint8Array[] = [];
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-st-fuzz-'));
beforeAll(() => {
  const a = path.join(tmp, 'a.safetensors');
  writeSafetensors(a, [
    denseSource('w', 'BF16', [2, 3], new Float32Array([1, 2, 3, 4, 5, 6])),
    denseSource('s', 'F32', [], new Float32Array([7])),
    zerosSource('e', 'I64', [0, 2]),
    sparseSource('b', 'BOOL', [5], [1], new Float32Array([1])),
    denseSource('f4', 'F4', [4], new Uint8Array([0x12, 0x34])),
  ], { metadata: { note: 'x' } });
  const b = path.join(tmp, 'b.safetensors');
  writeSafetensors(b, [denseSource('only', 'U64', [1], new Float32Array([3]))]);
  seeds = [fs.readFileSync(a), fs.readFileSync(b)].map((x) => new Uint8Array(x));
});
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Opens and reads everything; returns 'ok' or the ChipcError code; rethrows anything else. */
function exercise(img: Uint8Array): string {
  try {
    const st = openSafetensorsBuffer(img, 'fuzz');
    for (const n of st.names) {
      st.readBytes(n);
      for (const c of st.chunks(n, 3)) void c;
      try { st.readF32(n); } catch (e) { if (!(e instanceof ChipcError)) throw e; }
    }
    return 'ok';
  } catch (e) {
    if (e instanceof ChipcError) return e.code;
    throw e;
  }
}

describe('reader fuzzing', () => {
  it('random bytes', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), (b) => { exercise(b); }), { numRuns: 1500, seed: 1 });
  });

  it('random headers after a consistent length prefix', () => {
    fc.assert(fc.property(fc.string({ maxLength: 200 }), fc.nat(40), (s, extra) => {
      const h = new TextEncoder().encode(s);
      const img = new Uint8Array(8 + h.length + extra);
      new DataView(img.buffer).setBigUint64(0, BigInt(h.length), true);
      img.set(h, 8);
      exercise(img);
    }), { numRuns: 1500, seed: 2 });
  });

  it('valid files with mutated header bytes', () => {
    const codes = new Set<string>();
    fc.assert(fc.property(fc.nat(1), fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }), (which, muts) => {
      const img = seeds[which].slice();
      const n = Number(new DataView(img.buffer).getBigUint64(0, true));
      for (const [pos, val] of muts) img[8 + (pos % n)] = val;
      codes.add(exercise(img));
    }), { numRuns: 2000, seed: 3 });
    expect(codes.has('ok')).toBe(true); // some mutations (e.g. inside metadata text) stay valid
    expect(codes.size).toBeGreaterThan(3);
  });

  it('valid files with mutated length prefix, truncation or extension', () => {
    fc.assert(fc.property(fc.nat(1), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), fc.integer({ min: -64, max: 64 }), fc.boolean(), (which, len, delta, setLen) => {
      const base = seeds[which];
      let img = base.slice(0, Math.max(0, base.length + Math.min(0, delta)));
      if (delta > 0) { const x = new Uint8Array(base.length + delta); x.set(base); img = x; }
      if (setLen && img.length >= 8) new DataView(img.buffer).setBigUint64(0, len % 2n ** 30n === 0n ? len : len % 400n, true);
      const c = exercise(img);
      if (delta === 0 && !setLen) expect(c).toBe('ok');
    }), { numRuns: 2000, seed: 4 });
  });
});
