/**
 * Weights ↔ checkpoint: save → load round trips (F32, BF16, dense/sparse/both, both families),
 * the Qwen3-Next fused layouts on disk, tied fallback, and checkpoint/tensor-set errors.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ChipcError } from '../src/util/errors.ts';
import type { ModelConfig } from '../src/model/config.ts';
import type { Matrix, ModelWeights } from '../src/model/weights.ts';
import type { DType, TensorInfo, TensorSource, TensorStore } from '../src/safetensors/types.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { loadModel, loadModelWeights } from '../src/model/load-weights.ts';
import { modelWeightsToSources, saveModel } from '../src/model/save-weights.ts';
import { Prng, densifyMatrix, randomModelWeights, sparsifyMatrix } from '../src/model/random-weights.ts';
import { openCheckpoint } from '../src/safetensors/checkpoint.ts';

const tiny = resolveTarget('tiny').config;

/** Small qwen3_next: odd GDN dims (r = 2), MoE with an mlp_only layer, untied head. */
const smallNext: ModelConfig = {
  family: 'qwen3_next', vocabSize: 32, hiddenSize: 16, numLayers: 4,
  layerTypes: ['linear_attention', 'full_attention', 'linear_attention', 'linear_attention'],
  intermediateSize: 20, numAttentionHeads: 2, numKeyValueHeads: 1, headDim: 8, partialRotaryFactor: 0.25,
  ropeTheta: 5e6, linearNumKeyHeads: 2, linearNumValueHeads: 4, linearKeyHeadDim: 3, linearValueHeadDim: 5,
  linearConvKernelDim: 3, rmsNormEps: 1e-6, tieWordEmbeddings: false,
  moe: { numExperts: 3, numExpertsPerTok: 2, moeIntermediateSize: 8, sharedExpertIntermediateSize: 12,
    normTopkProb: true, decoderSparseStep: 1, mlpOnlyLayers: [2] },
  bosTokenId: null, eosTokenId: 1, maxPositionEmbeddings: 1024, dtype: 'float32',
};

// ---------------------------------------------------------------------------------------------
// helpers

/** An in-memory TensorStore over the bytes of `sources`; chunks() uses `chunkBytes` (odd on purpose). */
function memStore(sources: TensorSource[], chunkBytes = 7): TensorStore & { bytesOf(n: string): Uint8Array } {
  const map = new Map<string, { dtype: DType; shape: number[]; bytes: Uint8Array }>();
  for (const s of sources) {
    // (a chunk is the consumer's until it asks for the next: sources reuse their buffers)
    const parts: Uint8Array[] = [];
    for (const p of s.chunks()) parts.push(p.slice());
    const total = parts.reduce((a, p) => a + p.length, 0);
    const bytes = new Uint8Array(total);
    let off = 0;
    for (const p of parts) { bytes.set(p, off); off += p.length; }
    map.set(s.name, { dtype: s.dtype, shape: s.shape, bytes });
  }
  const names = [...map.keys()].sort();
  const get = (n: string) => {
    const t = map.get(n);
    if (!t) throw new Error(`no tensor ${n}`);
    return t;
  };
  return {
    names,
    metadata: { format: 'pt' },
    has: (n) => map.has(n),
    info: (n): TensorInfo => {
      const t = get(n);
      const numel = t.shape.reduce((a, b) => a * b, 1);
      return { name: n, dtype: t.dtype, shape: t.shape, dataOffsets: [0, t.bytes.length], numel, byteLength: t.bytes.length };
    },
    readBytes: (n, s = 0, e) => get(n).bytes.slice(s, e),
    readF32: (n) => {
      const t = get(n);
      if (t.dtype === 'F32') return new Float32Array(t.bytes.slice().buffer);
      if (t.dtype !== 'BF16') throw new Error('test store: F32/BF16 only');
      const u16 = new Uint16Array(t.bytes.slice().buffer);
      const out = new Uint32Array(u16.length);
      for (let i = 0; i < u16.length; i++) out[i] = u16[i] << 16;
      return new Float32Array(out.buffer);
    },
    *chunks(n) {
      const b = get(n).bytes;
      for (let i = 0; i < b.length; i += chunkBytes) yield b.subarray(i, i + chunkBytes);
    },
    close: () => {},
    bytesOf: (n) => get(n).bytes,
  };
}

