/**
 * The store's reference model (src/store/model.ts) against an independent JavaScript Map model
 * with its own capacity accounting, over random workloads (fast-check), with the store's
 * invariants re-derived from the raw rows after every operation.
 */
import fc from 'fast-check';
import { storeWorkloadArbitrary } from './helpers/store-workload.ts';
import { describe, expect, it } from 'vitest';
import { ChipcError } from '../src/util/errors.ts';
import { StoreModel, TABLE_NAMES, type StoreOptions, type StoreResult } from '../src/store/model.ts';

// ---- the independent side: a Map with capacity accounting (never asks the store) ----

type Code = 'OK' | 'NOT_FOUND' | 'FULL' | 'NAME_EMPTY' | 'NAME_TOO_LONG' | 'CONTENT_TOO_LONG' | 'BAD_TOKEN';

class MapStore {
  readonly files = new Map<string, { name: number[]; content: number[] }>();
  chunksUsed = 0;
  constructor(readonly F: number, readonly N: number, readonly M: number, readonly C: number, readonly P: number, readonly V: number) {}
  private chunks(n: number, c: number): number { return Math.ceil((n + c) / this.C); }
  private badTokens(ts: number[]): boolean { return ts.some((t) => !Number.isInteger(t) || t < 0 || t >= this.V); }
  private nameCode(name: number[]): Code | undefined {
    if (name.length === 0) return 'NAME_EMPTY';
    if (name.length > this.N) return 'NAME_TOO_LONG';
    if (this.badTokens(name)) return 'BAD_TOKEN';
    return undefined;
  }
  put(name: number[], content: number[]): Code {
    if (name.length === 0) return 'NAME_EMPTY';
    if (name.length > this.N) return 'NAME_TOO_LONG';
    if (content.length > this.M) return 'CONTENT_TOO_LONG';
    if (this.badTokens(name) || this.badTokens(content)) return 'BAD_TOKEN';
    const key = name.join(',');
    const old = this.files.get(key);
    const freed = old ? this.chunks(old.name.length, old.content.length) : 0;
    if (!old && this.files.size >= this.F) return 'FULL';
    const need = this.chunks(name.length, content.length);
    if (this.chunksUsed - freed + need > this.P) return 'FULL';
    this.chunksUsed += need - freed;
    this.files.set(key, { name: [...name], content: [...content] });
    return 'OK';
  }
  get(name: number[]): { code: Code; content?: number[] } {
    const e = this.nameCode(name);
    if (e) return { code: e };
    const f = this.files.get(name.join(','));
    return f ? { code: 'OK', content: f.content } : { code: 'NOT_FOUND' };
  }
  delete(name: number[]): Code {
    const e = this.nameCode(name);
    if (e) return e;
    const f = this.files.get(name.join(','));
    if (!f) return 'NOT_FOUND';
    this.chunksUsed -= this.chunks(f.name.length, f.content.length);
    this.files.delete(name.join(','));
    return 'OK';
  }
}

// ---- independent reading of the raw rows ----

/** fp by its documented formula, in BigInt: h ← (31·h + t + 1) mod 2^19. */
function fpBig(name: number[]): number {
  let h = 0n;
  for (const t of name) h = (31n * h + BigInt(t) + 1n) % 524288n;
  return Number(h);
}

interface Decoded { slots: { slot: number; name: number[]; content: number[] }[] }

/**
 * Re-derives every invariant from the rows alone: counters; every used chunk in exactly one chain
 * or the free stack, or at/beyond bump; fileCount = used entries; fp = fingerprint of the stored
 * name; every entry reachable from its home slot without crossing an empty slot; empty slots all
 * zero. Returns the directory decoded in slot order.
 */
/** Throws when `cond` is false (plain checks: `expect` per row is too slow for 10,000 operations). */
function check(cond: boolean, msg: string): void {
  if (!cond) throw new Error(`invariant: ${msg}`);
}
const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

