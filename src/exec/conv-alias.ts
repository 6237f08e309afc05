/**
 * Aliased conv blocks of a GDN layer, for the tracked decode step (gdn-tracked.ts). A compiled
 * circuit gives many heads the same q, k or v: a RAM's value heads all carry the word being
 * written (β picks the head that stores it), and a key head's k is often its q. Such a head's
 * block of conv channels repeats another's channel by channel: the same stacked in_proj row (the
 * same entries in the same order, bit for bit) and the same conv weights. A row of x·Wᵀ is a
 * function of its own entries and x alone (matmul.ts, and delta.ts's incremental form keeps each
 * row's own record), so the two channels receive the same input bits at every step, and a
 * channel's window and output are functions of its inputs since the window was last equal — so
 * once two such channels hold the same window, record and output, they hold the same ones at every
 * later step.
 *
 * The tracked step therefore runs only the first block of each set (its *representative*) once a
 * track has checked, at the step ExecTuning.aliasConvBlocks names, that every later block holds
 * what its representative holds (`aliasesOfTrack`). An aliased block's channels are never
 * activated again (their records keep the active flag, outside the active list), the heads that
 * read it read its representative's outputs (`TrackAlias.src`), its dirty marks and v bound count
 * follow the representative's (`followAliases`), and its windows are copied from the
 * representative's before anything else reads the conv state (`copyAliasWindows`, after the lazy
 * channels' catch-up). With every repeating block aliased, the step walks the stacked in_proj
 * without their rows (`reducedStackOf`).
 *
 * Blocks: the key blocks are the 2·hk blocks of dk channels from channel 0 (q heads, then k heads),
 * so a k head may repeat a q head; the value blocks are the hv blocks of dv channels from 2·key_dim.
 */
import type { CsrMatrix, Matrix } from '../model/weights.ts';
import type { GdnDims } from '../model/naming.ts';
import type { ConvAlias, ExecPlans } from './plans.ts';
import { CH_ACTIVE, type TrackAlias } from './gdn-cache.ts';

export type { TrackAlias } from './gdn-cache.ts';

export type { ConvAlias } from './plans.ts';

/**
 * The stacked in_proj `stack` with the rows of every aliased block of `alias` emptied (the same rows
 * and offsets; kept in plans.convAliasStacks): what a track whose aliases are complete walks. Its
 * other rows are the stack's, entry for entry, so they give the same bits (matmul.ts: a row of
 * x·Wᵀ is a function of its own entries); the emptied rows' outputs (+0) are read by nothing — their
 * channels are never activated, and their heads read the representatives'.
 */
export function reducedStackOf(plans: ExecPlans, stack: Matrix, alias: ConvAlias): Matrix {
  let r = plans.convAliasStacks.get(stack);
  if (r === undefined || r.alias !== alias) {
    r = { alias, m: withoutAliasedRows(stack, alias) };
    plans.convAliasStacks.set(stack, r);
  }
  return r.m;
}

function withoutAliasedRows(stack: Matrix, alias: ConvAlias): Matrix {
  const csr = stack.csr as CsrMatrix;
  const { dk, dv, keyDim } = alias.dims;
  const dead = new Uint8Array(stack.rows);
  alias.keyRep.forEach((r, b) => { if (r >= 0) dead.fill(1, b * dk, (b + 1) * dk); });
  alias.valueRep.forEach((r, h) => { if (r >= 0) dead.fill(1, 2 * keyDim + h * dv, 2 * keyDim + (h + 1) * dv); });
  const rowPtr = new Uint32Array(stack.rows + 1);
  let n = 0;
  for (let r = 0; r < stack.rows; r++) { if (dead[r] === 0) n += csr.rowPtr[r + 1]! - csr.rowPtr[r]!; rowPtr[r + 1] = n; }
  const colIdx = new Uint32Array(n);
  const values = new Float32Array(n);
  // (the values copied as bit patterns: a NaN weight keeps its payload)
  const from = new Uint32Array(csr.values.buffer, csr.values.byteOffset, csr.values.length);
  const to = new Uint32Array(values.buffer);
  for (let r = 0; r < stack.rows; r++) {
    if (dead[r] !== 0) continue;
    for (let e = csr.rowPtr[r]!, k = rowPtr[r]!; e < csr.rowPtr[r + 1]!; e++, k++) { colIdx[k] = csr.colIdx[e]!; to[k] = from[e]!; }
  }
  return { rows: stack.rows, cols: stack.cols, csr: { rowPtr, colIdx, values } };
}

