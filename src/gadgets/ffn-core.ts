/**
 * FFN gadget core: the constants, integer inputs with ranges, the bound checks every gadget
 * shares, the three unit shapes (LIN, RAMP, SWITCH) and the shared-ramp engine that turns any
 * integer function of one integer input into ramps with second-difference down weights.
 *
 * A unit computes residual[out] += w·silu(gate)·up (forms.ts). Exactness (docs/numerics.md "FFN gadgets"),
 * in float32 and in the bf16 profile, in any summation order and with FMA:
 *  - RAMP_t(x) = silu(A·(x − t)) = A·max(0, x − t) for integer x, because A·m ≥ 128 > 16.64 is
 *    in silu's identity region for m ≥ 1, silu(0) = 0, and A·m ≤ −128 < −88.73 gives −0; A = 128
 *    is a power of two ≥ 89, so the down weight c/A is bf16-exact iff c has ≤ 8 significant bits.
 *    The unit takes up −1 and down −c/A: the same product, and an off unit's activation is +0.
 *  - LIN: silu(G)·up = 32·up (G = 32 ≥ 16.64), down k/32.
 *  - SWITCH: silu(2A·s − A)·up = s·A·up for a bit s (gate ±128), down k/A.
 * Bounds enforced (ChipcError otherwise): the positive side of every ramp gate is ≤ 256·A (bf16:
 * A·m is exact for integers m ≤ 256), every up value is an integer of magnitude ≤ 256, every gate
 * / up / down partial sum is an integer below 2^24 (exact in float32 whatever the order; FMA uses
 * the exact products, which are exact anyway), every down weight is bf16-exact (split over
 * duplicated units otherwise), every gadget output fits a slot (|value| ≤ 256).
 */
import { bf16Exact } from '../safetensors/dtype.ts';
import { ChipcError } from '../util/errors.ts';
import { SLOT_LIMIT } from '../lower/frame.ts';
import { combine, constForm, form, type FfnUnit, type Form, type IntInput, type Out, type RampOutput, type VDim } from '../lower/forms.ts';

// (IntInput and RampOutput live in lower/forms.ts, where lowered ops name them; the gadgets' importers still find them here.)
export type { IntInput, RampOutput } from '../lower/forms.ts';

/** Ramp scale: a power of two ≥ 89, so silu(−A) = −0 and c/A is exact for 8-bit c. */
export const RAMP_SCALE = 128;
/** LIN gate constant: silu(32) = 32 exactly. */
export const LIN_GATE = 32;
/** Largest exact positive ramp argument m (bf16: A·m exact for integers m ≤ 256) and largest |up|. */
export const VALUE_LIMIT = 256;
/** Float32 integers are exact below this magnitude. */
export const EXACT_INT_LIMIT = 2 ** 24;
/** Largest input domain the ramp engine enumerates. */
export const MAX_DOMAIN = 4096;

const A = RAMP_SCALE;
const G = LIN_GATE;

/** The form of one virtual dim. */
export function dimForm(d: VDim): Form {
  return form([{ dim: d, coef: 1 }], 0);
}

/** An input from a form or a vdim with its integer range [lo, hi]. */
export function input(x: Form | VDim, lo: number, hi: number): IntInput {
  return { form: typeof x === 'number' ? dimForm(x) : x, lo, hi };
}

function fail(code: string, msg: string): never {
  throw new ChipcError(code, msg);
}

/** Σ|coef|·SLOT_LIMIT + |constant|: a bound on |value| and on every float partial sum of the form. */
export function formMagnitude(f: Form): number {
  let m = Math.abs(f.constant);
  for (const t of f.terms) m += Math.abs(t.coef) * dimBound(t.dim);
  return m;
}

/**
 * The largest |value| a virtual dim holds. Default: the slot limit (any slot); the compiler
 * installs the dims' actual ranges while it lowers a circuit (`withDimBounds`), so forms over bits
 * are not charged 256 per term.
 */
let dimBound: (d: VDim) => number = () => SLOT_LIMIT;

/** Run `body` with the bounds of virtual dims known (restores the default afterwards). */
export function withDimBounds<T>(bound: (d: VDim) => number, body: () => T): T {
  const prev = dimBound;
  dimBound = (d) => Math.min(SLOT_LIMIT, bound(d));
  try {
    return body();
  } finally {
    dimBound = prev;
  }
}

