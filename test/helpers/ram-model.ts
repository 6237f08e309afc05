/**
 * A Map model of a one-port RAM circuit for property tests: every token after BOS may write
 * `value` to `row`, and the position emits a function of the row's word after that write.
 */
import { expect } from 'vitest';
import type { CircuitIR } from '../../src/ir/types.ts';
import { Interpreter } from '../../src/ir/interpret.ts';

export interface RamToken {
  write: number;
  row: number;
  value: number;
}

/**
 * Runs the interpreter on [BOS, …tokens] and expects, at every position after BOS, the emitted
 * value `emitted(word, token)`, where word is what a Map of the writes so far holds at the token's
 * row (undefined when that row was never written).
 */
export function expectMapModel(
  ir: CircuitIR, tokens: number[], fieldsOf: (t: number) => RamToken, emitted: (word: number | undefined, t: RamToken) => number,
): void {
  const out = new Interpreter(ir).run(tokens).map((p) => p.emitted);
  const mem = new Map<number, number>();
  tokens.slice(1).forEach((t, i) => {
    const f = fieldsOf(t);
    if (f.write) mem.set(f.row, f.value);
    expect(out[i + 1]).toBe(emitted(mem.get(f.row), f));
  });
}
