/**
 * Pass (part of lowering) — sums of tables that share their inputs, as one dim per sum, in one FFN
 * op. A linear node L = bias + Σ coef_k·t_k + rest, where the t_k are tables (any number of
 * inputs) that nothing but L reads, usually takes a dim per table, and every reader of L reads
 * all of them: the multiplier's column sums D_k = Σ l_ij + Σ h_ij read 128 digit dims, two tables
 * per nibble pair (i, j), whose ramps fuse-tables shares because they read the same two inputs.
 *
 * Here every table over one input list becomes one ramp table with one output per sum it feeds
 * (values: Σ coef·table, plus the sum's bias on the first table that feeds it), so the ramps stay
 * shared, and each sum's tables are one dim. The sums whose tables share inputs form a component
 * (tables over one input list all feed sums of the component: closed under "reads the same inputs
 * as"); the whole component is one op. A sum's other terms are folded into its dim by one LIN unit
 * when the ASAP estimate says they are ready by the op's sublayer (the dim then holds the sum, and
 * the checker compares it); else L's form is its dim plus their forms, and the dim, holding part of
 * L, belongs to no IR node (`L.tables`).
 *
 * It applies when every table over each input list of the component is a term of one of its sums
 * (so no ramp is lost to a table outside it), the coefficients are integers, each dim's range lies
 * within ±SLOT_MAX, the component has more tables than sums (it saves dims), and the op fits
 * the layer budget: a lone sum, sumDim's eighth of a layer's FFN units (its tables apart could
 * spread over layers); several sums whose tables share ramps across them, a whole layer.
 * Exactness: each ramp table's outputs are exactly its values (the ramp engine's bounds: values
 * and partial sums integers, ramps within the gate window), a sum of integer unit outputs below
 * 2^24 is exact in any order, and the dim's value is within the slot limit.
 */
import { SLOT_MAX, type CircuitIR, type IrNode, type NodeId, type TableNode } from '../ir/types.ts';
import { nodeDeps } from '../ir/deps.ts';
import { input, linUnit, VALUE_LIMIT, type RampOutput } from '../gadgets/ffn-core.ts';
import { combine, constForm, form, type FfnUnit, type Form, type VDim } from '../lower/forms.ts';
import type { LowerContext } from '../lower/context.ts';
import type { FfnOp } from '../lower/lowered.ts';
import { opReads } from '../lower/op-io.ts';
import { cheapestTableOrder } from './table-order.ts';
import { readCountsOf, readyEstimator, SUM_SHARE, unlessBound } from './lower-encodings.ts';

interface TableTerm {
  table: TableNode;
  sum: NodeId;
  coef: number;
}

/** A component of sums: what the IR alone decides (kept per IR, like the index). */
interface Component {
  sums: NodeId[];
  /** Tables by input list (resolved ids joined), each with the sum it feeds. */
  groups: Map<string, TableTerm[]>;
}

/** A component's lowering in one context (one compile of the IR). */
interface Built {
  /** The input lists whose tables the op computes, and the sums it writes (those they feed). */
  keys?: Set<string>;
  sums?: NodeId[];
  op?: FfnOp;
  /** Per sum, whether its other terms are folded into its dim. */
  folded?: boolean[];
  /** The sums whose forms were handed out while the other terms were lowered (never folded). */
  handedOut?: Set<NodeId>;
}

const builds = new WeakMap<LowerContext, Map<Component, Built>>();
function builtOf(ctx: LowerContext, comp: Component): Built {
  let m = builds.get(ctx);
  if (m === undefined) builds.set(ctx, (m = new Map()));
  let b = m.get(comp);
  if (b === undefined) m.set(comp, (b = {}));
  return b;
}

interface SumIndex {
  /** The node that reads a node, where one node (not a wire) does and nothing else: −1 otherwise. */
  soleReader: Int32Array;
  tablesByInputs: Map<string, TableNode[]>;
  component: Map<NodeId, Component | null>;
}

