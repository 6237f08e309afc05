/**
 * A counter: the emitted token is the input token plus one, modulo 16, so greedy generation
 * from any digit counts upward forever. Token 16 is BOS and counts as 0.
 */
import { defineCircuit } from '../../src/dsl/index.ts';

export default defineCircuit({ name: 'counter', vocab: 17, bos: 16 }, (c) => {
  const value = c.tokenField('value', (t) => (t === 16 ? 0 : t), [0, 15]);
  const next = c.table('next', [value], (v) => (v + 1) % 16, [0, 15]).named('next');
  c.emit([next]);
});
