/**
 * Optional per-phase wall-clock accounting of the executor (bench/chip-speed.ts). A PhaseTimes
 * object accumulates milliseconds per phase name; the executor installs it as the module-wide
 * `activeTimes` for the duration of a forward call when one was set with Executor.setPhaseTimes.
 * When none is set every probe is one null test (no clock read, no allocation).
 */

/** Milliseconds accumulated per phase (names: see docs/executor.md, "Decode speed"). */
export type PhaseTimes = Record<string, number>;

/** The accumulator of the forward call in progress, or null (profiling off). */
export let activeTimes: PhaseTimes | null = null;

export function setActiveTimes(t: PhaseTimes | null): void {
  activeTimes = t;
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
  return now;
}
