/**
 * The input order of a table's mixed-radix index (part of lowering, no pass of its own): the
 * index form over the inputs and the search for the order that needs the fewest ramp units.
 * Shared by lower-arith.ts (tables) and lower-encodings.ts (a table's own one-hot columns).
 */
import { ChipcError } from '../util/errors.ts';
import { input, MAX_DOMAIN, type IntInput } from '../gadgets/ffn-core.ts';
import { combine, constForm, type FfnUnit, type Form } from '../lower/forms.ts';
import type { LowerContext } from '../lower/context.ts';

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
 * `lowerBound(at)`, when given, is at most the units `build` would return for that order: an order
 * whose bound reaches the best count so far is skipped unbuilt.
 */
export function cheapestTableOrder(
  ctx: LowerContext, inputs: number[], build: (x: IntInput, at: Int32Array) => FfnUnit[],
  lowerBound?: (at: Int32Array) => number,
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
    // An order whose units cannot be fewer than the best one's is not built (the result is the same:
    // it could not win, and its errors matter only while nothing has been built).
    if (best !== null && lowerBound !== undefined && lowerBound(at) >= best.units.length) continue;
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
