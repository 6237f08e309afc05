/**
 * Writer: round trips of every dtype (scalars, empty tensors), byte-level header layout against a
 * hand-written expected header, determinism, sharding and the index text against a hand-written
 * expected string, atomicity on failing sources, sparse / zeros sources against a dense
 * materialisation, and sha256.
 */
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DTYPES, dtypeBits } from '../src/safetensors/dtype.ts';
import { openCheckpoint } from '../src/safetensors/checkpoint.ts';
import { openSafetensors } from '../src/safetensors/reader.ts';
import type { DType, TensorSource } from '../src/safetensors/types.ts';
import {
  denseSource, indexJson, pythonJsonDumps, sha256OfTensor, sparseSource, writeCheckpoint, writeSafetensors, zerosSource,
} from '../src/safetensors/writer.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-st-writer-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));
let counter = 0;
const fresh = (name = 'f.safetensors'): string => {
  const d = path.join(tmp, `case${counter++}`);
  fs.mkdirSync(d);
  return path.join(d, name);
};
const bytesOf = (...vals: number[]): Uint8Array => new Uint8Array(vals);
const f32le = (xs: number[]): Uint8Array => new Uint8Array(new Float32Array(xs).buffer);

describe('round trips', () => {
  it('every dtype as raw bytes, plus scalars and empty tensors', () => {
    const sources: TensorSource[] = [];
    const expected = new Map<string, Uint8Array>();
    DTYPES.forEach((d, i) => {
      const bits = dtypeBits(d);
      const shape = bits === 4 ? [2, 3] : bits === 6 ? [4] : [3];
      const n = (shape.reduce((a, b) => a * b, 1) * bits) / 8;
      const raw = new Uint8Array(n).map((_, j) => (d === 'BOOL' ? j % 2 : (i * 31 + j * 7 + 1) & 0xff));
      sources.push(denseSource(`t.${d}`, d, shape, raw));
      expected.set(`t.${d}`, raw);
      if (bits % 8 === 0) {
        const scalar = new Uint8Array(bits / 8).fill(d === 'BOOL' ? 1 : 0x3c);
        sources.push(denseSource(`scalar.${d}`, d, [], scalar));
        expected.set(`scalar.${d}`, scalar);
      }
      sources.push(zerosSource(`empty.${d}`, d, [0, 4]));
      expected.set(`empty.${d}`, new Uint8Array(0));
    });
    const p = fresh();
    writeSafetensors(p, sources);
    const st = openSafetensors(p);
    expect(st.names.length).toBe(expected.size);
    for (const [name, raw] of expected) expect(Array.from(st.readBytes(name)), name).toEqual(Array.from(raw));
    expect(st.info('scalar.F64').shape).toEqual([]);
    expect(st.info('empty.BF16').shape).toEqual([0, 4]);
    expect(st.metadata).toEqual({ format: 'pt' });
    st.close();
  });

  it('float32 values through every encodable dtype and back, bit for bit', () => {
    const vals: Record<string, number[]> = {
      F32: [1.1, -0, 3.4e38, -1e-45], F64: [1.1, -0, 7], BF16: [1, -0, 256, -0.5], F16: [65504, -0, 2 ** -24, 0.5],
      I8: [-128, 127, 0], U8: [255, 0], I16: [-32768, 5], U16: [65535], I32: [-(2 ** 31), 16777216], U32: [2 ** 32 - 256],
      I64: [-(2 ** 63), 2 ** 62], U64: [2 ** 63, 1], BOOL: [0, 1, 1],
    };
    const p = fresh();
    writeSafetensors(p, Object.entries(vals).map(([d, v]) => denseSource(d, d as DType, [v.length], new Float32Array(v))));
    const st = openSafetensors(p);
    for (const [d, v] of Object.entries(vals)) {
      const want = new Uint32Array(new Float32Array(v).buffer);
      // −0 survives in float dtypes; integer dtypes store it as 0
      const got = new Uint32Array(st.readF32(d).buffer);
      const wantAdj = ['I8', 'U8', 'I16', 'U16', 'I32', 'U32', 'I64', 'U64', 'BOOL'].includes(d) ? want.map((b) => (b === 0x80000000 ? 0 : b)) : want;
      expect(Array.from(got), d).toEqual(Array.from(wantAdj));
    }
    st.close();
  });
});

