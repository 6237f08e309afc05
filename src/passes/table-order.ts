/**
 * The input order of a table's mixed-radix index (part of lowering, no pass of its own): the
 * index form over the inputs and the search for the order that needs the fewest ramp units.
 * Shared by lower-arith.ts (tables) and lower-encodings.ts (a table's own one-hot columns).
 */
import { ChipcError } from '../util/errors.ts';
import { buildRampTable, input, MAX_DOMAIN, planRampTable, rampTable, rampUnitsLowerBound, type IntInput, type RampPlan } from '../gadgets/ffn-core.ts';
import { combine, constForm, type FfnUnit, type Form, type RampOutput } from '../lower/forms.ts';
import type { LowerContext } from '../lower/context.ts';

/** A table input as the index reads it: its form (terms merged and sorted) and range. */
interface IndexInput { form: Form; lo: number; hi: number }

/**
 * The table's inputs as the index reads them (resolved once per table, not once per order tried).
 * Last input first: asking for a form may lower its node, and lowering numbers dims and ops in
 * the order it meets them, so the inputs are asked in the order the given order's index asks.
 */
function indexInputs(ctx: LowerContext, inputs: number[]): IndexInput[] {
  const parts = new Array<IndexInput>(inputs.length);
  for (let i = inputs.length - 1; i >= 0; i--) {
    const r = ctx.resolve(inputs[i]!).range;
    parts[i] = { form: combine(1, ctx.formOf(inputs[i]!), 0, constForm(0)), lo: r.lo, hi: r.hi };
  }
  return parts;
}

/** `values` along an order's index: position k holds values[at[k]] (a plain array, as RampOutput takes). */
export function valuesAlong(values: ArrayLike<number>, at: Int32Array): number[] {
  const out: number[] = [];
  for (let k = 0; k < at.length; k++) out.push(values[at[k]!]!);
  return out;
}

/** A mixed-radix index over the inputs' ranges (first input slowest), and its span. */
function indexForm(parts: readonly IndexInput[]): { f: Form; span: number } {
  let f = constForm(0);
  let span = 1;
  for (let i = parts.length - 1; i >= 0; i--) {
    const p = parts[i]!;
    f = combine(1, f, span, p.form);
    f.constant -= span * p.lo;
    span *= p.hi - p.lo + 1;
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
 * end) is a ramp table (gadgets/ffn-core.ts rampTable) over `outsOf(at)`, the outputs' values along
 * the reordered index (`at`: the original flat index of each of its positions); the cheapest that
 * meets every gadget bound wins (ties: the earlier candidate, the given order first). When none
 * does, the given order's error is thrown.
 *
 * The orders are compared by their unit counts (planRampTable's cost, no units made), an order
 * whose lower bound (rampUnitsLowerBound) reaches the best count so far skipped unplanned, and only
 * the winner's units are built. Should a unit of the winner fail its own bound (a failure the plan
 * cannot see), every order is built as well, and the result is theirs
 * (cheapestTableOrderByBuilding): the same as when each order is built, always.
 */
export function cheapestTableOrder(
  ctx: LowerContext, inputs: number[], outsOf: (at: Int32Array) => RampOutput[], tag: string,
): { x: IntInput; at: Int32Array; units: FfnUnit[]; outs: RampOutput[] } {
  const parts = indexInputs(ctx, inputs);
  const orders = tableOrders(parts);
  let best: { x: IntInput; at: Int32Array; outs: RampOutput[]; plan: RampPlan } | null = null;
  for (const order of orders) {
    const { x, at } = orderIndex(parts, order);
    const outs = outsOf(at);
    // An order whose units cannot be fewer than the best one's is not planned (it could not win).
    if (best !== null && rampUnitsLowerBound(outs) >= best.plan.cost) continue;
    let plan: RampPlan;
    try {
      plan = planRampTable(x, outs, tag);
    } catch (e) {
      if (!(e instanceof ChipcError && e.code.startsWith('ffn.'))) throw e;
      continue;
    }
    if (best === null || plan.cost < best.plan.cost) best = { x, at, outs, plan };
  }
  if (best !== null) {
    try {
      return { x: best.x, at: best.at, outs: best.outs, units: buildRampTable(best.x, best.plan, tag) };
    } catch (e) {
      if (!(e instanceof ChipcError && e.code.startsWith('ffn.'))) throw e;
    }
  }
  return cheapestTableOrderByBuilding(ctx, inputs, outsOf, tag);
}

/** The candidate orders of a table over `inputs` (beyond the ramp engine's domain only the given one: its error is the one to report). */
function tableOrders(parts: readonly IndexInput[]): number[][] {
  const total = parts.reduce((a, p) => a * (p.hi - p.lo + 1), 1);
  return total > MAX_DOMAIN ? [parts.map((_, i) => i)] : candidateOrders(parts.length);
}

/** The index of `order` (a permutation of the inputs) as a ramp input, and each of its positions' original flat index. */
function orderIndex(parts: readonly IndexInput[], order: number[]): { x: IntInput; at: Int32Array } {
  const spans = parts.map((p) => p.hi - p.lo + 1);
  // the original strides: first input slowest
  const stride = new Array<number>(parts.length);
  for (let i = parts.length - 1, s = 1; i >= 0; i--) { stride[i] = s; s *= spans[i]!; }
  const { f, span } = indexForm(order.map((i) => parts[i]!));
  // at[j]: j's digits in the reordered radix (order's last input fastest) weighed by the original
  // strides, counted up digit by digit (no division per position: spans reach MAX_DOMAIN)
  const at = new Int32Array(span);
  const digit = new Int32Array(order.length);
  let orig = 0;
  for (let j = 0; j < span; j++) {
    at[j] = orig;
    for (let q = order.length - 1; q >= 0; q--) {
      const i = order[q]!;
      if (++digit[q]! < spans[i]!) { orig += stride[i]!; break; }
      orig -= (spans[i]! - 1) * stride[i]!;
      digit[q] = 0;
    }
  }
  return { x: input(f, 0, span - 1), at };
}

/**
 * The cheapest order by building every one (each order's ramp table in full, no order skipped):
 * the definition cheapestTableOrder computes faster (exported for its tests). When no order
 * builds, the first order's error (in candidate order) is thrown.
 */
export function cheapestTableOrderByBuilding(
  ctx: LowerContext, inputs: number[], outsOf: (at: Int32Array) => RampOutput[], tag: string,
): { x: IntInput; at: Int32Array; units: FfnUnit[]; outs: RampOutput[] } {
  const parts = indexInputs(ctx, inputs);
  const orders = tableOrders(parts);
  let best: { x: IntInput; at: Int32Array; units: FfnUnit[]; outs: RampOutput[] } | null = null;
  let firstError: unknown = null;
  for (const order of orders) {
    const { x, at } = orderIndex(parts, order);
    const outs = outsOf(at);
    try {
      const units = rampTable(x, outs, tag);
      if (best === null || units.length < best.units.length) best = { x, at, units, outs };
    } catch (e) {
      if (!(e instanceof ChipcError && e.code.startsWith('ffn.'))) throw e;
      if (firstError === null) firstError = e;
    }
  }
  if (best === null) throw firstError;
  return best;
}
