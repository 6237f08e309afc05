/**
 * Two executors decoding in lock step (typically the sparse path against the dense one): both
 * prefill the prompt, then each step feeds both the same id, chosen from the step index and the
 * greedy token; the greedy tokens must agree and the logits be bit-identical (every NaN counted
 * as one pattern).
 */
import { expect } from 'vitest';
import { argmax, type Executor } from '../../src/exec/executor.ts';

const bitsOf = (a: Float32Array): number[] =>
  Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length), (b, i) => (Number.isNaN(a[i]) ? 0x7fc00000 : b));

export function decodeLockstep(
  a: Executor, b: Executor, prompt: number[], steps: number, idOf: (step: number, greedy: number) => number,
): void {
  let ta = argmax(a.prefill(prompt)[0]);
  let tb = argmax(b.prefill(prompt)[0]);
  for (let i = 0; i < steps; i++) {
    expect(ta).toBe(tb);
    const id = idOf(i, ta);
    const la = a.decode(id);
    const lb = b.decode(id);
    expect(bitsOf(la)).toEqual(bitsOf(lb));
    ta = argmax(la);
    tb = argmax(lb);
  }
}