describe('header layout', () => {
  it('matches a hand-written header: __metadata__ first, keys sorted, dtype rank then name, space padding', () => {
    const p = fresh();
    const res = writeSafetensors(p, [
      denseSource('a', 'U8', [3], bytesOf(1, 2, 3)),
      denseSource('b', 'F32', [1], f32le([1])),
      denseSource('c', 'F64', [1], new Uint8Array(8)),
      denseSource('d', 'BF16', [2], bytesOf(0x80, 0x3f, 0, 0x40)),
      denseSource('e', 'I64', [1], new Uint8Array(8)),
      denseSource('aa', 'F32', [], f32le([2])),
    ], { metadata: { zeta: '1', alpha: 'x"y' } });
    // Ranks: I64 (e) > F64 (c) > F32 (aa, b by name) > BF16 (d) > U8 (a).
    const json = '{"__metadata__":{"alpha":"x\\"y","format":"pt","zeta":"1"},'
      + '"e":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},'
      + '"c":{"dtype":"F64","shape":[1],"data_offsets":[8,16]},'
      + '"aa":{"dtype":"F32","shape":[],"data_offsets":[16,20]},'
      + '"b":{"dtype":"F32","shape":[1],"data_offsets":[20,24]},'
      + '"d":{"dtype":"BF16","shape":[2],"data_offsets":[24,28]},'
      + '"a":{"dtype":"U8","shape":[3],"data_offsets":[28,31]}}';
    const file = fs.readFileSync(p);
    const n = Number(file.readBigUInt64LE(0));
    expect(n % 8).toBe(0);
    expect(n - json.length).toBeGreaterThanOrEqual(0);
    expect(n - json.length).toBeLessThan(8);
    expect(file.subarray(8, 8 + n).toString('utf8')).toBe(json + ' '.repeat(n - json.length));
    expect(file.length).toBe(8 + n + 31);
    expect(Array.from(file.subarray(8 + n + 28))).toEqual([1, 2, 3]);
    expect(res.headerSize).toBe(n);
    expect(res.tensors.map((t) => t.name)).toEqual(['e', 'c', 'aa', 'b', 'd', 'a']);
  });

  it('two writes are byte-identical (and independent of source order)', () => {
    const mk = (): TensorSource[] => [
      denseSource('x', 'BF16', [2, 2], new Float32Array([1, 2, 3, 4])),
      sparseSource('y', 'F32', [10], [3, 7], new Float32Array([5, -6])),
      zerosSource('z', 'U8', [5]),
    ];
    const p1 = fresh();
    const p2 = fresh();
    writeSafetensors(p1, mk(), { metadata: { k: 'v' } });
    writeSafetensors(p2, mk().reverse(), { metadata: { k: 'v' } });
    expect(fs.readFileSync(p1).equals(fs.readFileSync(p2))).toBe(true);
  });

  it('refuses bad input with specific codes and leaves nothing behind', () => {
    const p = fresh();
    const dir = path.dirname(p);
    const cases: [() => unknown, string][] = [
      [() => writeSafetensors(p, [zerosSource('a', 'U8', [1]), zerosSource('a', 'U8', [2])]), 'safetensors.write-duplicate'],
      [() => writeSafetensors(p, [{ name: 'a', dtype: 'U8', shape: [-1], chunks: () => [] }]), 'safetensors.write-shape'],
      [() => writeSafetensors(p, [{ name: 'a', dtype: 'U8', shape: [1.5], chunks: () => [] }]), 'safetensors.write-shape'],
      [() => writeSafetensors(p, [{ name: 'a', dtype: 'F4', shape: [3], chunks: () => [] }]), 'safetensors.write-shape'],
      [() => writeSafetensors(p, [{ name: 'a', dtype: 'X' as DType, shape: [1], chunks: () => [] }]), 'safetensors.write-dtype'],
      [() => writeSafetensors(p, [zerosSource('__metadata__', 'U8', [1])]), 'safetensors.write-name'],
      [() => writeSafetensors(p, [], { metadata: { format: 'tf' } }), 'safetensors.write-metadata'],
      [() => writeSafetensors(p, [{ name: 'a', dtype: 'U8', shape: [4], chunks: () => [new Uint8Array(3)] }]), 'safetensors.source-size'],
      [() => writeSafetensors(p, [{ name: 'a', dtype: 'U8', shape: [4], chunks: () => [new Uint8Array(3), new Uint8Array(2)] }]), 'safetensors.source-size'],
      [() => writeSafetensors(p, [{ name: 'a', dtype: 'U8', shape: [4], chunks: () => [[1, 2, 3, 4] as unknown as Uint8Array] }]), 'safetensors.source-chunk'],
      [() => writeSafetensors(p, [denseSource('a', 'BF16', [1], new Float32Array([257]))]), 'safetensors.inexact'],
      [() => denseSource('a', 'F32', [2], new Float32Array(3)), 'safetensors.source-size'],
    ];
    for (const [fn, want] of cases) {
      expect(fn, want).toThrow(expect.objectContaining({ code: want }));
      expect(fs.readdirSync(dir), want).toEqual([]);
    }
  });

  it('a source that throws midway leaves no file and no temp file', () => {
    const p = fresh();
    const dir = path.dirname(p);
    fs.writeFileSync(p, 'previous content');
    const boom: TensorSource = {
      name: 'b', dtype: 'U8', shape: [8],
      *chunks() { yield new Uint8Array(4); throw new Error('disk on fire'); },
    };
    expect(() => writeSafetensors(p, [zerosSource('a', 'F32', [4]), boom])).toThrow('disk on fire');
    expect(fs.readdirSync(dir)).toEqual(['f.safetensors']);
    expect(fs.readFileSync(p, 'utf8')).toBe('previous content'); // the old file is untouched
    fs.rmSync(p);
    expect(() => writeSafetensors(p, [boom])).toThrow('disk on fire');
    expect(fs.readdirSync(dir)).toEqual([]);
  });
});

