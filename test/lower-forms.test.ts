/**
 * combine (src/lower/forms.ts) against the map-based definition written here: each dim's
 * coefficient (0 + a·c_f) + b·c_g summed over its terms in order, zeros dropped, dims ascending.
 * The forms come with ascending dims (combine's merge) or in any order with repeats (its map),
 * with ±0, fractional and large coefficients; results are compared coefficient by coefficient as
 * bit patterns (Object.is: +0 and −0 differ).
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { combine, type Form, type Term } from '../src/lower/forms.ts';

function reference(a: number, f: Form, b: number, g: Form): Form {
  const m = new Map<number, number>();
  for (const t of f.terms) m.set(t.dim, (m.get(t.dim) ?? 0) + a * t.coef);
  for (const t of g.terms) m.set(t.dim, (m.get(t.dim) ?? 0) + b * t.coef);
  const terms = [...m.entries()].filter(([, c]) => c !== 0).map(([dim, coef]) => ({ dim, coef }));
  terms.sort((x, y) => x.dim - y.dim);
  return { terms, constant: a * f.constant + b * g.constant };
}

const arbCoef = fc.oneof(fc.integer({ min: -300, max: 300 }), fc.constantFrom(0, -0, 0.5, -1.25, 2 ** 40, -(2 ** 30)));
const arbTerms = fc.array(fc.record({ dim: fc.integer({ min: 0, max: 12 }), coef: arbCoef }), { maxLength: 8 });
/** Terms as given (any order, repeats) or made strictly ascending (the first of each dim kept). */
const arbForm = fc.tuple(arbTerms, fc.boolean(), fc.integer({ min: -50, max: 50 })).map(([terms, sorted, constant]): Form => {
  if (!sorted) return { terms, constant };
  const byDim = new Map<number, Term>();
  for (const t of terms) if (!byDim.has(t.dim)) byDim.set(t.dim, t);
  return { terms: [...byDim.values()].sort((x, y) => x.dim - y.dim), constant };
});

function same(x: Form, y: Form): boolean {
  return x.terms.length === y.terms.length && Object.is(x.constant, y.constant)
    && x.terms.every((t, i) => t.dim === y.terms[i]!.dim && Object.is(t.coef, y.terms[i]!.coef));
}

describe('combine', () => {
  it('a·f + b·g: the same terms and constant as the map-based definition, for sorted and unsorted forms', () => {
    fc.assert(fc.property(arbCoef, arbForm, arbCoef, arbForm, (a, f, b, g) => {
      const got = combine(a, f, b, g);
      const want = reference(a, f, b, g);
      if (!same(got, want)) expect(got).toEqual(want);
    }), { numRuns: 2000 });
  });

  it('merges shared dims, drops cancelled ones and leaves its inputs alone', () => {
    const f: Form = { terms: [{ dim: 1, coef: 2 }, { dim: 3, coef: 1 }, { dim: 7, coef: -4 }], constant: 5 };
    const g: Form = { terms: [{ dim: 0, coef: 1 }, { dim: 3, coef: -1 }, { dim: 7, coef: 1 }], constant: 1 };
    const fCopy = structuredClone(f);
    const got = combine(2, f, 2, g);
    expect(got).toEqual({ terms: [{ dim: 0, coef: 2 }, { dim: 1, coef: 4 }, { dim: 7, coef: -6 }], constant: 12 });
    expect(f).toEqual(fCopy);
    expect(got.terms).not.toBe(f.terms);
  });
});
