/**
 * planRampTable (src/gadgets/ffn-core.ts) against its definition: each of the four representations
 * (ramps opening up or down; zero extension or a constant unit) walks every step of the values in
 * its own direction, taking the second difference F(i) − 2F(i−1) + F(i−2) with its own extension,
 * and the cheapest representation that meets every bound wins (ties: smaller partial sums, then
 * the fixed order). planRampTable reads the steps past the first two once for all four; here every
 * representation reads every step itself. The chosen plan must be the same, field for field
 * (thresholds compared with Object.is), or the same error.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { EXACT_INT_LIMIT, input, planRampTable, splitSignificand, VALUE_LIMIT, type RampPlan } from '../src/gadgets/ffn-core.ts';
import { form, type RampOutput } from '../src/lower/forms.ts';
import { ChipcError } from '../src/util/errors.ts';

/** One representation, every step read in its own direction (the definition). */
function planByDefinition(lo: number, hi: number, outs: RampOutput[], dir: 1 | -1, withConst: boolean): RampPlan {
  const n = hi - lo + 1;
  const F = (v: number[], i: number): number => {
    if (i < 0) return withConst ? F(v, 0) : 0;
    return dir === 1 ? v[i]! : v[n - 1 - i]!;
  };
  const units: RampPlan['units'] = [];
  let error: RampPlan['error'] = null;
  if (withConst) {
    const coefs = outs.map((o) => ({ dim: o.dim, c: F(o.values, 0) })).filter((c) => c.c !== 0);
    if (coefs.length) units.push({ kind: 'const', dir, t: 0, mMax: 1, coefs });
  }
  for (let i = withConst ? 1 : 0; i < n; i++) {
    const coefs = outs
      .map((o) => ({ dim: o.dim, c: F(o.values, i) - 2 * F(o.values, i - 1) + F(o.values, i - 2) }))
      .filter((c) => c.c !== 0);
    if (!coefs.length) continue;
    const ty = (dir === 1 ? lo : -hi) + i - 1;
    const mMax = n - i;
    if (mMax > VALUE_LIMIT && error === null) {
      error = { code: 'ffn.gate-range', msg: `a ramp would need a positive gate argument of ${mMax} > ${VALUE_LIMIT} (bf16 gate window |form − t| + 1 ≤ 256)` };
    }
    units.push({ kind: 'ramp', dir, t: dir === 1 ? ty : -ty, mMax, coefs });
  }
  const cost = units.reduce((s, u) => s + Math.max(...u.coefs.map((c) => splitSignificand(c.c).length)), 0);
  const sums = new Map<number, number>();
  for (const u of units) for (const c of u.coefs) sums.set(c.dim, (sums.get(c.dim) ?? 0) + Math.abs(c.c) * u.mMax);
  const peakSum = Math.max(0, ...sums.values());
  if (peakSum >= EXACT_INT_LIMIT && error === null) error = { code: 'ffn.partial-sum', msg: `down partial sums could reach ${peakSum} ≥ 2^24` };
  return { units, cost, peakSum, error };
}

/** planRampTable's result by the definition: the plan, or the error it throws. */
function chooseByDefinition(lo: number, hi: number, outs: RampOutput[], tag: string): RampPlan | { code: string; message: string } {
  const plans = [
    planByDefinition(lo, hi, outs, 1, false),
    planByDefinition(lo, hi, outs, 1, true),
    planByDefinition(lo, hi, outs, -1, false),
    planByDefinition(lo, hi, outs, -1, true),
  ];
  const ok = plans.filter((p) => p.error === null);
  if (!ok.length) {
    const e = plans.find((p) => p.error!.code === 'ffn.partial-sum')?.error ?? plans[0]!.error!;
    return { code: e.code, message: `${tag}: no exact ramp construction over [${lo}, ${hi}]: ${e.msg}` };
  }
  return ok.sort((p, q) => p.cost - q.cost || p.peakSum - q.peakSum)[0]!;
}

/** The input: 2·d0 + d1 (a form that can take ±768, so ranges past 256 values are valid). */
const wide = (lo: number, hi: number) => input(form([{ dim: 0, coef: 2 }, { dim: 1, coef: 1 }]), lo, hi);