/**
 * A bound on |every float partial sum| of an input's form: for one term c·v + k (v = (x − k)/c)
 * it is max(|lo − k|, |hi − k|) + |k| from the declared range; otherwise formMagnitude.
 */
export function partialBound(x: IntInput): number {
  if (x.form.terms.length <= 1) {
    const k = x.form.constant;
    return Math.max(Math.abs(x.lo - k), Math.abs(x.hi - k)) + Math.abs(k);
  }
  return formMagnitude(x.form);
}

/** Validate an input: integer coefficients and range, lo ≤ hi, range consistent with the form. */
export function checkInput(x: IntInput, what: string): void {
  if (!Number.isInteger(x.lo) || !Number.isInteger(x.hi) || x.lo > x.hi) {
    fail('ffn.input', `${what}: range [${x.lo}, ${x.hi}] is not an integer interval`);
  }
  for (const t of x.form.terms) {
    if (!Number.isInteger(t.coef)) fail('ffn.input', `${what}: coefficient ${t.coef} on vdim ${t.dim} is not an integer`);
    if (splitSignificand(t.coef).length > 1) {
      fail('ffn.weight', `${what}: coefficient ${t.coef} on vdim ${t.dim} has more than 8 significant bits (gate/up weights must be bf16-exact)`);
    }
    if (!Number.isInteger(t.dim) || t.dim < 0) fail('ffn.input', `${what}: bad vdim ${t.dim}`);
  }
  if (!Number.isInteger(x.form.constant)) fail('ffn.input', `${what}: constant ${x.form.constant} is not an integer`);
  const mag = formMagnitude(x.form);
  if (x.hi > mag || x.lo < -mag) {
    fail('ffn.input', `${what}: range [${x.lo}, ${x.hi}] exceeds what the form can take (±${mag} with slots ≤ ${SLOT_LIMIT})`);
  }
}

/** Check an up form: its range within ±256 (bf16: 8 significant bits) and exact partial sums. */
export function checkUp(x: IntInput, what: string): void {
  checkInput(x, what);
  if (x.lo < -VALUE_LIMIT || x.hi > VALUE_LIMIT) {
    fail('ffn.up-range', `${what}: up value range [${x.lo}, ${x.hi}] exceeds ±${VALUE_LIMIT} (bf16 up values must be integers of 8 significant bits)`);
  }
  if (partialBound(x) >= EXACT_INT_LIMIT) fail('ffn.up-range', `${what}: up partial sums may reach 2^24`);
}

/** Check that an output range fits a slot. */
export function checkOutRange(lo: number, hi: number, what: string): void {
  if (lo < -SLOT_LIMIT || hi > SLOT_LIMIT) {
    fail('ffn.out-range', `${what}: output range [${lo}, ${hi}] exceeds the slot limit ±${SLOT_LIMIT}`);
  }
}

/** Split an integer into parts of ≤ 8 significant bits each (top bits first); 0 → []. */
export function splitSignificand(c: number): number[] {
  if (!Number.isInteger(c)) throw new Error(`internal: splitSignificand(${c})`);
  const parts: number[] = [];
  for (let rest = c; rest !== 0; rest -= parts[parts.length - 1]!) parts.push(leadingPart(rest));
  return parts;
}

/** splitSignificand(c).length, without the parts. */
function significandParts(c: number): number {
  if (!Number.isInteger(c)) throw new Error(`internal: splitSignificand(${c})`);
  let n = 0;
  for (let rest = c; rest !== 0; rest -= leadingPart(rest)) n++;
  return n;
}

/** The top 8 significant bits of a non-zero integer (splitSignificand's next part). */
function leadingPart(rest: number): number {
  const e = Math.floor(Math.log2(Math.abs(rest)));
  const q = 2 ** Math.max(0, e - 7);
  return Math.trunc(rest / q) * q;
}

/** A down weight, checked bf16-exact. */
function downWeight(w: number, what: string): number {
  if (!Number.isFinite(w) || Math.fround(w) !== w || !bf16Exact(w)) {
    fail('ffn.down-weight', `${what}: down weight ${w} is not exactly representable in bf16`);
  }
  return w;
}

/** Largest |silu(gate)·up| of each unit, for partial-sum checks across gadgets (FfnBuilder). */
export const unitPeak = new WeakMap<FfnUnit, number>();

function mkUnit(gate: Form, up: Form, down: Out[], peak: number, tag: string): FfnUnit {
  const u: FfnUnit = { gate, up, down, tag };
  unitPeak.set(u, peak);
  return u;
}

