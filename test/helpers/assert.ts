/** Assertions shared by the test files. */
import { expect } from 'vitest';
import { ChipcError } from '../../src/util/errors.ts';

/** Number of mismatching float32 bit patterns between two arrays (a length mismatch counts as all). */
export function bitDiff(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return Math.max(a.length, b.length);
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  let n = 0;
  for (let i = 0; i < ua.length; i++) if (ua[i] !== ub[i]) n++;
  return n;
}

/** `f` must throw a ChipcError with this code. */
export function expectChipcError(f: () => unknown, code: string): void {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ChipcError);
    expect((e as ChipcError).code).toBe(code);
    return;
  }
  expect.fail(`expected ChipcError ${code}`);
}

/** `f` must throw a ChipcError; returns it (for checks of its code and message). */
export function chipError(f: () => unknown): ChipcError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ChipcError);
    return e as ChipcError;
  }
  return expect.fail('expected a ChipcError');
}
