/**
 * The FFN gadget library: SwiGLU units computing exact integer functions of signals held in
 * virtual dims. Every gadget returns plain FfnUnit data (forms over vdims); each output vdim
 * receives residual[out] += value (the slot is 0 before, except for `clear`). Constants and
 * bounds: ffn-core.ts (A = 128, G = 32, gate window ≤ 256, up ≤ 256, partial sums < 2^24,
 * bf16-exact down weights). A request that would break a bound throws a ChipcError whose code
 * names it ('ffn.gate-range', 'ffn.up-range', 'ffn.out-range', 'ffn.table-span', …).
 *
 * Inputs are IntInput = {form, lo, hi}: an integer-coefficient form over vdims and the integer
 * range it takes (the caller's value-range analysis); bit arguments may also be a bare vdim.
 */
import { ChipcError } from '../util/errors.ts';
import { combine, constForm, type FfnUnit, type VDim } from '../lower/forms.ts';
import {
  EXACT_INT_LIMIT, VALUE_LIMIT, checkInput, checkOutRange, checkUp, input, linUnit,
  rampTable, rampUnit, switchUnit, unitPeak, type IntInput, type RampOutput,
} from './ffn-core.ts';

export { RAMP_SCALE, LIN_GATE, VALUE_LIMIT, dimForm, input, type IntInput } from './ffn-core.ts';

/** A bit argument: an IntInput within {0, 1}, or a vdim holding 0/1. */
export type BitInput = IntInput | VDim;

function asBit(b: BitInput, what: string): IntInput {
  const x = typeof b === 'number' ? input(b, 0, 1) : b;
  checkInput(x, what);
  if (x.lo < 0 || x.hi > 1) throw new ChipcError('ffn.switch-bit', `${what}: range [${x.lo}, ${x.hi}] is not within {0, 1}`);
  return x;
}

function range(x: IntInput): number[] {
  return Array.from({ length: x.hi - x.lo + 1 }, (_, i) => x.lo + i);
}

function checkK(k: number, what: string): void {
  if (!Number.isInteger(k) || k === 0) throw new ChipcError('ffn.input', `${what}: scale ${k} must be a non-zero integer`);
}

/** x + y with the summed range. */
function plus(x: IntInput, y: IntInput): IntInput {
  return { form: combine(1, x.form, 1, y.form), lo: x.lo + y.lo, hi: x.hi + y.hi };
}

/** x − y with the difference range. */
function minus(x: IntInput, y: IntInput): IntInput {
  return { form: combine(1, x.form, -1, y.form), lo: x.lo - y.hi, hi: x.hi - y.lo };
}

// ---------------------------------------------------------------------------------------------
// LIN family

/**
 * out += k·x. 1 unit: gate G = 32 (silu(32) = 32), up x, down k/32; h = 32·x.
 * Preconditions: x ∈ [−256, 256] integer (bf16 up), k·x within ±256, k/32 bf16-exact.
 */
export function lin(out: VDim, x: IntInput, k = 1): FfnUnit[] {
  checkK(k, 'lin');
  checkUp(x, 'lin');
  checkOutRange(Math.min(k * x.lo, k * x.hi), Math.max(k * x.lo, k * x.hi), 'lin');
  return [linUnit(x, [{ dim: out, k }], 'lin')];
}

/**
 * out += Σ xs (integers). Terms are grouped greedily into LIN units whose up range stays within
 * ±256 (bf16), so a byte sum a + b + cin costs 2 units. Output range must fit a slot.
 */
export function linSum(out: VDim, xs: IntInput[], tag = 'lin'): FfnUnit[] {
  const lo = xs.reduce((s, x) => s + x.lo, 0);
  const hi = xs.reduce((s, x) => s + x.hi, 0);
  checkOutRange(lo, hi, tag);
  return linGroups(out, xs, tag);
}

/** LIN units for out += Σ xs, grouped so every up stays within ±256 (no output-range check). */
function linGroups(out: VDim, xs: IntInput[], tag: string): FfnUnit[] {
  const groups: IntInput[] = [];
  for (const x of xs) {
    checkInput(x, tag);
    const last = groups[groups.length - 1];
    if (last) {
      const g = plus(last, x);
      if (g.lo >= -VALUE_LIMIT && g.hi <= VALUE_LIMIT) {
        groups[groups.length - 1] = g;
        continue;
      }
    }
    groups.push(x);
  }
  return groups.map((g) => linUnit(g, [{ dim: out, k: 1 }], tag));
}

