/**
 * The chunked Gated DeltaNet kernel of gdn-chunked.ts (the 'solve' variant) evaluated over the
 * non-zero entries of one operand of each reduction: bit-identical to it in sequential and FMA
 * order, and much faster on a compiled chip, whose keys and queries are one-hot codes and whose
 * states are mostly zero. gdn-chunked.ts stays the definition; this file only skips work.
 *
 * Why skipping is exact. A reduction is acc = −0, then acc = acc ⊕ a_i·b_i for i in index order
 * (sequential: the rounded product added and rounded; fma: the exact product added with one
 * rounding). A term with a_i = ±0 and b_i finite is a zero. Adding a zero to a non-zero acc
 * returns acc unchanged, and adding anything non-zero to a zero acc returns the same value
 * whatever the zero's sign; so the sum over the terms with a_i ≠ 0, in index order, equals the
 * full sum in every intermediate value except possibly the sign of a zero. In round-to-nearest a
 * zero sum is −0 only if every term added was −0. Hence: where the sparse sum is non-zero or +0
 * it is the full sum; where it is −0 the full sum is −0 iff every skipped term is −0 as well,
 * which `zeroSign` decides (usually at the first skipped term). A skipped term needs b_i finite
 * (0·∞ is NaN): every operand read at skipped positions is checked finite, and when one is not
 * the kernel returns null and leaves the state alone, and the caller runs the dense kernel.
 */
import { addRoundOnce } from './numeric.ts';
import { checkChunkArgs, decayQueriesKeys, loadChunk, newChunkArrays, type ChunkGatedDeltaRuleArgs } from './gdn-chunked.ts';
import type { OrderMode } from './types.ts';

const f = Math.fround;

function allFinite(a: Float32Array): boolean {
  for (let i = 0; i < a.length; i++) if (!Number.isFinite(a[i]!)) return false;
  return true;
}

/** Positions i < n with a[off + i·stride] ≠ 0 (NaN included), ascending, into idx[at ..); their count. */
function nonZeros(a: Float32Array, off: number, stride: number, n: number, idx: Int32Array, at: number): number {
  let c = 0;
  for (let i = 0; i < n; i++) if (a[off + i * stride] !== 0) idx[at + c++] = i;
  return c;
}

/**
 * The sign of a reduction whose non-zero-`a` terms summed to −0: −0 iff every term with a_i = 0
 * is −0 (a_i·b_i for finite b_i), else +0.
 */
function zeroSign(a: Float32Array, aOff: number, aStride: number, b: Float32Array, bOff: number, bStride: number, n: number): number {
  for (let i = 0; i < n; i++) {
    const x = a[aOff + i * aStride]!;
    if (x === 0 && 1 / (x * b[bOff + i * bStride]!) > 0) return 0;
  }
  return -0;
}

/**
 * Σ a_i·b_i over the listed positions idx[at .. at+cnt) of `a`'s non-zeros, in the order mode's
 * rounding (fma: one rounding per term), completed to the full n-term reduction by zeroSign.
 */
function sparseDot(
  fma: boolean, a: Float32Array, aOff: number, aStride: number, idx: Int32Array, at: number, cnt: number,
  b: Float32Array, bOff: number, bStride: number, n: number,
): number {
  let acc = -0;
  if (fma) {
    for (let k = 0; k < cnt; k++) {
      const i = idx[at + k]!;
      acc = addRoundOnce(acc, a[aOff + i * aStride]! * b[bOff + i * bStride]!);
    }
  } else {
    for (let k = 0; k < cnt; k++) {
      const i = idx[at + k]!;
      acc = f(acc + f(a[aOff + i * aStride]! * b[bOff + i * bStride]!));
    }
  }
  if (acc === 0 && 1 / acc < 0) return zeroSign(a, aOff, aStride, b, bOff, bStride, n);
  return acc;
}

