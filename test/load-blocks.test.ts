/**
 * Sparse loading from a `.chip` reads only the non-zero blocks (forEachNonZero's BlockSource path,
 * src/model/load-weights.ts). It must visit exactly what the streamed path visits on the same
 * tensor read from its safetensors file — the same flat indices, the same value bits, ±0 skipped,
 * NaN kept — for F32, BF16 and F16, when blocks split an element between them (minGap 1) or
 * merge across gaps (the default minGap), stored verbatim or brotli-framed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { forEachNonZero } from '../src/model/load-weights.ts';
import { writeSafetensors } from '../src/safetensors/writer.ts';
import { openSafetensors } from '../src/safetensors/reader.ts';
import { compactCheckpoint } from '../src/chipfile/compact.ts';
import { openChipFile } from '../src/chipfile/read.ts';
import type { TensorStore } from '../src/safetensors/types.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-load-blocks-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

function visits(store: TensorStore, name: string, chunkBytes: number): [number, number][] {
  const out: [number, number][] = [];
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  forEachNonZero(store, name, chunkBytes, (i, v) => {
    f[0] = v;
    out.push([i, u[0]!]);
  });
  return out;
}

/** Raw element words: mostly zero, some with a single non-zero byte (so blocks start and end mid-element), ±0, NaN. */
const word = (bytes: number) => fc.oneof(
  { weight: 12, arbitrary: fc.constant(0) },
  { weight: 2, arbitrary: fc.nat({ max: bytes - 1 }).chain((k) => fc.integer({ min: 1, max: 255 }).map((b) => b * 2 ** (8 * k))) },
  { weight: 2, arbitrary: fc.nat({ max: 2 ** (8 * bytes) - 1 }) },
  { weight: 1, arbitrary: fc.constant(bytes === 4 ? 0x80000000 : 0x8000) }, // −0
  { weight: 1, arbitrary: fc.constant(bytes === 4 ? 0x7fc00001 : 0x7fc1) }, // NaN
);

let case_ = 0;
describe('sparse loading from .chip blocks', () => {
  it('visits what the streamed path visits, for every dtype, gap and codec', () => {
    fc.assert(fc.property(
      fc.array(word(4), { minLength: 1, maxLength: 300 }),
      fc.array(word(2), { minLength: 1, maxLength: 300 }),
      fc.constantFrom(1, 8),
      fc.constantFrom('none' as const, 'br' as const),
      fc.constantFrom(8, 64, 4096),
      (w32, w16, minGap, codec, chunkBytes) => {
        const dir = path.join(tmp, `ck${case_++}`);
        fs.mkdirSync(dir);
        const le = (words: number[], bytes: number) => {
          const b = new Uint8Array(words.length * bytes);
          words.forEach((w, i) => { for (let j = 0; j < bytes; j++) b[i * bytes + j] = Math.floor(w / 2 ** (8 * j)) % 256; });
          return b;
        };
        const src = (name: string, dtype: 'F32' | 'BF16' | 'F16', bytes: Uint8Array, n: number) =>
          ({ name, dtype, shape: [n], chunks: () => [bytes] });
        writeSafetensors(path.join(dir, 'model.safetensors'), [
          src('a.f32', 'F32', le(w32, 4), w32.length),
          src('b.bf16', 'BF16', le(w16, 2), w16.length),
          src('c.f16', 'F16', le(w16, 2), w16.length),
        ]);
        const chipPath = path.join(tmp, `ck${case_}.chip`);
        compactCheckpoint(dir, chipPath, { minGap, codec });
        const plain = openSafetensors(path.join(dir, 'model.safetensors'));
        const chip = openChipFile(chipPath);
        try {
          for (const name of ['a.f32', 'b.bf16', 'c.f16']) {
            const want = visits(plain, name, chunkBytes);
            expect(visits(chip, name, chunkBytes), `${name}, minGap ${minGap}, ${codec}`).toEqual(want);
          }
        } finally {
          plain.close();
          chip.close();
        }
        fs.rmSync(dir, { recursive: true });
        fs.rmSync(chipPath);
      },
    ), { numRuns: 60 });
  });
});
