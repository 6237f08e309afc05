/**
 * One-hots of emit fields built one layer early (src/passes/lower-encodings.ts `oneHotOf`):
 *  - a table field's one-hot is a table of indicator columns over the table's own index, in the
 *    table's layer, instead of a one-hot decode of its scalar a layer later;
 *  - a choice field (`c.choose`) gets per-case one-hots gated off by their conditions, in one
 *    layer after the conditions and values, instead of selects and then a one-hot decode.
 * A small circuit (two fields read straight from the token, a table of them, a choice among
 * three cases or none) compiles to the number of layers its hand schedule says; the same circuit
 * with the choice spelled as a plain sum of selects needs one more. Both emit, through the weights
 * (f32, bf16), what the interpreter emits at every position, and the interpreter what plain
 * arithmetic says. c.choose's at-most-one rule is checked by both interpreters.
 */
import { describe, expect, it } from 'vitest';
import { defineCircuit } from '../src/dsl/index.ts';
import type { CircuitBuilder, CircuitDef, Sig } from '../src/dsl/index.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import { compileCircuit } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { checkCompiled } from '../src/verify/check.ts';
import { Interpreter } from '../src/ir/interpret.ts';
import { FastEvaluator } from '../src/ir/evaluate-fast.ts';
import { ChipcError } from '../src/util/errors.ts';

const VOCAB = 1024; // token t < 256: x = t >> 4, y = t & 15; 1023 is BOS
const BOS = 1023;

/** kind: 0 when x < 5, 1 when x < 10, 2 when x < 13, else 3 (no case: the choice is 0). */
const kindOf = (x: number) => (x < 5 ? 0 : x < 10 ? 1 : x < 13 ? 2 : 3);
/** The chosen value: 3y, y + x, 15 − y, or 0. */
const payOf = (x: number, y: number) => [3 * y, y + x, 15 - y, 0][kindOf(x)]!;

/**
 * The token fields x, y and the payload payOf(x, y): a choice among three cases or none, or the
 * same spelled as a plain sum of selects. `overlap`: case 1 also holds at x = 4 (with case 0).
 */
function payload(c: CircuitBuilder, useChoose: boolean, overlap = false): { x: Sig; y: Sig; pay: Sig } {
  const x = c.tokenField('x', (t) => (t < 256 ? t >> 4 : 0), [0, 15]);
  const y = c.tokenField('y', (t) => (t < 256 ? t & 15 : 0), [0, 15]);
  const is = (k: number): Sig => c.table(`is${k}`, [x], (v) => (kindOf(v) === k || (overlap && k === 1 && v === 4) ? 1 : 0), [0, 1]);
  const values: Sig[] = [
    c.table('v0', [y], (b) => 3 * b, [0, 45]),
    c.table('v1', [x, y], (a, b) => a + b, [0, 30]),
    c.table('v2', [y], (b) => 15 - b, [0, 15]),
  ];
  const cases: [Sig, Sig][] = [0, 1, 2].map((k) => [is(k), values[k]!]);
  const pay = useChoose
    ? c.choose(cases, [0, 45])
    : c.linear(cases.map(([cond, v]) => [c.select(cond, v, 0), 1] as [Sig, number]), 0, [0, 45]);
  return { x, y, pay };
}

function circuit(useChoose: boolean, overlap = false) {
  return defineCircuit({ name: useChoose ? 'choose-demo' : 'select-sum-demo', vocab: VOCAB, bos: BOS }, (c) => {
    const { x, pay } = payload(c, useChoose, overlap);
    const kind = c.table('kind', [x], kindOf, [0, 3]);
    c.emit([kind, pay.named('pay')], (k, p) => 46 * k + p); // 184 ids
  });
}

const target = { ...resolveTarget('tiny').config, vocabSize: VOCAB };
const compile = (def: CircuitDef) => compileCircuit(buildCircuit(def, 'emit-onehot'), target);
const TOKENS = [BOS, ...Array.from({ length: 256 }, (_, t) => (t * 101) % 256)];

