/**
 * A sum of single-use compares and one-input tables as one dim (src/passes/lower-encodings.ts
 * `sumDim`): a byte of XOR bits, Σ 2^i·[x_i + y_i = 1], and a small code
 * [x > y] + 2·[x = y] + 4·[x ≥ 8] (two compares of two signals, one of a signal with a constant).
 * Each is one placed dim that one FFN op writes, where its terms were a dim each; the table that
 * reads it reads one dim; the layers do not change. The same circuit with one XOR bit read twice
 * (so that bit is not the sum's alone) keeps the plain form: that is the positive control. Both
 * give, through the weights (f32, bf16), what the interpreter gives at every position and placed
 * dim, and the interpreter what plain arithmetic gives.
 */
import { describe, expect, it } from 'vitest';
import { defineCircuit } from '../src/dsl/index.ts';
import type { CircuitDef, Sig } from '../src/dsl/index.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import { compileCircuit } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { checkCompiled } from '../src/verify/check.ts';
import { Interpreter } from '../src/ir/interpret.ts';

const VOCAB = 1024; // token t < 256: x = t >> 4 and y = t & 15 (nibbles); 1023 is BOS
const BOS = 1023;
const hOf = (x: number, y: number) => ((x ^ y) * 5 + 1) % 17;
const codeOf = (x: number, y: number) => (x > y ? 1 : 0) + (x === y ? 2 : 0) + (x >= 8 ? 4 : 0);

/** `shareBit`: the XOR's bit 0 is also emitted on its own, so it has two readers. */
function circuit(shareBit: boolean): CircuitDef {
  return defineCircuit({ name: shareBit ? 'sum-shared' : 'sum-dims', vocab: VOCAB, bos: BOS }, (c) => {
    const x = c.tokenField('x', (t) => (t < 256 ? t >> 4 : 0), [0, 15]);
    const y = c.tokenField('y', (t) => (t < 256 ? t & 15 : 0), [0, 15]);
    const bit = (v: Sig, i: number, tag: string) => c.table(`${tag}${i}`, [v], (u) => (u >> i) & 1, [0, 1]);
    const xb = [0, 1, 2, 3].map((i) => bit(x, i, 'xb'));
    const yb = [0, 1, 2, 3].map((i) => bit(y, i, 'yb'));
    const xorBits = xb.map((b, i) => c.table(`xor${i}`, [c.add(b, yb[i]!)], (s) => (s === 1 ? 1 : 0), [0, 1]));
    const xorNib = c.linear(xorBits.map((b, i) => [b, 2 ** i] as [Sig, number]), 0, [0, 15]).named('xorNib');
    const code = c.linear([[x.gt(y), 1], [x.eq(y), 2], [x.ge(8), 4]], 0, [0, 7]).named('code');
    const h = c.table('h', [xorNib], (v) => (v * 5 + 1) % 17, [0, 16]);
    const g = c.table('g', [code], (v) => (v * 3) % 8, [0, 7]);
    if (shareBit) c.emit([h, g, xorBits[0]!], (hv, gv, b) => 16 * hv + 2 * gv + b);
    else c.emit([h, g], (hv, gv) => 8 * hv + gv);
  });
}

const target = { ...resolveTarget('tiny').config, vocabSize: VOCAB };
const compile = (def: CircuitDef) => compileCircuit(buildCircuit(def, 'sum-dims'), target);
const TOKENS = [BOS, ...Array.from({ length: 256 }, (_, t) => (t * 101) % 256)];

describe('a sum of single-use compares and tables as one dim', () => {
  const summed = compile(circuit(false));
  const shared = compile(circuit(true));
  const sumOp = (res: typeof summed, name: string) => res.lowered.ops.find((o) => o.what === `sum "${name}"`);
  const gateWidth = (res: typeof summed, table: string) => Math.max(...res.lowered.ops
    .filter((o) => o.kind === 'ffn' && o.what.includes(`"${table}"`))
    .flatMap((o) => (o.kind === 'ffn' ? o.units.map((u) => u.gate.terms.length) : [])));
  const placed = (res: typeof summed) => new Set(res.signals.map((s) => s.name));

  it('writes each sum with one op into one placed dim, in the same layers; the tables over them read one dim', () => {
    for (const name of ['xorNib', 'code']) {
      const op = sumOp(summed, name);
      expect(op?.kind).toBe('ffn');
      expect(op?.writes.length).toBe(1);
    }
    expect(summed.schedule.numLayers).toBe(shared.schedule.numLayers);
    expect(gateWidth(summed, 'h')).toBe(1);
    expect(gateWidth(summed, 'g')).toBe(1);
    const names = placed(summed);
    expect(names.has('xorNib')).toBe(true);
    expect(names.has('code')).toBe(true);
    for (let i = 0; i < 4; i++) expect(names.has(`xor${i}`)).toBe(false);
    expect(summed.packing.slotsUsed).toBeLessThan(shared.packing.slotsUsed);
  });

  it('keeps the plain form when a term has another reader (the positive control)', () => {
    expect(sumOp(shared, 'xorNib')).toBeUndefined();
    expect(sumOp(shared, 'code')).toBeDefined();
    // the shared bit keeps its dim; the other three are one dim, a sum of tables
    // (passes/lower-table-sums.ts), so the table over the nibble reads two dims
    expect(gateWidth(shared, 'h')).toBe(2);
    const names = placed(shared);
    expect(names.has('xor0')).toBe(true);
    for (let i = 1; i < 4; i++) expect(names.has(`xor${i}`)).toBe(false);
    expect(names.has('xorNib.tables')).toBe(true);
  });

  it('gives, through the weights (f32, bf16), what the interpreter gives at every position and dim', () => {
    for (const res of [summed, shared]) {
      for (const profile of ['f32', 'bf16'] as const) expect(checkCompiled(res, TOKENS, { profile }).mismatches).toEqual([]);
    }
    const steps = new Interpreter(summed.ir).run(TOKENS);
    const stepsShared = new Interpreter(shared.ir).run(TOKENS);
    for (let p = 1; p < TOKENS.length; p++) {
      const t = TOKENS[p]!;
      const x = t >> 4;
      const y = t & 15;
      const g = (codeOf(x, y) * 3) % 8;
      expect(steps[p]!.emitted).toBe(8 * hOf(x, y) + g);
      expect(stepsShared[p]!.emitted).toBe(16 * hOf(x, y) + 2 * g + ((x ^ y) & 1));
    }
  });
});
