/**
 * The store firmware service (fixtures/firmware/store.elf, firmware/lib/store.c) on the golden
 * emulator against the reference model (src/store/model.ts): 10,000 random operations with every
 * result and the memory decoded to rows compared after every operation; answers and memory words
 * of a tiny store checked byte by byte against hand derivations; init errors; importing a model
 * into a fresh session; a default-size store (F = 512) in 128 KiB.
 */
import fc from 'fast-check';
import { storeWorkloadArbitrary } from './helpers/store-workload.ts';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ServiceEmulator } from '../src/chip/service.ts';
import { ChipcError } from '../src/util/errors.ts';
import { StoreModel, resolveStoreParams, type StoreResult } from '../src/store/model.ts';
import {
  FirmwareStore, MAILBOX_OFFSET, decodeAnswer, encodeInitRequest, encodeRequest, rowsFromModel, storeAreaWords, storeLayout,
  type FirmwareCall, type FirmwareResult, type StoreRequest,
} from '../src/store/firmware.ts';

const ELF = new Uint8Array(fs.readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'firmware', 'store.elf')));
const SMALL = { maxFiles: 8, nameMax: 6, contentMax: 40, chunkSize: 4, chunkPool: 32, vocab: 70 };
const KiB = 1024;

/** Throws when `cond` is false (plain checks: `expect` per operation is slow for 10,000). */
function check(cond: boolean, msg: string): void {
  if (!cond) throw new Error(msg);
}
const json = (x: unknown): string => JSON.stringify(x);

/** The model's result as the firmware reports it: no cost; get and delete carry no slot. */
function expectedAnswer(r: StoreResult): FirmwareResult {
  const { cost: _cost, ...rest } = r as StoreResult & { slot?: number };
  if (r.op === 'get' || r.op === 'delete') delete (rest as { slot?: number }).slot;
  return rest as FirmwareResult;
}

function apply(fw: FirmwareStore, m: StoreModel, op: StoreRequest): { want: StoreResult; got: FirmwareCall<FirmwareResult> } {
  switch (op.op) {
    case 'put': return { want: m.put(op.name, op.content), got: fw.put(op.name, op.content) };
    case 'get': return { want: m.get(op.name), got: fw.get(op.name) };
    case 'delete': return { want: m.delete(op.name), got: fw.delete(op.name) };
    default: return { want: m.list(), got: fw.list() };
  }
}

// ---- the workload (the mix of test/store-model.test.ts, plus non-integer token values) ----

const workload = (o: { N: number; M: number; V: number }): fc.Arbitrary<StoreRequest> => storeWorkloadArbitrary({ ...o, oddTokens: true });

