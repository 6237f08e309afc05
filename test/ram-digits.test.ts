/**
 * A RAM whose address is a linear of multi-bit signals (passes/lower-ram.ts addrDigitsOf): the
 * address is read through one-hot digits instead of bits, and the compiled weights still equal
 * the interpreter bit for bit at every position (f32 and bf16, sparse and dense, shuffled order),
 * on random write/read streams checked against a Map model too.
 *
 * Token t < 1024: bit 9 = write, bits 4…8 = the row (0…31), bits 0…3 = the value; every position
 * emits the row's value after its write. BOS = 1024.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { defineCircuit } from '../src/dsl/index.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import { compileCircuit } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { checkCompiled } from '../src/verify/check.ts';
import { expectMapModel } from './helpers/ram-model.ts';

const BOS = 1024;
const fields = (t: number) => ({ write: (t >> 9) & 1, row: (t >> 4) & 31, value: t & 15 });

/** The RAM's row = table(row & 7) + 8·(row >> 3): a 3-bit digit from a table, and a 2-bit token field digit. */
const circuit = defineCircuit({ name: 'digits', vocab: BOS + 1, bos: BOS }, (c) => {
  const isWrite = c.tokenField('isWrite', (t) => (t < BOS ? fields(t).write : 0), [0, 1]);
  const lo = c.tokenField('lo', (t) => (t < BOS ? fields(t).row & 7 : 0), [0, 7]);
  const hi = c.tokenField('hi', (t) => (t < BOS ? fields(t).row >> 3 : 0), [0, 3]);
  const value = c.tokenField('value', (t) => (t < BOS ? fields(t).value : 0), [0, 15]);
  // a table (identity) so that the low digit is an FFN output, as the chip's digits are
  const loT = c.table('loDigit', [lo], (v) => v, [0, 7]);
  const row = c.linear([[loT, 1], [hi, 8]]).named('row');
  const mem = c.ram('mem', { rows: 32, fields: [16] });
  mem.write(row, [value], isWrite);
  const [out] = mem.read(row);
  c.emit([out!.named('out')]);
});

const tiny = resolveTarget('tiny').config;
const target = { ...tiny, linearNumKeyHeads: 4, linearNumValueHeads: 4 };
const res = compileCircuit(buildCircuit(circuit), target);

const streams = fc.array(fc.integer({ min: 0, max: BOS - 1 }), { minLength: 1, maxLength: 40 }).map((t) => [BOS, ...t]);

describe('RAM address as one-hot digits (a linear of a 3-bit table and a 2-bit token field)', () => {
  it('lowers the address to digits: q/k rows read one dim per digit (2), not 5 bits', () => {
    const place = res.rams.find((r) => r.name === 'mem')!;
    const gdn = res.weights.layers[place.layer]!.mixer;
    if (gdn.kind !== 'linear_attention') throw new Error('expected a GDN layer');
    const csr = gdn.inProjQkv.csr!;
    // the q rows (the first Hk·dk): each reads two one-hot dims and the constant (its anchor);
    // with address bits each would read 5 bits and the constant
    const dk = target.linearKeyHeadDim;
    let most = 0;
    for (const kh of place.keyHeads) {
      for (let r = kh * dk; r < (kh + 1) * dk; r++) most = Math.max(most, csr.rowPtr[r + 1]! - csr.rowPtr[r]!);
    }
    expect(most).toBe(3);
  });
  it('the interpreter matches a Map model of the RAM', () => {
    fc.assert(fc.property(streams, (tokens) => expectMapModel(res.ir, tokens, fields, (word) => word ?? 0)), { numRuns: 20 });
  });
  for (const [label, opts] of [
    ['f32 sparse', { profile: 'f32', path: 'sparse' }], ['f32 dense', { profile: 'f32', path: 'dense' }],
    ['bf16', { profile: 'bf16' }], ['shuffled order', { order: { kind: 'shuffled', seed: 5 } }],
  ] as const) {
    it(`compiled weights = interpreter at every position, ${label}`, () => {
      fc.assert(fc.property(streams, (tokens) => {
        const r = checkCompiled(res, tokens, opts as never);
        expect(r.mismatches).toEqual([]);
      }), { numRuns: 4 });
    });
  }
});

/**
 * Enables read through their forms (passes/lower-ram.ts): a write enable and a read enable that are
 * sums of two exclusive tables (as the chip's banks have: the loader's bank, or the access's)
 * cost no layer of their own, and the RAM writes and reads exactly where the sum is 1.
 * Write when bit 9 is set (split by the row's high digit); read unless the value is 15.
 */
const enables = defineCircuit({ name: 'enable-sums', vocab: BOS + 1, bos: BOS }, (c) => {
  const isWrite = c.tokenField('isWrite', (t) => (t < BOS ? fields(t).write : 0), [0, 1]);
  const hi = c.tokenField('hi', (t) => (t < BOS ? fields(t).row >> 3 : 0), [0, 3]);
  const row = c.tokenField('row', (t) => (t < BOS ? fields(t).row : 0), [0, 31]);
  const value = c.tokenField('value', (t) => (t < BOS ? fields(t).value : 0), [0, 15]);
  const wLow = c.table('wLow', [isWrite, hi], (w, h) => (w && h < 2 ? 1 : 0), [0, 1]);
  const wHigh = c.table('wHigh', [isWrite, hi], (w, h) => (w && h >= 2 ? 1 : 0), [0, 1]);
  const rLow = c.table('rLow', [value], (v) => (v < 8 ? 1 : 0), [0, 1]);
  const rHigh = c.table('rHigh', [value], (v) => (v >= 8 && v < 15 ? 1 : 0), [0, 1]);
  const mem = c.ram('mem', { rows: 32, fields: [16] });
  mem.write(row, [value], c.linear([[wLow, 1], [wHigh, 1]], 0, [0, 1]).named('wEnable'));
  const [out] = mem.read(row, c.linear([[rLow, 1], [rHigh, 1]], 0, [0, 1]).named('rEnable'));
  c.emit([out!.named('out')]);
});
const withEnables = compileCircuit(buildCircuit(enables), target);