/** Store with some tensors renamed/removed/added, for error tests. */
function editedStore(base: TensorSource[], edit: (s: TensorSource[]) => TensorSource[]): TensorStore {
  return memStore(edit([...base]));
}

function bitsEqual(a: Float32Array, b: Float32Array, what: string): void {
  expect(a.length, what).toBe(b.length);
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < ua.length; i++) {
    if (ua[i] !== ub[i]) expect.fail(`${what}[${i}]: ${a[i]} (0x${ua[i].toString(16)}) != ${b[i]} (0x${ub[i].toString(16)})`);
  }
}

function denseOf(m: Matrix): Float32Array {
  return densifyMatrix(m).dense!;
}

/** Every Float32Array / Matrix of two ModelWeights, compared bit for bit (matrices via their dense form). */
function expectWeightsEqual(a: ModelWeights, b: ModelWeights): void {
  const walk = (x: unknown, y: unknown, p: string): void => {
    if (x instanceof Float32Array) { bitsEqual(x, y as Float32Array, p); return; }
    if (x && typeof x === 'object' && 'rows' in x && 'cols' in x) {
      const mx = x as Matrix, my = y as Matrix;
      expect([my.rows, my.cols], p).toEqual([mx.rows, mx.cols]);
      bitsEqual(denseOf(mx), denseOf(my), p);
      return;
    }
    if (Array.isArray(x)) { expect((y as unknown[]).length, p).toBe(x.length); x.forEach((v, i) => walk(v, (y as unknown[])[i], `${p}[${i}]`)); return; }
    if (x && typeof x === 'object') {
      for (const k of Object.keys(x)) if (k !== 'config') walk((x as Record<string, unknown>)[k], (y as Record<string, unknown>)[k], `${p}.${k}`);
      return;
    }
    expect(y, p).toEqual(x);
  };
  walk(a, b, 'weights');
}

/** Map every float of the weights through f (new arrays; tied lm_head stays the embed object). */
function mapWeights(w: ModelWeights, f: (x: number, i: number) => number): ModelWeights {
  const seen = new Map<object, unknown>();
  const walk = (x: unknown): unknown => {
    if (x instanceof Float32Array) return x.map(f);
    if (x && typeof x === 'object') {
      if (seen.has(x)) return seen.get(x);
      if (Array.isArray(x)) return x.map(walk);
      const out: Record<string, unknown> = {};
      seen.set(x, out);
      for (const [k, v] of Object.entries(x)) out[k] = k === 'config' ? v : walk(v);
      return out;
    }
    return x;
  };
  return walk(w) as ModelWeights;
}

const bitsOf = (x: number) => new Uint32Array(new Float32Array([x]).buffer)[0];
const fromBits = (b: number) => new Float32Array(new Uint32Array([b >>> 0]).buffer)[0];
/** Truncate to bf16 precision by clearing the low 16 bits (a bf16-exact value by construction). */
const toBf16Exact = (x: number) => fromBits(bitsOf(x) & 0xffff0000);

// ---------------------------------------------------------------------------------------------

