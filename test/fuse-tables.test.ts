/**
 * The fuse-tables pass (src/passes/fuse-tables.ts): tables over the same index share one set of
 * ramps. A circuit with three tables over the same pair of token fields (the low and high digit of
 * their product, and their sum's parity) and one over a different index compiles to one fused op
 * writing the three outputs, with fewer units than the three tables lowered apart (counted here
 * with the gadget itself), and the compiled weights equal the IR interpreter bit for bit at every
 * placed signal (f32 and bf16) and emit what plain arithmetic says.
 */
import { describe, expect, it } from 'vitest';
import { defineCircuit } from '../src/dsl/index.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import { compileCircuit } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { checkCompiled } from '../src/verify/check.ts';
import { input, rampTable } from '../src/gadgets/ffn-core.ts';
import { form } from '../src/lower/forms.ts';
import { Interpreter } from '../src/ir/interpret.ts';

const VOCAB = 1024; // token t < 256: x = t >> 4, y = t & 15; 1023 is BOS; the emitted value is a token id
const BOS = 1023;

function circuit() {
  return defineCircuit({ name: 'fuse-demo', vocab: VOCAB, bos: BOS }, (c) => {
    const x = c.tokenField('x', (t) => (t < 256 ? t >> 4 : 0), [0, 15]);
    const y = c.tokenField('y', (t) => (t < 256 ? t & 15 : 0), [0, 15]);
    const lo = c.table('lo', [x, y], (a, b) => (a * b) & 15, [0, 15]);
    const hi = c.table('hi', [x, y], (a, b) => (a * b) >> 4, [0, 14]);
    const par = c.table('par', [x, y], (a, b) => (a + b) & 1, [0, 1]);
    const other = c.table('other', [y, x], (b, a) => (a > b ? 1 : 0), [0, 1]); // another index order
    // Emit fields over the tables' values (emitting the tables themselves would read their
    // one-hots, which are tables of their own: lower-encodings.ts).
    c.emit([c.linear([[lo, 1], [hi, 16]]), c.linear([[par, 1], [other, 2]])], (v, w) => v + 240 * w); // 960 ids
  });
}

describe('fuse-tables', () => {
  const target = { ...resolveTarget('tiny').config, vocabSize: 1024 };
  const res = compileCircuit(buildCircuit(circuit(), 'fuse-demo'), target);
  const names = (ds: number[]) => ds.map((d) => res.lowered.dims[d]!.name).sort();

  it('puts the three tables over one index in one op, with fewer units than apart', () => {
    const fused = res.lowered.ops.filter((o) => o.kind === 'ffn' && o.writes.length === 3);
    expect(fused).toHaveLength(1);
    expect(names(fused[0]!.writes)).toEqual(['hi', 'lo', 'par']);
    // The same tables lowered one by one (index 16·x + y over [0, 255]).
    const x = input(form([{ dim: 1000, coef: 1 }], 0), 0, 255);
    const apart = [
      (i: number) => ((i >> 4) * (i & 15)) & 15, (i: number) => ((i >> 4) * (i & 15)) >> 4, (i: number) => ((i >> 4) + (i & 15)) & 1,
    ].reduce((s, f, k) => s + rampTable(x, [{ dim: k, values: Array.from({ length: 256 }, (_, i) => f(i)) }], `t${k}`).length, 0);
    expect(fused[0]!.kind === 'ffn' && fused[0]!.units.length).toBeLessThan(apart);
    // The table over the other index order stays on its own.
    expect(res.lowered.ops.some((o) => o.kind === 'ffn' && o.writes.length === 1 && names(o.writes)[0] === 'other')).toBe(true);
  });

  it('equals the interpreter bit for bit, and the interpreter the arithmetic', () => {
    const tokens = [BOS, ...Array.from({ length: 256 }, (_, t) => (t * 37) % 256)];
    for (const profile of ['f32', 'bf16'] as const) {
      const chk = checkCompiled(res, tokens, { profile });
      expect(chk.mismatches).toEqual([]);
      expect(chk.signalsCompared).toBeGreaterThan(tokens.length * 3);
    }
    const steps = new Interpreter(res.ir).run(tokens);
    const node = (name: string) => res.ir.nodes.find((n) => n.name === name)!.id;
    const [lo, hi, par, other] = ['lo', 'hi', 'par', 'other'].map(node);
    for (let p = 1; p < tokens.length; p++) {
      const t = tokens[p]!;
      const a = t >> 4, b = t & 15;
      const v = steps[p]!.values;
      expect([v[lo!], v[hi!], v[par!], v[other!]]).toEqual([(a * b) & 15, (a * b) >> 4, (a + b) & 1, a > b ? 1 : 0]);
    }
  });
});
