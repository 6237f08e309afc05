/**
 * Pass (part of lowering) — lookups to hard-attention heads (gadgets/attn-lookup.ts). One
 * attention op per lookup: one kv head and one of its query heads. Its inputs are the bits of the
 * key and of the query (over a common base, so equal values give equal bits), the stamp's bits,
 * the publish flag (forced to 0 at BOS, which is the no-match sink), an is-BOS flag from the
 * embedding and the value signals; its outputs are the result values and the hit flag. The
 * values at BOS (needed to turn BOS's value row into the defaults) are those the interpreter
 * computes at position 0, which depend on the BOS token alone. Every lookup layer uses the same
 * q_norm / k_norm scales (they are shared by all heads of a layer).
 */
import type { LookupDecl, NodeId } from '../ir/types.ts';
import type { ModelConfig } from '../model/config.ts';
import { ChipcError } from '../util/errors.ts';
import { attnDimsOf, lowerLookupToAttention, type LookupNormScales } from '../gadgets/attn-lookup.ts';
import { and, not } from '../gadgets/ffn.ts';
import { input } from '../gadgets/ffn-core.ts';
import { Interpreter } from '../ir/interpret.ts';
import type { LowerContext } from '../lower/context.ts';
import type { VDim } from '../lower/forms.ts';
import { attnReads, opReads } from '../lower/op-io.ts';
import { bitsOf } from './lower-encodings.ts';

/** The (1 + w) scales of every lookup layer: large enough for every lookup shape the gadget takes. */
export const LOOKUP_SCALES: LookupNormScales = { q: 256, k: 2 ** 24 };

function widthOf(span: number): number {
  let b = 0;
  while (2 ** b < span) b++;
  return b;
}

/** The is-BOS flag: 1 for the BOS token (which only starts a sequence), from the embedding. */
function isBosDim(ctx: LowerContext): VDim {
  const bos = ctx.ir.bos!;
  return ctx.encoding('isBos', () => [ctx.embedDim(-1, 'scalar', 0, 0, 1, 'isBos', (t) => (t === bos ? 1 : 0))])[0]!;
}

/** publish ∧ ¬isBos as a dim: from the embedding for token fields, else one FFN op. */
function publishDim(ctx: LowerContext, lk: LookupDecl, bos: VDim): VDim | null {
  if (lk.publish === null) return null;
  const n = ctx.resolve(lk.publish);
  const bosTok = ctx.ir.bos!;
  if (n.op === 'token_field' || n.op === 'const') {
    const val = n.op === 'const' ? () => n.value : (t: number) => n.values[t] ?? 0;
    return ctx.encoding(`publish:${n.id}`, () => [ctx.embedDim(n.id, 'scalar', 0, 0, 1, `${n.name}∧¬bos`, (t) => (t === bosTok ? 0 : val(t)))])[0]!;
  }
  return ctx.encoding(`publish:${n.id}`, () => {
    const notBos = ctx.newDim(-1, 'scalar', 0, 0, 1, '¬isBos');
    const u1 = not(notBos, bos);
    ctx.addOp({ kind: 'ffn', what: '¬isBos', units: u1, reads: opReads(u1), writes: [notBos] });
    const d = ctx.newDim(n.id, 'scalar', 0, 0, 1, `${n.name}∧¬bos`);
    const u2 = and(d, input(ctx.formOf(n.id), 0, 1), notBos);
    ctx.addOp({ kind: 'ffn', what: `publish of "${lk.name}"`, units: u2, reads: opReads(u2), writes: [d] });
    return [d];
  })[0]!;
}

/** Bits of a tuple of signals, each over the common range of the key and query component. */
function tupleBits(ctx: LowerContext, ids: NodeId[], bases: number[], widths: number[]): VDim[] {
  return ids.flatMap((id, i) => bitsOf(ctx, id, bases[i]!, widths[i]!));
}

export function lowerLookup(ctx: LowerContext, lk: LookupDecl, target: ModelConfig): void {
  const bos = isBosDim(ctx);
  const bases: number[] = [];
  const widths: number[] = [];
  lk.key.forEach((k, i) => {
    const rk = ctx.resolve(k).range;
    const rq = ctx.resolve(lk.query[i]!).range;
    const lo = Math.min(rk.lo, rq.lo);
    bases.push(lo);
    widths.push(Math.max(1, widthOf(Math.max(rk.hi, rq.hi) - lo + 1)));
  });
  const stampBits = lk.stamp === null ? [] : (() => {
    const r = ctx.resolve(lk.stamp).range;
    return bitsOf(ctx, lk.stamp, r.lo, Math.max(1, widthOf(r.hi - r.lo + 1)));
  })();
  const values = lk.value.map((v) => ctx.scalarDim(v));
  // Values at BOS: position 0 depends on the BOS token alone.
  const atBos = new Interpreter(ctx.ir).step(ctx.ir.bos!).values;
  const outValues = lk.results.map((rid) => {
    const n = ctx.node(rid);
    const d = ctx.newDim(rid, 'scalar', 0, n.range.lo, n.range.hi, n.name);
    ctx.setScalarDim(rid, d);
    return d;
  });
  const hitNode = ctx.node(lk.hit);
  const hit = ctx.newDim(lk.hit, 'scalar', 0, 0, 1, hitNode.name);
  ctx.setScalarDim(lk.hit, hit);
  let low;
  try {
    low = lowerLookupToAttention(
      {
        keyBits: tupleBits(ctx, lk.key, bases, widths),
        queryBits: tupleBits(ctx, lk.query, bases, widths),
        stampBits,
        publish: publishDim(ctx, lk, bos),
        isBos: bos,
        values,
      },
      { values: outValues, hit },
      attnDimsOf(target),
      { defaults: lk.defaults, valueAtBos: lk.value.map((v) => atBos[ctx.resolve(v).id]!), scales: LOOKUP_SCALES, tag: lk.name },
    );
  } catch (e) {
    if (e instanceof ChipcError) ctx.fail(lk, e.code.startsWith('fit.') ? e.code : 'fit.lookup', `lookup "${lk.name}": ${e.message}`);
    throw e;
  }
  ctx.addOp({
    kind: 'attn', what: `lookup "${lk.name}"`, heads: [low.kv], reads: attnReads([low.kv]), writes: [...outValues, hit],
    qNormWeight: low.norms.qNormWeight, kNormWeight: low.norms.kNormWeight,
  });
}
