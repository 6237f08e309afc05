/**
 * The Gated DeltaNet (linear_attention) mixer in Hugging Face transformers' float32 order
 * (spec §3, HF `Qwen3_5GatedDeltaNet.forward`):
 *   1. projections mixed = x·W_qkvᵀ ([q|k|v]), z, b, a;
 *   2. causal depthwise conv1d over mixed with the conv state = the last K pre-activation inputs,
 *      y_c = Σ_j w[c,j]·state[c,j] (taps in ascending j, tap K−1 = current token), then SiLU;
 *   3. split q, k, v; β = sigmoid(b); g = −exp(A_log)·softplus(a + dt_bias) (float32);
 *   4. value head h reads key head h // r; q, k L2-normalised (eps 1e−6), q × fl(1/√dk);
 *   5. first forward on an empty cache (prefill): helper-4's chunked kernel per value head;
 *      decode: the recurrent rule per value head, in spec §3.7 order
 *        S ← S·exp(g); kv = Sᵀk; δ = (v − kv)·β; S ← S + k⊗δ; o = Sᵀq (updated S);
 *   6. gated RMSNorm per value head with z, then out_proj.
 *
 * Note (HF versions): the current recurrent torch function divides q by √dk, the chunked one
 * multiplies by dk^−0.5; we multiply by fl(1/√dk) in both (the brief's rule; ≤ 1 ulp apart).
 *
 * Skips that are bit-identical by construction:
 *  - exp(g) = 1 (a pinned head): the decay S·1 is skipped (x·1 = x for every float, −0 included);
 *  - sparse path only, decode: when the head's k is all ±0, v and β are finite and the state holds
 *    no −0 and no non-finite value, the kv/δ/update steps are skipped: each k_i·δ_j is ±0, and
 *    S + (±0) = S for every S ≠ −0 (a −0 entry would become +0, hence the −0 check).
 */
import { ChipcError } from '../util/errors.ts';
import type { ModelConfig } from '../model/config.ts';
import type { GdnWeights } from '../model/weights.ts';
import { chunkGatedDeltaRule } from './gdn-chunked.ts';
import { linear, type MatmulPath, type MatmulStats } from './matmul.ts';
import type { ExecNumericContext } from './numeric.ts';
import { exp32, sigmoid32, silu32, softplus32 } from './numeric.ts';
import { gatedRmsNorm, l2norm } from './norms.ts';

const f32 = Math.fround;

export interface GdnDimsX {
  hk: number; hv: number; dk: number; dv: number; r: number;
  keyDim: number; valueDim: number; convDim: number; K: number;
}

export function gdnDimsOf(cfg: ModelConfig): GdnDimsX {
  const hk = cfg.linearNumKeyHeads;
  const hv = cfg.linearNumValueHeads;
  const dk = cfg.linearKeyHeadDim;
  const dv = cfg.linearValueHeadDim;
  const r = hv / hk;
  if (!Number.isInteger(r) || r < 1) {
    throw new ChipcError('EXEC_BAD_CONFIG', `linear_num_value_heads (${hv}) must be a multiple of linear_num_key_heads (${hk})`);
  }
  const keyDim = hk * dk;
  const valueDim = hv * dv;
  return { hk, hv, dk, dv, r, keyDim, valueDim, convDim: 2 * keyDim + valueDim, K: cfg.linearConvKernelDim };
}

/** Per-layer GDN cache: conv state (channel c at c·K + j, j = K−1 newest) and one state per value head. */
export interface GdnCache {
  conv: Float32Array;
  /** S[i,j] at i·dv + j, per value head. */
  S: Float32Array[];
}

export function newGdnCache(d: GdnDimsX): GdnCache {
  const S: Float32Array[] = [];
  for (let h = 0; h < d.hv; h++) S.push(new Float32Array(d.dk * d.dv));
  return { conv: new Float32Array(d.convDim * d.K), S };
}

