/**
 * The decode fast paths added for the compiled chip are bit-identical to the plain computation
 * (the executor's dense path, which walks every weight through ctx.dot in HF order):
 *  - matmul.ts scatter form (column walk of the LM head) against the dense linear, on random sparse
 *    matrices with ±0, negative, tiny (underflowing) and large activations;
 *  - whole executors, sparse vs dense path: a random tiny model with an idle GDN layer (all-+0
 *    in_proj_qkv/z/b/a: the memoised idle step), cold conv channels and zero key heads, FFN rows
 *    empty in gate and up (the row-union FFN), and the scatter LM head; logits and every residual
 *    bit for bit, f32 and bf16, with and without a live-state write into the idle layer;
 *  - the same with dense+CSR weights holding −0 (the fast paths must step aside);
 *  - a compiled example circuit (regfile, tiny target) over 40 decode steps.
 * Every check compares Float32Array bit patterns (NaNs mapped to one value).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Executor, argmax } from '../src/exec/executor.ts';
import { linearEx, newMatmulStats, sparseTuning } from '../src/exec/matmul.ts';
import { makeNumericContext } from '../src/exec/numeric.ts';
import type { PhaseTimes } from '../src/exec/profile.ts';
import { loadCircuitFile } from '../src/dsl/load.ts';
import { compileCircuit } from '../src/compile.ts';
import { densifyMatrix, randomModelWeights, sparsifyMatrix } from '../src/model/random-weights.ts';
import { resolveTarget } from '../src/model/targets.ts';
import type { Matrix, ModelWeights } from '../src/model/weights.ts';

const bits = (a: Float32Array): number[] =>
  Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length), (b, i) => (Number.isNaN(a[i]) ? 0x7fc00000 : b));

let savedMinNnz = 0;
beforeEach(() => { savedMinNnz = sparseTuning.scatterMinNnz; sparseTuning.scatterMinNnz = 0; });
afterEach(() => { sparseTuning.scatterMinNnz = savedMinNnz; });

describe('scatter form of the sparse linear', () => {
  it('is bit-identical to the dense linear (f32, bf16), zero signs included', () => {
    const special = [0, -0, 1, -1, 1e-30, -1e-30, 3e38, -2.5, 0.1, 1e-20];
    fc.assert(fc.property(
      fc.integer({ min: 1, max: 40 }), fc.integer({ min: 2, max: 12 }), fc.integer({ min: 0, max: 2 ** 31 - 1 }),
      fc.boolean(),
      (rows, cols, seed, bf16) => {
        let s = seed;
        const rnd = (): number => { s = (Math.imul(s, 1103515245) + 12345) >>> 0; return s / 4294967296; };
        const dense = new Float32Array(rows * cols);
        // rows of at most cols/2 entries, some empty, so that inputs with few sign-bit-set
        // activations meet the scatter precondition
        for (let r = 0; r < rows; r++) {
          if (rnd() < 0.3) continue;
          for (let c = 0; c < cols; c++) if (rnd() < 0.4) dense[r * cols + c] = special[Math.floor(rnd() * special.length)] || 0.5;
          let n = 0;
          for (let c = 0; c < cols; c++) if (dense[r * cols + c] !== 0 && ++n > cols >> 1) dense[r * cols + c] = 0;
        }
        const m: Matrix = { rows, cols, csr: sparsifyMatrix({ rows, cols, dense }).csr };
        const x = new Float32Array(cols);
        for (let c = 0; c < cols; c++) x[c] = rnd() < 0.5 ? (rnd() < 0.2 ? -0 : 0) : special[Math.floor(rnd() * special.length)];
        const ctx = makeNumericContext({ profile: bf16 ? 'bf16' : 'f32' });
        const stats = newMatmulStats();
        const a = linearEx(ctx, m, x, 'sparse', { stats });
        const b = linearEx(ctx, { rows, cols, dense }, x, 'dense');
        expect(bits(a.out)).toEqual(bits(b.out));
        // reused (non-zero) output buffer too
        const out = new Float32Array(rows).fill(7);
        linearEx(ctx, m, x, 'sparse', { out });
        expect(bits(out)).toEqual(bits(b.out));
        return stats.scatter + stats.sparse + stats.dense > 0;
      },
    ), { numRuns: 300 });
  });

  it('is used when its precondition holds (a counter that can fail)', () => {
    const rows = 50;
    const cols = 8;
    const dense = new Float32Array(rows * cols);
    for (let r = 0; r < rows; r++) dense[r * cols + (r % cols)] = (r % 3) - 1 || 2;
    const m: Matrix = { rows, cols, csr: sparsifyMatrix({ rows, cols, dense }).csr };
    const x = Float32Array.from([0, 1.5, 0, -0, 0, 0, 2, 0]);
    const stats = newMatmulStats();
    const ctx = makeNumericContext({});
    const a = linearEx(ctx, m, x, 'sparse', { stats });
    expect(stats.scatter).toBe(1);
    expect(bits(a.out)).toEqual(bits(linearEx(ctx, { rows, cols, dense }, x, 'dense').out));
  });
});

/** A tiny random model with the structure the fast paths look for (see the module header). */
function chipLikeModel(seed: number, keepDenseWithNegZero: boolean): ModelWeights {
  const cfg = resolveTarget('tiny').config;
  const w = randomModelWeights(cfg, seed, { normWeightNoise: true });
  const { linearKeyHeadDim: dk, linearValueHeadDim: dv, linearNumKeyHeads: hk } = cfg;
  const keyDim = hk * dk;
  const zeroRows = (m: Matrix, from: number, to: number): void => { m.dense!.fill(0, from * m.cols, to * m.cols); };
  const finish = (m: Matrix): Matrix => {
    const d = densifyMatrix(m);
    if (keepDenseWithNegZero) {
      // −0 weights in a few rows of the dense form (the CSR drops them)
      for (let r = 0; r < d.rows; r += 7) if (d.dense![r * d.cols] === 0) d.dense![r * d.cols] = -0;
      return { rows: d.rows, cols: d.cols, dense: d.dense, csr: sparsifyMatrix(d).csr };
    }
    return { rows: d.rows, cols: d.cols, csr: sparsifyMatrix(d).csr };
  };
  let idleDone = false;
  w.layers.forEach((l) => {
    const m = l.mixer;
    if (m.kind === 'linear_attention') {
      for (const x of [m.inProjQkv, m.inProjZ, m.inProjB, m.inProjA, m.outProj]) Object.assign(x, densifyMatrix(x));
      if (!idleDone) {
        // the idle layer: every input projection all +0
        for (const x of [m.inProjQkv, m.inProjZ, m.inProjB, m.inProjA]) x.dense!.fill(0);
        m.dtBias[0] = -3; // a decay ≠ 1 on an all-zero state
        idleDone = true;
      } else {
        zeroRows(m.inProjQkv, dk, 2 * dk); // key head 1: q
        zeroRows(m.inProjQkv, keyDim + dk, keyDim + 2 * dk); // key head 1: k
        zeroRows(m.inProjQkv, 2 * keyDim, 2 * keyDim + dv); // value head 0: v (cold conv channels)
        zeroRows(m.inProjZ, 0, dv);
      }
      const K = cfg.linearConvKernelDim;
      // every 3rd channel: all taps negative (a cold channel outputs −0 there)
      for (let c = 0; c < m.conv1d.length / K; c += 3) for (let j = 0; j < K; j++) m.conv1d[c * K + j] = -Math.abs(m.conv1d[c * K + j]) || -0.5;
      Object.assign(m, {
        inProjQkv: finish(m.inProjQkv), inProjZ: finish(m.inProjZ), inProjB: finish(m.inProjB),
        inProjA: finish(m.inProjA), outProj: finish(m.outProj),
      });
    } else {
      Object.assign(m, { qProj: finish(m.qProj), kProj: finish(m.kProj), vProj: finish(m.vProj), oProj: finish(m.oProj) });
    }
    const f = l.mlp;
    if (f.kind === 'dense') {
      for (const x of [f.gateProj, f.upProj, f.downProj]) Object.assign(x, densifyMatrix(x));
      const n = f.gateProj.rows;
      zeroRows(f.gateProj, 0, n >> 1); // first half: empty in both gate and up
      zeroRows(f.upProj, 0, n >> 1);
      zeroRows(f.upProj, n >> 1, (n >> 1) + 3); // rows empty in up only
      zeroRows(f.gateProj, n - 3, n); // rows empty in gate only
      Object.assign(f, { gateProj: finish(f.gateProj), upProj: finish(f.upProj), downProj: finish(f.downProj) });
    }
  });
  // LM head: most rows empty, a few columns only
  const lm = densifyMatrix(w.lmHead);
  for (let r = 0; r < lm.rows; r++) {
    for (let c = 0; c < lm.cols; c++) if (r % 5 !== 0 || c % 4 !== 0) lm.dense![r * lm.cols + c] = 0;
  }
  const lmHead = finish(lm);
  const embed = finish(densifyMatrix(w.embedTokens));
  return { ...w, embedTokens: embed, lmHead };
}

