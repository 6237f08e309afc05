/**
 * Negative tests of the compiler: each class of circuit error and each "does not fit" case gives
 * its own message, naming the problem and, for circuit errors, the source location of the
 * offending call in the circuit file.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { defineCircuit } from '../src/dsl/index.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import { CircuitErrors } from '../src/passes/validate.ts';
import { compileCircuit } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { ChipcError } from '../src/util/errors.ts';
import type { ModelConfig } from '../src/model/config.ts';

const tiny = resolveTarget('tiny').config;
const SRC = fs.readFileSync(new URL(import.meta.url), 'utf8').split('\n');
/** Line number of the line containing `marker` (expected locations are not hard-coded). */
const lineOf = (marker: string) => SRC.findIndex((l) => l.includes(marker) && !l.includes('lineOf(')) + 1;

function problemsOf(fn: () => unknown): CircuitErrors {
  try {
    fn();
  } catch (e) {
    if (e instanceof CircuitErrors) return e;
    throw e;
  }
  throw new Error('expected circuit errors');
}

function compileError(fn: () => unknown): ChipcError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ChipcError) return e;
    throw e;
  }
  throw new Error('expected a ChipcError');
}

describe('circuit errors carry file:line:col', () => {
  it('a cycle', () => {
    const e = problemsOf(() => buildCircuit(defineCircuit({ name: 'x', vocab: 4 }, (c) => {
      const w = c.wire('w', [0, 3]); // @cycle
      w.assign(c.table('t', [w], (v) => (v + 1) % 4, [0, 3]));
      c.emit([w]);
    })));
    const p = e.problems.find((q) => q.code === 'circuit.cycle')!;
    expect(p.message).toMatch(/cycle/);
    expect(p.loc.file).toMatch(/compile-errors\.test\.ts$/);
    expect([lineOf('// @cycle'), lineOf('// @cycle') + 1]).toContain(p.loc.line);
  });

  it('a value outside its declared range (static and at run time)', () => {
    const e = problemsOf(() => buildCircuit(defineCircuit({ name: 'x', vocab: 8 }, (c) => {
      const x = c.tokenField('x', (t) => t, [0, 7]);
      c.table('t', [x], (v) => v * 3, [0, 9]); // @range
    })));
    const p = e.problems.find((q) => q.code === 'signal.range')!;
    expect(p.loc.line).toBe(lineOf('// @range'));
    expect(p.message).toMatch(/outside its declared range \[0, 9\]/);
  });

  it('an unsupported construct (a table too large, a non-injective emit)', () => {
    const e = problemsOf(() => buildCircuit(defineCircuit({ name: 'x', vocab: 300 }, (c) => {
      const a = c.tokenField('a', (t) => t, [0, 299]);
      c.table('big', [a, a], (x, y) => (x + y) % 2, [0, 1]); // @big
      c.emit([c.table('p', [a], (v) => v % 2)], (v) => 0 * v); // @emit
    })));
    expect(e.problems.find((q) => q.code === 'table.size')!.loc.line).toBe(lineOf('// @big'));
    expect(e.problems.find((q) => q.code === 'emit.injective')!.loc.line).toBe(lineOf('// @emit'));
  });

  it('a read of an undefined signal (a wire never assigned)', () => {
    const e = problemsOf(() => buildCircuit(defineCircuit({ name: 'x', vocab: 4 }, (c) => {
      const w = c.wire('later', [0, 3]); // @undef
      c.emit([w]);
    })));
    const p = e.problems.find((q) => q.code === 'wire.unassigned')!;
    expect(p.loc.line).toBe(lineOf('// @undef'));
    expect(p.message).toMatch(/"later" is read but never assigned/);
  });

  it('reports every problem, not just the first', () => {
    const e = problemsOf(() => buildCircuit(defineCircuit({ name: 'x', vocab: 4 }, (c) => {
      const x = c.tokenField('x', (t) => t, [0, 3]);
      c.select(x, 1, 0); // @p1
      c.wire('u', [0, 1]); // @p2
      const ram = c.ram('r', { rows: 2, fields: [4] });
      ram.write(x, [x]); // @p3
      c.emit([ram.read(x)[0]!]);
    })));
    const lines = e.problems.map((p) => p.loc.line);
    expect(lines).toEqual(expect.arrayContaining([lineOf('// @p1'), lineOf('// @p2'), lineOf('// @p3')]));
    expect(e.message).toMatch(/\d+ problem\(s\)/);
  });

  it('a signal too wide for one residual slot, at compile time, at the signal', () => {
    const ir = buildCircuit(defineCircuit({ name: 'x', vocab: 8 }, (c) => {
      const x = c.tokenField('x', (t) => t, [0, 7]);
      const ram = c.ram('r', { rows: 1, fields: [1024] });
      ram.write(c.constant(0), [c.scale(x, 100)]);
      const [wide] = ram.read(c.constant(0)); // @wide
      c.emit([c.table('lo', [wide!], (v) => v % 8, [0, 7])]);
    }));
    const e = compileError(() => compileCircuit(ir, tiny));
    expect(e.code).toBe('lower.range');
    expect(e.message).toMatch(/range \[0, 1023\].*±256/);
    expect(e.message).toMatch(new RegExp(`compile-errors\\.test\\.ts:${lineOf('// @wide')}:`));
  });
});

describe('a circuit that does not fit names the resource', () => {
  const wideTable = defineCircuit({ name: 'wide', vocab: 200 }, (c) => {
    const x = c.tokenField('x', (t) => t, [0, 199]);
    c.emit([c.table('y', [x], (v) => (v * 7) % 200, [0, 199])]);
  });

  it('FFN units per layer', () => {
    const small: ModelConfig = { ...tiny, intermediateSize: 32 };
    const e = compileError(() => compileCircuit(buildCircuit(wideTable), small));
    expect(e.code).toBe('fit.units');
    expect(e.message).toMatch(/FFN units.*the target has 32/);
  });

  it('vocabulary: an explicit size below the alphabet is refused; the default widens to a multiple of 256', () => {
    const e = compileError(() => compileCircuit(buildCircuit(wideTable), tiny, { vocab: 100 }));
    expect(e.code).toBe('fit.vocab');
    expect(e.message).toMatch(/200 token ids.*requested vocabulary has 100/);
    const widened = compileCircuit(buildCircuit(wideTable), { ...tiny, vocabSize: 100 });
    expect(widened.weights.config.vocabSize).toBe(256);
    expect(widened.weights.embedTokens.rows).toBe(256);
    expect(widened.weights.lmHead.rows).toBe(256);
  });

  it('GDN heads and d_k rows (a RAM larger than a layer holds)', () => {
    const ir = buildCircuit(defineCircuit({ name: 'bigram', vocab: 256 }, (c) => {
      const a = c.tokenField('a', (t) => t, [0, 255]);
      const ram = c.ram('mem', { rows: 256, fields: [16] }); // @ram
      ram.write(a, [c.table('v', [a], (v) => v % 16, [0, 15])]);
      c.emit([ram.read(a)[0]!]);
    }));
    const e = compileError(() => compileCircuit(ir, tiny));
    expect(e.code).toBe('fit.ram');
    expect(e.message).toMatch(/heads/);
    expect(e.message).toMatch(new RegExp(`compile-errors\\.test\\.ts:${lineOf('// @ram')}:`));
  });

  it('an explicit hidden size that is too small', () => {
    const e = compileError(() => compileCircuit(buildCircuit(wideTable), tiny, { hidden: 64 }));
    expect(e.code).toBe('fit.width');
  });
});