describe('store firmware vs the reference model', () => {
  it('10,000 random operations: identical results and identical rows after every operation', () => {
    const fw = FirmwareStore.load(ELF, 32 * KiB, SMALL);
    const layout = storeLayout(fw.params);
    const mailboxEnd = fw.base + 4 * (layout.mailbox + layout.mailboxWords);
    const seen = new Map<string, number>();
    const bump = (k: string): void => { seen.set(k, (seen.get(k) ?? 0) + 1); };
    let runs = 0;
    fc.assert(fc.property(fc.array(workload({ N: SMALL.nameMax, M: SMALL.contentMax, V: SMALL.vocab }), { minLength: 1000, maxLength: 1000 }), (ops) => {
      // Every run re-initialises the same session: init must clear the previous run's rows.
      fw.init();
      runs++;
      const m = new StoreModel(SMALL);
      check(json(fw.rows()) === json(rowsFromModel(m)), 'after init the area decodes to an empty store');
      for (const [k, op] of ops.entries()) {
        // A request never runs past the mailbox, and an oversize one carries no tokens.
        const writes = encodeRequest(op, fw.base, fw.params);
        check(writes.every(([a]) => a >= fw.base + 4 * MAILBOX_OFFSET && a < mailboxEnd), 'request inside the mailbox');
        if (op.op !== 'list' && (op.name.length > SMALL.nameMax || (op.op === 'put' && op.content.length > SMALL.contentMax))) {
          check(writes.length === (op.op === 'put' ? 3 : 2), 'an oversize request sends no tokens');
        }
        const { want, got } = apply(fw, m, op);
        check(json(got.result) === json(expectedAnswer(want)), `op ${k} ${json(op)}: firmware ${json(got.result)}, model ${json(want)}`);
        check(json(fw.rows()) === json(rowsFromModel(m)), `op ${k} ${json(op)}: memory rows differ from the model's`);
        bump(`${op.op}:${want.code}`);
        if (want.op === 'put' && want.code === 'OK' && want.replaced) bump('replaced');
        if (want.cost.shiftSteps > 1) bump('long shift');
        if (want.op === 'list' && want.names.length === SMALL.maxFiles) bump('list full');
      }
    }), { numRuns: 10, seed: 20240606 });
    expect(runs).toBe(10);
    for (const k of ['put:OK', 'put:FULL', 'put:NAME_EMPTY', 'put:NAME_TOO_LONG', 'put:CONTENT_TOO_LONG', 'put:BAD_TOKEN', 'replaced',
      'get:OK', 'get:NOT_FOUND', 'get:NAME_EMPTY', 'get:NAME_TOO_LONG', 'get:BAD_TOKEN',
      'delete:OK', 'delete:NOT_FOUND', 'delete:BAD_TOKEN', 'list:OK', 'long shift']) {
      expect(seen.get(k) ?? 0, k).toBeGreaterThanOrEqual(20);
    }
  }, 120_000);

  it('a model imported into a fresh session decodes to its rows and keeps agreeing', () => {
    const m = new StoreModel(SMALL);
    const ops = fc.sample(workload({ N: SMALL.nameMax, M: SMALL.contentMax, V: SMALL.vocab }), { numRuns: 600, seed: 77 });
    for (const op of ops.slice(0, 400)) {
      if (op.op === 'put') m.put(op.name, op.content);
      else if (op.op === 'delete') m.delete(op.name);
    }
    expect(m.fileCount).toBeGreaterThan(0);
    const fw = FirmwareStore.load(ELF, 32 * KiB, SMALL);
    fw.importModel(m);
    expect(fw.rows()).toEqual(rowsFromModel(m));
    for (const op of ops.slice(400)) {
      const { want, got } = apply(fw, m, op);
      check(json(got.result) === json(expectedAnswer(want)), `${json(op)}: firmware ${json(got.result)}, model ${json(want)}`);
      check(json(fw.rows()) === json(rowsFromModel(m)), `${json(op)}: rows`);
    }
    // Only into an empty area, and only with the same parameters.
    expect(() => fw.importModel(m)).toThrow(expect.objectContaining({ code: 'store.import' }));
    expect(() => FirmwareStore.load(ELF, 32 * KiB, SMALL).importModel(new StoreModel({ ...SMALL, vocab: 71 }))).toThrow(expect.objectContaining({ code: 'store.mismatch' }));
  });
  it('re-initialising with other parameters clears every old row, and the new store agrees', () => {
    const emu = ServiceEmulator.load(ELF, 32 * KiB);
    const ops = fc.sample(workload({ N: 3, M: 10, V: 70 }), { numRuns: 900, seed: 31 });
    // SMALL (292 words), then a store with a smaller mailbox whose tables lie over SMALL's old
    // mailbox and tables, then a bigger one, then SMALL again.
    const configs = [SMALL, { maxFiles: 4, nameMax: 3, contentMax: 10, chunkSize: 2, chunkPool: 20, vocab: 70 }, { ...SMALL, maxFiles: 40, chunkPool: 200 }, SMALL];
    let oldEnd = 0;
    for (const [r, cfg] of configs.entries()) {
      const fw = new FirmwareStore(emu, cfg);
      fw.init();
      const m = new StoreModel(cfg);
      const L = storeLayout(fw.params);
      for (let i = L.counters; i < Math.max(oldEnd, L.end); i++) check(emu.memory.read32(fw.base + 4 * i) === 0, `config ${r}: word ${i} zero after init`);
      for (const op of ops.slice(r * 200, r * 200 + 200)) {
        const { want, got } = apply(fw, m, op);
        check(json(got.result) === json(expectedAnswer(want)), `config ${r} ${json(op)}: firmware ${json(got.result)}, model ${json(want)}`);
        check(json(fw.rows()) === json(rowsFromModel(m)), `config ${r} ${json(op)}: rows`);
      }
      expect(m.occupiedRows('chunk'), `config ${r} wrote chunks`).toBeGreaterThan(0);
      oldEnd = L.end;
    }
  });
});

