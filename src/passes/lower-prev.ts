/**
 * Pass (part of lowering) — delay lines (`prev`) to GDN heads that stay exact when a prompt is
 * prefilled in chunks.
 *
 * The causal conv already sees the previous token: a channel whose tap is at t − d reads the
 * projection of position t − d exactly. What a delay needs is a way out of the GDN layer, and that
 * way is a RAM read. A one-row RAM rewritten at every position (this pass's first form) is exact
 * token by token, but a chunked kernel reads such a row as the sum of every rewrite inside its
 * chunk, and with fused multiply-adds those sums round (docs/numerics.md "Chunked prefill").
 *
 * So a delay is an **idempotent RAM**: the delayed bits are split into slices of DELAY_SLICE_BITS
 * (4) bits, or of log2(dk) where the narrow slices would not fit one layer's key heads; a slice's
 * RAM has one row per value of the slice, and at every position the row *addressed by the slice's value at t − d* is written with that same value and
 * read back (q, k and v all take the conv tap at t − d; β = 1). A row's content is a function of
 * its address alone, so every write after a row's first leaves it bit-identical (its delta is
 * exactly 0): inside any chunk a read sums at most one non-zero delta per column, and the chunked
 * kernel equals the recurrent rule bit for bit in every summation order. At positions before d the
 * conv sees zeros: q = k = 0, nothing is written and the read returns 0 with valid 0.
 *
 * A delay of a delay with the same default reads its source through the tap t − 2 (t − 3 for
 * three; up to the kernel's K − 1). The node's value is the linear form
 * Σ_j 2^j·bit_j + (lo − default)·valid + default (the source stored as value − lo).
 * Cost: one key head per slice (ceil(bits / 4)), where the one-row form took one per group.
 */
import type { PrevNode, RamDecl } from '../ir/types.ts';
import type { ModelConfig } from '../model/config.ts';
import { ChipcError } from '../util/errors.ts';
import { lowerRamToGdn } from '../gadgets/gdn-ram.ts';
import { gdnDims } from '../model/naming.ts';
import type { LowerContext } from '../lower/context.ts';
import { form, type Form } from '../lower/forms.ts';
import { gdnReads } from '../lower/op-io.ts';
import { bitsOf } from './lower-encodings.ts';

/** Bits per delay slice (one key head each; a slice of b bits has 2^b rows). */
export const DELAY_SLICE_BITS = 4;

function widthOf(span: number): number {
  let b = 0;
  while (2 ** b < span) b++;
  return b;
}

