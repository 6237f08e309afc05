/**
 * Sparse loading from a `.chip` reads only the non-zero blocks (forEachNonZero's BlockSource path,
 * src/model/load-weights.ts). It must visit exactly what the streamed path visits on the same
 * tensor read from its safetensors file — the same flat indices, the same value bits, ±0 skipped,
 * NaN kept — for F32, BF16 and F16, when blocks split an element between them (minGap 1) or
 * merge across gaps (the default minGap), stored verbatim or brotli-framed. nonZeroCsr (sparse
 * loading's CSR: one loop over the blocks for BF16 and F32) holds the same elements, rows permuted
 * or not, from the blocks as from the stream.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { forEachNonZero, heldRows, nonZeroCsr } from '../src/model/load-weights.ts';
import type { CsrMatrix, Matrix } from '../src/model/weights.ts';
import { writeSafetensors } from '../src/safetensors/writer.ts';
import { openSafetensors } from '../src/safetensors/reader.ts';
import { compactCheckpoint } from '../src/chipfile/compact.ts';
import { openChipFile, type ChipFile } from '../src/chipfile/read.ts';
import { chipError } from './helpers/assert.ts';
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

/** Little-endian bytes of `words`, `bytes` each. */
function le(words: number[], bytes: number): Uint8Array {
  const b = new Uint8Array(words.length * bytes);
  words.forEach((w, i) => { for (let j = 0; j < bytes; j++) b[i * bytes + j] = Math.floor(w / 2 ** (8 * j)) % 256; });
  return b;
}

let case_ = 0;
/**
 * Writes a.f32 (the words of w32), b.bf16 and c.f16 (both the words of w16) as [rows, cols] tensors
 * (cols null: one dimension) into a safetensors file and its `.chip`, and runs `check(plain, chip)`
 * on both opened; removes them after.
 */
function withStores(w32: number[], w16: number[], cols: number | null, chip: { minGap: number; codec?: 'none' | 'br' },
  check: (plain: TensorStore, chipFile: TensorStore, rows: { a: number; b: number }) => void): void {
  const dir = path.join(tmp, `ck${case_++}`);
  fs.mkdirSync(dir);
  // whole rows of `cols` (the tail words dropped, at least one row: zeros added)
  const shape = (n: number) => (cols === null ? [n] : [Math.max(1, Math.floor(n / cols)), cols]);
  const fit = (w: number[]) => {
    const n = shape(w.length).reduce((x, y) => x * y, 1);
    return [...w, ...new Array(Math.max(0, n - w.length)).fill(0)].slice(0, n);
  };
  const src = (name: string, dtype: 'F32' | 'BF16' | 'F16', words: number[], bytes: number) =>
    ({ name, dtype, shape: shape(words.length), chunks: () => [le(fit(words), bytes)] });
  writeSafetensors(path.join(dir, 'model.safetensors'), [
    src('a.f32', 'F32', w32, 4),
    src('b.bf16', 'BF16', w16, 2),
    src('c.f16', 'F16', w16, 2),
  ]);
  const chipPath = path.join(tmp, `ck${case_}.chip`);
  compactCheckpoint(dir, chipPath, chip);
  const plain = openSafetensors(path.join(dir, 'model.safetensors'));
  const chipFile = openChipFile(chipPath);
  try {
    check(plain, chipFile, { a: shape(w32.length)[0]!, b: shape(w16.length)[0]! });
  } finally {
    plain.close();
    chipFile.close();
  }
  fs.rmSync(dir, { recursive: true });
  fs.rmSync(chipPath);
}