function checkRows(s: StoreModel): Decoded {
  const p = s.params;
  const row = (t: Parameters<StoreModel['row']>[0], i: number): number[] => s.row(t, i) ?? new Array(s.tables.find((x) => x.name === t)!.fieldMax.length).fill(0);
  const [files, freeTop, bump] = row('counters', 0);
  check(s.row('counters', 0) !== undefined, 'counters row written');
  check(freeTop <= bump && bump <= p.chunkPool, `freeTop ${freeTop} ≤ bump ${bump} ≤ P`);
  const owner = new Map<number, string>();
  const claim = (c: number, who: string): void => {
    check(c < bump, `${who} uses chunk ${c} beyond bump ${bump}`);
    check(!owner.has(c), `chunk ${c} claimed by ${owner.get(c)} and ${who}`);
    owner.set(c, who);
  };
  const slots: Decoded['slots'] = [];
  for (let d = 0; d < p.dirSlots; d++) {
    const [used, fp, n, c, first] = row('dir', d);
    if (!used) { check(same(row('dir', d), [0, 0, 0, 0, 0]), `empty slot ${d} all zero`); continue; }
    const len = Math.ceil((n + c) / p.chunkSize);
    const tokens: number[] = [];
    let chunk = first;
    for (let k = 0; k < len; k++) {
      claim(chunk, `slot ${d}`);
      tokens.push(...row('chunk', chunk));
      const next = row('link', chunk)[0];
      if (k === len - 1) check(next === 0, `slot ${d}: chain ends with link 0`);
      else { check(next > 0, `slot ${d}: chain continues`); chunk = next - 1; }
    }
    check(tokens.slice(n + c).every((t) => t === 0), `slot ${d}: zero padding`);
    const name = tokens.slice(0, n);
    check(fp === fpBig(name), `slot ${d}: fp`);
    for (let q = fp % p.dirSlots; q !== d; q = (q + 1) % p.dirSlots) check(row('dir', q)[0] === 1, `slot ${d} unreachable from home ${fp % p.dirSlots}`);
    slots.push({ slot: d, name, content: tokens.slice(n, n + c) });
  }
  check(slots.length === files, `fileCount ${files} = used slots ${slots.length}`);
  for (let k = 0; k < freeTop; k++) claim(row('free', k)[0], `free stack ${k}`);
  check(owner.size === bump, `every chunk below bump owned once (${owner.size} of ${bump})`);
  for (const t of ['chunk', 'link', 'free'] as const) for (const [i] of s.rows(t)) check(i < bump, `${t} row ${i} below bump`);
  return { slots };
}

function snapshot(s: StoreModel): string {
  return JSON.stringify(TABLE_NAMES.map((t) => [...s.rows(t)]));
}

// ---- the workload ----

type Op =
  | { kind: 'put'; name: number[]; content: number[] }
  | { kind: 'get'; name: number[] }
  | { kind: 'delete'; name: number[] }
  | { kind: 'list' };

/** The shared workload (test/helpers/store-workload.ts) in this file's Op form. */
function workload(o: { N: number; M: number; V: number }): fc.Arbitrary<Op> {
  return storeWorkloadArbitrary(o).map((r): Op => (r.op === 'put' ? { kind: 'put', name: r.name, content: r.content } : r.op === 'list' ? { kind: 'list' } : { kind: r.op, name: r.name }));
}

function runWorkload(opts: Required<Pick<StoreOptions, 'maxFiles' | 'nameMax' | 'contentMax' | 'chunkSize' | 'chunkPool' | 'vocab'>>, ops: Op[], seen: Map<string, number>): void {
  const s = new StoreModel(opts);
  const ref = new MapStore(opts.maxFiles, opts.nameMax, opts.contentMax, opts.chunkSize, opts.chunkPool, opts.vocab);
  for (const op of ops) {
    const before = snapshot(s);
    let r: StoreResult;
    if (op.kind === 'put') {
      const want = ref.put(op.name, op.content);
      r = s.put(op.name, op.content);
      check(r.code === want, `put ${JSON.stringify(op)}: store ${r.code}, Map ${want}`);
      if (r.code !== 'OK') check(snapshot(s) === before, 'a failed put changes no row');
    } else if (op.kind === 'get') {
      const want = ref.get(op.name);
      r = s.get(op.name);
      check(r.code === want.code, `get ${JSON.stringify(op)}: store ${r.code}, Map ${want.code}`);
      if (r.code === 'OK') check(same(r.content, want.content), 'get content');
      check(snapshot(s) === before, 'get changes no row');
    } else if (op.kind === 'delete') {
      const want = ref.delete(op.name);
      r = s.delete(op.name);
      check(r.code === want, `delete ${JSON.stringify(op)}: store ${r.code}, Map ${want}`);
      if (r.code !== 'OK') check(snapshot(s) === before, 'a failed delete changes no row');
    } else {
      r = s.list();
      const got = r.names.map((n) => n.join(',')).sort();
      check(same(got, [...ref.files.keys()].sort()), 'list = the Map\'s names as a set');
      check(snapshot(s) === before, 'list changes no row');
    }
    seen.set(`${op.kind}:${r.code}`, (seen.get(`${op.kind}:${r.code}`) ?? 0) + 1);
    if (r.cost.rowWrites > 0) seen.set('writes', (seen.get('writes') ?? 0) + 1);
    if (r.cost.shiftSteps > 1) seen.set('long shift', (seen.get('long shift') ?? 0) + 1);
    const dec = checkRows(s);
    check(s.fileCount === ref.files.size, 'fileCount = Map size');
    // The list order is the directory order, decoded independently from the rows.
    check(same(s.list().names, dec.slots.map((x) => x.name)), 'list order = directory slot order');
    for (const x of dec.slots) check(same(x.content, ref.files.get(x.name.join(','))?.content), `slot ${x.slot} content = Map content`);
  }
}

