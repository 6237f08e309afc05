import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { defineCircuit } from '../src/dsl/index.ts';
import { buildCircuit, loadCircuitFile } from '../src/dsl/load.ts';
import { CircuitErrors } from '../src/passes/validate.ts';
import { Interpreter } from '../src/ir/interpret.ts';
import { ChipcError } from '../src/util/errors.ts';

function lineOf(marker: string): number {
  // The line of this test file containing `marker` (so expected locations are not hard-coded).
  const src = require('node:fs').readFileSync(__filename, 'utf8') as string;
  return src.split('\n').findIndex((l) => l.includes(marker)) + 1;
}

describe('DSL and IR interpreter', () => {
  it('runs the counter example by the interpreter', async () => {
    const ir = await loadCircuitFile('circuits/examples/counter.ts');
    const it = new Interpreter(ir);
    const out = it.generate([16], 20);
    expect(out.map((p) => p.emitted)).toEqual(Array.from({ length: 21 }, (_, i) => (i + 1) % 16));
  });

  it('reports every problem with the source location of the offending call', () => {
    const def = defineCircuit({ name: 'bad', vocab: 8 }, (c) => {
      const x = c.tokenField('x', (t) => t & 3, [0, 3]);
      const w = c.wire('w', [0, 1]); // MARK-unassigned
      const y = c.add(x, w);
      const z = c.wire('z', [0, 2]); // MARK-narrow
      z.assign(c.add(y, 5));
      c.select(x, y, 0); // MARK-notbit
      c.emit([y]);
    });
    let err: unknown;
    try {
      buildCircuit(def, 'test');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CircuitErrors);
    const problems = (err as CircuitErrors).problems;
    const byCode = new Map(problems.map((p) => [p.code, p]));
    expect(byCode.get('wire.unassigned')?.loc.line).toBe(lineOf('MARK-unassigned'));
    expect(byCode.get('signal.range')?.loc.line).toBe(lineOf('MARK-narrow'));
    expect(byCode.get('signal.notbit')?.loc.line).toBe(lineOf('MARK-notbit'));
    expect(byCode.get('wire.unassigned')?.loc.file).toMatch(/dsl\.test\.ts$/);
    expect(problems.map((p) => p.code).sort()).toEqual(['signal.notbit', 'signal.range', 'wire.unassigned']);
  });

  it('detects a combinational cycle', () => {
    const def = defineCircuit({ name: 'cyc', vocab: 2 }, (c) => {
      const w = c.wire('w', [0, 10]);
      const y = c.add(w, 1);
      w.assign(c.table('clip', [y], (v) => Math.min(v, 10), [0, 10]));
      c.emit([c.table('out', [w], (v) => v % 2)]);
    });
    expect(() => buildCircuit(def)).toThrow(/cycle/);
  });

  it('RAM: read sees this position\'s write, rows start at 0 (checked against a Map model)', () => {
    // tokens: 0..63 = write (addr = t>>3, value = t&7); 64..71 = read addr t-64 (vocab 72, bos 72? no bos)
    const def = defineCircuit({ name: 'regs', vocab: 72 }, (c) => {
      const isWrite = c.tokenField('isWrite', (t) => (t < 64 ? 1 : 0), [0, 1]);
      const addr = c.tokenField('addr', (t) => (t < 64 ? t >> 3 : t - 64), [0, 7]);
      const val = c.tokenField('val', (t) => (t < 64 ? t & 7 : 0), [0, 7]);
      const ram = c.ram('regs', { rows: 8, fields: [8] });
      ram.write(addr, [val], isWrite);
      const [r] = ram.read(addr);
      c.emit([r!]);
    });
    const ir = buildCircuit(def);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 71 }), { minLength: 1, maxLength: 60 }), (toks) => {
        const interp = new Interpreter(ir);
        const model = new Map<number, number>();
        for (const t of toks) {
          if (t < 64) model.set(t >> 3, t & 7);
          const expected = model.get(t < 64 ? t >> 3 : t - 64) ?? 0;
          expect(interp.step(t).emitted).toBe(expected);
        }
      }),
    );
  });

  it('lookup: latest matching stamp wins, default when nothing matches', () => {
    // token = op(1 bit) | key(2 bits) | val(2 bits) | stamp(3 bits); bos = 256
    const def = defineCircuit({ name: 'lk', vocab: 257, bos: 256 }, (c) => {
      const f = (name: string, fn: (t: number) => number, r: [number, number]) => c.tokenField(name, (t) => (t === 256 ? 0 : fn(t)), r);
      const put = f('put', (t) => t >> 7, [0, 1]);
      const key = f('key', (t) => (t >> 5) & 3, [0, 3]);
      const val = f('val', (t) => (t >> 3) & 3, [0, 3]);
      const stamp = f('stamp', (t) => t & 7, [0, 7]);
      const { values, hit } = c.lookup('kv', { key: [key], value: [val], query: [key], stamp, publish: put, defaults: [3] });
      c.emit([values[0]!, hit], (v, h) => v * 2 + h);
    });
    const ir = buildCircuit(def);
    const interp = new Interpreter(ir);
    interp.step(256);
    const tok = (put: number, key: number, val: number, stamp: number) => (put << 7) | (key << 5) | (val << 3) | stamp;
    expect(interp.step(tok(0, 1, 0, 1)).emitted).toBe(3 * 2 + 0); // nothing published: default
    expect(interp.step(tok(1, 1, 2, 2)).emitted).toBe(2 * 2 + 1); // sees its own publish
    expect(interp.step(tok(1, 1, 1, 3)).emitted).toBe(1 * 2 + 1); // later stamp wins
    expect(interp.step(tok(0, 2, 0, 4)).emitted).toBe(3 * 2 + 0); // other key: default
    expect(() => interp.step(tok(1, 1, 0, 3))).toThrow(ChipcError); // same stamp: ambiguous
  });

  it('range violations at run time name the signal and its location', () => {
    const def = defineCircuit({ name: 'r', vocab: 8 }, (c) => {
      const x = c.tokenField('x', (t) => t, [0, 7]);
      const w = c.wire('w', [0, 7]);
      w.assign(x);
      c.emit([w]);
    });
    const interp = new Interpreter(buildCircuit(def));
    expect(() => interp.step(9)).toThrow(/outside the circuit vocabulary/);
  });
});