describe('store firmware: hand-derived answers and memory', () => {
  // F = 8 → D = 16; mailbox 3 + 6 + 40 = 49 words at word 16; counters at 65, dir at 68 (32 words),
  // chunk at 100 (32 × 4), link at 228, free at 260, end 292.
  it('lays out the area as documented', () => {
    const fw = FirmwareStore.load(ELF, 32 * KiB, SMALL);
    expect(storeLayout(fw.params)).toEqual({ mailbox: 16, mailboxWords: 49, counters: 65, dir: 68, chunk: 100, link: 228, free: 260, end: 292 });
    // The area runs from __service_area to the end of the 32 KiB RAM.
    expect(fw.areaWords).toBe((0x80000000 + 32 * KiB - fw.base) / 4);
  });

  it('answers put/get/list/delete with the documented 3-byte values and words', () => {
    // V = 300 so that a token uses a value's second byte.
    const fw = FirmwareStore.load(ELF, 32 * KiB, { ...SMALL, vocab: 300 });
    fw.init();
    const word = (off: number) => fw.emu.memory.read32(fw.base + 4 * off);
    // Every answer value is three console bytes, low byte first.
    const u24 = (...v: number[]) => v.flatMap((x) => [x & 0xff, (x >> 8) & 0xff, x >> 16]);
    // put([5], [290]): fp = 31·0 + 5 + 1 = 6, home slot 6; console: slot 6, replaced 0.
    let r = fw.call(encodeRequest({ op: 'put', name: [5], content: [290] }, fw.base, fw.params));
    expect([r.exitCode, [...r.console]]).toEqual([0, [6, 0, 0, 0, 0, 0]]);
    // header: magic "STR1", F, D, N, M, C, P, V, offsets.
    expect(Array.from({ length: 16 }, (_, i) => word(i))).toEqual([0x31525453, 8, 16, 6, 40, 4, 32, 300, 65, 68, 100, 228, 260, 292, 0, 0]);
    // counters {1 file, freeTop 0, bump 1}; dir[6] = {1 | 6 << 1 | 1 << 20, 1 | 0 << 16}; chunk 0 = [5, 200, 0, 0]; link 0 = 0.
    expect([word(65), word(66), word(67)]).toEqual([1, 0, 1]);
    expect([word(68 + 12), word(68 + 13)]).toEqual([0x10000d, 1]);
    expect([word(100), word(101), word(102), word(103)]).toEqual([5, 290, 0, 0]);
    // get([5]): c = 1, then 290 = 0x122 → [0x22, 0x01, 0x00].
    r = fw.call(encodeRequest({ op: 'get', name: [5] }, fw.base, fw.params));
    expect([r.exitCode, [...r.console]]).toEqual([0, [1, 0, 0, 0x22, 0x01, 0x00]]);
    // A second file [1, 2, 3] + [9, 8, 7, 6, 5, 4] (9 tokens → 3 chunks 1, 2, 3); fp = ((2·31 + 3)·31 + 4) = 2019, slot 2019 mod 16 = 3.
    r = fw.call(encodeRequest({ op: 'put', name: [1, 2, 3], content: [9, 8, 7, 6, 5, 4] }, fw.base, fw.params));
    expect([r.exitCode, [...r.console]]).toEqual([0, u24(3, 0)]);
    expect([word(228 + 1), word(228 + 2), word(228 + 3)]).toEqual([3, 4, 0]);
    expect([word(104), word(107), word(108), word(112), word(113)]).toEqual([1, 9, 8, 4, 0]);
    // list: 2 names in slot order (3 then 6).
    r = fw.call(encodeRequest({ op: 'list' }, fw.base, fw.params));
    expect([r.exitCode, [...r.console]]).toEqual([0, u24(2, 3, 1, 2, 3, 1, 5)]);
    // Overwrite [5] with no content: old chunk 0 pushed (free[0] = 0), popped again; replaced = 1.
    r = fw.call(encodeRequest({ op: 'put', name: [5], content: [] }, fw.base, fw.params));
    expect([r.exitCode, [...r.console]]).toEqual([0, u24(6, 1)]);
    expect([word(100), word(101), word(260), word(65), word(66), word(67)]).toEqual([5, 0, 0, 2, 0, 4]);
    // delete [1, 2, 3]: chain 1, 2, 3 pushed on the free stack; nothing on the console.
    r = fw.call(encodeRequest({ op: 'delete', name: [1, 2, 3] }, fw.base, fw.params));
    expect([r.exitCode, r.console.length]).toEqual([0, 0]);
    expect([word(260), word(261), word(262), word(65), word(66), word(67), word(68 + 6)]).toEqual([1, 2, 3, 1, 3, 4, 0]);
    // Failures: exit code only, no console.
    for (const [req, code] of [[{ op: 'get', name: [1, 2, 3] }, 1], [{ op: 'get', name: [] }, 3], [{ op: 'get', name: [1, 2, 3, 4, 5, 6, 7] }, 4],
      [{ op: 'delete', name: [300] }, 6], [{ op: 'put', name: [1], content: new Array(41).fill(0) }, 5], [{ op: 'put', name: [1], content: [-1] }, 6]] as const) {
      r = fw.call(encodeRequest(req as StoreRequest, fw.base, fw.params));
      expect([r.exitCode, r.console.length], json(req)).toEqual([code, 0]);
    }
  });
});

