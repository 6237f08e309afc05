/**
 * Optional per-phase wall-clock accounting of the executor (bench/chip-speed.ts). A PhaseTimes
 * object accumulates milliseconds per phase name; the executor installs it as the module-wide
 * `activeTimes` for the duration of a forward call when one was set with Executor.setPhaseTimes,
 * and with per-layer profiling also under the layer's prefix (`L3 gdn.conv`). When none is set
 * every probe is one null test (no clock read, no allocation).
 */
import type { MatmulStats } from './matmul.ts';

/** Milliseconds accumulated per phase (names: see docs/executor.md, "Decode speed"). */
export type PhaseTimes = Record<string, number>;

/**
 * Per-layer detail of the tracked decode step (Executor.setPhaseTimes): each phase also under its
 * layer's prefix in the PhaseTimes (`L3 gdn.conv`), and each step's time in every layer half.
 */
export interface LayerDetail {
  /** Milliseconds of each decode step in layer l's mixer half (index 2l) and FFN half (2l + 1). */
  tokenMs: number[][];
  /**
   * When given, each layer half's work counters summed over the tracked steps (index 2l, 2l + 1 as
   * tokenMs): the share of MatmulStats' totals that half took. Counters are deterministic, so the
   * split compares builds where timings cannot.
   */
  work?: HalfWork[];
}

/** A layer half's share of the executor's work counters (MatmulStats fields of the same meaning). */
export interface HalfWork {
  /** Stored entries walked and rows reached by the incremental matmuls (deltaEntries, deltaRows). */
  entries: number;
  rows: number;
  /** Conv channels recomputed, value-head steps run and passed over at β = ±0 (convChannels, gdnHeadSteps, gdnHeadsBetaZero). */
  convChannels: number;
  headSteps: number;
  headsBetaZero: number;
  /** FFN steps the memo answered (ffnMemoHits). */
  ffnMemoHits: number;
}

/** The counters HalfWork follows. */
type WorkCounters = Pick<MatmulStats, 'deltaEntries' | 'deltaRows' | 'convChannels' | 'gdnHeadSteps' | 'gdnHeadsBetaZero' | 'ffnMemoHits'>;

/** The counters when the current layer half began (markHalfWork). */
const workMark = new Float64Array(6);

/** Notes the counters at the start of a layer half. */
export function markHalfWork(s: WorkCounters): void {
  workMark[0] = s.deltaEntries; workMark[1] = s.deltaRows; workMark[2] = s.convChannels;
  workMark[3] = s.gdnHeadSteps; workMark[4] = s.gdnHeadsBetaZero; workMark[5] = s.ffnMemoHits;
}

/** Adds what the counters took since the mark to work[i] (made on first use), and marks again. */
export function addHalfWork(work: HalfWork[], i: number, s: WorkCounters): void {
  while (work.length <= i) work.push({ entries: 0, rows: 0, convChannels: 0, headSteps: 0, headsBetaZero: 0, ffnMemoHits: 0 });
  const w = work[i]!;
  w.entries += s.deltaEntries - workMark[0]!; w.rows += s.deltaRows - workMark[1]!; w.convChannels += s.convChannels - workMark[2]!;
  w.headSteps += s.gdnHeadSteps - workMark[3]!; w.headsBetaZero += s.gdnHeadsBetaZero - workMark[4]!; w.ffnMemoHits += s.ffnMemoHits - workMark[5]!;
  markHalfWork(s);
}

/** The accumulator of the forward call in progress, or null (profiling off). */
export let activeTimes: PhaseTimes | null = null;

/**
 * With per-layer profiling (Executor.setPhaseTimes's `byLayer`), the layer the probes are in as a
 * key prefix (`L3 `): each phase is also accumulated under the prefixed name. null: off.
 */
let layerPrefix: string | null = null;

export function setActiveTimes(t: PhaseTimes | null): void {
  activeTimes = t;
}

/** Sets the layer prefix of the phases that follow (null: none; see layerPrefix). */
export function setLayerPrefix(prefix: string | null): void {
  layerPrefix = prefix;
}

/** performance.now() when profiling, else 0 (callers pass the value back to phaseEnd). */
export function phaseStart(): number {
  return activeTimes === null ? 0 : performance.now();
}

/** Adds the time since t0 (from phaseStart) to `phase`; returns the new start time. */
export function phaseEnd(phase: string, t0: number): number {
  const t = activeTimes;
  if (t === null) return 0;
  const now = performance.now();
  t[phase] = (t[phase] ?? 0) + (now - t0);
  if (layerPrefix !== null) {
    const k = layerPrefix + phase;
    t[k] = (t[k] ?? 0) + (now - t0);
  }
  return now;
}
