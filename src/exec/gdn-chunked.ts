/**
 * The chunked Gated DeltaNet kernel used for a prompt (the first forward on an empty cache):
 * a float32 re-implementation of Hugging Face transformers' `torch_chunk_gated_delta_rule`,
 * for ONE value head, with transformers' order of operations. Decode steps use the recurrent
 * rule instead (exec/gdn.ts); the two agree in exact arithmetic but not always in float32.
 *
 * Two versions of transformers differ in how the chunk's unit-lower-triangular system is solved:
 *  - 'solve' (default): current `qwen3_5/modeling_qwen3_5.py` (commit 009e78d6) calls
 *    `torch.linalg.solve_triangular(ut_system, ·, upper=False, unitriangular=True)`. We do
 *    forward substitution X[i] = B[i] − Σ_{j<i} A[i,j]·X[j] as ONE dot over
 *    [1, A[i,0], …, A[i,i−1]]·[B[i], −X[0], …, −X[i−1]]: in sequential order that is exactly
 *    reference BLAS strsm's column sweep (B[i] first, then each product subtracted in turn).
 *  - 'inverse': `qwen3_next/modeling_qwen3_next.py` (commit 01cdc608, and the torch-export path
 *    of the current file) builds T = (I + L)⁻¹ row by row
 *    (`attn[i,:i] = row + Σ_m row[m]·attn[m,:i]`), adds I, then multiplies T·v_beta.
 *
 * Numerics: every product / sum / difference is one float32 rounding (Math.fround on doubles,
 * exact before rounding for float32 operands); every reduction (matmul entries, the cumulative
 * sum of g, the triangular solve) goes through ctx.dot / ctx.sum, so order modes (sequential,
 * shuffled, FMA) reach it. exp is fround(Math.exp(x)) (torch's float32 exp may differ by an ulp
 * for general x; exp(±0) = 1 and exp(−inf) = 0 are exact everywhere). The cumulative sum of g
 * is a float32 prefix sum per position (torch CPU accumulates cumsum in double: identical for the
 * pinned g = −0, may differ by an ulp for general g). Everything runs in float32 in HF whatever
 * the model dtype (it casts q, k, v, g, β to float32), so ctx.act is not applied here: the
 * caller rounds the output to the profile's dtype, as HF's final `.to(initial_dtype)` does.
 *
 * Caller contract (where HF's normalisation and scale happen): HF's chunk function does
 * `l2norm(q), l2norm(k)` (use_qk_l2norm_in_kernel) and then `q ← q · fl32(dk^−0.5)` itself,
 * before padding. Both are elementwise per token, so the caller does them and passes q already
 * normalised and scaled, k already normalised: the bits are the same as inside HF.
 */
import { ChipcError } from '../util/errors.ts';
import type { NumericContext } from './types.ts';

export type ChunkSolveVariant = 'solve' | 'inverse';

export interface ChunkGatedDeltaRuleArgs {
  /** Sequence length (≥ 0), key dim and value dim of this value head. */
  L: number; dk: number; dv: number;
  /** [L·dk], l2-normalised; q already multiplied by fl32(1/√dk). */
  q: Float32Array; k: Float32Array;
  /** [L·dv]. */
  v: Float32Array;
  /** [L] log-decay g (≤ 0) and write strength β. */
  g: Float32Array; beta: Float32Array;
  /** [dk·dv] initial state, S[i,j] at i·dv + j; overwritten with the final state. */
  state: Float32Array;
  ctx: NumericContext;
  /** Chunk size C (default 64, HF's). */
  chunkSize?: number;
  /** Triangular-solve variant (default 'solve', current HF Qwen3.5). */
  variant?: ChunkSolveVariant;
}

const f = Math.fround;

function checkLen(name: string, arr: Float32Array, want: number): void {
  if (!(arr instanceof Float32Array)) {
    throw new ChipcError('exec.gdn-chunk-input', `chunkGatedDeltaRule: ${name} must be a Float32Array`);
  }
  if (arr.length !== want) {
    throw new ChipcError(
      'exec.gdn-chunk-input',
      `chunkGatedDeltaRule: ${name} has length ${arr.length}, expected ${want}`,
    );
  }
}