describe('store model vs Map model', () => {
  const configs = [
    // Chunk-bound: 10 chunks of 3 tokens for up to 6 files.
    { maxFiles: 6, nameMax: 5, contentMax: 12, chunkSize: 3, chunkPool: 10, vocab: 70 },
    // File-count-bound: 3 files, plenty of chunks.
    { maxFiles: 3, nameMax: 5, contentMax: 9, chunkSize: 4, chunkPool: 40, vocab: 70 },
  ];
  for (const cfg of configs) {
    it(`10,000 random operations, 0 mismatches (F=${cfg.maxFiles}, P=${cfg.chunkPool})`, () => {
      const seen = new Map<string, number>();
      fc.assert(fc.property(fc.array(workload({ N: cfg.nameMax, M: cfg.contentMax, V: cfg.vocab }), { minLength: 1000, maxLength: 1000 }), (ops) => {
        runWorkload(cfg, ops, seen);
      }), { numRuns: 10, seed: 20240505 + cfg.maxFiles });
      // The workload really reached every outcome (each at least 20 times in 10,000 operations).
      for (const k of ['put:OK', 'put:FULL', 'put:NAME_EMPTY', 'put:NAME_TOO_LONG', 'put:CONTENT_TOO_LONG', 'put:BAD_TOKEN', 'get:OK', 'get:NOT_FOUND', 'delete:OK', 'delete:NOT_FOUND', 'long shift']) {
        expect(seen.get(k) ?? 0, k).toBeGreaterThanOrEqual(20);
      }
    });
  }
});

