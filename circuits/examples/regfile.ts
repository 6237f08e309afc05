/**
 * A register file on a pinned Gated DeltaNet head: 8 registers of 4 bits. Token 16·r + v (< 128)
 * writes v to register r; token 128 + r reads register r; every position emits the value of the
 * register it names after its write (reads see writes), as token 0…15. Token 136 is BOS.
 */
import { defineCircuit } from '../../src/dsl/index.ts';

export default defineCircuit({ name: 'regfile', vocab: 137, bos: 136 }, (c) => {
  const isWrite = c.tokenField('isWrite', (t) => (t < 128 ? 1 : 0), [0, 1]);
  const reg = c.tokenField('reg', (t) => (t < 128 ? t >> 4 : t < 136 ? t - 128 : 0), [0, 7]);
  const value = c.tokenField('value', (t) => (t < 128 ? t & 15 : 0), [0, 15]);
  const regs = c.ram('regs', { rows: 8, fields: [16] });
  regs.write(reg, [value], isWrite);
  const [out] = regs.read(reg);
  c.emit([out!.named('out')]);
});
