/**
 * Pass (part of lowering) — encodings: bits and one-hots of IR signals. Token fields and
 * constants come from the embedding (free); computed signals get them from one shared-ramp table
 * over their scalar form (FFN; gadgets/ffn-core.ts `rampTable`).
 */
import { SLOT_MAX, type CircuitIR, type IrNode, type NodeId } from '../ir/types.ts';
import { nodeDeps } from '../ir/deps.ts';
import { ChipcError } from '../util/errors.ts';
import { input, linUnit, rampTable, switchUnit } from '../gadgets/ffn-core.ts';
import { COMPARE_HOLDS, compare } from '../gadgets/ffn.ts';
import type { IntInput, RampOutput } from '../gadgets/ffn-core.ts';
import { combine, constForm, form, type FfnUnit, type Form, type VDim } from '../lower/forms.ts';
import { atNode, type LowerContext } from '../lower/context.ts';
import { cheapestTableOrder, valuesAlong } from './table-order.ts';
import { opReads } from '../lower/op-io.ts';

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
      return Array.from({ length: width }, (_, j) => (j === 0 ? ctx.scalarDim(n.id) : zeroDim(ctx)));
    }
    if (n.op === 'token_field' || n.op === 'const') {
      const nameOf = (j: number) => `${n.name}.bit${j}`;
      const dims = n.op === 'const'
        ? Array.from({ length: width }, (_, j) => ctx.embedDim(n.id, 'bits', j, 0, 1, nameOf(j), () => bit(n.value, j)))
        : ctx.embedFieldDims(n, 'bits', width, nameOf, `base ${base}`, (v, put) => { for (let j = 0; j < width; j++) put(j, bit(v, j)); }, r.lo);
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
    return src !== undefined ? ctx.scalarDim(src) : zeroDim(ctx);
  });
}

/** The constant-0 dim (one embedding dim shared by every user). */
export function zeroDim(ctx: LowerContext): VDim {
  return ctx.encoding('const0', () => [ctx.embedDim(-1, 'scalar', 0, 0, 0, 'zero', () => 0)])[0]!;
}

/**
 * One-hot of the value: dim j is [value = lo + j]. Token fields and constants: embedding dims.
 * A table: the indicator columns of the table itself, over its own index (one FFN layer after its
 * inputs, like the table; fuse-tables merges it with the scalar table when both are used); a
 * table over the cases of a choice (`overCases`), straight from its conditions and values (`choiceTable`).
 * A choice (c.choose) Σ_k select(cond_k, value_k, 0): per case, the one-hot of value_k with every
 * unit gated off by cond_k (rampTable's gate-off), all cases writing the same dims (at most one
 * case holds), and a LIN unit writing [no case holds] into the dim of 0 — the choice's value then
 * (a 0 outside its range fails the interpreters' range check first) — one FFN layer after the
 * conditions and values. Otherwise: a shared-ramp table over the scalar form (one FFN layer
 * after the value).
 */