describe('save → load round trip (in-memory store)', () => {
  for (const [label, cfg] of [['tiny', tiny], ['small qwen3_next', smallNext]] as const) {
    it(`${label}: F32, dense / sparse / both, bit-exact`, () => {
      const w = randomModelWeights(cfg, 7, { scale: 50, normWeightNoise: true });
      const store = memStore(modelWeightsToSources(w, 'F32'));
      for (const n of store.names) expect(store.info(n).dtype).toBe('F32');
      const dense = loadModelWeights(store, cfg, { mode: 'dense' });
      expectWeightsEqual(w, dense);
      const sparse = loadModelWeights(store, cfg, { mode: 'sparse' });
      expect(sparse.embedTokens.dense).toBeUndefined();
      expect(sparse.layers[0].mixer.kind === 'linear_attention' && sparse.layers[0].mixer.inProjQkv.dense).toBeFalsy();
      expectWeightsEqual(w, sparse);
      const both = loadModelWeights(store, cfg, { mode: 'both' });
      expect(both.embedTokens.dense && both.embedTokens.csr).toBeTruthy();
      expectWeightsEqual(w, both);
      // Saving sparse-only weights gives the same bytes.
      const again = memStore(modelWeightsToSources(sparse, 'F32'));
      for (const n of store.names) expect(Buffer.from(again.bytesOf(n)).equals(Buffer.from(store.bytesOf(n))), n).toBe(true);
      // So do batches of one row or a few (each source reuses one buffer, zeroed between batches),
      // from the dense and from the CSR form.
      // A quarter of the entries kept, so a batch's zeros follow another batch's values.
      const holed = mapWeights(w, (x) => ((bitsOf(x) & 3) === 0 ? x : 0));
      const holedBytes = memStore(modelWeightsToSources(holed, 'F32'));
      const holedCsr = loadModelWeights(holedBytes, cfg, { mode: 'sparse' });
      for (const [from, batchBytes] of [[holed, 1], [holedCsr, 1], [holedCsr, 40]] as const) {
        const small = memStore(modelWeightsToSources(from, 'F32', { batchBytes }));
        for (const n of store.names) expect(Buffer.from(small.bytesOf(n)).equals(Buffer.from(holedBytes.bytesOf(n))), `${n} in batches of ${batchBytes} bytes`).toBe(true);
      }
      expect(w.config.tieWordEmbeddings ? dense.lmHead === dense.embedTokens : dense.lmHead !== dense.embedTokens).toBe(true);
    });

    it(`${label}: sparseChunks (zero runs as counts) stand for exactly the bytes of chunks(), F32 and BF16, sorted or unsorted CSR rows`, () => {
      // a sixteenth of the entries kept (empty rows, rows of one entry, rows of many) …
      const holed = mapWeights(randomModelWeights(cfg, 11, { scale: 30, normWeightNoise: true }), (x, i) => (i % 16 === 5 || i % 97 < 40 ? toBf16Exact(x) : 0));
      const holedStore = memStore(modelWeightsToSources(holed, 'F32'));
      const csr = loadModelWeights(holedStore, cfg, { mode: 'sparse' });
      // … and the same matrices with every CSR row's entries in reverse column order
      const reversed = loadModelWeights(holedStore, cfg, { mode: 'sparse' });
      const seen = new Set<object>();
      const reverseRows = (x: unknown): void => {
        if (!x || typeof x !== 'object' || seen.has(x)) return;
        seen.add(x);
        const m = x as Matrix;
        if ('rows' in m && m.csr) {
          const { rowPtr, colIdx, values } = m.csr;
          for (let r = 0; r < m.rows; r++) {
            colIdx.subarray(rowPtr[r], rowPtr[r + 1]).reverse();
            values.subarray(rowPtr[r], rowPtr[r + 1]).reverse();
          }
          return;
        }
        for (const v of Object.values(x)) reverseRows(v);
      };
      reverseRows(reversed.layers);
      reverseRows(reversed.embedTokens);
      reverseRows(reversed.lmHead);
      let sparseSources = 0;
      const sparseNames = new Set<string>();
      for (const [from, tag] of [[csr, 'sorted'], [reversed, 'reversed']] as const) {
        for (const dtype of ['F32', 'BF16'] as const) {
          for (const s of modelWeightsToSources(from, dtype, { batchBytes: 64 })) {
            const dense: Buffer[] = [];
            for (const c of s.chunks()) dense.push(Buffer.from(c)); // copied before the next chunk reuses the buffer
            const want = Buffer.concat(dense);
            if (!s.sparseChunks) continue;
            sparseSources++;
            sparseNames.add(s.name);
            const parts: Buffer[] = [];
            for (const c of s.sparseChunks()) parts.push(typeof c === 'number' ? Buffer.alloc(c) : Buffer.from(c));
            expect(Buffer.concat(parts).equals(want), `${tag} ${dtype} ${s.name}`).toBe(true);
          }
        }
      }
      // every CSR matrix has them (fused Qwen3-Next projections too); vectors do not
      expect(sparseSources).toBeGreaterThan(4 * 4);
      if (cfg.family === 'qwen3_next') expect([...sparseNames].some((n) => n.endsWith('in_proj_qkvz.weight'))).toBe(true);
    });

    it(`${label}: BF16 with bf16-exact weights round-trips bit-exactly; inexact weights are refused`, () => {
      const raw = randomModelWeights(cfg, 3, { scale: 20, normWeightNoise: true });
      const w = mapWeights(raw, toBf16Exact);
      const sources = modelWeightsToSources(w, 'BF16');
      const store = memStore(sources, 3);
      for (const n of store.names) expect(store.info(n).dtype).toBe('BF16');
      expectWeightsEqual(w, loadModelWeights(store, cfg, { mode: 'dense' }));
      expectWeightsEqual(w, loadModelWeights(store, cfg, { mode: 'sparse' }));
      // embed_tokens element 5 made inexact (lowest mantissa bit set).
      const bad = mapWeights(w, (x) => x);
      bad.embedTokens.dense![5] = fromBits(bitsOf(bad.embedTokens.dense![5]) | 1);
      const src = modelWeightsToSources(bad, 'BF16').find((s) => s.name === 'model.embed_tokens.weight')!;
      let err: unknown;
      try { for (const _ of src.chunks()) { /* drain */ } } catch (e) { err = e; }
      expect(err).toBeInstanceOf(ChipcError);
      expect((err as ChipcError).code).toBe('weights.inexact');
      expect((err as Error).message).toMatch(/model\.embed_tokens\.weight: element 5 \(row 0, column 5\)/);
    });
  }
});