describe('store firmware: answer decoding', () => {
  const bytes = (...b: number[]) => Uint8Array.from(b);
  const msg = (f: () => unknown): string => {
    try { f(); } catch (e) { expect(e).toBeInstanceOf(ChipcError); expect((e as ChipcError).code).toBe('store.answer'); return (e as Error).message; }
    throw new Error('no error');
  };

  it('reads three bytes per value, low byte first, up to 2^24 − 1', () => {
    expect(decodeAnswer('get', 0, bytes(2, 0, 0, 0xff, 0xff, 0xff, 0x01, 0x02, 0x03))).toEqual({ op: 'get', code: 'OK', content: [0xffffff, 0x030201] });
    expect(decodeAnswer('put', 0, bytes(0x01, 0x02, 0, 1, 0, 0))).toEqual({ op: 'put', code: 'OK', slot: 0x201, replaced: true });
    expect(decodeAnswer('list', 0, bytes(1, 0, 0, 1, 0, 0, 7, 0, 0))).toEqual({ op: 'list', code: 'OK', names: [[7]] });
    expect(decodeAnswer('delete', 1, bytes())).toEqual({ op: 'delete', code: 'NOT_FOUND' });
  });

  it('refuses answers that end inside or before a value, bytes left over, and impossible codes', () => {
    expect(msg(() => decodeAnswer('get', 0, bytes(2, 0, 0, 5, 0, 0, 6, 0)))).toMatch(/ends inside a value \(byte 6 of 8\)/);
    expect(msg(() => decodeAnswer('get', 0, bytes(2, 0, 0, 5, 0, 0)))).toMatch(/ends before a value/);
    expect(msg(() => decodeAnswer('put', 0, bytes(6, 0, 0, 0, 0, 0, 0)))).toMatch(/1 byte\(s\) left/);
    expect(msg(() => decodeAnswer('put', 0, bytes(6, 0, 0, 2, 0, 0)))).toMatch(/replaced = 2/);
    expect(msg(() => decodeAnswer('get', 1, bytes(0)))).toMatch(/1 byte\(s\) left/);
    expect(msg(() => decodeAnswer('list', 1, bytes()))).toMatch(/exit code 1, which a list cannot give/);
  });
});

