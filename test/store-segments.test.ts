/**
 * The store workload in segments (src/store/segments.ts, bench/store-chip-full.ts): segments run
 * one after another add up to the continuous run (same answers, tokens and end rows); a segment
 * through the weights starts from an imported state; a wrong start state is caught at the end.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { CHIP_STORE_SMALL, ChipStore, storeMemBytes } from '../src/store/chip.ts';
import { StoreModel, resolveStoreParams } from '../src/store/model.ts';
import { modelAfter, runSegment, segmentPlan, segmentRange } from '../src/store/segments.ts';
import { asFirmwareAnswer, rowsFromModel } from '../src/store/firmware.ts';
import { applyRequest } from '../src/store/workload.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { ChipcError } from '../src/util/errors.ts';
import type { ChipModel } from '../src/chip/loaded.ts';
import { sharedChip } from './helpers/shared-chips.ts';

const SMALL = resolveStoreParams(CHIP_STORE_SMALL);
const TARGET = resolveTarget('chip-test').config;

// The small store's chip (the test run's shared chip, from its chip cache) for the weights; the IR
// engine runs the chip circuit alone.
let compiled: ChipModel;
beforeAll(async () => {
  compiled = await sharedChip({ target: 'chip-test', codeBytes: 4096, memBytes: storeMemBytes(SMALL) });
}, 120_000);

const errorOf = (f: () => unknown): ChipcError => {
  try { f(); } catch (e) { expect(e).toBeInstanceOf(ChipcError); return e as ChipcError; }
  throw new Error('no error');
};

describe('store workload in segments', () => {
  it('plans segments and refuses bad sizes and indices', () => {
    const plan = segmentPlan(SMALL, 7, 25, 10);
    expect(plan.segments).toBe(3);
    expect([0, 1, 2].map((i) => segmentRange(plan, i))).toEqual([[0, 10], [10, 20], [20, 25]]);
    expect(errorOf(() => segmentRange(plan, 3)).message).toMatch(/segment 3 is outside 0 … 2/);
    expect(errorOf(() => segmentPlan(SMALL, 7, 25, 0)).message).toMatch(/segmentOps must be a positive integer/);
    expect(errorOf(() => segmentPlan(SMALL, 7, 2.5, 1)).message).toMatch(/count must be a positive integer/);
  });

  it('segments through the IR add up to the continuous run: answers, tokens, end rows', () => {
    const plan = segmentPlan(SMALL, 11, 60, 20);
    // The continuous run: one session, the model beside it.
    const s = ChipStore.open(SMALL, { target: TARGET, engine: 'ir' });
    const m = new StoreModel(SMALL);
    let tokens = 0;
    const codes: Record<string, number> = {};
    for (const q of plan.ops) {
      const c = s.apply(q);
      expect(c.result).toEqual(asFirmwareAnswer(applyRequest(m, q)));
      tokens += c.promptTokens + c.generatedTokens;
      codes[c.result.code] = (codes[c.result.code] ?? 0) + 1;
    }
    const segs = [0, 1, 2].map((i) => runSegment(plan, i, { target: TARGET, engine: 'ir' }));
    expect(segs.map((r) => [r.firstOp, r.ops])).toEqual([[0, 20], [20, 20], [40, 20]]);
    expect(segs.reduce((a, r) => a + r.tokens, 0)).toBe(tokens);
    const segCodes: Record<string, number> = {};
    for (const r of segs) for (const [k, v] of Object.entries(r.codes)) segCodes[k] = (segCodes[k] ?? 0) + v;
    expect(segCodes).toEqual(codes);
    // The workload fills the store and fails on the way (not only OK answers).
    expect(Object.keys(codes).length).toBeGreaterThan(2);
    expect(segs[2]!.files).toBe(m.fileCount);
    expect(rowsFromModel(modelAfter(plan, 60))).toEqual(rowsFromModel(m));
    expect(s.rows()).toEqual(rowsFromModel(m));
  }, 120_000);

  it('a segment through the weights starts from the imported state and ends at the model\'s', () => {
    const plan = segmentPlan(SMALL, 11, 24, 12);
    const r = runSegment(plan, 1, { target: TARGET, engine: 'weights', compiled });
    expect([r.firstOp, r.ops]).toEqual([12, 12]);
    expect(r.files).toBe(modelAfter(plan, 24).fileCount);
    expect(r.tokens).toBeGreaterThan(r.generatedTokens);
  }, 300_000);

  it('a wrong start state is caught: an extra file, by an answer or by the end check', () => {
    const plan = segmentPlan(SMALL, 11, 40, 20);
    const start = modelAfter(plan, 20);
    const stray = [299, 298, 297, 296, 295, 294]; // a 6-token name the workload's pool does not hold
    expect(plan.ops.some((q) => q.op !== 'list' && q.name.join() === stray.join())).toBe(false);
    expect(start.put(stray, [1]).code).toBe('OK');
    // Its list answers show the stray file.
    const e = errorOf(() => runSegment(plan, 1, { target: TARGET, engine: 'ir' }, start));
    expect(e.code).toBe('store.segment');
    expect(e.message).toMatch(/segment 1, workload operation \d+ \(list\)/);
    // A one-operation segment whose get answers the same either way: only the end check sees it.
    const one = segmentPlan(SMALL, 11, 40, 1);
    const i = one.ops.findIndex((q, k) => k > 0 && q.op === 'get');
    const before = modelAfter(one, i);
    expect(before.put(stray, [1]).code).toBe('OK');
    const e1 = errorOf(() => runSegment(one, i, { target: TARGET, engine: 'ir' }, before));
    expect(e1.code).toBe('store.segment');
    expect(e1.message).toMatch(new RegExp(`segment ${i}: the chip's \\w+ rows after operation ${i} differ from the model's`));
  }, 120_000);
});
