/**
 * The chip's token fields as protocol constants (src/cpu/cpu-tokens.ts protocolField): tabulated
 * once per process, passed to every later build as the same table, and refused when one name is
 * given two different functions.
 */
import { describe, expect, it } from 'vitest';
import { defineCircuit } from '../src/dsl/index.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import { Kind, protocolField, tokenKind, VOCAB } from '../src/cpu/cpu-tokens.ts';
import { expectChipcError } from './helpers/assert.ts';

const fieldValues = (name: string, fn: (t: number) => number, range: [number, number]): readonly number[] => {
  const ir = buildCircuit(defineCircuit({ name: 'field', vocab: VOCAB }, (c) => { c.emit([protocolField(c, name, fn, range)]); }));
  const node = ir.nodes.find((n) => n.op === 'token_field')!;
  return node.values;
};

describe('protocolField', () => {
  it('tabulates fn over the whole alphabet once, and later builds get the same table', () => {
    const fn = (t: number) => (tokenKind(t).kind === Kind.J ? tokenKind(t).v & 7 : 0);
    const first = fieldValues('test.jLow3', fn, [0, 7]);
    expect(first.length).toBe(VOCAB);
    let wrong = -1;
    for (let t = 0; t < VOCAB && wrong < 0; t++) if (first[t] !== fn(t)) wrong = t;
    expect(wrong).toBe(-1);
    expect(fieldValues('test.jLow3', fn, [0, 7])).toBe(first);
  });

  it('refuses a name given a second, different function', () => {
    fieldValues('test.twice', (t) => t & 1, [0, 1]);
    expectChipcError(() => fieldValues('test.twice', (t) => (t >> 1) & 1, [0, 1]), 'cpu.field');
  });
});
