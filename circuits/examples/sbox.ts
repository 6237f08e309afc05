/**
 * A lookup table: a 6-bit substitution box. Token x < 64 emits SBOX[x]; token 64 is BOS.
 */
import { defineCircuit } from '../../src/dsl/index.ts';

/** A fixed permutation of 0…63 (x ↦ 37·x + 11 mod 64 is a bijection since 37 is odd). */
export const SBOX = Array.from({ length: 64 }, (_, x) => (37 * x + 11) % 64);

export default defineCircuit({ name: 'sbox', vocab: 65, bos: 64 }, (c) => {
  const x = c.tokenField('x', (t) => (t === 64 ? 0 : t), [0, 63]);
  c.emit([c.table('sbox', [x], (v) => SBOX[v]!, [0, 63]).named('y')]);
});
