/**
 * A prompt split into forwards at any points — one forward (generate()), chunk budgets, random
 * splits — leaves the cache bit-identical to token-by-token feeding, with the GDN chunked kernel
 * in fused-multiply-add and shuffled orders (docs/numerics.md "Chunked prefill"):
 *  - delay lines (idempotent delay RAMs, passes/lower-prev.ts) on random streams, and a control:
 *    a one-row RAM rewritten at every position, read back, is NOT exact under FMA chunks;
 *  - the generic RV32 chip's loader prompt (hello, and a program with code stores and tohost),
 *    then decoding from the chunk-fed cache reproduces the golden stream;
 *  - the prefill plans and the CLI's --prefill / --kernel-order.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { defineCircuit } from '../src/dsl/index.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import { compileCircuit, type CompileResult } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { Executor, argmax, compareCaches } from '../src/exec/index.ts';
import type { OrderMode } from '../src/exec/types.ts';
import { feedLoaderPrompt, parsePrefillPlan, prefillPieces, programOf, STEPWISE, type PrefillPlan } from '../src/chip/run.ts';
import type { ChipModel } from '../src/chip/loaded.ts';
import { decodeToken } from '../riscv/protocol.ts';
import { sharedChip } from './helpers/shared-chips.ts';
import { goldenTokens } from '../riscv/golden-trace.ts';
import { cli } from './helpers/cli.ts';
import { assembleElf } from '../riscv/asm.ts';
import { expectChipcError } from './helpers/assert.ts';

const chipTest = resolveTarget('chip-test');

/** Feeds `ids` by a plan (every piece one forward) and returns the last position's logits. */
function feed(ex: Executor, ids: number[], plan: PrefillPlan): Float32Array {
  let last: Float32Array | undefined;
  for (const [a, b] of prefillPieces(ids.length, plan)) last = ex.extend(ids.slice(a, b))[0];
  return last!;
}

const bits = (x: Float32Array) => Array.from(new Uint32Array(x.buffer, x.byteOffset, x.length));

/**
 * Token-by-token feeding (sequential order) vs `plan` with the chunked kernel in `order`: the
 * first difference of the caches or of the last logits (bit patterns), or null.
 */
function chunkedDifference(res: CompileResult, ids: number[], plan: PrefillPlan, order: OrderMode): string | null {
  const ref = new Executor(res.weights);
  const refLogits = feed(ref, ids, STEPWISE);
  const ex = new Executor(res.weights, { kernelOrder: order });
  const logits = feed(ex, ids, plan);
  const d = compareCaches(ref.cacheSnapshot(), ex.cacheSnapshot());
  if (d !== null) return d.where;
  return bits(logits).join() === bits(refLogits).join() ? null : `last logits differ (argmax ${argmax(logits)} vs ${argmax(refLogits)})`;
}

const ORDERS: OrderMode[] = [{ kind: 'fma' }, { kind: 'shuffled', seed: 7 }, { kind: 'sequential' }];

