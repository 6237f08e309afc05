/**
 * The fast-check store workload shared by the model and firmware tests: a small pool of names so
 * overwrites, delete/re-insert and probe clusters are frequent — [0,62], [1,31] and [2,0] share a
 * fingerprint (31a + b + 32 = 94), so the name comparison must tell them apart — plus random,
 * empty, over-long and bad-token names, and contents up to and just past the maximum.
 * `oddTokens` adds token values that are not integers in 0 … 2^32 − 1 (the firmware's requests
 * map them to 2^32 − 1).
 */
import fc from 'fast-check';

export type StoreOp =
  | { op: 'put'; name: number[]; content: number[] }
  | { op: 'get'; name: number[] }
  | { op: 'delete'; name: number[] }
  | { op: 'list' };

export function storeWorkloadArbitrary(o: { N: number; M: number; V: number; oddTokens?: boolean }): fc.Arbitrary<StoreOp> {
  const pool: number[][] = [[0, 62], [1, 31], [2, 0], [5], [7], [3, 3, 3], Array.from({ length: o.N }, (_, i) => (i * 7) % o.V), Array.from({ length: o.N }, (_, i) => (i * 7 + 1) % o.V)];
  const token = fc.oneof(
    { weight: 24, arbitrary: fc.integer({ min: 0, max: o.V - 1 }) },
    { weight: 2, arbitrary: fc.integer({ min: o.V, max: o.V + 3 }) },
    ...(o.oddTokens ? [{ weight: 1, arbitrary: fc.constantFrom(-1, 1.5, 2 ** 32, 2 ** 32 + 5, Number.NaN) }] : []),
  );
  const name = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...pool) },
    { weight: 3, arbitrary: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: o.N }) },
    { weight: 1, arbitrary: fc.array(token, { minLength: 0, maxLength: o.N + 2 }) },
    { weight: 1, arbitrary: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: o.N - 1, maxLength: o.N + 2 }) },
  );
  const content = fc.oneof(
    { weight: 5, arbitrary: fc.array(fc.integer({ min: 0, max: o.V - 1 }), { maxLength: o.M }) },
    { weight: 1, arbitrary: fc.array(token, { maxLength: o.M }) },
    { weight: 1, arbitrary: fc.array(fc.integer({ min: 0, max: o.V - 1 }), { minLength: o.M - 1, maxLength: o.M + 2 }) },
  );
  return fc.oneof(
    { weight: 5, arbitrary: fc.record({ op: fc.constant('put' as const), name, content }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('get' as const), name }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('delete' as const), name }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('list' as const) }) },
  );
}