/** Per-token quantities after projections, conv, gates and q/k normalisation. */
interface GdnToken {
  /** [Hk·dk] l2-normalised and scaled queries, [Hk·dk] l2-normalised keys. */
  q: Float32Array; k: Float32Array;
  /** [Hv·dv] values (after conv + SiLU), [Hv·dv] gate input z. */
  v: Float32Array; z: Float32Array;
  beta: Float32Array; g: Float32Array;
}

function prepareToken(
  ctx: ExecNumericContext, d: GdnDimsX, w: GdnWeights, cache: GdnCache, x: Float32Array,
  path: MatmulPath, stats?: MatmulStats,
): GdnToken {
  const mixed = linear(ctx, w.inProjQkv, x, path, { stats });
  const z = linear(ctx, w.inProjZ, x, path, { stats });
  const b = linear(ctx, w.inProjB, x, path, { stats });
  const a = linear(ctx, w.inProjA, x, path, { stats });
  const { K, convDim } = d;
  const conv = cache.conv;
  const conved = new Float32Array(convDim);
  for (let c = 0; c < convDim; c++) {
    const base = c * K;
    for (let j = 0; j < K - 1; j++) conv[base + j] = conv[base + j + 1];
    conv[base + K - 1] = mixed[c];
    const y = ctx.act(ctx.dot(w.conv1d, base, 1, conv, base, 1, K));
    conved[c] = ctx.act(silu32(y, ctx.siluForm));
  }
  const { hk, hv, dk, keyDim } = d;
  const scale = f32(Math.pow(dk, -0.5)); // HF: query.shape[-1] ** -0.5, used as a float32 scalar
  const q = new Float32Array(keyDim);
  const k = new Float32Array(keyDim);
  for (let h = 0; h < hk; h++) {
    l2norm(ctx, conved, h * dk, dk, q, h * dk);
    for (let i = 0; i < dk; i++) q[h * dk + i] = f32(q[h * dk + i] * scale);
    l2norm(ctx, conved, keyDim + h * dk, dk, k, h * dk);
  }
  const v = conved.slice(2 * keyDim);
  const beta = new Float32Array(hv);
  const g = new Float32Array(hv);
  for (let h = 0; h < hv; h++) {
    beta[h] = ctx.act(sigmoid32(b[h]));
    g[h] = f32(-exp32(w.aLog[h]) * softplus32(f32(a[h] + w.dtBias[h])));
  }
  return { q, k, v, z, beta, g };
}

/** True when the state has no −0 and no non-finite entry (see the skip rule in the header). */
function stateSkippable(S: Float32Array): boolean {
  const u = new Uint32Array(S.buffer, S.byteOffset, S.length);
  for (let i = 0; i < u.length; i++) {
    const b = u[i];
    if (b === 0x80000000 || (b & 0x7f800000) === 0x7f800000) return false;
  }
  return true;
}

/**
 * One recurrent step for one value head (spec §3.7 order), in place on S; writes o[dv] at oOff.
 * q, k at qOff/kOff (length dk), v at vOff (length dv).
 */
export function recurrentStep(
  ctx: ExecNumericContext, dk: number, dv: number, S: Float32Array,
  q: Float32Array, qOff: number, k: Float32Array, kOff: number, v: Float32Array, vOff: number,
  g: number, beta: number, o: Float32Array, oOff: number, allowSkip: boolean,
): void {
  const eg = exp32(g);
  if (eg !== 1) for (let i = 0; i < S.length; i++) S[i] = f32(S[i] * eg);
  let skip = false;
  if (allowSkip && Number.isFinite(beta)) {
    skip = true;
    for (let i = 0; i < dk; i++) if (k[kOff + i] !== 0) { skip = false; break; }
    if (skip) for (let j = 0; j < dv; j++) if (!Number.isFinite(v[vOff + j])) { skip = false; break; }
    if (skip) skip = stateSkippable(S);
  }
  if (!skip) {
    const delta = new Float32Array(dv);
    for (let j = 0; j < dv; j++) {
      const kv = ctx.dot(S, j, dv, k, kOff, 1, dk);
      delta[j] = f32(f32(v[vOff + j] - kv) * beta);
    }
    for (let i = 0; i < dk; i++) {
      const ki = k[kOff + i];
      const row = i * dv;
      for (let j = 0; j < dv; j++) S[row + j] = f32(S[row + j] + f32(ki * delta[j]));
    }
  }
  for (let j = 0; j < dv; j++) o[oOff + j] = ctx.dot(S, j, dv, q, qOff, 1, dk);
}

