/**
 * docs/numerics.md "The whole-vector RMSNorm" through the real executor: the whole-vector RMSNorm anchor recipe makes
 * the norm factor an exact power of two when the non-anchor energy is under the bound
 * 2^(⌊log2 min a_i²⌋ − 24), in any summation order; above it some order breaks it. The probe is
 * the marker column of a pinned GDN row: it is (M / c)·(anchor·factor), equal to M = 2^40 only if
 * the factor is the exact power of two the weights assume.
 */
import { describe, expect, it } from 'vitest';
import { Executor } from '../src/exec/executor.ts';
import type { ExecOptions } from '../src/exec/types.ts';
import { MARKER, PinnedGdnModel, type PinnedGdnOptions } from './helpers/pinned-gdn.ts';

/** Writes `data` to row 0 in one decode step; true when the stored marker column is exactly M. */
function markerExact(opts: PinnedGdnOptions, data: number[], exec: ExecOptions): boolean {
  const m = new PinnedGdnModel(opts);
  const noop = m.token({});
  const id = m.token({ write: { addr: 0, data } });
  const ex = new Executor(m.weights(), exec);
  ex.prefill([noop]);
  ex.decode(id);
  return ex.gdnState(0, 0)[0] === MARKER;
}

const SEEDS = Array.from({ length: 12 }, (_, i) => i + 1);
const orders = (): ExecOptions[] => [
  {}, { order: { kind: 'fma' } }, { meanMode: 'mulrecip' },
  ...SEEDS.map((seed) => ({ order: { kind: 'shuffled' as const, seed } })),
];

describe('5. RMSNorm anchors make the norm factor an exact power of two (rest under the bound)', () => {
  it('H = 64 = 4^3, one anchor 2^40 (bound 2^56): byte-ish content, every order and mean mode', () => {
    for (const exec of orders()) expect(markerExact({}, [255, 200, 1000, 7, 0, 3], exec)).toBe(true);
  });
  it('H = 160 = 10·4^2 (2560-like: h = 10 = 3² + 1²), anchors [3·2^20, 2^20], rest 3·90² + … ≤ 2^16', () => {
    const opts: PinnedGdnOptions = { H: 160, anchorValues: [3 * 2 ** 20, 2 ** 20], constAnchor: 1 };
    // rest = 90² + 90² + 90² + 50² + 1 (wen) + 1 (ben) = 26,802 ≤ 2^16
    for (const exec of orders()) expect(markerExact(opts, [90, 90, 90, 50, 0, 0], exec)).toBe(true);
  });
  it('above the bound: one anchor 2^12 (bound 2^0 = 1), rest 8 ones: exact in index order, broken in some shuffled order', () => {
    const opts: PinnedGdnOptions = { anchorValues: [2 ** 12] };
    const data = [1, 1, 1, 1, 1, 1]; // + wen + ben = 8 ones
    expect(markerExact(opts, data, {})).toBe(true); // anchor first: each 1 is absorbed by 2^24
    const shuffled = SEEDS.map((seed) => markerExact(opts, data, { order: { kind: 'shuffled', seed } }));
    expect(shuffled.some((ok) => !ok)).toBe(true);
    // Under the bound (anchor 2^14: bound 2^4 = 16 ≥ 8) every order is exact.
    const ok = SEEDS.every((seed) => markerExact({ anchorValues: [2 ** 14] }, data, { order: { kind: 'shuffled', seed } }));
    expect(ok).toBe(true);
  });
});
