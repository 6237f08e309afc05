/**
 * `chipc diff` on checkpoints: streaming bitwise comparison (bounded reads, sharding-independent,
 * differences found across chunk boundaries), config.json comparison, and golden hashes
 * (write → check, a flipped byte named, malformed golden files refused). Expected values are
 * derived independently: element-wise comparison of the in-memory arrays, node:crypto over the
 * bytes, bit patterns through Uint32Array / Uint16Array views.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { cli } from './helpers/cli.ts';
import { expectChipcError } from './helpers/assert.ts';
import { denseSource, writeCheckpoint, writeSafetensors } from '../src/safetensors/writer.ts';
import { openCheckpoint } from '../src/safetensors/checkpoint.ts';
import { openSafetensors, openSafetensorsBuffer } from '../src/safetensors/reader.ts';
import type { TensorSource, TensorStore } from '../src/safetensors/types.ts';
import { diffCheckpoints, diffStores, diffTensor } from '../src/inspect/diff.ts';
import { computeGolden, parseGolden, serializeGolden } from '../src/inspect/golden.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-diff-stream-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Deterministic pseudo-random float32 values (xorshift32), all finite. */
function randomF32(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    out[i] = ((x % 2001) - 1000) / 8;
  }
  return out;
}

const u32hex = (x: number): string => '0x' + (x >>> 0).toString(16).padStart(8, '0');
const f32bits = (v: number): number => new Uint32Array(new Float32Array([v]).buffer)[0]!;

/** A store wrapper that records the largest byte range ever read and refuses whole-tensor reads. */
function boundedStore(inner: TensorStore): TensorStore & { maxRead: number } {
  const s = {
    maxRead: 0,
    get names() { return inner.names; },
    get metadata() { return inner.metadata; },
    has: (n: string) => inner.has(n),
    info: (n: string) => inner.info(n),
    readBytes(n: string, start?: number, end?: number): Uint8Array {
      if (start === undefined || end === undefined) throw new Error('whole-tensor read');
      s.maxRead = Math.max(s.maxRead, end - start);
      return inner.readBytes(n, start, end);
    },
    readF32(): Float32Array { throw new Error('readF32 holds a whole tensor'); },
    chunks: (n: string, c?: number) => inner.chunks(n, c),
    close: () => inner.close(),
  };
  return s;
}

// Two checkpoints of the same tensors, sharded differently: A in one file, B in 3+ shards.
const N_BIG = 300_001; // odd, and > several chunk sizes used below
const big = randomF32(N_BIG, 7);
const bigB = big.slice();
bigB[N_BIG - 1] = big[N_BIG - 1] === 1.5 ? 1.75 : 1.5;
const small = randomF32(1000, 11);
const bf = new Uint16Array([0x3f80, 0x8000, 0x0000, 0x4049]); // 1, −0, +0, 3.140625 as bf16
function sources(bigData: Float32Array, bfData: Uint16Array): TensorSource[] {
  return [
    denseSource('big', 'F32', [N_BIG], bigData),
    denseSource('small', 'F32', [10, 100], small),
    denseSource('bf', 'BF16', [4], new Uint8Array(bfData.buffer.slice(0))),
  ];
}
const cfgText = JSON.stringify({ hidden_size: 64, text_config: { num_hidden_layers: 2 } }, null, 2) + '\n';
const dirA = path.join(tmp, 'a');
const dirA2 = path.join(tmp, 'a2');
const dirB = path.join(tmp, 'b');
writeCheckpoint(dirA, sources(big, bf), { extraFiles: { 'config.json': cfgText } });
writeCheckpoint(dirA2, sources(big, bf), { maxShardSize: 400_000, extraFiles: { 'config.json': cfgText } });
const bfB = bf.slice();
bfB[1] = 0x0000; // −0 → +0 in bf16
writeCheckpoint(dirB, sources(bigB, bfB), { maxShardSize: 400_000, extraFiles: { 'config.json': cfgText } });