describe('emit one-hots from tables and choices', () => {
  const chosen = compile(circuit(true));
  const plain = compile(circuit(false));

  it('the choice circuit takes the hand schedule: cond / value tables, then the one-hots (2 layers); selects first cost one more', () => {
    // tables at FFN sublayer 1 (the inputs are embedded), the choice's and kind's one-hots at 3
    expect(chosen.schedule.numLayers).toBe(2);
    expect(plain.schedule.numLayers).toBe(3);
    const what = chosen.lowered.ops.map((o) => o.what);
    expect(what.some((w) => w.startsWith('one-hot of choice "pay"'))).toBe(true);
    // kind is read only by the emit: its one-hot is a table of its own (maybe fused with others)
    expect(what.some((w) => w.includes('one-hot table "kind"'))).toBe(true);
    expect(what.some((w) => w === 'one-hot of "kind"')).toBe(false);
  });

  it('emits what the interpreter emits, bit for bit (f32, bf16), and the interpreter the arithmetic', () => {
    for (const res of [chosen, plain]) {
      for (const profile of ['f32', 'bf16'] as const) {
        const chk = checkCompiled(res, TOKENS, { profile });
        expect(chk.mismatches).toEqual([]);
      }
    }
    const steps = new Interpreter(chosen.ir).run(TOKENS);
    for (let p = 1; p < TOKENS.length; p++) {
      const t = TOKENS[p]!;
      expect(steps[p]!.emitted).toBe(46 * kindOf(t >> 4) + payOf(t >> 4, t & 15));
    }
  });

  it('two cases that hold at once are an error in both interpreters, naming the choice and the cases', () => {
    const ir = buildCircuit(circuit(true, true), 'overlap');
    const fine = 0x30; // x = 3: only case 0
    const both = 0x45; // x = 4: cases 0 and 1
    const interp = new Interpreter(ir);
    interp.step(BOS);
    interp.step(fine);
    expect(() => interp.step(both)).toThrow(ChipcError);
    expect(() => new Interpreter(ir).run([BOS, both])).toThrow(/choose "pay": cases 0 \("is0"\) and 1 \("is1"\) both hold \(position 1\)/);
    const fe = new FastEvaluator(ir);
    fe.step(BOS);
    expect(() => fe.step(both)).toThrow(/interp\.choice|choose "pay": cases 0 \("is0"\) and 1 \("is1"\) both hold \(position 1\)/);
  });

  it('c.choose without cases, or with a condition that is not a bit, is a circuit error', () => {
    const empty = defineCircuit({ name: 'empty-choice', vocab: 16 }, (c) => {
      c.emit([c.choose([])], (v) => v);
    });
    expect(() => buildCircuit(empty, 'empty')).toThrow(/choose needs at least one case/);
    const notBit = defineCircuit({ name: 'wide-cond', vocab: 16 }, (c) => {
      const x = c.tokenField('x', (t) => t, [0, 15]);
      c.emit([c.choose([[x, 3]])], (v) => v);
    });
    expect(() => buildCircuit(notBit, 'wide')).toThrow(/must be a bit/);
  });
});

/**
 * A table over one choice (src/passes/lower-encodings.ts `choiceTable`): per case a table of the
 * case's value gated off by its condition, plus the table at 0 when no case holds — one FFN layer
 * after the conditions and values. f below is not 0 at 0, so the "no case" term is exercised (x ≥ 13).
 */
const fOf = (p: number) => (p === 0 ? 5 : (p * 7) % 11);
const gOf = (f: number, y: number) => (f + y) % 13;

function tableOverChoice(useChoose: boolean) {
  return defineCircuit({ name: useChoose ? 'choice-table' : 'select-sum-table', vocab: VOCAB, bos: BOS }, (c) => {
    const { y, pay } = payload(c, useChoose);
    const f = c.table('f', [pay], fOf, [0, 10], { overCases: useChoose }); // its scalar, read by g
    const fHot = c.table('fHot', [pay], fOf, [0, 10], { overCases: useChoose }); // its one-hot, read by the LM head
    const g = c.table('g', [f, y], gOf, [0, 12]);
    c.emit([fHot, g], (a, b) => 13 * a + b); // 143 ids
  });
}