describe('Qwen3-Next on-disk layout', () => {
  it('in_proj_qkvz / in_proj_ba rows follow docs/host-architecture.md §2.4 (independent formula)', () => {
    const w = randomModelWeights(smallNext, 11);
    const store = memStore(modelWeightsToSources(w, 'F32'));
    const H = 16, dk = 3, dv = 5, r = 2, keyDim = 6, valueDim = 20, G = 2 * dk + 2 * r * dv;
    const mixer = w.layers[0].mixer;
    if (mixer.kind !== 'linear_attention') throw new Error('layer 0 must be GDN');
    const qkvz = new Float32Array(store.bytesOf('model.layers.0.linear_attn.in_proj_qkvz.weight').slice().buffer);
    const ba = new Float32Array(store.bytesOf('model.layers.0.linear_attn.in_proj_ba.weight').slice().buffer);
    expect(qkvz.length).toBe((2 * keyDim + 2 * valueDim) * H);
    const qkv = mixer.inProjQkv.dense!, z = mixer.inProjZ.dense!;
    for (let o = 0; o < 2 * keyDim + 2 * valueDim; o++) {
      const g = Math.floor(o / G), u = o % G;
      let src: Float32Array, row: number;
      if (u < dk) { src = qkv; row = g * dk + u; }
      else if (u < 2 * dk) { src = qkv; row = keyDim + g * dk + (u - dk); }
      else if (u < 2 * dk + r * dv) { const l = u - 2 * dk; src = qkv; row = 2 * keyDim + (g * r + Math.floor(l / dv)) * dv + (l % dv); }
      else { const l = u - 2 * dk - r * dv; src = z; row = (g * r + Math.floor(l / dv)) * dv + (l % dv); }
      bitsEqual(qkvz.subarray(o * H, (o + 1) * H), src.subarray(row * H, (row + 1) * H), `qkvz row ${o}`);
    }
    for (let o = 0; o < 8; o++) {
      const g = Math.floor(o / (2 * r)), u = o % (2 * r);
      const src = u < r ? mixer.inProjB.dense! : mixer.inProjA.dense!;
      const h = g * r + (u < r ? u : u - r);
      bitsEqual(ba.subarray(o * H, (o + 1) * H), src.subarray(h * H, (h + 1) * H), `ba row ${o}`);
    }
  });
});