describe('streaming diff', () => {
  it('the fixtures really are sharded differently', () => {
    expect(fs.existsSync(path.join(dirA, 'model.safetensors'))).toBe(true);
    expect(fs.readdirSync(dirA2).filter((f) => f.endsWith('.safetensors')).length).toBeGreaterThan(1);
  });

  it('identical tensors under different sharding: exit 0, every byte compared', async () => {
    const r = await cli('diff', dirA, dirA2, '--json');
    expect(r.code).toBe(0);
    const d = JSON.parse(r.out);
    expect(d.identical).toBe(true);
    expect(d.config).toEqual({ status: 'identical' });
    expect(d.elementsCompared).toBe(N_BIG + 1000 + 4);
    expect(d.bytesCompared).toBe(4 * (N_BIG + 1000) + 2 * 4);
  });

  it('finds a difference in the last element of a big tensor with its index and bit patterns', async () => {
    const r = await cli('diff', dirA, dirB, '--json');
    expect(r.code).toBe(1);
    const d = JSON.parse(r.out);
    const t = d.tensors.find((x: { name: string }) => x.name === 'big');
    expect(t).toMatchObject({ status: 'different', unit: 'element', count: 1, firstIndex: N_BIG - 1 });
    expect(t.firstBitsA).toBe(u32hex(f32bits(big[N_BIG - 1]!)));
    expect(t.firstBitsB).toBe(u32hex(f32bits(bigB[N_BIG - 1]!)));
    expect(t.firstA).toContain(t.firstBitsA);
    const b = d.tensors.find((x: { name: string }) => x.name === 'bf');
    expect(b).toMatchObject({ status: 'different', count: 1, firstIndex: 1, firstBitsA: '0x8000', firstBitsB: '0x0000' });
    expect(d.tensors.find((x: { name: string }) => x.name === 'small').status).toBe('identical');
    const text = await cli('diff', dirA, dirB);
    expect(text.out).toMatch(/different\s+big: 1 element\(s\) differ; first at element 300,000/);
  });

  it('reads only bounded ranges, whatever the tensor size, and finds the last element across chunk boundaries', () => {
    for (const chunk of [4096, 65_536, 1_000_003]) {
      const sa = boundedStore(openCheckpoint(dirA));
      const sb = boundedStore(openCheckpoint(dirB));
      try {
        const t = diffTensor(sa, sb, 'big', { chunkBytes: chunk });
        expect(t).toMatchObject({ status: 'different', count: 1, firstIndex: N_BIG - 1 });
        const elemChunk = chunk - (chunk % 4);
        expect(sa.maxRead).toBe(Math.min(elemChunk, 4 * N_BIG));
        expect(sb.maxRead).toBe(sa.maxRead);
      } finally {
        sa.close();
        sb.close();
      }
    }
  });

  it('counts and locates differences like a naive element-wise comparison, for any chunk size', () => {
    const n = 257;
    const base = randomF32(n, 3);
    const fileA = path.join(tmp, 'prop-a.safetensors');
    writeSafetensors(fileA, [denseSource('t', 'F32', [n], base)]);
    const sa = openCheckpoint(fileA);
    const imageA = new Uint8Array(fs.readFileSync(fileA));
    const dataAt = openSafetensorsBuffer(imageA).dataStart + sa.info('t').dataOffsets[0];
    try {
      fc.assert(
        fc.property(fc.uniqueArray(fc.integer({ min: 0, max: n - 1 }), { maxLength: 12 }), fc.integer({ min: 1, max: 300 }), (flips, chunk) => {
          const other = base.slice();
          const ub = new Uint32Array(other.buffer);
          for (const i of flips) ub[i] = ub[i]! ^ (1 << (i % 32));
          const img = imageA.slice();
          img.set(new Uint8Array(other.buffer), dataAt);
          const sb = openSafetensorsBuffer(img);
          const ua = new Uint32Array(base.buffer);
          let count = 0;
          let first = -1;
          for (let i = 0; i < n; i++) if (ua[i] !== ub[i]) { if (first < 0) first = i; count++; }
          const t = diffTensor(sa, sb, 't', { chunkBytes: chunk });
          if (count === 0) expect(t.status).toBe('identical');
          else {
            expect(t).toMatchObject({ status: 'different', count, firstIndex: first });
            expect(t.firstBitsA).toBe(u32hex(ua[first]!));
            expect(t.firstBitsB).toBe(u32hex(ub[first]!));
          }
        }),
        { numRuns: 60, seed: 42 },
      );
    } finally {
      sa.close();
    }
  });

  it('reports tensors on one side only, dtype and shape mismatches', () => {
    const a = openSafetensorsBuffer(buildImage([
      denseSource('x', 'F32', [2], new Float32Array([1, 2])),
      denseSource('y', 'F32', [2], new Float32Array([1, 2])),
      denseSource('z', 'F32', [2], new Float32Array([1, 2])),
    ]));
    const b = openSafetensorsBuffer(buildImage([
      denseSource('x', 'BF16', [2], new Float32Array([1, 2])),
      denseSource('y', 'F32', [1, 2], new Float32Array([1, 2])),
      denseSource('w', 'F32', [2], new Float32Array([1, 2])),
    ]));
    const d = diffStores(a, b);
    expect(d.identical).toBe(false);
    expect(d.onlyInA).toEqual(['z']);
    expect(d.onlyInB).toEqual(['w']);
    expect(d.tensors.map((t) => [t.name, t.status])).toEqual([['x', 'dtype'], ['y', 'shape']]);
    expect(d.bytesCompared).toBe(0);
  });

  it('sub-byte dtypes (F4) are compared byte by byte, with byte indices', () => {
    const a = openSafetensorsBuffer(buildImage([denseSource('q', 'F4', [8], new Uint8Array([1, 2, 3, 4]))]));
    const b = openSafetensorsBuffer(buildImage([denseSource('q', 'F4', [8], new Uint8Array([1, 2, 0x13, 0x05]))]));
    expect(diffTensor(a, b, 'q', { chunkBytes: 1 })).toMatchObject({
      status: 'different', unit: 'byte', count: 2, firstIndex: 2, firstBitsA: '0x03', firstBitsB: '0x13',
    });
  });

  it('compares config.json of two directories: differing keys, and presence on one side only', async () => {
    const c1 = path.join(tmp, 'cfg1');
    const c2 = path.join(tmp, 'cfg2');
    const c3 = path.join(tmp, 'cfg3');
    const src = () => [denseSource('x', 'F32', [2], new Float32Array([1, 2]))];
    writeCheckpoint(c1, src(), { extraFiles: { 'config.json': cfgText } });
    writeCheckpoint(c2, src(), { extraFiles: { 'config.json': JSON.stringify({ hidden_size: 128, text_config: { num_hidden_layers: 2 } }) } });
    writeCheckpoint(c3, src());
    expect(diffCheckpoints(c1, c2).config).toEqual({ status: 'different', keys: ['hidden_size'] });
    expect(diffCheckpoints(c1, c2).identical).toBe(false);
    expect(diffCheckpoints(c1, c3).config).toEqual({ status: 'only-in-a' });
    expect(diffCheckpoints(c3, c1).config).toEqual({ status: 'only-in-b' });
    expect(diffCheckpoints(c3, c3)).toMatchObject({ identical: true, config: { status: 'absent' } });
    // A file on one side: config.json is not compared.
    expect(diffCheckpoints(path.join(c1, 'model.safetensors'), c3)).toMatchObject({ identical: true, config: null });
    const r = await cli('diff', c1, c2);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/config\.json differs at hidden_size/);
  });

  it('refuses a usage without B, --golden or --write-golden (exit 2)', async () => {
    const r = await cli('diff', dirA);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/diff.usage/);
    expect((await cli('diff', dirA, dirB, '--golden', 'x.json')).code).toBe(2);
  });
});