function planOrError(lo: number, hi: number, outs: RampOutput[], tag: string): RampPlan | { code: string; message: string } {
  try {
    return planRampTable(wide(lo, hi), outs, tag);
  } catch (e) {
    if (!(e instanceof ChipcError)) throw e;
    return { code: e.code, message: e.message };
  }
}

/** The plan with every number as a string that keeps the sign of zero (toEqual would not tell −0 from +0). */
function exact(p: RampPlan | { code: string; message: string }): unknown {
  return JSON.parse(JSON.stringify(p, (_k, v: unknown) => (typeof v === 'number' ? (Object.is(v, -0) ? '-0' : String(v)) : v)));
}

/** Tables whose values bend a few times or everywhere, with outputs that may share a dim. */
const tablesOf = (nMin: number, nMax: number) => fc.record({
  lo: fc.integer({ min: -40, max: 40 }),
  n: fc.integer({ min: nMin, max: nMax }),
  outs: fc.array(fc.record({ dim: fc.integer({ min: 1, max: 4 }), seed: fc.integer(), kind: fc.constantFrom('steps', 'noise', 'flat') }), { minLength: 1, maxLength: 4 }),
}).map(({ lo, n, outs }) => ({
  lo,
  hi: lo + n - 1,
  outs: outs.map(({ dim, seed, kind }) => {
    let s = seed | 0;
    const next = (): number => { s = (Math.imul(s, 1103515245) + 12345) | 0; return (s >>> 8) % 513 - 256; };
    const values: number[] = [];
    let v = next();
    for (let i = 0; i < n; i++) {
      if (kind === 'noise' || (kind === 'steps' && next() > 200)) v = next();
      values.push(kind === 'flat' ? 0 : v);
    }
    return { dim, values };
  }),
}));
const tables = tablesOf(1, 40);

describe('planRampTable', () => {
  it('chooses the plan the four representations give when each reads every step itself', () => {
    fc.assert(fc.property(tables, ({ lo, hi, outs }) => {
      expect(exact(planOrError(lo, hi, outs, 'prop'))).toEqual(exact(chooseByDefinition(lo, hi, outs, 'prop')));
    }), { numRuns: 1500, seed: 2812 });
  });

  it('the same over 200–300 values, where gate-range and partial-sum errors decide', () => {
    let failed = 0;
    fc.assert(fc.property(tablesOf(200, 300), ({ lo, hi, outs }) => {
      const want = chooseByDefinition(lo, hi, outs, 'wide');
      if ('code' in want) failed++;
      expect(exact(planOrError(lo, hi, outs, 'wide'))).toEqual(exact(want));
    }), { numRuns: 200, seed: 2813 });
    expect(failed).toBeGreaterThan(20); // the errors are compared, not only the plans
  });

  it('a bend past the bf16 gate window fails, and a representation that keeps it inside wins', () => {
    // one step at the top of a 300-value range: ramps opening up reach it with argument 299 − 299
    // + 1, ramps opening down from the far end need 300 − 1 (over 256)
    const n = 300;
    const up = { dim: 1, values: Array.from({ length: n }, (_, i) => (i >= n - 2 ? 5 : 0)) };
    const p = planRampTable(wide(0, n - 1), [up], 'edge');
    expect(exact(p)).toEqual(exact(chooseByDefinition(0, n - 1, [up], 'edge')));
    expect(p.units.every((u) => u.mMax <= VALUE_LIMIT)).toBe(true);
    // bends at both ends: every representation needs a ramp over more than 256 values
    const both = { dim: 1, values: Array.from({ length: n }, (_, i) => (i === 0 || i === n - 1 ? 3 : 0)) };
    expect(planOrError(0, n - 1, [both], 'edge')).toEqual(chooseByDefinition(0, n - 1, [both], 'edge'));
    expect(planOrError(0, n - 1, [both], 'edge')).toMatchObject({ code: 'ffn.gate-range' });
  });

  it('second differences that need several bf16 parts cost a unit per part', () => {
    const outs = [{ dim: 2, values: [0, 255, -255, 255, 0, 1] }, { dim: 3, values: [7, 7, 7, 0, 0, 0] }];
    const p = planRampTable(wide(-2, 3), outs, 'split');
    expect(exact(p)).toEqual(exact(chooseByDefinition(-2, 3, outs, 'split')));
    expect(p.cost).toBeGreaterThan(p.units.length);
  });
});
