/**
 * `.chip` format versions 2 and 3 (src/chipfile/codec.ts, docs/chip-file.md "Version 2", "Version
 * 3"): brotli frames
 * round-trip bit for bit (compact → expand, every byte range through readBytes, fast-check), a
 * tensor larger than one frame is read through arbitrary ranges with and without the frame cache,
 * frames are exactly brotli with the documented parameters (re-derived here from zlib), version 1
 * files (a fixture written by the version-1 chipc) still read and `codec: 'none'` still writes
 * them byte for byte, version 2 files (a fixture of the version-2 writer) still read and expand,
 * raw files of version 3 are brotli frames exactly where that pays, corrupted frames and lying frame indexes are refused with chipfile.codec,
 * writes are deterministic, and `chipc compact --codec` works.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { denseSource, writeCheckpoint, zerosSource } from '../src/safetensors/writer.ts';
import type { TensorSource } from '../src/safetensors/types.ts';
import { compactCheckpoint } from '../src/chipfile/compact.ts';
import { writeChipFromSources } from '../src/chipfile/from-sources.ts';
import { expandChipFile } from '../src/chipfile/expand.ts';
import { openChipFile } from '../src/chipfile/read.ts';
import { decodeFrameIndex, encodeFrame, encodeFrameIndex, FrameEncoder, inflateFrame, worthCompressing } from '../src/chipfile/codec.ts';
import { encodeBlockTable, varintSize, writeVarint } from '../src/chipfile/format.ts';
import { ChipcError } from '../src/util/errors.ts';
import { cli } from './helpers/cli.ts';
import { expectSameDir } from './helpers/dirs.ts';
import { assemble, parts, writeSmallCheckpoint } from './helpers/chip-image.ts';
import { chipError } from './helpers/assert.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-chipcodec-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Independent LEB128 reader: all varints of `bytes`. */
function varints(bytes: Uint8Array): number[] {
  const out: number[] = [];
  let x = 0;
  let scale = 1;
  for (const b of bytes) {
    x += (b & 0x7f) * scale;
    scale *= 128;
    if ((b & 0x80) === 0) { out.push(x); x = 0; scale = 1; }
  }
  return out;
}
function leb(xs: number[]): number[] {
  const out: number[] = [];
  for (let x of xs) {
    while (x >= 128) { out.push((x % 128) | 128); x = Math.floor(x / 128); }
    out.push(x);
  }
  return out;
}

/** Brotli with the documented frame parameters (quality 5, lgwin 22, generic, size hint), from zlib directly. */
function brotliQ5(frame: Uint8Array): Buffer {
  const c = zlib.constants;
  return zlib.brotliCompressSync(frame, { params: { [c.BROTLI_PARAM_QUALITY]: 5, [c.BROTLI_PARAM_LGWIN]: 22, [c.BROTLI_PARAM_MODE]: c.BROTLI_MODE_GENERIC, [c.BROTLI_PARAM_SIZE_HINT]: frame.length } });
}

/** A base64 fixture written to a file, after checking the version in its prefix. */
function fixtureFile(base64: string, version: number): string {
  const bytes = Buffer.from(base64, 'base64');
  expect(bytes.readUInt32LE(8)).toBe(version);
  const file = path.join(tmp, `fixture-v${version}.chip`);
  fs.writeFileSync(file, bytes);
  return file;
}

interface TensorJson { name: string; codec?: string; data: [number, number]; dataSize?: number; table: [number, number]; tableSize?: number; frames?: [number, number]; blocks: number }
function tensorOf(manifest: string, name: string): TensorJson {
  const m = JSON.parse(manifest) as { files: { tensors?: TensorJson[] }[] };
  for (const f of m.files) for (const t of f.tensors ?? []) if (t.name === name) return t;
  return expect.fail(`no tensor ${name}`);
}

// The checkpoint: "pat" (3.1 MB, periodic small integers, every 7th zero: compressible, > 3 frames
// of 1 MiB), "rnd" (1.5 MiB of pseudo-random bytes: incompressible), a tiny and an all-zero tensor.
const PAT_N = 3 * (1 << 18) + 12345;
const pat = new Float32Array(PAT_N);
for (let i = 0; i < PAT_N; i++) pat[i] = i % 7 === 0 ? 0 : ((i * 37) % 13) + 1;
const rnd = new Uint8Array(3 << 19);
{
  let s = 0x9e3779b9;
  for (let i = 0; i < rnd.length; i++) {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    rnd[i] = s & 0xff;
  }
}
const patBytes = new Uint8Array(pat.buffer);
const DENSE: Record<string, Uint8Array> = { pat: patBytes, rnd, tiny: new Uint8Array(new Float32Array([0, 1, 0, 0]).buffer), zero: new Uint8Array(64) };
const sources = (): TensorSource[] => [
  denseSource('pat', 'F32', [PAT_N], pat),
  denseSource('rnd', 'U8', [rnd.length], rnd),
  denseSource('tiny', 'F32', [4], new Float32Array([0, 1, 0, 0])),
  zerosSource('zero', 'F32', [16]),
];
const SMALL_FRAME = 4099;
const dir = path.join(tmp, 'ckpt');
const chipA = path.join(tmp, 'a.chip'); // default: br, 1 MiB frames
const chipS = path.join(tmp, 's.chip'); // br, 4099-byte frames (odd: frames cut blocks anywhere)
const chipN = path.join(tmp, 'n.chip'); // codec none: version 1

