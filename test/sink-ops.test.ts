/**
 * sink-ops (src/passes/sink-ops.ts): values computed as early as their inputs allow but read late
 * move toward their readers. Six tables of a token field x are read only after four parallel
 * three-table chains over another field y (and their sum): early they hold six slots through the chain; sunk they are computed in the
 * FFN before their readers. The sunk schedule keeps the layer count, puts every FFN op on an FFN
 * sublayer after the writers of what it reads and before its readers, packs into fewer slots, and
 * gives through the weights (f32, bf16) what the interpreter gives at every position and dim; the
 * interpreter gives what plain arithmetic gives. The early schedule (`sinkOps: false`) is the
 * control.
 */
import { describe, expect, it } from 'vitest';
import { defineCircuit } from '../src/dsl/index.ts';
import type { Sig } from '../src/dsl/index.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import { compileCircuit, type CompileResult } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { checkCompiled } from '../src/verify/check.ts';
import { Interpreter } from '../src/ir/interpret.ts';

const VOCAB = 1024; // token t < 256: x = t >> 4, y = t & 15; 1023 is BOS
const BOS = 1023;
/** Four parallel chains of three tables over y, summed. */
const STEPS = [(v: number, k: number) => (v * 7 + k) % 16, (v: number) => (v + 5) % 16, (v: number) => (v * 3) % 16];
const chainOf = (y: number) => [0, 1, 2, 3].reduce((s, k) => s + STEPS[2]!(STEPS[1]!(STEPS[0]!(y, k), k), k), 0);
const earlyOf = (x: number, k: number) => (x * k + 3) % 16;
const outOf = (x: number, y: number) => {
  let s = 0;
  for (let k = 1; k <= 6; k++) s += (chainOf(y) + earlyOf(x, k)) % 3;
  return s % 2;
};

const def = defineCircuit({ name: 'sink-demo', vocab: VOCAB, bos: BOS }, (c) => {
  const x = c.tokenField('x', (t) => (t < 256 ? t >> 4 : 0), [0, 15]);
  const y = c.tokenField('y', (t) => (t < 256 ? t & 15 : 0), [0, 15]);
  const ends = [0, 1, 2, 3].map((k) => STEPS.reduce((v: Sig, f, i) => c.table(`t${k}.${i}`, [v], (u) => f(u, k), [0, 15]), y));
  const t4 = c.linear(ends.map((e) => [e, 1] as [Sig, number]), 0, [0, 60]).named('t4');
  const early = [1, 2, 3, 4, 5, 6].map((k) => c.table(`e${k}`, [x], (v) => earlyOf(v, k), [0, 15]));
  const outs: [Sig, number][] = early.map((e, k) => [c.table(`o${k}`, [c.add(t4, e)], (s) => s % 3, [0, 2]), 1]);
  c.emit([c.table('h', [c.linear(outs, 0, [0, 12]).named('out')], (v) => v % 2, [0, 1])], (v) => v);
});

const target = { ...resolveTarget('tiny').config, vocabSize: VOCAB };
const ir = buildCircuit(def, 'sink-demo');
const TOKENS = [BOS, ...Array.from({ length: 256 }, (_, t) => (t * 101) % 256)];

/** Every FFN op on an FFN sublayer, after the writers of its inputs, before every reader of its outputs. */
function checkPlacement(res: CompileResult): void {
  const { sublayer, producedAt } = res.schedule;
  const lc = res.lowered;
  for (const op of lc.ops) {
    const s = sublayer[op.id]!;
    if (op.kind === 'ffn') expect(s % 2).toBe(1);
    for (const d of op.reads) expect(producedAt[d]!).toBeLessThan(s);
    for (const d of op.writes) expect(producedAt[d]).toBe(s);
  }
}

describe('sink-ops', () => {
  const sunk = compileCircuit(ir, target);
  const early = compileCircuit(ir, target, { sinkOps: false });
  const at = (res: CompileResult, what: string) => res.schedule.sublayer[res.lowered.ops.find((o) => o.what.includes(`"${what}"`))!.id]!;

  it('computes the early tables in the FFN before their readers, in the same layers and fewer slots', () => {
    expect(sunk.schedule.numLayers).toBe(early.schedule.numLayers);
    // (the six tables over x share their ramps: one op, fuse-tables)
    expect(at(early, 'e1')).toBe(1);
    expect(at(sunk, 'e1')).toBe(at(sunk, 't4')); // the FFN before the o tables, where t4's sum is written
    expect(sunk.packing.slotsUsed).toBeLessThan(early.packing.slotsUsed);
    checkPlacement(sunk);
    checkPlacement(early);
  });

  it('gives, through the weights (f32, bf16), what the interpreter gives at every position and dim', () => {
    for (const res of [sunk, early]) {
      for (const profile of ['f32', 'bf16'] as const) expect(checkCompiled(res, TOKENS, { profile }).mismatches).toEqual([]);
    }
    const steps = new Interpreter(ir).run(TOKENS);
    for (let p = 1; p < TOKENS.length; p++) expect(steps[p]!.emitted).toBe(outOf(TOKENS[p]! >> 4, TOKENS[p]! & 15));
  });
});
