/**
 * Every example circuit runs through the IR interpreter and through its compiled weights in the
 * reference executor, on random inputs, and the two are compared at every position: the emitted
 * token and every signal placed in the residual stream at every sublayer boundary, as float32
 * bit patterns — in f32 and bf16, on the dense and sparse paths, in shuffled and FMA order, by
 * teacher forcing and by plain greedy generation.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { loadCircuitFile } from '../src/dsl/load.ts';
import { compileCircuit, type CompileResult } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { checkCompiled, type CheckOptions } from '../src/verify/check.ts';
import { Interpreter } from '../src/ir/interpret.ts';
import { SBOX } from '../circuits/examples/sbox.ts';
import { delta, lambda } from '../circuits/examples/fsm.ts';
import { BOS as KV_BOS } from '../circuits/examples/kv.ts';

const tiny = resolveTarget('tiny').config;
const compiled = new Map<string, CompileResult>();
async function compile(name: string): Promise<CompileResult> {
  let r = compiled.get(name);
  if (!r) {
    r = compileCircuit(await loadCircuitFile(`circuits/examples/${name}.ts`), tiny);
    compiled.set(name, r);
  }
  return r;
}

const MODES: { label: string; opts: CheckOptions }[] = [
  { label: 'f32 sparse', opts: { profile: 'f32', path: 'sparse' } },
  { label: 'f32 dense', opts: { profile: 'f32', path: 'dense' } },
  { label: 'bf16', opts: { profile: 'bf16' } },
  { label: 'shuffled order', opts: { order: { kind: 'shuffled', seed: 11 } } },
  { label: 'fma order', opts: { order: { kind: 'fma' } } },
];

/** Token streams: BOS, then random ids of the circuit's alphabet (excluding BOS). */
function streams(bos: number, maxLen: number) {
  return fc.array(fc.integer({ min: 0, max: bos - 1 }), { minLength: 1, maxLength: maxLen }).map((t) => [bos, ...t]);
}

/** kv streams: puts carry strictly increasing stamps (the latest put of a key wins), gets anywhere. */
function kvStreams(maxLen: number) {
  return fc.array(fc.record({ put: fc.boolean(), key: fc.integer({ min: 0, max: 3 }), value: fc.integer({ min: 0, max: 3 }) }), { minLength: 1, maxLength: maxLen })
    .map((ops) => {
      let stamp = 0;
      const toks = [KV_BOS];
      for (const o of ops) {
        if (o.put && stamp < 16) toks.push(64 * o.key + 16 * o.value + stamp++);
        else toks.push(256 + o.key);
      }
      return toks;
    });
}

function expectExact(res: CompileResult, tokens: number[], opts: CheckOptions): void {
  const r = checkCompiled(res, tokens, opts);
  expect(r.mismatches).toEqual([]);
  expect(r.signalsCompared).toBeGreaterThan(tokens.length);
}

const EXAMPLES: {
  name: string; runs: number; len: number;
  gen?: () => fc.Arbitrary<number[]>;
  /** Whether greedy generation makes sense (the emitted token is a valid next input). */
  generates?: boolean;
  check?: (tokens: number[], emitted: number[]) => void;
}[] = [
  { name: 'counter', runs: 6, len: 24, check: (t, e) => t.forEach((x, i) => expect(e[i]).toBe(((x === 16 ? 0 : x) + 1) % 16)) },
  { name: 'adder', runs: 5, len: 20, check: (t, e) => t.forEach((x, i) => expect(e[i]).toBe(x === 256 ? 0 : (x >> 4) + (x & 15))) },
  { name: 'comparator', runs: 5, len: 20, check: (t, e) => t.forEach((x, i) => {
    const [a, b] = x === 256 ? [0, 0] : [x >> 4, x & 15];
    expect(e[i]).toBe(a < b ? 0 : a === b ? 1 : 2);
  }) },
  { name: 'sbox', runs: 5, len: 20, check: (t, e) => t.forEach((x, i) => expect(e[i]).toBe(SBOX[x === 64 ? 0 : x])) },
  { name: 'regfile', runs: 6, len: 40 },
  { name: 'delay', runs: 5, len: 24, check: (t, e) => t.forEach((x, i) => {
    const d = (y: number) => (y === 32 ? 0 : y & 15);
    const before = i === 0 ? 0 : d(t[i - 1]!);
    expect(e[i]).toBe(before + (before === d(x) ? 16 : 0));
  }) },
  { name: 'kv', runs: 6, len: 30, gen: () => kvStreams(30), generates: false, check: (t, e) => {
    const store = new Map<number, number>();
    t.forEach((x, i) => {
      if (x === KV_BOS) return expect(e[i]).toBe(3);
      if (x < 256) store.set(x >> 6, (x >> 4) & 3);
      const k = x < 256 ? x >> 6 : x - 256;
      expect(e[i]).toBe(store.has(k) ? store.get(k)! + 4 : 3);
    });
  } },
  { name: 'fsm', runs: 5, len: 24, check: (t, e) => t.forEach((x, i) => {
    const [q, s] = x === 32 ? [0, 0] : [x >> 2, x & 3];
    expect(e[i]).toBe(4 * delta(q, s) + lambda(q, s));
  }) },
];