describe('tables over a choice', () => {
  const chosen = compile(tableOverChoice(true));
  const plain = compile(tableOverChoice(false));

  it('read the choice\'s cases: one layer after them, where the selects and then the table take two', () => {
    const what = chosen.lowered.ops.map((o) => o.what);
    expect(what).toContain('table of choice "f"');
    expect(what.some((w) => w.startsWith('one-hot table of choice "fHot"'))).toBe(true);
    // no select of the choice is computed: nothing reads its scalar
    expect(what.filter((w) => w.startsWith('select '))).toEqual([]);
    const sublayerOf = (res: typeof chosen, w: string) => res.schedule.sublayer[res.lowered.ops.find((o) => o.what.split(' + ').includes(w))!.id]!;
    expect(sublayerOf(chosen, 'table of choice "f"')).toBe(3); // cases' tables at 1
    expect(sublayerOf(plain, 'table "f"')).toBe(5); // selects at 3
    expect(plain.schedule.numLayers).toBe(chosen.schedule.numLayers + 1);
  });

  it('emit what the interpreter emits, bit for bit (f32, bf16), and the interpreter the arithmetic', () => {
    for (const res of [chosen, plain]) {
      for (const profile of ['f32', 'bf16'] as const) {
        expect(checkCompiled(res, TOKENS, { profile }).mismatches).toEqual([]);
      }
    }
    const steps = new Interpreter(chosen.ir).run(TOKENS);
    for (let p = 1; p < TOKENS.length; p++) {
      const t = TOKENS[p]!;
      const f = fOf(payOf(t >> 4, t & 15));
      expect(steps[p]!.emitted).toBe(13 * f + gOf(f, t & 15));
    }
  });

  it('a table built over cases whose input is not one choice is a circuit error', () => {
    const notChoice = defineCircuit({ name: 'cases-of-sum', vocab: 16 }, (c) => {
      const x = c.tokenField('x', (t) => t, [0, 15]);
      c.emit([c.table('f', [x], (v) => v, [0, 15], { overCases: true })], (v) => v);
    });
    expect(() => buildCircuit(notChoice, 'not-choice')).toThrow(/table "f" is built over the cases of a choice, so its only input must be a c.choose/);
  });
});

/**
 * A choice read as a value (src/passes/lower-encodings.ts `choiceDim`): one SWITCH unit per case,
 * all writing one dim, in the layer after the conditions and values, as the selects were — so a
 * table over it reads one dim, where over the sum of selects it reads one per case.
 */
function choiceAsValue(useChoose: boolean) {
  return defineCircuit({ name: useChoose ? 'choice-value' : 'select-sum-value', vocab: VOCAB, bos: BOS }, (c) => {
    const { pay } = payload(c, useChoose);
    const h = c.table('h', [pay], (p) => (5 * p + 1) % 17, [0, 16]); // a plain table: reads pay's form
    c.emit([h], (v) => v);
  });
}

