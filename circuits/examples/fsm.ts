/**
 * A small state machine (Mealy): token 4·q + s carries the state q ∈ 0…7 and an input symbol
 * s ∈ 0…3; the circuit emits 4·δ(q, s) + λ(q, s) — the next state and an output symbol — so a
 * driver feeds back the state with the next input, and plain generation runs the machine on its
 * own outputs. Token 32 is BOS (state 0, symbol 0).
 */
import { defineCircuit } from '../../src/dsl/index.ts';

/** δ: a fixed transition table (state 7 is absorbing unless symbol 3 resets it). */
export const delta = (q: number, s: number): number => (q === 7 ? (s === 3 ? 0 : 7) : (q * 3 + s + 1) % 8);
/** λ: the output symbol. */
export const lambda = (q: number, s: number): number => (q + 2 * s) % 4;

export default defineCircuit({ name: 'fsm', vocab: 33, bos: 32 }, (c) => {
  const q = c.tokenField('q', (t) => (t === 32 ? 0 : t >> 2), [0, 7]);
  const s = c.tokenField('s', (t) => (t === 32 ? 0 : t & 3), [0, 3]);
  const next = c.table('next', [q, s], delta, [0, 7]);
  const out = c.table('out', [q, s], lambda, [0, 3]);
  c.emit([next, out], (n, o) => 4 * n! + o!);
});
