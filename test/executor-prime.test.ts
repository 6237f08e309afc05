/**
 * Executor.prime: a prompt fed token by token through the decode path (no chunked kernel, no
 * logits), then decodeArgmax of its last token, leaves the cache bit-identical to prefill()
 * (the chunked kernel over the whole prompt) and to a one-token prefill followed by decode steps,
 * and gives the same next token — on compiled circuits (a RAM with two read ports, delay lines)
 * over random token streams, and on the generic RV32 chip with a program loaded into its state
 * (the two-token prompt [BOS, J(entry)] `chipc run` feeds). Also: a cache snapshot taken between
 * tracked decode steps leaves the run as it was (it used to catch the lazy conv channels up in
 * place, and later steps then left them unshifted).
 */
import fs from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { defineCircuit } from '../src/dsl/index.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import { compileCircuit, type CompileResult } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { Executor, argmax, compareCaches } from '../src/exec/index.ts';
import type { ChipModel } from '../src/chip/loaded.ts';
import { sharedChip } from './helpers/shared-chips.ts';
import { chipExecutor, programOf } from '../src/chip/run.ts';
import { BOS_ID, encodeToken } from '../riscv/protocol.ts';
import { CODE_BASE } from '../src/cpu/cpu.ts';

const chipTest = resolveTarget('chip-test');
const bits = (x: Float32Array) => Array.from(new Uint32Array(x.buffer, x.byteOffset, x.length));

/** The logits after `ids`: by prefill(ids) (chunked kernel) — and the executor. */
function byPrefill(res: CompileResult, ids: number[]): { ex: Executor; logits: Float32Array } {
  const ex = new Executor(res.weights);
  return { ex, logits: ex.prefill(ids)[0]! };
}

/** The same by prime(ids without the last) and decode(last); the argmax by decodeArgmax on a twin. */
function byPrime(res: CompileResult, ids: number[]): { ex: Executor; logits: Float32Array; next: number } {
  const ex = new Executor(res.weights);
  ex.prime(ids.slice(0, -1));
  const logits = ex.decode(ids[ids.length - 1]!);
  const twin = new Executor(res.weights);
  twin.prime(ids.slice(0, -1));
  return { ex, logits, next: twin.decodeArgmax(ids[ids.length - 1]!) };
}

describe('Executor.prime equals prefill bit for bit', () => {
  // A 16-row RAM written from the token and read at two addresses, and delays of 12 bits (three
  // slices) and of a delay (the conv's tap t − 2).
  const circuit = defineCircuit({ name: 'prime', vocab: 4097, bos: 4096 }, (c) => {
    const a = c.tokenField('a', (t) => (t === 4096 ? 0 : t & 15), [0, 15]);
    const v = c.tokenField('v', (t) => (t === 4096 ? 0 : (t >> 4) & 255), [0, 255]);
    const r = c.tokenField('r', (t) => (t === 4096 ? 0 : (t >> 8) & 15), [0, 15]);
    const ram = c.ram('ram', { rows: 16, fields: [256] });
    ram.write(a, [v]);
    const [x] = ram.read(r);
    const [y] = ram.read(a);
    const lo6 = c.tokenField('lo6', (t) => (t === 4096 ? 0 : t & 63), [0, 63]);
    const hi6 = c.tokenField('hi6', (t) => (t === 4096 ? 0 : t >> 6), [0, 63]);
    const [plo, phi] = c.previousAll([lo6, hi6]);
    const pw = c.and(plo!.eq(lo6), phi!.eq(hi6)).named('pw');
    const lo = c.tokenField('lo', (t) => (t === 4096 ? 0 : t & 3), [0, 3]);
    const p2 = c.previous(c.previous(lo)).named('p2');
    c.emit([x!, y!.eq(v), pw, p2], (p, q, s, u) => p! + 256 * q! + 512 * s! + 1024 * u!);
  });
  let res: CompileResult;
  beforeAll(() => {
    res = compileCircuit(buildCircuit(circuit), chipTest.config);
  }, 120_000);

  it('random prompts: same cache, same logits, same argmax', () => {
    fc.assert(fc.property(fc.array(fc.integer({ min: 0, max: 4095 }), { minLength: 1, maxLength: 24 }), (body) => {
      const ids = [4096, ...body];
      const p = byPrefill(res, ids);
      const q = byPrime(res, ids);
      const d = compareCaches(p.ex.cacheSnapshot(), q.ex.cacheSnapshot());
      expect(d?.where ?? null).toBeNull();
      expect(bits(q.logits)).toEqual(bits(p.logits));
      expect(q.next).toBe(argmax(p.logits));
    }), { numRuns: 12, seed: 5 });
  }, 120_000);

  it('prime of nothing leaves the cache empty; decode on it is refused as before', () => {
    const ex = new Executor(res.weights);
    ex.prime([]);
    expect(() => ex.decode(4096)).toThrow(/prefill first/);
  });
});

describe('the generic chip: prime([BOS]) + decodeArgmax(J) equals prefill([BOS, J])', () => {
  let chip: ChipModel;
  beforeAll(async () => {
    chip = await sharedChip({ target: 'chip-test', codeBytes: 4096, memBytes: 32 * 1024 });
  }, 240_000);

  for (const file of ['fixtures/firmware/hello.elf', 'fixtures/firmware/crc32.elf']) {
    it(`${file}: the state-loaded chip's cache and first token`, () => {
      const prog = programOf(fs.readFileSync(file), { codeBytes: 4096, memBytes: 32 * 1024 }, chipTest.config);
      const prompt = [BOS_ID, encodeToken({ kind: 'J', w: (prog.entry - CODE_BASE) / 4 })];
      const a = chipExecutor(chip, prog, {});
      const first = argmax(a.prefill(prompt)[0]!);
      const b = chipExecutor(chip, prog, {});
      b.prime(prompt.slice(0, 1));
      const got = b.decodeArgmax(prompt[1]!);
      expect(got).toBe(first);
      expect(compareCaches(a.cacheSnapshot(), b.cacheSnapshot())?.where ?? null).toBeNull();
      // and the next 50 tokens agree
      let x = first;
      let y = got;
      for (let i = 0; i < 50; i++) {
        x = a.decodeArgmax(x);
        y = b.decodeArgmax(y);
        expect(y).toBe(x);
      }
      expect(compareCaches(a.cacheSnapshot(), b.cacheSnapshot())?.where ?? null).toBeNull();
    }, 120_000);
  }

  it('snapshots between tracked decode steps do not change the run (hello, 300 tokens)', () => {
    const prog = programOf(fs.readFileSync('fixtures/firmware/hello.elf'), { codeBytes: 4096, memBytes: 32 * 1024 }, chipTest.config);
    const prompt = [BOS_ID, encodeToken({ kind: 'J', w: (prog.entry - CODE_BASE) / 4 })];
    const plain = chipExecutor(chip, prog, {});
    const probed = chipExecutor(chip, prog, {});
    let x = argmax(plain.prefill(prompt)[0]!);
    let y = argmax(probed.prefill(prompt)[0]!);
    for (let i = 0; i < 300; i++) {
      x = plain.decodeArgmax(x);
      y = probed.decodeArgmax(y);
      expect(y).toBe(x);
      if (i % 7 === 3) probed.cacheSnapshot();
    }
    expect(compareCaches(plain.cacheSnapshot(), probed.cacheSnapshot())?.where ?? null).toBeNull();
  }, 120_000);
});
