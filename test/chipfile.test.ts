/**
 * The compact sparse `.chip` form (src/chipfile, docs/chip-file.md): compact → expand regenerates
 * every file of a compiled checkpoint byte for byte (f32 and bf16, single file and sharded),
 * compaction is deterministic and independent of the chunk size, blocks match a naive byte-level
 * reference, a model loaded from the .chip is bit-identical to one loaded from the directory and
 * runs the same tokens, corrupted or truncated files are refused with a ChipcError, and failed
 * writes leave nothing behind.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { loadCircuitFile } from '../src/dsl/load.ts';
import { compileCircuit, type CompileResult } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { saveModel } from '../src/model/save-weights.ts';
import { randomModelWeights } from '../src/model/random-weights.ts';
import { loadModel, loadModelFromChipFile } from '../src/model/load-weights.ts';
import { Executor } from '../src/exec/executor.ts';
import { openCheckpoint } from '../src/safetensors/checkpoint.ts';
import { denseSource, writeCheckpoint } from '../src/safetensors/writer.ts';
import { compactCheckpoint } from '../src/chipfile/compact.ts';
import { expandChipFile } from '../src/chipfile/expand.ts';
import { openChipFile } from '../src/chipfile/read.ts';
import { BlockScanner } from '../src/chipfile/scan.ts';
import { ChipcError } from '../src/util/errors.ts';
import { cli } from './helpers/cli.ts';
import { expectSameDir } from './helpers/dirs.ts';
import { assemble, parts, reseal, writeSmallCheckpoint } from './helpers/chip-image.ts';
import { chipError } from './helpers/assert.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-chipfile-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Naive reference: blocks of a byte array, one byte at a time (non-zero bytes; zero runs < minGap bridged). */
function naiveBlocks(bytes: Uint8Array, minGap: number): [number, number][] {
  const out: [number, number][] = [];
  let start = -1;
  let end = -1;
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] === 0) continue;
    if (start >= 0 && i - end < minGap) { end = i + 1; continue; }
    if (start >= 0) out.push([start, end - start]);
    start = i;
    end = i + 1;
  }
  if (start >= 0) out.push([start, end - start]);
  return out;
}

/** Entries of `dir` whose name starts with '.' (the temporaries of an atomic write). */
function hiddenEntries(dir: string): string[] {
  return fs.readdirSync(dir).filter((n) => n.startsWith('.'));
}

const VARIANTS = [
  { label: 'f32 single file', dtype: 'F32' as const, maxShardSize: undefined },
  { label: 'bf16 single file', dtype: 'BF16' as const, maxShardSize: undefined },
  { label: 'f32 sharded', dtype: 'F32' as const, maxShardSize: 150_000 },
  { label: 'bf16 sharded', dtype: 'BF16' as const, maxShardSize: 60_000 },
];

let res: CompileResult;
beforeAll(async () => {
  res = compileCircuit(await loadCircuitFile('circuits/examples/counter.ts'), resolveTarget('tiny').config);
  for (const v of VARIANTS) {
    saveModel(path.join(tmp, v.label), res.weights, {
      dtype: v.dtype, maxShardSize: v.maxShardSize, metadata: { chipc_circuit: 'counter' },
      extraFiles: { 'chipc-manifest.json': JSON.stringify({ circuit: 'counter' }) + '\n' },
    });
  }
});