/** LIN unit: Σ_k outs[k].weight·x with gate G, up x, down weight/32 (weights must make bf16-exact downs). */
export function linUnit(x: IntInput, outs: { dim: VDim; k: number }[], tag: string): FfnUnit {
  checkUp(x, tag);
  const down = outs.map((o) => ({ dim: o.dim, weight: downWeight(o.k / G, tag) }));
  return mkUnit(constForm(G), x.form, down, G * Math.max(Math.abs(x.lo), Math.abs(x.hi)), tag);
}

/** SWITCH unit: outs += k·s·u for a bit s: gate 2A·s − A (±128), up u, down k/A. */
export function switchUnit(s: IntInput, u: IntInput, outs: { dim: VDim; k: number }[], tag: string): FfnUnit {
  checkInput(s, `${tag} switch`);
  if (s.lo < 0 || s.hi > 1) fail('ffn.switch-bit', `${tag}: switch input range [${s.lo}, ${s.hi}] is not within {0, 1}`);
  checkUp(u, `${tag} up`);
  const gate = combine(2 * A, s.form, 0, constForm(0));
  gate.constant -= A;
  if (A * (2 * partialBound(s) + 1) >= EXACT_INT_LIMIT) fail('ffn.gate-range', `${tag}: switch gate partial sums may reach 2^24`);
  const down = outs.map((o) => ({ dim: o.dim, weight: downWeight(o.k / A, tag) }));
  return mkUnit(gate, u.form, down, A * Math.max(Math.abs(u.lo), Math.abs(u.hi)), tag);
}

// ---------------------------------------------------------------------------------------------
// The shared-ramp engine

/**
 * An optional gate-off term for every unit of a table: gate += −A·margin·(1 − bit) (ramps) or the
 * constant unit becomes a SWITCH on `bit` (table2's second layer).
 */
export interface GateOff {
  bit: IntInput;
  margin: number;
}

interface RampPlanUnit {
  /** 'const': a constant unit (LIN, or SWITCH on gateOff.bit); 'ramp': dir·(x − t) ramp. */
  kind: 'const' | 'ramp';
  dir: 1 | -1;
  t: number;
  /** Largest positive ramp argument over the input range (1 for const). */
  mMax: number;
  /** Per-output coefficient (integer): value contribution c·max(0, dir·(x − t)) or c for const. */
  coefs: { dim: VDim; c: number }[];
}

/** A representation of a ramp table; `cost` is the number of units buildRampTable makes from it. */
export interface RampPlan {
  units: RampPlanUnit[];
  cost: number;
  /** Largest per-output bound on |partial sums| (Σ|c|·mMax). */
  peakSum: number;
  error: { code: string; msg: string } | null;
}

/** One output's coefficient at a ramp step: its dim and the values' second difference there. */
interface RampCoef {
  dim: VDim;
  c: number;
}

/**
 * The outputs' bends past the first two steps, shared by the four representations. Step j
 * (2 ≤ j < n) of the ramps opening up reads F(j), F(j − 1), F(j − 2); the ramps opening down
 * read the same three values in reverse at their step n + 1 − j, so both have the second
 * difference D(j) = F(j) − 2F(j − 1) + F(j − 2) there (the values are integers far below 2^53: the
 * order of the sum does not change it), and the extension below the range (zeros or a constant
 * unit) reaches only the first two steps.
 */
interface RampBends {
  /** The steps j, ascending, where some output's D(j) ≠ 0. */
  at: number[];
  /** Each such step's non-zero coefficients, in the outputs' order. */
  coefs: RampCoef[][];
  /** The units those steps cost: per step, the most parts of one of its coefficients' splits. */
  copies: number;
  /**
   * Per output, Σ |c|·mMax over those steps for the ramps opening up (mMax n − j) and down
   * (mMax j − 1): the steps' part of a representation's partial-sum bound. (Integer sums, exact
   * and so the same in any order: |c| ≤ 4·256, mMax and the step count ≤ MAX_DOMAIN, below 2^35.)
   */
  upSums: Float64Array;
  downSums: Float64Array;
}