describe('store model: hand-derived cases', () => {
  it('derives D, P and validates options with clear errors', () => {
    const d = new StoreModel().params;
    expect(d).toEqual({ maxFiles: 512, dirSlots: 1024, nameMax: 32, contentMax: 4096, chunkSize: 16, chunkPool: 2048, vocab: 248_320 });
    expect(new StoreModel({ maxFiles: 5 }).params.dirSlots).toBe(16);
    expect(new StoreModel({ maxFiles: 4 }).params.dirSlots).toBe(8);
    // P at least ceil((N+M)/C) = ceil(4128/16) = 258 even for one file.
    expect(new StoreModel({ maxFiles: 1 }).params.chunkPool).toBe(258);
    for (const bad of [{ maxFiles: 0 }, { maxFiles: 1.5 }, { nameMax: 0 }, { contentMax: -1 }, { chunkSize: 0 }, { vocab: 2 ** 19 + 1 }, { chunkPool: 257, maxFiles: 1 }, { maxFiles: 2 ** 18 + 1 }]) {
      let err: unknown;
      try { new StoreModel(bad); } catch (e) { err = e; }
      expect(err).toBeInstanceOf(ChipcError);
      expect((err as ChipcError).code).toBe('store.params');
      expect((err as Error).message).toContain(Object.keys(bad)[0]);
    }
  });

  it('an empty store occupies only the counters row', () => {
    const s = new StoreModel();
    expect(TABLE_NAMES.map((t) => s.occupiedRows(t))).toEqual([1, 0, 0, 0, 0]);
    expect(s.isEmpty()).toBe(true);
  });

  it('counts row reads, writes and probes as documented', () => {
    // C = 4: name [1,2,3] + content [4,5,6,7,8] = 8 tokens = 2 chunks.
    const s = new StoreModel({ maxFiles: 4, chunkSize: 4, contentMax: 20, nameMax: 6 });
    const a = s.put([1, 2, 3], [4, 5, 6, 7, 8]);
    // read counters, probe 1 empty dir slot; write 2 chunk rows, 2 links, the dir row, counters.
    expect(a.cost.reads).toEqual({ counters: 1, dir: 1, chunk: 0, link: 0, free: 0 });
    expect(a.cost.writes).toEqual({ counters: 1, dir: 1, chunk: 2, link: 2, free: 0 });
    expect([a.cost.rowReads, a.cost.rowWrites, a.cost.probes]).toEqual([2, 6, 1]);
    const g = s.get([1, 2, 3]);
    // probe 1 (match), chunk 0 for the name, link 0 → chunk 1, chunk 1 for the rest of the content.
    expect(g.code === 'OK' && g.content).toEqual([4, 5, 6, 7, 8]);
    expect(g.cost.reads).toEqual({ counters: 0, dir: 1, chunk: 2, link: 1, free: 0 });
    const d = s.delete([1, 2, 3]);
    // probe 1, counters, 1 link to reach chunk 1, shift step reads the next (empty) slot;
    // writes 2 free-stack rows, the emptied dir row, counters.
    expect(d.cost.reads).toEqual({ counters: 1, dir: 2, chunk: 1, link: 1, free: 0 });
    expect(d.cost.writes).toEqual({ counters: 1, dir: 1, chunk: 0, link: 0, free: 2 });
    expect(d.cost.shiftSteps).toBe(1);
    // Reuse: the next put pops the stack (chunk 1, pushed last) instead of bumping.
    const b = s.put([9], [1]);
    expect(b.cost.reads.free).toBe(1);
    expect(s.row('counters', 0)).toEqual([1, 1, 2]);
    expect(s.row('link', 1)).toEqual([0]);
    expect(s.row('chunk', 1)).toEqual([9, 1, 0, 0]);
  });

  it('fingerprint collisions with equal length are told apart by the name comparison', () => {
    const s = new StoreModel({ maxFiles: 4, vocab: 100 });
    expect(fpBig([0, 62])).toBe(fpBig([2, 0]));
    expect(s.put([0, 62], [1]).code).toBe('OK');
    expect(s.put([2, 0], [2]).code).toBe('OK');
    const g = s.get([2, 0]);
    expect(g.code === 'OK' && g.content).toEqual([2]);
    expect(g.cost.probes).toBe(2);
    expect(s.get([1, 31]).code).toBe('NOT_FOUND');
    expect(s.delete([0, 62]).code).toBe('OK');
    // Backward shift moved [2,0] into its home slot: one probe now.
    expect(s.get([2, 0]).cost.probes).toBe(1);
  });

  it('default capacity: 512 files, then FULL; a maximum-size file; over-long refused', () => {
    const s = new StoreModel();
    for (let i = 0; i < 512; i++) expect(s.put([i, i + 1], [i]).code).toBe('OK');
    expect(s.put([9999, 1], [1]).code).toBe('FULL');
    expect(s.put([5, 6], [7, 7]).code).toBe('OK'); // overwrite still fine when full
    const big = new StoreModel();
    const name = Array.from({ length: 32 }, (_, i) => 248_319 - i);
    const content = Array.from({ length: 4096 }, (_, i) => (i * 7919) % 248_320);
    expect(big.put(name, content).code).toBe('OK');
    const g = big.get(name);
    expect(g.code === 'OK' && g.content).toEqual(content);
    expect(big.put([1], new Array(4097).fill(0)).code).toBe('CONTENT_TOO_LONG');
    expect(big.put(new Array(33).fill(1), []).code).toBe('NAME_TOO_LONG');
    expect(big.get(new Array(33).fill(1)).code).toBe('NAME_TOO_LONG');
    expect(big.put([248_320], []).code).toBe('BAD_TOKEN');
    checkRows(big);
  });
});
