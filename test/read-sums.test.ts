/**
 * A sum of RAM read-outs as one dim (src/passes/lower-ram.ts `readSumDim`): a 32-word memory in two
 * banks of 16 rows, the word read from the bank its address falls in (the other bank's read is
 * off, so it reads 0), and `word` = lo's read + hi's read. hi is read a layer after lo (its row is
 * a table of the address). Both RAMs' read-outs write `word`'s one dim: its slot starts at lo's
 * layer, its value is whole after hi's, and the fields take no slot of their own. The same circuit
 * with lo's field also emitted on its own (so that field is not the sum's alone) keeps the plain
 * form: the positive control. Both give, through the weights (f32, bf16), what the interpreter gives
 * at every position and every placed dim where it is whole, and the interpreter what a plain array
 * memory gives.
 */
import { describe, expect, it } from 'vitest';
import { defineCircuit } from '../src/dsl/index.ts';
import type { CircuitDef } from '../src/dsl/index.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import { compileCircuit } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { checkCompiled } from '../src/verify/check.ts';
import { Interpreter } from '../src/ir/interpret.ts';

const VOCAB = 1024; // t < 1023: write = [t < 512], address (t >> 4) & 31, value t & 15; 1023 is BOS
const BOS = 1023;
const isWrite = (t: number) => t < 512;
const addrOf = (t: number) => (t >> 4) & 31;
const valueOf = (t: number) => t & 15;

/** `shareField`: lo's read field is also emitted on its own, so it has two readers. */
function circuit(shareField: boolean): CircuitDef {
  return defineCircuit({ name: shareField ? 'read-sum-shared' : 'read-sums', vocab: VOCAB, bos: BOS }, (c) => {
    const w = c.tokenField('write', (t) => (t < BOS && isWrite(t) ? 1 : 0), [0, 1]);
    const bank = c.tokenField('bank', (t) => (t < BOS ? addrOf(t) >> 4 : 0), [0, 1]);
    const row = c.tokenField('row', (t) => (t < BOS ? addrOf(t) & 15 : 0), [0, 15]);
    const value = c.tokenField('value', (t) => (t < BOS ? valueOf(t) : 0), [0, 15]);
    const inLo = c.linear([[bank, -1]], 1, [0, 1]);
    const lo = c.ram('lo', { rows: 16, fields: [16] });
    const hi = c.ram('hi', { rows: 16, fields: [16] });
    lo.write(row, [value], c.and(w, inLo));
    hi.write(row, [value], c.and(w, bank));
    const loRead = lo.read(row, inLo)[0]!;
    // hi's row through a table: its read sits a layer after lo's
    const hiRead = hi.read(c.table('hiRow', [row], (r) => r, [0, 15]), bank)[0]!;
    const word = c.add(loRead, hiRead).named('word');
    const out = c.table('out', [word], (v) => (v * 7 + 3) % 16, [0, 15]);
    if (shareField) c.emit([out, loRead], (o, l) => 16 * o + l);
    else c.emit([out], (o) => o);
  });
}

/** The plain model: a 32-word array; every token reads its address after its own write. */
function reference(tokens: number[], shareField: boolean): number[] {
  const mem = new Array<number>(32).fill(0);
  return tokens.map((t) => {
    if (t === BOS) return shareField ? 16 * 3 : 3;
    const a = addrOf(t);
    if (isWrite(t)) mem[a] = valueOf(t);
    const o = (mem[a]! * 7 + 3) % 16;
    return shareField ? 16 * o + (a < 16 ? mem[a]! : 0) : o;
  });
}

const target = { ...resolveTarget('tiny').config, vocabSize: VOCAB };
const compile = (def: CircuitDef) => compileCircuit(buildCircuit(def, 'read-sums'), target);
const TOKENS = [BOS, ...Array.from({ length: 300 }, (_, k) => (k * 389 + 17) % 1023)];

describe('a sum of RAM read-outs as one dim', () => {
  const summed = compile(circuit(false));
  const shared = compile(circuit(true));
  const dimOf = (res: typeof summed, name: string) => res.lowered.dims.find((d) => d.name === name)?.id;
  const writersOf = (res: typeof summed, dim: number | undefined) => res.lowered.ops.filter((o) => dim !== undefined && o.writes.includes(dim));

  it('is one dim that both RAMs write, born at the first read, whole after the second', () => {
    const dim = dimOf(summed, 'word');
    const writers = writersOf(summed, dim);
    expect(writers.map((o) => o.kind)).toEqual(['gdn', 'gdn']);
    const at = writers.map((o) => summed.schedule.sublayer[o.id]!).sort((a, b) => a - b);
    expect(at[0]).toBeLessThan(at[1]!);
    const sig = summed.signals.find((s) => s.name === 'word');
    expect(sig?.birth).toBe(at[0]);
    expect(sig?.ready).toBe(at[1]);
    expect(summed.schedule.bornAt[dim!]).toBe(at[0]);
    expect(summed.schedule.producedAt[dim!]).toBe(at[1]);
    // its reader comes after the last write
    for (const op of summed.lowered.ops) if (op.reads.includes(dim!)) expect(summed.schedule.sublayer[op.id]!).toBeGreaterThan(at[1]!);
    const names = new Set(summed.signals.map((s) => s.name));
    expect(names.has('lo.r0.f0')).toBe(false);
    expect(names.has('hi.r0.f0')).toBe(false);
    expect(summed.schedule.numLayers).toBe(shared.schedule.numLayers);
  });

  it('keeps the plain form when a field has another reader (the positive control)', () => {
    expect(writersOf(shared, dimOf(shared, 'word')).length).toBeLessThan(2);
    const names = new Set(shared.signals.map((s) => s.name));
    expect(names.has('lo.r0.f0')).toBe(true);
    expect(names.has('hi.r0.f0')).toBe(true);
    expect(shared.signals.every((s) => s.ready === undefined)).toBe(true);
  });

  it('gives the interpreter bit for bit (f32, bf16), and the interpreter gives the plain model', () => {
    for (const [res, share] of [[summed, false], [shared, true]] as const) {
      const interp = new Interpreter(res.ir);
      expect(TOKENS.map((t) => interp.step(t).emitted)).toEqual(reference(TOKENS, share));
      for (const profile of ['f32', 'bf16'] as const) {
        const chk = checkCompiled(res, TOKENS, { profile });
        expect(chk.mismatches).toEqual([]);
        expect(chk.signalsCompared).toBeGreaterThan(TOKENS.length * 5);
      }
    }
  });
});
