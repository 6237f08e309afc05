/**
 * Store files (src/store/file.ts): bit-identical round trips, every corrupted byte and every
 * truncation refused, the documented byte layout rebuilt by hand, atomic save under injected
 * failures, and the ephemeral mode never touching disk.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ChipcError } from '../src/util/errors.ts';
import { StoreModel, TABLE_NAMES } from '../src/store/model.ts';
import { StoreHandle, decodeStore, encodeStore, importStore, loadStoreFile, nodeStoreIo, saveStoreFile, type StoreIo } from '../src/store/file.ts';

const tmpDirs: string[] = [];
function tmpDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-store-'));
  tmpDirs.push(d);
  return d;
}
afterEach(() => { for (const d of tmpDirs.splice(0)) fs.rmSync(d, { recursive: true, force: true }); });

/** A store with chains, a free stack, stale rows and a shifted directory. */
function sampleStore(): StoreModel {
  const s = new StoreModel({ maxFiles: 4, nameMax: 4, contentMax: 10, chunkSize: 3, vocab: 248_320 });
  s.put([1, 2], [3, 4, 5, 6]);
  s.put([0, 62], [248_319, 0, 7]);
  s.put([2, 0], [1]);
  s.delete([1, 2]);
  s.put([9, 9, 9, 9], [200_000]);
  return s;
}

function rowsOf(s: StoreModel): string {
  return JSON.stringify(TABLE_NAMES.map((t) => [...s.rows(t)]));
}

function codeOf(f: () => unknown): string {
  try { f(); } catch (e) { if (e instanceof ChipcError) return e.code; throw e; }
  return 'accepted';
}

/** LEB128 by hand, as docs/store.md states it. */
function leb(v: number): number[] {
  const out: number[] = [];
  do { let b = v % 128; v = Math.floor(v / 128); if (v > 0) b += 128; out.push(b); } while (v > 0);
  return out;
}

describe('store file format', () => {
  it('round trip: decode then encode gives identical bytes and every row equal', () => {
    for (const s of [new StoreModel(), sampleStore()]) {
      const bytes = encodeStore(s);
      const back = decodeStore(bytes);
      expect(Buffer.from(encodeStore(back)).equals(Buffer.from(bytes))).toBe(true);
      expect(rowsOf(back)).toBe(rowsOf(s));
      expect(back.params).toEqual(s.params);
      // importStore into an empty model of the same parameters: the same rows again.
      const fresh = new StoreModel(s.params);
      importStore(fresh, bytes);
      expect(rowsOf(fresh)).toBe(rowsOf(s));
      for (const t of TABLE_NAMES) for (let i = 0; i < fresh.tables.find((x) => x.name === t)!.rows; i++) expect(fresh.row(t, i)).toEqual(s.row(t, i));
      // and the loaded store behaves the same
      expect(fresh.list()).toEqual(s.list());
    }
  });

  it('matches the documented layout rebuilt by hand', () => {
    const s = new StoreModel({ maxFiles: 1, nameMax: 2, contentMax: 2, chunkSize: 2, vocab: 1000 });
    s.put([5, 300], [7]);
    // params: F=1 → D=2, P = max(4, ceil(4/2)) = 4; fp([5,300]) = (31·6 + 301) mod 2^19 = 487, home 487 mod 2 = 1.
    const body: number[] = [...Buffer.from('CHIPSTOR'), 1, 0, 0, 0, 0, 0, 0, 0];
    body.push(...leb(1), ...leb(2), ...leb(2), ...leb(2), ...leb(4), ...leb(1000));
    body.push(1, 0, ...leb(1), 0, ...leb(2)); // counters: 1 row, gap 0, {1 file, freeTop 0, bump 2}
    body.push(1, 1, 1, ...leb(487), 2, 1, 0); // dir: 1 row at slot 1 (gap 1): {1, 487, 2, 1, chunk 0}
    body.push(2, 0, 5, ...leb(300), 0, 7, 0); // chunk rows 0 {5,300}, 1 {7,0}
    body.push(2, 0, 2, 0, 0); // link rows 0 → next+1 = 2, 1 → 0
    body.push(0); // free: no rows
    const total = body.length + 32;
    body[12] = total & 255; body[13] = total >> 8;
    const want = Buffer.concat([Buffer.from(body), createHash('sha256').update(Buffer.from(body)).digest()]);
    expect(Buffer.from(encodeStore(s)).equals(want)).toBe(true);
  });

  it('refuses every corrupted byte and every truncation', () => {
    const bytes = encodeStore(sampleStore());
    expect(bytes.length).toBeLessThan(400);
    for (let i = 0; i < bytes.length; i++) {
      for (const flip of [0x01, 0x80, 0xff]) {
        const bad = bytes.slice();
        bad[i] ^= flip;
        const code = codeOf(() => decodeStore(bad));
        expect(code, `byte ${i} ^ ${flip}`).not.toBe('accepted');
        expect(code.startsWith('store.'), code).toBe(true);
      }
    }
    for (let n = 0; n < bytes.length; n++) {
      const code = codeOf(() => decodeStore(bytes.subarray(0, n)));
      expect(code, `truncated to ${n}`).toBe('store.truncated');
    }
    expect(codeOf(() => decodeStore(new Uint8Array([...bytes, 0])))).toBe('store.format');
    let msg = '';
    try { decodeStore(bytes.subarray(0, bytes.length - 1), { source: 'x.store' }); } catch (e) { msg = (e as Error).message; }
    expect(msg).toMatch(/x\.store: truncated/);
  });

  it('refuses wrong magic, version, parameters mismatch and inconsistent rows with a named error', () => {
    const s = sampleStore();
    const bytes = encodeStore(s);
    const reseal = (b: Uint8Array): Uint8Array => {
      const body = b.subarray(0, b.length - 32);
      return new Uint8Array([...body, ...createHash('sha256').update(body).digest()]);
    };
    const magic = bytes.slice(); magic[0] = 0x58;
    expect(codeOf(() => decodeStore(reseal(magic)))).toBe('store.format');
    const ver = bytes.slice(); ver[8] = 2;
    expect(codeOf(() => decodeStore(reseal(ver)))).toBe('store.version');
    expect(codeOf(() => decodeStore(bytes, { expect: { ...s.params, maxFiles: 5 } }))).toBe('store.mismatch');
    expect(codeOf(() => importStore(s, bytes))).toBe('store.not-empty');
    // A well-sealed file whose rows break the invariants: fileCount off by one.
    const m = new StoreModel(s.params);
    for (const t of TABLE_NAMES) for (const [i, f] of s.rows(t)) m.setRow(t, i, f);
    m.setRow('counters', 0, [s.fileCount + 1, ...s.row('counters', 0)!.slice(1)]);
    expect(codeOf(() => decodeStore(encodeStore(m)))).toBe('store.corrupt');
    // A row field out of range for its table.
    expect(codeOf(() => m.setRow('chunk', 0, [s.params.vocab, 0, 0]))).toBe('store.row');
  });
});

