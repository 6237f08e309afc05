/**
 * Executor.setGdnStateEntries (a RAM load's path: the state +0 but at the listed entries) against
 * setGdnState of the same state as a dense array: the same state bits, the same tracked kind,
 * all-+0 rows and bound, and the same decode afterwards — on fresh heads, on heads that hold other
 * values, and on heads handed out (gdnState).
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Executor, argmax } from '../src/exec/executor.ts';
import { loadCircuitFile } from '../src/dsl/load.ts';
import { compileCircuit } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { randomModelWeights } from '../src/model/random-weights.ts';

const bitsOf = (a: Float32Array): number[] => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));

/** Values an entry may take: positive, negative, ±0, subnormal, huge, infinite, NaN. */
const VALUES = [181.01934814453125, 1, -2.5, 0, -0, 2 ** -140, 3e38, -3e38, Infinity, -Infinity, NaN, 0.375];

function tracked(ex: Executor, layer: number, h: number) {
  const c = ex.gdnCacheOf(layer);
  return { kind: c.kind[h], rows: Array.from(c.rowNonZero[h]!), sMax: c.sMax[h], state: bitsOf(ex.gdnStateCopy(layer, h)) };
}

describe('setGdnStateEntries', () => {
  const cfg = resolveTarget('tiny').config;
  const weights = randomModelWeights(cfg, 7);
  const layers = cfg.layerTypes.flatMap((t, i) => (t === 'linear_attention' ? [i] : []));
  const size = cfg.linearKeyHeadDim * cfg.linearValueHeadDim;

  it('property: the same state, kind, all-+0 rows and bound as setGdnState of the dense array', () => {
    expect(layers.length).toBeGreaterThan(0);
    // two executors for each 50 runs, reset between (a reset leaves every head fresh): 800
    // executors, each with a wasm memory of its own, took 2 s alone but 27–64 s in a suite worker
    // that holds other files' executors (V8 collects to free address space), with no turn of the
    // event loop for the test runner
    let pair: [Executor, Executor] | null = null;
    let runs = 0;
    fc.assert(fc.property(
      fc.array(fc.record({ at: fc.integer({ min: 0, max: size - 1 }) }), { maxLength: 40 }),
      fc.constantFrom(...VALUES), fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: cfg.linearNumValueHeads - 1 }),
      (entries, value, before, h) => {
        const li = layers[h % layers.length]!;
        if (runs++ % 50 === 0 || pair === null) pair = [new Executor(weights, { path: 'sparse', profile: 'f32' }), new Executor(weights, { path: 'sparse', profile: 'f32' })];
        const [a, b] = pair;
        a.reset();
        b.reset();
        // what the head holds before: nothing (fresh), other values (set densely), or a handed-out array written by hand
        if (before === 1 || before === 2) {
          const other = new Float32Array(size);
          for (let e = 0; e < size; e += 5) other[e] = before === 1 ? 3 : -0;
          a.setGdnState(li, h, other);
          b.setGdnState(li, h, other);
        } else if (before === 3) {
          a.gdnState(li, h).fill(-1.5);
          b.gdnState(li, h).fill(-1.5);
        }
        const index = Int32Array.from(entries.map((e) => e.at));
        const dense = new Float32Array(size);
        for (const at of index) dense[at] = value;
        a.setGdnStateEntries(li, h, index, index.length, value);
        b.setGdnState(li, h, dense);
        const ta = tracked(a, li, h);
        const tb = tracked(b, li, h);
        expect(ta.state).toEqual(tb.state);
        expect(ta).toEqual(tb);
      }), { numRuns: 400 });
  }, 180_000);

  it('a count below the list writes only the first entries; bad positions and counts are refused', () => {
    const li = layers[0]!;
    const ex = new Executor(weights, { path: 'sparse', profile: 'f32' });
    ex.setGdnStateEntries(li, 1, Int32Array.of(3, 9, 4), 2, 2.5);
    const s = ex.gdnStateCopy(li, 1);
    expect([s[3], s[9], s[4]]).toEqual([2.5, 2.5, 0]);
    expect(() => ex.setGdnStateEntries(li, 1, Int32Array.of(size), 1, 1)).toThrow(/state entry .* outside a head/);
    expect(() => ex.setGdnStateEntries(li, 1, Int32Array.of(-1), 1, 1)).toThrow(/outside a head/);
    expect(() => ex.setGdnStateEntries(li, 1, Int32Array.of(1), 2, 1)).toThrow(/2 entries asked of an index list of 1/);
    expect(() => ex.setGdnStateEntries(li, cfg.linearNumValueHeads, Int32Array.of(1), 1, 1)).toThrow(/value head .* out of range/);
  });

  it('a compiled GDN RAM loaded by entries decodes as one loaded densely, token for token and state for state', async () => {
    const tiny = resolveTarget('tiny').config;
    const res = compileCircuit(await loadCircuitFile('circuits/examples/regfile.ts'), tiny);
    const li = res.weights.config.layerTypes.indexOf('linear_attention');
    const dk = tiny.linearKeyHeadDim;
    const dv = tiny.linearValueHeadDim;
    const bos = res.ir.bos ?? 0;
    const a = new Executor(res.weights, { path: 'sparse', profile: 'f32' });
    const b = new Executor(res.weights, { path: 'sparse', profile: 'f32' });
    a.prefill([bos]);
    b.prefill([bos]);
    let tokA = a.decodeArgmax(1);
    let tokB = argmax(b.decode(1));
    // a RAM-like state in every value head: one hot value per 4-column group in some rows
    for (let h = 0; h < tiny.linearNumValueHeads; h++) {
      const index: number[] = [];
      for (let i = h % 3; i < dk; i += 3) for (let g = 0; g < dv / 4; g++) index.push(i * dv + 4 * g + ((i + g + h) % 4));
      const dense = new Float32Array(dk * dv);
      for (const at of index) dense[at] = 181.01934814453125;
      a.setGdnStateEntries(li, h, Int32Array.from(index), index.length, 181.01934814453125);
      b.setGdnState(li, h, dense);
    }
    for (let i = 0; i < 40; i++) {
      expect(tokA).toBe(tokB);
      for (let h = 0; h < tiny.linearNumValueHeads; h++) expect(bitsOf(a.gdnStateCopy(li, h))).toEqual(bitsOf(b.gdnStateCopy(li, h)));
      tokA = a.decodeArgmax(tokA);
      tokB = argmax(b.decode(tokB));
    }
  });
});
