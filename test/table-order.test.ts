/**
 * Table lowering picks the input order of the mixed-radix index that needs the fewest ramp units
 * (src/passes/table-order.ts `cheapestTableOrder`), and fuse-tables bounds fused units with the
 * dims' real ranges (src/passes/fuse-tables.ts).
 *
 * - f(op, b) = (op = 0x73 ? 1 : b) over [op, b] bends at every step of the given index (b
 *   fastest), about 2·128 units; with b slowest it bends only around op = 0x73.
 * - The bits of a byte given as a wide linear form (Σ 2^k·bit_k + 256·h − 256·h', h = h') fuse
 *   into one op: charged 256 per dim, the fused gate sums would pass 2^24; charged their real
 *   ranges they do not.
 * - rampUnitsLowerBound, which lets the order search skip orders unbuilt, is at most rampTable's
 *   unit count, and equal to it when no weight is split.
 * Both circuits run through the compiled weights equal to the IR interpreter bit for bit (f32 and
 * bf16), and the interpreter equals plain arithmetic.
 */
import { describe, expect, it } from 'vitest';
import { defineCircuit } from '../src/dsl/index.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import { compileCircuit } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { checkCompiled } from '../src/verify/check.ts';
import { input, rampTable, rampUnitsLowerBound } from '../src/gadgets/ffn-core.ts';
import fc from 'fast-check';
import { form } from '../src/lower/forms.ts';
import { Interpreter } from '../src/ir/interpret.ts';

const VOCAB = 1024;
const BOS = 1023;
const target = { ...resolveTarget('tiny').config, vocabSize: VOCAB, intermediateSize: 1024 };
const special = (op: number, b: number) => (op === 0x73 ? 1 : b);

describe('the cheapest index order of a table', () => {
  // token t < 256: op = t >> 1, b = t & 1
  const res = compileCircuit(buildCircuit(defineCircuit({ name: 'order-demo', vocab: VOCAB, bos: BOS }, (c) => {
    const op = c.tokenField('op', (t) => (t < 256 ? t >> 1 : 0), [0, 127]);
    const b = c.tokenField('b', (t) => (t < 256 ? t & 1 : 0), [0, 1]);
    const f = c.table('f', [op, b], special, [0, 1]);
    c.emit([c.linear([[f, 1], [b, 2]])], (v) => v);
  }), 'order-demo'), target);

  it('lowers f(op, b) with b slowest: a dozen units instead of ~256', () => {
    const op = res.lowered.ops.find((o) => o.kind === 'ffn' && o.writes.some((d) => res.lowered.dims[d]!.name === 'f'));
    expect(op?.kind).toBe('ffn');
    const units = op!.kind === 'ffn' ? op!.units.length : 0;
    // The given order, index 2·op + b, lowered by the gadget itself.
    const x = input(form([{ dim: 1000, coef: 1 }], 0), 0, 255);
    const given = rampTable(x, [{ dim: 0, values: Array.from({ length: 256 }, (_, i) => special(i >> 1, i & 1)) }], 'given').length;
    expect(given).toBeGreaterThan(200);
    expect(units).toBeLessThanOrEqual(16);
  });

  it('equals the interpreter bit for bit, and the interpreter the arithmetic', () => {
    const tokens = [BOS, ...Array.from({ length: 256 }, (_, t) => (t * 77) % 256)];
    for (const profile of ['f32', 'bf16'] as const) {
      const chk = checkCompiled(res, tokens, { profile });
      expect(chk.mismatches).toEqual([]);
      expect(chk.signalsCompared).toBeGreaterThan(tokens.length);
    }
    const steps = new Interpreter(res.ir).run(tokens);
    const f = res.ir.nodes.find((n) => n.name === 'f')!.id;
    for (let p = 1; p < tokens.length; p++) expect(steps[p]!.values[f]).toBe(special(tokens[p]! >> 1, tokens[p]! & 1));
  });
});

