/**
 * A comparator: token t < 256 carries a = t >> 4 and b = t & 15; the circuit emits 0 when a < b,
 * 1 when a = b and 2 when a > b. Token 256 is BOS.
 */
import { defineCircuit } from '../../src/dsl/index.ts';

export default defineCircuit({ name: 'comparator', vocab: 257, bos: 256 }, (c) => {
  const a = c.tokenField('a', (t) => (t === 256 ? 0 : t >> 4), [0, 15]);
  const b = c.tokenField('b', (t) => (t === 256 ? 0 : t & 15), [0, 15]);
  const lt = a.lt(b).named('lt');
  const eq = a.eq(b).named('eq');
  c.emit([lt, eq], (l, e) => (l ? 0 : e ? 1 : 2) + (l && e ? 3 : 0));
});
