/**
 * Pass (part of lowering) — arithmetic to SwiGLU units. Each computed IR node (table, compare,
 * select, logic) becomes one FFN op writing the node's scalar dim:
 * - table: a shared-ramp table over the inputs combined into one mixed-radix index
 *   Σ stride_i·(x_i − lo_i); a table over the cases of a choice (`overCases`) straight from its
 *   conditions and values instead (lower-encodings.ts `choiceTable`: one layer, not the selects'
 *   and then its);
 * - compare: a step/equality table of the difference a − b; select: a two-switch mux; and, or,
 *   xor, not: one or two units (gadgets/ffn.ts).
 * Constants and linear nodes are folded into these forms (lower/context.ts), so they cost nothing.
 */
import type { CompareNode, IrNode, LogicNode, SelectNode, TableNode } from '../ir/types.ts';
import { input } from '../gadgets/ffn-core.ts';
import { and, compare, mux, not, or, xor } from '../gadgets/ffn.ts';
import type { FfnUnit, VDim } from '../lower/forms.ts';
import { atNode, type LowerContext } from '../lower/context.ts';
import { opReads } from '../lower/op-io.ts';
import { cheapestTableOrder, valuesAlong } from './table-order.ts';
import { choiceTable, unlessBound } from './lower-encodings.ts';

function emitFfn(ctx: LowerContext, n: IrNode, units: FfnUnit[], out: VDim, what: string): VDim {
  ctx.addOp({ kind: 'ffn', what, units, reads: opReads(units), writes: [out] });
  return out;
}

function lowerTable(ctx: LowerContext, n: TableNode, values: number[], inputs: number[]): VDim {
  const out = ctx.newDim(n.id, 'scalar', 0, n.range.lo, n.range.hi, n.name);
  // A table over the cases of a choice (c.table's overCases): straight from its conditions and values.
  const only = n.overCases === true && inputs.length === 1 ? ctx.resolve(inputs[0]!) : null;
  if (only !== null && only.op === 'linear' && only.choice) {
    const { lo, hi } = only.range;
    const f = (v: number) => (v >= lo && v <= hi ? values[v - lo]! : 0); // outside the range: never chosen
    const units = unlessBound(() => choiceTable(ctx, only.terms.map((t) => t.node), [{ dim: out, f }], n.name));
    if (units) {
      ctx.addOp({ kind: 'ffn', what: `table of choice "${n.name}"`, units, reads: opReads(units), writes: [out] });
      return out;
    }
  }
  const outsOver = (at: Int32Array) => [{ dim: out, values: valuesAlong(values, at) }];
  const { x, units, outs } = atNode(ctx, n.id, 'the table', () => cheapestTableOrder(ctx, inputs, outsOver, n.name));
  ctx.addOp({ kind: 'ffn', what: `${n.op} "${n.name}"`, units, reads: opReads(units), writes: [out], table: { input: x, outs } });
  return out;
}

function lowerCompare(ctx: LowerContext, n: CompareNode): VDim {
  const out = ctx.newDim(n.id, 'scalar', 0, 0, 1, n.name);
  const ra = ctx.resolve(n.a).range;
  const rb = ctx.resolve(n.b).range;
  const units = atNode(ctx, n.id, `the comparison (${n.cmp})`, () =>
    compare(out, input(ctx.formOf(n.a), ra.lo, ra.hi), input(ctx.formOf(n.b), rb.lo, rb.hi), n.cmp));
  return emitFfn(ctx, n, units, out, `compare "${n.name}"`);
}

function lowerSelect(ctx: LowerContext, n: SelectNode): VDim {
  const out = ctx.newDim(n.id, 'scalar', 0, n.range.lo, n.range.hi, n.name);
  const ra = ctx.resolve(n.then).range;
  const rb = ctx.resolve(n.else).range;
  const units = atNode(ctx, n.id, 'the select', () =>
    mux(out, input(ctx.formOf(n.cond), 0, 1), input(ctx.formOf(n.then), ra.lo, ra.hi), input(ctx.formOf(n.else), rb.lo, rb.hi)));
  return emitFfn(ctx, n, units, out, `select "${n.name}"`);
}

function lowerLogic(ctx: LowerContext, n: LogicNode): VDim {
  const out = ctx.newDim(n.id, 'scalar', 0, n.range.lo, n.range.hi, n.name);
  const bits = n.args.map((a) => {
    const r = ctx.resolve(a).range;
    return input(ctx.formOf(a), r.lo, r.hi);
  });
  const units = atNode(ctx, n.id, `the ${n.logic}`, () => {
    switch (n.logic) {
      case 'and': return and(out, bits[0]!, bits[1]!);
      case 'or': return or(out, bits[0]!, bits[1]!);
      case 'xor': return xor(out, bits[0]!, bits[1]!);
      case 'not': return not(out, bits[0]!);
    }
  });
  return emitFfn(ctx, n, units, out, `${n.logic} "${n.name}"`);
}

/** Produce the scalar dim of a computed arithmetic node. */
export function lowerArith(ctx: LowerContext, n: IrNode): VDim {
  switch (n.op) {
    case 'table':
      return lowerTable(ctx, n, n.values, n.inputs);
    case 'compare':
      return lowerCompare(ctx, n);
    case 'select':
      return lowerSelect(ctx, n);
    case 'logic':
      return lowerLogic(ctx, n);
    default:
      throw new Error(`internal: lowerArith on ${n.op}`);
  }
}