const indexes = new WeakMap<CircuitIR, SumIndex>();

const inputKey = (ctx: LowerContext, t: TableNode): string => t.inputs.map((i) => ctx.resolve(i).id).join(',');

function indexOf(ctx: LowerContext): SumIndex {
  let idx = indexes.get(ctx.ir);
  if (idx !== undefined) return idx;
  const { uses } = readCountsOf(ctx);
  const soleReader = new Int32Array(ctx.ir.nodes.length).fill(-1);
  for (const n of ctx.ir.nodes) {
    for (const d of new Set(nodeDeps(ctx.ir, n))) if (uses[d] === 1) soleReader[d] = n.id;
  }
  const tablesByInputs = new Map<string, TableNode[]>();
  for (const n of ctx.ir.nodes) {
    if (n.op !== 'table' || n.overCases) continue;
    const k = inputKey(ctx, n);
    const g = tablesByInputs.get(k);
    if (g) g.push(n);
    else tablesByInputs.set(k, [n]);
  }
  idx = { soleReader, tablesByInputs, component: new Map() };
  indexes.set(ctx.ir, idx);
  return idx;
}

/** The sum a table feeds as a term (through wires), or null. */
function sumOf(ctx: LowerContext, idx: SumIndex, t: TableNode): NodeId | null {
  let id: NodeId = t.id;
  for (;;) {
    const r = idx.soleReader[id]!;
    if (r < 0) return null;
    const n = ctx.node(r);
    if (n.op === 'wire') { id = r; continue; }
    return n.op === 'linear' && !n.choice ? r : null;
  }
}

const isTableTerm = (ctx: LowerContext, idx: SumIndex, node: NodeId, sum: NodeId): boolean => {
  const m = ctx.resolve(node);
  return m.op === 'table' && !m.overCases && sumOf(ctx, idx, m) === sum;
};

/** The component of sums around L (closed over shared table inputs), or null when one of its tables or sums does not qualify. */
function componentOf(ctx: LowerContext, idx: SumIndex, L: IrNode): Component | null {
  const memo = idx.component.get(L.id);
  if (memo !== undefined) return memo;
  const sums: NodeId[] = [];
  const seen = new Set<NodeId>([L.id]);
  const groups = new Map<string, TableTerm[]>();
  let ok = true;
  for (let q = [L.id]; q.length > 0 && ok;) {
    const id = q.pop()!;
    const s = ctx.node(id);
    if (s.op !== 'linear' || s.choice || !s.terms.every((t) => Number.isInteger(t.coef))) { ok = false; break; }
    sums.push(id);
    for (const t of s.terms) {
      if (!isTableTerm(ctx, idx, t.node, id)) continue;
      const key = inputKey(ctx, ctx.resolve(t.node) as TableNode);
      if (groups.has(key)) continue;
      const terms: TableTerm[] = [];
      for (const tb of idx.tablesByInputs.get(key)!) {
        const sum = sumOf(ctx, idx, tb);
        if (sum === null) { ok = false; break; }
        const reader = ctx.node(sum);
        if (reader.op !== 'linear') { ok = false; break; }
        const coef = reader.terms.filter((x) => ctx.resolve(x.node).id === tb.id).reduce((a, x) => a + x.coef, 0);
        terms.push({ table: tb, sum, coef });
        if (!seen.has(sum)) { seen.add(sum); q.push(sum); }
      }
      groups.set(key, terms);
    }
  }
  const tables = [...groups.values()].reduce((a, g) => a + g.length, 0);
  const comp = ok && tables > sums.length ? { sums, groups } : null;
  for (const id of comp ? sums : [L.id]) idx.component.set(id, comp);
  return comp;
}