describe('declared linear ranges', () => {
  it('narrow a linear node, are checked by the interpreter, and compile exactly', async () => {
    const { compileCircuit } = await import('../src/compile.ts');
    const { resolveTarget } = await import('../src/model/targets.ts');
    const { checkCompiled } = await import('../src/verify/check.ts');
    // a byte add modulo 256: s − 256·[s ≥ 256] is in [0, 255] although intervals say [−256, 510].
    const def = defineCircuit({ name: 'mod', vocab: 257, bos: 256 }, (c) => {
      const a = c.tokenField('a', (t) => (t === 256 ? 0 : (t * 37) % 256), [0, 255]);
      const b = c.tokenField('b', (t) => (t === 256 ? 0 : (t * 91 + 17) % 256), [0, 255]);
      const s = c.add(a, b);
      const carry = s.ge(256);
      const low = c.linear([[s, 1], [carry, -256]], 0, [0, 255]);
      expect(low.range).toEqual({ lo: 0, hi: 255 });
      c.emit([c.table('lowNibble', [low], (v) => v & 15, [0, 15])]);
    });
    const ir = buildCircuit(def);
    const toks = [256, ...Array.from({ length: 40 }, (_, i) => (i * 7 + 3) % 256)];
    const out = new Interpreter(ir).run(toks).map((p) => p.emitted);
    toks.forEach((t, i) => {
      const a = t === 256 ? 0 : (t * 37) % 256;
      const b = t === 256 ? 0 : (t * 91 + 17) % 256;
      expect(out[i]).toBe(((a + b) % 256) & 15);
    });
    const res = compileCircuit(ir, resolveTarget('tiny').config);
    expect(checkCompiled(res, toks, { profile: 'bf16' }).mismatches).toEqual([]);
    // A wrong declared range is caught by the interpreter at run time.
    const bad = buildCircuit(defineCircuit({ name: 'bad', vocab: 4 }, (c) => {
      const x = c.tokenField('x', (t) => t, [0, 3]);
      c.emit([c.linear([[x, 1]], 0, [0, 1])]);
    }));
    expect(() => new Interpreter(bad).run([0, 1, 2])).toThrow(/outside its range \[0, 1\]/);
  });
});