describe('store firmware: init and bad requests', () => {
  const area = (emu: ServiceEmulator, base: number, words: number): number[] => Array.from({ length: words }, (_, i) => emu.memory.read32(base + 4 * i));

  it('refuses bad parameters and stores that do not fit with code 7, writing nothing', () => {
    const emu = ServiceEmulator.load(ELF, 32 * KiB);
    const base = emu.symbol('__service_area');
    const avail = (0x80000000 + 32 * KiB - base) / 4;
    const ok: [number, number, number, number, number, number] = [8, 6, 40, 4, 32, 70];
    const bad: [string, [number, number, number, number, number, number], number][] = [
      ['F = 0', [0, 6, 40, 4, 32, 70], avail], ['F = 2^18 + 1', [2 ** 18 + 1, 6, 40, 4, 32, 70], avail],
      ['N = 0', [8, 0, 40, 4, 32, 70], avail], ['N = 4096', [8, 4096, 40, 4, 1100, 70], avail],
      ['M = 65536', [8, 6, 65536, 1024, 70, 70], avail], ['C = 0', [8, 6, 40, 0, 32, 70], avail], ['C = 1025', [8, 6, 40, 1025, 32, 70], avail],
      ['V = 0', [8, 6, 40, 4, 32, 0], avail], ['V = 2^19 + 1', [8, 6, 40, 4, 32, 2 ** 19 + 1], avail],
      ['P < ceil((N+M)/C) = 12', [8, 6, 40, 4, 11, 70], avail], ['P = 65537', [8, 6, 40, 1, 65537, 70], avail],
      // 292 words needed (see the layout test): one fewer is refused.
      ['one word short', ok, 291],
      // F = 512, N = 32, M = 4096, C = 16, P = 2048: 16 + 4131 + 3 + 2048 + 2048·18 = 43,062 words > a 32 KiB RAM.
      ['too big for 32 KiB', [512, 32, 4096, 16, 2048, 248320], avail],
    ];
    for (const [what, values, words] of bad) {
      const before = area(emu, base, 400);
      const r = emu.call(encodeInitRequest(base, values, words));
      const after = area(emu, base, 400);
      // Only the request words themselves changed.
      for (let i = 0; i < 400; i++) if (i < MAILBOX_OFFSET || i >= MAILBOX_OFFSET + 8) expect(after[i], `${what}: word ${i}`).toBe(before[i]);
      expect([r.exitCode, r.console.length], what).toEqual([7, 0]);
    }
    // Before any init every op is a bad request, as are unknown ops.
    for (const req of [{ op: 'put', name: [1], content: [] }, { op: 'get', name: [1] }, { op: 'delete', name: [1] }, { op: 'list' }] as StoreRequest[]) {
      expect(emu.call(encodeRequest(req, base, new StoreModel(SMALL).params)).exitCode, req.op).toBe(7);
    }
    const mb = base + 4 * MAILBOX_OFFSET;
    for (const op of [0, 6, 0xffffffff]) expect(emu.call([[mb, op]]).exitCode, `op ${op}`).toBe(7);
    // Exactly 292 words is enough; then unknown ops are still refused.
    expect(emu.call(encodeInitRequest(base, ok, 292)).exitCode).toBe(0);
    expect(emu.call([[mb, 6]]).exitCode).toBe(7);
  });

  it('the host refuses what cannot work before sending anything', () => {
    const err = (f: () => unknown): ChipcError => {
      try { f(); } catch (e) { return e as ChipcError; }
      throw new Error('no error');
    };
    const tooBig = err(() => FirmwareStore.load(ELF, 32 * KiB, { maxFiles: 512, nameMax: 32, contentMax: 4096, chunkSize: 16 }));
    expect(tooBig).toBeInstanceOf(ChipcError);
    expect(tooBig.code).toBe('store.mem');
    expect(tooBig.message).toContain('43062 words');
    for (const [opt, bad] of [['nameMax', { nameMax: 4096 }], ['contentMax', { contentMax: 65536, chunkSize: 1024 }], ['chunkPool', { chunkPool: 65537 }]] as const) {
      const e = err(() => storeAreaWords(resolveStoreParams({ maxFiles: 8, vocab: 70, ...bad })));
      expect(e.code, opt).toBe('store.params');
      expect(e.message).toContain(opt);
    }
    // Operations on a store that was never initialised: the firmware answers 7, the host throws.
    const fw = FirmwareStore.load(ELF, 32 * KiB, SMALL);
    expect(err(() => fw.list()).code).toBe('store.bad-request');
  });
});