describe('sparse loading from .chip blocks', () => {
  it('visits what the streamed path visits, for every dtype, gap and codec', () => {
    fc.assert(fc.property(
      fc.array(word(4), { minLength: 1, maxLength: 300 }),
      fc.array(word(2), { minLength: 1, maxLength: 300 }),
      fc.constantFrom(1, 8),
      fc.constantFrom('none' as const, 'br' as const),
      fc.constantFrom(8, 64, 4096),
      (w32, w16, minGap, codec, chunkBytes) => {
        withStores(w32, w16, null, { minGap, codec }, (plain, chip) => {
          for (const name of ['a.f32', 'b.bf16', 'c.f16']) {
            const want = visits(plain, name, chunkBytes);
            expect(visits(chip, name, chunkBytes), `${name}, minGap ${minGap}, ${codec}`).toEqual(want);
          }
        });
      },
    ), { numRuns: 60 });
  });

  it('nonZeroCsr holds forEachNonZero\'s elements (row pointers, columns, value bits), rows permuted or not, from the blocks as from the stream', () => {
    const f = new Float32Array(1);
    const u = new Uint32Array(f.buffer);
    const bitsOf = (v: number) => { f[0] = v; return u[0]!; };
    fc.assert(fc.property(
      fc.array(word(4), { minLength: 1, maxLength: 300 }),
      fc.array(word(2), { minLength: 1, maxLength: 300 }),
      fc.constantFrom(1, 8),
      fc.constantFrom(8, 64, 4096),
      fc.integer({ min: 1, max: 9 }),
      fc.boolean(),
      (w32, w16, minGap, chunkBytes, cols, remap) => {
        withStores(w32, w16, cols, { minGap }, (plain, chip, rowsOf) => {
          for (const [name, rows] of [['a.f32', rowsOf.a], ['b.bf16', rowsOf.b], ['c.f16', rowsOf.b]] as const) {
            // a permutation (disk row o is neutral row map[o]): every row moved up by one, the last to the top
            const map = remap ? Uint32Array.from({ length: rows }, (_, o) => (o + 1) % rows) : null;
            // the expected CSR, by neutral row, each row's entries in ascending column
            const byRow: [number, number][][] = Array.from({ length: rows }, () => []);
            for (const [i, b] of visits(plain, name, chunkBytes)) {
              const o = Math.floor(i / cols);
              byRow[map === null ? o : map[o]!]!.push([i - o * cols, b]);
            }
            const wantPtr = [0];
            for (const r of byRow) wantPtr.push(wantPtr[wantPtr.length - 1]! + r.length);
            const want = { rowPtr: wantPtr, entries: byRow.flat() };
            for (const store of [chip, plain]) {
              const csr = nonZeroCsr(store, name, chunkBytes, rows, cols, map);
              const got = {
                rowPtr: [...csr.rowPtr],
                entries: Array.from({ length: csr.colIdx.length }, (_, k) => [csr.colIdx[k]!, bitsOf(csr.values[k]!)]),
              };
              expect(got, `${name}, ${store === chip ? '.chip' : 'safetensors'}, minGap ${minGap}, cols ${cols}`).toEqual(want);
            }
          }
        });
      },
    ), { numRuns: 60 });
  });

  it('a held tensor read row by row (heldRows) gives each row of nonZeroCsr bit for bit after the file is closed and removed, and its csr is nonZeroCsr\'s', () => {
    const bitsOf = (a: Float32Array) => [...new Uint32Array(a.buffer, a.byteOffset, a.length)];
    fc.assert(fc.property(
      fc.array(word(4), { minLength: 1, maxLength: 300 }),
      fc.array(word(2), { minLength: 1, maxLength: 300 }),
      fc.constantFrom(1, 8),
      fc.constantFrom('none' as const, 'br' as const),
      fc.integer({ min: 1, max: 9 }),
      fc.array(fc.nat(), { maxLength: 40 }),
      (w32, w16, minGap, codec, cols, picks) => {
        const held: { name: string; rows: number; want: CsrMatrix; m: Matrix }[] = [];
        withStores(w32, w16, cols, { minGap, codec }, (plain, chip, rowsOf) => {
          for (const [name, rows] of [['a.f32', rowsOf.a], ['b.bf16', rowsOf.b], ['c.f16', rowsOf.b]] as const) {
            const want = nonZeroCsr(plain, name, 64, rows, cols, null);
            const h = (chip as ChipFile).holdTensor(name);
            expect(Buffer.from(h.readBytes()).equals(Buffer.from(plain.readBytes(name))), name).toBe(true);
            held.push({ name, rows, want, m: heldRows(h, rows, cols, 64) });
          }
        });
        for (const { name, rows, want, m } of held) {
          const expand = (r: number) => {
            const row = new Float32Array(cols);
            for (let k = want.rowPtr[r]!; k < want.rowPtr[r + 1]!; k++) row[want.colIdx[k]!] = want.values[k]!;
            return bitsOf(row);
          };
          const out = new Float32Array(cols).fill(Number.NaN); // readRow writes every column
          // rows in a random order with repeats (the cache), then every row
          for (const r of [...picks.map((p) => p % rows), ...Array.from({ length: rows }, (_, r) => r)]) {
            m.readRow!(r, out);
            expect(bitsOf(out), `${name} row ${r}, minGap ${minGap}, ${codec}, cols ${cols}`).toEqual(expand(r));
          }
          const csr = m.csr!;
          expect([...csr.rowPtr], name).toEqual([...want.rowPtr]);
          expect([...csr.colIdx], name).toEqual([...want.colIdx]);
          expect(bitsOf(csr.values), name).toEqual(bitsOf(want.values));
          m.readRow!(rows - 1, out); // (from the built CSR now)
          expect(bitsOf(out), name).toEqual(expand(rows - 1));
        }
      },
    ), { numRuns: 40 });
  });

  it('a held tensor refuses a shape it does not have and another tensor\'s name', () => {
    withStores([1, 2, 3, 4], [5, 6], 2, { minGap: 8 }, (_plain, chip) => {
      const h = (chip as ChipFile).holdTensor('a.f32');
      expect(chipError(() => heldRows(h, 3, 2, 64)).code).toBe('weights.mismatch');
      expect(chipError(() => h.readBlockData('b.bf16', 0, 1)).code).toBe('safetensors.no-tensor');
      expect(chipError(() => h.readBytes(0, 17)).code).toBe('safetensors.range');
    });
  });
});