beforeAll(() => {
  writeCheckpoint(dir, sources(), { extraFiles: { 'config.json': '{"x":1}\n' } });
  compactCheckpoint(dir, chipA);
  compactCheckpoint(dir, chipS, { frameSize: SMALL_FRAME });
  compactCheckpoint(dir, chipN, { codec: 'none' });
});

describe('brotli frames of tensors', () => {
  it('writes version 4 with br where it pays (pat) and none where not (rnd, tiny), and expands bit for bit', () => {
    const a = fs.readFileSync(chipA);
    expect(a.readUInt32LE(8)).toBe(4);
    const { manifest } = parts(a);
    expect(manifest).toContain('"frameSize":1048576');
    const p = tensorOf(manifest, 'pat');
    expect(p.codec).toBe('br');
    expect(p.dataSize!).toBeGreaterThan(3 << 20); // more than 3 frames
    expect(p.data[1] * 20).toBeLessThan(p.dataSize!);
    expect(tensorOf(manifest, 'rnd').codec).toBe('none');
    expect(tensorOf(manifest, 'tiny').codec).toBe('none');
    expect(tensorOf(manifest, 'zero').blocks).toBe(0);
    expect(a.length).toBeLessThan(fs.statSync(chipN).size - (3 << 20)); // pat shrinks from 3 MiB to a few kB
    for (const c of [chipA, chipS, chipN]) {
      const out = path.join(tmp, `exp-${path.basename(c)}`);
      expandChipFile(c, out);
      expectSameDir(dir, out);
    }
  });

  it('frames are exactly brotli (quality 5, lgwin 22, generic, size hint) of the block data, or verbatim', () => {
    // Independent derivation: the block data of pat is the tensor bytes from its first non-zero
    // byte to its last: one block, since its longest zero run is 6 bytes (a zero element and the two
    // zero low bytes of the small integer after it).
    let first = 0;
    while (patBytes[first] === 0) first++;
    let last = patBytes.length;
    while (patBytes[last - 1] === 0) last--;
    const f = openChipFile(chipA);
    expect(f.blocks('pat').starts.length).toBe(1);
    f.close();
    const blockData = patBytes.subarray(first, last);
    const { manifest, payload } = parts(fs.readFileSync(chipA));
    const t = tensorOf(manifest, 'pat');
    expect(t.dataSize).toBe(blockData.length);
    const stored = varints(payload.subarray(t.frames![0], t.frames![0] + t.frames![1]));
    const F = 1 << 20;
    expect(stored.length).toBe(Math.ceil(blockData.length / F) + 1); // data frames, then the one table frame
    let at = t.data[0];
    for (let k = 0; k * F < blockData.length; k++) {
      const frame = blockData.subarray(k * F, Math.min(blockData.length, (k + 1) * F));
      const br = brotliQ5(frame);
      expect(stored[k]).toBe(br.length);
      expect(Buffer.from(payload.subarray(at, at + stored[k])).equals(br), `frame ${k}`).toBe(true);
      at += stored[k];
    }
    expect(at).toBe(t.data[0] + t.data[1]);
    // The table (one block: varints first, length) is 1 frame, too short to pay: verbatim.
    expect(stored[stored.length - 1]).toBe(t.tableSize);
    expect([...payload.subarray(t.table[0], t.table[0] + t.table[1])]).toEqual(leb([first, last - first]));
  });

  it('every byte range of every tensor equals the dense bytes (1 MiB and 4099-byte frames, cached and uncached)', () => {
    const files = [openChipFile(chipA), openChipFile(chipS), openChipFile(chipS, { frameCacheBytes: 0 }), openChipFile(chipN)];
    try {
      for (const f of files) {
        expect(Buffer.from(f.readBytes('pat')).equals(patBytes)).toBe(true);
        const f32 = f.readF32('pat'); // bit patterns, compared as bytes
        expect(Buffer.from(f32.buffer, f32.byteOffset, f32.byteLength).equals(patBytes)).toBe(true);
      }
      fc.assert(fc.property(
        fc.constantFrom('pat', 'rnd', 'tiny', 'zero'), fc.nat(), fc.nat(), fc.nat({ max: 3 }),
        (name, a, b, which) => {
          const dense = DENSE[name];
          const s = a % (dense.length + 1);
          const e = s + (b % (Math.min(dense.length - s, 3 << 18) + 1));
          const got = files[which].readBytes(name, s, e);
          return Buffer.from(got).equals(dense.subarray(s, e));
        },
      ), { numRuns: 300 });
      // chunks() streams the same bytes in order, across frame boundaries.
      const parts_: Uint8Array[] = [...files[1].chunks('pat', 100_003)];
      expect(Buffer.concat(parts_).equals(patBytes)).toBe(true);
    } finally {
      for (const f of files) f.close();
    }
  });

  it('is deterministic, and compact equals writeChipFromSources (br and none, with and without file hashes)', () => {
    const again = path.join(tmp, 'again.chip');
    compactCheckpoint(dir, again);
    expect(fs.readFileSync(again).equals(fs.readFileSync(chipA))).toBe(true);
    const direct = path.join(tmp, 'direct.chip');
    writeChipFromSources(direct, sources(), { extraFiles: { 'config.json': '{"x":1}\n' } });
    expect(fs.readFileSync(direct).equals(fs.readFileSync(chipA))).toBe(true);
    writeChipFromSources(direct, sources(), { extraFiles: { 'config.json': '{"x":1}\n' }, frameSize: SMALL_FRAME, overwrite: true });
    expect(fs.readFileSync(direct).equals(fs.readFileSync(chipS))).toBe(true);
    writeChipFromSources(direct, sources(), { extraFiles: { 'config.json': '{"x":1}\n' }, codec: 'none', overwrite: true });
    expect(fs.readFileSync(direct).equals(fs.readFileSync(chipN))).toBe(true);
    const hashed = path.join(tmp, 'hashed.chip');
    compactCheckpoint(dir, hashed, { fileHashes: true });
    writeChipFromSources(direct, sources(), { extraFiles: { 'config.json': '{"x":1}\n' }, fileHashes: true, overwrite: true });
    expect(fs.readFileSync(direct).equals(fs.readFileSync(hashed))).toBe(true);
    expect(fs.readFileSync(hashed).equals(fs.readFileSync(chipA))).toBe(false);
    expect(chipError(() => compactCheckpoint(dir, again, { overwrite: true, frameSize: 0 })).code).toBe('chipfile.option');
    expect(chipError(() => compactCheckpoint(dir, again, { overwrite: true, codec: 'zip' as 'br' })).code).toBe('chipfile.option');
  });
});