function checkDim(name: string, n: number, min: number): void {
  if (!Number.isInteger(n) || n < min) {
    throw new ChipcError('exec.gdn-chunk-input', `chunkGatedDeltaRule: ${name} must be an integer ≥ ${min}, got ${n}`);
  }
}

/** The argument checks of chunkGatedDeltaRule (sizes, lengths, variant): ChipcError exec.gdn-chunk-input. */
export function checkChunkArgs(args: ChunkGatedDeltaRuleArgs): void {
  const { L, dk, dv } = args;
  const variant = args.variant ?? 'solve';
  checkDim('L', L, 0);
  checkDim('dk', dk, 1);
  checkDim('dv', dv, 1);
  checkDim('chunkSize', args.chunkSize ?? 64, 1);
  if (variant !== 'solve' && variant !== 'inverse') {
    throw new ChipcError('exec.gdn-chunk-input', `chunkGatedDeltaRule: unknown variant '${String(variant)}'`);
  }
  checkLen('q', args.q, L * dk);
  checkLen('k', args.k, L * dk);
  checkLen('v', args.v, L * dv);
  checkLen('g', args.g, L);
  checkLen('beta', args.beta, L);
  checkLen('state', args.state, dk * dv);
}

/**
 * The element-wise arrays of one chunk (padded positions stay zero, like F.pad), shared by the
 * dense kernel and its sparse evaluation (gdn-chunked-sparse.ts) so that both compute them with
 * the same operations: the chunk's q, k, g; v·β and k·β; cum = cumsum(g) (through ctx.sum);
 * exp(cum); decay[t,u] = exp(cum_t − cum_u) for u ≤ t, 0 above the diagonal; k·β·exp(cum); and,
 * from decayQueriesKeys, q·exp(cum) and k·exp(cum_last − cum).
 */
export interface ChunkArrays {
  qc: Float32Array; kc: Float32Array; gc: Float32Array; kBeta: Float32Array; vBeta: Float32Array;
  cum: Float32Array; expCum: Float32Array; decay: Float32Array; decayedKBeta: Float32Array;
  qDecayed: Float32Array; kDecayed: Float32Array;
}

export function newChunkArrays(C: number, dk: number, dv: number): ChunkArrays {
  const a = (n: number) => new Float32Array(n);
  return {
    qc: a(C * dk), kc: a(C * dk), gc: a(C), kBeta: a(C * dk), vBeta: a(C * dv), cum: a(C), expCum: a(C),
    decay: a(C * C), decayedKBeta: a(C * dk), qDecayed: a(C * dk), kDecayed: a(C * dk),
  };
}

/** Fills `c` for the chunk of positions t0 … t0+n−1 (n ≤ C) of `args` (all but qDecayed, kDecayed). */
export function loadChunk(args: ChunkGatedDeltaRuleArgs, C: number, t0: number, n: number, c: ChunkArrays): void {
  const { dk, dv, q, k, v, g, beta, ctx } = args;
  const { qc, kc, gc, kBeta, vBeta, cum, expCum, decay, decayedKBeta } = c;
  qc.fill(0); kc.fill(0); vBeta.fill(0); kBeta.fill(0); gc.fill(0);
  qc.set(q.subarray(t0 * dk, (t0 + n) * dk));
  kc.set(k.subarray(t0 * dk, (t0 + n) * dk));
  gc.set(g.subarray(t0, t0 + n));
  // v_beta = value·β, k_beta = key·β (padding: 0·0).
  for (let t = 0; t < C; t++) {
    const b = t < n ? beta[t0 + t] : 0;
    for (let j = 0; j < dv; j++) vBeta[t * dv + j] = f((t < n ? v[(t0 + t) * dv + j] : 0) * b);
    for (let i = 0; i < dk; i++) kBeta[t * dk + i] = f(kc[t * dk + i] * b);
  }
  // cum_decay = cumsum(g) within the chunk.
  for (let t = 0; t < C; t++) cum[t] = ctx.sum(gc, 0, 1, t + 1);
  for (let t = 0; t < C; t++) expCum[t] = f(Math.exp(cum[t]));
  for (let t = 0; t < C; t++) {
    for (let u = 0; u < C; u++) decay[t * C + u] = u <= t ? f(Math.exp(f(cum[t] - cum[u]))) : 0;
  }
  // decayed_k_beta = k_beta · exp(cum_decay).
  for (let t = 0; t < C; t++) {
    for (let i = 0; i < dk; i++) decayedKBeta[t * dk + i] = f(kBeta[t * dk + i] * expCum[t]);
  }
}