export function lowerPrev(ctx: LowerContext, n: PrevNode, target: ModelConfig): Form {
  // Delays made together are lowered as one RAM word (one field per delayed signal).
  const members = n.group === undefined
    ? [n]
    : ctx.ir.nodes.filter((m): m is PrevNode => m.op === 'prev' && m.group === n.group);
  // A delay of a delay (previous(previous(x)), same default) reads x through the conv's tap two
  // positions back instead of waiting for the inner delay's output: one GDN op at the sublayer x
  // allows, not two in a row. Followed while the whole group has the same depth and the tap fits
  // the conv kernel (offsets 1 … K − 1).
  let srcs = members.map((m) => ctx.resolve(m.source));
  let offset = 1;
  for (;;) {
    if (offset + 1 > target.linearConvKernelDim - 1) break;
    const inner = srcs.map((s, i) => (s.op === 'prev' && s.default === members[i]!.default ? s : null));
    if (inner.some((x) => x === null)) break;
    srcs = inner.map((x) => ctx.resolve(x!.source));
    offset++;
  }
  const spans = srcs.map((s) => s.range.hi - s.range.lo + 1);
  // The dims record their tap (VDimInfo.tap) and, for the bits, the bit index.
  const tap = offset;
  const gdn = gdnDims(target);
  // Every delayed bit: (member, bit j, source bit vdim), member-major.
  const all: { m: number; j: number; src: number }[] = [];
  srcs.forEach((s, i) => {
    bitsOf(ctx, s.id, s.range.lo, Math.max(1, widthOf(spans[i]!))).forEach((src, j) => all.push({ m: i, j, src }));
  });
  const bitDims = all.map(({ m, j }) => {
    const mem = members[m]!;
    const d = ctx.newDim(mem.id, 'delayedBit', j, 0, 1, `${mem.name}.delayed.bit${j}`);
    ctx.dims[d]!.base = srcs[m]!.range.lo;
    ctx.dims[d]!.tap = tap;
    return d;
  });
  // One valid flag for the group (from the first slice), recorded under the first member.
  const valid = ctx.newDim(members[0]!.id, 'valid', tap === 1 ? 0 : tap, 0, 1, `${members[0]!.name}.valid`);
  ctx.dims[valid]!.tap = tap;
  // Slices of DELAY_SLICE_BITS (or fewer where dk has fewer rows): when a delayed bit changes, the
  // q and k of every row of its slice change (every row reads every address bit), so narrow slices
  // are less work for incremental decode (2 × 16 channels per changed bit instead of 2 × 128 at
  // dk = 128) for a few more key heads. A group that would need more key heads than a layer has
  // in narrow slices takes the widest slices instead.
  const wideBits = Math.max(1, Math.floor(Math.log2(gdn.dk)));
  const narrowBits = Math.min(DELAY_SLICE_BITS, wideBits);
  const sliceBits = Math.ceil(all.length / narrowBits) <= gdn.hk ? narrowBits : wideBits;
  const heads = [];
  let normWeight = 1;
  for (let a = 0; a < all.length; a += sliceBits) {
    const slice = all.slice(a, a + sliceBits);
    const addr = slice.map((x) => x.src);
    // A synthetic RAM: one row per value of the slice, one 1-bit field per bit; its node ids are
    // not used by the gadget, which takes the vdims below.
    const ram: RamDecl = {
      id: -1, name: `${n.name}.delay${a / sliceBits}`, rows: 2 ** slice.length, fields: slice.map(() => ({ lo: 0, hi: 1 })),
      write: { addr: -1, values: slice.map(() => -1), enable: null, loc: n.loc },
      reads: [{ addr: -1, enable: null, results: slice.map(() => -1), loc: n.loc }],
      loc: n.loc,
    };
    let low;
    try {
      low = lowerRamToGdn(ram, {
        write: { addrBits: addr, enable: null, fieldBits: addr.map((x) => [x]) },
        reads: [{ addr: { addrBits: addr, enable: null }, out: { values: slice.map((_, k) => bitDims[a + k]!), valid: a === 0 ? valid : null } }],
      }, gdn, { tag: `${n.name}.${a / sliceBits}` });
    } catch (e) {
      if (e instanceof ChipcError) ctx.fail(n, 'fit.prev', `previous("${srcs[0]!.name}"${members.length > 1 ? `, … ${members.length} signals` : ''}): ${e.message}`);
      throw e;
    }
    for (const h of low.heads) {
      h.qkTapOffset = offset;
      for (const v of h.values) if (v) v.vTapOffset = offset;
      heads.push(h);
    }
    normWeight = low.normWeight;
  }
  ctx.addOp({ kind: 'gdn', what: `previous "${n.name}"`, heads, reads: gdnReads(heads), writes: [...bitDims, valid], normWeight });
  // Each member: Σ 2^j·bit_j + lo·valid + default·(1 − valid).
  let mine: Form | null = null;
  members.forEach((m, i) => {
    const terms = all.map((x, k) => ({ x, k })).filter(({ x }) => x.m === i).map(({ x, k }) => ({ dim: bitDims[k]!, coef: 2 ** x.j }));
    const f = form([...terms, { dim: valid, coef: srcs[i]!.range.lo - m.default }].filter((t) => t.coef !== 0), m.default);
    if (m.id === n.id) mine = f;
    else ctx.presetForm(m.id, f);
  });
  return mine!;
}