/**
 * chunkGatedDeltaRule (variant 'solve'; the same argument checks) over the non-zeros, for the
 * sequential and fma orders (`order`: the order mode of args.ctx's dot): the same outputs and
 * final state bit for bit, or null (state untouched) when an operand is not finite, the order is
 * shuffled or the variant is 'inverse'.
 */
export function chunkGatedDeltaRuleSparse(args: ChunkGatedDeltaRuleArgs, order: OrderMode['kind']): Float32Array | null {
  checkChunkArgs(args);
  const { L, dk, dv, q, k, v, g, beta } = args;
  const C = args.chunkSize ?? 64;
  if ((args.variant ?? 'solve') !== 'solve' || (order !== 'sequential' && order !== 'fma')) return null;
  const fma = order === 'fma';
  if (!allFinite(q) || !allFinite(k) || !allFinite(v) || !allFinite(g) || !allFinite(beta) || !allFinite(args.state)) return null;
  const S = args.state.slice();
  const out = new Float32Array(L * dv);

  const ch0 = newChunkArrays(C, dk, dv);
  const { qc, kc, kBeta, vBeta, expCum, decay, decayedKBeta, qDecayed, kDecayed } = ch0;
  const tri = new Float32Array(C * C);
  const newValues = new Float32Array(C * dv);
  const kCumDecay = new Float32Array(C * dk);
  const vNew = new Float32Array(C * dv);
  const intra = new Float32Array(C * C);
  const sNext = new Float32Array(dk * dv);
  // non-zero lists: rows of kc, qc, kCumDecay, qDecayed (dk each), of tri and intra (C each),
  // columns of kDecayed (C each)
  const kNz = new Int32Array(C * dk), kCnt = new Int32Array(C);
  const qNz = new Int32Array(C * dk), qCnt = new Int32Array(C);
  const kcdNz = new Int32Array(C * dk), kcdCnt = new Int32Array(C);
  const qdNz = new Int32Array(C * dk), qdCnt = new Int32Array(C);
  const triNz = new Int32Array(C), intraNz = new Int32Array(C * C), intraCnt = new Int32Array(C);
  const kdNz = new Int32Array(dk * C), kdCnt = new Int32Array(dk);

  const numChunks = Math.ceil(L / C);
  for (let ch = 0; ch < numChunks; ch++) {
    const t0 = ch * C;
    const n = Math.min(C, L - t0);
    loadChunk(args, C, t0, n, ch0);
    if (!allFinite(kBeta) || !allFinite(decay) || !allFinite(expCum)) return null;
    for (let t = 0; t < C; t++) {
      kCnt[t] = nonZeros(kc, t * dk, 1, dk, kNz, t * dk);
      qCnt[t] = nonZeros(qc, t * dk, 1, dk, qNz, t * dk);
    }

    // ut_system's strictly lower part: (k_beta_t · k_u)·decay, over the non-zeros of k_u.
    for (let t = 0; t < C; t++) {
      for (let u = 0; u < t; u++) {
        tri[t * C + u] = f(sparseDot(fma, kc, u * dk, 1, kNz, u * dk, kCnt[u]!, kBeta, t * dk, 1, dk) * decay[t * C + u]!);
      }
    }
    forwardSubstituteSparse(fma, tri, C, vBeta, dv, newValues, triNz);
    forwardSubstituteSparse(fma, tri, C, decayedKBeta, dk, kCumDecay, triNz);
    if (!allFinite(newValues) || !allFinite(kCumDecay)) return null;

    // intra_chunk_attn = (q·kᵀ) ⊙ decay (above the diagonal: ·exp(−inf), a zero with qk's sign).
    for (let t = 0; t < C; t++) {
      for (let u = 0; u < C; u++) {
        const qk = qCnt[t]! <= kCnt[u]!
          ? sparseDot(fma, qc, t * dk, 1, qNz, t * dk, qCnt[t]!, kc, u * dk, 1, dk)
          : sparseDot(fma, kc, u * dk, 1, kNz, u * dk, kCnt[u]!, qc, t * dk, 1, dk);
        intra[t * C + u] = u <= t ? f(qk * decay[t * C + u]!) : f(qk * 0);
      }
    }
    if (!allFinite(intra)) return null;
    const chunkDecay = decayQueriesKeys(ch0, C, dk);
    for (let t = 0; t < C; t++) {
      kcdCnt[t] = nonZeros(kCumDecay, t * dk, 1, dk, kcdNz, t * dk);
      qdCnt[t] = nonZeros(qDecayed, t * dk, 1, dk, qdNz, t * dk);
      intraCnt[t] = nonZeros(intra, t * C, 1, C, intraNz, t * C);
    }
    for (let i = 0; i < dk; i++) kdCnt[i] = nonZeros(kDecayed, i, dk, C, kdNz, i * C);

    // v_new = new_values − k_cumdecay @ S.
    for (let t = 0; t < C; t++) {
      for (let j = 0; j < dv; j++) {
        vNew[t * dv + j] = f(newValues[t * dv + j]! - sparseDot(fma, kCumDecay, t * dk, 1, kcdNz, t * dk, kcdCnt[t]!, S, j, dv, dk));
      }
    }
    if (!allFinite(vNew)) return null;
    // out = (query ⊙ exp(cum)) @ S + intra @ v_new.
    for (let t = 0; t < n; t++) {
      for (let j = 0; j < dv; j++) {
        const inter = sparseDot(fma, qDecayed, t * dk, 1, qdNz, t * dk, qdCnt[t]!, S, j, dv, dk);
        const intraTerm = sparseDot(fma, intra, t * C, 1, intraNz, t * C, intraCnt[t]!, vNew, j, dv, C);
        out[(t0 + t) * dv + j] = f(inter + intraTerm);
      }
    }
    // S ← S·chunk_decay + (key ⊙ exp(cum_last − cum))ᵀ @ v_new.
    for (let i = 0; i < dk; i++) {
      for (let j = 0; j < dv; j++) {
        const upd = sparseDot(fma, kDecayed, i, dk, kdNz, i * C, kdCnt[i]!, vNew, j, dv, C);
        sNext[i * dv + j] = f(f(S[i * dv + j]! * chunkDecay) + upd);
      }
    }
    S.set(sNext);
    if (!allFinite(S)) return null;
  }
  args.state.set(S);
  return out;
}