/** The range of a sum's tables in `groups` plus its bias (what its dim holds). */
function tablePartRange(ctx: LowerContext, groups: TableTerm[][], sum: NodeId): { lo: number; hi: number } {
  const n = ctx.node(sum);
  let lo = n.op === 'linear' ? n.bias : 0;
  let hi = lo;
  for (const g of groups) for (const t of g) {
    if (t.sum !== sum) continue;
    const r = t.table.range;
    lo += Math.min(t.coef * r.lo, t.coef * r.hi);
    hi += Math.max(t.coef * r.lo, t.coef * r.hi);
  }
  return { lo, hi };
}

/**
 * Build the component's op (once); its sums' dims, or null when it breaks a bound or the budget.
 * The op waits for its latest input, so an input list ready later than the earliest sum could be
 * (by the ASAP estimate) leaves the op: its tables are lowered apart and stay terms of their sums'
 * forms, and a sum left with no table leaves too. Then each sum's other terms are folded into its
 * dim (one LIN unit) where the estimate says they are ready by the op's sublayer, so the dim holds
 * the whole sum. Lowering those terms may ask for a sum of this component again: its form is then
 * handed out unfolded, and that sum stays so.
 */
function build(ctx: LowerContext, comp: Component): Map<NodeId, VDim> | null {
  const built = builtOf(ctx, comp);
  const made = ctx.encoding(`tablesums:${comp.sums[0]}`, () => {
    // (the inputs' forms first: lowering them adds the ops the estimate walks)
    const inputDims = new Map([...comp.groups].map(([key, g]) => [key, g[0]!.table.inputs.flatMap((i) => ctx.formOf(i).terms.map((t) => t.dim))]));
    const ready = readyEstimator(ctx);
    const groupReady = new Map([...inputDims].map(([key, ds]) => [key, Math.max(0, ...ds.map(ready))]));
    const sumReady = comp.sums.map((s) => Math.max(0, ...[...comp.groups].filter(([, g]) => g.some((t) => t.sum === s)).map(([k]) => groupReady.get(k)!)));
    const at = Math.min(...sumReady);
    built.keys = new Set([...comp.groups.keys()].filter((k) => groupReady.get(k)! <= at));
    const groups = [...comp.groups].filter(([k]) => built.keys!.has(k)).map(([, g]) => g);
    const sums = comp.sums.filter((s) => groups.some((g) => g.some((t) => t.sum === s)));
    built.sums = sums;
    const ranges = sums.map((s) => tablePartRange(ctx, groups, s));
    if (ranges.some((r) => r.lo < -SLOT_MAX || r.hi > SLOT_MAX)) return [];
    // built on placeholder dims −1 − (the sum's index), given real dims once the op is kept
    const units = unlessBound(() => {
      const us: FfnUnit[] = [];
      // each sum's bias rides on the first group that feeds it
      const biased = new Set<NodeId>();
      for (const g of groups) {
        const sumsHere = [...new Set(g.map((t) => t.sum))];
        const bias = sumsHere.map((s) => {
          const n = ctx.node(s);
          if (biased.has(s) || n.op !== 'linear') return 0;
          biased.add(s);
          return n.bias;
        });
        const outsOver = (pos: Int32Array): RampOutput[] => sumsHere.map((s, k) => ({
          dim: -1 - sums.indexOf(s),
          values: Array.from(pos, (i) => g.reduce((acc, t) => (t.sum === s ? acc + t.coef * t.table.values[i]! : acc), bias[k]!)),
        }));
        const tag = `${ctx.node(sumsHere[0]!).name}.sums`;
        us.push(...cheapestTableOrder(ctx, g[0]!.table.inputs, outsOver, tag).units);
      }
      return us;
    });
    // one sum: sumDim's budget (its tables apart could spread over layers); a component of
    // several sums, whose tables share ramps across them, may take a whole layer (the multiplier)
    if (units === null || units.length > (sums.length === 1 ? ctx.ffnUnits / SUM_SHARE : ctx.ffnUnits)) return [];
    // until its other terms are folded in, a sum's dim holds part of its value: no IR node's (−1)
    const dims = sums.map((s, k) => {
      const n = ctx.node(s);
      const whole = n.op === 'linear' && n.terms.every((t) => inOp(ctx, built, t.node, s));
      return ctx.newDim(whole ? s : -1, 'scalar', 0, ranges[k]!.lo, ranges[k]!.hi, whole ? n.name : `${n.name}.tables`);
    });
    for (const u of units) u.down = u.down.map((o) => (o.dim < 0 ? { ...o, dim: dims[-1 - o.dim]! } : o));
    built.op = ctx.addOp({ kind: 'ffn', what: `sums of tables "${ctx.node(sums[0]!).name}" + ${sums.length - 1}`, units, reads: opReads(units), writes: dims }) as FfnOp;
    return dims;
  });
  if (made.length === 0) return null;
  if (built.folded === undefined && built.handedOut === undefined) foldRest(ctx, built, made);
  return new Map(built.sums!.map((s, k) => [s, made[k]!]));
}