/** out += c for an integer |c| ≤ 256. 1 unit: gate 32, up c (from the frame constants), down 1/32. */
export function constant(out: VDim, c: number): FfnUnit[] {
  if (!Number.isInteger(c)) throw new ChipcError('ffn.input', `constant ${c} is not an integer`);
  if (c === 0) return [];
  return [linUnit(input(constForm(c), c, c), [{ dim: out, k: 1 }], 'constant')];
}

/**
 * residual[dim] −= residual[dim]: frees a slot holding an integer in [range.lo, range.hi]
 * (within ±256) for reuse. 1 unit: gate 32, up raw(dim), down −1/32; the slot ends at +0.
 */
export function clear(dim: VDim, r: { lo: number; hi: number }): FfnUnit[] {
  return [linUnit(input(dim, r.lo, r.hi), [{ dim, k: -1 }], 'clear')];
}

// ---------------------------------------------------------------------------------------------
// Ramps, steps, comparisons, one-hot, tables

/**
 * out += k·max(0, x − t). 1 unit: gate A·(x − t), up −1, down −k/A (rampUnit).
 * Preconditions: hi − t ≤ 256 (bf16 gate window), k·max(0, hi − t) within ±256, k 8-bit.
 */
export function ramp(out: VDim, x: IntInput, t: number, k = 1): FfnUnit[] {
  checkInput(x, 'ramp');
  checkK(k, 'ramp');
  if (!Number.isInteger(t)) throw new ChipcError('ffn.input', `ramp: threshold ${t} is not an integer`);
  const mMax = x.hi - t;
  if (mMax <= 0) return [];
  if (mMax > VALUE_LIMIT) throw new ChipcError('ffn.gate-range', `ramp: gate argument reaches ${mMax} > ${VALUE_LIMIT} (bf16 gate window)`);
  checkOutRange(Math.min(0, k * mMax), Math.max(0, k * mMax), 'ramp');
  return [rampUnit(x, 1, t, mMax, [{ dim: out, k }], 'ramp')];
}

/** Shared-ramp table of one function of x into one output dim (see rampTable). */
function fnTable(out: VDim, x: IntInput, f: (v: number) => number, tag: string): FfnUnit[] {
  checkInput(x, tag);
  return rampTable(x, [{ dim: out, values: range(x).map(f) }], tag);
}

/**
 * out += k·[x ≥ t]. At most 2 units: (RAMP_{t−1} − RAMP_t)/A (1 unit when t is at an end of the
 * range, 0–1 when the result is constant over the range). Preconditions: the gates used satisfy
 * x − (t − 1) ≤ 256 (bf16), i.e. hi − t + 1 ≤ 256 (or the mirrored t − lo ≤ 256).
 */
export function step(out: VDim, x: IntInput, t: number, k = 1): FfnUnit[] {
  checkK(k, 'step');
  return fnTable(out, x, (v) => (v >= t ? k : 0), 'step');
}

/** out += k·[x = t]. At most 3 units: (RAMP_{t−1} − 2·RAMP_t + RAMP_{t+1})/A (fewer at the range ends). */
export function eq(out: VDim, x: IntInput, t: number, k = 1): FfnUnit[] {
  checkK(k, 'eq');
  return fnTable(out, x, (v) => (v === t ? k : 0), 'eq');
}

export type CompareOp = 'eq' | 'ne' | 'lt' | 'le' | 'gt' | 'ge';

/** [d op 0] for d = a − b. */
export const COMPARE_HOLDS: Record<CompareOp, (d: number) => boolean> = {
  eq: (d) => d === 0, ne: (d) => d !== 0, lt: (d) => d < 0, le: (d) => d <= 0, gt: (d) => d > 0, ge: (d) => d >= 0,
};

/**
 * out += k·[a op b] for integer inputs, via d = a − b over [a.lo − b.hi, a.hi − b.lo]:
 * ge/gt/le/lt are steps of d (≤ 2 units), eq is 3 units, ne 4 units (a constant and an eq
 * complement), each fewer when the range makes it cheaper. Preconditions: the ramps used stay in
 * the bf16 gate window (for ge: hi_d + 1 ≤ 256; for lt/le the mirrored bound on −d).
 */
export function compare(out: VDim, a: IntInput, b: IntInput | number, op: CompareOp, k = 1): FfnUnit[] {
  checkK(k, 'compare');
  const bi = typeof b === 'number' ? input(constForm(b), b, b) : b;
  const d = minus(a, bi);
  const p = COMPARE_HOLDS[op];
  return fnTable(out, d, (v) => (p(v) ? k : 0), `compare.${op}`);
}

