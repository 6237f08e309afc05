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
import type { CircuitIR, TokenValues } from '../src/ir/types.ts';
import { decodeIR, encodeIR } from '../src/ir/serialize.ts';

const fieldValues = (name: string, fn: (t: number) => number, range: [number, number]): TokenValues => {
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

  it('keeps a table of small values compact (one byte per id), and an IR file holds it as a plain list', () => {
    const fn = (t: number) => (tokenKind(t).kind === Kind.D ? (tokenKind(t).v & 3) - 1 : 0);
    const ir = buildCircuit(defineCircuit({ name: 'field', vocab: VOCAB }, (c) => { c.emit([protocolField(c, 'test.dLow2', fn, [-1, 2])], (v) => v + 1); }));
    const node = ir.nodes.find((n) => n.op === 'token_field')!;
    expect(node.values).toBeInstanceOf(Int8Array);
    const plain: CircuitIR = { ...ir, nodes: ir.nodes.map((n) => (n.op === 'token_field' ? { ...n, values: Array.from(n.values) } : n)) };
    const bytes = encodeIR(ir);
    expect(Buffer.from(bytes).equals(Buffer.from(encodeIR(plain)))).toBe(true);
    const back = decodeIR(bytes).nodes.find((n) => n.op === 'token_field')!;
    expect(Array.isArray(back.values)).toBe(true);
    expect(back.values).toEqual(Array.from(node.values));
    // a value beyond a byte: the table is a plain array, exact
    const wide = fieldValues('test.wide', (t) => (t === 5 ? 1000 : t === 6 ? 128 : 0), [0, 1000]);
    expect(Array.isArray(wide)).toBe(true);
    expect([wide[4], wide[5], wide[6], wide[7]]).toEqual([0, 1000, 128, 0]);
  });
});