describe('version 1', () => {
  // Written by the version-1 chipc (before version 2 existed) from the checkpoint built below.
  const V1_FIXTURE =
    'iUNISVANChoBAAAAAAAAALoCAAAAAAAAeyJmb3JtYXQiOiJjaGlwYy1zcGFyc2UtY2hlY2twb2ludCIsInZlcnNpb24iOjEsIm1pbkdhcCI6OCwicGF5bG9hZFNpemUiOjIyNywiZmlsZXMiOlt7Im5hbWUiOiJjb25maWcuanNvbiIsImtpbmQiOiJyYXciLCJzaXplIjo4LCJzaGEyNTYiOiJiYjE1Nzg2MWExNjRlMzVjZGRlOWQ3MjZiMGFmOWNlMjc2NWE4ZjUzMGMzNWQ5ZTQ1NzMyYjk0ZWU2NWU5NTU3IiwiZGF0YSI6WzAsOF19LHsibmFtZSI6Im1vZGVsLnNhZmV0ZW5zb3JzIiwia2luZCI6InNhZmV0ZW5zb3JzIiwic2l6ZSI6MjY4LCJzaGEyNTYiOiI1NzZhZjJhNzZiYjcyZTA0NGY4NzY2NzE4MmM0NWY3YzU5OGM4OTVjY2NlYTAxZGMzOTcxZTlmMzJlMjA3MjBjIiwiaGVhZGVyIjpbOCwyMDhdLCJ0ZW5zb3JzIjpbeyJuYW1lIjoiYSIsImR0eXBlIjoiRjMyIiwic2hhcGUiOls4XSwiZGF0YU9mZnNldHMiOlswLDMyXSwiZGF0YSI6WzIxNiwzXSwidGFibGUiOlsyMTksNF0sImJsb2NrcyI6Mn0seyJuYW1lIjoieiIsImR0eXBlIjoiRjMyIiwic2hhcGUiOls0XSwiZGF0YU9mZnNldHMiOlszMiw0OF0sImRhdGEiOlsyMjMsMF0sInRhYmxlIjpbMjIzLDBdLCJibG9ja3MiOjB9LHsibmFtZSI6ImIiLCJkdHlwZSI6IkJGMTYiLCJzaGFwZSI6WzIsM10sImRhdGFPZmZzZXRzIjpbNDgsNjBdLCJkYXRhIjpbMjIzLDJdLCJ0YWJsZSI6WzIyNSwyXSwiYmxvY2tzIjoxfV19XX17IngiOjF9CsgAAAAAAAAAeyJfX21ldGFkYXRhX18iOnsiZm9ybWF0IjoicHQifSwiYSI6eyJkdHlwZSI6IkYzMiIsInNoYXBlIjpbOF0sImRhdGFfb2Zmc2V0cyI6WzAsMzJdfSwieiI6eyJkdHlwZSI6IkYzMiIsInNoYXBlIjpbNF0sImRhdGFfb2Zmc2V0cyI6WzMyLDQ4XX0sImIiOnsiZHR5cGUiOiJCRjE2Iiwic2hhcGUiOlsyLDNdLCJkYXRhX29mZnNldHMiOls0OCw2MF19fSCAP0ACAhsBQMAIAvxyCOmRi1De96HDRwoILaIUaxywR5TE/4UA6Te/i+0Y';
  const small = path.join(tmp, 'small');

  beforeAll(() => {
    writeSmallCheckpoint(small);
  });

  it('a file of the version-1 writer still opens and expands to its directory; codec none writes it byte for byte', () => {
    const file = fixtureFile(V1_FIXTURE, 1);
    const v1 = fs.readFileSync(file);
    const f = openChipFile(file);
    expect(f.manifest.version).toBe(1);
    expect([...f.readBytes('a')]).toEqual([...new Uint8Array(new Float32Array([1, 0, 0, 0, 0, 0, 0, 2]).buffer)]);
    f.close();
    const out = path.join(tmp, 'fixture-v1-expanded');
    expandChipFile(file, out);
    expectSameDir(small, out);
    const none = path.join(tmp, 'small-none.chip');
    compactCheckpoint(small, none, { codec: 'none' });
    expect(fs.readFileSync(none).equals(v1)).toBe(true);
  });
});

