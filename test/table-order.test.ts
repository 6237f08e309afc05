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
 * - The search compares orders by their planned unit counts and builds only the winner;
 *   cheapestTableOrderByBuilding, which builds every order, is its definition: on random tables
 *   (a stub context: input i has a range and the form coef·dim_i, whose magnitude decides whether a
 *   ramp gate stays exact, a bound the plan does not see) both give the same order, units and
 *   outputs, or the same error — also where the planned winner fails to build.
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
import { cheapestTableOrder, cheapestTableOrderByBuilding } from '../src/passes/table-order.ts';
import type { LowerContext } from '../src/lower/context.ts';

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

type Range = { lo: number; hi: number };

function stubContext(ranges: Range[], coef: number): LowerContext {
  return { resolve: (id: number) => ({ range: ranges[id] }), formOf: (id: number) => form([{ dim: id, coef }], 0) } as unknown as LowerContext;
}

function outcome(f: () => { at: Int32Array; units: unknown; outs: unknown }): unknown {
  try {
    const r = f();
    return { at: Array.from(r.at), units: r.units, outs: r.outs };
  } catch (e) {
    return { error: String(e) };
  }
}

const arbTable = fc.record({
  ranges: fc.array(fc.record({ lo: fc.integer({ min: -2, max: 2 }), width: fc.integer({ min: 1, max: 6 }) }), { minLength: 1, maxLength: 3 })
    .map((rs) => rs.map(({ lo, width }) => ({ lo, hi: lo + width }))),
  coef: fc.constantFrom(1, 2, 16, 64, 128),
  seed: fc.integer(),
  spread: fc.constantFrom(3, 41, 2001),
});

describe('cheapestTableOrder', () => {
  it('picks what building every order picks (same order, units and outputs, or the same error)', () => {
    fc.assert(fc.property(arbTable, ({ ranges, coef, seed, spread }) => {
      const total = ranges.reduce((a, r) => a * (r.hi - r.lo + 1), 1);
      let s = seed | 0;
      const values = Array.from({ length: total }, () => { s = (Math.imul(s, 1103515245) + 12345) | 0; return (s >>> 8) % 2 === 0 ? 0 : ((s >>> 9) % spread) - (spread >> 1); });
      const outsOf = (at: Int32Array) => [{ dim: 100, values: Array.from(at, (i) => values[i]!) }];
      const ctx = stubContext(ranges, coef);
      const inputs = ranges.map((_, i) => i);
      expect(outcome(() => cheapestTableOrder(ctx, inputs, outsOf, 't'))).toEqual(outcome(() => cheapestTableOrderByBuilding(ctx, inputs, outsOf, 't')));
    }), { numRuns: 1500 });
  });

  it('when the fewest-unit order cannot be built, the cheapest one that can wins', () => {
    // f(a, b) = b over a ∈ [0, 1], b ∈ [0, 6]: with a slowest (the given order) the values run
    // 0…6, 0…6 (few bends), with b slowest they climb in pairs (a bend at every step); at coef 64
    // the given order's index 64·(7a + b) is too large for an exact ramp gate, the other's
    // 64·(a + 2b) is not
    const ranges = [{ lo: 0, hi: 1 }, { lo: 0, hi: 6 }];
    const values = Array.from({ length: 14 }, (_, i) => i % 7);
    const outsOf = (at: Int32Array) => [{ dim: 100, values: Array.from(at, (i) => values[i]!) }];
    const ctx = stubContext(ranges, 64);
    const givenOrder = input(form([{ dim: 0, coef: 448 }, { dim: 1, coef: 64 }], 0), 0, 13);
    expect(() => rampTable(givenOrder, outsOf(Int32Array.from({ length: 14 }, (_, i) => i)), 't')).toThrow(/gate partial sums/);
    const got = cheapestTableOrder(ctx, [0, 1], outsOf, 't');
    expect(Array.from(got.at)).toEqual([0, 7, 1, 8, 2, 9, 3, 10, 4, 11, 5, 12, 6, 13]);
    expect(outcome(() => got)).toEqual(outcome(() => cheapestTableOrderByBuilding(ctx, [0, 1], outsOf, 't')));
  });

  it('keeps the given order on a tie, also when split weights leave the lower bound below the count', () => {
    // f(a, b) over two bits with f(0, 1) = f(1, 0) reads the same along both orders, so both need
    // the same units; its last second difference, −256 − 2·1 + 1 = −257 (9 significant bits), is
    // split over two units, so the lower bound does not skip the second order
    const ranges = [{ lo: 0, hi: 1 }, { lo: 0, hi: 1 }];
    const values = [0, 1, 1, -256];
    const outsOf = (at: Int32Array) => [{ dim: 100, values: Array.from(at, (i) => values[i]!) }];
    const ctx = stubContext(ranges, 1);
    const got = cheapestTableOrder(ctx, [0, 1], outsOf, 't');
    expect(Array.from(got.at)).toEqual([0, 1, 2, 3]);
    expect(outcome(() => got)).toEqual(outcome(() => cheapestTableOrderByBuilding(ctx, [0, 1], outsOf, 't')));
  });
});