export interface GdnRunResult {
  /** Mixer output per token, [H] each. */
  out: Float32Array[];
  /** Per token: states after that token (copies), or null where not available. Only filled when wantStates. */
  states: (Float32Array[] | null)[];
}

/**
 * Runs the GDN mixer over the normalised inputs xs (one [H] vector per token).
 * mode 'prefill': chunked kernel over all tokens (states known only after the last token);
 * mode 'decode': the recurrent rule token by token.
 */
export function gdnForward(
  ctx: ExecNumericContext, cfg: ModelConfig, w: GdnWeights, cache: GdnCache, xs: Float32Array[],
  mode: 'prefill' | 'decode', path: MatmulPath, wantStates: boolean, stats?: MatmulStats,
): GdnRunResult {
  const d = gdnDimsOf(cfg);
  const { hv, dk, dv, r, valueDim } = d;
  const L = xs.length;
  const toks = xs.map((x) => prepareToken(ctx, d, w, cache, x, path, stats));
  const core: Float32Array[] = toks.map(() => new Float32Array(valueDim));
  const states: (Float32Array[] | null)[] = toks.map(() => null);
  if (mode === 'prefill') {
    for (let h = 0; h < hv; h++) {
      const kh = Math.floor(h / r);
      const q = new Float32Array(L * dk);
      const k = new Float32Array(L * dk);
      const v = new Float32Array(L * dv);
      const g = new Float32Array(L);
      const beta = new Float32Array(L);
      for (let t = 0; t < L; t++) {
        q.set(toks[t].q.subarray(kh * dk, (kh + 1) * dk), t * dk);
        k.set(toks[t].k.subarray(kh * dk, (kh + 1) * dk), t * dk);
        v.set(toks[t].v.subarray(h * dv, (h + 1) * dv), t * dv);
        g[t] = toks[t].g[h];
        beta[t] = toks[t].beta[h];
      }
      const o = chunkGatedDeltaRule({ L, dk, dv, q, k, v, g, beta, state: cache.S[h], ctx });
      for (let t = 0; t < L; t++) {
        for (let j = 0; j < dv; j++) core[t][h * dv + j] = ctx.act(o[t * dv + j]);
      }
    }
    if (wantStates && L > 0) states[L - 1] = cache.S.map((s) => s.slice());
  } else {
    for (let t = 0; t < L; t++) {
      const tk = toks[t];
      for (let h = 0; h < hv; h++) {
        const kh = Math.floor(h / r);
        recurrentStep(
          ctx, dk, dv, cache.S[h], tk.q, kh * dk, tk.k, kh * dk, tk.v, h * dv, tk.g[h], tk.beta[h],
          core[t], h * dv, path === 'sparse',
        );
        for (let j = 0; j < dv; j++) core[t][h * dv + j] = ctx.act(core[t][h * dv + j]);
      }
      if (wantStates) states[t] = cache.S.map((s) => s.slice());
    }
  }
  const out: Float32Array[] = [];
  const normed = new Float32Array(valueDim);
  for (let t = 0; t < L; t++) {
    for (let h = 0; h < hv; h++) {
      gatedRmsNorm(ctx, core[t], h * dv, toks[t].z, h * dv, dv, w.norm, cfg.rmsNormEps, normed, h * dv);
    }
    out.push(linear(ctx, w.outProj, normed, path, { stats }));
  }
  return { out, states };
}
