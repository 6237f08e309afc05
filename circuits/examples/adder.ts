/**
 * A 4-bit ripple-carry adder: token t < 256 carries a = t >> 4 and b = t & 15; the circuit adds
 * them bit by bit with carries (one FFN layer per carry) and emits the 5-bit sum a + b as the
 * token id. Token 256 is BOS (adds 0 + 0).
 */
import { defineCircuit, type Sig } from '../../src/dsl/index.ts';

export default defineCircuit({ name: 'adder', vocab: 257, bos: 256 }, (c) => {
  const a = c.tokenField('a', (t) => (t === 256 ? 0 : t >> 4), [0, 15]);
  const b = c.tokenField('b', (t) => (t === 256 ? 0 : t & 15), [0, 15]);
  const bit = (x: Sig, i: number) => c.table(`${x.name}${i}`, [x], (v) => (v >> i) & 1, [0, 1]);
  let carry: Sig | number = 0;
  const sum: Sig[] = [];
  for (let i = 0; i < 4; i++) {
    const total = c.add(bit(a, i), bit(b, i), carry);
    sum.push(c.table(`s${i}`, [total], (v) => v & 1, [0, 1]));
    carry = c.table(`c${i + 1}`, [total], (v) => v >> 1, [0, 1]);
  }
  c.emit([...sum, carry as Sig], (s0, s1, s2, s3, c4) => s0! + 2 * s1! + 4 * s2! + 8 * s3! + 16 * c4!);
});