describe('sparse loading', () => {
  it('collects only non-zeros (−0 dropped) and equals the dense load up to the sign of zero', () => {
    const rng = new Prng(99);
    const w = mapWeights(randomModelWeights(smallNext, 5), (x) => {
      const u = rng.uniform();
      return u < 0.8 ? 0 : u < 0.9 ? -0 : x;
    });
    const store = memStore(modelWeightsToSources(w, 'F32'), 5);
    const dense = loadModelWeights(store, smallNext, { mode: 'dense' });
    expectWeightsEqual(w, dense);
    const sparse = loadModelWeights(store, smallNext, { mode: 'sparse' });
    const emb = sparse.embedTokens.csr!;
    const d = w.embedTokens.dense!;
    let nz = 0;
    for (const v of d) if (v !== 0) nz++;
    expect(emb.values.length).toBe(nz);
    for (const v of emb.values) expect(v === 0).toBe(false);
    // CSR from the stream == CSR built from the dense load (which has ±0 in it).
    const fromDense = (m: Matrix) => sparsifyMatrix({ rows: m.rows, cols: m.cols, dense: m.dense }).csr!;
    const m0 = sparse.layers[0].mixer, d0 = dense.layers[0].mixer;
    if (m0.kind !== 'linear_attention' || d0.kind !== 'linear_attention') throw new Error('GDN expected');
    for (const k of ['inProjQkv', 'inProjZ', 'inProjB', 'inProjA', 'outProj'] as const) {
      const a = m0[k].csr!, b = fromDense(d0[k]);
      expect([...a.rowPtr], k).toEqual([...b.rowPtr]);
      expect([...a.colIdx], k).toEqual([...b.colIdx]);
      bitsEqual(a.values, b.values, k);
    }
    // Dense forms agree except that −0 reads back as +0 from CSR.
    const dq = denseOf(m0.inProjQkv), ref = d0.inProjQkv.dense!;
    for (let i = 0; i < ref.length; i++) expect(Object.is(dq[i], ref[i] === 0 ? 0 : ref[i])).toBe(true);
  });
});

describe('sparse mode never materializes a matrix', () => {
  it('loads with a store whose readF32 refuses every 2-D tensor', () => {
    const w = randomModelWeights(smallNext, 8);
    const inner = memStore(modelWeightsToSources(w, 'F32'), 64);
    const guarded: TensorStore = {
      ...inner,
      readF32: (n) => {
        if (inner.info(n).shape.length === 2) throw new Error(`dense read of matrix ${n}`);
        return inner.readF32(n);
      },
    };
    expectWeightsEqual(w, loadModelWeights(guarded, smallNext, { mode: 'sparse' }));
    expect(() => loadModelWeights(guarded, smallNext, { mode: 'dense' })).toThrow(/dense read of matrix/);
  });
});

describe('bundled fixture', () => {
  it('fixtures/tiny is randomModelWeights(tiny, 1) in float32 with the tiny config', () => {
    const dir = fileURLToPath(new URL('../fixtures/tiny/', import.meta.url));
    const loaded = loadModel(dir, { mode: 'dense' });
    expect(loaded.config).toEqual(tiny);
    expectWeightsEqual(randomModelWeights(tiny, 1), loaded);
    const store = openCheckpoint(dir);
    try {
      for (const n of store.names) expect(store.info(n).dtype).toBe('F32');
    } finally {
      store.close();
    }
  });
});