describe('version 3: raw files in brotli frames', () => {
  // A compressible raw file of 3 frames of 4099 bytes and a bit (each frame brotli), the
  // incompressible tensor's bytes as a raw file (every frame verbatim: codec none) and a tiny one.
  const text = Array.from({ length: 700 }, (_, i) => `{"row":${i},"fields":[${i % 5},${i % 3}]}`).join('\n') + '\n';
  const rawDir = path.join(tmp, 'raw-ckpt');
  const rawChip = path.join(tmp, 'raw.chip');
  beforeAll(() => {
    expect(text.length).toBeGreaterThan(3 * SMALL_FRAME);
    writeCheckpoint(rawDir, [denseSource('tiny', 'F32', [4], new Float32Array([0, 1, 0, 0]))],
      { extraFiles: { 'config.json': '{"x":1}\n', 'rows.json': text, 'noise.bin': rnd.subarray(0, 10_000) } });
    compactCheckpoint(rawDir, rawChip, { frameSize: SMALL_FRAME });
  });
  interface RawJson { name: string; kind: string; size: number; codec?: string; data: [number, number]; frames?: [number, number] }
  const rawOf = (manifest: string, name: string): RawJson => (JSON.parse(manifest) as { files: RawJson[] }).files.find((f) => f.name === name)!;

  it('stores a compressible file as brotli frames of its bytes (re-derived from zlib), the others verbatim', () => {
    const { manifest, payload } = parts(fs.readFileSync(rawChip));
    const r = rawOf(manifest, 'rows.json');
    const bytes = new TextEncoder().encode(text);
    expect(r).toMatchObject({ kind: 'raw', size: bytes.length, codec: 'br' });
    const stored = varints(payload.subarray(r.frames![0], r.frames![0] + r.frames![1]));
    expect(stored.length).toBe(Math.ceil(bytes.length / SMALL_FRAME));
    let at = r.data[0];
    for (let k = 0; k < stored.length; k++) {
      const frame = bytes.subarray(k * SMALL_FRAME, Math.min(bytes.length, (k + 1) * SMALL_FRAME));
      const br = brotliQ5(frame);
      expect(Buffer.from(payload.subarray(at, at + stored[k])).equals(br), `frame ${k}`).toBe(true);
      at += stored[k];
    }
    expect(at).toBe(r.data[0] + r.data[1]);
    expect(r.data[1] * 4).toBeLessThan(bytes.length);
    for (const name of ['noise.bin', 'config.json']) {
      const v = rawOf(manifest, name);
      expect(v.codec, name).toBe('none');
      expect(v.frames, name).toBeUndefined();
      expect(v.data[1], name).toBe(v.size);
    }
    const f = openChipFile(rawChip);
    try {
      expect(new TextDecoder().decode(f.readFile('rows.json'))).toBe(text);
      expect(Buffer.from(f.readFile('noise.bin')).equals(rnd.subarray(0, 10_000))).toBe(true);
    } finally {
      f.close();
    }
    const out = path.join(tmp, 'raw-expanded');
    expandChipFile(rawChip, out);
    expectSameDir(rawDir, out);
    // one file per write path: the direct writer gives the same bytes
    const direct = path.join(tmp, 'raw-direct.chip');
    writeChipFromSources(direct, [denseSource('tiny', 'F32', [4], new Float32Array([0, 1, 0, 0]))],
      { extraFiles: { 'config.json': '{"x":1}\n', 'rows.json': text, 'noise.bin': rnd.subarray(0, 10_000) }, frameSize: SMALL_FRAME });
    expect(fs.readFileSync(direct).equals(fs.readFileSync(rawChip))).toBe(true);
  });

  it('refuses a corrupted raw frame (chipfile.codec naming the file), a lying frame index and a bad codec', () => {
    const good = new Uint8Array(fs.readFileSync(rawChip));
    const { manifest, payload } = parts(good);
    const r = rawOf(manifest, 'rows.json');
    const probe = path.join(tmp, 'raw-probe.chip');
    const open = (bytes: Uint8Array): ChipcError => {
      fs.writeFileSync(probe, bytes);
      return chipError(() => { const f = openChipFile(probe); try { f.readFile('rows.json'); } finally { f.close(); } });
    };
    const p = payload.slice();
    p[r.data[0] + 5] ^= 0x40;
    const e = open(assemble(good, manifest, p));
    expect(e.code).toBe('chipfile.codec');
    expect(e.message).toMatch(/file "rows\.json" frame 0: brotli frame/);
    const idx = payload.slice();
    idx[r.frames![0]] += 1; // frame 0 one byte longer: the segment's frames no longer add up
    expect(open(assemble(good, manifest, idx)).message).toMatch(/file "rows\.json": data frames hold/);
    expect(open(assemble(good, manifest.replace('"codec":"br","data"', '"codec":"zip","data"'), payload)).code).toBe('chipfile.manifest');
  });
});

/** The checkpoint the version-2 and version-3 fixtures were written from: tensors a and p, config.json and notes.txt. */
const FIXTURE_P = new Float32Array(256).map((_, i) => (i % 4) + 1);
const fixtureSources = (): TensorSource[] => [denseSource('a', 'F32', [8], new Float32Array([1, 0, 0, 0, 0, 0, 0, 2])), denseSource('p', 'F32', [256], FIXTURE_P)];
const FIXTURE_FILES = { 'config.json': '{"x":1}\n', 'notes.txt': 'chip '.repeat(100) };