/**
 * outs[j] += [x = lo + j] for j < N = outs.length. Shared ramps with second-difference down
 * weights (1, −2, 1)/A: N units when x's range is exactly [lo, lo+N), at most N + 2 when wider
 * (values outside the window give all zeros). Precondition: the ramps used stay in the bf16 gate
 * window, e.g. x.hi − lo + 1 ≤ 256 (upward ramps) or lo + N − x.lo ≤ 256 (mirrored).
 */
export function oneHot(outs: VDim[], x: IntInput, lo: number): FfnUnit[] {
  checkInput(x, 'oneHot');
  const xs = range(x);
  return rampTable(x, outs.map((dim, j) => ({ dim, values: xs.map((v) => (v === lo + j ? 1 : 0)) })), 'oneHot');
}

/** Where a table writes: a value dim, a one-hot field of the result (dims[v − lo] += [f = v]), or both. */
export type TableTarget = VDim | { value?: VDim; oneHot?: { dims: VDim[]; lo: number } };

function tableOutputs(values: number[], target: TableTarget, tag: string): RampOutput[] {
  const t = typeof target === 'number' ? { value: target } : target;
  const outs: RampOutput[] = [];
  if (t.value !== undefined) outs.push({ dim: t.value, values });
  if (t.oneHot) {
    const { dims, lo } = t.oneHot;
    for (const v of values) {
      if (!Number.isInteger(v) || v < lo || v >= lo + dims.length) {
        throw new ChipcError('ffn.table-value', `${tag}: result ${v} is outside the one-hot field [${lo}, ${lo + dims.length})`);
      }
    }
    dims.forEach((dim, j) => outs.push({ dim, values: values.map((v) => (v === lo + j ? 1 : 0)) }));
  }
  if (!outs.length) throw new ChipcError('ffn.input', `${tag}: no output`);
  return outs;
}

/**
 * Any integer function of one integer input: target += f(x) (and/or the one-hot of f(x)), for
 * x ∈ [lo, hi]. Shared ramps RAMP_t with down weights c_t/A, c_t = f(t+1) − 2f(t) + f(t−1) (the
 * second difference; f extended flat or by zero below the range, or the mirror image from above,
 * whichever needs fewest units; a constant f(lo) comes from one LIN unit). At most span units
 * plus duplicates for down weights c_t/A that need more than 8 significant bits (split into
 * 8-bit parts). Preconditions: values integers within ±256; span ≤ 256 always satisfies the bf16
 * gate window (wider ranges only when f is constant far enough from one end); partial sums
 * Σ|c_t|·(hi − t) < 2^24 per output.
 */
export function table(x: IntInput, fn: (v: number) => number, target: TableTarget): FfnUnit[] {
  checkInput(x, 'table');
  const values = range(x).map(fn);
  return rampTable(x, tableOutputs(values, target, 'table'), 'table');
}

/**
 * A table of several inputs whose spans multiply to ≤ 256: idx = Σ stride_i·(x_i − lo_i)
 * (row-major, the last input has stride 1) is one integer form in [0, Π spans), and
 * table(idx, …) computes f. Larger 2-input domains: table2.
 */
export function tableN(inputs: IntInput[], fn: (...xs: number[]) => number, target: TableTarget): FfnUnit[] {
  if (!inputs.length) throw new ChipcError('ffn.input', 'tableN: no inputs');
  inputs.forEach((x, i) => checkInput(x, `tableN input ${i}`));
  const spans = inputs.map((x) => x.hi - x.lo + 1);
  const total = spans.reduce((p, s) => p * s, 1);
  if (total > VALUE_LIMIT) {
    throw new ChipcError('ffn.table-span', `tableN: input spans ${spans.join('×')} = ${total} exceed ${VALUE_LIMIT} (the bf16 gate window); use table2 for two inputs`);
  }
  let idxForm = constForm(0);
  let stride = 1;
  for (let i = inputs.length - 1; i >= 0; i--) {
    const x = inputs[i]!;
    idxForm = combine(1, idxForm, stride, x.form);
    idxForm.constant -= stride * x.lo;
    stride *= spans[i]!;
  }
  const decode = (idx: number): number[] => {
    const xs = new Array<number>(inputs.length);
    let r = idx;
    for (let i = inputs.length - 1; i >= 0; i--) {
      xs[i] = inputs[i]!.lo + (r % spans[i]!);
      r = Math.floor(r / spans[i]!);
    }
    return xs;
  };
  const idx = input(idxForm, 0, total - 1);
  return table(idx, (v) => fn(...decode(v)), target);
}

/** Gate-off margin of table2's second layer: a unit with one-hot bit 0 gets −A·512 on its gate. */
export const TABLE2_MARGIN = 2 * VALUE_LIMIT;