function rampBends(outs: readonly RampOutput[], n: number): RampBends {
  const at: number[] = [];
  const coefs: RampCoef[][] = [];
  let copies = 0;
  const m = outs.length;
  const upSums = new Float64Array(m);
  const downSums = new Float64Array(m);
  for (let j = 2; j < n; j++) {
    // (a loop, not map + filter: this runs for every index of every table in every input order
    // planned, and the objects of the zero differences were much of the compile's garbage)
    let cs: RampCoef[] | null = null;
    let most = 0;
    for (let k = 0; k < m; k++) {
      const v = outs[k]!.values;
      const c = v[j]! - 2 * v[j - 1]! + v[j - 2]!;
      if (c === 0) continue;
      (cs ??= []).push({ dim: outs[k]!.dim, c });
      most = Math.max(most, significandParts(c));
      upSums[k] += Math.abs(c) * (n - j);
      downSums[k] += Math.abs(c) * (j - 1);
    }
    if (cs === null) continue;
    at.push(j);
    coefs.push(cs);
    copies += most;
  }
  return { at, coefs, copies, upSums, downSums };
}

/**
 * Plan for values F(i) (i = 0…n−1) of ramps opening in direction dir over the input range.
 * withConst: F(0) from a constant unit and ramps t = lo+j (j = 0…n−2) with the flat extension
 * F(−1) = F(0); otherwise zero extension F(−1) = F(−2) = 0 and ramps t = lo−1+j (j = 0…n−1).
 * For dir = −1 the same is done on y = −x (values reversed), whose ramps max(0, y − t') are
 * max(0, −t' − x): recorded as dir −1 with t = −t'. The steps past the first two are `bends`
 * (rampBends of the same outputs).
 */
function planDirection(x: IntInput, outs: RampOutput[], dir: 1 | -1, withConst: boolean, bends: RampBends): RampPlan {
  const n = x.hi - x.lo + 1;
  const ylo = dir === 1 ? x.lo : -x.hi;
  const units: RampPlanUnit[] = [];
  let error: RampPlan['error'] = null;
  let cost = 0;
  // F(v, i): an output's value at step i of the direction (the values reversed for dir −1, read in
  // place), extended below 0 flat (a constant unit) or by zeros
  const last = n - 1;
  const F = (v: number[], i: number): number => {
    if (i < 0) i = withConst ? 0 : -1;
    if (i < 0) return 0;
    return dir === 1 ? v[i]! : v[last - i]!;
  };
  const copiesOf = (coefs: readonly RampCoef[]): number => {
    let most = 0;
    for (const c of coefs) most = Math.max(most, significandParts(c.c));
    return most;
  };
  // the ramp at y-threshold ylo + i − 1 (step i), whose argument reaches n − i
  const ramp = (i: number, coefs: RampCoef[]): void => {
    const ty = ylo + i - 1;
    const mMax = n - i; // y_hi − ty
    if (mMax > VALUE_LIMIT && error === null) {
      error = { code: 'ffn.gate-range', msg: `a ramp would need a positive gate argument of ${mMax} > ${VALUE_LIMIT} (bf16 gate window |form − t| + 1 ≤ 256)` };
    }
    units.push({ kind: 'ramp', dir, t: dir === 1 ? ty : -ty, mMax, coefs });
  };
  // each output's partial-sum bound: the steps past the first two, then the units before them
  const sums = Float64Array.from(dir === 1 ? bends.upSums : bends.downSums);
  if (withConst) {
    // the constant unit: F(0) (its argument is 1)
    const coefs: RampCoef[] = [];
    for (let k = 0; k < outs.length; k++) {
      const c = F(outs[k]!.values, 0);
      if (c === 0) continue;
      coefs.push({ dim: outs[k]!.dim, c });
      sums[k] += Math.abs(c);
    }
    if (coefs.length) {
      units.push({ kind: 'const', dir, t: 0, mMax: 1, coefs });
      cost += copiesOf(coefs);
    }
  }
  // the first two steps, where the extension enters: c = F(i) − 2F(i−1) + F(i−2)
  for (let i = withConst ? 1 : 0; i < Math.min(n, 2); i++) {
    const coefs: RampCoef[] = [];
    for (let k = 0; k < outs.length; k++) {
      const v = outs[k]!.values;
      const c = F(v, i) - 2 * F(v, i - 1) + F(v, i - 2);
      if (c === 0) continue;
      coefs.push({ dim: outs[k]!.dim, c });
      sums[k] += Math.abs(c) * (n - i);
    }
    if (coefs.length === 0) continue;
    ramp(i, coefs);
    cost += copiesOf(coefs);
  }
  // the steps past them, ascending (bend j is step n + 1 − j of the ramps opening down)
  const nb = bends.at.length;
  for (let b = 0; b < nb; b++) {
    const t = dir === 1 ? b : nb - 1 - b;
    ramp(dir === 1 ? bends.at[t]! : last + 2 - bends.at[t]!, bends.coefs[t]!);
  }
  cost += bends.copies;
  // per dim (outputs may share one), the largest bound
  let peakSum = 0;
  const byDim = new Map<VDim, number>();
  for (let k = 0; k < outs.length; k++) {
    const dim = outs[k]!.dim;
    const sum = (byDim.get(dim) ?? 0) + sums[k]!;
    byDim.set(dim, sum);
    if (sum > peakSum) peakSum = sum;
  }
  if (peakSum >= EXACT_INT_LIMIT && error === null) {
    error = { code: 'ffn.partial-sum', msg: `down partial sums could reach ${peakSum} ≥ 2^24` };
  }
  return { units, cost, peakSum, error };
}

