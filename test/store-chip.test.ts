/**
 * The store through the chip (src/store/chip.ts, `chipc store`): a random workload run as service
 * calls through the compiled weights and through the chip circuit (IR), every generated token equal
 * to the golden stream, every answer — decoded from the chip's own tokens — equal to the reference
 * model's, and the rows read back out of the chip's state equal to the model's; a store file
 * imported into a session and exported again bit for bit; importing leaves every other head of the
 * session bit-identical; the CLI on store files, with its errors.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHIP_STORE_SMALL, ChipStore, storeMemBytes } from '../src/store/chip.ts';
import { StoreModel, TABLE_NAMES, resolveStoreParams, type StoreParams } from '../src/store/model.ts';
import { loadStoreFile, saveStoreFile } from '../src/store/file.ts';
import { asFirmwareAnswer as expected, memoryWordsFromModel, rowsFromModel } from '../src/store/firmware.ts';
import { applyRequest, storeWorkload } from '../src/store/workload.ts';
import type { StoreRequest } from '../src/store/firmware.ts';
import { resolveTarget } from '../src/model/targets.ts';
import type { ChipModel } from '../src/chip/loaded.ts';
import { cli } from './helpers/cli.ts';
import { sharedChip } from './helpers/shared-chips.ts';

const SMALL = resolveStoreParams(CHIP_STORE_SMALL);
const TARGET = resolveTarget('chip-test').config;

// The small store's chip is the generic chip with 4 KiB of code and 32 KiB of data: the test run's
// shared chip, from its chip cache (the IR engine runs the circuit alone, without it).
let compiled: ChipModel;
let tmp: string;
beforeAll(async () => {
  compiled = await sharedChip({ target: 'chip-test', codeBytes: 4096, memBytes: storeMemBytes(SMALL) });
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-store-chip-'));
}, 120_000);
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

function runWorkload(engine: 'weights' | 'ir', seed: number, count: number, p: StoreParams = SMALL): { codes: Set<string>; store: ChipStore; model: StoreModel } {
  const store = ChipStore.open(p, { target: TARGET, engine, ...(engine === 'weights' ? { compiled } : {}) });
  const model = new StoreModel(p);
  const codes = new Set<string>();
  storeWorkload(seed, count, p).forEach((q, i) => {
    const got = store.apply(q).result;
    const want = expected(applyRequest(model, q));
    expect(got, `operation ${i} (${q.op})`).toEqual(want);
    codes.add(got.code);
  });
  expect(store.rows()).toEqual(rowsFromModel(model));
  return { codes, store, model };
}

describe('the store on the chip (small capacity)', () => {
  it('needs a 32 KiB data RAM', () => {
    expect(storeMemBytes(SMALL)).toBe(32 * 1024);
  });

  it('through the IR: 300 random operations equal the reference model, rows and answers', () => {
    const { codes } = runWorkload('ir', 7, 300);
    // The workload reaches the interesting answers.
    for (const c of ['OK', 'NOT_FOUND', 'FULL', 'NAME_EMPTY', 'NAME_TOO_LONG', 'CONTENT_TOO_LONG', 'BAD_TOKEN']) expect(codes, c).toContain(c);
  }, 240_000);

  it('through the weights: random operations equal the reference model, every token the golden stream', () => {
    // 24 operations: every request kind and the answers below (the IR test runs 300; bench/store-chip-full.ts the 10,000)
    const { store, model, codes } = runWorkload('weights', 11, 24);
    for (const c of ['OK', 'NOT_FOUND', 'FULL', 'NAME_TOO_LONG', 'BAD_TOKEN']) expect(codes, c).toContain(c);
    // Export from the chip's state: the same rows as the model, as a store file too.
    const back = store.exportModel();
    for (const t of TABLE_NAMES) expect([...back.rows(t)]).toEqual([...model.rows(t)].filter(([, f]) => f.some((v) => v !== 0)));
  }, 300_000);

  it('a store file imported into a session is exported bit for bit, and import touches only its rows', () => {
    const model = new StoreModel(SMALL);
    for (const q of storeWorkload(3, 60, SMALL)) applyRequest(model, q);
    expect(model.fileCount).toBeGreaterThan(0);
    const s = ChipStore.open(model, { target: TARGET, engine: 'weights', compiled });
    // Rows read back from the chip's GDN state equal the file's nonzero rows …
    const back = s.exportModel();
    for (const t of TABLE_NAMES) expect([...back.rows(t)]).toEqual([...model.rows(t)].filter(([, f]) => f.some((v) => v !== 0)));
    // … and the session answers from them: get every listed file through the weights.
    const l = s.list();
    expect(l.result).toEqual(expected(model.list()));
    const first = model.list().names[0]!;
    expect(s.get(first).result).toEqual(expected(model.get(first)));

    // Import into a live session: every head outside the data RAM's layer, and every data-RAM
    // row outside the store's area, keeps its bits.
    const fresh = ChipStore.open(SMALL, { target: TARGET, engine: 'weights', compiled });
    const ex = fresh.chip.executor;
    const cfg = compiled.weights.config;
    const snap = () => {
      const out: Uint32Array[] = [];
      for (let l = 0; l < cfg.numLayers; l++) {
        if (cfg.layerTypes[l] !== 'linear_attention') continue;
        for (let h = 0; h < cfg.linearNumValueHeads; h++) out.push(new Uint32Array(ex.gdnState(l, h).slice().buffer));
      }
      return out;
    };
    const before = snap();
    const memBefore = fresh.chip.captureMemory();
    const areaFirst = (fresh.golden.base - 0x80000000) / 4;
    // The words a store file writes into the area (the import path of ChipStore.open).
    fresh.chip.writeWords(memoryWordsFromModel(model, fresh.golden.base));
    const memAfter = fresh.chip.captureMemory();
    for (const [row, v] of memBefore) if (row < areaFirst) expect(memAfter.get(row), `row ${row}`).toEqual(v);
    for (const [row] of memAfter) if (row < areaFirst) expect(memBefore.has(row), `row ${row}`).toBe(true);
    const after = snap();
    const memLayers = new Set(compiled.rams.filter((r) => /^mem\d*$/.test(r.name)).map((r) => r.layer));
    let k = 0;
    for (let l = 0; l < cfg.numLayers; l++) {
      if (cfg.layerTypes[l] !== 'linear_attention') continue;
      for (let h = 0; h < cfg.linearNumValueHeads; h++, k++) {
        if (!memLayers.has(l)) expect(before[k]!.every((x, i) => x === after[k]![i]), `layer ${l} head ${h}`).toBe(true);
      }
    }
  }, 300_000);
});

describe('chipc store', () => {
  it('init, put, get, list, delete, dump, export and import on a store file (IR engine)', async () => {
    const file = path.join(tmp, 'a.cst');
    const init = await cli('store', 'init', file, '--max-files', '8', '--name-max', '6', '--content-max', '40', '--chunk-size', '4', '--chunk-pool', '32', '--vocab', '300', '--json');
    expect(init.code).toBe(0);
    expect(JSON.parse(init.out).limits).toMatchObject({ maxFiles: 8, dirSlots: 16, chipMemBytes: 32768 });
    expect((await cli('store', 'init', file)).code).toBe(2); // exists
    const E = ['--engine', 'ir'];
    const put = await cli('store', 'put', file, '1,2', '5,6,7', ...E, '--json');
    expect(put.code).toBe(0);
    expect(JSON.parse(put.out)).toMatchObject({ code: 'OK', replaced: false, saved: true });
    expect((await cli('store', 'put', file, 'hi', 'there', '--text', ...E)).code).toBe(0);
    const get = await cli('store', 'get', file, '1,2', ...E, '--json');
    expect(JSON.parse(get.out).content).toEqual([5, 6, 7]);
    const text = await cli('store', 'get', file, 'hi', '--text', ...E);
    expect(text.out.split('\n')[0]).toBe('"there"');
    const list = await cli('store', 'list', file, ...E, '--json');
    expect(JSON.parse(list.out).names.map((n: number[]) => n.join(',')).sort()).toEqual(['1,2', '104,105']);
    // A non-OK answer: printed, exit 1, file untouched.
    const bytes = fs.readFileSync(file);
    const long = await cli('store', 'put', file, '9', Array.from({ length: 41 }, () => '1').join(','), ...E);
    expect(long.code).toBe(1);
    expect(long.out).toContain('CONTENT_TOO_LONG');
    expect(fs.readFileSync(file).equals(bytes)).toBe(true);
    // --ephemeral: OK, nothing written.
    const eph = await cli('store', 'delete', file, '1,2', '--ephemeral', ...E, '--json');
    expect(JSON.parse(eph.out)).toMatchObject({ code: 'OK', saved: false });
    expect(fs.readFileSync(file).equals(bytes)).toBe(true);
    expect((await cli('store', 'delete', file, '1,2', ...E)).code).toBe(0);
    expect((await cli('store', 'get', file, '1,2', ...E)).code).toBe(1);
    const dump = await cli('store', 'dump', file, ...E, '--json');
    expect(JSON.parse(dump.out).files).toEqual([{ name: [104, 105], content: [...Buffer.from('there')] }]);
    // export / import: through the chip's state and back, the same rows; the file equals the model's.
    const out = path.join(tmp, 'b.cst');
    expect((await cli('store', 'export', file, '-o', out, ...E)).code).toBe(0);
    const a = loadStoreFile(file), b = loadStoreFile(out);
    for (const t of TABLE_NAMES) expect([...b.rows(t)]).toEqual([...a.rows(t)].filter(([, f]) => f.some((v) => v !== 0)));
    expect((await cli('store', 'import', out, ...E)).code).toBe(0);
    // No temporary files left behind by the atomic saves.
    expect(fs.readdirSync(tmp).filter((f) => f !== 'a.cst' && f !== 'b.cst')).toEqual([]);
  }, 240_000);

  it('batch: a script of operations in one session, answers equal to the reference model, one save', async () => {
    const file = path.join(tmp, 'batch.cst');
    saveStoreFile(file, new StoreModel(SMALL));
    const script = path.join(tmp, 'ops.txt');
    const requests: StoreRequest[] = [
      { op: 'put', name: [1, 2], content: [5, 6, 7] },
      { op: 'put', name: [3], content: [] },
      { op: 'get', name: [1, 2] },
      { op: 'get', name: [4] },
      { op: 'put', name: [1, 2], content: [8] },
      { op: 'list' },
      { op: 'delete', name: [3] },
      { op: 'put', name: [9], content: Array.from({ length: 41 }, () => 1) },
    ];
    const arg = (x: readonly number[]) => (x.length === 0 ? '""' : x.join(','));
    fs.writeFileSync(script, '# a script\n' + requests.map((q) => [q.op, ...('name' in q ? [arg(q.name)] : []), ...('content' in q ? [arg(q.content)] : [])].join(' ')).join('\n') + '\n');
    const model = new StoreModel(SMALL);
    const want = requests.map((q) => expected(applyRequest(model, q)));
    const r = await cli('store', 'batch', file, script, '--engine', 'ir', '--json');
    expect(r.code).toBe(1); // a NOT_FOUND and a CONTENT_TOO_LONG among the answers
    const doc = JSON.parse(r.out);
    expect(doc.ops.map((o: { line: number }) => o.line)).toEqual(requests.map((_, i) => i + 2));
    expect(doc.ops.map((o: { code: string }) => o.code)).toEqual(want.map((w) => w.code));
    expect(doc.ops[2].content).toEqual([5, 6, 7]);
    expect(doc.ops[5].names).toEqual((want[5] as { names: number[][] }).names);
    expect(doc).toMatchObject({ ok: 6, notOk: 2, saved: true });
    // the file holds the state after the whole script: the reference model's rows
    const back = loadStoreFile(file);
    for (const t of TABLE_NAMES) expect([...back.rows(t)]).toEqual([...model.rows(t)].filter(([, f]) => f.some((v) => v !== 0)));
    // text output, a malformed script (nothing runs, nothing saved) and --ephemeral leave the file as it is
    const bytes = fs.readFileSync(file);
    fs.writeFileSync(script, 'put "a b" "c"\nget "a b"\n');
    const text = await cli('store', 'batch', file, script, '--engine', 'ir', '--text', '--ephemeral');
    expect(text.code).toBe(0);
    expect(text.out).toMatch(/^put "a b": OK \(new, slot \d+\)\nget "a b": "c"\n2 operations, 2 OK: .*ephemeral: not saved\n$/);
    fs.writeFileSync(script, 'delete 1,2\nput 1\n');
    const bad = await cli('store', 'batch', file, script, '--engine', 'ir');
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/ops\.txt:2: put takes 2 arguments/);
    expect(fs.readFileSync(file).equals(bytes)).toBe(true);
    expect((await cli('store', 'batch', file, path.join(tmp, 'none.txt'), '--engine', 'ir')).err).toMatch(/no such script file/);
    expect(fs.readdirSync(tmp).filter((f) => f.endsWith('.tmp') || f.includes('.cst.'))).toEqual([]);
  }, 240_000);

  it('store chip + --model: the saved chip runs the store without a compile, answers equal to the reference model', async () => {
    const file = path.join(tmp, 'm.cst');
    saveStoreFile(file, new StoreModel(SMALL));
    const chipFile = path.join(tmp, 'store.chip');
    const made = await cli('store', 'chip', file, '-o', chipFile, '--json');
    expect(made.code).toBe(0);
    // the store chip is the chip cache's generic chip (here the shared one): copied, not compiled
    expect(JSON.parse(made.out)).toMatchObject({ memBytes: 32768, layers: compiled.weights.config.numLayers, compileSeconds: 0, cache: { hit: true } });
    expect(fs.readFileSync(chipFile).equals(fs.readFileSync(JSON.parse(made.out).cache.path))).toBe(true);
    expect((await cli('store', 'chip', file, '-o', chipFile)).err).toMatch(/exists/); // no silent overwrite
    const M = ['--model', chipFile];
    const model = new StoreModel(SMALL);
    const requests: StoreRequest[] = [
      { op: 'put', name: [7, 8], content: [1, 2, 3] },
      { op: 'put', name: [9], content: [250, 251] },
      { op: 'get', name: [7, 8] },
      { op: 'delete', name: [9] },
      { op: 'list' },
    ];
    // a script (one load of the saved chip), then a single command
    const want = requests.map((q) => expected(applyRequest(model, q)));
    const script = path.join(tmp, 'm.txt');
    fs.writeFileSync(script, requests.map((q) => [q.op, ...('name' in q ? [q.name.join(',')] : []), ...('content' in q ? [q.content.join(',')] : [])].join(' ')).join('\n'));
    const batch = JSON.parse((await cli('store', 'batch', file, script, ...M, '--json')).out);
    expect(batch.ops.map((o: { code: string }) => o.code)).toEqual(want.map((w) => w.code));
    expect(batch.ops[2].content).toEqual([1, 2, 3]);
    expect(batch.ops[4].names).toEqual((want[4] as { names: number[][] }).names);
    const get = await cli('store', 'get', file, '7,8', ...M, '--json');
    expect(JSON.parse(get.out)).toMatchObject({ code: 'OK', content: [1, 2, 3] });
    // without --model the weights come from the chip cache: a hit, nothing compiled
    const cached = await cli('store', 'get', file, '7,8');
    expect(cached.code).toBe(0);
    expect(cached.out).toMatch(/^1,2,3$/m);
    expect(cached.err).not.toMatch(/compiling/);
    const back = loadStoreFile(file);
    for (const t of TABLE_NAMES) expect([...back.rows(t)]).toEqual([...model.rows(t)].filter(([, f]) => f.some((v) => v !== 0)));
    // the IR engine needs the circuit; a store of another capacity needs another chip
    expect((await cli('store', 'list', file, ...M, '--engine', 'ir')).err).toMatch(/--engine ir does not apply/);
    const big = path.join(tmp, 'big.cst');
    saveStoreFile(big, new StoreModel(resolveStoreParams({ ...CHIP_STORE_SMALL, maxFiles: 256, chunkPool: 1024 })));
    const wrong = await cli('store', 'list', big, ...M);
    expect(wrong.code).toBe(2);
    expect(wrong.err).toMatch(/store\.model.*data RAM is 32 KiB, the run asks for 64 KiB.*needs the store chip with a 64 KiB data RAM/s);
    // a manifest from before RAM layouts were recorded is refused, naming the remedy
    const old = path.join(tmp, 'old-chip');
    fs.mkdirSync(old);
    const { openChipFile } = await import('../src/chipfile/read.ts');
    const cf = openChipFile(chipFile);
    const manifest = JSON.parse(new TextDecoder().decode(cf.readFile('chipc-manifest.json')));
    fs.writeFileSync(path.join(old, 'config.json'), cf.readFile('config.json'));
    cf.close();
    manifest.rams = manifest.rams.map((r: { name: string; layer: number; keyHeads: number[] }) => ({ name: r.name, layer: r.layer, keyHeads: r.keyHeads }));
    fs.writeFileSync(path.join(old, 'chipc-manifest.json'), JSON.stringify(manifest));
    const stale = await cli('store', 'list', file, '--model', old);
    expect(stale.code).toBe(2);
    expect(stale.err).toMatch(/does not record RAM "[^"]+"'s layout.*emit the chip again/);
  }, 240_000);

  it('refuses a missing, corrupted or oversized store with a clear error', async () => {
    expect((await cli('store', 'list', path.join(tmp, 'none.cst'), '--engine', 'ir')).err).toMatch(/no store file/);
    const file = path.join(tmp, 'c.cst');
    saveStoreFile(file, new StoreModel(SMALL));
    const b = fs.readFileSync(file);
    b[b.length - 40] ^= 0x10;
    fs.writeFileSync(file, b);
    const r = await cli('store', 'list', file, '--engine', 'ir');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/checksum|corrupt|format/);
    const big = await cli('store', 'init', path.join(tmp, 'd.cst'), '--max-files', '4096');
    expect(big.code).toBe(2);
    expect(big.err).toMatch(/store\.mem|KiB/);
    expect(fs.existsSync(path.join(tmp, 'd.cst'))).toBe(false);
    fs.rmSync(file);
  });
});