/**
 * f(a, b) over a two-input domain too large for tableN, in two FFN layers:
 *  layer 1: scratch[v − a.lo] += [a = v] (oneHot, span_a units);
 *  layer 2: for each value v of a, a ramp table of f(v, ·) over b whose gates carry
 *           −A·512·(1 − scratch_v) (off: gate ≤ −A·256 → −0; on: the plain ramp) and whose
 *           constant unit is a SWITCH on scratch_v; plus (clearScratch, default) one LIN unit per
 *           scratch dim that subtracts it, so the scratch slots end at 0.
 * Units: layer 1 ≤ span_a + 2; layer 2 ≤ Σ_v units(f(v, ·)) (+ span_a clears).
 * Preconditions: span_a ≤ 255 (one-hot window), every f(v, ·) meets table's bounds over b,
 * the scratch dims are 0 before layer 1. Returns [layer 1 units, layer 2 units].
 */
export function table2(
  a: IntInput, b: IntInput, fn: (a: number, b: number) => number, target: TableTarget, scratch: VDim[],
  opts: { clearScratch?: boolean } = {},
): [FfnUnit[], FfnUnit[]] {
  checkInput(a, 'table2 input a');
  checkInput(b, 'table2 input b');
  const as = range(a);
  if (scratch.length !== as.length) {
    throw new ChipcError('ffn.input', `table2: ${scratch.length} scratch dims for ${as.length} values of input a`);
  }
  const layer1 = oneHot(scratch, a, a.lo);
  const layer2: FfnUnit[] = [];
  const bs = range(b);
  as.forEach((v, j) => {
    const outs = tableOutputs(bs.map((w) => fn(v, w)), target, 'table2').filter((o) => o.values.some((x) => x !== 0));
    if (!outs.length) return;
    layer2.push(...rampTable(b, outs, 'table2', { bit: input(scratch[j]!, 0, 1), margin: TABLE2_MARGIN }));
  });
  if (opts.clearScratch ?? true) for (const d of scratch) layer2.push(...clear(d, { lo: 0, hi: 1 }));
  return [layer1, layer2];
}

// ---------------------------------------------------------------------------------------------
// Switches and bit logic

/**
 * out += k·s·u for a bit s. 1 unit: gate 2A·s − A (s = 1: 128, identity; s = 0: −128 → −0),
 * up u, down k/A. Preconditions: u integer within ±256, k·u within ±256.
 */
export function switchMul(out: VDim, s: BitInput, u: IntInput, k = 1): FfnUnit[] {
  checkK(k, 'switchMul');
  const sb = asBit(s, 'switchMul s');
  checkUp(u, 'switchMul up');
  checkOutRange(Math.min(0, k * u.lo, k * u.hi), Math.max(0, k * u.lo, k * u.hi), 'switchMul');
  return [switchUnit(sb, u, [{ dim: out, k }], 'switchMul')];
}

/** out += a·b for bits. 1 unit (SWITCH(a, b)). */
export function and(out: VDim, a: BitInput, b: BitInput): FfnUnit[] {
  return switchMul(out, a, asBit(b, 'and b'));
}

/** out += a ∨ b for bits: a table of a + b ∈ [0, 2] → (0, 1, 1): 2 units (1 − max(0, 1 − (a+b))). */
export function or(out: VDim, a: BitInput, b: BitInput): FfnUnit[] {
  return fnTable(out, plus(asBit(a, 'or a'), asBit(b, 'or b')), (v) => (v >= 1 ? 1 : 0), 'or');
}

/** out += a ⊕ b for bits: a table of a + b ∈ [0, 2] → (0, 1, 0): 2 units (RAMP_0 − 2·RAMP_1)/A. */
export function xor(out: VDim, a: BitInput, b: BitInput): FfnUnit[] {
  return fnTable(out, plus(asBit(a, 'xor a'), asBit(b, 'xor b')), (v) => (v === 1 ? 1 : 0), 'xor');
}

/** out += 1 − a for a bit. 1 unit (LIN with up 1 − a). */
export function not(out: VDim, a: BitInput): FfnUnit[] {
  const x = asBit(a, 'not a');
  const f = combine(-1, x.form);
  f.constant += 1;
  return [linUnit({ form: f, lo: 1 - x.hi, hi: 1 - x.lo }, [{ dim: out, k: 1 }], 'not')];
}