describe('delay lines under chunked prefill', () => {
  // previous of a 12-bit value (three 4-bit slices) and a delay of a delay (the conv's tap t − 2).
  const delays = defineCircuit({ name: 'delays', vocab: 4097, bos: 4096 }, (c) => {
    const a = c.tokenField('a', (t) => (t === 4096 ? 0 : t & 63), [0, 63]);
    const b = c.tokenField('b', (t) => (t === 4096 ? 0 : t >> 6), [0, 63]);
    const lo = c.tokenField('lo', (t) => (t === 4096 ? 0 : t & 7), [0, 7]);
    const [pa, pb] = c.previousAll([a, b]);
    const p2 = c.previous(c.previous(lo)).named('p2');
    c.emit([pa!, pb!.eq(b), p2], (x, same, q) => x! + 64 * same! + 128 * q!);
  });
  // The control: a one-row RAM rewritten from the token at every position and read back, and a
  // second RAM written with what the first read (a write that depends on such a read).
  const latch = defineCircuit({ name: 'latch', vocab: 257, bos: 256 }, (c) => {
    const x = c.tokenField('x', (t) => (t === 256 ? 0 : t), [0, 255]);
    const ram = c.ram('latch', { rows: 1, fields: [256] });
    ram.write(c.constant(0), [x]);
    const [v] = ram.read(c.constant(0));
    const copy = c.ram('copy', { rows: 1, fields: [256] });
    copy.write(c.constant(0), [v!]);
    const [w] = copy.read(c.constant(0));
    c.emit([w!], (a) => a!);
  });
  let delayRes: CompileResult;
  let latchRes: CompileResult;
  beforeAll(() => {
    delayRes = compileCircuit(buildCircuit(delays), chipTest.config);
    latchRes = compileCircuit(buildCircuit(latch), chipTest.config);
  }, 120_000);

  it('idempotent delay RAMs: random streams and random splits, every kernel order, bit-identical caches', () => {
    fc.assert(fc.property(
      fc.array(fc.integer({ min: 0, max: 4095 }), { minLength: 2, maxLength: 70 }),
      fc.integer({ min: 1, max: 2 ** 31 - 1 }), fc.integer({ min: 0, max: 2 }),
      (xs, seed, oi) => {
        const ids = [4096, ...xs];
        for (const plan of [parsePrefillPlan('whole'), parsePrefillPlan('chunked:7'), { kind: 'random', seed, max: 70 } as PrefillPlan]) {
          expect(chunkedDifference(delayRes, ids, plan, ORDERS[oi]!)).toBeNull();
        }
      },
    ), { numRuns: 3, seed: 20261202 });
  }, 300_000);

  it('attentionLayer on a circuit whose every mixer is used is a fit.attention-layer error', () => {
    expectChipcError(() => compileCircuit(buildCircuit(latch), chipTest.config, { attentionLayer: true }), 'fit.attention-layer');
  }, 60_000);

  it('control: a one-row RAM rewritten inside the chunk reads inexactly with fused multiply-adds', () => {
    const ids = [256, ...Array.from({ length: 60 }, (_, i) => (i * 37 + 11) % 256)];
    expect(chunkedDifference(latchRes, ids, parsePrefillPlan('whole'), { kind: 'sequential' })).toBeNull();
    expect(chunkedDifference(latchRes, ids, parsePrefillPlan('whole'), { kind: 'fma' })).not.toBeNull();
    // fed by one-token forwards it is exact in any order (the recurrent rule has one product per read)
    expect(chunkedDifference(latchRes, ids, parsePrefillPlan('chunked:1'), { kind: 'fma' })).toBeNull();
  }, 60_000);
});

describe('the generic chip: the loader prompt in chunks', () => {
  const SHAPE = { codeBytes: 4096, memBytes: 32 * 1024 };
  let chip: ChipModel;
  beforeAll(async () => {
    // with the zero attention layer that lets transformers' generate() run the chip alone
    chip = await sharedChip({ target: 'chip-test', ...SHAPE, attentionLayer: true });
  }, 240_000);

  it('--attention-layer: one layer with an empty mixer becomes a full-attention layer, no layer added', async () => {
    const types = chip.weights.config.layerTypes;
    expect(types.filter((t) => t === 'full_attention')).toHaveLength(1);
    const plain = await sharedChip({ target: 'chip-test', ...SHAPE });
    expect(types.length).toBe(plain.weights.config.layerTypes.length);
    const m = chip.weights.layers[types.indexOf('full_attention')]!.mixer;
    if (m.kind !== 'full_attention') throw new Error('expected an attention layer');
    for (const w of [m.qProj, m.kProj, m.vProj, m.oProj]) expect(w.csr ? w.csr.values.length : (w.dense ?? []).some((x) => x !== 0) ? 1 : 0).toBe(0);
  }, 240_000);

  // one FMA-kernel plan per program (the CI budget; bench/ runs every plan on long programs)
  for (const [file, planName] of [['fixtures/firmware/hello.elf', 'whole'], ['fixtures/isa/fence.elf', 'random:11:90']] as const) {
    it(`${file}: the loader prompt fed ${planName} through the FMA kernel leaves the token-by-token cache; decoding on from it follows the golden stream to HALT`, () => {
      const elf = fs.readFileSync(file);
      const prog = programOf(elf, SHAPE, chipTest.config);
      const ref = new Executor(chip.weights);
      const refFirst = feedLoaderPrompt(ref, prog.loader, STEPWISE);
      const refCache = ref.cacheSnapshot();
      const plan = parsePrefillPlan(planName);
      const ex = new Executor(chip.weights, { kernelOrder: { kind: 'fma' } });
      let next = feedLoaderPrompt(ex, prog.loader, plan);
      expect(next).toBe(refFirst);
      expect(compareCaches(refCache, ex.cacheSnapshot())).toBeNull();
      // Decoding on from the chunk-fed cache: every token the golden stream's, to HALT.
      const g = goldenTokens(elf, { mem: { size: prog.memBytes }, codeBytes: prog.codeBytes, maxInstructions: 20_000 });
      expect(g.halt.reason).not.toBe('limit');
      const want = g.tokens.subarray(2); // after [BOS, J(entry)], which the loader prompt ends with
      for (let i = 0; i < want.length; i++) {
        expect(next, `generated token ${i}`).toBe(want[i]);
        if (i + 1 < want.length) next = ex.decodeArgmax(next);
      }
      expect(decodeToken(want[want.length - 1]!).kind).toBe('HALT');
    }, 240_000);
  }
});