describe('emitRows: an alphabet whose token kinds use different fields', () => {
  it('emits the one matching row through the interpreter and the compiled LM head, and rejects ambiguous rows', async () => {
    const { compileCircuit } = await import('../src/compile.ts');
    const { resolveTarget } = await import('../src/model/targets.ts');
    const { checkCompiled } = await import('../src/verify/check.ts');
    // kind 0 = "A(x)" uses the payload x ∈ 0…15; kind 1 = "B" uses no payload. Tokens: A(x) = x, B = 16.
    const rows = [
      ...Array.from({ length: 16 }, (_, x) => ({ token: x, values: [0, x] as (number | null)[] })),
      { token: 16, values: [1, null] as (number | null)[] },
    ];
    const def = defineCircuit({ name: 'rows', vocab: 18, bos: 17 }, (c) => {
      const t = c.tokenField('t', (id) => (id === 17 ? 0 : id), [0, 16]);
      const kind = c.table('kind', [t], (v) => (v % 3 === 0 ? 1 : 0), [0, 1]);
      const payload = c.table('payload', [t], (v) => (v * 5) % 16, [0, 15]);
      c.emitRows([kind, payload], rows);
    });
    const ir = buildCircuit(def);
    const toks = [17, ...Array.from({ length: 30 }, (_, i) => (i * 7 + 2) % 17)];
    const out = new Interpreter(ir).run(toks).map((p) => p.emitted);
    toks.forEach((tok, i) => {
      const v = tok === 17 ? 0 : tok;
      expect(out[i]).toBe(v % 3 === 0 ? 16 : (v * 5) % 16);
    });
    const res = compileCircuit(ir, resolveTarget('tiny').config);
    for (const profile of ['f32', 'bf16'] as const) expect(checkCompiled(res, toks, { profile }).mismatches).toEqual([]);
    // Two rows that can match the same values are refused.
    expect(() => buildCircuit(defineCircuit({ name: 'amb', vocab: 4 }, (c) => {
      const a = c.tokenField('a', (id) => id & 1, [0, 1]);
      const b = c.tokenField('b', (id) => id >> 1, [0, 1]);
      c.emitRows([a, b], [{ token: 0, values: [0, null] }, { token: 1, values: [null, 1] }]); // @amb
    }))).toThrow(/can both match/);
  });
});