describe('version 2', () => {
  // Written by the version-2 chipc (raw files verbatim; tensor p in brotli frames of 256 bytes)
  // from a checkpoint of tensor a (as in the small checkpoint), p (256 floats 1, 2, 3, 4 repeated),
  // config.json {"x":1} and notes.txt ("chip " 100 times).
  const V2_FIXTURE = 'iUNISVANChoCAAAAAAAAADsDAAAAAAAAeyJmb3JtYXQiOiJjaGlwYy1zcGFyc2UtY2hlY2twb2ludCIsInZlcnNpb24iOjIsIm1pbkdhcCI6OCwiZnJhbWVTaXplIjoyNTYsInBheWxvYWRTaXplIjo3NjcsImZpbGVzIjpbeyJuYW1lIjoiY29uZmlnLmpzb24iLCJraW5kIjoicmF3Iiwic2l6ZSI6OCwic2hhMjU2IjoiYmIxNTc4NjFhMTY0ZTM1Y2RkZTlkNzI2YjBhZjljZTI3NjVhOGY1MzBjMzVkOWU0NTczMmI5NGVlNjVlOTU1NyIsImRhdGEiOlswLDhdfSx7Im5hbWUiOiJtb2RlbC5zYWZldGVuc29ycyIsImtpbmQiOiJzYWZldGVuc29ycyIsInNpemUiOjEyMTYsInNoYTI1NiI6IjAyNDU4N2RjOGVhZThjZDA3ZTQxZjgzMmQ3ODA2ODUyNGI5NGFiYzg0NGNjZGVjNjE1NzMwNjY1ZmQ2YTZkODAiLCJoZWFkZXIiOls4LDE2MF0sInRlbnNvcnMiOlt7Im5hbWUiOiJhIiwiZHR5cGUiOiJGMzIiLCJzaGFwZSI6WzhdLCJkYXRhT2Zmc2V0cyI6WzAsMzJdLCJjb2RlYyI6Im5vbmUiLCJkYXRhIjpbMTY4LDNdLCJ0YWJsZSI6WzE3MSw0XSwiYmxvY2tzIjoyfSx7Im5hbWUiOiJwIiwiZHR5cGUiOiJGMzIiLCJzaGFwZSI6WzI1Nl0sImRhdGFPZmZzZXRzIjpbMzIsMTA1Nl0sImNvZGVjIjoiYnIiLCJkYXRhIjpbMTc1LDg0XSwiZGF0YVNpemUiOjEwMjIsInRhYmxlIjpbMjU5LDNdLCJ0YWJsZVNpemUiOjMsImZyYW1lcyI6WzI2Miw1XSwiYmxvY2tzIjoxfV19LHsibmFtZSI6Im5vdGVzLnR4dCIsImtpbmQiOiJyYXciLCJzaXplIjo1MDAsInNoYTI1NiI6IjE1NjQxM2UxYzA4MWYyNjJlODg2NmE0ZmM5MGRlYmZiZTQ1Y2IwNTdmMThiZTNhYjFlYjAzZDY1ZmNhYzY3Y2MiLCJkYXRhIjpbMjY3LDUwMF19XX17IngiOjF9CpgAAAAAAAAAeyJfX21ldGFkYXRhX18iOnsiZm9ybWF0IjoicHQifSwiYSI6eyJkdHlwZSI6IkYzMiIsInNoYXBlIjpbOF0sImRhdGFfb2Zmc2V0cyI6WzAsMzJdfSwicCI6eyJkdHlwZSI6IkYzMiIsInNoYXBlIjpbMjU2XSwiZGF0YV9vZmZzZXRzIjpbMzIsMTA1Nl19fSAgICAgICCAP0ACAhsBG/8AAKQBfoAAdQIKwDCYGLJA5KcAG/8AAKQBfoAAdQIKwDCYGLJA5KcAG/8AAKQBfoAAdQIKwDCYGLJA5KcAG/0AAKQBfoAAdQIKwDCYGLJA5J8AAv4HFRUVFQNjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwIGNoaXAgY2hpcCBjaGlwILbBbvpxOR3Gl+8kvB4BUfrJaOi4Eq17h9AedwLToL1f';

  it('a file of the version-2 writer still opens, reads and expands to its directory', () => {
    const file = fixtureFile(V2_FIXTURE, 2);
    const f = openChipFile(file);
    const p = FIXTURE_P;
    try {
      expect(f.manifest.version).toBe(2);
      expect(new TextDecoder().decode(f.readFile('notes.txt'))).toBe('chip '.repeat(100));
      expect(Buffer.from(f.readBytes('p')).equals(Buffer.from(p.buffer))).toBe(true);
      expect(f.manifest.files.every((x) => x.kind !== 'raw' || x.codec === 'none')).toBe(true);
    } finally {
      f.close();
    }
    const src = path.join(tmp, 'v2-src');
    writeCheckpoint(src, fixtureSources(), { extraFiles: FIXTURE_FILES });
    const out = path.join(tmp, 'fixture-v2-expanded');
    expandChipFile(file, out);
    expectSameDir(src, out);
  });
});

