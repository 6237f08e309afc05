/**
 * Random single recurrent steps of one GDN value head (state S, q, k, v, g, β) for the property
 * tests of gdn-sparse-step.ts recurrentStepSparse and its wasm kernels: states of +0 only, of
 * mixed values with −0, tiny, huge and non-finite entries, free of sign bits (as pinned RAM heads
 * hold) or with negative entries; keys all ±0, one-hot, or arbitrary; decays from none to −∞.
 */
import fc from 'fast-check';

const stateVal = fc.oneof(
  { weight: 6, arbitrary: fc.constant(0) },
  { weight: 2, arbitrary: fc.constantFrom(-0, 1, -1, 0.5, -3, 2 ** -100, -(2 ** -100)) },
  { weight: 1, arbitrary: fc.constantFrom(Infinity, -Infinity, NaN, 3e38, -3e38) },
);
const vecVal = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(0, -0) },
  { weight: 3, arbitrary: fc.constantFrom(1, -1, 0.25, -0.5, 2 ** -80, -(2 ** -80), 7) },
  { weight: 1, arbitrary: fc.constantFrom(Infinity, NaN, 3e38) },
);

export interface GdnStepCase { dk: number; dv: number; S: number[]; q: number[]; k: number[]; v: number[]; g: number; beta: number }

/** A step of a head whose dimensions `dims` draws. */
export function gdnStepCase(dims: fc.Arbitrary<{ dk: number; dv: number }>): fc.Arbitrary<GdnStepCase> {
  return dims.chain(({ dk, dv }) => fc.record({
    dk: fc.constant(dk),
    dv: fc.constant(dv),
    S: fc.oneof(
      fc.constant(new Array<number>(dk * dv).fill(0)),
      fc.array(stateVal, { minLength: dk * dv, maxLength: dk * dv }),
      fc.array(fc.constantFrom(0, 0, 0, 1, 0.5, 181), { minLength: dk * dv, maxLength: dk * dv }),
      fc.array(fc.constantFrom(0, 0, 0, 1, -0.5, 181), { minLength: dk * dv, maxLength: dk * dv }),
    ),
    q: fc.array(vecVal, { minLength: dk, maxLength: dk }),
    k: fc.oneof(
      fc.array(fc.constantFrom(0, -0), { minLength: dk, maxLength: dk }),
      fc.tuple(fc.integer({ min: 0, max: dk - 1 }), fc.constantFrom(1, -1, 0.5, 2 ** -120))
        .map(([i, x]) => Array.from({ length: dk }, (_, j) => (j === i ? x : (j & 1 ? -0 : 0)))),
      fc.array(vecVal, { minLength: dk, maxLength: dk }),
    ),
    v: fc.array(vecVal, { minLength: dv, maxLength: dv }),
    g: fc.constantFrom(-0, 0, -1, -0.001, -200, -Infinity, NaN),
    beta: fc.constantFrom(0, 1, 0.5, Infinity),
  }));
}
