/**
 * The gated full-attention mixer in Hugging Face transformers' float32 order (spec §4,
 * HF `Qwen3_5Attention.forward` + `eager_attention_forward`), with a KV cache:
 *   1. qg = x·W_qᵀ, head-interleaved rows: head h query = qg[h·2D .. h·2D+D), gate = the next D;
 *   2. k = x·W_kᵀ, v = x·W_vᵀ; q_norm / k_norm: zero-centred RMSNorm per head over D;
 *   3. partial RoPE on the first R = int(D·partial_rotary_factor) dims (rotate-half):
 *        inv_freq_i = fl(1 / fl(θ^fl(2i/R))), angle = fl(pos·inv_freq_i), c = fl(cos), s = fl(sin)
 *        x'_i = fl(fl(x_i·c_i) + fl(−x_{i+R/2}·s_i)),  x'_{i+R/2} = fl(fl(x_{i+R/2}·c_i) + fl(x_i·s_i));
 *   4. GQA: query head h reads kv head h // (Hq/Hkv);
 *   5. s_j = fl(dot(q, k_j) · fl(D^−0.5)) for the cached positions j ≤ pos (the causal mask: later
 *      positions are never visited, so they contribute nothing, not even a ±0 term);
 *      softmax in float32: m = max s, e_j = fl(exp(fl(s_j − m))), Σ through ctx.sum,
 *      p_j = fl(e_j · fl(1/Σ)) (ATen CPU's softmax multiplies by the reciprocal);
 *   6. a_d = Σ_j p_j·v_j[d] (ctx.dot over positions in ascending order);
 *   7. a ⊙ sigmoid(gate), then o_proj.
 * bf16 profile: ctx.act after every materialised tensor (linears, norms, cos/sin cast to the
 * activation dtype, each RoPE op, scores before and after the scaling, probs cast to the query
 * dtype, a, sigmoid(gate), the gated product).
 */
import type { ModelConfig } from '../model/config.ts';
import type { AttentionWeights } from '../model/weights.ts';
import { linear, type MatmulPath, type MatmulStats } from './matmul.ts';
import type { ExecNumericContext } from './numeric.ts';
import { exp32, sigmoid32 } from './numeric.ts';
import { rmsNorm1p } from './norms.ts';

const f32 = Math.fround;

/** Per-layer KV cache: post-norm, post-RoPE keys and values, [pos][Hkv·D] flattened. */
export class KvCache {
  k: Float32Array;
  v: Float32Array;
  length = 0;
  constructor(readonly width: number) {
    this.k = new Float32Array(width * 16);
    this.v = new Float32Array(width * 16);
  }
  push(k: Float32Array, v: Float32Array): void {
    const need = (this.length + 1) * this.width;
    if (need > this.k.length) {
      const nk = new Float32Array(this.k.length * 2);
      nk.set(this.k);
      this.k = nk;
      const nv = new Float32Array(this.v.length * 2);
      nv.set(this.v);
      this.v = nv;
    }
    this.k.set(k, this.length * this.width);
    this.v.set(v, this.length * this.width);
    this.length++;
  }
}

/** Rotary dims R = int(D·partial_rotary_factor) and inv_freq[R/2] in float32 as HF computes them. */
export function ropeInvFreq(cfg: ModelConfig): { R: number; invFreq: Float32Array } {
  const R = Math.trunc(cfg.headDim * cfg.partialRotaryFactor);
  const half = Math.floor(R / 2);
  const invFreq = new Float32Array(half);
  const theta = f32(cfg.ropeTheta);
  for (let i = 0; i < half; i++) {
    const e = f32((2 * i) / R);
    invFreq[i] = f32(1 / f32(Math.pow(theta, e)));
  }
  return { R, invFreq };
}

