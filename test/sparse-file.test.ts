/**
 * Writers that leave long zero runs as holes (src/util/sparse-file.ts): the bytes read back are
 * those of writing every zero, the hashes see the zeros, a trailing run gives the file its full
 * size, and — where this file system keeps holes — the skipped runs take no disk blocks.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { BufferedWriter, HOLE_MIN_BYTES } from '../src/util/sparse-file.ts';
import { sparseSource, writeCheckpoint, writeSafetensors, zerosSource } from '../src/safetensors/writer.ts';
import { compactCheckpoint } from '../src/chipfile/compact.ts';
import { expandChipFile } from '../src/chipfile/expand.ts';
import { expectSameDir } from './helpers/dirs.ts';
import { chipError } from './helpers/assert.ts';
import type { TensorSource } from '../src/safetensors/types.ts';
import { cli } from './helpers/cli.ts';

let tmp = '';
/** Whether this file system stores a file extended by ftruncate without allocating its blocks. */
let keepsHoles = false;

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-holes-'));
  const probe = path.join(tmp, 'probe');
  const fd = fs.openSync(probe, 'w');
  fs.ftruncateSync(fd, 8 << 20);
  fs.fsyncSync(fd);
  fs.closeSync(fd);
  keepsHoles = fs.statSync(probe).blocks * 512 < 1 << 20;
  fs.rmSync(probe);
});
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Bytes the file occupies on disk. */
const diskBytes = (file: string): number => fs.statSync(file).blocks * 512;

type Piece = { kind: 'bytes'; bytes: Uint8Array } | { kind: 'zeros'; n: number };

/** Writes `pieces` through a BufferedWriter (holes on or off); returns the file's bytes and the writer's SHA-256. */
function writePieces(file: string, pieces: readonly Piece[], holes: boolean): { bytes: Buffer; sha: string; position: number } {
  const hash = crypto.createHash('sha256');
  const fd = fs.openSync(file, 'w');
  const w = new BufferedWriter(fd, [hash], holes);
  for (const p of pieces) {
    if (p.kind === 'bytes') w.write(p.bytes);
    else w.writeZeros(p.n);
  }
  w.end();
  fs.closeSync(fd);
  return { bytes: fs.readFileSync(file), sha: hash.digest('hex'), position: w.position };
}

/** The bytes `pieces` stand for. */
function expected(pieces: readonly Piece[]): Buffer {
  return Buffer.concat(pieces.map((p) => (p.kind === 'bytes' ? Buffer.from(p.bytes) : Buffer.alloc(p.n))));
}

const pieceArb: fc.Arbitrary<Piece> = fc.oneof(
  fc.uint8Array({ minLength: 0, maxLength: 3000 }).map((bytes) => ({ kind: 'bytes' as const, bytes })),
  // big chunks (≥ half the writer's 1 MiB buffer) go around the buffer
  fc.integer({ min: 1, max: 3 }).map((k) => ({ kind: 'bytes' as const, bytes: new Uint8Array(k * 300_000).fill(7 * k) })),
  fc.integer({ min: 0, max: 3 * HOLE_MIN_BYTES }).map((n) => ({ kind: 'zeros' as const, n })),
);

describe('BufferedWriter with holes', () => {
  it('writes the same bytes and hash as without holes, whatever the mix of bytes and zero runs (ending in either)', () => {
    fc.assert(fc.property(fc.array(pieceArb, { maxLength: 12 }), (pieces) => {
      const want = expected(pieces);
      const a = writePieces(path.join(tmp, 'a'), pieces, true);
      const b = writePieces(path.join(tmp, 'b'), pieces, false);
      expect(a.position).toBe(want.length);
      expect(a.bytes.equals(want)).toBe(true);
      expect(b.bytes.equals(want)).toBe(true);
      expect(a.sha).toBe(crypto.createHash('sha256').update(want).digest('hex'));
      expect(b.sha).toBe(a.sha);
    }), { numRuns: 40 });
  });

  it('a file that is one long zero run has its full size; on a file system that keeps holes it takes no data blocks', () => {
    const pieces: Piece[] = [{ kind: 'bytes', bytes: new Uint8Array([1, 2, 3]) }, { kind: 'zeros', n: 16 << 20 }];
    const file = path.join(tmp, 'tail');
    const r = writePieces(file, pieces, true);
    expect(r.bytes.length).toBe(3 + (16 << 20));
    expect(r.bytes.equals(expected(pieces))).toBe(true);
    const dense = path.join(tmp, 'tail-dense');
    writePieces(dense, pieces, false);
    if (keepsHoles) {
      expect(diskBytes(file)).toBeLessThan(1 << 20);
      expect(diskBytes(dense)).toBeGreaterThanOrEqual(16 << 20);
    }
  });

  it('writes a zero run shorter than HOLE_MIN_BYTES as zeros (no hole below the threshold)', () => {
    const file = path.join(tmp, 'short');
    const n = HOLE_MIN_BYTES - 1;
    writePieces(file, [{ kind: 'zeros', n }, { kind: 'bytes', bytes: new Uint8Array([9]) }], true);
    if (keepsHoles) expect(diskBytes(file)).toBeGreaterThanOrEqual(n - 4096);
  });
});

