/**
 * Pass (part of lowering) — delay lines (`prev`) to GDN heads. A delay is a one-row RAM written
 * at every position from the *previous* token: its value channels take the causal conv's tap for
 * position t − 1 (vTapOffset 1), while key, query, β and z read the current token. At position 0
 * the conv sees zeros, so the row written is all zeros and the read returns value 0 with valid 0;
 * from position 1 on it returns the source's value at t − 1. The node's value is then the linear
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
  const src = ctx.resolve(n.source);
  const r = src.range;
  const span = r.hi - r.lo + 1;
  // A synthetic one-row RAM: one write port (the source, from the previous token) and one read
  // port; its node ids are not used by the gadget, which takes the vdims below.
  const ram: RamDecl = {
    id: -1, name: `${n.name}.delay`, rows: 1, fields: [{ lo: 0, hi: span - 1 }],
    write: { addr: -1, values: [-1], enable: null, loc: n.loc },
    reads: [{ addr: -1, enable: null, results: [-1], loc: n.loc }],
    loc: n.loc,
  };
  const value = ctx.newDim(n.id, 'delayed', 0, 0, span - 1, `${n.name}.delayed`);
  ctx.dims[value]!.base = r.lo;
  const valid = ctx.newDim(n.id, 'valid', 0, 0, 1, `${n.name}.valid`);
  let low;
  try {
    low = lowerRamToGdn(ram, {
      write: { addrBits: [], enable: null, fieldBits: [bitsOf(ctx, src.id, r.lo, Math.max(1, widthOf(span)))] },
      reads: [{ addr: { addrBits: [], enable: null }, out: { values: [value], valid } }],
    }, gdnDimsOf(target), { tag: n.name });
  } catch (e) {
    if (e instanceof ChipcError) ctx.fail(n, 'fit.prev', `previous("${src.name}"): ${e.message}`);
    throw e;
  }
  for (const h of low.heads) for (const v of h.values) if (v) v.vTapOffset = 1;
  ctx.addOp({ kind: 'gdn', what: `previous "${n.name}"`, heads: low.heads, reads: gdnReads(low.heads), writes: [value, valid], normWeight: low.normWeight });
  // value + lo·valid + default·(1 − valid)
  return form([{ dim: value, coef: 1 }, { dim: valid, coef: r.lo - n.default }].filter((t) => t.coef !== 0), n.default);
}