describe('store firmware: default-size store', () => {
  it('F = 512 (N = 32, M = 1024, C = 16, P = 1024) fits 128 KiB and agrees with the model', () => {
    const opts = { maxFiles: 512, nameMax: 32, contentMax: 1024, chunkSize: 16, chunkPool: 1024 };
    // D = 1024: 16 + (3 + 32 + 1024) + 3 + 2·1024 + 1024·16 + 1024 + 1024 = 21,558 words.
    const fw = FirmwareStore.load(ELF, 128 * KiB, opts);
    expect(storeAreaWords(fw.params)).toBe(21558);
    expect(fw.areaWords).toBe((0x80000000 + 128 * KiB - fw.base) / 4);
    expect(fw.areaWords).toBeGreaterThanOrEqual(21558);
    fw.init();
    const m = new StoreModel(opts);
    // Names of 8 tokens over the whole vocabulary (and some short ones), contents of up to 64.
    const name = fc.oneof(fc.constantFrom(...fc.sample(fc.array(fc.integer({ min: 0, max: 248_319 }), { minLength: 8, maxLength: 8 }), { numRuns: 150, seed: 5 })),
      fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 1, maxLength: 3 }));
    const op: fc.Arbitrary<StoreRequest> = fc.oneof(
      { weight: 6, arbitrary: fc.record({ op: fc.constant('put' as const), name, content: fc.array(fc.integer({ min: 0, max: 248_319 }), { maxLength: 64 }) }) },
      { weight: 3, arbitrary: fc.record({ op: fc.constant('get' as const), name }) },
      { weight: 2, arbitrary: fc.record({ op: fc.constant('delete' as const), name }) },
      { weight: 1, arbitrary: fc.record({ op: fc.constant('list' as const) }) },
    );
    const ops = fc.sample(op, { numRuns: 400, seed: 9 });
    for (const [k, o] of ops.entries()) {
      const { want, got } = apply(fw, m, o);
      check(json(got.result) === json(expectedAnswer(want)), `op ${k} ${json(o)}: firmware ${json(got.result)}, model ${json(want)}`);
      if (k % 50 === 49) check(json(fw.rows()) === json(rowsFromModel(m)), `op ${k}: rows`);
    }
    expect(m.fileCount).toBeGreaterThan(50);
    expect(fw.rows()).toEqual(rowsFromModel(m));
  });

  it('costs: put/get of an 8-token name with 32 tokens, list of 100 files (instructions)', () => {
    const opts = { maxFiles: 512, nameMax: 32, contentMax: 1024, chunkSize: 16, chunkPool: 1024 };
    const fw = FirmwareStore.load(ELF, 128 * KiB, opts);
    fw.init();
    const rnd = fc.sample(fc.array(fc.integer({ min: 0, max: 248_319 }), { minLength: 40, maxLength: 40 }), { numRuns: 100, seed: 11 });
    const puts: number[] = [], gets: number[] = [], dels: number[] = [];
    for (const t of rnd) puts.push(fw.put(t.slice(0, 8), t.slice(8)).instructions);
    for (const t of rnd) {
      const g = fw.get(t.slice(0, 8));
      expect(g.result.code === 'OK' && g.result.content).toEqual(t.slice(8));
      gets.push(g.instructions);
    }
    const list = fw.list();
    expect(list.result.names.length).toBe(100);
    for (const t of rnd.slice(0, 50)) dels.push(fw.delete(t.slice(0, 8)).instructions);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    // Regression bounds (docs/store.md "Store firmware service" has the measured figures).
    expect(mean(puts)).toBeLessThan(680);
    expect(mean(gets)).toBeLessThan(600);
    expect(mean(dels)).toBeLessThan(300);
    expect(list.instructions).toBeLessThan(13_000);
  });
});
