/**
 * RAM read groups (Ram.readWithGroups; passes/lower-ram.ts, gadgets/gdn-ram.ts): a linear of a
 * read port's fields that the read-out writes as a value of its own, so that a table over it reads
 * one dim instead of one per field — and the compiled weights still equal the interpreter bit for
 * bit at every position and placed dim (the groups' dims included), f32 and bf16.
 *
 * Token t < 1024: bit 9 = write, bits 6…8 = the row (0…7), bits 0…7 = the word written, as 8
 * one-bit fields (the row bits overlap the word's: any mix of the two occurs).
 * Every position emits a table over the two nibbles of the row read (their product mod 16).
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { defineCircuit } from '../src/dsl/index.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import { compileCircuit } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { checkCompiled } from '../src/verify/check.ts';
import { expectMapModel } from './helpers/ram-model.ts';
import { ChipcError } from '../src/util/errors.ts';

const BOS = 1024;
const fields = (t: number) => ({ write: (t >> 9) & 1, row: (t >> 6) & 7, value: t & 255 });
const product = (v: number) => ((v & 15) * (v >> 4)) & 15;

function circuit(grouped: boolean) {
  return defineCircuit({ name: grouped ? 'groups' : 'no-groups', vocab: BOS + 1, bos: BOS }, (c) => {
    const isWrite = c.tokenField('isWrite', (t) => (t < BOS ? fields(t).write : 0), [0, 1]);
    const row = c.tokenField('row', (t) => (t < BOS ? fields(t).row : 0), [0, 7]);
    const bits = Array.from({ length: 8 }, (_, k) => c.tokenField(`v${k}`, (t) => (t < BOS ? (fields(t).value >> k) & 1 : 0), [0, 1]));
    const mem = c.ram('mem', { rows: 8, fields: bits.map(() => 2) });
    mem.write(row, bits, isWrite);
    const nibbleTerms = (n: number) => Array.from({ length: 4 }, (_, k) => [4 * n + k, 2 ** k] as [number, number]);
    let lo, hi;
    if (grouped) {
      const r = mem.readWithGroups(row, undefined, [nibbleTerms(0), nibbleTerms(1)]);
      [lo, hi] = r.groups;
    } else {
      const r = mem.read(row);
      [lo, hi] = [0, 1].map((n) => c.linear(nibbleTerms(n).map(([f, w]) => [r[f]!, w] as [typeof r[0], number])));
    }
    c.emit([c.table('prod', [lo!, hi!], (a, b) => (a * b) & 15, [0, 15]).named('out')]);
  });
}

const tiny = resolveTarget('tiny').config;
const target = { ...tiny, linearNumKeyHeads: 4, linearNumValueHeads: 4 };
const withGroups = compileCircuit(buildCircuit(circuit(true)), target);
const withoutGroups = compileCircuit(buildCircuit(circuit(false)), target);
const streams = fc.array(fc.integer({ min: 0, max: BOS - 1 }), { minLength: 1, maxLength: 40 }).map((t) => [BOS, ...t]);

/** The most dims a gate of the emitted table (named `out`: its one-hot for the LM head) reads. */
function widestGate(res: typeof withGroups): number {
  const ops = res.lowered.ops.filter((o) => o.kind === 'ffn' && o.what.includes('"out"'));
  expect(ops.length).toBeGreaterThan(0);
  return Math.max(...ops.flatMap((o) => (o.kind === 'ffn' ? o.units.map((u) => u.gate.terms.length) : [])));
}

describe('RAM read groups', () => {
  it('a table over two groups reads two dims (over the plain fields: eight bits)', () => {
    expect(widestGate(withGroups)).toBe(2);
    expect(widestGate(withoutGroups)).toBe(8);
    const names = withGroups.signals.map((s) => s.name);
    expect(names).toContain('mem.r0.g0');
    expect(names).toContain('mem.r0.g1');
    // the fields themselves are read by nothing: the lowering drops them from the read-out (no slot)
    expect(names.filter((n) => /^mem\.r0\.f\d+$/.test(n))).toEqual([]);
    expect(withoutGroups.signals.map((s) => s.name).filter((n) => /^mem\.r0\.f\d+$/.test(n))).toHaveLength(8);
  });
  it('the interpreter reads the row as a Map model says; the weights equal the interpreter at every dim (f32, bf16)', () => {
    fc.assert(fc.property(streams, (tokens) => {
      expectMapModel(withGroups.ir, tokens, fields, (word) => product(word ?? 0));
      for (const profile of ['f32', 'bf16'] as const) expect(checkCompiled(withGroups, tokens, { profile }).mismatches).toEqual([]);
    }), { numRuns: 8 });
  });
  it('refuses a group with a repeated field, a field out of range or a coefficient that is not a positive integer', () => {
    const build = (group: [number, number][]) => buildCircuit(defineCircuit({ name: 'group', vocab: 4 }, (c) => {
      const bits = Array.from({ length: 8 }, (_, k) => c.tokenField(`b${k}`, (t) => (t >> (k % 2)) & 1, [0, 1]));
      const mem = c.ram('mem', { rows: 2, fields: bits.map(() => 2) });
      mem.write(c.constant(0), bits);
      const r = mem.readWithGroups(c.constant(0), undefined, [group]);
      c.emit([r.fields[0]!]);
    }));
    // the same circuit with a valid group builds
    expect(build([[0, 1], [1, 2]]).rams[0]!.reads[0]!.groups).toHaveLength(1);
    for (const bad of [[[0, 1], [0, 2]], [[8, 1]], [[1, 0]], [[2, 1.5]], []] as [number, number][][]) {
      expect(() => build(bad)).toThrow(ChipcError);
      expect(() => build(bad)).toThrow(/read group 0/);
    }
  });
});