export function oneHotOf(ctx: LowerContext, id: NodeId): VDim[] {
  const n = ctx.resolve(id);
  return ctx.encoding(`onehot:${n.id}`, () => {
    const r = n.range;
    const count = r.hi - r.lo + 1;
    if (count > 4096) ctx.fail(n, 'lower.onehot', `signal "${n.name}" has ${count} values; a one-hot encoding is limited to 4,096`);
    if (n.op === 'token_field' || n.op === 'const') {
      const nameOf = (j: number) => `${n.name}=${r.lo + j}`;
      if (n.op === 'const') return Array.from({ length: count }, (_, j) => ctx.embedDim(n.id, 'onehot', j, 0, 1, nameOf(j), () => (n.value === r.lo + j ? 1 : 0)));
      // (a value outside the field's range, which the build refuses, would set no dim, as before)
      return ctx.embedFieldDims(n, 'onehot', count, nameOf, `lo ${r.lo}`, (v, put) => { if (v >= r.lo && v <= r.hi) put(v - r.lo, 1); }, r.lo);
    }
    const dims = Array.from({ length: count }, (_, j) => ctx.newDim(n.id, 'onehot', j, 0, 1, `${n.name}=${r.lo + j}`));
    // The early forms below fall back to the decode of the scalar when their gadget's bounds fail.
    const only = n.op === 'table' && n.overCases === true && n.inputs.length === 1 ? ctx.resolve(n.inputs[0]!) : null;
    if (n.op === 'table' && only !== null && only.op === 'linear' && only.choice) {
      // A table over the cases of a choice: its indicator columns straight from them.
      const { lo: xLo, hi: xHi } = only.range;
      const valueAt = (v: number) => (v >= xLo && v <= xHi ? n.values[v - xLo]! : NaN); // outside the range: never chosen
      const units = unlessBound(() => choiceTable(ctx, only.terms.map((t) => t.node), dims.map((dim, j) => ({ dim, f: (v: number) => (valueAt(v) === r.lo + j ? 1 : 0) })), `${n.name}.onehot`));
      if (units) {
        ctx.addOp({ kind: 'ffn', what: `one-hot table of choice "${n.name}"`, units, reads: opReads(units), writes: dims });
        return dims;
      }
    }
    if (n.op === 'table') {
      const oneHotOver = (at: Int32Array) => {
        const v = valuesAlong(n.values, at);
        return dims.map((d, j) => ({ dim: d, values: v.map((x) => (x === r.lo + j ? 1 : 0)) }));
      };
      const best = unlessBound(() => cheapestTableOrder(ctx, n.inputs, oneHotOver, `${n.name}.onehot`));
      if (best) {
        const { x, units, outs } = best;
        ctx.addOp({ kind: 'ffn', what: `one-hot table "${n.name}"`, units, reads: opReads(units), writes: dims, table: { input: x, outs } });
        return dims;
      }
    }
    if (n.op === 'linear' && n.choice) {
      const units = unlessBound(() => choiceOneHot(ctx, n.terms.map((t) => t.node), dims, r.lo, n.name));
      if (units) {
        ctx.addOp({ kind: 'ffn', what: `one-hot of choice "${n.name}"`, units, reads: opReads(units), writes: dims });
        return dims;
      }
    }
    const units = atNode(ctx, n.id, 'the one-hot decode', () =>
      rampTable(input(ctx.formOf(n.id), r.lo, r.hi), dims.map((d, j) => ({ dim: d, values: Array.from({ length: count }, (_, i) => (i === j ? 1 : 0)) })), `${n.name}.onehot`));
    ctx.addOp({ kind: 'ffn', what: `one-hot of "${n.name}"`, units, reads: opReads(units), writes: dims });
    return dims;
  });
}

/**
 * Bit k of a table's value (values ≥ 0) as a 0/1 dim ('bits'). One FFN layer after the table's
 * inputs, like the table: an indicator column over the table's own index (fuse-tables merges it
 * with the table's other columns). Null for a node that is not a plain table, or when the ramp's
 * bounds fail: the caller keeps another encoding.
 */
export function tableBitOf(ctx: LowerContext, id: NodeId, k: number): VDim | null {
  return tableColumnsOf(ctx, id, `bit${k}`, 'bits', [{ index: k, name: `bit${k}`, f: (v) => (Math.floor(v / 2 ** k) % 2 === 1 ? 1 : 0) }])?.[0] ?? null;
}

/**
 * The one-hot of a table's value mod 2^k (values ≥ 0; 'residue', modulus 2^k): dim j is
 * [value mod 2^k = j]. Like tableBitOf: one FFN layer after the table's inputs; null when it
 * cannot be built that way.
 */
export function tableLowOneHotOf(ctx: LowerContext, id: NodeId, k: number): VDim[] | null {
  const m = 2 ** k;
  return tableColumnsOf(ctx, id, `mod${m}`, 'residue', Array.from({ length: m }, (_, j) => ({ index: j, name: `mod${m}=${j}`, f: (v: number) => (v % m === j ? 1 : 0) })), m);
}

