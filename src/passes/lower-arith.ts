/**
 * Pass (part of lowering) — arithmetic to SwiGLU units. Each computed IR node (table, compare,
 * select, logic) becomes one FFN op writing the node's scalar dim:
 * - table, compare, logic: a shared-ramp table over one integer form — the node's inputs combined
 *   into a mixed-radix index Σ stride_i·(x_i − lo_i) (compare: the difference a − b);
 * - select(c, a, b) = b + c·(a − b): a LIN unit and one SWITCH (two when |a − b| may exceed the
 *   slot range).
 * Constants and linear nodes are folded into these forms (lower/context.ts), so they cost nothing.
 */
import type { CompareNode, IrNode, LogicNode, SelectNode, TableNode } from '../ir/types.ts';
import { input, linUnit, rampTable, switchUnit } from '../gadgets/ffn-core.ts';
import { combine, constForm, type FfnUnit, type Form, type VDim } from '../lower/forms.ts';
import type { LowerContext } from '../lower/context.ts';
import { opReads } from '../lower/op-io.ts';
import { SLOT_LIMIT } from '../lower/frame.ts';
import { atNode } from './lower-encodings.ts';

function cmp(op: CompareNode['cmp'], d: number): number {
  switch (op) {
    case 'eq': return d === 0 ? 1 : 0;
    case 'ne': return d !== 0 ? 1 : 0;
    case 'lt': return d < 0 ? 1 : 0;
    case 'le': return d <= 0 ? 1 : 0;
    case 'gt': return d > 0 ? 1 : 0;
    case 'ge': return d >= 0 ? 1 : 0;
  }
}

/** A mixed-radix index over the inputs' ranges (first input slowest), and its span. */
function indexForm(ctx: LowerContext, inputs: number[]): { f: Form; span: number } {
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

function emitFfn(ctx: LowerContext, n: IrNode, units: FfnUnit[], out: VDim, what: string): VDim {
  ctx.addOp({ kind: 'ffn', what, units, reads: opReads(units), writes: [out] });
  return out;
}

function lowerTable(ctx: LowerContext, n: TableNode | LogicNode, values: number[], inputs: number[]): VDim {
  const out = ctx.newDim(n.id, 'scalar', 0, n.range.lo, n.range.hi, n.name);
  const { f, span } = indexForm(ctx, inputs);
  const units = atNode(ctx, n.id, 'the table', () => rampTable(input(f, 0, span - 1), [{ dim: out, values }], n.name));
  return emitFfn(ctx, n, units, out, `${n.op} "${n.name}"`);
}

function lowerCompare(ctx: LowerContext, n: CompareNode): VDim {
  const out = ctx.newDim(n.id, 'scalar', 0, 0, 1, n.name);
  const ra = ctx.resolve(n.a).range;
  const rb = ctx.resolve(n.b).range;
  const lo = ra.lo - rb.hi;
  const hi = ra.hi - rb.lo;
  const d = combine(1, ctx.formOf(n.a), -1, ctx.formOf(n.b));
  const values = Array.from({ length: hi - lo + 1 }, (_, i) => cmp(n.cmp, lo + i));
  const units = atNode(ctx, n.id, `the comparison (${n.cmp})`, () => rampTable(input(d, lo, hi), [{ dim: out, values }], n.name));
  return emitFfn(ctx, n, units, out, `compare "${n.name}"`);
}

function lowerSelect(ctx: LowerContext, n: SelectNode): VDim {
  const out = ctx.newDim(n.id, 'scalar', 0, n.range.lo, n.range.hi, n.name);
  const c = input(ctx.formOf(n.cond), 0, 1);
  const ra = ctx.resolve(n.then).range;
  const rb = ctx.resolve(n.else).range;
  const a = input(ctx.formOf(n.then), ra.lo, ra.hi);
  const b = input(ctx.formOf(n.else), rb.lo, rb.hi);
  const units = atNode(ctx, n.id, 'the select', () => {
    const us = [linUnit(b, [{ dim: out, k: 1 }], n.name)];
    const dlo = ra.lo - rb.hi;
    const dhi = ra.hi - rb.lo;
    if (Math.max(-dlo, dhi) <= SLOT_LIMIT) {
      us.push(switchUnit(c, input(combine(1, a.form, -1, b.form), dlo, dhi), [{ dim: out, k: 1 }], n.name));
    } else {
      us.push(switchUnit(c, a, [{ dim: out, k: 1 }], n.name));
      us.push(switchUnit(c, b, [{ dim: out, k: -1 }], n.name));
    }
    return us;
  });
  return emitFfn(ctx, n, units, out, `select "${n.name}"`);
}

function logicValues(n: LogicNode): number[] {
  if (n.logic === 'not') return [1, 0];
  const f = n.logic === 'and' ? (a: number, b: number) => a & b : n.logic === 'or' ? (a: number, b: number) => a | b : (a: number, b: number) => a ^ b;
  const out: number[] = [];
  for (let a = 0; a <= 1; a++) for (let b = 0; b <= 1; b++) out.push(f(a, b));
  // Inputs are bits but their declared ranges may be narrower ([0,0] or [1,1]); index over the ranges.
  return out;
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
    case 'logic': {
      // Tabulate over the inputs' actual ranges (a bit input may be constant).
      const rs = n.args.map((a) => ctx.resolve(a).range);
      const full = logicValues(n);
      const values: number[] = [];
      const rec = (k: number, idx: number) => {
        if (k === rs.length) {
          values.push(full[idx]!);
          return;
        }
        for (let v = rs[k]!.lo; v <= rs[k]!.hi; v++) rec(k + 1, idx * 2 + v);
      };
      rec(0, 0);
      return lowerTable(ctx, n, values, n.args);
    }
    default:
      throw new Error(`internal: lowerArith on ${n.op}`);
  }
}
