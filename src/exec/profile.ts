/**
 * Optional per-phase wall-clock accounting of the executor (bench/chip-speed.ts). A PhaseTimes
 * object accumulates milliseconds per phase name; the executor installs it as the module-wide
 * `activeTimes` for the duration of a forward call when one was set with Executor.setPhaseTimes,
 * and with per-layer profiling also under the layer's prefix (`L3 gdn.conv`). When none is set
 * every probe is one null test (no clock read, no allocation).
 */

/** Milliseconds accumulated per phase (names: see docs/executor.md, "Decode speed"). */
export type PhaseTimes = Record<string, number>;

/**
 * Per-layer detail of the tracked decode step (Executor.setPhaseTimes): each phase also under its
 * layer's prefix in the PhaseTimes (`L3 gdn.conv`), and each step's time in every layer half.
 */
export interface LayerDetail {
  /** Milliseconds of each decode step in layer l's mixer half (index 2l) and FFN half (2l + 1). */
  tokenMs: number[][];
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