/** query ⊙ exp(cum) and key ⊙ exp(cum_last − cum) into `c`; returns chunk_decay = exp(cum_last). */
export function decayQueriesKeys(c: ChunkArrays, C: number, dk: number): number {
  const { qc, kc, cum, expCum, qDecayed, kDecayed } = c;
  const cLast = cum[C - 1];
  for (let t = 0; t < C; t++) {
    const kd = f(Math.exp(f(cLast - cum[t])));
    for (let i = 0; i < dk; i++) {
      qDecayed[t * dk + i] = f(qc[t * dk + i] * expCum[t]);
      kDecayed[t * dk + i] = f(kc[t * dk + i] * kd);
    }
  }
  return f(Math.exp(cLast));
}

/**
 * Chunked gated delta rule for one value head. Exact math (per chunk of C positions, t local,
 * c_t = Σ_{u≤t} g_u within the chunk, padded positions have q = k = v = g = β = 0):
 *   A[t,u]  = (β_t k_t · k_u)·exp(c_t − c_u)               u < t   (strictly lower)
 *   U       = (I + A)⁻¹ (β ⊙ V),   W = (I + A)⁻¹ (β exp(c) ⊙ K)
 *   V_new   = U − W·S
 *   O_t     = (q_t exp(c_t))·S + Σ_{u≤t} (q_t·k_u) exp(c_t − c_u) V_new[u]
 *   S       ← S·exp(c_last) + Σ_u (k_u exp(c_last − c_u)) ⊗ V_new[u]
 * which equals the recurrence S ← S·e^g; S += k⊗β(v − Sᵀk); o = Sᵀq in exact arithmetic.
 * Returns the [L·dv] outputs; `state` is updated in place to the final state.
 */