describe('version 3', () => {
  // Written by the version-3 chipc (every file's sha256; raw files and tensor p in brotli frames of
  // 256 bytes) from the checkpoint of the version-2 fixture.
  const V3_FIXTURE = 'iUNISVANChoDAAAAAAAAAGcDAAAAAAAAeyJmb3JtYXQiOiJjaGlwYy1zcGFyc2UtY2hlY2twb2ludCIsInZlcnNpb24iOjMsIm1pbkdhcCI6OCwiZnJhbWVTaXplIjoyNTYsInBheWxvYWRTaXplIjozMDMsImZpbGVzIjpbeyJuYW1lIjoiY29uZmlnLmpzb24iLCJraW5kIjoicmF3Iiwic2l6ZSI6OCwic2hhMjU2IjoiYmIxNTc4NjFhMTY0ZTM1Y2RkZTlkNzI2YjBhZjljZTI3NjVhOGY1MzBjMzVkOWU0NTczMmI5NGVlNjVlOTU1NyIsImNvZGVjIjoibm9uZSIsImRhdGEiOlswLDhdfSx7Im5hbWUiOiJtb2RlbC5zYWZldGVuc29ycyIsImtpbmQiOiJzYWZldGVuc29ycyIsInNpemUiOjEyMTYsInNoYTI1NiI6IjAyNDU4N2RjOGVhZThjZDA3ZTQxZjgzMmQ3ODA2ODUyNGI5NGFiYzg0NGNjZGVjNjE1NzMwNjY1ZmQ2YTZkODAiLCJoZWFkZXIiOls4LDE2MF0sInRlbnNvcnMiOlt7Im5hbWUiOiJhIiwiZHR5cGUiOiJGMzIiLCJzaGFwZSI6WzhdLCJkYXRhT2Zmc2V0cyI6WzAsMzJdLCJjb2RlYyI6Im5vbmUiLCJkYXRhIjpbMTY4LDNdLCJ0YWJsZSI6WzE3MSw0XSwiYmxvY2tzIjoyfSx7Im5hbWUiOiJwIiwiZHR5cGUiOiJGMzIiLCJzaGFwZSI6WzI1Nl0sImRhdGFPZmZzZXRzIjpbMzIsMTA1Nl0sImNvZGVjIjoiYnIiLCJkYXRhIjpbMTc1LDg0XSwiZGF0YVNpemUiOjEwMjIsInRhYmxlIjpbMjU5LDNdLCJ0YWJsZVNpemUiOjMsImZyYW1lcyI6WzI2Miw1XSwiYmxvY2tzIjoxfV19LHsibmFtZSI6Im5vdGVzLnR4dCIsImtpbmQiOiJyYXciLCJzaXplIjo1MDAsInNoYTI1NiI6IjE1NjQxM2UxYzA4MWYyNjJlODg2NmE0ZmM5MGRlYmZiZTQ1Y2IwNTdmMThiZTNhYjFlYjAzZDY1ZmNhYzY3Y2MiLCJjb2RlYyI6ImJyIiwiZGF0YSI6WzI2NywzNF0sImZyYW1lcyI6WzMwMSwyXX1dfXsieCI6MX0KmAAAAAAAAAB7Il9fbWV0YWRhdGFfXyI6eyJmb3JtYXQiOiJwdCJ9LCJhIjp7ImR0eXBlIjoiRjMyIiwic2hhcGUiOls4XSwiZGF0YV9vZmZzZXRzIjpbMCwzMl19LCJwIjp7ImR0eXBlIjoiRjMyIiwic2hhcGUiOlsyNTZdLCJkYXRhX29mZnNldHMiOlszMiwxMDU2XX19ICAgICAgIIA/QAICGwEb/wAApAF+gAB1AgrAMJgYskDkpwAb/wAApAF+gAB1AgrAMJgYskDkpwAb/wAApAF+gAB1AgrAMJgYskDkpwAb/QAApAF+gAB1AgrAMJgYskDknwAC/gcVFRUVAxv/AAAENuBIY0/ajtWiqNkOG/MAAAQ24EhjT9qO1aJItSMREbV70Onzlqt2t3HRupDWoIww7V24SVTLHL4oO/imuYlC';

  it('a file of the version-3 writer still opens, reads and expands to its directory, checking every file\'s SHA-256', () => {
    const file = fixtureFile(V3_FIXTURE, 3);
    const p = FIXTURE_P;
    const f = openChipFile(file);
    try {
      expect(f.manifest.version).toBe(3);
      expect(f.manifest.files.every((x) => x.sha256 !== null)).toBe(true);
      expect(new TextDecoder().decode(f.readFile('notes.txt'))).toBe('chip '.repeat(100));
      expect(Buffer.from(f.readBytes('p')).equals(Buffer.from(p.buffer))).toBe(true);
      expect(f.manifest.files.find((x) => x.name === 'notes.txt')).toMatchObject({ kind: 'raw', codec: 'br' });
    } finally {
      f.close();
    }
    const src = path.join(tmp, 'v3-src');
    writeCheckpoint(src, fixtureSources(), { extraFiles: FIXTURE_FILES });
    const out = path.join(tmp, 'fixture-v3-expanded');
    const r = expandChipFile(file, out);
    expectSameDir(src, out);
    expect(r.sha256['model.safetensors']).toMatch(/^[0-9a-f]{64}$/);
    // the current writer, asked for file hashes, writes the same manifest but for the version
    const now = path.join(tmp, 'v3-now.chip');
    writeChipFromSources(now, fixtureSources(), { extraFiles: FIXTURE_FILES, frameSize: 256, fileHashes: true });
    const old = parts(fs.readFileSync(file));
    const cur = parts(fs.readFileSync(now));
    expect(cur.manifest).toBe(old.manifest.replace('"version":3', '"version":4'));
    expect(Buffer.from(cur.payload).equals(Buffer.from(old.payload))).toBe(true);
  });
});