/** A safetensors image in memory (written to a temp file and read back). */
let imageSeq = 0;
function buildImage(srcs: TensorSource[]): Uint8Array {
  const f = path.join(tmp, `img-${imageSeq++}.safetensors`);
  writeSafetensors(f, srcs);
  const b = new Uint8Array(fs.readFileSync(f));
  fs.rmSync(f);
  return b;
}

describe('golden hashes', () => {
  const sha = (b: Uint8Array | string) => createHash('sha256').update(b).digest('hex');

  it('records dtype, shape and sha256 per tensor and of config.json, independent of sharding, deterministically', async () => {
    const g1 = path.join(tmp, 'g1.json');
    const g2 = path.join(tmp, 'g2.json');
    expect((await cli('diff', dirA, '--write-golden', g1)).code).toBe(0);
    expect((await cli('diff', dirA2, '--write-golden', g2)).code).toBe(0);
    const text = fs.readFileSync(g1, 'utf8');
    expect(fs.readFileSync(g2, 'utf8')).toBe(text);
    const g = JSON.parse(text);
    expect(g.format).toBe('chipc-checkpoint-golden');
    expect(g.version).toBe(1);
    expect(Object.keys(g.tensors)).toEqual(['bf', 'big', 'small']);
    expect(g.config).toEqual({ sha256: sha(cfgText) });
    expect(g.tensors.big).toEqual({ dtype: 'F32', shape: [N_BIG], sha256: sha(new Uint8Array(big.buffer)) });
    expect(g.tensors.bf).toEqual({ dtype: 'BF16', shape: [4], sha256: sha(new Uint8Array(bf.buffer)) });
    expect(fs.readdirSync(tmp).filter((f) => f.includes('.tmp-'))).toEqual([]);
    // The text round-trips through the strict parser and the serializer byte for byte.
    expect(serializeGolden(parseGolden(text, 'g1.json'))).toBe(text);
  });

  it('golden check passes on the same tensors; fails naming a tensor with one flipped byte', async () => {
    const g = path.join(tmp, 'g-flip.json');
    expect((await cli('diff', dirA2, '--write-golden', g)).code).toBe(0);
    expect((await cli('diff', dirA, '--golden', g)).code).toBe(0);
    // Flip one byte in the middle of "small" in a copy of A.
    const flipped = path.join(tmp, 'flipped');
    fs.cpSync(dirA, flipped, { recursive: true });
    const file = path.join(flipped, 'model.safetensors');
    const st = openSafetensors(file);
    const at = st.dataStart + st.info('small').dataOffsets[0] + 1234;
    st.close();
    const bytes = fs.readFileSync(file);
    bytes[at] = bytes[at]! ^ 0x01;
    fs.writeFileSync(file, bytes);
    const r = await cli('diff', flipped, '--golden', g, '--json');
    expect(r.code).toBe(1);
    const d = JSON.parse(r.out);
    expect(d.identical).toBe(false);
    expect(d.tensors.filter((t: { status: string }) => t.status !== 'identical').map((t: { name: string }) => t.name)).toEqual(['small']);
    const changed = new Uint8Array(small.buffer.slice(0));
    changed[1234] = changed[1234]! ^ 0x01;
    expect(d.tensors.find((t: { name: string }) => t.name === 'small').actual.sha256).toBe(sha(changed));
    const text = await cli('diff', flipped, '--golden', g);
    expect(text.out).toMatch(/different\s+small: sha256/);
  });

  it('names missing and extra tensors, dtype/shape changes and a changed config.json', async () => {
    const g = path.join(tmp, 'g-mx.json');
    const one = path.join(tmp, 'mx1');
    const two = path.join(tmp, 'mx2');
    writeCheckpoint(one, [
      denseSource('keep', 'F32', [2], new Float32Array([1, 2])),
      denseSource('gone', 'F32', [2], new Float32Array([1, 2])),
      denseSource('retyped', 'F32', [2], new Float32Array([1, 2])),
      denseSource('reshaped', 'F32', [2], new Float32Array([1, 2])),
    ], { extraFiles: { 'config.json': '{"a": 1}\n' } });
    writeCheckpoint(two, [
      denseSource('keep', 'F32', [2], new Float32Array([1, 2])),
      denseSource('added', 'F32', [2], new Float32Array([1, 2])),
      denseSource('retyped', 'BF16', [2], new Float32Array([1, 2])),
      denseSource('reshaped', 'F32', [2, 1], new Float32Array([1, 2])),
    ], { extraFiles: { 'config.json': '{"a": 2}\n' } });
    expect((await cli('diff', one, '--write-golden', g)).code).toBe(0);
    const r = await cli('diff', two, '--golden', g, '--json');
    expect(r.code).toBe(1);
    const d = JSON.parse(r.out);
    expect(d.missing).toEqual(['gone']);
    expect(d.extra).toEqual(['added']);
    expect(d.tensors.map((t: { name: string; status: string }) => [t.name, t.status])).toEqual([
      ['keep', 'identical'], ['reshaped', 'shape'], ['retyped', 'dtype'],
    ]);
    expect(d.config).toEqual({ status: 'different', expected: sha('{"a": 1}\n'), actual: sha('{"a": 2}\n') });
  });

  it.each([
    ['not JSON', '{"format": '],
    ['a wrong format', '{"format": "other", "version": 1, "config": null, "tensors": {}}'],
    ['a wrong version', '{"format": "chipc-checkpoint-golden", "version": 2, "config": null, "tensors": {}}'],
    ['a bad hash', '{"format": "chipc-checkpoint-golden", "version": 1, "config": null, "tensors": {"x": {"dtype": "F32", "shape": [2], "sha256": "abc"}}}'],
    ['a bad dtype', `{"format": "chipc-checkpoint-golden", "version": 1, "config": null, "tensors": {"x": {"dtype": "F33", "shape": [2], "sha256": "${'0'.repeat(64)}"}}}`],
    ['a bad shape', `{"format": "chipc-checkpoint-golden", "version": 1, "config": null, "tensors": {"x": {"dtype": "F32", "shape": [2.5], "sha256": "${'0'.repeat(64)}"}}}`],
    ['a duplicate tensor', `{"format": "chipc-checkpoint-golden", "version": 1, "config": null, "tensors": {"x": {"dtype": "F32", "shape": [2], "sha256": "${'0'.repeat(64)}"}, "x": {"dtype": "F32", "shape": [2], "sha256": "${'0'.repeat(64)}"}}}`],
    ['an unknown field', '{"format": "chipc-checkpoint-golden", "version": 1, "config": null, "tensors": {}, "extra": 1}'],
  ])('a golden file with %s is refused: exit 2 with a clear message', async (_what, text) => {
    const g = path.join(tmp, 'bad-golden.json');
    fs.writeFileSync(g, text);
    const r = await cli('diff', dirA, '--golden', g);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/golden.format/);
    expect(r.err).toMatch(/bad-golden\.json: not a valid golden file/);
    expectChipcError(() => parseGolden(text, 'x'), 'golden.format');
  });

  it('a missing golden file is an error (exit 2), not a difference', async () => {
    const r = await cli('diff', dirA, '--golden', path.join(tmp, 'nope.json'));
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/golden.read/);
  });

  it('tensor names such as __proto__ and constructor are recorded and checked like any other', async () => {
    const d = path.join(tmp, 'proto');
    const g = path.join(tmp, 'g-proto.json');
    writeCheckpoint(d, [
      denseSource('__proto__', 'F32', [1], new Float32Array([1])),
      denseSource('constructor', 'F32', [1], new Float32Array([2])),
    ]);
    expect((await cli('diff', d, '--write-golden', g)).code).toBe(0);
    const text = fs.readFileSync(g, 'utf8');
    expect(text).toContain('"__proto__": {"dtype": "F32", "shape": [1]');
    const r = await cli('diff', d, '--golden', g, '--json');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out).tensors.map((t: { name: string }) => t.name)).toEqual(['__proto__', 'constructor']);
  });

  it('computeGolden streams: the same hashes with tiny chunks', () => {
    expect(computeGolden(dirA, { chunkBytes: 997 })).toEqual(computeGolden(dirA));
  });
});

describe('committed golden fixture', () => {
  const fixture = 'fixtures/golden/counter-tiny.json';

  it('counter compiled at the tiny target matches fixtures/golden/counter-tiny.json', async () => {
    const out = path.join(tmp, 'counter-tiny');
    const c = await cli('compile', 'circuits/examples/counter.ts', '--target', 'tiny', '-o', out);
    expect(c.code).toBe(0);
    const r = await cli('diff', out, '--golden', fixture);
    expect(r.out).toMatch(/identical/);
    expect(r.code).toBe(0);
  });

  it('agrees with the hashes computed from the tensor sources (fixtures/golden/counter.tiny.json)', () => {
    const mine = JSON.parse(fs.readFileSync(fixture, 'utf8'));
    const theirs = JSON.parse(fs.readFileSync('fixtures/golden/counter.tiny.json', 'utf8'));
    expect(mine.tensors).toEqual(theirs.tensors);
    expect(mine.config.sha256).toBe(theirs.configSha256);
  });
});