function tableColumnsOf(
  ctx: LowerContext, id: NodeId, key: string, encoding: 'bits' | 'residue',
  cols: { index: number; name: string; f: (value: number) => 0 | 1 }[], modulus?: number,
): VDim[] | null {
  const n = ctx.resolve(id);
  if (n.op !== 'table' || n.overCases === true || n.range.lo < 0) return null;
  const dims = ctx.encoding(`table.${key}:${n.id}`, () => {
    const dims = cols.map((c) => ctx.newDim(n.id, encoding, c.index, 0, 1, `${n.name}.${c.name}`));
    if (modulus !== undefined) for (const d of dims) ctx.dims[d]!.modulus = modulus;
    const over = (at: Int32Array) => {
      const v = valuesAlong(n.values, at);
      return dims.map((dim, i) => ({ dim, values: v.map((x) => cols[i]!.f(x)) }));
    };
    const best = unlessBound(() => cheapestTableOrder(ctx, n.inputs, over, `${n.name}.${key}`));
    if (best === null) return [];
    ctx.addOp({ kind: 'ffn', what: `${key} table "${n.name}"`, units: best.units, reads: opReads(best.units), writes: dims, table: { input: best.x, outs: best.outs } });
    return dims;
  });
  return dims.length === cols.length ? dims : null;
}

/** make()'s result, or null when a gadget bound (a ChipcError `ffn.*`) fails. */
export function unlessBound<T>(make: () => T): T | null {
  try {
    return make();
  } catch (e) {
    if (e instanceof ChipcError && e.code.startsWith('ffn.')) return null;
    throw e;
  }
}

/**
 * A choice (c.choose: Σ_k select(cond_k, value_k, 0), at most one cond holding) as one dim: one
 * SWITCH unit per case, all writing that dim (gadgets/ffn-core.ts switchUnit: exactly
 * cond_k·value_k, ±0 when cond_k = 0), so the dim holds the chosen value (0 when no case holds)
 * one FFN layer after the conditions and values — where the selects took two units per case and
 * a dim each, and every consumer read all of them. Preconditions: each cond a bit, at most one
 * holding (the interpreters check choices), every value within the switch's up range. Null when
 * a switch's bounds fail (the caller reads the selects' sum).
 */
export function choiceDim(ctx: LowerContext, n: IrNode): VDim | null {
  if (n.op !== 'linear' || !n.choice) return null;
  const dims = ctx.encoding(`choice:${n.id}`, () => {
    const dim = ctx.newDim(n.id, 'scalar', 0, n.range.lo, n.range.hi, n.name);
    const sels = n.terms.map((t) => {
      const s = ctx.resolve(t.node);
      if (s.op !== 'select') throw new Error(`internal: choice "${n.name}" has a case that is not a select`);
      return { s, cf: ctx.formOf(s.cond), vf: ctx.formOf(s.then) };
    });
    const valueForm = caseValueForms(ctx, sels.map(({ s, cf, vf }) => ({ value: s.then, vf, cf })));
    const units = unlessBound(() => sels.map(({ s, cf }, k) => {
      const v = ctx.resolve(s.then).range;
      return switchUnit(input(cf, 0, 1), input(valueForm(k), v.lo, v.hi), [{ dim, k: 1 }], `${n.name}.case${k}`);
    }));
    if (units === null) return [];
    ctx.addOp({ kind: 'ffn', what: `choice "${n.name}"`, units, reads: opReads(units), writes: [dim] });
    ctx.setScalarDim(n.id, dim);
    return [dim];
  });
  return dims[0] ?? null;
}

/** A sum as one dim takes at most 1/SUM_SHARE of a layer's FFN units. */
export const SUM_SHARE = 8;

/**
 * Per IR: `uses`, how many places name each node (other nodes' inputs, RAM ports, lookups, the
 * emit); `tableReads`, how many table nodes read each node (fuse-tables shares ramps among tables
 * over one index). Wires are resolved for tableReads, as table inputs are when lowered.
 */