describe('frame rules and refusing bad frames', () => {
  let good: Uint8Array;
  const probe = path.join(tmp, 'probe.chip');
  let t: TensorJson;
  let stored: number[];
  let nData: number;
  beforeAll(() => {
    good = new Uint8Array(fs.readFileSync(chipS));
    const { manifest, payload } = parts(good);
    t = tensorOf(manifest, 'pat');
    stored = varints(payload.subarray(t.frames![0], t.frames![0] + t.frames![1]));
    nData = Math.ceil(t.dataSize! / SMALL_FRAME);
  });
  /** The file with the frame index of pat replaced by `lengths` (same encoded length). */
  const withIndex = (lengths: number[]): Uint8Array => {
    const { manifest, payload } = parts(good);
    const bytes = leb(lengths);
    expect(bytes.length).toBe(t.frames![1]);
    const p = payload.slice();
    p.set(bytes, t.frames![0]);
    return assemble(good, manifest, p);
  };

  it('a corrupted brotli frame (checksum recomputed) is refused with chipfile.codec naming the tensor and frame', () => {
    const { manifest, payload } = parts(good);
    const k = 2;
    expect(stored[k]).toBeLessThan(SMALL_FRAME); // a brotli frame
    const at = t.data[0] + stored.slice(0, k).reduce((x, y) => x + y, 0);
    const p = payload.slice();
    p.fill(0xff, at + (stored[k] >> 1), at + stored[k]); // overwrite its second half
    fs.writeFileSync(probe, assemble(good, manifest, p));
    const f = openChipFile(probe); // frames are inflated lazily: opening succeeds
    try {
      expect(Buffer.from(f.readBytes('pat', 0, 2 * SMALL_FRAME - 100)).equals(patBytes.subarray(0, 2 * SMALL_FRAME - 100))).toBe(true);
      const e = chipError(() => f.readBytes('pat'));
      expect(e.code).toBe('chipfile.codec');
      expect(e.message).toContain('tensor "pat" block data frame 2');
    } finally {
      f.close();
    }
    const out = path.join(tmp, 'never');
    expect(chipError(() => expandChipFile(probe, out)).code).toBe('chipfile.codec');
    expect(fs.existsSync(out)).toBe(false);
  });

  it('a frame index that lies about lengths is refused (at open where the index is inconsistent, else on reading)', () => {
    const open = (bytes: Uint8Array): ChipcError => {
      fs.writeFileSync(probe, bytes);
      return chipError(() => openChipFile(probe).close());
    };
    // Find two adjacent brotli data frames whose lengths ±1 keep the index length.
    let k = 0;
    while (!(leb([stored[k] + 1, stored[k + 1] - 1]).length === leb([stored[k], stored[k + 1]]).length && stored[k] < SMALL_FRAME - 1)) k++;
    expect(k + 1).toBeLessThan(nData - 1);
    // Shifted boundary: the sums still match, so opening succeeds, and the shifted frame fails to decode.
    const shifted = stored.slice();
    shifted[k] += 1;
    shifted[k + 1] -= 1;
    fs.writeFileSync(probe, withIndex(shifted));
    const f = openChipFile(probe);
    try {
      const e = chipError(() => f.readBytes('pat'));
      expect(e.code).toBe('chipfile.codec');
      expect(e.message).toContain('tensor "pat"');
    } finally {
      f.close();
    }
    // Lengths that do not sum to the stored segment.
    const sum = stored.slice();
    sum[k] += 1;
    const es = open(withIndex(sum));
    expect(es.code).toBe('chipfile.codec');
    expect(es.message).toMatch(/data frames hold \d+ stored bytes but the segment is \d+ bytes/);
  });

  it('varints are written as the independent LEB128 rule (leb) at every byte-count edge, sized exactly', () => {
    const edges = [0, 1, 127, 128, 255, 16383, 16384, 2 ** 21 - 1, 2 ** 21, 2 ** 28 - 1, 2 ** 28, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 35, 2 ** 49 - 1, 2 ** 53 - 1];
    fc.assert(fc.property(fc.array(fc.oneof(fc.constantFrom(...edges), fc.nat(), fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER })), { maxLength: 40 }), (xs) => {
      const want = leb(xs);
      expect([...encodeFrameIndex(xs)]).toEqual(want);
      const out = new Uint8Array(want.length + 3).fill(0xee);
      let p = 1;
      for (const x of xs) {
        const q = writeVarint(out, p, x);
        expect(q - p).toBe(varintSize(x));
        expect(q - p).toBe(leb([x]).length);
        p = q;
      }
      expect(p).toBe(1 + want.length);
      expect([...out.subarray(1, p)]).toEqual(want); // nothing written outside [1, p)
      expect(out[0]).toBe(0xee);
      expect(out[p]).toBe(0xee);
    }), { numRuns: 300 });
  });

  it('a block table is the varint pairs (gap from the previous end, length), over typed and plain arrays alike', () => {
    fc.assert(fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 2 ** 40 }), fc.integer({ min: 1, max: 2 ** 33 })), { maxLength: 50 }), (gl) => {
      const starts: number[] = [];
      const lengths: number[] = [];
      let end = 0;
      for (const [gap, len] of gl) { starts.push(end + gap); lengths.push(len); end += gap + len; }
      const want = leb(gl.flat());
      expect([...encodeBlockTable(starts, lengths, starts.length)]).toEqual(want);
      expect([...encodeBlockTable(Float64Array.from(starts), Float64Array.from(lengths), starts.length)]).toEqual(want);
      // only the first `count` blocks
      if (gl.length > 0) expect([...encodeBlockTable(starts, lengths, gl.length - 1)]).toEqual(leb(gl.slice(0, -1).flat()));
    }), { numRuns: 200 });
  });

  it('FrameEncoder: pieces of any size through push and pushRange give the frames of the whole segment', () => {
    fc.assert(fc.property(
      fc.uint8Array({ minLength: 0, maxLength: 700 }), fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 1, maxLength: 12 }), fc.integer({ min: 1, max: 97 }),
      (bytes, cuts, frameSize) => {
        fc.pre(cuts.some((c) => c > 0)); // (empty pieces among others: all-empty cuts would never advance)
        const framesOf = (feed: (e: FrameEncoder) => void) => {
          const out: number[][] = [];
          const e = new FrameEncoder(frameSize, (b) => out.push([...b]));
          feed(e);
          e.finish();
          return { out, stored: [...e.stored], size: e.size, compressed: e.compressed };
        };
        const whole = framesOf((e) => e.push(bytes));
        const pieces = framesOf((e) => {
          // the piece sits inside a larger array (pushRange) or is a subarray of its own (push)
          for (let at = 0, i = 0; at < bytes.length; i++) {
            const n = Math.min(cuts[i % cuts.length]!, bytes.length - at);
            if (i % 2 === 0) e.pushRange(bytes, at, at + n);
            else e.push(bytes.subarray(at, at + n));
            at += n;
          }
        });
        expect(pieces).toEqual(whole);
        expect(whole.size).toBe(bytes.length);
        expect(whole.out.flat().length).toBe(whole.stored.reduce((a, b) => a + b, 0));
      }), { numRuns: 200 });
  });

  it('decodeFrameIndex: stored lengths in [1, decoded], one varint per frame, nothing left over', () => {
    const fail = (msg: string): never => { throw new ChipcError('chipfile.codec', msg); };
    // Two segments: 10 decoded bytes in frames of 4 (4, 4, 2) stored in 9 bytes; 3 bytes in 1 frame stored verbatim.
    const segs = [{ at: 100, stored: 9, size: 10, what: 'data' }, { at: 109, stored: 3, size: 3, what: 'table' }];
    const [d, t3] = decodeFrameIndex(Uint8Array.from([4, 3, 2, 3]), 4, segs, fail);
    expect([...d.offsets]).toEqual([100, 104, 107]);
    expect([...d.stored]).toEqual([4, 3, 2]);
    expect([...t3.offsets]).toEqual([109]);
    const msg = (bytes: number[]): string => chipError(() => decodeFrameIndex(Uint8Array.from(bytes), 4, segs, fail)).message;
    expect(msg([4, 3, 2, 3, 0])).toBe('frame index has 1 bytes after its frames');
    expect(msg([5, 2, 2, 3])).toBe("data frame 0's stored length is 5, outside [1, its 4 decoded bytes]");
    expect(msg([0, 4, 2, 3])).toBe("data frame 0's stored length is 0, outside [1, its 4 decoded bytes]");
    expect(msg([4, 3, 3, 3])).toBe("data frame 2's stored length is 3, outside [1, its 2 decoded bytes]");
    expect(msg([4, 3, 1, 3])).toBe('data frames hold 8 stored bytes but the segment is 9 bytes');
    expect(msg([4, 3, 2])).toBe("frame index ends inside table frame 0's stored length");
    expect(msg([0x84, 0, 3, 2, 3])).toBe("data frame 0's stored length is an over-long varint");
  });

  it('a frame is stored compressed exactly when brotli saves at least an eighth of it', () => {
    expect([worthCompressing(7, 8), worthCompressing(8, 8), worthCompressing(70, 80), worthCompressing(71, 80)]).toEqual([true, false, true, false]);
    const br = (frame: Uint8Array): number => brotliQ5(frame).length;
    // Pseudo-random bytes below 100 (≈ 6.6 bits each): brotli saves between 1/8 and 1/4.
    const mid = new Uint8Array(20000);
    let x = 12345;
    for (let i = 0; i < mid.length; i++) { x = (x * 1103515245 + 12345) % 2147483648; mid[i] = (x >>> 8) % 100; }
    const m = br(mid);
    expect(8 * m).toBeLessThanOrEqual(7 * mid.length);
    expect(8 * m).toBeGreaterThan(6 * mid.length);
    expect(encodeFrame(mid).length).toBe(m);
    // The incompressible bytes of rnd: verbatim (the same bytes).
    const r = rnd.subarray(0, 20000);
    expect(8 * br(r)).toBeGreaterThan(7 * r.length);
    expect(encodeFrame(r)).toBe(r);
  });

  it('inflateFrame checks the decoded length exactly and wraps brotli errors', () => {
    const ten = zlib.brotliCompressSync(Buffer.from('0123456789'));
    expect(Buffer.from(inflateFrame(ten, 10, 'x')).toString()).toBe('0123456789');
    const longer = chipError(() => inflateFrame(ten, 9, 'tensor "q" block data frame 0'));
    expect(longer.code).toBe('chipfile.codec');
    expect(longer.message).toBe('tensor "q" block data frame 0: brotli frame decodes to more than 9 bytes');
    expect(chipError(() => inflateFrame(ten, 11, 'y')).message).toBe('y: brotli frame decodes to 10 bytes, expected 11');
    expect(chipError(() => inflateFrame(ten.subarray(0, ten.length - 2), 10, 'z')).message).toMatch(/^z: brotli frame does not decode/);
  });
});

describe('the command line', () => {
  it('chipc compact --codec none writes version 1, --codec br (default) version 4; a bad codec is refused', async () => {
    const none = path.join(tmp, 'cli-none.chip');
    let r = await cli('compact', dir, '-o', none, '--codec', 'none', '--json');
    expect(r.code, r.err).toBe(0);
    expect(fs.readFileSync(none).equals(fs.readFileSync(chipN))).toBe(true);
    const br = path.join(tmp, 'cli-br.chip');
    r = await cli('compact', dir, '-o', br);
    expect(r.code, r.err).toBe(0);
    expect(fs.readFileSync(br).equals(fs.readFileSync(chipA))).toBe(true);
    r = await cli('compact', dir, '-o', path.join(tmp, 'cli-x.chip'), '--codec', 'zip', '--json');
    expect(r.code).toBe(2);
    expect(JSON.parse(r.out).error.code).toBe('cli.codec');
  });
});