describe('prefill plans', () => {
  it('split a prompt into consecutive pieces covering it', () => {
    expect(prefillPieces(5, STEPWISE)).toEqual([[0, 1], [1, 2], [2, 3], [3, 4], [4, 5]]);
    expect(prefillPieces(10, parsePrefillPlan('chunked:4'))).toEqual([[0, 4], [4, 8], [8, 10]]);
    expect(prefillPieces(10, parsePrefillPlan('whole'))).toEqual([[0, 10]]);
    fc.assert(fc.property(fc.integer({ min: 1, max: 3000 }), fc.integer({ min: 0, max: 1e6 }), fc.integer({ min: 1, max: 300 }), (n, seed, max) => {
      const p = prefillPieces(n, { kind: 'random', seed, max });
      expect(p[0]![0]).toBe(0);
      expect(p.at(-1)![1]).toBe(n);
      for (let i = 0; i < p.length; i++) {
        expect(p[i]![1] - p[i]![0]).toBeGreaterThanOrEqual(1);
        expect(p[i]![1] - p[i]![0]).toBeLessThanOrEqual(max);
        if (i > 0) expect(p[i]![0]).toBe(p[i - 1]![1]);
      }
      expect(prefillPieces(n, { kind: 'random', seed, max })).toEqual(p); // the same split every time
    }), { numRuns: 50 });
  });

  it('refuse malformed plans with a clear error', () => {
    for (const bad of ['chunked:0', 'chunked:', 'random', 'random:x', 'half', 'chunked:-3']) {
      expectChipcError(() => parsePrefillPlan(bad), 'cli.prefill');
    }
  });

  it('chipc run: --prefill whole with an FMA kernel passes --check; --prefill with --load state is refused', async () => {
    // (the chip from the test run's chip cache: test/helpers/shared-chips.ts). A short program:
    // the plumbing of the flags is tested here, the long prompts above.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-prefill-'));
    try {
      const file = path.join(dir, 'p.elf');
      fs.writeFileSync(file, assembleElf(`
        li t0, 0x12345678
        sw t0, -8(sp)
        lhu a0, -6(sp)
        li t1, 0x10000000
        sb a0, 0(t1)
        andi a0, a0, 63
        li a7, 93
        ecall
      `).elf);
      const ok = await cli('run', file, '--code-size', '4096', '--mem-size', '32768', '--prefill', 'whole', '--kernel-order', 'fma', '--check', '--json');
      const doc = JSON.parse(ok.out);
      expect(doc.prefill).toBe('whole');
      expect(doc.kernelOrder).toBe('fma');
      expect(doc.divergence).toBeNull();
      expect(doc.halted).toBe(true);
      expect(doc.exitCode).toBe(0x1234 & 63);
      expect(ok.code).toBe(0x1234 & 63);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    const bad = await cli('run', 'fixtures/firmware/hello.elf', '--prefill', 'whole', '--load', 'state');
    expect(bad.code).not.toBe(0);
    expect(bad.err).toMatch(/--prefill .*--load prompt/);
    const bad2 = await cli('run', 'fixtures/firmware/hello.elf', '--prefill', 'chunked:0');
    expect(bad2.code).not.toBe(0);
    expect(bad2.err).toMatch(/--prefill must be/);
  }, 300_000);
});