/** Is `node` a table term of `sum` that the component's op computes? */
function inOp(ctx: LowerContext, built: Built, node: NodeId, sum: NodeId): boolean {
  if (!isTableTerm(ctx, indexOf(ctx), node, sum)) return false;
  return built.keys!.has(inputKey(ctx, ctx.resolve(node) as TableNode));
}

function foldRest(ctx: LowerContext, built: Built, dims: VDim[]): void {
  built.handedOut = new Set();
  const sums = built.sums!;
  const rest = sums.map((s) => {
    const n = ctx.node(s);
    if (n.op !== 'linear') return null;
    let f: Form = constForm(0);
    let lo = 0;
    let hi = 0;
    for (const t of n.terms) {
      if (inOp(ctx, built, t.node, s)) continue;
      const r = ctx.resolve(t.node).range;
      f = combine(1, f, t.coef, ctx.formOf(t.node));
      lo += Math.min(t.coef * r.lo, t.coef * r.hi);
      hi += Math.max(t.coef * r.lo, t.coef * r.hi);
    }
    return f.terms.length === 0 && f.constant === 0 ? null : { f, lo, hi };
  });
  const ready = readyEstimator(ctx);
  const op = built.op!;
  let opAt = 1;
  for (const d of op.reads) opAt = Math.max(opAt, ready(d) | 1);
  const folded = sums.map((s, k) => {
    const r = rest[k];
    const info = ctx.dims[dims[k]!]!;
    if (r === null || built.handedOut!.has(s) || r.lo < -VALUE_LIMIT || r.hi > VALUE_LIMIT) return false;
    if (info.lo + r.lo < -SLOT_MAX || info.hi + r.hi > SLOT_MAX || !r.f.terms.every((t) => ready(t.dim) <= opAt)) return false;
    const unit = unlessBound(() => linUnit(input(r.f, r.lo, r.hi), [{ dim: dims[k]!, k: 1 }], `${ctx.node(s).name}.rest`));
    if (unit === null) return false;
    op.units.push(unit);
    info.node = s;
    info.name = ctx.node(s).name;
    info.lo += r.lo;
    info.hi += r.hi;
    return true;
  });
  op.reads = opReads(op.units);
  built.folded = folded;
}

/**
 * The form of L when it is a sum in a component of table sums (its dim, plus its other terms where
 * they are not folded in), or null.
 */
export function tableSumForm(ctx: LowerContext, n: IrNode): Form | null {
  if (n.op !== 'linear' || n.choice || n.terms.length === 0) return null;
  const idx = indexOf(ctx);
  const comp = componentOf(ctx, idx, n);
  if (comp === null) return null;
  const dims = build(ctx, comp);
  const own = dims?.get(n.id);
  if (own === undefined) return null;
  let f: Form = form([{ dim: own, coef: 1 }], 0);
  const built = builtOf(ctx, comp);
  if (built.folded === undefined) built.handedOut?.add(n.id);
  else if (built.folded[built.sums!.indexOf(n.id)]) return f;
  for (const t of n.terms) if (!inOp(ctx, built, t.node, n.id)) f = combine(1, f, t.coef, ctx.formOf(t.node));
  return f;
}
