/**
 * The previous token: every position emits the digit of the token before it (0 at the start) and
 * whether it repeats the current one, as 16·[same] + previous. Token d < 16 is digit d; token 16
 * is BOS (digit 0). Greedy generation from BOS walks 0, 16+0… a delay line fed by its own output.
 */
import { defineCircuit } from '../../src/dsl/index.ts';

export default defineCircuit({ name: 'delay', vocab: 33, bos: 32 }, (c) => {
  const digit = c.tokenField('digit', (t) => (t === 32 ? 0 : t & 15), [0, 15]);
  const before = c.previous(digit, 0).named('before');
  const same = before.eq(digit).named('same');
  c.emit([before, same], (b, s) => b! + 16 * s!);
});
