/**
 * Pass (part of lowering) — encodings: bits and one-hots of IR signals. Token fields and
 * constants come from the embedding (free); computed signals get them from one shared-ramp table
 * over their scalar form (FFN; gadgets/ffn-core.ts `rampTable`).
 */
import type { NodeId } from '../ir/types.ts';
import { ChipcError } from '../util/errors.ts';
import { input, rampTable } from '../gadgets/ffn-core.ts';
import type { LowerContext } from '../lower/context.ts';
import type { VDim } from '../lower/forms.ts';
import { opReads } from '../lower/op-io.ts';

/** Run a gadget constructor; a gadget's bound violation becomes a circuit error at the node. */
export function atNode<T>(ctx: LowerContext, id: NodeId, what: string, make: () => T): T {
  try {
    return make();
  } catch (e) {
    // Only a gadget's own bound violation is this node's problem; errors raised while building
    // the node's inputs (another node's gadget, a RAM that does not fit) pass through unchanged.
    if (e instanceof ChipcError && e.code.startsWith('ffn.')) {
      const n = ctx.resolve(id);
      ctx.fail(n, 'lower.gadget', `${what} of signal "${n.name}" cannot be built exactly: ${e.message}`);
    }
    throw e;
  }
}

/** Bits of (value − base), LSB first, `width` of them. */
export function bitsOf(ctx: LowerContext, id: NodeId, base: number, width: number): VDim[] {
  const n = ctx.resolve(id);
  return ctx.encoding(`bits:${n.id}:${base}:${width}`, () => {
    const r = n.range;
    if (r.lo - base < 0 || r.hi - base >= 2 ** width) {
      ctx.fail(n, 'lower.bits', `signal "${n.name}" with range [${r.lo}, ${r.hi}] does not fit ${width} bits above ${base}`);
    }
    const bit = (v: number, j: number) => Math.floor((v - base) / 2 ** j) % 2;
    // A 0/1 signal (base 0) is its own bit 0: its scalar dim serves, the higher bits are the
    // constant-0 dim — no second copy in the embedding, no table.
    if (base === 0 && r.lo >= 0 && r.hi <= 1 && n.op !== 'const') {
      return Array.from({ length: width }, (_, j) => (j === 0
        ? ctx.scalarDim(n.id)
        : ctx.encoding('const0', () => [ctx.embedDim(-1, 'scalar', 0, 0, 0, 'zero', () => 0)])[0]!));
    }
    if (n.op === 'token_field' || n.op === 'const') {
      const valueOf = n.op === 'const' ? () => n.value : (t: number) => n.values[t] ?? r.lo;
      const dims = Array.from({ length: width }, (_, j) =>
        ctx.embedDim(n.id, 'bits', j, 0, 1, `${n.name}.bit${j}`, (t) => bit(valueOf(t), j)));
      for (const d of dims) ctx.dims[d]!.base = base;
      return dims;
    }
    // A binary number spelled out of bit signals (Σ 2^k·b_k, each b_k a 0/1 signal): its bits
    // are those signals' own dims — no table needed.
    const binary = binaryTerms(ctx, n.id, base, width);
    if (binary) return binary;
    const dims = Array.from({ length: width }, (_, j) => ctx.newDim(n.id, 'bits', j, 0, 1, `${n.name}.bit${j}`));
    for (const d of dims) ctx.dims[d]!.base = base;
    const span = Array.from({ length: r.hi - r.lo + 1 }, (_, i) => r.lo + i);
    const units = atNode(ctx, n.id, 'the bit decomposition', () =>
      rampTable(input(ctx.formOf(n.id), r.lo, r.hi), dims.map((d, j) => ({ dim: d, values: span.map((v) => bit(v, j)) })), `${n.name}.bits`));
    ctx.addOp({ kind: 'ffn', what: `bits of "${n.name}"`, units, reads: opReads(units), writes: dims });
    return dims;
  });
}

/**
 * If node `id` is a linear node Σ 2^k·b_k + base with distinct powers k < width over 0/1 signals,
 * the dims of those signals in bit order (a missing power is a constant-0 dim); else null.
 */
function binaryTerms(ctx: LowerContext, id: NodeId, base: number, width: number): VDim[] | null {
  const n = ctx.resolve(id);
  if (n.op !== 'linear' || n.bias !== base) return null;
  const byPower = new Map<number, NodeId>();
  for (const t of n.terms) {
    const k = Math.log2(t.coef);
    const r = ctx.resolve(t.node).range;
    if (!Number.isInteger(k) || k < 0 || k >= width || byPower.has(k) || r.lo < 0 || r.hi > 1) return null;
    byPower.set(k, t.node);
  }
  return Array.from({ length: width }, (_, k) => {
    const src = byPower.get(k);
    if (src !== undefined) return ctx.scalarDim(src);
    return ctx.encoding('const0', () => [ctx.embedDim(-1, 'scalar', 0, 0, 0, 'zero', () => 0)])[0]!;
  });
}

/** One-hot of the value: dim j is [value = lo + j]. */
export function oneHotOf(ctx: LowerContext, id: NodeId): VDim[] {
  const n = ctx.resolve(id);
  return ctx.encoding(`onehot:${n.id}`, () => {
    const r = n.range;
    const count = r.hi - r.lo + 1;
    if (count > 4096) ctx.fail(n, 'lower.onehot', `signal "${n.name}" has ${count} values; a one-hot encoding is limited to 4,096`);
    if (n.op === 'token_field' || n.op === 'const') {
      const valueOf = n.op === 'const' ? () => n.value : (t: number) => n.values[t] ?? r.lo;
      return Array.from({ length: count }, (_, j) =>
        ctx.embedDim(n.id, 'onehot', j, 0, 1, `${n.name}=${r.lo + j}`, (t) => (valueOf(t) === r.lo + j ? 1 : 0)));
    }
    const dims = Array.from({ length: count }, (_, j) => ctx.newDim(n.id, 'onehot', j, 0, 1, `${n.name}=${r.lo + j}`));
    const units = atNode(ctx, n.id, 'the one-hot decode', () =>
      rampTable(input(ctx.formOf(n.id), r.lo, r.hi), dims.map((d, j) => ({ dim: d, values: Array.from({ length: count }, (_, i) => (i === j ? 1 : 0)) })), `${n.name}.onehot`));
    ctx.addOp({ kind: 'ffn', what: `one-hot of "${n.name}"`, units, reads: opReads(units), writes: dims });
    return dims;
  });
}
