/**
 * The gated full-attention mixer in Hugging Face transformers' float32 order (docs/host-architecture.md §4,
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
  /** Scratch of attentionStep (fully rewritten before it is read), created on first use. */
  scratch?: AttnScratch;
  /** Per column c of the value rows: how many cached positions have v[c] ≠ 0, and have v[c]'s sign bit set. */
  vNonZero: Int32Array;
  vNeg: Int32Array;
  /** How many cached key / value entries are non-finite (the sparse shortcuts need finite caches). */
  nonFiniteK = 0;
  nonFiniteV = 0;
  constructor(readonly width: number) {
    this.k = new Float32Array(width * 16);
    this.v = new Float32Array(width * 16);
    this.vNonZero = new Int32Array(width);
    this.vNeg = new Int32Array(width);
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
    for (let c = 0; c < this.width; c++) {
      const kc = k[c];
      if (kc - kc !== 0) this.nonFiniteK++;
      const vc = v[c];
      if (vc - vc !== 0) this.nonFiniteV++;
      if (vc !== 0) this.vNonZero[c]++;
      if (vc < 0 || (vc === 0 && 1 / vc < 0)) this.vNeg[c]++;
    }
  }
}

/** Per-layer scratch of attentionStep; the per-position arrays grow with the cache. */
interface AttnScratch {
  qg: Float32Array; kx: Float32Array; vx: Float32Array; q: Float32Array; k: Float32Array;
  c: Float32Array; s: Float32Array; attn: Float32Array; out: Float32Array;
  scores: Float32Array; e: Float32Array; p: Float32Array;
  qIdx: Int32Array; pIdx: Int32Array;
}

/**
 * dot(q[qOff ..+D), k[kOff ..+D)) in sequential order from −0, visiting the n dims idx[0..n) where q
 * is non-zero; exact for finite k by matmul.ts's argument (a skipped term (±0)·k is ±0). When no
 * visited term is non-zero, every term is ±0 with a sign that depends on k: the full dot decides.
 */