/**
 * A lower bound on the units rampTable(x, outs) builds, from the values alone (no forms, no units):
 * every representation it tries has a unit per index where some output's second difference is
 * non-zero (and one constant unit when it uses one and some F(0) ≠ 0), and a unit may be copied
 * (a weight split over several units) but never dropped — so the units it returns are at least the
 * smallest of these counts over the four representations. cheapestTableOrder uses it to skip
 * input orders that cannot beat the best one found.
 */
export function rampUnitsLowerBound(outs: readonly { values: readonly number[] }[]): number {
  const n = outs[0]?.values.length ?? 0;
  if (n === 0) return 0;
  const last = n - 1;
  // Whether some output is non-zero at position i, or some output's value there minus `m` times
  // its value at position j is (the boundary steps' second differences, whose missing terms are
  // the extension: 0, or F(0) with a constant unit).
  const someNonZero = (i: number, j: number, m: number): number => {
    for (const o of outs) if (o.values[i]! - m * (j < 0 ? 0 : o.values[j]!) !== 0) return 1;
    return 0;
  };
  // The steps past the first two read three values inside the range, and the two directions read
  // the same triples (reversed): one count serves all four representations. (The values are
  // integers far below 2^53, so the order of the sum does not matter.)
  let inner = 0;
  for (let j = 2; j < n; j++) {
    for (const o of outs) {
      const v = o.values;
      if (v[j]! - 2 * v[j - 1]! + v[j - 2]! !== 0) { inner++; break; }
    }
  }
  const up = someNonZero(0, -1, 0);
  const down = someNonZero(last, -1, 0);
  const second = n >= 2;
  // ramps opening up: F(0) and F(1) − 2F(0) with zero extension; a constant unit for F(0) and
  // F(1) − F(0) with it (likewise from the top for ramps opening down)
  const upZero = up + (second ? someNonZero(1, 0, 2) : 0) + inner;
  const upConst = up + (second ? someNonZero(1, 0, 1) : 0) + inner;
  const downZero = down + (second ? someNonZero(last - 1, last, 2) : 0) + inner;
  const downConst = down + (second ? someNonZero(last - 1, last, 1) : 0) + inner;
  return Math.min(upZero, upConst, downZero, downConst);
}

/**
 * Units computing, for every output k, dim_k += values_k[x − lo] for integer x in [lo, hi], from
 * shared ramps RAMP_t(x) = A·max(0, ±(x − t)) with down weights c_t/A where c_t is the second
 * difference of the values (plus possibly one constant unit). Four representations are tried
 * (ramps opening up or down; zero extension or a constant unit) and the one with the fewest units
 * that satisfies every bound is chosen (ties: smaller partial sums, then the fixed order).
 * A down weight c/A with more than 8 significant bits is split over duplicated units.
 */
export function rampTable(x: IntInput, outs: RampOutput[], tag: string, gateOff?: GateOff): FfnUnit[] {
  return buildRampTable(x, planRampTable(x, outs, tag), tag, gateOff);
}

/**
 * rampTable's checks of its input and values and its choice of representation, throwing as it
 * does; the plan's `cost` is the number of units rampTable builds from it (buildRampTable can still
 * fail a unit's own bound). Input orders are compared by this count (passes/table-order.ts), so
 * the units of the orders that lose are never built.
 */
