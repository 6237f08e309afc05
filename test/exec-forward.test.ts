/**
 * The whole executor forward pass: against an independent float64 re-implementation (plain loops,
 * no shared code; this checks the MATH to a relative tolerance, not float32 exactness), plus the
 * exactness properties: dense vs sparse bit-identity, prefill/decode consistency, order modes,
 * MoE routing, causal masking, hooks, GDN state access and bf16 materialisation.
 */
import { describe, expect, it } from 'vitest';
import { Executor, argmax } from '../src/exec/executor.ts';
import { makeNumericContext } from '../src/exec/numeric.ts';
import { moeForward, moeRoute } from '../src/exec/mlp.ts';
import { recurrentStep } from '../src/exec/gdn.ts';
import type { LayerHookEvent } from '../src/exec/types.ts';
import type { ModelConfig } from '../src/model/config.ts';
import { randomModelWeights } from '../src/model/random-weights.ts';
import { resolveTarget } from '../src/model/targets.ts';
import type { Matrix, ModelWeights, MoeMlpWeights } from '../src/model/weights.ts';

const bits = (a: Float32Array): number[] => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));
const tinyCfg = (): ModelConfig => resolveTarget('tiny').config;

// ---------------------------------------------------------------------------------------------
// float64 reference (independent; recurrent GDN for every token)

function denseOf(m: Matrix): Float64Array {
  const out = new Float64Array(m.rows * m.cols);
  if (m.dense) { out.set(m.dense); return out; }
  const c = m.csr!;
  for (let r = 0; r < m.rows; r++) for (let k = c.rowPtr[r]; k < c.rowPtr[r + 1]; k++) out[r * m.cols + c.colIdx[k]] = c.values[k];
  return out;
}
function mv(m: Matrix, x: Float64Array): Float64Array {
  const W = denseOf(m);
  const y = new Float64Array(m.rows);
  for (let r = 0; r < m.rows; r++) { let s = 0; for (let c = 0; c < m.cols; c++) s += W[r * m.cols + c] * x[c]; y[r] = s; }
  return y;
}
const sig = (x: number): number => 1 / (1 + Math.exp(-x));
const silu = (x: number): number => x * sig(x);
function rms1p(x: Float64Array, w: Float32Array, eps: number): Float64Array {
  let s = 0; for (const v of x) s += v * v;
  const r = 1 / Math.sqrt(s / x.length + eps);
  return x.map((v, i) => v * r * (1 + w[i]));
}