/** Applies rotate-half RoPE in place to x[off .. off+R) with cos/sin tables c, s (length R/2). */
function applyRope(ctx: ExecNumericContext, x: Float32Array, off: number, R: number, c: Float32Array, s: Float32Array): void {
  const half = R >> 1;
  for (let i = 0; i < half; i++) {
    const a = x[off + i];
    const b = x[off + i + half];
    const lo = ctx.act(f32(ctx.act(f32(a * c[i])) + ctx.act(f32(-b * s[i]))));
    const hi = ctx.act(f32(ctx.act(f32(b * c[i])) + ctx.act(f32(a * s[i]))));
    x[off + i] = lo;
    x[off + i + half] = hi;
  }
}

export interface AttnRunResult {
  out: Float32Array;
  /** Softmax rows per query head (copies), when requested. */
  probs?: Float32Array[];
}

/** One token of attention at position `pos` (its k, v are appended to the cache first). */
export function attentionStep(
  ctx: ExecNumericContext, cfg: ModelConfig, w: AttentionWeights, cache: KvCache, x: Float32Array, pos: number,
  rope: { R: number; invFreq: Float32Array }, path: MatmulPath, wantProbs: boolean, stats?: MatmulStats,
): AttnRunResult {
  const D = cfg.headDim;
  const Hq = cfg.numAttentionHeads;
  const Hkv = cfg.numKeyValueHeads;
  const group = Hq / Hkv;
  const eps = cfg.rmsNormEps;
  const qg = linear(ctx, w.qProj, x, path, { stats });
  const kx = linear(ctx, w.kProj, x, path, { stats });
  const vx = linear(ctx, w.vProj, x, path, { stats });
  const q = new Float32Array(Hq * D);
  for (let h = 0; h < Hq; h++) rmsNorm1p(ctx, qg, h * 2 * D, D, w.qNorm, eps, q, h * D);
  const k = new Float32Array(Hkv * D);
  for (let h = 0; h < Hkv; h++) rmsNorm1p(ctx, kx, h * D, D, w.kNorm, eps, k, h * D);
  const { R, invFreq } = rope;
  const half = R >> 1;
  const c = new Float32Array(half);
  const s = new Float32Array(half);
  for (let i = 0; i < half; i++) {
    const ang = f32(pos * invFreq[i]);
    c[i] = ctx.act(f32(Math.cos(ang)));
    s[i] = ctx.act(f32(Math.sin(ang)));
  }
  if (R > 0) {
    for (let h = 0; h < Hq; h++) applyRope(ctx, q, h * D, R, c, s);
    for (let h = 0; h < Hkv; h++) applyRope(ctx, k, h * D, R, c, s);
  }
  cache.push(k, vx);
  const n = cache.length;
  const W = cache.width;
  const scale = f32(Math.pow(D, -0.5));
  const scores = new Float32Array(n);
  const e = new Float32Array(n);
  const p = new Float32Array(n);
  const attn = new Float32Array(Hq * D);
  const probs: Float32Array[] | undefined = wantProbs ? [] : undefined;
  for (let h = 0; h < Hq; h++) {
    const kvh = Math.floor(h / group);
    let m = -Infinity;
    for (let j = 0; j < n; j++) {
      const sc = ctx.act(f32(ctx.act(ctx.dot(q, h * D, 1, cache.k, j * W + kvh * D, 1, D)) * scale));
      scores[j] = sc;
      if (Number.isNaN(sc)) m = NaN; // torch's max propagates NaN
      else if (sc > m) m = sc;
    }
    for (let j = 0; j < n; j++) e[j] = exp32(f32(scores[j] - m));
    const inv = f32(1 / ctx.sum(e, 0, 1, n));
    for (let j = 0; j < n; j++) p[j] = ctx.act(f32(e[j] * inv));
    if (probs) probs.push(p.slice(0, n));
    for (let d = 0; d < D; d++) {
      attn[h * D + d] = ctx.act(ctx.dot(p, 0, 1, cache.v, kvh * D + d, W, n));
    }
  }
  for (let h = 0; h < Hq; h++) {
    for (let d = 0; d < D; d++) {
      const gate = ctx.act(sigmoid32(qg[h * 2 * D + D + d]));
      attn[h * D + d] = ctx.act(f32(attn[h * D + d] * gate));
    }
  }
  const out = linear(ctx, w.oProj, attn, path, { stats });
  return probs ? { out, probs } : { out };
}