describe.each(VARIANTS)('compiled counter, $label', (v) => {
  const dir = (): string => path.join(tmp, v.label);
  const chip = (): string => path.join(tmp, `${v.label}.chip`);

  it('compact then expand regenerates every file byte for byte', () => {
    const r = compactCheckpoint(dir(), chip());
    const files = fs.readdirSync(dir());
    if (v.maxShardSize !== undefined) expect(files).toContain('model.safetensors.index.json');
    expect(files.filter((n) => n.endsWith('.safetensors')).length).toBe(v.maxShardSize === undefined ? 1 : files.length - 3);
    expect(r.files).toBe(files.length);
    expect(r.chipBytes).toBe(fs.statSync(chip()).size);
    expect(r.chipBytes * 5).toBeLessThan(r.denseBytes);
    const out = path.join(tmp, `${v.label}-expanded`);
    expandChipFile(chip(), out);
    expectSameDir(dir(), out);
    expect(hiddenEntries(tmp)).toEqual([]);
  });

  it('expands byte for byte in reads of any size: each tensor copied in several reads of whole blocks, a long block in pieces', () => {
    for (const copyBytes of [1, 7, 97, 4096]) {
      const out = path.join(tmp, `${v.label}-expanded-${copyBytes}`);
      expandChipFile(chip(), out, { copyBytes });
      expectSameDir(dir(), out);
    }
    expect(chipError(() => expandChipFile(chip(), path.join(tmp, `${v.label}-expanded-0`), { copyBytes: 0 })).code).toBe('chipfile.bad-option');
  });

  it('is deterministic and does not depend on the chunk size (odd chunk size: unaligned chunk starts)', () => {
    const a = path.join(tmp, `${v.label}-a.chip`);
    const b = path.join(tmp, `${v.label}-b.chip`);
    const c = path.join(tmp, `${v.label}-c.chip`);
    compactCheckpoint(dir(), a);
    compactCheckpoint(dir(), b);
    compactCheckpoint(dir(), c, { chunkBytes: 4093 });
    const bytes = fs.readFileSync(a);
    expect(fs.readFileSync(b).equals(bytes)).toBe(true);
    expect(fs.readFileSync(c).equals(bytes)).toBe(true);
  });

  it('stores exactly the blocks a naive byte-level scan finds, and serves every byte range as the directory does', () => {
    const f = openChipFile(chip());
    const d = openCheckpoint(dir());
    try {
      expect(f.names).toEqual(d.names);
      expect(f.metadata).toEqual(d.metadata);
      for (const n of d.names) {
        expect(f.info(n)).toEqual(d.info(n));
        const dense = d.readBytes(n);
        const want = naiveBlocks(dense, f.manifest.minGap);
        const t = f.blocks(n);
        expect([...t.starts].map((s, k) => [s, t.lengths[k]])).toEqual(want);
        expect(Buffer.from(f.readBytes(n)).equals(Buffer.from(dense))).toBe(true);
        const len = dense.length;
        for (const [s, e] of [[0, 1], [1, 3], [len >> 1, len], [len - 1, len], [3, 3], [5, Math.min(len, 777)]]) {
          if (s > e || e > len) continue;
          expect(Buffer.from(f.readBytes(n, s, e)).equals(Buffer.from(dense.subarray(s, e))), `${n} [${s}, ${e})`).toBe(true);
        }
        const chunks = [...f.chunks(n, 333)];
        expect(Buffer.concat(chunks).equals(Buffer.from(dense))).toBe(true);
      }
    } finally {
      f.close();
      d.close();
    }
  });

  it('loads as the same model (every array bit-identical) and runs the same tokens', () => {
    for (const mode of ['dense', 'sparse'] as const) {
      const fromDir = loadModel(dir(), { mode });
      const fromChip = loadModel(chip(), { mode });
      const arrays = (m: unknown, at: string, out: [string, ArrayBufferView][]): [string, ArrayBufferView][] => {
        if (ArrayBuffer.isView(m)) out.push([at, m]);
        else if (Array.isArray(m)) m.forEach((x, i) => arrays(x, `${at}[${i}]`, out));
        else if (m !== null && typeof m === 'object') for (const [k, x] of Object.entries(m)) arrays(x, `${at}.${k}`, out);
        return out;
      };
      const a = arrays(fromDir, 'w', []);
      const b = arrays(fromChip, 'w', []);
      expect(b.map(([k]) => k)).toEqual(a.map(([k]) => k));
      expect(a.length).toBeGreaterThan(10);
      a.forEach(([k, x], i) => {
        const y = b[i][1];
        const u = (z: ArrayBufferView) => new Uint8Array(z.buffer, z.byteOffset, z.byteLength);
        expect(y.constructor, k).toBe(x.constructor);
        expect(Buffer.from(u(y)).equals(Buffer.from(u(x))), k).toBe(true);
        if (x instanceof Float32Array) {
          expect(new Uint32Array(y.buffer, y.byteOffset, (y as Float32Array).length)).toEqual(new Uint32Array(x.buffer, x.byteOffset, x.length));
        }
      });
      expect(fromChip.config).toEqual(fromDir.config);
      // The counter emits (input + 1) mod 16 with BOS (16) counting as 0: greedy from BOS counts 1, 2, …
      if (mode === 'sparse') {
        const expected = Array.from({ length: 18 }, (_, i) => (i + 1) % 16);
        const profile = v.dtype === 'BF16' ? 'bf16' : 'f32';
        expect(new Executor(fromChip, { profile }).generate([16], 18)).toEqual(expected);
        expect(new Executor(fromDir, { profile }).generate([16], 18)).toEqual(expected);
      }
    }
  });
});

