/**
 * Vitest setup: one fast-check seed for every property that names none, so that a run of the
 * suite draws the same cases on every machine and a failure repeats (a property that wants other
 * cases names its own seed).
 */
import fc from 'fast-check';

fc.configureGlobal({ seed: 20261207 });