export function planRampTable(x: IntInput, outs: RampOutput[], tag: string): RampPlan {
  checkInput(x, tag);
  const n = x.hi - x.lo + 1;
  if (n > MAX_DOMAIN) fail('ffn.domain', `${tag}: input range [${x.lo}, ${x.hi}] has ${n} values (at most ${MAX_DOMAIN})`);
  for (const o of outs) {
    if (o.values.length !== n) throw new Error(`internal: ${tag}: ${o.values.length} values for ${n} inputs`);
    let lo = Infinity;
    let hi = -Infinity;
    for (const v of o.values) {
      if (!Number.isInteger(v)) fail('ffn.table-value', `${tag}: value ${v} is not an integer`);
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    checkOutRange(lo, hi, tag);
  }
  const bends = rampBends(outs, n);
  const plans = [
    planDirection(x, outs, 1, false, bends),
    planDirection(x, outs, 1, true, bends),
    planDirection(x, outs, -1, false, bends),
    planDirection(x, outs, -1, true, bends),
  ];
  const ok = plans.filter((p) => p.error === null);
  if (!ok.length) {
    const e = plans.find((p) => p.error!.code === 'ffn.partial-sum')?.error ?? plans[0]!.error!;
    fail(e.code, `${tag}: no exact ramp construction over [${x.lo}, ${x.hi}]: ${e.msg}`);
  }
  ok.sort((p, q) => p.cost - q.cost || p.peakSum - q.peakSum);
  return ok[0]!;
}

/** rampTable's units from its plan (planRampTable of the same x). */
export function buildRampTable(x: IntInput, plan: RampPlan, tag: string, gateOff?: GateOff): FfnUnit[] {
  const units: FfnUnit[] = [];
  for (const pu of plan.units) {
    const chunks = pu.coefs.map((c) => ({ dim: c.dim, parts: splitSignificand(c.c) }));
    const copies = Math.max(...chunks.map((c) => c.parts.length));
    for (let j = 0; j < copies; j++) {
      const outsJ = chunks.filter((c) => c.parts.length > j).map((c) => ({ dim: c.dim, k: c.parts[j]! }));
      if (pu.kind === 'const') {
        if (gateOff) {
          units.push(switchUnit(gateOff.bit, input(constForm(1), 1, 1), outsJ, tag));
        } else {
          units.push(linUnit(input(constForm(1), 1, 1), outsJ, tag));
        }
        continue;
      }
      units.push(rampUnit(x, pu.dir, pu.t, pu.mMax, outsJ, tag, gateOff));
    }
  }
  return units;
}

/**
 * RAMP unit: outs += k·max(0, dir·(x − t)) via gate A·dir·(x − t) [− A·margin·(1 − bit)], up −1,
 * down −k/A. mMax is the largest positive dir·(x − t) over the range (checked ≤ 256 by callers).
 */
export function rampUnit(
  x: IntInput, dir: 1 | -1, t: number, mMax: number, outs: { dim: VDim; k: number }[], tag: string, gateOff?: GateOff,
): FfnUnit {
  if (mMax > VALUE_LIMIT) fail('ffn.gate-range', `${tag}: ramp gate argument reaches ${mMax} > ${VALUE_LIMIT} (bf16 gate window)`);
  const gate = combine(A * dir, x.form);
  gate.constant -= A * dir * t;
  let gateForm = gate;
  if (gateOff) {
    if (gateOff.bit.lo < 0 || gateOff.bit.hi > 1) fail('ffn.switch-bit', `${tag}: gate-off input is not a bit`);
    if (gateOff.margin < mMax + 1) throw new Error(`internal: ${tag}: gate-off margin ${gateOff.margin} ≤ ${mMax}`);
    gateForm = combine(1, gate, A * gateOff.margin, gateOff.bit.form);
    gateForm.constant -= A * gateOff.margin;
  }
  // f32 gate partial sums (content terms and the constant) must stay below 2^24.
  const bound = A * (partialBound(x) + Math.abs(t)) + (gateOff ? A * gateOff.margin * (partialBound(gateOff.bit) + 1) : 0);
  if (bound >= EXACT_INT_LIMIT) {
    fail('ffn.gate-range', `${tag}: ramp gate partial sums may reach 2^24 (form too large for A = ${A})`);
  }
  // up −1, down −k/A: an unit that is off gives silu(gate)·(−1) = (−0)·(−1) = +0, not −0, so the
  // hidden units whose sign bit is set are the few that are on (the sparse decode's scatter form
  // needs fewer of those than a down row has entries: exec/matmul.ts, exec/delta.ts)
  const down = outs.map((o) => ({ dim: o.dim, weight: downWeight(-o.k / A, tag) }));
  return mkUnit(gateForm, constForm(-1), down, A * Math.max(1, mMax), tag);
}