const readCounts = new WeakMap<CircuitIR, { uses: Int32Array; tableReads: Int32Array }>();
export function readCountsOf(ctx: LowerContext): { uses: Int32Array; tableReads: Int32Array } {
  const ir = ctx.ir;
  let counts = readCounts.get(ir);
  if (counts !== undefined) return counts;
  const uses = new Int32Array(ir.nodes.length);
  const tableReads = new Int32Array(ir.nodes.length);
  const count = (id: NodeId | null | undefined) => { if (id !== null && id !== undefined) uses[id]!++; };
  for (const n of ir.nodes) {
    for (const d of new Set(nodeDeps(ir, n))) count(d);
    if (n.op === 'table') for (const x of new Set(n.inputs.map((i) => ctx.resolve(i).id))) tableReads[x]!++;
  }
  for (const ram of ir.rams) {
    if (ram.write) { count(ram.write.addr); count(ram.write.enable); ram.write.values.forEach(count); }
    for (const r of ram.reads) { count(r.addr); count(r.enable); r.groups?.forEach(count); }
  }
  for (const lk of ir.lookups) { [...lk.key, ...lk.value, ...lk.query].forEach(count); count(lk.stamp); count(lk.publish); }
  ir.emit?.fields.forEach(count);
  counts = { uses, tableReads };
  readCounts.set(ir, counts);
  return counts;
}

/**
 * A sum of comparisons or tables as one dim: L = Σ_k coef_k·t_k (bias 0, integer coefficients),
 * every term t_k a compare or a one-input table that nothing but L reads — say, a byte
 * Σ 2^i·[x_i + y_i = 1] of a bitwise XOR. The terms over one input x (tables over x, compares of x
 * with a constant) become one ramp table of x with values Σ_k coef_k·t_k(x); a compare of two
 * signals, its step table with scale coef_k (gadgets/ffn.ts `compare`). They all write L's dim, in
 * one FFN op, so L takes one slot where its terms took one each, and every consumer reads one dim.
 * It costs no layer: the op sits where the last term would, and every consumer of L waited for
 * that term anyway. Exactness: each table's units sum to exactly its values (the ramp table's own
 * bounds, checked on the summed values: integers within ±256, partial sums < 2^24), every unit's
 * output is an integer and L's range is within the slot limit, so the sum is exact in any order
 * (the order-invariance analysis checks the emitted down projection). Null when L is not such a
 * sum, a table breaks a gadget bound, or the op would take more than an eighth of a layer's FFN
 * units (then L stays the terms' form).
 */
export function sumDim(ctx: LowerContext, n: IrNode): VDim | null {
  if (n.op !== 'linear' || n.choice || n.bias !== 0 || n.terms.length < 2 || n.range.lo < -SLOT_MAX || n.range.hi > SLOT_MAX) return null;
  const { uses, tableReads } = readCountsOf(ctx);
  // the terms by the one input they read (a table's, a compare's with a constant): f(x) per value of x
  const byInput = new Map<NodeId, { coef: number; f: (v: number) => number; table: boolean }[]>();
  const pairs: { node: IrNode & { op: 'compare' }; coef: number }[] = [];
  for (const t of n.terms) {
    const m = ctx.resolve(t.node);
    if (uses[t.node] !== 1 || uses[m.id] !== 1 || !Number.isInteger(t.coef)) return null;
    let x: NodeId;
    let f: (v: number) => number;
    if (m.op === 'table' && !m.overCases && m.inputs.length === 1) {
      x = ctx.resolve(m.inputs[0]!).id;
      const lo = ctx.resolve(x).range.lo;
      const values = m.values;
      f = (v) => values[v - lo]!;
    } else if (m.op === 'compare') {
      const a = ctx.resolve(m.a);
      const b = ctx.resolve(m.b);
      const holds = COMPARE_HOLDS[m.cmp];
      if (b.op === 'const') { x = a.id; f = (v) => (holds(v - b.value) ? 1 : 0); }
      else if (a.op === 'const') { x = b.id; f = (v) => (holds(a.value - v) ? 1 : 0); }
      else { pairs.push({ node: m, coef: t.coef }); continue; }
    } else return null;
    const g = byInput.get(x);
    const term = { coef: t.coef, f, table: m.op === 'table' };
    if (g) g.push(term);
    else byInput.set(x, [term]);
  }
  // Tables over an input that other tables read too share ramps with them (fuse-tables): taken
  // into the sum they would not (the shifters' tables over one nibble cost 4× the units apart).
  for (const [x, terms] of byInput) {
    const tables = terms.filter((t) => t.table).length;
    if (tables > 0 && tableReads[x] !== tables) return null;
  }
  const dims = ctx.encoding(`sum:${n.id}`, () => {
    const dim = ctx.newDim(n.id, 'scalar', 0, n.range.lo, n.range.hi, n.name);
    let table: { input: IntInput; outs: RampOutput[] } | undefined;
    const units = unlessBound(() => {
      const us: FfnUnit[] = [];
      for (const [x, terms] of byInput) {
        const r = ctx.resolve(x).range;
        const ix = input(ctx.formOf(x), r.lo, r.hi);
        const outs = [{ dim, values: Array.from({ length: r.hi - r.lo + 1 }, (_, i) => terms.reduce((acc, t) => acc + t.coef * t.f(r.lo + i), 0)) }];
        if (byInput.size === 1 && pairs.length === 0) table = { input: ix, outs };
        us.push(...rampTable(ix, outs, `${n.name}.sum`));
      }
      for (const { node, coef } of pairs) {
        const ra = ctx.resolve(node.a).range;
        const rb = ctx.resolve(node.b).range;
        us.push(...compare(dim, input(ctx.formOf(node.a), ra.lo, ra.hi), input(ctx.formOf(node.b), rb.lo, rb.hi), node.cmp, coef));
      }
      return us;
    });
    // (whole, it must leave most of a layer's FFN to the rest: its terms apart could spread)
    if (units === null || units.length > ctx.ffnUnits / SUM_SHARE) return [];
    ctx.addOp({ kind: 'ffn', what: `sum "${n.name}"`, units, reads: opReads(units), writes: [dim], ...(table ? { table } : {}) });
    ctx.setScalarDim(n.id, dim);
    return [dim];
  });
  return dims[0] ?? null;
}