/** Residuals of every layer and position, as bit patterns, in event order. */
function residualRecorder(ex: Executor): number[][] {
  const rec: number[][] = [];
  ex.addHook((ev) => {
    rec.push([ev.layer, ev.position], bits(ev.residualIn), bits(ev.residualMid), bits(ev.residualOut));
    for (const a of ev.gdnState ?? []) rec.push(bits(a));
  });
  return rec;
}

function compare(w: ModelWeights, profile: 'f32' | 'bf16', hooked: boolean, write: boolean): { sparse: Executor; times: PhaseTimes } {
  const s = new Executor(w, { path: 'sparse', profile });
  const d = new Executor(w, { path: 'dense', profile });
  const times: PhaseTimes = {};
  s.setPhaseTimes(times);
  const recS = hooked ? residualRecorder(s) : null;
  const recD = hooked ? residualRecorder(d) : null;
  const a = s.prefill([3, 1], { allLogits: true });
  const b = d.prefill([3, 1], { allLogits: true });
  for (let t = 0; t < a.length; t++) expect(bits(a[t])).toEqual(bits(b[t]));
  let ts = argmax(a[1]);
  let td = argmax(b[1]);
  for (let i = 0; i < 24; i++) {
    if (write && i === 6) {
      // a live-state write into the idle layer (layer of the first GDN mixer), head 1
      const li = w.config.layerTypes.indexOf('linear_attention');
      for (const ex of [s, d]) { const S = ex.gdnState(li, 1); S[0] = 0.75; S[3] = -0; }
    }
    expect(ts).toBe(td);
    const id = i % 3 === 2 ? (i * 37) % w.config.vocabSize : ts;
    const ls = s.decode(id);
    const ld = d.decode(id);
    expect(bits(ls)).toEqual(bits(ld));
    ts = argmax(ls);
    td = argmax(ld);
  }
  if (recS && recD) {
    expect(recS.length).toBeGreaterThan(0);
    expect(recS).toEqual(recD);
  }
  expect(s.stats.dense).toBe(0);
  return { sparse: s, times };
}