describe('sources', () => {
  it('sparseSource equals the dense materialisation (runs short and long, first and last element)', () => {
    const numel = 3_000_000;
    const idx = [0, 1, 2, 1000, 1001, 600_000, 600_001, 2_999_998, 2_999_999];
    const vals = new Float32Array([1, -2, 0.5, 3, -0, 256, 2 ** -20, 7, -8]);
    const dense = new Float32Array(numel);
    idx.forEach((i, k) => { dense[i] = vals[k]; });
    for (const d of ['BF16', 'F32', 'I8'] as DType[]) {
      const v = d === 'I8' ? new Float32Array([1, -2, 5, 3, 0, 100, 1, 7, -8]) : vals;
      const dn = new Float32Array(numel);
      idx.forEach((i, k) => { dn[i] = v[k]; });
      const a = Buffer.concat([...denseSource('t', d, [numel], dn).chunks()]);
      let maxChunk = 0;
      const chunks = [...sparseSource('t', d, [1000, 3000], idx, v).chunks()];
      for (const c of chunks) maxChunk = Math.max(maxChunk, c.length);
      expect(maxChunk).toBeLessThanOrEqual(1 << 20);
      const b = Buffer.concat(chunks);
      expect(b.length).toBe(a.length);
      expect(b.equals(a), d).toBe(true);
    }
  });

  it('sparseSource streams a 2.4e9-element tensor without materialising it', () => {
    const numel = 2_400_000_000;
    const src = sparseSource('big', 'BF16', [numel], [5, numel - 1], new Float32Array([1, 2]));
    let total = 0;
    let nonZero = 0;
    for (const c of src.chunks()) {
      total += c.length;
      if (c.length < 4096) for (const b of c) if (b !== 0) nonZero++;
    }
    expect(total).toBe(2 * numel);
    expect(nonZero).toBe(3); // 1.0 = 0x3F80 (LE bytes 80 3F) and 2.0 = 0x4000 (LE bytes 00 40)
  }, 30_000);

  it('sparseSource validates indices and exactness', () => {
    expect(() => sparseSource('s', 'F32', [4], [2, 1], new Float32Array(2))).toThrow(expect.objectContaining({ code: 'safetensors.source-data' }));
    expect(() => sparseSource('s', 'F32', [4], [1, 1], new Float32Array(2))).toThrow(expect.objectContaining({ code: 'safetensors.source-data' }));
    expect(() => sparseSource('s', 'F32', [4], [4], new Float32Array(1))).toThrow(expect.objectContaining({ code: 'safetensors.source-data' }));
    expect(() => sparseSource('s', 'F32', [4], [1], new Float32Array(2))).toThrow(expect.objectContaining({ code: 'safetensors.source-data' }));
    expect(() => sparseSource('s', 'BF16', [40], [3, 17], new Float32Array([1, 257]))).toThrow(
      expect.objectContaining({ code: 'safetensors.inexact', message: expect.stringContaining('element 17') }),
    );
    const rounded = Buffer.concat([...sparseSource('s', 'BF16', [2], [1], new Float32Array([257]), { exact: false }).chunks()]);
    expect(Array.from(rounded)).toEqual([0, 0, 0x80, 0x43]);
  });

  it('sha256OfTensor hashes the raw bytes', () => {
    const raw = new Uint8Array(100).map((_, i) => i * 3);
    const p = fresh();
    writeSafetensors(p, [denseSource('r', 'U8', [100], raw)]);
    const st = openSafetensors(p);
    expect(sha256OfTensor(st, 'r')).toBe(crypto.createHash('sha256').update(raw).digest('hex'));
    st.close();
  });
});