describe('safetensors and .chip writers leave holes by default', () => {
  const sources = () => [
    zerosSource('a.zeros', 'F32', [1024, 1024]),
    sparseSource('b.sparse', 'F32', [2048, 1024], [5, 700_000, 2_097_151], new Float32Array([1.5, -2, 3])),
    zerosSource('c.tail', 'BF16', [4096, 512]),
  ];

  it('writeSafetensors: the same bytes with and without holes, fewer disk blocks with', () => {
    const holed = path.join(tmp, 'holed.safetensors');
    const dense = path.join(tmp, 'dense.safetensors');
    writeSafetensors(holed, sources());
    writeSafetensors(dense, sources(), { holes: false });
    expect(fs.readFileSync(holed).equals(fs.readFileSync(dense))).toBe(true);
    expect(fs.statSync(holed).size).toBe(fs.statSync(dense).size);
    if (keepsHoles) {
      expect(diskBytes(holed)).toBeLessThan(1 << 20);
      expect(diskBytes(dense)).toBeGreaterThanOrEqual(16 << 20);
    }
  });

  it('expand regenerates the checkpoint byte for byte with holes and without (--no-holes), holes taking fewer blocks', () => {
    const dir = path.join(tmp, 'ckpt');
    writeCheckpoint(dir, sources(), { holes: false });
    const chip = path.join(tmp, 'ckpt.chip');
    compactCheckpoint(dir, chip);
    const holed = path.join(tmp, 'ckpt-holed');
    const dense = path.join(tmp, 'ckpt-dense');
    expandChipFile(chip, holed);
    expandChipFile(chip, dense, { holes: false });
    expectSameDir(dir, holed);
    expectSameDir(dir, dense);
    const file = 'model.safetensors';
    if (keepsHoles) {
      expect(diskBytes(path.join(holed, file))).toBeLessThan(1 << 20);
      expect(diskBytes(path.join(dense, file))).toBeGreaterThanOrEqual(16 << 20);
    }
  });

  it('chipc expand leaves holes by default and writes every byte with --no-holes (the same bytes)', async () => {
    const dir = path.join(tmp, 'cli-ckpt');
    writeCheckpoint(dir, sources(), { holes: false });
    const chip = path.join(tmp, 'cli-ckpt.chip');
    compactCheckpoint(dir, chip);
    const holed = path.join(tmp, 'cli-holed');
    const dense = path.join(tmp, 'cli-dense');
    expect((await cli('expand', chip, '-o', holed)).code).toBe(0);
    expect((await cli('expand', chip, '-o', dense, '--no-holes')).code).toBe(0);
    expectSameDir(dir, holed);
    expectSameDir(dir, dense);
    if (keepsHoles) {
      expect(diskBytes(path.join(holed, 'model.safetensors'))).toBeLessThan(1 << 20);
      expect(diskBytes(path.join(dense, 'model.safetensors'))).toBeGreaterThanOrEqual(16 << 20);
    }
  });

  it('refuses a zero run that is negative, fractional or past the tensor\'s size, leaving no file', () => {
    const withZeros = (runs: (number | Uint8Array)[]): TensorSource => ({
      name: 't', dtype: 'U8', shape: [HOLE_MIN_BYTES * 2],
      chunks: () => [new Uint8Array(HOLE_MIN_BYTES * 2)],
      sparseChunks: () => runs,
    });
    const file = path.join(tmp, 'bad.safetensors');
    for (const [runs, code] of [
      [[-5], 'safetensors.source-chunk'],
      [[1.5], 'safetensors.source-chunk'],
      [[HOLE_MIN_BYTES * 2 + 1], 'safetensors.source-size'],
      [[HOLE_MIN_BYTES, new Uint8Array(HOLE_MIN_BYTES + 1)], 'safetensors.source-size'],
      [[HOLE_MIN_BYTES], 'safetensors.source-size'],
    ] as const) {
      expect(chipError(() => writeSafetensors(file, [withZeros([...runs])])).code, JSON.stringify(runs.map((r) => typeof r === 'number' ? r : r.length))).toBe(code);
      expect(fs.readdirSync(tmp).filter((n) => n.includes('bad.safetensors'))).toEqual([]);
    }
    // with holes off the dense chunks are written instead (the sparse ones are not read)
    writeSafetensors(file, [withZeros([-5])], { holes: false });
    expect(fs.statSync(file).size).toBeGreaterThan(HOLE_MIN_BYTES * 2);
  });
});