/** convAlias of the stacked in_proj `stack` (rows 0 … convDim − 1: qkv) and conv weight `cw`; kept in plans.convAlias. */
export function convAliasOf(plans: ExecPlans, stack: Matrix, cw: Float32Array, d: GdnDims): ConvAlias {
  let a = plans.convAlias.get(stack);
  if (a === undefined || a.cw !== cw) {
    a = convAlias(stack.csr as CsrMatrix, cw, d);
    plans.convAlias.set(stack, a);
  }
  return a;
}

/** The blocks that repeat an earlier one (module comment), from the CSR rows and the conv weights' bits. */
export function convAlias(csr: CsrMatrix, cw: Float32Array, d: GdnDims): ConvAlias {
  const { K, hk, hv, dk, dv, keyDim } = d;
  const valBits = new Uint32Array(csr.values.buffer, csr.values.byteOffset, csr.values.length);
  const cwBits = new Uint32Array(cw.buffer, cw.byteOffset, cw.length);
  const rowHash = (c: number): number => {
    let h = 0x811c9dc5 ^ (csr.rowPtr[c + 1]! - csr.rowPtr[c]!);
    for (let e = csr.rowPtr[c]!; e < csr.rowPtr[c + 1]!; e++) h = Math.imul(Math.imul(h ^ csr.colIdx[e]!, 0x01000193) ^ valBits[e]!, 0x01000193);
    for (let j = 0; j < K; j++) h = Math.imul(h ^ cwBits[c * K + j]!, 0x01000193);
    return h >>> 0;
  };
  const rowsEqual = (a: number, b: number): boolean => {
    const a0 = csr.rowPtr[a]!, b0 = csr.rowPtr[b]!, n = csr.rowPtr[a + 1]! - a0;
    if (csr.rowPtr[b + 1]! - b0 !== n) return false;
    for (let e = 0; e < n; e++) if (csr.colIdx[a0 + e] !== csr.colIdx[b0 + e] || valBits[a0 + e] !== valBits[b0 + e]) return false;
    for (let j = 0; j < K; j++) if (cwBits[a * K + j] !== cwBits[b * K + j]) return false;
    return true;
  };
  let count = 0;
  const repsOf = (blocks: number, width: number, first: number): Int32Array => {
    const rep = new Int32Array(blocks).fill(-1);
    const byHash = new Map<number, number[]>();
    for (let b = 0; b < blocks; b++) {
      let h = 0;
      for (let j = 0; j < width; j++) h = Math.imul(h ^ rowHash(first + b * width + j), 0x01000193) >>> 0;
      const seen = byHash.get(h);
      const r = seen?.find((s) => {
        for (let j = 0; j < width; j++) if (!rowsEqual(first + s * width + j, first + b * width + j)) return false;
        return true;
      });
      if (r !== undefined) { rep[b] = r; count++; } else if (seen !== undefined) seen.push(b); else byHash.set(h, [b]);
    }
    return rep;
  };
  const keyRep = repsOf(2 * hk, dk, 0);
  const valueRep = repsOf(hv, dv, 2 * keyDim);
  return { cw, keyRep, valueRep, count, dims: d };
}

/**
 * A track's aliases, checked once, at the track's step ExecTuning.aliasConvBlocks names
 * (gdn-tracked.ts setUpAliases): the blocks of `alias` whose every channel holds its
 * representative's window (the K taps' bits), record (chan's four words) and output bits. Their
 * channels are marked active outside the active list (never activated again) and dropped from
 * it (returns the new active count in `out[0]`). Null when no block qualifies.
 */