describe('checkpoints', () => {
  const sources = (): TensorSource[] => [
    denseSource('a', 'F32', [2], new Float32Array([1, 2])), // 8 bytes, 2 params
    denseSource('b', 'F64', [1], new Uint8Array(8)), // 8 bytes, 1 param
    zerosSource('c', 'U8', [24]), // 24 bytes: larger than the limit → own shard
    denseSource('d', 'BF16', [2], new Float32Array([3, 4])), // 4 bytes, 2 params
  ];

  it('shards greedily and writes the index exactly like transformers', () => {
    const dir = path.join(fresh('x'), '..', 'ckpt');
    const res = writeCheckpoint(dir, sources(), { maxShardSize: 16 });
    // a (8) + b (8) = 16 fits; c (24 > 16) gets its own shard when met; d would tip a+b over 16.
    const expected = `{
  "metadata": {
    "total_parameters": 29,
    "total_size": 44
  },
  "weight_map": {
    "a": "model-00002-of-00003.safetensors",
    "b": "model-00002-of-00003.safetensors",
    "c": "model-00001-of-00003.safetensors",
    "d": "model-00003-of-00003.safetensors"
  }
}
`;
    expect(fs.readFileSync(path.join(dir, 'model.safetensors.index.json'), 'utf8')).toBe(expected);
    expect(fs.readdirSync(dir).sort()).toEqual([
      'model-00001-of-00003.safetensors', 'model-00002-of-00003.safetensors', 'model-00003-of-00003.safetensors', 'model.safetensors.index.json',
    ]);
    expect(res.totalSize).toBe(44);
    const st = openCheckpoint(dir);
    expect(st.names).toEqual(['a', 'b', 'c', 'd']);
    expect(Array.from(st.readF32('d'))).toEqual([3, 4]);
    expect(st.metadata).toEqual({ format: 'pt' });
    st.close();
    // Existing non-empty directory: refused unless overwrite.
    expect(() => writeCheckpoint(dir, sources())).toThrow(expect.objectContaining({ code: 'checkpoint.target-exists' }));
    writeCheckpoint(dir, sources(), { overwrite: true, extraFiles: { 'config.json': '{}\n' } });
    expect(fs.readdirSync(dir).sort()).toEqual(['config.json', 'model.safetensors']);
    expect(fs.readdirSync(path.dirname(dir)).sort()).toEqual(['ckpt']); // no temp or old directories left
  });

  it('a single shard is model.safetensors with no index', () => {
    const dir = path.join(path.dirname(fresh()), 'one');
    writeCheckpoint(dir, sources());
    expect(fs.readdirSync(dir)).toEqual(['model.safetensors']);
    const st = openCheckpoint(dir);
    expect(st.names).toEqual(['a', 'b', 'c', 'd']);
    st.close();
  });

  it('a failing source leaves no directory behind', () => {
    const parent = path.dirname(fresh());
    const boom: TensorSource = { name: 'z', dtype: 'U8', shape: [4], *chunks() { yield new Uint8Array(2); throw new Error('nope'); } };
    expect(() => writeCheckpoint(path.join(parent, 'ck'), [...sources(), boom], { maxShardSize: 16 })).toThrow('nope');
    expect(fs.readdirSync(parent)).toEqual([]);
  });

  it('index JSON escapes like Python ensure_ascii', () => {
    expect(pythonJsonDumps({ b: 1, a: ['é', '😀', '\u007f', '\n'], c: {} })).toBe(
      '{\n  "a": [\n    "\\u00e9",\n    "\\ud83d\\ude00",\n    "\\u007f",\n    "\\n"\n  ],\n  "b": 1,\n  "c": {}\n}',
    );
    expect(indexJson(0, 0, {})).toBe('{\n  "metadata": {\n    "total_parameters": 0,\n    "total_size": 0\n  },\n  "weight_map": {}\n}\n');
  });
});
