/**
 * Sums of tables that share their inputs, as one dim per sum in one FFN op
 * (src/passes/lower-table-sums.ts): a two-column "multiplier" of nibbles. The digits of x·y and of
 * x·z, l = (x·y) mod 16, h = ⌊x·y / 16⌋ and l2, h2 likewise, feed three column sums
 * D0 = l + 3, D1 = h + l2 + w (w a token field: another term, folded into the dim), D2 = h2.
 * Tables over (x, y) feed D0 and D1, tables over (x, z) D1 and D2: one component of three sums.
 * It is one op writing three placed dims named for the sums, whose ramps are shared as
 * fuse-tables shares them apart (no more units than the tables' own ops plus the folded term and
 * the bias). With w three tables late, D1's dim holds its tables' part and w stays a term of its
 * form. The same circuit with a table of h emitted too (so h is not the sum's alone) keeps the
 * tables apart: the positive control. Both give, through the weights (f32, bf16), what the
 * interpreter gives at every position and placed dim, and the interpreter what plain arithmetic
 * gives.
 */
import { describe, expect, it } from 'vitest';
import { defineCircuit } from '../src/dsl/index.ts';
import type { CircuitDef } from '../src/dsl/index.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import { compileCircuit } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { checkCompiled } from '../src/verify/check.ts';
import { Interpreter } from '../src/ir/interpret.ts';

const VOCAB = 1024; // t < 1023: x = t & 15, y = (t >> 4) & 15, z = (t >> 8) & 3, w = t % 5; 1023 is BOS
const BOS = 1023;
const fieldsOf = (t: number) => (t === BOS ? { x: 0, y: 0, z: 0, w: 0 } : { x: t & 15, y: (t >> 4) & 15, z: (t >> 8) & 3, w: t % 5 });
/** The column sums; `lateW`: w enters D1 as (3³·w) mod 5, through three tables. */
const columns = (t: number, lateW = false): [number, number, number] => {
  const { x, y, z, w } = fieldsOf(t);
  return [((x * y) & 15) + 3, (x * y >> 4) + ((x * z) & 15) + (lateW ? (27 * w) % 5 : w), (x * z) >> 4];
};
const outOf = (d: [number, number, number]) => ((d[0] * 7 + d[1] * 3 + d[2]) % 61);

/**
 * `shareH`: a table of h is emitted too, so h has two readers. `lateW`: w reaches D1 through three
 * tables, so it is not ready when the tables are and stays a term of D1's form.
 */
function circuit(shareH: boolean, lateW = false): CircuitDef {
  return defineCircuit({ name: shareH ? 'table-sums-shared' : 'table-sums', vocab: VOCAB, bos: BOS }, (c) => {
    const x = c.tokenField('x', (t) => fieldsOf(t).x, [0, 15]);
    const y = c.tokenField('y', (t) => fieldsOf(t).y, [0, 15]);
    const z = c.tokenField('z', (t) => fieldsOf(t).z, [0, 3]);
    const wTok = c.tokenField('w', (t) => fieldsOf(t).w, [0, 4]);
    const through = (v: typeof wTok, k: number) => c.table(`w${k}`, [v], (u) => (3 * u) % 5, [0, 4]);
    const w = lateW ? through(through(through(wTok, 1), 2), 3) : wTok;
    const l = c.table('l', [x, y], (a, b) => (a * b) & 15, [0, 15]);
    const h = c.table('h', [x, y], (a, b) => (a * b) >> 4, [0, 14]);
    const l2 = c.table('l2', [x, z], (a, b) => (a * b) & 15, [0, 15]);
    const h2 = c.table('h2', [x, z], (a, b) => (a * b) >> 4, [0, 2]);
    const D0 = c.linear([[l, 1]], 3).named('D0');
    const D1 = c.linear([[h, 1], [l2, 1], [w, 1]]).named('D1');
    const D2 = c.linear([[h2, 1]]).named('D2');
    const e0 = c.table('e0', [D0], (v) => (v * 7) % 61, [0, 60]);
    const e1 = c.table('e1', [D1], (v) => (v * 3) % 61, [0, 60]);
    const out = c.table('out', [c.add(e0, e1, D2)], (v) => v % 61, [0, 60]);
    if (shareH) c.emit([out, c.table('hEcho', [h], (v) => v & 3, [0, 3])], (o, hv) => 4 * o + hv);
    else c.emit([out], (o) => o);
  });
}