/**
 * forwardSubstitute of gdn-chunked.ts over the non-zeros of each row of A: row i is the dot
 * [1, A[i,0..i−1]] · [B[i,c], −X[0..i−1,c]], whose first term (1·B[i,c] = B[i,c]) is always
 * present. X must come out finite for the skipped terms to be zeros: the caller checks it.
 */
function forwardSubstituteSparse(
  fma: boolean, A: Float32Array, C: number, B: Float32Array, cols: number, X: Float32Array, nz: Int32Array,
): void {
  for (let i = 0; i < C; i++) {
    const cnt = nonZeros(A, i * C, 1, i, nz, 0);
    for (let c = 0; c < cols; c++) {
      let acc = fma ? addRoundOnce(-0, B[i * cols + c]!) : f(-0 + B[i * cols + c]!);
      if (fma) {
        for (let kk = 0; kk < cnt; kk++) {
          const j = nz[kk]!;
          acc = addRoundOnce(acc, A[i * C + j]! * -X[j * cols + c]!);
        }
      } else {
        for (let kk = 0; kk < cnt; kk++) {
          const j = nz[kk]!;
          acc = f(acc + f(A[i * C + j]! * -X[j * cols + c]!));
        }
      }
      if (acc === 0 && 1 / acc < 0) {
        // the skipped terms A[i,j]·(−X[j,c]) with A[i,j] = ±0
        for (let j = 0; j < i; j++) {
          const a = A[i * C + j]!;
          if (a === 0 && 1 / (a * -X[j * cols + c]!) > 0) { acc = 0; break; }
        }
      }
      X[i * cols + c] = acc;
    }
  }
}