export function aliasesOfTrack(
  alias: ConvAlias, stack: Matrix, d: GdnDims, convBits: Uint32Array, chan: Int32Array, conBits: Uint32Array, active: Int32Array, nActive: number,
  out: Int32Array,
): TrackAlias | null {
  out[0] = nActive;
  if (alias.count === 0) return null;
  const { K, hk, hv, dk, dv, keyDim } = d;
  const holdsSame = (c: number, r: number): boolean => {
    for (let j = 0; j < K; j++) if (convBits[c * K + j] !== convBits[r * K + j]) return false;
    for (let j = 0; j < 4; j++) if (chan[4 * c + j] !== chan[4 * r + j]) return false;
    return conBits[c] === conBits[r];
  };
  const pick = (rep: Int32Array, blocks: number, width: number, first: number): [number[], number[]] => {
    const bs: number[] = [], rs: number[] = [];
    for (let b = 0; b < blocks; b++) {
      const r = rep[b]!;
      if (r < 0) continue;
      let same = true;
      for (let j = 0; j < width && same; j++) same = holdsSame(first + b * width + j, first + r * width + j);
      if (same) { bs.push(b); rs.push(r); }
    }
    return [bs, rs];
  };
  const [kb, kr] = pick(alias.keyRep, 2 * hk, dk, 0);
  const [vb, vr] = pick(alias.valueRep, hv, dv, 2 * keyDim);
  if (kb.length + vb.length === 0) return null;
  const dead = new Uint8Array(2 * hk + hv);
  for (const b of kb) dead[b] = 1;
  for (const b of vb) dead[2 * hk + b] = 1;
  const blockOf = (c: number) => (c < 2 * keyDim ? Math.floor(c / dk) : 2 * hk + Math.floor((c - 2 * keyDim) / dv));
  for (const b of kb) for (let j = 0; j < dk; j++) chan[4 * (b * dk + j) + 1] |= CH_ACTIVE;
  for (const b of vb) for (let j = 0; j < dv; j++) chan[4 * (2 * keyDim + b * dv + j) + 1] |= CH_ACTIVE;
  let m = 0;
  for (let i = 0; i < nActive; i++) { const c = active[i]!; if (dead[blockOf(c)] === 0) active[m++] = c; }
  out[0] = m;
  const src = Int32Array.from({ length: 2 * hk + hv }, (_, b) => (b < 2 * hk ? b : b - 2 * hk));
  kb.forEach((b, i) => { src[b] = kr[i]!; });
  vb.forEach((b, i) => { src[2 * hk + b] = vr[i]!; });
  return {
    keyBlocks: Int32Array.from(kb), keyReps: Int32Array.from(kr), valueBlocks: Int32Array.from(vb), valueReps: Int32Array.from(vr), src,
    dims: d, complete: kb.length + vb.length === alias.count, stack, walk: null,
  };
}

/**
 * After a tracked conv step: an aliased block's head is dirty when its representative's is (key
 * block b < hk is q head b's, else k head b − hk's), and a value head's count of v entries beyond
 * the β = ±0 bound is its representative's.
 */
export function followAliases(a: TrackAlias, hk: number, qDirty: Uint8Array, kDirty: Uint8Array, vDirty: Uint8Array, vBeyond: Int32Array): void {
  for (let i = 0; i < a.keyBlocks.length; i++) {
    const b = a.keyBlocks[i]!, r = a.keyReps[i]!;
    const moved = r < hk ? qDirty[r]! : kDirty[r - hk]!;
    if (b < hk) qDirty[b]! |= moved; else kDirty[b - hk]! |= moved;
  }
  for (let i = 0; i < a.valueBlocks.length; i++) {
    const h = a.valueBlocks[i]!, r = a.valueReps[i]!;
    vDirty[h]! |= vDirty[r]!;
    vBeyond[h] = vBeyond[r]!;
  }
}

/**
 * The aliased blocks' windows in `conv` (channel-major, K taps a channel) set to their
 * representatives': what they would hold had they run (the representatives' lazy channels must be
 * caught up first).
 */
export function copyAliasWindows(a: TrackAlias, conv: Float32Array): void {
  const { K, dk, dv, keyDim } = a.dims;
  for (let i = 0; i < a.keyBlocks.length; i++) conv.copyWithin(a.keyBlocks[i]! * dk * K, a.keyReps[i]! * dk * K, (a.keyReps[i]! + 1) * dk * K);
  const v0 = 2 * keyDim;
  for (let i = 0; i < a.valueBlocks.length; i++) {
    conv.copyWithin((v0 + a.valueBlocks[i]! * dv) * K, (v0 + a.valueReps[i]! * dv) * K, (v0 + (a.valueReps[i]! + 1) * dv) * K);
  }
}

/** The aliased blocks' conv outputs in `conved` (one a channel) set to their representatives': what their heads read. */
export function copyAliasOutputs(a: TrackAlias, conved: Float32Array): void {
  const { dk, dv, keyDim } = a.dims;
  for (let i = 0; i < a.keyBlocks.length; i++) conved.copyWithin(a.keyBlocks[i]! * dk, a.keyReps[i]! * dk, (a.keyReps[i]! + 1) * dk);
  const v0 = 2 * keyDim;
  for (let i = 0; i < a.valueBlocks.length; i++) conved.copyWithin(v0 + a.valueBlocks[i]! * dv, v0 + a.valueReps[i]! * dv, v0 + (a.valueReps[i]! + 1) * dv);
}