describe('the token embedding read row by row from a .chip (lazyEmbedding)', () => {
  it('gives every eager row bit for bit, runs the same tokens and builds the eager CSR on first access; a tied embedding loads whole', async () => {
    const bits = (a: Float32Array) => [...new Uint32Array(a.buffer, a.byteOffset, a.length)];
    // (a compiled circuit's LM head is its own matrix: its config unties the embeddings)
    const untied = compileCircuit(await loadCircuitFile('circuits/examples/counter.ts'), resolveTarget('tiny').config);
    const d = path.join(tmp, 'untied');
    saveModel(d, untied.weights, { dtype: 'BF16', metadata: { chipc_circuit: 'counter' } });
    const c = path.join(tmp, 'untied.chip');
    compactCheckpoint(d, c);
    const eager = loadModel(c, { mode: 'sparse' });
    const file = openChipFile(c);
    const lazy = loadModelFromChipFile(file, c, { mode: 'sparse', lazyEmbedding: true });
    file.close();
    expect(eager.embedTokens.readRow).toBeUndefined();
    expect(lazy.embedTokens.readRow).toBeTypeOf('function');
    expect(lazy.config.tieWordEmbeddings).toBe(false);
    expect(lazy.lmHead).not.toBe(lazy.embedTokens);
    const want = eager.embedTokens.csr!;
    const { rows, cols } = eager.embedTokens;
    const expand = (r: number) => {
      const row = new Float32Array(cols);
      for (let k = want.rowPtr[r]!; k < want.rowPtr[r + 1]!; k++) row[want.colIdx[k]!] = want.values[k]!;
      return bits(row);
    };
    const out = new Float32Array(cols);
    let nonZeroRows = 0;
    for (let r = 0; r < rows; r++) {
      lazy.embedTokens.readRow!(r, out);
      expect(bits(out), `row ${r}`).toEqual(expand(r));
      if (want.rowPtr[r + 1]! > want.rowPtr[r]!) nonZeroRows++;
    }
    expect(nonZeroRows).toBeGreaterThan(10);
    // greedy from BOS (16) counts 1, 2, … (mod 16), as from the eager load
    const expected = Array.from({ length: 18 }, (_, i) => (i + 1) % 16);
    expect(new Executor(lazy, { profile: 'bf16' }).generate([16], 18)).toEqual(expected);
    expect(new Executor(eager, { profile: 'bf16' }).generate([16], 18)).toEqual(expected);
    const built = lazy.embedTokens.csr!;
    expect([...built.rowPtr]).toEqual([...want.rowPtr]);
    expect([...built.colIdx]).toEqual([...want.colIdx]);
    expect(bits(built.values)).toEqual(bits(want.values));
    // tied embeddings (tiny's, with random weights): the LM head needs the whole matrix, which then loads as before
    const tiedDir = path.join(tmp, 'tied');
    saveModel(tiedDir, randomModelWeights(resolveTarget('tiny').config, 1), { dtype: 'F32' });
    const tiedPath = path.join(tmp, 'tied.chip');
    compactCheckpoint(tiedDir, tiedPath);
    const tied = openChipFile(tiedPath);
    const whole = loadModelFromChipFile(tied, tiedPath, { mode: 'sparse', lazyEmbedding: true });
    tied.close();
    expect(whole.embedTokens.readRow).toBeUndefined();
    expect(whole.lmHead).toBe(whole.embedTokens);
  });
});

