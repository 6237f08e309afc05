/**
 * The chip's token fields as protocol constants (src/cpu/cpu-tokens.ts protocolField): tabulated
 * once per process, passed to every later build as the same table, and refused when one name is
 * given two different functions.
 */
import { describe, expect, it } from 'vitest';
import { defineCircuit } from '../src/dsl/index.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import { bit, Kind, protocolBits, protocolField, tokenKind, VOCAB, wideCommit } from '../src/cpu/cpu-tokens.ts';
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

const bitFields = (names: string[], fn: (t: number) => number, from?: number): TokenValues[] => {
  const ir = buildCircuit(defineCircuit({ name: 'bits', vocab: VOCAB }, (c) => { c.emit(protocolBits(c, names, fn, from), (...bits: number[]) => bits.reduce((id, b, k) => id + b * 2 ** k, 0)); }));
  return ir.nodes.filter((n) => n.op === 'token_field').map((n) => n.values);
};

describe('protocolBits', () => {
  it('gives, in order, the fields bit(fn(t), from + k) that protocolField would tabulate one by one', () => {
    // a value with its top bit set (wideCommit's pointers reach 0x8000_0000 and above), from bit 16
    const names = Array.from({ length: 16 }, (_, k) => `test.cvW${k}`);
    const tables = bitFields(names, wideCommit, 16);
    expect(tables.length).toBe(16);
    for (let k = 0; k < 16; k++) {
      const want = fieldValues(`test.cvW.one${k}`, (t) => bit(wideCommit(t), 16 + k), [0, 1]);
      expect(tables[k]).toBeInstanceOf(Int8Array);
      expect(Buffer.from((tables[k] as Int8Array).buffer).equals(Buffer.from((want as Int8Array).buffer))).toBe(true);
    }
    // some id has each of those bits set: the comparison above saw ones, not only zeros
    expect(tables.every((tb) => (tb as Int8Array).includes(1))).toBe(true);
    // negative and fractional values read as bit() reads them (ToUint32)
    const odd = (t: number) => (t % 3 === 0 ? -t : t % 3 === 1 ? t + 0.5 : 2 ** 32 + t);
    const low = bitFields(['test.odd0', 'test.odd1'], odd);
    for (let t = 0; t < 1000; t++) expect([low[0]![t], low[1]![t]]).toEqual([bit(odd(t), 0), bit(odd(t), 1)]);
  });

  it('tabulates a group once per process, and refuses a name given a second, different function', () => {
    const fn = (t: number) => (tokenKind(t).kind === Kind.D ? tokenKind(t).v : 0);
    const first = bitFields(['test.d0', 'test.d1'], fn);
    const again = bitFields(['test.d0', 'test.d1'], fn);
    expect(again[0]).toBe(first[0]);
    expect(again[1]).toBe(first[1]);
    expectChipcError(() => bitFields(['test.d0'], (t) => t & 1), 'cpu.field');
    // the same function at another bit is another field
    expectChipcError(() => bitFields(['test.d0'], fn, 1), 'cpu.field');
  });
});