describe('checkpoint tensor-set checks', () => {
  const w = randomModelWeights(tiny, 1);
  const base = modelWeightsToSources(w, 'F32');
  const rename = (s: TensorSource, name: string): TensorSource => ({ ...s, name, chunks: () => s.chunks() });

  it('tied model: lm_head falls back to embed_tokens; a stored lm_head is tolerated', () => {
    expect(base.some((s) => s.name === 'lm_head.weight')).toBe(false);
    const loaded = loadModelWeights(memStore(base), tiny, { mode: 'dense' });
    expect(loaded.lmHead).toBe(loaded.embedTokens);
    const withHead = editedStore(base, (l) => [...l, rename(l[0], 'lm_head.weight')]);
    const l2 = loadModelWeights(withHead, tiny, { mode: 'dense' });
    expect(l2.lmHead).toBe(l2.embedTokens);
    // ...but a mis-shaped one is reported.
    const badHead = editedStore(base, (l) => [...l, rename(l[1], 'lm_head.weight')]);
    expect(() => loadModelWeights(badHead, tiny, { mode: 'dense' })).toThrow(/mis-shaped: lm_head\.weight \[64\]/);
  });

  it('hub prefix model.language_model.* loads; mtp.* and model.visual.* are ignored', () => {
    const hub = editedStore(base, (l) => [
      ...l.map((s) => s.name.startsWith('model.') ? rename(s, 'model.language_model.' + s.name.slice(6)) : s),
      rename(l[1], 'mtp.layers.0.input_layernorm.weight'),
      rename(l[1], 'model.visual.blocks.0.norm1.weight'),
    ]);
    expectWeightsEqual(w, loadModelWeights(hub, tiny, { mode: 'sparse' }));
  });

  it('missing, unexpected and mis-shaped tensors are listed in one ChipcError', () => {
    const broken = editedStore(base, (l) => {
      const out = l.filter((s) => s.name !== 'model.layers.2.linear_attn.A_log');
      const i = out.findIndex((s) => s.name === 'model.norm.weight');
      out[i] = { ...out[i], shape: [8, 8] };
      out.push(rename(l[1], 'model.layers.9.extra.weight'));
      return out;
    });
    let err: unknown;
    try { loadModelWeights(broken, tiny, { mode: 'dense' }); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(ChipcError);
    expect((err as ChipcError).code).toBe('weights.mismatch');
    const msg = (err as Error).message;
    expect(msg).toMatch(/1 missing: model\.layers\.2\.linear_attn\.A_log/);
    expect(msg).toMatch(/1 unexpected: model\.layers\.9\.extra\.weight/);
    expect(msg).toMatch(/1 mis-shaped: model\.norm\.weight \[8, 8\] \(expected \[64\]\)/);
  });

  it('loading with the wrong family reports the tensor mismatch', () => {
    const nextCfg: ModelConfig = { ...smallNext, hiddenSize: 64 };
    expect(() => loadModelWeights(memStore(base), nextCfg, { mode: 'dense' })).toThrow(/missing: .*in_proj_qkvz/);
  });
});

describe('saveModel / loadModel on disk', () => {
  it('writes config.json + safetensors (single and sharded) that load back bit-exactly', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-model-save-'));
    try {
      const w = randomModelWeights(smallNext, 2, { scale: 30, normWeightNoise: true });
      const one = path.join(dir, 'one');
      saveModel(one, w, { dtype: 'F32' });
      expect(fs.existsSync(path.join(one, 'model.safetensors'))).toBe(true);
      const cfgJson = JSON.parse(fs.readFileSync(path.join(one, 'config.json'), 'utf8'));
      expect(cfgJson.architectures).toEqual(['Qwen3NextForCausalLM']);
      expect(cfgJson.dtype).toBe('float32');
      const back = loadModel(one, { mode: 'sparse' });
      expect(back.config).toEqual(smallNext);
      expectWeightsEqual(w, back);

      const sharded = path.join(dir, 'sharded');
      const wb = mapWeights(w, toBf16Exact);
      const res = saveModel(sharded, wb, { dtype: 'BF16', maxShardSize: 4096 });
      expect(res.files).toContain('model.safetensors.index.json');
      expect(JSON.parse(fs.readFileSync(path.join(sharded, 'config.json'), 'utf8')).dtype).toBe('bfloat16');
      const store = openCheckpoint(sharded);
      try {
        expectWeightsEqual(wb, loadModelWeights(store, smallNext, { mode: 'dense', chunkBytes: 6 }));
      } finally {
        store.close();
      }
      expect(() => saveModel(one, w, { dtype: 'F32' })).toThrow(ChipcError);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('randomModelWeights', () => {
  it('is deterministic, per-tensor streams, HF-like init', () => {
    const a = randomModelWeights(tiny, 4), b = randomModelWeights(tiny, 4), c = randomModelWeights(tiny, 5);
    expectWeightsEqual(a, b);
    expect(bitsOf(a.embedTokens.dense![0])).not.toBe(bitsOf(c.embedTokens.dense![0]));
    const g = a.layers[0].mixer;
    if (g.kind !== 'linear_attention') throw new Error('GDN expected');
    expect([...g.dtBias]).toEqual([1, 1, 1, 1]);
    expect([...g.norm].every((x) => x === 1)).toBe(true);
    expect([...a.layers[0].inputLayernorm].every((x) => x === 0)).toBe(true);
    for (const x of g.aLog) expect(x <= Math.log(16) + 1e-6 && Number.isFinite(x)).toBe(true);
    // std ≈ 0.02 over the embedding (16384 draws): loose statistical sanity, not exactness.
    const e = a.embedTokens.dense!;
    const mean = e.reduce((s, x) => s + x, 0) / e.length;
    const sd = Math.sqrt(e.reduce((s, x) => s + (x - mean) ** 2, 0) / e.length);
    expect(Math.abs(mean)).toBeLessThan(0.001);
    expect(sd).toBeGreaterThan(0.019);
    expect(sd).toBeLessThan(0.021);
    // Tied: lm_head is the same object.
    expect(a.lmHead).toBe(a.embedTokens);
  });
});