function sparseKeyDot(q: Float32Array, qOff: number, k: Float32Array, kOff: number, D: number, idx: Int32Array, n: number): number {
  let acc = -0;
  let any = false;
  for (let t = 0; t < n; t++) {
    const d = idx[t];
    const term = f32(q[qOff + d] * k[kOff + d]);
    if (term !== 0) { any = true; acc = f32(acc + term); }
  }
  if (acc !== 0 || Number.isNaN(acc)) return acc;
  if (any) return 0;
  acc = -0;
  for (let d = 0; d < D; d++) acc = f32(acc + f32(q[qOff + d] * k[kOff + d]));
  return acc;
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

/**
 * One token of attention at position `pos` (its k, v are appended to the cache first).
 * `reuseOut`: the returned `out` may be the layer's scratch (valid until the next call on this
 * cache); otherwise it is a fresh array. Every other intermediate lives in the cache's scratch.
 */
export function attentionStep(
  ctx: ExecNumericContext, cfg: ModelConfig, w: AttentionWeights, cache: KvCache, x: Float32Array, pos: number,
  rope: { R: number; invFreq: Float32Array }, path: MatmulPath, wantProbs: boolean, stats?: MatmulStats,
  reuseOut = false,
): AttnRunResult {
  const D = cfg.headDim;
  const Hq = cfg.numAttentionHeads;
  const Hkv = cfg.numKeyValueHeads;
  const group = Hq / Hkv;
  const eps = cfg.rmsNormEps;
  const { R, invFreq } = rope;
  const half = R >> 1;
  const sc0 = cache.scratch ??= {
    qg: new Float32Array(w.qProj.rows), kx: new Float32Array(w.kProj.rows), vx: new Float32Array(w.vProj.rows),
    q: new Float32Array(Hq * D), k: new Float32Array(Hkv * D), c: new Float32Array(half), s: new Float32Array(half),
    attn: new Float32Array(Hq * D), out: new Float32Array(w.oProj.rows),
    scores: new Float32Array(16), e: new Float32Array(16), p: new Float32Array(16),
    qIdx: new Int32Array(D), pIdx: new Int32Array(16),
  };
  const qg = linear(ctx, w.qProj, x, path, { stats, out: sc0.qg });
  const kx = linear(ctx, w.kProj, x, path, { stats, out: sc0.kx });
  const vx = linear(ctx, w.vProj, x, path, { stats, out: sc0.vx });
  const q = sc0.q;
  for (let h = 0; h < Hq; h++) rmsNorm1p(ctx, qg, h * 2 * D, D, w.qNorm, eps, q, h * D);
  const k = sc0.k;
  for (let h = 0; h < Hkv; h++) rmsNorm1p(ctx, kx, h * D, D, w.kNorm, eps, k, h * D);
  const c = sc0.c;
  const s = sc0.s;
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
  if (sc0.scores.length < n) {
    const m = Math.max(n, 2 * sc0.scores.length);
    sc0.scores = new Float32Array(m);
    sc0.e = new Float32Array(m);
    sc0.p = new Float32Array(m);
    sc0.pIdx = new Int32Array(m);
  }
  const { scores, e, p, attn } = sc0;
  const probs: Float32Array[] | undefined = wantProbs ? [] : undefined;
  const fast = path === 'sparse' && ctx.order.kind === 'sequential';
  for (let h = 0; h < Hq; h++) {
    const kvh = Math.floor(h / group);
    if (fast && cache.nonFiniteK === 0 && n <= 16777216) {
      let qZero = true;
      for (let d = 0; d < D; d++) if (q[h * D + d] !== 0) { qZero = false; break; }
      if (qZero) {
        // A query of ±0s (an unused head) against finite keys: every score is ±0, m is a zero, so
        // every e_j = exp(±0) = 1, Σ = n exactly (n ≤ 2^24) and every p_j = act(fl(1·fl(1/n))) = P.
        const P = ctx.act(f32(1 / n));
        p.fill(P, 0, n);
        if (probs) probs.push(p.slice(0, n));
        for (let d = 0; d < D; d++) {
          const col = kvh * D + d;
          // P > 0 finite: an all-zero value column gives terms P·(±0) with v's sign: −0 iff every one is −0
          attn[h * D + d] = cache.vNonZero[col] === 0
            ? ctx.act(cache.vNeg[col] === n ? -0 : 0)
            : ctx.act(ctx.dot(p, 0, 1, cache.v, col, W, n));
        }
        continue;
      }
    }
    // Sparse scores (finite keys): visit the query's non-zero dims only; see sparseKeyDot.
    let qn = -1;
    if (fast && cache.nonFiniteK === 0) {
      qn = 0;
      for (let d = 0; d < D; d++) if (q[h * D + d] !== 0) sc0.qIdx[qn++] = d;
    }
    let m = -Infinity;
    for (let j = 0; j < n; j++) {
      const dot = qn >= 0
        ? sparseKeyDot(q, h * D, cache.k, j * W + kvh * D, D, sc0.qIdx, qn)
        : ctx.dot(q, h * D, 1, cache.k, j * W + kvh * D, 1, D);
      const sc = ctx.act(f32(ctx.act(dot) * scale));
      scores[j] = sc;
      if (Number.isNaN(sc)) m = NaN; // torch's max propagates NaN
      else if (sc > m) m = sc;
    }
    for (let j = 0; j < n; j++) e[j] = exp32(f32(scores[j] - m));
    const inv = f32(1 / ctx.sum(e, 0, 1, n));
    for (let j = 0; j < n; j++) p[j] = ctx.act(f32(e[j] * inv));
    if (probs) probs.push(p.slice(0, n));
    if (fast && cache.nonFiniteV === 0) {
      // Sparse values: p_j ≥ +0 or NaN, never −0 (e ≥ +0, fl(1/Σ) ≥ +0). Terms with p_j = +0 are
      // ±0 with v's sign, so they are skipped (matmul.ts's argument); if no visited term is
      // non-zero, every term is a zero with the sign of v_j[d] (p_j > 0 or +0): the sum is −0
      // iff every cached v_j[d] has its sign bit set (vNeg counts them).
      let pn = 0;
      const pIdx = sc0.pIdx;
      for (let j = 0; j < n; j++) if (p[j] !== 0) pIdx[pn++] = j;
      for (let d = 0; d < D; d++) {
        const col = kvh * D + d;
        let acc = -0;
        let any = false;
        for (let t = 0; t < pn; t++) {
          const j = pIdx[t];
          const term = f32(p[j] * cache.v[j * W + col]);
          if (term !== 0) { any = true; acc = f32(acc + term); }
        }
        const y = acc !== 0 || Number.isNaN(acc) ? acc : any ? 0 : cache.vNeg[col] === n ? -0 : 0;
        attn[h * D + d] = ctx.act(y);
      }
    } else {
      for (let d = 0; d < D; d++) {
        attn[h * D + d] = ctx.act(ctx.dot(p, 0, 1, cache.v, kvh * D + d, W, n));
      }
    }
  }
  for (let h = 0; h < Hq; h++) {
    for (let d = 0; d < D; d++) {
      const gate = ctx.act(sigmoid32(qg[h * 2 * D + D + d]));
      attn[h * D + d] = ctx.act(f32(attn[h * D + d] * gate));
    }
  }
  const out = linear(ctx, w.oProj, attn, path, { stats, out: reuseOut ? sc0.out : undefined });
  return probs ? { out, probs } : { out };
}