describe('RAM enables that are sums of exclusive signals', () => {
  it('are read as forms: the RAM sits in the layer after the tables (no layer to add them up)', () => {
    const place = withEnables.rams.find((r) => r.name === 'mem')!;
    expect(place.layer).toBe(1); // tables at layer 0's FFN, the RAM at layer 1's mixer
    // no LIN op adds them up; where the lowering writes a sum of tables as one dim (sumDim, or
    // lower-table-sums.ts), that op is the tables' own, in their sublayer
    const enableOps = withEnables.lowered.ops.filter((o) => /wEnable|rEnable/.test(o.what));
    expect(enableOps.filter((o) => !o.what.startsWith('sum "') && !o.what.startsWith('sums of tables "'))).toEqual([]);
    for (const o of enableOps) expect(withEnables.schedule.sublayer[o.id]).toBe(1);
  });
  it('write and read exactly where the sums say (interpreter = a Map model; weights = interpreter, f32 and bf16)', () => {
    fc.assert(fc.property(streams, (tokens) => {
      expectMapModel(withEnables.ir, tokens, fields, (word, f) => (f.value === 15 ? 0 : word ?? 0));
      for (const profile of ['f32', 'bf16'] as const) expect(checkCompiled(withEnables, tokens, { profile }).mismatches).toEqual([]);
    }), { numRuns: 6 });
  });
});

/**
 * Packed rows (gadgets/gdn-ram.ts: two words per state row at a target with two value heads per
 * key head) pick the value head by the address's top bit, in every β and z. When that bit lies in
 * a table digit, the lowering splits the digit (passes/lower-ram.ts): its low bits as a narrower
 * one-hot digit ('residue' dims) and the top bit as its own dim, both columns of the table's own
 * index. Row = lo + 4·table(hi): a 2-bit token-field digit and a 3-bit table digit, whose top bit
 * (row bit 4) is the select bit of tiny's 16-row key heads.
 */
const packed = defineCircuit({ name: 'packed-digits', vocab: BOS + 1, bos: BOS }, (c) => {
  const isWrite = c.tokenField('isWrite', (t) => (t < BOS ? fields(t).write : 0), [0, 1]);
  const lo = c.tokenField('lo', (t) => (t < BOS ? fields(t).row & 3 : 0), [0, 3]);
  const hi = c.tokenField('hi', (t) => (t < BOS ? fields(t).row >> 2 : 0), [0, 7]);
  const value = c.tokenField('value', (t) => (t < BOS ? fields(t).value : 0), [0, 15]);
  const hiT = c.table('hiDigit', [hi], (v) => v, [0, 7]);
  const row = c.linear([[lo, 1], [hiT, 4]]).named('row');
  const mem = c.ram('mem', { rows: 32, fields: [16] });
  mem.write(row, [value], isWrite);
  const [out] = mem.read(row);
  c.emit([out!.named('out')]);
});
const withPacked = compileCircuit(buildCircuit(packed), tiny);

describe('packed rows whose select bit lies in a table digit', () => {
  it('read the select bit as one dim in z and β (not half the digit\'s one-hot)', () => {
    const place = withPacked.rams.find((r) => r.name === 'mem')!;
    const gdn = withPacked.weights.layers[place.layer]!.mixer;
    if (gdn.kind !== 'linear_attention') throw new Error('expected a GDN layer');
    const rowsOf = (csr: { rowPtr: Int32Array | Uint32Array }) => Array.from({ length: csr.rowPtr.length - 1 }, (_, r) => csr.rowPtr[r + 1]! - csr.rowPtr[r]!);
    // every z row: the select bit and the constant (its anchor); from the 3-bit one-hot it read 4 dims and the constant
    const z = rowsOf(gdn.inProjZ.csr!).filter((n) => n > 0);
    expect(z.length).toBeGreaterThan(0);
    expect(Math.max(...z)).toBe(2);
    // β of each value head: the select bit, the write enable and the constant
    expect(Math.max(...rowsOf(gdn.inProjB.csr!))).toBe(3);
    const names = withPacked.signals.map((s) => `${s.name}:${s.encoding}`);
    expect(names).toContain('hiDigit.bit2:bits');
    expect(names.filter((n) => n.endsWith(':residue'))).toHaveLength(4);
    expect(names.filter((n) => n.startsWith('hiDigit=') && n.endsWith(':onehot'))).toEqual([]);
  });
  it('write and read as a Map model says (interpreter; weights = interpreter at every position and dim, f32 and bf16)', () => {
    fc.assert(fc.property(streams, (tokens) => {
      expectMapModel(withPacked.ir, tokens, fields, (word) => word ?? 0);
      for (const profile of ['f32', 'bf16'] as const) expect(checkCompiled(withPacked, tokens, { profile }).mismatches).toEqual([]);
    }), { numRuns: 6 });
  });
});
