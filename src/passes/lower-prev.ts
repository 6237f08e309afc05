/**
 * Pass (part of lowering) — delay lines (`prev`) to GDN heads. A delay is a one-row RAM written
 * at every position from the *previous* token: its value channels take the causal conv's tap for
 * position t − 1 (vTapOffset 1), while key, query, β and z read the current token. At position 0
 * the conv sees zeros, so the row written is all zeros and the read returns value 0 with valid 0;
 * from position 1 on it returns the source's value at t − 1. A delay of a delay with the same
 * default reads its source through the tap t − 2 (t − 3 for three; up to the kernel's K − 1): at
 * positions 0 … d − 1 the tap sees zeros (valid 0, the default — which is also what the chained
 * delays give there, as every link has that default). The node's value is then the linear
 * form value + lo·valid + default·(1 − valid) (the source is stored as value − lo), folded into its
 * consumers like any linear node.
 */
import type { PrevNode, RamDecl } from '../ir/types.ts';
import type { ModelConfig } from '../model/config.ts';
import { ChipcError } from '../util/errors.ts';
import { gdnDimsOf, lowerRamToGdn } from '../gadgets/gdn-ram.ts';
import type { LowerContext } from '../lower/context.ts';
import { form, type Form } from '../lower/forms.ts';
import { gdnReads } from '../lower/op-io.ts';
import { bitsOf } from './lower-encodings.ts';

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
  // The dims record their tap in `index` (0 for the one-position tap, as before; else the offset).
  const tapIndex = offset === 1 ? 0 : offset;
  // A synthetic one-row RAM: one write port (the sources, from the previous token) and one read
  // port; its node ids are not used by the gadget, which takes the vdims below.
  const ram: RamDecl = {
    id: -1, name: `${n.name}.delay`, rows: 1, fields: spans.map((sp) => ({ lo: 0, hi: sp - 1 })),
    write: { addr: -1, values: members.map(() => -1), enable: null, loc: n.loc },
    reads: [{ addr: -1, enable: null, results: members.map(() => -1), loc: n.loc }],
    loc: n.loc,
  };
  const values = members.map((m, i) => {
    const d = ctx.newDim(m.id, 'delayed', tapIndex, 0, spans[i]! - 1, `${m.name}.delayed`);
    ctx.dims[d]!.base = srcs[i]!.range.lo;
    return d;
  });
  // One valid flag for the group, recorded under the first member (every member's valid is the same).
  const valid = ctx.newDim(members[0]!.id, 'valid', tapIndex, 0, 1, `${members[0]!.name}.valid`);
  let low;
  try {
    low = lowerRamToGdn(ram, {
      write: { addrBits: [], enable: null, fieldBits: srcs.map((s, i) => bitsOf(ctx, s.id, s.range.lo, Math.max(1, widthOf(spans[i]!)))) },
      reads: [{ addr: { addrBits: [], enable: null }, out: { values, valid } }],
    }, gdnDimsOf(target), { tag: n.name });
  } catch (e) {
    if (e instanceof ChipcError) ctx.fail(n, 'fit.prev', `previous("${srcs[0]!.name}"${members.length > 1 ? `, … ${members.length} signals` : ''}): ${e.message}`);
    throw e;
  }
  for (const h of low.heads) for (const v of h.values) if (v) v.vTapOffset = offset;
  ctx.addOp({ kind: 'gdn', what: `previous "${n.name}"`, heads: low.heads, reads: gdnReads(low.heads), writes: [...values, valid], normWeight: low.normWeight });
  // Each member: value + lo·valid + default·(1 − valid).
  let mine: Form | null = null;
  members.forEach((m, i) => {
    const f = form([{ dim: values[i]!, coef: 1 }, { dim: valid, coef: srcs[i]!.range.lo - m.default }].filter((t) => t.coef !== 0), m.default);
    if (m.id === n.id) mine = f;
    else ctx.presetForm(m.id, f);
  });
  return mine!;
}
