/**
 * A long random store workload through the chip in segments (bench/store-chip-full.ts): the
 * workload's operations are cut into runs of `segmentOps`, and each run is one store session on
 * the chip — opened from the reference model's state before its first operation, imported as a
 * store file (`encodeStore` → `decodeStore`, so the file format is on the path), and checked
 * after its last operation against the model's state there.
 *
 * Why segments: the whole 10,000-operation workload at full capacity is tens of millions of
 * generated tokens. As segments it can run in several processes at once and resume across runs,
 * and nothing is lost when one run stops. The chain is exact by induction: segment k starts from
 * the model's state S_k and must end with the chip's rows (every nonzero row of every table, read
 * out of the chip's RAM state) equal to those of S_{k+1}, the state segment k + 1 starts from. So
 * the segments together are the continuous workload: every operation runs through the chip from
 * the state the workload leaves before it.
 *
 * Within a segment every generated token is compared with the golden emulator's stream (a
 * divergence is a ChipcError `store.divergence`), every answer decoded from the chip's tokens with
 * the model's (`store.segment`), and at the end the chip's rows with the emulator's
 * (`ChipStore.exportModel`) and with the model's (`store.segment`).
 */
import { ChipStore, type ChipStoreOptions } from './chip.ts';
import { decodeStore, encodeStore } from './file.ts';
import { StoreModel, TABLE_NAMES, type StoreParams } from './model.ts';
import { asFirmwareAnswer, rowsFromModel, type StoreRequest } from './firmware.ts';
import { applyRequest, storeWorkload } from './workload.ts';
import { ChipcError } from '../util/errors.ts';

/** A workload (storeWorkload(seed, count, params)) cut into segments of `segmentOps` operations. */
export interface SegmentPlan {
  readonly params: StoreParams;
  readonly seed: number;
  readonly count: number;
  readonly segmentOps: number;
  /** ⌈count / segmentOps⌉. */
  readonly segments: number;
  /** The workload's operations. */
  readonly ops: readonly StoreRequest[];
}

export function segmentPlan(params: StoreParams, seed: number, count: number, segmentOps: number): SegmentPlan {
  for (const [what, v] of [['count', count], ['segmentOps', segmentOps]] as const) {
    if (!Number.isInteger(v) || v < 1) throw new ChipcError('store.segment', `${what} must be a positive integer, got ${v}`);
  }
  return { params, seed, count, segmentOps, segments: Math.ceil(count / segmentOps), ops: storeWorkload(seed, count, params) };
}

/** Operation indices [first, end) of segment `index`. */
export function segmentRange(plan: SegmentPlan, index: number): [first: number, end: number] {
  if (!Number.isInteger(index) || index < 0 || index >= plan.segments) {
    throw new ChipcError('store.segment', `segment ${index} is outside 0 … ${plan.segments - 1}`);
  }
  return [index * plan.segmentOps, Math.min(plan.count, (index + 1) * plan.segmentOps)];
}

/** The reference model after the workload's first `ops` operations (replayed from an empty store). */
export function modelAfter(plan: SegmentPlan, ops: number): StoreModel {
  const m = new StoreModel(plan.params);
  for (let i = 0; i < ops; i++) applyRequest(m, plan.ops[i]!);
  return m;
}

/** What one segment did. */
export interface SegmentResult {
  index: number;
  /** Operation indices [firstOp, firstOp + ops). */
  firstOp: number;
  ops: number;
  /** Request plus generated tokens of the segment's operations (the opening import has none; segment 0's init call is not counted). */
  tokens: number;
  generatedTokens: number;
  instructions: number;
  /** Answers by result code. */
  codes: Record<string, number>;
  /** Files in the store after the segment. */
  files: number;
  /** Wall time of the session (open, the operations, the end check). */
  seconds: number;
}

/**
 * Runs segment `index` through the chip (opts: target, engine, compiled chip, profile) and checks
 * it as the module comment says; ChipcError `store.segment` on a wrong answer or end state.
 * `startState` replaces the model's state before the segment (a test hook: a wrong start must be
 * caught).
 */
export function runSegment(plan: SegmentPlan, index: number, opts: ChipStoreOptions, startState?: StoreModel): SegmentResult {
  const t0 = performance.now();
  const [first, end] = segmentRange(plan, index);
  const model = modelAfter(plan, first);
  const start = startState ?? model;
  // Segment 0 starts as a new store does, with the init call through the chip; the others from the
  // start state as a store file's bytes, imported into a fresh session.
  const store = first === 0 && startState === undefined
    ? ChipStore.open(plan.params, opts)
    : ChipStore.open(decodeStore(encodeStore(start), { source: `segment ${index}'s start state` }), opts);
  let tokens = 0;
  let generatedTokens = 0;
  let instructions = 0;
  const codes: Record<string, number> = {};
  for (let i = first; i < end; i++) {
    const q = plan.ops[i]!;
    const c = store.apply(q);
    const want = asFirmwareAnswer(applyRequest(model, q));
    if (JSON.stringify(c.result) !== JSON.stringify(want)) {
      throw new ChipcError('store.segment', `segment ${index}, workload operation ${i} (${q.op}): the chip answered ${JSON.stringify(c.result)}, the model ${JSON.stringify(want)}`);
    }
    tokens += c.promptTokens + c.generatedTokens;
    generatedTokens += c.generatedTokens;
    instructions += c.instructions;
    codes[c.result.code] = (codes[c.result.code] ?? 0) + 1;
  }
  // exportModel checks the chip's rows against the emulator's; here they meet the model's.
  const chipEnd = rowsFromModel(store.exportModel());
  const modelEnd = rowsFromModel(model);
  for (const t of TABLE_NAMES) {
    if (JSON.stringify(chipEnd[t]) !== JSON.stringify(modelEnd[t])) {
      throw new ChipcError('store.segment', `segment ${index}: the chip's ${t} rows after operation ${end - 1} differ from the model's`);
    }
  }
  return { index, firstOp: first, ops: end - first, tokens, generatedTokens, instructions, codes, files: model.fileCount, seconds: (performance.now() - t0) / 1000 };
}