describe('decode fast paths on whole executors (sparse vs dense path)', () => {
  it('random chip-like model, CSR-only: logits and residuals bit-identical, f32 and bf16; fast paths used', () => {
    const w = chipLikeModel(11, false);
    for (const profile of ['f32', 'bf16'] as const) {
      const { sparse, times } = compare(w, profile, false, false);
      expect(times['gdn.idle']).toBeGreaterThan(0); // the idle layer's memoised step ran
      expect(sparse.stats.scatter).toBeGreaterThan(0); // the LM head ran in scatter form
      compare(w, profile, true, false);
      compare(w, profile, true, true);
      compare(w, profile, false, true);
    }
  });

  it('dense+CSR weights holding −0: still bit-identical (fast paths step aside where needed)', () => {
    const w = chipLikeModel(12, true);
    for (const profile of ['f32', 'bf16'] as const) {
      compare(w, profile, true, false);
      compare(w, profile, false, true);
    }
  });

  it('compiled regfile circuit (tiny target): 40 decode steps bit-identical, f32 and bf16', async () => {
    const tiny = resolveTarget('tiny').config;
    const ir = await loadCircuitFile('circuits/examples/regfile.ts');
    const res = compileCircuit(ir, tiny);
    const bos = ir.bos ?? 0;
    for (const profile of ['f32', 'bf16'] as const) {
      const s = new Executor(res.weights, { path: 'sparse', profile });
      const d = new Executor(res.weights, { path: 'dense', profile });
      const recS = residualRecorder(s);
      const recD = residualRecorder(d);
      let ts = argmax(s.prefill([bos])[0]);
      let td = argmax(d.prefill([bos])[0]);
      let x = 777;
      for (let i = 0; i < 40; i++) {
        x = (x * 1103515245 + 12345) % 2147483648;
        expect(ts).toBe(td);
        const id = i % 2 === 0 ? (bos > 0 ? ts % bos : ts) : x % Math.max(bos, 1);
        const ls = s.decode(id);
        const ld = d.decode(id);
        expect(bits(ls)).toEqual(bits(ld));
        ts = argmax(ls);
        td = argmax(ld);
      }
      expect(recS).toEqual(recD);
      expect(s.stats.dense).toBe(0);
    }
  });
});
