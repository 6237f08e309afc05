/**
 * Pass (part of lowering) — arithmetic to SwiGLU units. Each computed IR node (table, compare,
 * select, logic) becomes one FFN op writing the node's scalar dim:
 * - table: a shared-ramp table over the inputs combined into one mixed-radix index
 *   Σ stride_i·(x_i − lo_i);
 * - compare: a step/equality table of the difference a − b; select: a two-switch mux; and, or,
 *   xor, not: one or two units (gadgets/ffn.ts).
 * Constants and linear nodes are folded into these forms (lower/context.ts), so they cost nothing.
 */
import type { CompareNode, IrNode, LogicNode, SelectNode, TableNode } from '../ir/types.ts';
import { input, MAX_DOMAIN, rampTable, type IntInput } from '../gadgets/ffn-core.ts';
import { ChipcError } from '../util/errors.ts';
import { and, compare, mux, not, or, xor } from '../gadgets/ffn.ts';
import { combine, constForm, type FfnUnit, type Form, type VDim } from '../lower/forms.ts';
import type { LowerContext } from '../lower/context.ts';
import { opReads } from '../lower/op-io.ts';
import { atNode } from './lower-encodings.ts';

/** A mixed-radix index over the inputs' ranges (first input slowest), and its span. */
export function indexForm(ctx: LowerContext, inputs: number[]): { f: Form; span: number } {
  let f = constForm(0);
  let span = 1;
  for (let i = inputs.length - 1; i >= 0; i--) {
    const r = ctx.resolve(inputs[i]!).range;
    f = combine(1, f, span, combine(1, ctx.formOf(inputs[i]!), 0, constForm(0)));
    f.constant -= span * r.lo;
    span *= r.hi - r.lo + 1;
  }
  return { f, span };
}

/** Candidate input orders of a table index (as permutations of 0…k−1, identity first). */
function candidateOrders(k: number): number[][] {
  const id = Array.from({ length: k }, (_, i) => i);
  if (k <= 1) return [id];
  const out: number[][] = [];
  const seen = new Set<string>();
  const add = (p: number[]) => {
    const key = p.join(',');
    if (!seen.has(key)) { seen.add(key); out.push(p); }
  };
  if (k <= 4) {
    const perm = (pre: number[], rest: number[]): void => {
      if (rest.length === 0) { add(pre); return; }
      rest.forEach((r, i) => perm([...pre, r], [...rest.slice(0, i), ...rest.slice(i + 1)]));
    };
    perm([], id);
    return out;
  }
  add(id);
  add([...id].reverse());
  for (let i = 0; i < k; i++) {
    const rest = id.filter((j) => j !== i);
    add([...rest, i]); // input i fastest
    add([i, ...rest]); // input i slowest
  }
  return out;
}

/**
 * A table's index in the input order that needs the fewest units. The ramp engine pays one unit
 * per point where the values bend along the mixed-radix index, so the order matters: a table
 * f(opcode, b) = (opcode is special ? c : b) bends at every step with b fastest (≈ 2·128 units)
 * but only around the special opcode with b slowest (a dozen). Every candidate order (all of
 * them for up to 4 inputs; otherwise the given one, its reverse and each input moved to either
 * end) is lowered with `build`, which gets the index and `at`, the original flat index of each
 * position of the reordered one; the cheapest that meets every gadget bound wins (ties: the
 * earlier candidate, the given order first). When none does, the given order's error is thrown.
 */
export function cheapestTableOrder(
  ctx: LowerContext, inputs: number[], build: (x: IntInput, at: Int32Array) => FfnUnit[],
): { x: IntInput; at: Int32Array; units: FfnUnit[] } {
  const spans = inputs.map((id) => { const r = ctx.resolve(id).range; return r.hi - r.lo + 1; });
  const total = spans.reduce((a, b) => a * b, 1);
  // the original strides: first input slowest
  const stride = new Array<number>(inputs.length);
  for (let i = inputs.length - 1, s = 1; i >= 0; i--) { stride[i] = s; s *= spans[i]!; }
  let best: { x: IntInput; at: Int32Array; units: FfnUnit[] } | null = null;
  let firstError: unknown = null;
  // beyond the ramp engine's domain only the given order is tried (its error is the one to report)
  const orders = total > MAX_DOMAIN ? [inputs.map((_, i) => i)] : candidateOrders(inputs.length);
  for (const order of orders) {
    const { f, span } = indexForm(ctx, order.map((i) => inputs[i]!));
    const at = new Int32Array(span);
    for (let j = 0; j < span; j++) {
      let rest = j;
      let orig = 0;
      for (let q = order.length - 1; q >= 0; q--) {
        const i = order[q]!;
        orig += (rest % spans[i]!) * stride[i]!;
        rest = Math.floor(rest / spans[i]!);
      }
      at[j] = orig;
    }
    const x = input(f, 0, span - 1);
    try {
      const units = build(x, at);
      if (best === null || units.length < best.units.length) best = { x, at, units };
    } catch (e) {
      if (!(e instanceof ChipcError && e.code.startsWith('ffn.'))) throw e;
      if (firstError === null) firstError = e;
    }
  }
  if (best === null) throw firstError;
  return best;
}

function emitFfn(ctx: LowerContext, n: IrNode, units: FfnUnit[], out: VDim, what: string): VDim {
  ctx.addOp({ kind: 'ffn', what, units, reads: opReads(units), writes: [out] });
  return out;
}

function lowerTable(ctx: LowerContext, n: TableNode, values: number[], inputs: number[]): VDim {
  const out = ctx.newDim(n.id, 'scalar', 0, n.range.lo, n.range.hi, n.name);
  const outsOver = (at: Int32Array) => [{ dim: out, values: Array.from(at, (i) => values[i]!) }];
  const { x, at, units } = atNode(ctx, n.id, 'the table', () =>
    cheapestTableOrder(ctx, inputs, (ix, pos) => rampTable(ix, outsOver(pos), n.name)));
  const outs = outsOver(at);
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