describe('store file save and sessions', () => {
  it('saves atomically: a failure mid-write or at rename leaves the old file and no temp file', () => {
    const dir = tmpDir();
    const file = path.join(dir, 'a.chip-store');
    const old = sampleStore();
    saveStoreFile(file, old);
    const oldBytes = fs.readFileSync(file);
    const next = sampleStore();
    next.put([7], [7, 7, 7, 7, 7, 7]);
    for (const failAt of ['write', 'fsync', 'rename'] as const) {
      let writes = 0;
      const io: StoreIo = {
        ...nodeStoreIo,
        writeSync: (fd, b, o, l) => {
          if (failAt === 'write' && writes++ > 0) throw new Error('disk full (simulated)');
          // the first write stores only half, so a second write call is needed
          return nodeStoreIo.writeSync(fd, b, o, failAt === 'write' ? Math.ceil(l / 2) : l);
        },
        fsyncSync: (fd) => { if (failAt === 'fsync') throw new Error('I/O error (simulated)'); nodeStoreIo.fsyncSync(fd); },
        renameSync: (a, b) => { if (failAt === 'rename') throw new Error('crash (simulated)'); nodeStoreIo.renameSync(a, b); },
      };
      expect(codeOf(() => saveStoreFile(file, next, io)), failAt).toBe('store.write');
      expect(fs.readFileSync(file).equals(oldBytes), failAt).toBe(true);
      expect(fs.readdirSync(dir)).toEqual(['a.chip-store']);
    }
    // A crash between the temp write and the rename leaves a stray temp file: the old file still loads.
    fs.writeFileSync(path.join(dir, '.a.chip-store.1.dead.tmp'), encodeStore(next).subarray(0, 10));
    expect(rowsOf(loadStoreFile(file))).toBe(rowsOf(old));
    saveStoreFile(file, next);
    expect(rowsOf(loadStoreFile(file))).toBe(rowsOf(next));
  });

  it('a session loads, works on and saves its file; a mismatched file is refused', () => {
    const dir = tmpDir();
    const file = path.join(dir, 's.chip-store');
    const opts = { maxFiles: 8, contentMax: 64 };
    const a = StoreHandle.open(file, opts);
    expect(a.model.isEmpty()).toBe(true);
    expect(a.model.put([1, 2, 3], [4, 5]).code).toBe('OK');
    expect(a.save()).toBe(true);
    const b = StoreHandle.open(file, opts);
    const g = b.model.get([1, 2, 3]);
    expect(g.code === 'OK' && g.content).toEqual([4, 5]);
    expect(Buffer.from(b.exportBytes()).equals(fs.readFileSync(file))).toBe(true);
    expect(codeOf(() => StoreHandle.open(file, { maxFiles: 9, contentMax: 64 }))).toBe('store.mismatch');
    expect(codeOf(() => loadStoreFile(path.join(dir, 'missing')))).toBe('store.read');
  });

  it('ephemeral mode never touches disk', () => {
    const calls: string[] = [];
    const spy = Object.fromEntries(Object.keys(nodeStoreIo).map((k) => [k, (..._a: unknown[]) => { calls.push(k); throw new Error('disk touched'); }])) as unknown as StoreIo;
    const dir = tmpDir();
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      const s = StoreHandle.ephemeral({ maxFiles: 4 }, spy);
      expect(s.ephemeral).toBe(true);
      expect(s.path).toBeUndefined();
      expect(s.model.put([1], [2]).code).toBe('OK');
      expect(s.save()).toBe(false);
      expect(s.exportBytes().length).toBeGreaterThan(0);
    } finally {
      process.chdir(cwd);
    }
    expect(fs.readdirSync(dir)).toEqual([]);
    expect(calls).toEqual([]);
  });
});