describe('the block scanner', () => {
  it('finds the hand-derived blocks of a small tensor', () => {
    // 1.0f = 00 00 80 3f, 2.0f = 00 00 00 40 (little-endian): non-zero bytes at 2, 3 and 31.
    const bytes = new Uint8Array(new Float32Array([1, 0, 0, 0, 0, 0, 0, 2]).buffer);
    const run = (minGap: number): [number, number][] => {
      const s = new BlockScanner(minGap, () => {});
      s.push(bytes);
      s.finish();
      return [...s.starts].map((x, k): [number, number] => [x, s.lengths[k]!]);
    };
    expect(run(8)).toEqual([[2, 2], [31, 1]]);
    expect(run(27)).toEqual([[2, 2], [31, 1]]); // the gap [4, 31) is exactly 27 zeros
    expect(run(28)).toEqual([[2, 30]]);
  });

  /**
   * Scans `vals` placed `shift` bytes into its buffer (word-aligned and unaligned chunk starts both
   * occur), pushed in chunks of the sizes `cuts` (cycled), and compares the blocks and the bytes
   * sunk with the naive scan. With `skip`, a chunk of zeros is given as its length (skipZeros, as a
   * TensorSource's sparseChunks gives it) instead of its bytes.
   */
  function agreesWithNaive(vals: number[], cuts: number[], minGap: number, shift: number, skip = false): void {
    const backing = new Uint8Array(vals.length + shift);
    backing.set(vals, shift);
    const bytes = backing.subarray(shift);
    const sunk: number[] = [];
    const s = new BlockScanner(minGap, (b, from, to) => sunk.push(...b.subarray(from, to)));
    let at = 0;
    for (let i = 0; at < bytes.length; i++) {
      const n = cuts[i % cuts.length]!;
      const chunk = bytes.subarray(at, Math.min(bytes.length, at + n));
      if (skip && chunk.every((b) => b === 0)) s.skipZeros(chunk.length);
      else s.push(chunk);
      at += n;
    }
    s.finish();
    const want = naiveBlocks(bytes, minGap);
    expect([...s.starts].map((x, k) => [x, s.lengths[k]])).toEqual(want);
    expect(sunk).toEqual(want.flatMap(([st, len]) => [...bytes.subarray(st, st + len)]));
  }

  it('agrees with the naive scan for random sparse bytes, chunkings and gaps', () => {
    fc.assert(fc.property(
      fc.array(fc.oneof(fc.constant(0), fc.constant(0), fc.constant(0), fc.integer({ min: 1, max: 255 })), { maxLength: 300 }),
      fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 20 }),
      fc.integer({ min: 1, max: 20 }),
      fc.integer({ min: 0, max: 3 }),
      (vals, cuts, minGap, shift) => agreesWithNaive(vals, cuts, minGap, shift),
    ), { numRuns: 400 });
  });

  /**
   * Zero runs of up to `maxZeros` bytes between short non-zero runs, cut into chunks of up to
   * `maxCut` bytes, against the naive scan (`skip`: all-zero chunks given as counts).
   */
  const zeroRunsAgree = (maxZeros: number, maxCut: number, maxGap: number, skip: boolean): void => {
    fc.assert(fc.property(
      fc.array(fc.tuple(fc.integer({ min: 0, max: maxZeros }), fc.array(fc.integer({ min: 1, max: 255 }), { minLength: 1, maxLength: 6 })), { maxLength: 30 }),
      fc.integer({ min: 0, max: maxZeros }),
      fc.array(fc.integer({ min: 1, max: maxCut }), { minLength: 1, maxLength: 8 }),
      fc.integer({ min: 1, max: maxGap }),
      fc.integer({ min: 0, max: 3 }),
      (runs, tail, cuts, minGap, shift) => agreesWithNaive(
        [...runs.flatMap(([zeros, data]) => [...new Array<number>(zeros).fill(0), ...data]), ...new Array<number>(tail).fill(0)], cuts, minGap, shift, skip),
    ), { numRuns: 400 });
  };

  it('agrees with the naive scan on long zero runs between short non-zero runs (the four-word skip)', () => {
    zeroRunsAgree(90, 200, 40, false);
  });

  it('thousands of blocks (the table grows past its first arrays), pushed whole and in chunks of 5 bytes', () => {
    // a non-zero byte every 10 bytes, some followed by another: at least 8 zeros between (minGap 8), each its own block
    const bytes = new Uint8Array(10 * 5000);
    for (let i = 0; i < 5000; i++) { bytes[10 * i] = 1 + (i % 255); if (i % 7 === 0) bytes[10 * i + 1] = 3; }
    agreesWithNaive([...bytes], [bytes.length], 8, 0);
    agreesWithNaive([...bytes], [5], 8, 1);
    const s = new BlockScanner(8, () => {});
    s.push(bytes);
    s.finish();
    expect(s.count).toBe(5000);
  });

  it('zero runs given as counts (skipZeros) scan as the same zeros pushed: blocks and stored bytes', () => {
    // short cuts, so that many chunks are all zeros
    zeroRunsAgree(40, 12, 24, true);
    // a gap of minGap − 1 zeros, all skipped, stays inside the block (its zeros are stored)
    const sunk: number[] = [];
    const s = new BlockScanner(8, (b, from, to) => sunk.push(...b.subarray(from, to)));
    s.push(Uint8Array.of(5));
    s.skipZeros(3);
    s.skipZeros(4);
    s.push(Uint8Array.of(6, 0));
    s.skipZeros(8);
    s.push(Uint8Array.of(7));
    s.finish();
    expect([...s.starts].map((x, k) => [x, s.lengths[k]])).toEqual([[0, 9], [18, 1]]);
    expect(sunk).toEqual([5, 0, 0, 0, 0, 0, 0, 0, 6, 7]);
  });
});