/** A choice case's value read through more dims than this is read from its own slot. */
const WIDE_FORM = 4;

/**
 * The form through which a choice reads each case's value (`valueForm(k)`): a value spread over
 * more than WIDE_FORM dims is read from its own slot (one LIN unit) when that slot is ready by the
 * time the last case's inputs (`cf`, `vf`) are, by an ASAP estimate. Its dims can then leave the
 * residual before the choice, which is not delayed by it, and every unit of the case reads one
 * dim. The slot is made only when asked for (a case with no units needs none).
 */
function caseValueForms(ctx: LowerContext, cases: { value: NodeId; vf: Form; cf: Form }[]): (k: number) => Form {
  // (the estimate walks every op lowered so far: only where some value is wide)
  if (!cases.some((c) => c.vf.terms.length > WIDE_FORM)) return (k) => cases[k]!.vf;
  const ready = readyEstimator(ctx);
  const readyOf = (f: Form) => Math.max(0, ...f.terms.map((t) => ready(t.dim)));
  const ffnAt = (r: number) => (r % 2 === 1 ? r : r + 1);
  const at = ffnAt(Math.max(0, ...cases.map((c) => Math.max(readyOf(c.vf), readyOf(c.cf)))));
  return (k) => {
    const c = cases[k]!;
    const own = c.vf.terms.length > WIDE_FORM && ffnAt(readyOf(c.vf)) + 2 <= at;
    return own ? form([{ dim: ctx.scalarDim(c.value), coef: 1 }], 0) : c.vf;
  };
}

/** Gate-off margin of a choice case's units (≥ every ramp's argument + 1; as table2's). */
const CHOICE_MARGIN = 512;

/**
 * Units of a choice's one-hot: dims[v − lo] += [cond_k = 1 ∧ value_k = v] for every case k, plus
 * dims[0 − lo] += [no cond holds] (the choice is 0 then): choiceTable with one indicator output
 * per value, so the dims always hold exactly one 1.
 */
function choiceOneHot(ctx: LowerContext, selects: NodeId[], dims: VDim[], lo: number, name: string): FfnUnit[] {
  return choiceTable(ctx, selects, dims.map((dim, j) => ({ dim, f: (v: number) => (v === lo + j ? 1 : 0) })), name);
}

/** An output of choiceTable: dim += f(the choice's value). */
export interface ChoiceOutput {
  dim: VDim;
  /** Integer values; only read at values a case can take. */
  f: (v: number) => number;
}

