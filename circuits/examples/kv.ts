/**
 * A content-addressed store on a hard-attention head, with a default. Token 64·k + 16·v + s
 * (< 256) puts value v ∈ 0…3 under key k ∈ 0…3 with stamp s ∈ 0…15 (later puts carry larger
 * stamps: the latest put of a key wins); token 256 + k gets key k. Every position emits the value
 * currently stored under its key plus 4 × hit, or 3 (the default) with hit 0 when the key was never
 * put. Token 260 is BOS.
 */
import { defineCircuit } from '../../src/dsl/index.ts';

export const BOS = 260;

export default defineCircuit({ name: 'kv', vocab: 261, bos: BOS }, (c) => {
  const put = c.tokenField('put', (t) => (t < 256 ? 1 : 0), [0, 1]);
  const key = c.tokenField('key', (t) => (t < 256 ? t >> 6 : t < 260 ? t - 256 : 0), [0, 3]);
  const value = c.tokenField('value', (t) => (t < 256 ? (t >> 4) & 3 : 0), [0, 3]);
  const stamp = c.tokenField('stamp', (t) => (t < 256 ? t & 15 : 0), [0, 15]);
  const { values, hit } = c.lookup('store', { key: [key], value: [value], query: [key], stamp, publish: put, defaults: [3] });
  c.emit([values[0]!.named('found'), hit.named('hit')], (v, h) => v! + 4 * h!);
});