export function chunkGatedDeltaRule(args: ChunkGatedDeltaRuleArgs): Float32Array {
  checkChunkArgs(args);
  const { L, dk, dv, state, ctx } = args;
  const C = args.chunkSize ?? 64;
  const variant = args.variant ?? 'solve';

  const out = new Float32Array(L * dv);
  const dot = ctx.dot;

  const ch0 = newChunkArrays(C, dk, dv);
  const { kc, qc, kBeta, vBeta, decay, decayedKBeta, qDecayed, kDecayed } = ch0;
  const tri = new Float32Array(C * C); // the strictly lower system (solve) or T = (I+A)⁻¹ (inverse)
  const newValues = new Float32Array(C * dv);
  const kCumDecay = new Float32Array(C * dk);
  const vNew = new Float32Array(C * dv);
  const intra = new Float32Array(C * C);
  const coefs = new Float32Array(C + 1);
  const rhs = new Float32Array(C + 1);
  const rowCopy = new Float32Array(C);
  const sNext = new Float32Array(dk * dv);

  const numChunks = Math.ceil(L / C);
  for (let ch = 0; ch < numChunks; ch++) {
    const t0 = ch * C;
    const n = Math.min(C, L - t0); // real (unpadded) positions in this chunk
    loadChunk(args, C, t0, n, ch0);

    if (variant === 'solve') {
      // ut_system[t,u] = (k_beta_t · k_u)·pairwise_decay; only the strictly lower part is read.
      for (let t = 0; t < C; t++) {
        for (let u = 0; u < t; u++) tri[t * C + u] = f(dot(kBeta, t * dk, 1, kc, u * dk, 1, dk) * decay[t * C + u]);
      }
      forwardSubstitute(tri, C, vBeta, dv, newValues, dot, coefs, rhs);
      forwardSubstitute(tri, C, decayedKBeta, dk, kCumDecay, dot, coefs, rhs);
    } else {
      // attn = −((k_beta·kᵀ) ⊙ decay_mask) with the upper triangle and diagonal filled with 0.
      tri.fill(0);
      for (let t = 0; t < C; t++) {
        for (let u = 0; u < t; u++) tri[t * C + u] = -f(dot(kBeta, t * dk, 1, kc, u * dk, 1, dk) * decay[t * C + u]);
      }
      // attn[i,:i] = row + Σ_m row[m]·attn[m,:i] (rows < i are final when row i is built).
      for (let i = 1; i < C; i++) {
        for (let m = 0; m < i; m++) rowCopy[m] = tri[i * C + m];
        for (let j = 0; j < i; j++) tri[i * C + j] = f(rowCopy[j] + dot(rowCopy, 0, 1, tri, j, C, i));
      }
      for (let i = 0; i < C; i++) tri[i * C + i] = f(tri[i * C + i] + 1);
      // value = attn @ v_beta; k_cumdecay = attn @ decayed_k_beta (full C-term matmuls).
      for (let t = 0; t < C; t++) {
        for (let j = 0; j < dv; j++) newValues[t * dv + j] = dot(tri, t * C, 1, vBeta, j, dv, C);
        for (let i = 0; i < dk; i++) kCumDecay[t * dk + i] = dot(tri, t * C, 1, decayedKBeta, i, dk, C);
      }
    }

    // intra_chunk_attn = (q·kᵀ) ⊙ decay, upper triangle zeroed (solve: ·exp(−inf) = ±0; inverse:
    // masked_fill +0 — the sign of a zero term never changes a sum that has a non-zero term).
    for (let t = 0; t < C; t++) {
      for (let u = 0; u < C; u++) {
        const qk = dot(qc, t * dk, 1, kc, u * dk, 1, dk);
        intra[t * C + u] = u <= t ? f(qk * decay[t * C + u]) : variant === 'solve' ? f(qk * 0) : 0;
      }
    }
    // query ⊙ exp(cum), key ⊙ exp(cum_last − cum), chunk_decay = exp(cum_last).
    const chunkDecay = decayQueriesKeys(ch0, C, dk);
    // v_new = new_values − k_cumdecay @ S.
    for (let t = 0; t < C; t++) {
      for (let j = 0; j < dv; j++) {
        vNew[t * dv + j] = f(newValues[t * dv + j] - dot(kCumDecay, t * dk, 1, state, j, dv, dk));
      }
    }
    // out = (query ⊙ exp(cum)) @ S + intra @ v_new.
    for (let t = 0; t < n; t++) {
      for (let j = 0; j < dv; j++) {
        const inter = dot(qDecayed, t * dk, 1, state, j, dv, dk);
        const intraTerm = dot(intra, t * C, 1, vNew, j, dv, C);
        out[(t0 + t) * dv + j] = f(inter + intraTerm);
      }
    }
    // S ← S·chunk_decay + (key ⊙ exp(cum_last − cum))ᵀ @ v_new.
    for (let i = 0; i < dk; i++) {
      for (let j = 0; j < dv; j++) {
        const upd = dot(kDecayed, i, dk, vNew, j, dv, C);
        sNext[i * dv + j] = f(f(state[i * dv + j] * chunkDecay) + upd);
      }
    }
    state.set(sNext);
  }
  return out;
}

/**
 * Solves (I + A) X = B for X by forward substitution, A strictly lower [C×C] (diagonal and
 * upper part ignored, as solve_triangular(unitriangular=True) does). Row i is
 * X[i,c] = B[i,c] − Σ_{j<i} A[i,j]·X[j,c], evaluated as one dot
 * [1, A[i,0..i−1]] · [B[i,c], −X[0..i−1,c]] (sequential order = B first, products subtracted
 * in increasing j, which is reference BLAS strsm's order; −(a·x) = a·(−x) exactly).
 */
function forwardSubstitute(
  A: Float32Array, C: number, B: Float32Array, cols: number, X: Float32Array,
  dot: NumericContext['dot'], coefs: Float32Array, rhs: Float32Array,
): void {
  for (let i = 0; i < C; i++) {
    coefs[0] = 1;
    for (let j = 0; j < i; j++) coefs[j + 1] = A[i * C + j];
    for (let c = 0; c < cols; c++) {
      rhs[0] = B[i * cols + c];
      for (let j = 0; j < i; j++) rhs[j + 1] = -X[j * cols + c];
      X[i * cols + c] = dot(coefs, 0, 1, rhs, 0, 1, i + 1);
    }
  }
}