class RefModel {
  conv: Float64Array[][] = [];
  S: Float64Array[][] = [];
  K: Float64Array[][] = [];
  V: Float64Array[][] = [];
  pos = 0;
  constructor(private readonly w: ModelWeights) {
    const c = w.config;
    for (let l = 0; l < c.numLayers; l++) {
      const convDim = 2 * c.linearNumKeyHeads * c.linearKeyHeadDim + c.linearNumValueHeads * c.linearValueHeadDim;
      this.conv.push(Array.from({ length: convDim }, () => new Float64Array(c.linearConvKernelDim)));
      this.S.push(Array.from({ length: c.linearNumValueHeads }, () => new Float64Array(c.linearKeyHeadDim * c.linearValueHeadDim)));
      this.K.push([]);
      this.V.push([]);
    }
  }
  step(id: number): Float64Array {
    const c = this.w.config;
    const H = c.hiddenSize;
    let h = Float64Array.from(denseOf(this.w.embedTokens).subarray(id * H, (id + 1) * H));
    for (let l = 0; l < c.numLayers; l++) {
      const lw = this.w.layers[l];
      const x = rms1p(h, lw.inputLayernorm, c.rmsNormEps);
      let mix: Float64Array;
      const m = lw.mixer;
      if (m.kind === 'linear_attention') {
        const Hk = c.linearNumKeyHeads, Hv = c.linearNumValueHeads, dk = c.linearKeyHeadDim, dv = c.linearValueHeadDim;
        const Kc = c.linearConvKernelDim;
        const mixed = mv(m.inProjQkv, x);
        const z = mv(m.inProjZ, x), b = mv(m.inProjB, x), a = mv(m.inProjA, x);
        const conved = new Float64Array(mixed.length);
        for (let ch = 0; ch < mixed.length; ch++) {
          const hist = this.conv[l][ch];
          hist.copyWithin(0, 1); hist[Kc - 1] = mixed[ch];
          let s = 0; for (let j = 0; j < Kc; j++) s += m.conv1d[ch * Kc + j] * hist[j];
          conved[ch] = silu(s);
        }
        const core = new Float64Array(Hv * dv);
        for (let hv = 0; hv < Hv; hv++) {
          const kh = Math.floor(hv / (Hv / Hk));
          const qv = conved.slice(kh * dk, kh * dk + dk);
          const kv = conved.slice(Hk * dk + kh * dk, Hk * dk + kh * dk + dk);
          const vv = conved.slice(2 * Hk * dk + hv * dv, 2 * Hk * dk + hv * dv + dv);
          const nq = Math.sqrt(qv.reduce((s, v) => s + v * v, 0) + 1e-6);
          const nk = Math.sqrt(kv.reduce((s, v) => s + v * v, 0) + 1e-6);
          for (let i = 0; i < dk; i++) { qv[i] = qv[i] / nq / Math.sqrt(dk); kv[i] /= nk; }
          const beta = sig(b[hv]);
          const sp = a[hv] + m.dtBias[hv];
          const g = -Math.exp(m.aLog[hv]) * (sp > 20 ? sp : Math.log1p(Math.exp(sp)));
          const S = this.S[l][hv];
          for (let i = 0; i < S.length; i++) S[i] *= Math.exp(g);
          for (let j = 0; j < dv; j++) {
            let mem = 0; for (let i = 0; i < dk; i++) mem += S[i * dv + j] * kv[i];
            const delta = (vv[j] - mem) * beta;
            for (let i = 0; i < dk; i++) S[i * dv + j] += kv[i] * delta;
          }
          const o = new Float64Array(dv);
          for (let j = 0; j < dv; j++) { let s = 0; for (let i = 0; i < dk; i++) s += S[i * dv + j] * qv[i]; o[j] = s; }
          let ss = 0; for (const v of o) ss += v * v;
          const r = 1 / Math.sqrt(ss / dv + c.rmsNormEps);
          for (let j = 0; j < dv; j++) core[hv * dv + j] = m.norm[j] * o[j] * r * silu(z[hv * dv + j]);
        }
        mix = mv(m.outProj, core);
      } else {
        const D = c.headDim, Hq = c.numAttentionHeads, Hkv = c.numKeyValueHeads;
        const qg = mv(m.qProj, x), kx = mv(m.kProj, x), vx = mv(m.vProj, x);
        const R = Math.trunc(D * c.partialRotaryFactor);
        const rope = (v: Float64Array): Float64Array => {
          const out = v.slice();
          for (let i = 0; i < R / 2; i++) {
            const ang = this.pos / Math.pow(c.ropeTheta, (2 * i) / R);
            out[i] = v[i] * Math.cos(ang) - v[i + R / 2] * Math.sin(ang);
            out[i + R / 2] = v[i + R / 2] * Math.cos(ang) + v[i] * Math.sin(ang);
          }
          return out;
        };
        const qs: Float64Array[] = [], gates: Float64Array[] = [];
        for (let hq = 0; hq < Hq; hq++) {
          qs.push(rope(rms1p(qg.slice(hq * 2 * D, hq * 2 * D + D), m.qNorm, c.rmsNormEps)));
          gates.push(qg.slice(hq * 2 * D + D, hq * 2 * D + 2 * D));
        }
        const ks: Float64Array[] = [], vs: Float64Array[] = [];
        for (let hk = 0; hk < Hkv; hk++) {
          ks.push(rope(rms1p(kx.slice(hk * D, hk * D + D), m.kNorm, c.rmsNormEps)));
          vs.push(vx.slice(hk * D, hk * D + D));
        }
        this.K[l].push(...[ks.flatMap((a) => Array.from(a))].map((a) => Float64Array.from(a)));
        this.V[l].push(...[vs.flatMap((a) => Array.from(a))].map((a) => Float64Array.from(a)));
        const attn = new Float64Array(Hq * D);
        for (let hq = 0; hq < Hq; hq++) {
          const kvh = Math.floor(hq / (Hq / Hkv));
          const sc = this.K[l].map((kk) => { let s = 0; for (let d = 0; d < D; d++) s += qs[hq][d] * kk[kvh * D + d]; return s / Math.sqrt(D); });
          const mx = Math.max(...sc);
          const e = sc.map((s) => Math.exp(s - mx));
          const tot = e.reduce((s, v) => s + v, 0);
          for (let d = 0; d < D; d++) {
            let s = 0; for (let j = 0; j < e.length; j++) s += (e[j] / tot) * this.V[l][j][kvh * D + d];
            attn[hq * D + d] = s * sig(gates[hq][d]);
          }
        }
        mix = mv(m.oProj, attn);
      }
      const mid = h.map((v, i) => v + mix[i]);
      const x2 = rms1p(mid, lw.postAttentionLayernorm, c.rmsNormEps);
      const f = lw.mlp;
      if (f.kind !== 'dense') throw new Error('reference covers dense MLPs');
      const gg = mv(f.gateProj, x2), uu = mv(f.upProj, x2);
      const ff = mv(f.downProj, gg.map((v, i) => silu(v) * uu[i]));
      h = mid.map((v, i) => v + ff[i]);
    }
    this.pos++;
    return mv(this.w.lmHead, rms1p(h, this.w.norm, c.rmsNormEps));
  }
}