describe('a choice as one dim', () => {
  const chosen = compile(choiceAsValue(true));
  const plain = compile(choiceAsValue(false));
  const widestGate = (res: typeof chosen) => Math.max(...res.lowered.ops
    .filter((o) => o.kind === 'ffn' && o.what.includes('"h"'))
    .flatMap((o) => (o.kind === 'ffn' ? o.units.map((u) => u.gate.terms.length) : [])));

  it('is one placed signal written by one SWITCH unit per case, in the layer the selects took', () => {
    const op = chosen.lowered.ops.find((o) => o.what.startsWith('choice "'));
    expect(op?.kind).toBe('ffn');
    if (op?.kind !== 'ffn') return;
    expect(op.units.length).toBe(3);
    expect(op.writes.length).toBe(1);
    expect(chosen.schedule.numLayers).toBe(plain.schedule.numLayers);
    // the table over pay reads its one dim, where the sum of selects gives 3
    expect(widestGate(chosen)).toBe(1);
    expect(widestGate(plain)).toBe(3);
  });

  it('gives, through the weights (f32, bf16), what the interpreter gives at every position and dim', () => {
    for (const profile of ['f32', 'bf16'] as const) expect(checkCompiled(chosen, TOKENS, { profile }).mismatches).toEqual([]);
    const steps = new Interpreter(chosen.ir).run(TOKENS);
    for (let p = 1; p < TOKENS.length; p++) {
      const t = TOKENS[p]!;
      expect(steps[p]!.emitted).toBe((5 * payOf(t >> 4, t & 15) + 1) % 17);
    }
  });
});

/**
 * A choice whose case value is a wide form ready long before the conditions: five token fields
 * summed (embedded, ready at once), chosen by a condition at the end of a three-table chain. The
 * switch reads the value's own slot (one LIN unit writes it early), so the five fields need not
 * stay alive until the choice; `wide: false` gives the value two fields, read as they are.
 */
function wideCase(wide: boolean) {
  return defineCircuit({ name: wide ? 'wide-case' : 'narrow-case', vocab: VOCAB, bos: BOS }, (c) => {
    const nib = (k: number) => c.tokenField(`f${k}`, (t) => (t < 256 ? (t >> k) & 7 : 0), [0, 7]);
    const fields = (wide ? [0, 1, 2, 3, 4] : [0, 1]).map(nib);
    const value = c.linear(fields.map((f) => [f, 1] as [Sig, number]), 0, [0, 35]).named('value');
    const y = c.tokenField('y', (t) => (t < 256 ? t & 15 : 0), [0, 15]);
    const cond = [(v: number) => (v * 5 + 2) % 16, (v: number) => (v + 9) % 16, (v: number) => (v < 7 ? 1 : 0)]
      .reduce((s: Sig, f, i) => c.table(`cond${i}`, [s], f, i === 2 ? [0, 1] : [0, 15]), y);
    const chosen = c.choose([[cond, value]], [0, 35]).named('chosen');
    c.emit([c.table('h', [chosen], (v) => v % 9, [0, 8])], (v) => v);
  });
}

describe('a choice reads a wide case value from its own slot', () => {
  const wide = compile(wideCase(true));
  const narrow = compile(wideCase(false));
  const switchUp = (res: typeof wide) => {
    const op = res.lowered.ops.find((o) => o.what === 'choice "chosen"');
    return op?.kind === 'ffn' ? op.units.map((u) => u.up.terms.length) : [];
  };

  it('reads one dim, which one LIN unit writes before the choice; a narrow value is read as it is', () => {
    expect(switchUp(wide)).toEqual([1]);
    expect(wide.lowered.ops.some((o) => o.what === 'linear "value"')).toBe(true);
    expect(switchUp(narrow)).toEqual([2]);
    expect(narrow.lowered.ops.some((o) => o.what === 'linear "value"')).toBe(false);
  });

  it('gives, through the weights (f32, bf16), what the interpreter gives at every position and dim', () => {
    for (const res of [wide, narrow]) {
      for (const profile of ['f32', 'bf16'] as const) expect(checkCompiled(res, TOKENS, { profile }).mismatches).toEqual([]);
    }
    const steps = new Interpreter(wide.ir).run(TOKENS);
    for (let p = 1; p < TOKENS.length; p++) {
      const t = TOKENS[p]!;
      let v = t & 15;
      v = ((((v * 5 + 2) % 16) + 9) % 16) < 7 ? 1 : 0;
      const value = [0, 1, 2, 3, 4].reduce((s, k) => s + ((t >> k) & 7), 0);
      expect(steps[p]!.emitted).toBe((v ? value : 0) % 9);
    }
  });
});