describe('emitRows: the ambiguity check', () => {
  // The check keys rows by number over small field ranges, by string where the ranges' product
  // passes 2^52, and compares rows pairwise beyond 30 fields: the same property in each case.
  it.each([
    { label: 'three fields of 0…2', hi: 2, extra: 0 },
    { label: 'ranges of 2^20 values (string keys)', hi: 2 ** 20, extra: 0 },
    { label: '31 fields, 28 of them never constrained (pairwise)', hi: 2, extra: 28 },
  ])('refuses a set of rows exactly when two of them can match the same field values (random rows; $label)', ({ hi, extra }) => {
    // three fields with values 0…2; each row constrains a random subset (null: any value)
    const value = fc.option(fc.nat({ max: 2 }), { nil: null, freq: 3 });
    const rowValues = fc.tuple(value, value, value).filter((v) => v.some((x) => x !== null));
    fc.assert(fc.property(fc.array(rowValues, { minLength: 1, maxLength: 12 }), (vals) => {
      // by brute force: some pair agrees on every field both constrain
      const clash = vals.some((a, i) => vals.some((b, j) => j > i && a.every((x, k) => x === null || b[k] === null || x === b[k])));
      const build = () => buildCircuit(defineCircuit({ name: 'rows', vocab: 27 }, (c) => {
        const f = [0, 1, 2].map((k) => c.tokenField(`f${k}`, (t) => Math.floor(t / 3 ** k) % 3, [0, hi]));
        for (let k = 0; k < extra; k++) f.push(c.tokenField(`g${k}`, (t) => t % 2, [0, 1]));
        c.emitRows(f, vals.map((v, token) => ({ token, values: [...v, ...Array<null>(extra).fill(null)] })));
      }));
      if (!clash) {
        expect(build).not.toThrow();
        return;
      }
      let err: unknown;
      try {
        build();
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(CircuitErrors);
      expect((err as CircuitErrors).problems.map((q) => q.code)).toContain('emit.injective');
    }), { numRuns: 300 });
  });

  it('refuses malformed rows: a row constraining no field, a value outside its field\'s range, a wrong count, a token outside the vocabulary', () => {
    const problemsOf = (rows: { token: number; values: (number | null)[] }[]) => {
      try {
        buildCircuit(defineCircuit({ name: 'rows', vocab: 27 }, (c) => {
          const f = [0, 1].map((k) => c.tokenField(`f${k}`, (t) => Math.floor(t / 3 ** k) % 3, [0, 2]));
          c.emitRows(f, rows);
        }));
      } catch (e) {
        expect(e).toBeInstanceOf(CircuitErrors);
        return (e as CircuitErrors).problems.map((q) => `${q.code}: ${q.message}`);
      }
      return [];
    };
    expect(problemsOf([{ token: 0, values: [0, 1] }, { token: 1, values: [1, null] }])).toEqual([]);
    expect(problemsOf([{ token: 0, values: [null, null] }])).toEqual(['emit.rows: emit row of token 0 constrains no field']);
    expect(problemsOf([{ token: 3, values: [1, 5] }, { token: 4, values: [7, 9] }])).toEqual([
      'emit.rows: emit row of token 3 requires 5 of "f1", outside its range [0, 2]',
      'emit.rows: emit row of token 4 requires 7 of "f0", outside its range [0, 2]',
      'emit.rows: emit row of token 4 requires 9 of "f1", outside its range [0, 2]',
    ]);
    expect(problemsOf([{ token: 2, values: [1] }])).toEqual(['emit.rows: emit row of token 2 has 1 values for 2 fields']);
    expect(problemsOf([{ token: 27, values: [1, 1] }])).toEqual(['emit.token: emit row token 27 is not a token id of the vocabulary [0, 27)']);
  });
});

describe('tables passed again: token tables and emit rows shared by several builds', () => {
  const problemsOf = (def: ReturnType<typeof defineCircuit>): string[] => {
    try {
      buildCircuit(def);
    } catch (e) {
      expect(e).toBeInstanceOf(CircuitErrors);
      return (e as CircuitErrors).problems.map((q) => `${q.code}: ${q.message}`);
    }
    return [];
  };

  it('a token table gives the field its values and bounds, and is checked against each declared range and vocabulary', () => {
    const table = [5, 0, 2, 7, 1, 3, 6, 4];
    const emitted: number[][] = [];
    for (let build = 0; build < 2; build++) {
      const ir = buildCircuit(defineCircuit({ name: 'tab', vocab: 8 }, (c) => {
        const x = c.tokenTable('x', table);
        c.emit([c.table('y', [x], (v) => (v + 1) % 8, [0, 7])]);
      }));
      const node = ir.nodes.find((n) => n.op === 'token_field')!;
      expect(node.range).toEqual({ lo: 0, hi: 7 });
      emitted.push(new Interpreter(ir).generate([3], 3).map((p) => p.emitted!));
    }
    // the field is the table: fed id 3 (value 7) the circuit emits 0, then follows the table
    expect(emitted[0]![0]).toBe(0);
    expect(emitted[1]).toEqual(emitted[0]);
    // the same array, a narrower declared range: refused (the bounds found once still decide)
    expect(problemsOf(defineCircuit({ name: 'tab', vocab: 8 }, (c) => { c.emit([c.tokenTable('x', table, [0, 6])]); })))
      .toEqual(['signal.range: token field "x" is 7 at token 3, outside its declared range [0, 6]']);
    expect(problemsOf(defineCircuit({ name: 'tab', vocab: 9 }, (c) => { c.emit([c.tokenTable('x', table, [0, 7])]); })))
      .toEqual(['signal.vocab: token field "x" has 8 values; the vocabulary has 9 ids']);
    expect(problemsOf(defineCircuit({ name: 'tab', vocab: 2 }, (c) => { c.emit([c.tokenTable('x', [0, 0.5])]); })))
      .toEqual(['signal.nonint: token field "x" at token 1 must be an integer, got 0.5']);
  });

  it('a byte table (Int8Array) gives the bounds of its values, negative ones and the extremes included', () => {
    // (256 ids, the values repeated: every value + 128 is a token id)
    const rangeOf = (values: number[]) => {
      const table = Int8Array.from({ length: 256 }, (_, t) => values[t % values.length]!);
      const ir = buildCircuit(defineCircuit({ name: 'bytes', vocab: 256 }, (c) => { c.emit([c.tokenTable('x', table)], (v) => v + 128); }));
      return ir.nodes.find((n) => n.op === 'token_field')!.range;
    };
    expect(rangeOf([-3, 5, -128, 127, 0])).toEqual({ lo: -128, hi: 127 });
    expect(rangeOf([-2, -1, -2])).toEqual({ lo: -2, hi: -1 });
    expect(rangeOf([4, 9, 4])).toEqual({ lo: 4, hi: 9 });
    const table = Int8Array.from([1, 0, -5, 3, 1, 1, 1, 1]);
    expect(problemsOf(defineCircuit({ name: 'bytes', vocab: 8 }, (c) => { c.emit([c.tokenTable('x', table, [-4, 3])], (v) => v + 4); })))
      .toEqual(['signal.range: token field "x" is -5 at token 2, outside its declared range [-4, 3]']);
  });

  it('one table lowered under different declared ranges: each compile embeds its own one-hot, bit for bit as interpreted', async () => {
    const { compileCircuit } = await import('../src/compile.ts');
    const { resolveTarget } = await import('../src/model/targets.ts');
    const { checkCompiled } = await import('../src/verify/check.ts');
    const table = Array.from({ length: 16 }, (_, t) => (t * 5 + 3) % 8);
    const toks = Array.from({ length: 24 }, (_, i) => (i * 7 + 1) % 16);
    const emitted: number[][] = [];
    for (const range of [[0, 7], [0, 9], [-2, 7], [0, 7]] as [number, number][]) {
      const ir = buildCircuit(defineCircuit({ name: 'shared', vocab: 16 }, (c) => { c.emit([c.tokenTable('x', table, range)], (v) => v - range[0]); }));
      const res = compileCircuit(ir, resolveTarget('tiny').config);
      const check = checkCompiled(res, toks, { profile: 'f32' });
      expect(check.mismatches).toEqual([]);
      // the emitted token is value − lo of the declared range (the one-hot's index)
      emitted.push(new Interpreter(ir).run(toks).map((p) => p.emitted!));
      expect(emitted.at(-1)).toEqual(toks.map((t) => table[t]! - range[0]));
    }
  });

  it('emit rows sound for one set of field ranges are checked again for another', () => {
    const rows = [{ token: 0, values: [0, 2] }, { token: 1, values: [1, null] }, { token: 2, values: [2, 0] }];
    const def = (hi: number) => defineCircuit({ name: 'rows', vocab: 9 }, (c) => {
      const f = [0, 1].map((k) => c.tokenField(`f${k}`, (t) => Math.min(hi, Math.floor(t / 3 ** k) % 3), [0, hi]));
      c.emitRows(f, rows);
    });
    expect(problemsOf(def(2))).toEqual([]);
    expect(problemsOf(def(2))).toEqual([]);
    expect(problemsOf(def(1))).toEqual([
      'emit.rows: emit row of token 0 requires 2 of "f1", outside its range [0, 1]',
      'emit.rows: emit row of token 2 requires 2 of "f0", outside its range [0, 1]',
    ]);
    // an ambiguous set stays refused however often it is passed
    const clash = [{ token: 0, values: [0, null] }, { token: 1, values: [null, 1] }];
    const amb = () => defineCircuit({ name: 'amb', vocab: 9 }, (c) => {
      c.emitRows([0, 1].map((k) => c.tokenField(`f${k}`, (t) => Math.floor(t / 3 ** k) % 3, [0, 2])), clash);
    });
    for (let i = 0; i < 2; i++) expect(problemsOf(amb())).toEqual(['emit.injective: emit rows of tokens 0 and 1 can both match the same field values']);
  });
});

describe('previousAll: several delays in one group of delay RAMs', () => {
  it('delays a group of signals exactly, with their defaults, using one key head per slice of log2(dk) bits', async () => {
    const { compileCircuit } = await import('../src/compile.ts');
    const { resolveTarget } = await import('../src/model/targets.ts');
    const { checkCompiled } = await import('../src/verify/check.ts');
    const def = defineCircuit({ name: 'pair', vocab: 65, bos: 64 }, (c) => {
      const a = c.tokenField('a', (t) => (t === 64 ? 0 : t >> 3), [0, 7]);
      const b = c.tokenField('b', (t) => (t === 64 ? 0 : t & 7), [0, 7]);
      const [pa, pb] = c.previousAll([a, b], [5, 6]);
      c.emit([c.table('mix', [c.add(c.scale(pa!, 8), pb!)], (v) => v, [0, 63])]);
    });
    const ir = buildCircuit(def);
    const toks = [64, ...Array.from({ length: 30 }, (_, i) => (i * 11 + 3) % 64)];
    const out = new Interpreter(ir).run(toks).map((p) => p.emitted);
    toks.forEach((_, i) => expect(out[i]).toBe(i === 0 ? 5 * 8 + 6 : toks[i - 1] === 64 ? 0 : toks[i - 1]));
    const tiny = resolveTarget('tiny').config;
    const res = compileCircuit(ir, tiny);
    // 6 delayed bits; a delay RAM slice holds ⌊log2 dk⌋ of them (dk = 16 at tiny: 4), both signals share the slices
    expect(res.layers.reduce((s, l) => s + (l.type === 'linear_attention' ? l.heads : 0), 0)).toBe(Math.ceil(6 / Math.floor(Math.log2(tiny.linearKeyHeadDim))));
    for (const profile of ['f32', 'bf16'] as const) expect(checkCompiled(res, toks, { profile, prefill: 4 }).mismatches).toEqual([]);
  });
});