function relErr(a: Float32Array, b: Float64Array): number {
  let num = 0, den = 0;
  for (let i = 0; i < a.length; i++) { num = Math.max(num, Math.abs(a[i] - b[i])); den = Math.max(den, Math.abs(b[i])); }
  return num / den;
}

/** Random tiny weights with larger-than-HF values so every sublayer matters. */
function tinyWeights(seed: number, scale = 10): ModelWeights {
  const w = randomModelWeights(tinyCfg(), seed, { scale, normWeightNoise: true });
  // make the GDN decay non-trivial but not vanishing
  for (const l of w.layers) if (l.mixer.kind === 'linear_attention') l.mixer.aLog.fill(Math.fround(-1));
  return w;
}

describe('executor vs float64 reference (math, to a tolerance)', () => {
  it('prefill + decode logits agree with the float64 forward to 1e-4 relative', () => {
    const w = tinyWeights(1);
    const ref = new RefModel(w);
    const ids = [3, 17, 200, 5, 99, 42];
    const refLogits = ids.map((id) => ref.step(id));
    const ex = new Executor(w);
    const pre = ex.prefill(ids.slice(0, 4), { allLogits: true });
    const all = [...pre, ex.decode(ids[4]), ex.decode(ids[5])];
    for (let t = 0; t < ids.length; t++) expect(relErr(all[t], refLogits[t])).toBeLessThan(1e-4);
    expect(ex.position).toBe(6);
    // a wrong model (the reference of other weights) is far off: the check has teeth
    const other = new RefModel(tinyWeights(2));
    expect(relErr(all[0], other.step(ids[0]))).toBeGreaterThan(1e-2);
  });

  it('prefill of the whole sequence (chunked) vs prefill-then-decode (recurrent) agree within tolerance', () => {
    const w = tinyWeights(3);
    const ids = [1, 2, 3, 4, 5, 6, 7];
    const a = new Executor(w).prefill(ids, { allLogits: true });
    const ex = new Executor(w);
    const b = [ex.prefill([ids[0]])[0], ...ids.slice(1).map((id) => ex.decode(id))];
    for (let t = 0; t < ids.length; t++) expect(relErr(a[t], Float64Array.from(b[t]))).toBeLessThan(1e-4);
  });
});

