/**
 * The tracked GDN step's gated norm (gdn-tracked.ts gdnDecodeTracked): per value head, only the
 * entries whose output or gate bits moved since they were computed, the head's sum of squares only
 * when an output moved, every entry when the sum's bits moved (gatedNormHead, the JavaScript form),
 * and the same over every head in wasm (gatedNormWasm: wasm-gdn-kernels.ts gatedNorm).
 */
import type { GdnWeights } from '../model/weights.ts';
import type { GdnDims } from '../model/naming.ts';
import type { ExecNumericContext } from './numeric.ts';
import { gatedNormEntry, gatedNormEntryBf16, gatedNormFactor, gatedNormSquares } from './norms.ts';
import type { GdnBuffers, GdnTrack, NormKernel } from './gdn-cache.ts';
import { NORM_CTL } from './wasm-layout.ts';

/** GdnTrack.coreChanged flags: the head's output o may have moved (its step ran), a z row of it was recomputed. */
export const O_MAY_MOVE = 1;
export const Z_MAY_MOVE = 2;

/**
 * The tracked step's gated norm of value head h (sequential order, where gatedRmsNorm folds its sum
 * of squares in index order), in parts: an entry is a pure function of its o and z bits and the
 * head's factor r (gatedNormEntry, or gatedNormEntryBf16 in a bf16 track), and r one of the head's
 * sum of squares. A head recomputes only the entries whose o or z bits moved since they were
 * computed (t.normIn, t.normZ), its sum only when some o moved, and every entry when the sum's
 * bits moved. Appends the entries whose output bits moved to
 * t.normedChanged from `nc` (not on a fresh step: its out_proj call takes no candidates) and
 * returns the new count.
 */
export function gatedNormHead(
  ctx: ExecNumericContext, t: GdnTrack, h: number, core: Float32Array, coreBits: Uint32Array, y: Float32Array, zOff: number,
  nw: Float32Array, normed: Float32Array, nb: Uint32Array, fresh: boolean, full: boolean, eps: number, dv: number, nc: number,
  form: 'mul' | 'div',
): number {
  const { coreChanged, normIn, normZ, normAcc, normR, normKept } = t;
  if (!fresh && !full && coreChanged[h] === 0) return nc;
  const entry = t.bf16 ? gatedNormEntryBf16 : gatedNormEntry;
  const zBits = t.projBits;
  const changedList = t.normedChanged;
  const o0 = h * dv;
  if (!fresh && normKept[h] === 1) {
    // (a step whose projections were recomputed in full may have moved any z)
    const may = full ? O_MAY_MOVE | Z_MAY_MOVE : coreChanged[h];
    const moved = t.normMoved;
    let m = 0;
    let oMoved = 0;
    if (may === O_MAY_MOVE) {
      for (let j = 0; j < dv; j++) if (coreBits[o0 + j] !== normIn[o0 + j]) moved[m++] = j;
      oMoved = +(m > 0);
    } else if (may === Z_MAY_MOVE) {
      for (let j = 0; j < dv; j++) if (zBits[zOff + o0 + j] !== normZ[o0 + j]) moved[m++] = j;
    } else {
      for (let j = 0; j < dv; j++) {
        const mo = +(coreBits[o0 + j] !== normIn[o0 + j]);
        if ((mo | +(zBits[zOff + o0 + j] !== normZ[o0 + j])) === 0) continue;
        moved[m++] = j;
        oMoved |= mo;
      }
    }
    if (m === 0) return nc;
    // the same o bits give the same sum; a NaN sum never compares equal (the head is redone)
    const acc = oMoved === 0 ? normAcc[h] : gatedNormSquares(core, o0, dv);
    if (acc === normAcc[h]) {
      const rr = normR[h];
      for (let i = 0; i < m; i++) {
        const j = moved[i];
        normIn[o0 + j] = coreBits[o0 + j];
        normZ[o0 + j] = zBits[zOff + o0 + j];
        const before = nb[o0 + j];
        normed[o0 + j] = entry(core[o0 + j], rr, nw[j], y[zOff + o0 + j], form);
        if (nb[o0 + j] !== before) changedList[nc++] = o0 + j;
      }
      return nc;
    }
  }
  // every entry
  const acc = gatedNormSquares(core, o0, dv);
  const rr = gatedNormFactor(ctx, acc, dv, eps);
  normAcc[h] = acc;
  normR[h] = rr;
  normKept[h] = 1;
  for (let j = 0; j < dv; j++) {
    normIn[o0 + j] = coreBits[o0 + j];
    normZ[o0 + j] = zBits[zOff + o0 + j];
    const before = nb[o0 + j];
    normed[o0 + j] = entry(core[o0 + j], rr, nw[j], y[zOff + o0 + j], form);
    if (!fresh && nb[o0 + j] !== before) changedList[nc++] = o0 + j;
  }
  return nc;
}

/**
 * gatedNormHead over every head of a track, not fresh, in wasm (wasm-gdn-kernels.ts gatedNorm;
 * gatedNormBf16 in the bf16 profile): the same scans, sums, factors, entries and list, over the
 * kernel's arrays; a head with a NaN output is left to gatedNormHead (its NaN bits are the
 * reference's) and the kernel goes on after it. Returns the changed count.
 */
export function gatedNormWasm(
  ctx: ExecNumericContext, t: GdnTrack, nk: NormKernel, w: GdnWeights, y: Float32Array, yAt: number, zOff: number, full: boolean,
  eps: number, d: GdnDims, buf: GdnBuffers, form: 'mul' | 'div',
): number {
  const { ctl, ctlF, heap } = nk;
  if (nk.nwSrc !== w.norm) { nk.nw.set(w.norm); nk.nwSrc = w.norm; }
  ctl[NORM_CTL.zAt] = yAt + 4 * zOff;
  ctl[NORM_CTL.full] = full ? 1 : 0;
  ctl[NORM_CTL.form] = form === 'mul' ? 0 : 1;
  ctl[NORM_CTL.meanDiv] = ctx.meanMode === 'div' ? 1 : 0;
  ctlF[NORM_CTL.invN] = 1 / d.dv;
  ctlF[NORM_CTL.eps] = eps;
  ctl[NORM_CTL.nc] = 0;
  ctl[NORM_CTL.resume] = 0;
  while (heap.gatedNormAt(nk.ctlAt, t.bf16) === 1) {
    const h = ctl[NORM_CTL.resume];
    ctl[NORM_CTL.nc] = gatedNormHead(ctx, t, h, buf.core, buf.coreBits, y, zOff, nk.nw, buf.normed, buf.normedBits, false, full, eps, d.dv, ctl[NORM_CTL.nc], form);
    ctl[NORM_CTL.resume] = h + 1;
  }
  return ctl[NORM_CTL.nc];
}