/**
 * Units of functions of a choice (c.choose: Σ_k select(cond_k, value_k, 0), at most one cond
 * holding), straight from its conditions and values: for every output, dim += f(value_k) gated by
 * cond_k for every case k (a ramp table over value_k with every unit gated off by cond_k,
 * rampTable's gate-off: exactly f(value_k) when cond_k = 1, exactly 0 when it is 0), plus
 * dim += f(0)·[no cond holds] (the choice is 0 then), [no cond holds] = 1 − Σ_k cond_k in one LIN
 * unit. One FFN layer after the conditions and values, where the choice's selects and then a
 * table over their sum take two. Preconditions: each cond is a bit, at most one holds (the
 * interpreters check choices), every ramp within the bf16 gate window (ChipcError `ffn.*`
 * otherwise, which callers take as "build it the plain way").
 */
export function choiceTable(ctx: LowerContext, selects: NodeId[], outputs: ChoiceOutput[], name: string): FfnUnit[] {
  const units: FfnUnit[] = [];
  const cases = selects.map((sid, k) => {
    const sel = ctx.resolve(sid);
    if (sel.op !== 'select') throw new Error(`internal: choice "${name}" term ${k} is not a select`);
    return { value: sel.then, range: ctx.resolve(sel.then).range, vf: ctx.formOf(sel.then), cond: input(ctx.formOf(sel.cond), 0, 1) };
  });
  // Every unit of a case reads its value (its own slot where it is wide: caseValueForms)
  const valueForm = caseValueForms(ctx, cases.map((cs) => ({ value: cs.value, vf: cs.vf, cf: cs.cond.form })));
  const conds: Form[] = [];
  cases.forEach((cs, k) => {
    const vr = cs.range;
    conds.push(cs.cond.form);
    const span = Array.from({ length: vr.hi - vr.lo + 1 }, (_, i) => vr.lo + i);
    const outs = [];
    for (const o of outputs) {
      const values = span.map(o.f);
      if (values.some((x) => x !== 0)) outs.push({ dim: o.dim, values });
    }
    if (!outs.length) return;
    units.push(...rampTable(input(valueForm(k), vr.lo, vr.hi), outs, `${name}.case${k}`, { bit: cs.cond, margin: CHOICE_MARGIN }));
  });
  const atZero = outputs.filter((o) => o.f(0) !== 0).map((o) => ({ dim: o.dim, k: o.f(0) }));
  if (atZero.length) {
    // [no case holds] = 1 − Σ cond_k
    let none = constForm(1);
    for (const c of conds) none = combine(1, none, -1, c);
    units.push(linUnit(input(none, 0, 1), atZero, `${name}.none`));
  }
  return units;
}

/**
 * An ASAP estimate of the sublayer from which each dim can be read, over the ops lowered so far
 * (the schedule's parity: sequence mixers at even sublayers, FFNs at odd): 0 for an embedded dim,
 * its latest writer's sublayer + 1 otherwise. GDN ops, in op order, take the first mixer with
 * enough of the target's key heads left (a RAM in banks fills a layer per bank). The real
 * schedule may place ops later.
 */
export function readyEstimator(ctx: LowerContext): (d: VDim) => number {
  const writers = new Map<VDim, number[]>();
  for (const op of ctx.ops) for (const d of op.writes) {
    const w = writers.get(d);
    if (w) w.push(op.id);
    else writers.set(d, [op.id]);
  }
  const opAt = new Map<number, number>();
  const headsUsed = new Map<number, number>();
  const ready = (d: VDim): number => Math.max(0, ...(writers.get(d) ?? []).map((id) => sublayerOf(id) + 1));
  const sublayerOf = (id: number): number => {
    const memo = opAt.get(id);
    if (memo !== undefined) return memo;
    opAt.set(id, 0); // a cycle (through a delay) counts from 0
    const op = ctx.ops[id]!;
    let r = 0;
    for (const d of op.reads) r = Math.max(r, ready(d));
    const parity = op.kind === 'ffn' ? 1 : 0;
    let s = r % 2 === parity ? r : r + 1;
    if (op.kind === 'gdn') {
      const heads = op.heads.length;
      while (heads <= ctx.gdnKeyHeads && (headsUsed.get(s) ?? 0) + heads > ctx.gdnKeyHeads) s += 2;
      headsUsed.set(s, (headsUsed.get(s) ?? 0) + heads);
    }
    opAt.set(id, s);
    return s;
  };
  for (const op of ctx.ops) sublayerOf(op.id);
  return ready;
}