describe('exactness properties', () => {
  /** Weights with many exact zeros and −0 entries (every 2nd weight ±0). */
  function zeroHeavy(seed: number): ModelWeights {
    const w = tinyWeights(seed);
    let n = 0;
    const zap = (m: Matrix): void => { const d = m.dense!; for (let i = 0; i < d.length; i++) if ((n++ * 7919) % 5 < 3) d[i] = (i & 1) ? -0 : 0; };
    zap(w.embedTokens);
    for (const l of w.layers) {
      const m = l.mixer;
      if (m.kind === 'linear_attention') [m.inProjQkv, m.inProjZ, m.inProjB, m.inProjA, m.outProj].forEach(zap);
      else [m.qProj, m.kProj, m.vProj, m.oProj].forEach(zap);
      if (l.mlp.kind === 'dense') [l.mlp.gateProj, l.mlp.upProj, l.mlp.downProj].forEach(zap);
    }
    return w;
  }

  it('dense and sparse paths give bit-identical logits and GDN states (zeros, −0 weights)', () => {
    const w = zeroHeavy(5);
    const d = new Executor(w, { path: 'dense' });
    const s = new Executor(w, { path: 'sparse' });
    const ids = [9, 8, 7, 6, 5];
    const ld = [...d.prefill(ids.slice(0, 3), { allLogits: true }), d.decode(ids[3]), d.decode(ids[4])];
    const ls = [...s.prefill(ids.slice(0, 3), { allLogits: true }), s.decode(ids[3]), s.decode(ids[4])];
    for (let t = 0; t < ld.length; t++) expect(bits(ls[t])).toEqual(bits(ld[t]));
    for (let h = 0; h < 4; h++) expect(bits(s.gdnState(0, h))).toEqual(bits(d.gdnState(0, h)));
    expect(s.stats.sparse).toBeGreaterThan(0);
    expect(s.stats.dense).toBe(0);
    expect(d.stats.sparse).toBe(0);
  });

  it('GDN skip for an all-zero key is bit-identical to the full update, −0 in the state included', () => {
    const ctx = makeNumericContext({});
    const dk = 4, dv = 3;
    const q = new Float32Array([0.5, -1, 0, 2]);
    const k = new Float32Array([0, -0, 0, -0]);
    const v = new Float32Array([1, -2, 0.25]);
    for (const seed of [0, 1, 2]) {
      const S0 = new Float32Array(dk * dv).map((_, i) => [0, -0, 1.5, -3][(i + seed) % 4]);
      const Sa = S0.slice(), Sb = S0.slice();
      const oa = new Float32Array(dv), ob = new Float32Array(dv);
      recurrentStep(ctx, dk, dv, Sa, q, 0, k, 0, v, 0, -0, 1, oa, 0, false);
      recurrentStep(ctx, dk, dv, Sb, q, 0, k, 0, v, 0, -0, 1, ob, 0, true);
      expect(bits(Sb)).toEqual(bits(Sa));
      expect(bits(ob)).toEqual(bits(oa));
    }
    // the full update does turn a −0 entry into +0 (so an unconditional skip would be wrong)
    const S = new Float32Array([-0, -0, -0, -0, -0, -0, -0, -0, -0, -0, -0, -0]);
    recurrentStep(ctx, dk, dv, S, q, 0, new Float32Array([0, 0, 0, 0]), 0, v, 0, -0, 1, new Float32Array(dv), 0, false);
    expect(Object.is(S[0], 0)).toBe(true);
  });

  it('sequential vs shuffled: differ on random weights, agree bit for bit on small integers', () => {
    const w = tinyWeights(7);
    const seq = new Executor(w).prefill([1, 2, 3])[0];
    const differs = [1, 2, 3].some((seed) => {
      const sh = new Executor(w, { order: { kind: 'shuffled', seed } }).prefill([1, 2, 3])[0];
      return bits(sh).some((b, i) => b !== bits(seq)[i]);
    });
    expect(differs).toBe(true);
    // Small-integer model: every product and partial sum of the matmuls, the conv and the MLP is
    // an exact small integer; norms see exact sums of squares. Embedding rows in {−1,0,1}, norms
    // with w = 0, GDN and attention weights 0 (mixers contribute ±0), MLP weights in {−1,0,1}.
    const wi = randomModelWeights(tinyCfg(), 9);
    const ints = (m: Matrix, seed: number): void => { const d = m.dense!; for (let i = 0; i < d.length; i++) d[i] = ((i * 31 + seed) % 3) - 1; };
    const zero = (m: Matrix): void => { m.dense!.fill(0); };
    ints(wi.embedTokens, 1);
    for (const l of wi.layers) {
      const m = l.mixer;
      if (m.kind === 'linear_attention') [m.inProjQkv, m.inProjZ, m.inProjB, m.inProjA, m.outProj].forEach(zero);
      else [m.qProj, m.kProj, m.vProj, m.oProj].forEach(zero);
      if (l.mlp.kind === 'dense') { ints(l.mlp.gateProj, 2); ints(l.mlp.upProj, 3); zero(l.mlp.downProj); }
    }
    const a = new Executor(wi).prefill([4, 5, 6], { allLogits: true });
    for (const seed of [1, 2, 3]) {
      const b = new Executor(wi, { order: { kind: 'shuffled', seed } }).prefill([4, 5, 6], { allLogits: true });
      for (let t = 0; t < 3; t++) expect(bits(b[t])).toEqual(bits(a[t]));
    }
  });

  it('causal masking: a future token cannot change an earlier logit', () => {
    const w = tinyWeights(11);
    const a = new Executor(w).prefill([5, 6, 7, 8], { allLogits: true });
    const b = new Executor(w).prefill([5, 6, 7, 100], { allLogits: true });
    for (let t = 0; t < 3; t++) expect(bits(b[t])).toEqual(bits(a[t]));
    expect(bits(b[3])).not.toEqual(bits(a[3]));
  });

  it('hooks: payload shapes, probs rows sum to 1, unsubscribe', () => {
    const w = tinyWeights(13);
    const ex = new Executor(w);
    const evs: LayerHookEvent[] = [];
    const off = ex.addHook((e) => evs.push(e));
    ex.prefill([1, 2, 3]);
    ex.decode(4);
    const c = w.config;
    expect(evs.length).toBe(4 * c.numLayers);
    for (const e of evs) {
      expect(e.residualIn.length).toBe(c.hiddenSize);
      if (c.layerTypes[e.layer] === 'full_attention') {
        expect(e.attentionProbs!.length).toBe(c.numAttentionHeads);
        for (const row of e.attentionProbs!) {
          expect(row.length).toBe(e.position + 1);
          expect(Math.abs(row.reduce((s, v) => s + v, 0) - 1)).toBeLessThan(1e-6);
        }
      } else if (e.position >= 2) {
        // states: last prefill position (chunked kernel's final state) and every decode position
        expect(e.gdnState!.length).toBe(c.linearNumValueHeads);
        expect(e.gdnState![0].length).toBe(c.linearKeyHeadDim * c.linearValueHeadDim);
      }
    }
    // the decode event's state is the live state
    const last = evs.filter((e) => e.layer === 0 && e.position === 3)[0];
    expect(bits(last.gdnState![1])).toEqual(bits(ex.gdnState(0, 1)));
    // residual chain: one layer's output is the next layer's input
    const l0 = evs.find((e) => e.layer === 0 && e.position === 3)!;
    const l1 = evs.find((e) => e.layer === 1 && e.position === 3)!;
    expect(bits(l1.residualIn)).toEqual(bits(l0.residualOut));
    off();
    ex.decode(5);
    expect(evs.length).toBe(4 * c.numLayers);
  });

  it('gdnState is writable and feeds the next step; reset clears it', () => {
    const w = tinyWeights(15);
    const a = new Executor(w);
    const b = new Executor(w);
    a.prefill([1]);
    b.prefill([1]);
    b.gdnState(0, 0)[5] = 3;
    expect(bits(b.decode(2))).not.toEqual(bits(a.decode(2)));
    b.reset();
    expect(b.position).toBe(0);
    expect(b.gdnState(0, 0).every((v) => v === 0)).toBe(true);
    expect(() => b.gdnState(3, 0)).toThrow(/not a linear_attention layer/);
    expect(() => b.decode(1)).toThrow(/prefill first/);
    expect(() => b.prefill([999])).toThrow(/out of range/);
  });

  it('generate = prefill + greedy decode; argmax picks the lowest id on ties', () => {
    const w = tinyWeights(17);
    const g = new Executor(w).generate([1, 2], 4);
    const ex = new Executor(w);
    const want = [argmax(ex.prefill([1, 2])[0])];
    for (let i = 1; i < 4; i++) want.push(argmax(ex.decode(want[i - 1])));
    expect(g).toEqual(want);
    expect(argmax(new Float32Array([1, 3, 3, 2]))).toBe(1);
    expect(argmax(new Float32Array([NaN, -Infinity, -Infinity]))).toBe(1);
  });

  it('bf16 profile: every residual value is bf16-representable', () => {
    const w = tinyWeights(19);
    // bf16 weights (the profile assumes them)
    const toBf = (a: Float32Array): void => { const u = new Uint32Array(a.buffer, a.byteOffset, a.length); for (let i = 0; i < u.length; i++) u[i] &= 0xffff0000; };
    toBf(w.embedTokens.dense!);
    for (const l of w.layers) {
      const m = l.mixer;
      if (m.kind === 'linear_attention') [m.inProjQkv, m.inProjZ, m.inProjB, m.inProjA, m.outProj].forEach((x) => toBf(x.dense!));
      else [m.qProj, m.kProj, m.vProj, m.oProj].forEach((x) => toBf(x.dense!));
      if (l.mlp.kind === 'dense') [l.mlp.gateProj, l.mlp.upProj, l.mlp.downProj].forEach((x) => toBf(x.dense!));
    }
    const ex = new Executor(w, { profile: 'bf16' });
    const seen: Float32Array[] = [];
    ex.addHook((e) => seen.push(e.residualMid, e.residualOut));
    const logits = ex.prefill([1, 2, 3])[0];
    ex.decode(4);
    for (const a of [...seen, logits]) for (const b of bits(a)) expect(b & 0xffff).toBe(0);
    const f = new Executor(w).prefill([1, 2, 3])[0];
    expect(bits(f)).not.toEqual(bits(logits));
  });
});