/**
 * out += s ? a : b = s·a + (1 − s)·b for a bit s. 2 units: SWITCH(s, a) and SWITCH(1 − s, b)
 * (gates 2A·s − A and A − 2A·s). At most one unit is non-zero, so the down sum is exact in any
 * order, and no up ever holds a − b: no third unit is needed when |a − b| > 256.
 * Preconditions: a, b integers within ±256.
 */
export function mux(out: VDim, s: BitInput, a: IntInput, b: IntInput): FfnUnit[] {
  const sb = asBit(s, 'mux s');
  checkOutRange(Math.min(a.lo, b.lo), Math.max(a.hi, b.hi), 'mux');
  const ns = combine(-1, sb.form);
  ns.constant += 1;
  return [
    switchUnit(sb, a, [{ dim: out, k: 1 }], 'mux'),
    switchUnit({ form: ns, lo: 1 - sb.hi, hi: 1 - sb.lo }, b, [{ dim: out, k: 1 }], 'mux'),
  ];
}

/**
 * Digit add with carry in base `base` ≤ 256: s = a + b + cin, outCarry += [s ≥ base],
 * outLo += s − base·[s ≥ base]. Units: LIN units for a, b, cin grouped so every up stays within
 * ±256 (1 unit for base ≤ 128, 2 for larger bases), plus the shared step ramps RAMP_{base−1}(s),
 * RAMP_base(s) writing (1, −1)/A to the carry and (−base, base)/A to the low digit: 3–4 units.
 * Preconditions: a, b ∈ [0, base − 1], cin ∈ {0, 1} (ranges given), base an integer in [2, 256].
 */
export function addWithCarry(outLo: VDim, outCarry: VDim, a: IntInput, b: IntInput, cin: BitInput, base: number): FfnUnit[] {
  if (!Number.isInteger(base) || base < 2 || base > VALUE_LIMIT) {
    throw new ChipcError('ffn.input', `addWithCarry: base ${base} must be an integer in [2, ${VALUE_LIMIT}]`);
  }
  const c = asBit(cin, 'addWithCarry cin');
  for (const [x, n] of [[a, 'a'], [b, 'b']] as const) {
    checkInput(x, `addWithCarry ${n}`);
    if (x.lo < 0 || x.hi > base - 1) {
      throw new ChipcError('ffn.input', `addWithCarry: ${n} range [${x.lo}, ${x.hi}] is not a base-${base} digit`);
    }
  }
  const s = plus(plus(a, b), c);
  const units = linGroups(outLo, [a, c, b].filter((x) => !(x.lo === 0 && x.hi === 0)), 'addWithCarry');
  const vals = range(s).map((v) => (v >= base ? 1 : 0));
  units.push(...rampTable(s, [
    { dim: outCarry, values: vals },
    { dim: outLo, values: vals.map((q) => -base * q) },
  ], 'addWithCarry'));
  return units;
}

// ---------------------------------------------------------------------------------------------
// Costs

export interface FfnCost {
  units: number;
  /** Non-zero down_proj weights (one per (unit, output dim)). */
  downNonZeros: number;
}

/** Unit count and down non-zeros of a list of units. */
export function ffnCost(units: FfnUnit[]): FfnCost {
  let nz = 0;
  for (const u of units) for (const o of u.down) if (o.weight !== 0) nz++;
  return { units: units.length, downNonZeros: nz };
}

/**
 * Collects the gadgets of one FFN layer with their costs (for the compiler's report) and checks
 * the down partial sums of output dims shared between gadgets: Σ |weight|·peak|silu·up| < 2^24.
 */
export class FfnBuilder {
  readonly units: FfnUnit[] = [];
  readonly gadgets: ({ name: string } & FfnCost)[] = [];

  add(name: string, units: FfnUnit[]): this {
    this.units.push(...units);
    this.gadgets.push({ name, ...ffnCost(units) });
    return this;
  }

  cost(): FfnCost {
    return ffnCost(this.units);
  }

  /** Throws ChipcError 'ffn.partial-sum' when some output dim's down sum could reach 2^24. */
  checkPartialSums(): void {
    const sums = new Map<VDim, number>();
    for (const u of this.units) {
      const peak = unitPeak.get(u);
      if (peak === undefined) throw new Error(`internal: FFN unit '${u.tag ?? '?'}' was not made by the gadget library`);
      for (const o of u.down) sums.set(o.dim, (sums.get(o.dim) ?? 0) + Math.abs(o.weight) * peak);
    }
    for (const [dim, s] of sums) {
      if (s >= EXACT_INT_LIMIT) {
        throw new ChipcError('ffn.partial-sum', `FFN output vdim ${dim}: down partial sums could reach ${s} ≥ 2^24`);
      }
    }
  }
}