// ---------------------------------------------------------------------------------------------
// Corruption and truncation

describe('refusing bad .chip files', () => {
  const small = path.join(tmp, 'small');
  const smallChip = path.join(tmp, 'small.chip');
  let good: Uint8Array;
  const probe = path.join(tmp, 'probe.chip');
  const open = (bytes: Uint8Array): ChipcError => {
    fs.writeFileSync(probe, bytes);
    return chipError(() => openChipFile(probe).close());
  };

  beforeAll(() => {
    writeSmallCheckpoint(small);
    compactCheckpoint(small, smallChip);
    good = new Uint8Array(fs.readFileSync(smallChip));
  });

  it('the small file is valid and expands to its directory', () => {
    const f = openChipFile(smallChip);
    expect(f.names).toEqual(['a', 'b', 'z']);
    expect(f.blocks('z').starts.length).toBe(0);
    expect([...f.blocks('a').starts]).toEqual([2, 31]);
    f.close();
    const out = path.join(tmp, 'small-expanded');
    expandChipFile(smallChip, out);
    expectSameDir(small, out);
  });

  it('refuses a flipped bit at every byte position', () => {
    expect(good.length).toBeLessThan(4000);
    for (let i = 0; i < good.length; i++) {
      const bad = good.slice();
      bad[i] ^= 1 << (i % 8);
      const e = open(bad);
      expect(e.code, `byte ${i}`).toMatch(/^chipfile\./);
    }
  });

  it('refuses truncation at many lengths (every one near either end) and appended bytes', () => {
    const lengths = [...Array(good.length).keys()].filter((n) => n < 64 || n > good.length - 64 || n % 5 === 0);
    for (const n of lengths) {
      expect(open(good.subarray(0, n)).code, `length ${n}`).toMatch(/^chipfile\.(truncated|checksum|magic)$/);
    }
    const longer = new Uint8Array(good.length + 1);
    longer.set(good);
    expect(open(longer).code).toBe('chipfile.checksum');
  });

  it('names the problem: magic, version, reserved field, checksum', () => {
    const m = good.slice();
    m[1] = 0x44;
    expect(open(m).code).toBe('chipfile.magic');
    const v = good.slice();
    v[8] = 5;
    const ev = open(v);
    expect(ev.code).toBe('chipfile.version');
    expect(ev.message).toContain('format version 5 is not supported (this chipc reads versions 1, 2, 3, 4)');
    const r = good.slice();
    r[13] = 1;
    expect(open(r).code).toBe('chipfile.reserved');
    const c = good.slice();
    c[c.length - 1] ^= 0xff;
    expect(open(c).code).toBe('chipfile.checksum');
    expect(open(c).message).toContain('checksum');
  });

  it('refuses resealed files whose manifest or block tables are inconsistent', () => {
    const { manifest, payload } = parts(good);
    expect(() => openChipFile(smallChip).close()).not.toThrow();
    fs.writeFileSync(probe, assemble(good, manifest, payload));
    openChipFile(probe).close(); // reassembly alone gives a valid file
    const m = JSON.parse(manifest);
    const a = m.files.find((f: { name: string }) => f.name === 'model.safetensors').tensors.find((t: { name: string }) => t.name === 'a');
    const edit = (from: string, to: string): Uint8Array => {
      expect(manifest).toContain(from);
      return assemble(good, manifest.replace(from, to), payload);
    };
    // A range that overlaps its predecessor.
    const e1 = open(edit(`"table":[${a.table[0]},`, `"table":[${a.table[0] - 1},`));
    expect(e1.code).toBe('chipfile.manifest');
    expect(e1.message).toMatch(/expected \d+ \(ranges must follow/);
    // A payload size that does not match the file.
    expect(open(edit(`"payloadSize":${m.payloadSize}`, `"payloadSize":${m.payloadSize + 1}`)).code).toBe('chipfile.manifest');
    // Non-canonical text (whitespace) and an unknown format.
    expect(open(edit('{"format"', '{ "format"')).message).toContain('canonical');
    expect(open(edit('"format":"chipc-sparse-checkpoint"', '"format":"other"')).code).toBe('chipfile.manifest');
    // A manifest tensor that disagrees with the stored safetensors header.
    expect(open(edit('"dtype":"F32","shape":[8]', '"dtype":"I32","shape":[8]')).code).toBe('chipfile.header');
    // Block tables: tensor a's table is the varints (2, 2), (27, 1) — hand-derived above.
    const table = payload.subarray(a.table[0], a.table[0] + a.table[1]);
    expect([...table]).toEqual([2, 2, 27, 1]);
    const withTable = (bytes: number[]): Uint8Array => {
      const p = payload.slice();
      p.set(bytes, a.table[0]);
      return assemble(good, manifest, p);
    };
    const touch = open(withTable([2, 2, 0, 1]));
    expect(touch.code).toBe('chipfile.blocks');
    expect(touch.message).toMatch(/overlap or touch/);
    expect(open(withTable([2, 2, 100, 1])).message).toMatch(/runs past the tensor's 32 bytes/);
    expect(open(withTable([2, 1, 27, 1])).message).toMatch(/blocks hold 2 bytes but/);
    expect(open(withTable([2, 2, 27, 0])).message).toMatch(/block 1 is empty/);
    expect(open(withTable([2, 0x82, 0, 1])).message).toMatch(/block 0's length is an over-long varint/);
    expect(open(withTable([2, 2, 27, 0x81])).message).toMatch(/block table ends inside block 1's length/);
    expect(open(withTable([2, 2, 0x9b, 0x80])).message).toMatch(/block table ends inside block 1's gap/);
  });

  it('expand refuses a file whose regenerated bytes do not match the manifest hash, leaving nothing', () => {
    const hashed = path.join(tmp, 'small-hashed.chip');
    compactCheckpoint(small, hashed, { fileHashes: true });
    const hashedBytes = new Uint8Array(fs.readFileSync(hashed));
    const { manifest, payload } = parts(hashedBytes);
    const m = JSON.parse(manifest);
    const st = m.files.find((f: { name: string }) => f.name === 'model.safetensors');
    const wrong = st.sha256.replace(/^./, (c: string) => (c === '0' ? '1' : '0'));
    fs.writeFileSync(probe, assemble(hashedBytes, manifest.replace(st.sha256, wrong), payload));
    const out = path.join(tmp, 'never');
    const e = chipError(() => expandChipFile(probe, out));
    expect(e.code).toBe('chipfile.expand-mismatch');
    expect(fs.existsSync(out)).toBe(false);
    expect(hiddenEntries(tmp)).toEqual([]);
  });

  it('version 4: a safetensors file\'s SHA-256 only on request, every raw file\'s always; expand hashes what the manifest records, or all', () => {
    const sha = (file: string): string => crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
    const entries = (bytes: Uint8Array): { name: string; kind: string; sha256?: string }[] => JSON.parse(parts(bytes).manifest).files;
    // the default (good): no sha256 on the safetensors file, the raw file's present and right
    const plain = entries(good);
    expect(plain.map((f) => [f.name, f.kind])).toEqual([['config.json', 'raw'], ['model.safetensors', 'safetensors']]);
    expect(plain[0]!.sha256).toBe(sha(path.join(small, 'config.json')));
    expect('sha256' in plain[1]!).toBe(false);
    // on request: the dense file's SHA-256, computed independently here
    const hashed = path.join(tmp, 'small-hashed-4.chip');
    compactCheckpoint(small, hashed, { fileHashes: true });
    const withHashes = entries(new Uint8Array(fs.readFileSync(hashed)));
    expect(withHashes[1]!.sha256).toBe(sha(path.join(small, 'model.safetensors')));
    expect(withHashes[0]!.sha256).toBe(plain[0]!.sha256);
    // both expand to the directory; expand hashes (and checks) what the manifest records, or every file when asked
    const all = { 'config.json': sha(path.join(small, 'config.json')), 'model.safetensors': sha(path.join(small, 'model.safetensors')) };
    for (const [file, tag, hashes, want] of [
      [smallChip, 'plain', false, { 'config.json': all['config.json'] }], [smallChip, 'plain-hashes', true, all], [hashed, 'hashed', false, all],
    ] as const) {
      const out = path.join(tmp, `small-v4-${tag}`);
      const r = expandChipFile(file, out, { hashes });
      expectSameDir(small, out);
      expect(r.sha256, tag).toEqual(want);
    }
    // a raw file must keep its sha256 in version 4; a file of version 3 needs every one
    const { manifest, payload } = parts(good);
    const noRawSha = manifest.replace(`,"sha256":"${plain[0]!.sha256}"`, '');
    expect(noRawSha).not.toBe(manifest);
    expect(open(assemble(good, noRawSha, payload)).message).toContain('file "config.json" sha256 is not a string');
    const v3 = assemble(good, manifest.replace('"version":4', '"version":3'), payload);
    v3[8] = 3;
    const e = open(reseal(v3));
    expect(e.code).toBe('chipfile.manifest');
    expect(e.message).toContain('file "model.safetensors" sha256 is not a string');
    expect(chipError(() => compactCheckpoint(small, path.join(tmp, 'x.chip'), { fileHashes: 'yes' as unknown as boolean })).code).toBe('chipfile.option');
  });
});

// ---------------------------------------------------------------------------------------------
// Failed writes, refusals, the CLI

describe('failed writes and refusals', () => {
  it('refuses stray shards, subdirectories and existing targets; a failed rename leaves no file', () => {
    const d = path.join(tmp, 'w');
    writeCheckpoint(d, [denseSource('a', 'F32', [2], new Float32Array([1, 0]))], { extraFiles: { 'config.json': '{}' } });
    const out = path.join(tmp, 'w.chip');
    fs.writeFileSync(path.join(d, 'extra.safetensors'), 'x');
    expect(chipError(() => compactCheckpoint(d, out)).code).toBe('chipfile.stray-shard');
    fs.rmSync(path.join(d, 'extra.safetensors'));
    fs.mkdirSync(path.join(d, 'sub'));
    expect(chipError(() => compactCheckpoint(d, out)).code).toBe('chipfile.dir-entry');
    fs.rmSync(path.join(d, 'sub'), { recursive: true });
    expect(fs.existsSync(out)).toBe(false);

    // Fail at the final rename: the temporaries must be gone and no output must exist.
    const real = fs.renameSync;
    fs.renameSync = () => {
      throw new Error('injected rename failure');
    };
    syncBuiltinESMExports();
    try {
      expect(() => compactCheckpoint(d, out)).toThrow('injected rename failure');
    } finally {
      fs.renameSync = real;
      syncBuiltinESMExports();
    }
    expect(fs.existsSync(out)).toBe(false);
    expect(hiddenEntries(tmp)).toEqual([]);

    compactCheckpoint(d, out);
    expect(chipError(() => compactCheckpoint(d, out)).code).toBe('chipfile.target-exists');
    compactCheckpoint(d, out, { overwrite: true });
    const back = path.join(tmp, 'w-back');
    expandChipFile(out, back);
    expect(chipError(() => expandChipFile(out, back)).code).toBe('chipfile.target-exists');
    expandChipFile(out, back, { overwrite: true });
    expectSameDir(d, back);
    expect(chipError(() => openChipFile(path.join(d, 'config.json'))).code).toBe('chipfile.truncated');
    expect(chipError(() => loadModel(path.join(d, 'model.safetensors'), { mode: 'dense' })).code).toBe('chipfile.magic');
  });

  it('chipc compact / expand on the command line (--json, --overwrite)', async () => {
    const d = path.join(tmp, 'f32 single file');
    const out = path.join(tmp, 'cli.chip');
    let r = await cli('compact', d, '-o', out, '--json');
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.out);
    expect(doc.chipBytes).toBe(fs.statSync(out).size);
    expect(doc.files).toBe(3);
    r = await cli('compact', d, '-o', out);
    expect(r.code).toBe(2);
    expect(r.err).toContain('chipfile.target-exists');
    r = await cli('compact', d, '-o', out, '--overwrite');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/wrote .*cli\.chip/);
    const back = path.join(tmp, 'cli-back');
    r = await cli('expand', out, '-o', back, '--json', '--hashes');
    expect(r.code).toBe(0);
    const expanded = JSON.parse(r.out);
    expect(expanded.files).toEqual(['chipc-manifest.json', 'config.json', 'model.safetensors']);
    expectSameDir(d, back);
    const denseSha = crypto.createHash('sha256').update(fs.readFileSync(path.join(d, 'model.safetensors'))).digest('hex');
    expect(expanded.sha256['model.safetensors']).toBe(denseSha);
    r = await cli('expand', out, '-o', back);
    expect(r.code).toBe(2);
    // --hashes without --json: one `sha256sum` line per file after the summary
    r = await cli('expand', out, '-o', path.join(tmp, 'cli-back-2'), '--hashes');
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain(`${denseSha}  model.safetensors\n`);
    // --file-hashes: the same file as the API writes, with the dense file's SHA-256 in the manifest
    const hashed = path.join(tmp, 'cli-hashed.chip');
    r = await cli('compact', d, '-o', hashed, '--file-hashes');
    expect(r.code, r.err).toBe(0);
    const api = path.join(tmp, 'api-hashed.chip');
    compactCheckpoint(d, api, { fileHashes: true });
    expect(fs.readFileSync(hashed).equals(fs.readFileSync(api))).toBe(true);
    expect(parts(new Uint8Array(fs.readFileSync(hashed))).manifest).toContain(`"name":"model.safetensors","kind":"safetensors","size":${fs.statSync(path.join(d, 'model.safetensors')).size},"sha256":"${denseSha}"`);
    r = await cli('expand', path.join(d, 'config.json'), '-o', path.join(tmp, 'cli-x'), '--json');
    expect(r.code).toBe(2);
    expect(JSON.parse(r.out).error.code).toMatch(/^chipfile\./);
  });
});