const target = { ...resolveTarget('tiny').config, vocabSize: VOCAB };
const compile = (def: CircuitDef) => compileCircuit(buildCircuit(def, 'table-sums'), target);
const TOKENS = [BOS, ...Array.from({ length: 400 }, (_, k) => (k * 389 + 11) % 1023)];

describe('sums of tables that share their inputs, as one dim each', () => {
  const summed = compile(circuit(false));
  const shared = compile(circuit(true));
  const sumsOp = (res: typeof summed) => res.lowered.ops.filter((o) => o.what.startsWith('sums of tables') && o.writes.some((d) => /^D\d$/.test(res.lowered.dims[d]!.name)));
  const placed = (res: typeof summed) => new Set(res.signals.map((s) => s.name));
  const tableUnits = (res: typeof summed) => res.lowered.ops
    .filter((o) => o.kind === 'ffn' && /"(l|h|l2|h2)"/.test(o.what)).reduce((a, o) => a + (o.kind === 'ffn' ? o.units.length : 0), 0);

  it('is one op writing one whole dim per sum, with the ramps shared', () => {
    const ops = sumsOp(summed);
    expect(ops.length).toBe(1);
    const op = ops[0]!;
    expect(op.writes.map((d) => summed.lowered.dims[d]!.name).sort()).toEqual(['D0', 'D1', 'D2']);
    // every dim holds its sum's whole value (w folded into D1): each names its IR node
    for (const d of op.writes) expect(summed.lowered.dims[d]!.node).toBeGreaterThanOrEqual(0);
    const names = placed(summed);
    for (const t of ['l', 'h', 'l2', 'h2']) expect(names.has(t)).toBe(false);
    // the units: what the tables cost apart, fused per input pair, plus one LIN unit for w and
    // one constant unit for D0's bias
    expect(op.kind === 'ffn' ? op.units.length : 0).toBeLessThanOrEqual(tableUnits(shared) + 2);
    expect(summed.packing.slotsUsed).toBeLessThan(shared.packing.slotsUsed);
    expect(summed.schedule.numLayers).toBe(shared.schedule.numLayers);
  });

  it('leaves a term that comes later than the tables out of the dim, which then holds part of the sum', () => {
    const late = compile(circuit(false, true));
    const op = sumsOp(late)[0]!;
    const dims = op.writes.map((d) => late.lowered.dims[d]!);
    expect(dims.map((d) => d.name).sort()).toEqual(['D0', 'D1.tables', 'D2']);
    expect(dims.find((d) => d.name === 'D1.tables')!.node).toBe(-1);
    for (const profile of ['f32', 'bf16'] as const) expect(checkCompiled(late, TOKENS, { profile }).mismatches).toEqual([]);
    const interp = new Interpreter(late.ir);
    expect(TOKENS.map((t) => interp.step(t).emitted)).toEqual(TOKENS.map((t) => outOf(columns(t, true))));
  });

  it('keeps the tables apart when one has another reader (the positive control)', () => {
    expect(sumsOp(shared)).toEqual([]);
    const names = placed(shared);
    for (const t of ['l', 'h', 'l2', 'h2']) expect(names.has(t)).toBe(true);
  });

  it('gives the interpreter bit for bit (f32, bf16), and the interpreter gives plain arithmetic', () => {
    for (const [res, share] of [[summed, false], [shared, true]] as const) {
      const interp = new Interpreter(res.ir);
      expect(TOKENS.map((t) => interp.step(t).emitted)).toEqual(TOKENS.map((t) => {
        const o = outOf(columns(t));
        return share ? 4 * o + (((fieldsOf(t).x * fieldsOf(t).y) >> 4) & 3) : o;
      }));
      for (const profile of ['f32', 'bf16'] as const) {
        const chk = checkCompiled(res, TOKENS, { profile });
        expect(chk.mismatches).toEqual([]);
        expect(chk.signalsCompared).toBeGreaterThan(TOKENS.length * 5);
      }
    }
  });
});