describe.each(EXAMPLES)('example circuit $name: interpreter = compiled weights', ({ name, runs, len, gen, generates, check }) => {
  it.each(MODES)('teacher-forced random streams, $label', async ({ opts }) => {
    const res = await compile(name);
    const arb = gen ? gen() : streams(res.ir.bos!, len);
    fc.assert(fc.property(arb, (tokens) => expectExact(res, tokens, opts)), { numRuns: runs });
  });

  it('the interpreter matches an independent model of the circuit', async () => {
    const res = await compile(name);
    if (!check) return;
    const arb = gen ? gen() : streams(res.ir.bos!, len);
    fc.assert(fc.property(arb, (tokens) => {
      const out = new Interpreter(res.ir).run(tokens).map((p) => p.emitted!);
      check(tokens, out);
    }), { numRuns: 20 });
  });

  it.skipIf(generates === false)('plain greedy generation from BOS follows the interpreter', async () => {
    const res = await compile(name);
    const r = checkCompiled(res, [res.ir.bos!], { mode: 'generate', length: 24 });
    expect(r.mismatches).toEqual([]);
  });

  it('a prompt prefilled in one forward (chunked GDN kernel) then decoded gives the same trace', async () => {
    const res = await compile(name);
    const arb = gen ? gen() : streams(res.ir.bos!, len);
    fc.assert(fc.property(arb, (tokens) => {
      const r = checkCompiled(res, tokens, { prefill: Math.ceil(tokens.length / 2) });
      expect(r.mismatches).toEqual([]);
    }), { numRuns: 2 });
  });
});

describe('register file specifics', () => {
  it('matches a Map model of the registers, and a write-only prompt (chunked kernel) loads the same state', async () => {
    const res = await compile('regfile');
    fc.assert(fc.property(fc.array(fc.integer({ min: 0, max: 135 }), { minLength: 1, maxLength: 40 }), (ops) => {
      const regs = new Map<number, number>();
      const out = new Interpreter(res.ir).run([136, ...ops]).map((p) => p.emitted);
      ops.forEach((t, i) => {
        if (t < 128) regs.set(t >> 4, t & 15);
        expect(out[i + 1]).toBe(regs.get(t < 128 ? t >> 4 : t - 128) ?? 0);
      });
    }), { numRuns: 30 });
    // Writes as a prompt: the chunked kernel must leave the same state, then decode reads are exact.
    const writes = [136, 0x15, 0x27, 0x3f, 0x12, 0x7a, 0x6b];
    const reads = [128, 129, 130, 131, 134, 135];
    const r = checkCompiled(res, [...writes, ...reads], { prefill: writes.length });
    expect(r.mismatches).toEqual([]);
  });
});

describe('the checker has teeth', () => {
  it('reports the first divergence when one weight of the compiled model is perturbed', async () => {
    const res = await compile('regfile');
    const mixer = res.weights.layers[0]!.mixer;
    if (mixer.kind !== 'linear_attention') throw new Error('expected a GDN layer');
    const values = mixer.outProj.csr!.values.slice();
    values[0] = values[0]! * 2; // one read-out weight doubled
    const bad = {
      ...res,
      weights: { ...res.weights, layers: [{ ...res.weights.layers[0]!, mixer: { ...mixer, outProj: { ...mixer.outProj, csr: { ...mixer.outProj.csr!, values } } } }] },
    };
    const tokens = [136, ...Array.from({ length: 64 }, (_, i) => (i * 53 + 7) % 136)];
    expect(checkCompiled(res, tokens).mismatches).toEqual([]);
    const r = checkCompiled(bad, tokens);
    expect(r.mismatches.length).toBeGreaterThan(0);
    expect(r.mismatches[0]!.sublayer).toBe(0); // first seen right after the GDN mixer of layer 0
  });
});