describe('fuse-tables with real dim ranges', () => {
  // token t < 512: byte v = t & 255, h = h' = t >> 8 (v = Σ 2^k·bit_k + 256·h − 256·h')
  const res = compileCircuit(buildCircuit(defineCircuit({ name: 'bits-demo', vocab: VOCAB, bos: BOS }, (c) => {
    const bits = Array.from({ length: 8 }, (_, k) => c.tokenField(`v${k}`, (t) => (t < 512 ? (t >> k) & 1 : 0), [0, 1]));
    const h = c.tokenField('h', (t) => (t < 512 ? t >> 8 : 0), [0, 1]);
    const h2 = c.tokenField('h2', (t) => (t < 512 ? t >> 8 : 0), [0, 1]);
    const v = c.linear([...bits.map((x, k) => [x, 2 ** k] as [typeof x, number]), [h, 256], [h2, -256]], 0, [0, 255]).named('v');
    const out = Array.from({ length: 8 }, (_, k) => c.table(`bit${k}`, [v], (x) => (x >> k) & 1, [0, 1]));
    c.emit([c.linear(out.map((o, k) => [o, 2 ** (7 - k)] as [typeof o, number]))], (w) => w); // v bit-reversed
  }), 'bits-demo'), target);

  it('fuses the eight bit tables into one op', () => {
    const fused = res.lowered.ops.filter((o) => o.kind === 'ffn' && o.writes.length === 8);
    expect(fused).toHaveLength(1);
    expect(fused[0]!.kind === 'ffn' && fused[0]!.units.length).toBeLessThanOrEqual(260);
  });

  it('equals the interpreter bit for bit, and the interpreter the arithmetic', () => {
    const tokens = [BOS, ...Array.from({ length: 300 }, (_, t) => (t * 131) % 512)];
    for (const profile of ['f32', 'bf16'] as const) {
      const chk = checkCompiled(res, tokens, { profile });
      expect(chk.mismatches).toEqual([]);
      expect(chk.signalsCompared).toBeGreaterThan(tokens.length * 8);
    }
    const steps = new Interpreter(res.ir).run(tokens);
    const ids = Array.from({ length: 8 }, (_, k) => res.ir.nodes.find((n) => n.name === `bit${k}`)!.id);
    for (let p = 1; p < tokens.length; p++) {
      expect(ids.map((id) => steps[p]!.values[id])).toEqual(ids.map((_, k) => (tokens[p]! >> k) & 1));
    }
  });
});

describe('the lower bound that lets the order search skip orders (rampUnitsLowerBound)', () => {
  /** rampTable's unit count over `tables` (one output each) on [lo, …], or null when it refuses them. */
  const unitsOf = (tables: number[][], lo: number): number | null => {
    const x = input(form([{ dim: 1000, coef: 1 }], 0), lo, lo + tables[0]!.length - 1);
    try {
      return rampTable(x, tables.map((values, i) => ({ dim: 10 + i, values })), 'bound').length;
    } catch {
      return null;
    }
  };
  const tablesOf = (maxAbs: number) => fc.integer({ min: 1, max: 3 }).chain((k) => fc.integer({ min: 1, max: 40 }).chain((n) =>
    fc.array(fc.array(fc.oneof(fc.constant(0), fc.integer({ min: -maxAbs, max: maxAbs })), { minLength: n, maxLength: n }), { minLength: k, maxLength: k })));

  it('never exceeds the units rampTable builds (values whose second differences need split weights too)', () => {
    let compared = 0;
    fc.assert(fc.property(tablesOf(300), fc.integer({ min: -20, max: 20 }), (tables, lo) => {
      const units = unitsOf(tables, lo);
      if (units === null) return;
      compared++;
      expect(rampUnitsLowerBound(tables.map((values) => ({ values })))).toBeLessThanOrEqual(units);
    }), { numRuns: 300, seed: 20261203 });
    expect(compared).toBeGreaterThan(50); // (the engine refuses many tables of values this large)
  });

  it('equals them when no weight is split (small values): the bound skips every order it can', () => {
    fc.assert(fc.property(tablesOf(3), fc.integer({ min: -20, max: 20 }), (tables, lo) => {
      const units = unitsOf(tables, lo);
      expect(units).not.toBeNull();
      expect(rampUnitsLowerBound(tables.map((values) => ({ values })))).toBe(units);
    }), { numRuns: 300, seed: 20261203 });
  });
});