describe('MoE block', () => {
  it('hand-built routing: softmax, top-k ties to the lowest id, renormalisation, ascending-id sum', () => {
    const ctx = makeNumericContext({});
    const H = 2;
    const mat = (rows: number, cols: number, v: number[]): Matrix => ({ rows, cols, dense: new Float32Array(v) });
    // router logits for x = [1, 0]: [0, ln-free values]: experts 1 and 2 tie at 2, expert 3 at 2 too, expert 0 at 0
    const gate = mat(4, 2, [0, 0, 2, 0, 2, 0, 2, 0]);
    // expert e: gate row [16,0] (silu(16·x0) ≈ 16 for x0 = 1), up row [e+1, 0], down [[1],[0]]·…
    const expert = (e: number) => ({ gateProj: mat(1, 2, [32, 0]), upProj: mat(1, 2, [e + 1, 0]), downProj: mat(2, 1, [1, 0]) });
    const w: MoeMlpWeights = {
      kind: 'moe', gate, experts: [0, 1, 2, 3].map(expert),
      sharedExpert: { gateProj: mat(1, 2, [32, 0]), upProj: mat(1, 2, [0, 0]), downProj: mat(2, 1, [1, 1]) },
      sharedExpertGate: mat(1, 2, [0, 0]),
    };
    const x = new Float32Array([1, 0]);
    const r = moeRoute(ctx, w, x, 2, true, 'dense');
    expect(r.experts).toEqual([1, 2]); // three-way tie at 2: lowest ids first
    expect(r.weights).toEqual([0.5, 0.5]); // equal probabilities renormalised
    const out = moeForward(ctx, w, x, 2, true, H, 'dense');
    // silu(32) = 32; expert e output = 32·(e+1); 0.5·64 + 0.5·96 = 80; shared adds 0.5·0 = 0
    expect(out[0]).toBe(80);
    expect(Object.is(out[1], 0)).toBe(true);
    const r3 = moeRoute(ctx, w, x, 3, false, 'dense');
    expect(r3.experts).toEqual([1, 2, 3]);
    // softmax of [0,2,2,2]: p = e²/(1+3e²) each (not renormalised)
    const p = Math.exp(2) / (1 + 3 * Math.exp(2));
    for (const v of r3.weights) expect(Math.abs(v - p)).toBeLessThan(1e-6);
  });
});
