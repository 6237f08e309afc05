/**
 * The cache of compiled chips (src/chip/cache.ts): where it lives, keys and names, hits and misses,
 * verification (a flipped byte, a truncated entry.json, another compiler's entry are rebuilt with
 * one line of log), atomic building (a failing builder leaves nothing, racing builders both end
 * with a valid entry), noCache, listing and clearing, and `chipc cache` on the command line.
 */
import crypto from 'node:crypto';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  CHIP_FILE, ENTRY_FILE, cacheRoot, canonicalKey, clearCache, compilerHash, compilerSourceFiles, computeCompilerHash,
  entryName, getOrBuildChip, listCacheEntries, type ChipCacheKey,
} from '../src/chip/cache.ts';
import { ChipcError } from '../src/util/errors.ts';
import { cli } from './helpers/cli.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-cache-test-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

let root: string;
let n = 0;
beforeEach(() => {
  root = path.join(tmp, `root-${n++}`);
});

const KEY: ChipCacheKey = { circuit: 'rv32im', target: 'chip-test', options: { codeWords: 1024, memWords: 8192 }, dtype: 'bf16' };

/** A builder that writes `bytes` (default: 100 KiB of a pattern depending on `seed`) and counts its calls. */
function builder(seed = 1, bytes?: Buffer) {
  const calls: string[] = [];
  const content = bytes ?? Buffer.from(Array.from({ length: 100 * 1024 }, (_, i) => (i * 31 + seed) & 255));
  const build = async (p: string) => {
    calls.push(p);
    await new Promise((r) => setTimeout(r, 5));
    fs.writeFileSync(p, content);
  };
  return { calls, build, content };
}

/** Every path under `dir`, relative, sorted ([] when it does not exist). */
function tree(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true }) as string[]).map((p) => p.split(path.sep).join('/')).sort();
}

function logger() {
  const lines: string[] = [];
  return { lines, log: (l: string) => lines.push(l) };
}

describe('cacheRoot', () => {
  it('takes CHIPC_CACHE_DIR, then XDG_CACHE_HOME, then the platform folder', () => {
    expect(cacheRoot({ CHIPC_CACHE_DIR: '/x/y', XDG_CACHE_HOME: '/xdg', HOME: '/h' }, 'linux')).toBe('/x/y');
    expect(cacheRoot({ CHIPC_CACHE_DIR: 'rel' }, 'linux')).toBe(path.resolve('rel'));
    expect(cacheRoot({ XDG_CACHE_HOME: '/xdg', HOME: '/h' }, 'linux')).toBe('/xdg/chipc');
    expect(cacheRoot({ XDG_CACHE_HOME: 'relative', HOME: '/h' }, 'linux')).toBe('/h/.cache/chipc');
    expect(cacheRoot({ CHIPC_CACHE_DIR: '', HOME: '/h' }, 'linux')).toBe('/h/.cache/chipc');
    expect(cacheRoot({ HOME: '/Users/u' }, 'darwin')).toBe('/Users/u/Library/Caches/chipc');
    expect(cacheRoot({ LOCALAPPDATA: 'C:\\Users\\u\\AppData\\Local' }, 'win32')).toBe('C:\\Users\\u\\AppData\\Local\\chipc\\Cache');
    expect(cacheRoot({ HOME: '/h' }, 'linux')).toBe(path.join('/h', '.cache', 'chipc'));
  });
});

describe('compilerHash', () => {
  it('is a sha256 over the sources, memoised, fast', () => {
    const h = compilerHash();
    expect(h).toMatch(/^[0-9a-f]{64}$/);
    expect(compilerHash()).toBe(h);
    expect(computeCompilerHash()).toBe(h);
    const files = compilerSourceFiles();
    expect(files).toContain('src/chip/cache.ts');
    expect(files).toContain('src/cpu/cpu.ts');
    expect(files).toContain('targets/chip-test.json');
    expect(files.some((f) => f.startsWith('riscv/'))).toBe(true);
    expect(files.some((f) => f.startsWith('test/') || f.startsWith('tools/'))).toBe(false);
    expect([...files].sort()).toEqual(files);
    const t0 = performance.now();
    computeCompilerHash();
    expect(performance.now() - t0).toBeLessThan(500); // ~10 ms measured; generous for a loaded machine
  });

  it('changes with a file\'s content, its path and package.json\'s version', () => {
    const pkg = path.join(tmp, 'pkg');
    fs.mkdirSync(path.join(pkg, 'src', 'a'), { recursive: true });
    fs.mkdirSync(path.join(pkg, 'targets'));
    fs.writeFileSync(path.join(pkg, 'package.json'), JSON.stringify({ version: '1.0.0' }));
    fs.writeFileSync(path.join(pkg, 'src', 'a', 'x.ts'), 'export const x = 1;\n');
    fs.writeFileSync(path.join(pkg, 'src', 'notes.md'), 'not a source');
    fs.writeFileSync(path.join(pkg, 'targets', 't.json'), '{}');
    expect(compilerSourceFiles(pkg)).toEqual(['src/a/x.ts', 'targets/t.json']);
    const h0 = computeCompilerHash(pkg);
    fs.writeFileSync(path.join(pkg, 'src', 'notes.md'), 'edited');
    expect(computeCompilerHash(pkg)).toBe(h0);
    fs.writeFileSync(path.join(pkg, 'src', 'a', 'x.ts'), 'export const x = 2;\n');
    const h1 = computeCompilerHash(pkg);
    expect(h1).not.toBe(h0);
    fs.renameSync(path.join(pkg, 'src', 'a', 'x.ts'), path.join(pkg, 'src', 'a', 'y.ts'));
    const h2 = computeCompilerHash(pkg);
    expect(h2).not.toBe(h1);
    fs.writeFileSync(path.join(pkg, 'targets', 't.json'), '{"a":1}');
    const h3 = computeCompilerHash(pkg);
    expect(h3).not.toBe(h2);
    fs.writeFileSync(path.join(pkg, 'package.json'), JSON.stringify({ version: '1.0.1' }));
    expect(computeCompilerHash(pkg)).not.toBe(h3);
  });
});

describe('keys', () => {
  it('canonical JSON sorts keys at every level; the name depends on key and compiler', () => {
    const a = canonicalKey({ dtype: 'bf16', options: { memWords: 8192, codeWords: 1024 }, target: 'chip-test', circuit: 'rv32im' });
    expect(a).toBe('{"circuit":"rv32im","dtype":"bf16","options":{"codeWords":1024,"memWords":8192},"target":"chip-test"}');
    expect(canonicalKey(KEY)).toBe(a);
    const name = entryName(KEY);
    expect(name).toMatch(/^rv32im-chip-test-[0-9a-f]{16}$/);
    expect(entryName({ ...KEY, options: { memWords: 8192, codeWords: 1024 } })).toBe(name);
    expect(entryName({ ...KEY, dtype: 'f32' })).not.toBe(name);
    expect(entryName({ ...KEY, options: { ...KEY.options, codeWords: 2048 } })).not.toBe(name);
    expect(entryName({ ...KEY, options: { ...KEY.options, codeWords: '1024' } })).not.toBe(name);
    expect(entryName(KEY, '0'.repeat(64))).not.toBe(name);
    expect(entryName({ ...KEY, target: '/some/where/config.json' })).toMatch(/^rv32im-config-[0-9a-f]{16}$/);
  });

  it('refuses a malformed key with cache.key', () => {
    for (const bad of [
      { ...KEY, circuit: '' },
      { ...KEY, options: { codeWords: Number.NaN } },
      { ...KEY, options: { codeWords: Infinity } },
      { ...KEY, options: { x: true as unknown as number } },
      { ...KEY, options: [] as unknown as Record<string, number> },
    ]) {
      expect(() => canonicalKey(bad), JSON.stringify(bad)).toThrow(ChipcError);
      try { canonicalKey(bad); } catch (e) { expect((e as ChipcError).code).toBe('cache.key'); }
    }
  });
});

describe('getOrBuildChip', () => {
  it('a miss builds once into a temporary name, a second call hits without calling the builder', async () => {
    const b = builder();
    const first = await getOrBuildChip(KEY, b.build, { root });
    expect(first.hit).toBe(false);
    expect(b.calls).toHaveLength(1);
    expect(b.calls[0]!.endsWith('.chip')).toBe(true);
    expect(path.dirname(path.dirname(b.calls[0]!))).toBe(root); // built inside the root (same file system)
    expect(path.basename(path.dirname(b.calls[0]!))).toMatch(/^\.tmp-/);
    expect(first.path).toBe(path.join(root, entryName(KEY), CHIP_FILE));
    expect(fs.readFileSync(first.path).equals(b.content)).toBe(true);
    const rec = JSON.parse(fs.readFileSync(path.join(root, first.entry, ENTRY_FILE), 'utf8'));
    expect(rec).toMatchObject({
      format: 'chipc-chip-cache-entry', version: 1, key: JSON.parse(canonicalKey(KEY)), compilerHash: compilerHash(),
      chip: { file: 'chip.chip', bytes: b.content.length, sha256: crypto.createHash('sha256').update(b.content).digest('hex') },
      chipcVersion: '0.1.0',
    });
    expect(Number.isNaN(Date.parse(rec.created))).toBe(false);
    expect(tree(root)).toEqual([first.entry, `${first.entry}/${CHIP_FILE}`, `${first.entry}/${ENTRY_FILE}`]);

    const second = await getOrBuildChip(KEY, b.build, { root });
    expect(second).toMatchObject({ hit: true, path: first.path, entry: first.entry });
    expect(b.calls).toHaveLength(1);
    // another key is another entry
    const other = await getOrBuildChip({ ...KEY, dtype: 'f32' }, b.build, { root });
    expect(other.hit).toBe(false);
    expect(other.path).not.toBe(first.path);
    expect(b.calls).toHaveLength(2);
  });

  it('a sync builder works too', async () => {
    const r = await getOrBuildChip(KEY, (p) => fs.writeFileSync(p, 'chip'), { root });
    expect(fs.readFileSync(r.path, 'utf8')).toBe('chip');
  });

  it('a flipped byte in chip.chip is detected and rebuilt, with one line of log', async () => {
    const b = builder();
    const { path: chip } = await getOrBuildChip(KEY, b.build, { root });
    const bytes = fs.readFileSync(chip);
    bytes[12345] ^= 0x01;
    fs.writeFileSync(chip, bytes);
    const l = logger();
    const r = await getOrBuildChip(KEY, b.build, { root, log: l.log });
    expect(r.hit).toBe(false);
    expect(b.calls).toHaveLength(2);
    expect(l.lines).toEqual([`chipc: cached chip ${r.entry} is corrupt (sha256 mismatch); rebuilding`]);
    expect(fs.readFileSync(r.path).equals(b.content)).toBe(true);
    expect(tree(root)).toEqual([r.entry, `${r.entry}/${CHIP_FILE}`, `${r.entry}/${ENTRY_FILE}`]);
    // and now it hits again
    const again = await getOrBuildChip(KEY, b.build, { root, log: l.log });
    expect(again.hit).toBe(true);
    expect(l.lines).toHaveLength(1);
  });

  it('a truncated chip.chip (size mismatch) and a missing one are rebuilt', async () => {
    const b = builder();
    const { path: chip, entry } = await getOrBuildChip(KEY, b.build, { root });
    fs.truncateSync(chip, 1000);
    const l = logger();
    expect((await getOrBuildChip(KEY, b.build, { root, log: l.log })).hit).toBe(false);
    expect(l.lines[0]).toMatch(new RegExp(`^chipc: cached chip ${entry} is corrupt \\(size mismatch: 1000 bytes, entry\\.json says 102400\\); rebuilding$`));
    fs.rmSync(chip);
    expect((await getOrBuildChip(KEY, b.build, { root, log: l.log })).hit).toBe(false);
    expect(l.lines[1]).toContain('chip.chip missing');
    expect(b.calls).toHaveLength(3);
    expect(fs.readFileSync(chip).equals(b.content)).toBe(true);
  });

  it('a truncated entry.json is rebuilt', async () => {
    const b = builder();
    const { entry } = await getOrBuildChip(KEY, b.build, { root });
    const rec = path.join(root, entry, ENTRY_FILE);
    const text = fs.readFileSync(rec, 'utf8');
    fs.writeFileSync(rec, text.slice(0, text.length >> 1));
    const l = logger();
    const r = await getOrBuildChip(KEY, b.build, { root, log: l.log });
    expect(r.hit).toBe(false);
    expect(b.calls).toHaveLength(2);
    expect(l.lines).toEqual([`chipc: cached chip ${entry} is corrupt (entry.json is not valid JSON); rebuilding`]);
    expect(JSON.parse(fs.readFileSync(rec, 'utf8')).compilerHash).toBe(compilerHash());
  });

  it('an entry.json of another key, or a malformed one, is corrupt', async () => {
    const b = builder();
    const { entry } = await getOrBuildChip(KEY, b.build, { root });
    const rec = path.join(root, entry, ENTRY_FILE);
    const doc = JSON.parse(fs.readFileSync(rec, 'utf8'));
    fs.writeFileSync(rec, JSON.stringify({ ...doc, key: { ...doc.key, dtype: 'f32' } }));
    const l = logger();
    await getOrBuildChip(KEY, b.build, { root, log: l.log });
    fs.writeFileSync(rec, JSON.stringify({ ...doc, chip: { ...doc.chip, sha256: 'nope' } }));
    await getOrBuildChip(KEY, b.build, { root, log: l.log });
    expect(l.lines).toEqual([
      `chipc: cached chip ${entry} is corrupt (key mismatch); rebuilding`,
      `chipc: cached chip ${entry} is corrupt (entry.json has a malformed chip record); rebuilding`,
    ]);
    expect(b.calls).toHaveLength(3);
  });

  it('an entry of another compiler is stale and rebuilt', async () => {
    const b = builder();
    const { entry } = await getOrBuildChip(KEY, b.build, { root });
    const rec = path.join(root, entry, ENTRY_FILE);
    const doc = JSON.parse(fs.readFileSync(rec, 'utf8'));
    fs.writeFileSync(rec, JSON.stringify({ ...doc, compilerHash: 'f'.repeat(64) }));
    const l = logger();
    const r = await getOrBuildChip(KEY, b.build, { root, log: l.log });
    expect(r.hit).toBe(false);
    expect(b.calls).toHaveLength(2);
    expect(l.lines).toEqual([`chipc: cached chip ${entry} is stale (built by compiler ffffffffffffffff, this is ${compilerHash().slice(0, 16)}); rebuilding`]);
    expect(JSON.parse(fs.readFileSync(rec, 'utf8')).compilerHash).toBe(compilerHash());
  });

  it('a builder that throws leaves no file and its error propagates', async () => {
    const boom = new Error('compile failed');
    await expect(getOrBuildChip(KEY, (p) => {
      fs.writeFileSync(p, 'partial');
      throw boom;
    }, { root })).rejects.toBe(boom);
    expect(tree(root)).toEqual([]);
    // an async builder, rejecting after writing
    await expect(getOrBuildChip(KEY, async (p) => {
      fs.writeFileSync(p, 'partial');
      await new Promise((r) => setTimeout(r, 1));
      throw new ChipcError('fit.units', 'does not fit');
    }, { root })).rejects.toMatchObject({ code: 'fit.units' });
    expect(tree(root)).toEqual([]);
    // a builder that writes nothing
    await expect(getOrBuildChip(KEY, () => {}, { root })).rejects.toMatchObject({ code: 'cache.no-output' });
    expect(tree(root)).toEqual([]);
    // a failed rebuild keeps nothing new and builds next time
    const b = builder();
    const ok = await getOrBuildChip(KEY, b.build, { root });
    fs.appendFileSync(ok.path, 'x');
    await expect(getOrBuildChip(KEY, () => { throw boom; }, { root })).rejects.toBe(boom);
    expect(tree(root)).toEqual([ok.entry, `${ok.entry}/${CHIP_FILE}`, `${ok.entry}/${ENTRY_FILE}`]);
    expect((await getOrBuildChip(KEY, b.build, { root })).hit).toBe(false);
  });

  it('noCache builds outside the root, never writes under it, and dispose removes the chip', async () => {
    const b = builder();
    const r = await getOrBuildChip(KEY, b.build, { root, noCache: true });
    expect(r.hit).toBe(false);
    expect(fs.readFileSync(r.path).equals(b.content)).toBe(true);
    expect(r.path.startsWith(root)).toBe(false);
    expect(r.path.startsWith(os.tmpdir())).toBe(true);
    expect(fs.existsSync(root)).toBe(false);
    r.dispose();
    r.dispose();
    expect(fs.existsSync(path.dirname(r.path))).toBe(false);
    // nor does it read the cache: a cached entry is not used
    await getOrBuildChip(KEY, b.build, { root });
    const r2 = await getOrBuildChip(KEY, b.build, { root, noCache: true });
    expect(r2.hit).toBe(false);
    expect(r2.path.startsWith(root)).toBe(false);
    expect(b.calls).toHaveLength(3);
    expect(tree(root)).toHaveLength(3);
    r2.dispose();
    // a failing noCache build leaves no temp folder
    let dir = '';
    await expect(getOrBuildChip(KEY, (p) => {
      dir = path.dirname(p);
      fs.writeFileSync(p, 'x');
      throw new Error('no');
    }, { root, noCache: true })).rejects.toThrow('no');
    expect(dir).not.toBe('');
    expect(fs.existsSync(dir)).toBe(false);
  });

  it('racing builders of one entry both end with a valid entry and leave no temporary folder', async () => {
    const a = builder(1);
    const b = builder(1);
    const [ra, rb] = await Promise.all([getOrBuildChip(KEY, a.build, { root }), getOrBuildChip(KEY, b.build, { root })]);
    expect(a.calls).toHaveLength(1);
    expect(b.calls).toHaveLength(1);
    expect(ra.path).toBe(rb.path);
    expect(tree(root)).toEqual([ra.entry, `${ra.entry}/${CHIP_FILE}`, `${ra.entry}/${ENTRY_FILE}`]);
    expect((await getOrBuildChip(KEY, a.build, { root })).hit).toBe(true);
    // racing rebuilds of a corrupt entry: the corrupt one is replaced, once
    fs.appendFileSync(ra.path, 'x');
    const [rc, rd] = await Promise.all([getOrBuildChip(KEY, a.build, { root }), getOrBuildChip(KEY, b.build, { root })]);
    expect(rc.hit || rd.hit).toBe(false);
    expect(tree(root)).toEqual([ra.entry, `${ra.entry}/${CHIP_FILE}`, `${ra.entry}/${ENTRY_FILE}`]);
    expect(listCacheEntries({ root })[0]!.corrupt).toBeUndefined();
  });

  it('two processes racing on one entry: both build, both return a valid entry, nothing is left over', async () => {
    const cacheTs = fileURLToPath(new URL('../src/chip/cache.ts', import.meta.url));
    const barrier = path.join(tmp, `barrier-${n}`);
    fs.mkdirSync(barrier);
    const script = path.join(tmp, `race-${n}.mts`);
    // each builder writes its chip, then waits until both processes are building: both miss
    fs.writeFileSync(script, [
      `import fs from 'node:fs';`,
      `import { getOrBuildChip } from ${JSON.stringify(cacheTs)};`,
      `const [root, barrier, tag] = process.argv.slice(2);`,
      `const key = ${JSON.stringify(KEY)};`,
      `const r = await getOrBuildChip(key, async (p) => {`,
      `  fs.writeFileSync(p, Buffer.alloc(200_000, 7));`,
      `  fs.writeFileSync(barrier + '/' + tag, '');`,
      `  for (let i = 0; i < 400 && fs.readdirSync(barrier).length < 2; i++) await new Promise((r) => setTimeout(r, 50));`,
      `}, { root });`,
      `console.log(JSON.stringify({ path: r.path, hit: r.hit, size: fs.statSync(r.path).size }));`,
    ].join('\n'));
    const runOne = (tag: string) => new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const p = spawn(process.execPath, ['--import', 'tsx', script, root, barrier, tag], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      p.stdout.on('data', (d) => (out += d));
      p.stderr.on('data', (d) => (err += d));
      p.on('close', (code) => resolve({ code, out, err }));
    });
    const rs = await Promise.all([runOne('a'), runOne('b')]);
    for (const r of rs) expect(r.code, r.err).toBe(0);
    const docs = rs.map((r) => JSON.parse(r.out));
    expect(fs.readdirSync(barrier).sort()).toEqual(['a', 'b']);
    expect(docs.map((d) => d.hit)).toEqual([false, false]);
    expect(docs[0].path).toBe(docs[1].path);
    expect(docs.map((d) => d.size)).toEqual([200_000, 200_000]);
    const entry = entryName(KEY);
    expect(tree(root)).toEqual([entry, `${entry}/${CHIP_FILE}`, `${entry}/${ENTRY_FILE}`]);
    expect(listCacheEntries({ root })[0]!.corrupt).toBeUndefined();
    expect((await getOrBuildChip(KEY, () => { throw new Error('not called'); }, { root })).hit).toBe(true);
  }, 60_000);

  it('an unwritable root is cache.unwritable', async () => {
    const file = path.join(tmp, `not-a-folder-${n}`);
    fs.writeFileSync(file, 'x');
    await expect(getOrBuildChip(KEY, builder().build, { root: path.join(file, 'cache') })).rejects.toMatchObject({ code: 'cache.unwritable' });
  });

  it('takes the root from CHIPC_CACHE_DIR by default', async () => {
    const saved = process.env.CHIPC_CACHE_DIR;
    process.env.CHIPC_CACHE_DIR = root;
    try {
      const r = await getOrBuildChip(KEY, builder().build);
      expect(r.path.startsWith(root + path.sep)).toBe(true);
    } finally {
      if (saved === undefined) delete process.env.CHIPC_CACHE_DIR;
      else process.env.CHIPC_CACHE_DIR = saved;
    }
  });
});

/** A cache with three entries: ok, stale (edited compilerHash), corrupt (flipped byte); plus a foreign folder. */
async function populate(): Promise<{ ok: string; stale: string; corrupt: string }> {
  const ok = (await getOrBuildChip(KEY, builder(1).build, { root })).entry;
  const stale = (await getOrBuildChip({ ...KEY, dtype: 'f32' }, builder(2).build, { root })).entry;
  const recFile = path.join(root, stale, ENTRY_FILE);
  fs.writeFileSync(recFile, JSON.stringify({ ...JSON.parse(fs.readFileSync(recFile, 'utf8')), compilerHash: '0'.repeat(64) }));
  const c = await getOrBuildChip({ ...KEY, target: 'tiny' }, builder(3).build, { root });
  const bytes = fs.readFileSync(c.path);
  bytes[7] ^= 0x80;
  fs.writeFileSync(c.path, bytes);
  fs.mkdirSync(path.join(root, 'not-an-entry'));
  fs.writeFileSync(path.join(root, 'not-an-entry', 'keep.txt'), 'mine');
  return { ok, stale, corrupt: c.entry };
}

describe('listCacheEntries and clearCache', () => {
  it('lists every entry with its key, size, time, stale and corrupt; a missing root lists nothing', async () => {
    expect(listCacheEntries({ root })).toEqual([]);
    const e = await populate();
    const list = listCacheEntries({ root });
    expect(list.map((x) => x.entry)).toEqual([e.ok, e.stale, e.corrupt].sort());
    const by = (name: string) => list.find((x) => x.entry === name)!;
    expect(by(e.ok)).toMatchObject({ key: JSON.parse(canonicalKey(KEY)), stale: false, compilerHash: compilerHash(), chipcVersion: '0.1.0' });
    expect(by(e.ok).corrupt).toBeUndefined();
    expect(by(e.ok).path).toBe(path.join(root, e.ok, CHIP_FILE));
    expect(by(e.ok).bytes).toBe(102400 + fs.statSync(path.join(root, e.ok, ENTRY_FILE)).size);
    expect(by(e.stale)).toMatchObject({ stale: true, compilerHash: '0'.repeat(64) });
    expect(by(e.stale).corrupt).toBeUndefined();
    expect(by(e.corrupt)).toMatchObject({ stale: false, corrupt: 'sha256 mismatch' });
    // sizes only: the flipped byte goes unseen
    expect(listCacheEntries({ root, hash: false }).find((x) => x.entry === e.corrupt)!.corrupt).toBeUndefined();
  });

  it('clear --stale removes stale and corrupt entries only; clear removes every entry and nothing else', async () => {
    const e = await populate();
    const r = clearCache({ root, staleOnly: true });
    expect(r.removed).toBe(2);
    expect(r.bytes).toBeGreaterThan(2 * 102400);
    expect(listCacheEntries({ root }).map((x) => x.entry)).toEqual([e.ok]);
    // an abandoned build's temporary folder goes too, a fresh one stays
    const old = path.join(root, '.tmp-x-1-deadbeef');
    const fresh = path.join(root, '.tmp-y-2-deadbeef');
    fs.mkdirSync(old);
    fs.mkdirSync(fresh);
    const dayAgo = new Date(Date.now() - 86_400_000);
    fs.utimesSync(old, dayAgo, dayAgo);
    const all = clearCache({ root });
    expect(all.removed).toBe(1);
    expect(tree(root)).toEqual(['.tmp-y-2-deadbeef', 'not-an-entry', 'not-an-entry/keep.txt']);
    expect(clearCache({ root })).toEqual({ removed: 0, bytes: 0 });
    expect(clearCache({ root: path.join(root, 'missing') })).toEqual({ removed: 0, bytes: 0 });
  });
});

describe('chipc cache', () => {
  let saved: string | undefined;
  beforeEach(() => {
    saved = process.env.CHIPC_CACHE_DIR;
    process.env.CHIPC_CACHE_DIR = root;
  });
  afterEach(() => {
    if (saved === undefined) delete process.env.CHIPC_CACHE_DIR;
    else process.env.CHIPC_CACHE_DIR = saved;
  });

  it('cache path prints the root', async () => {
    const r = await cli('cache', 'path');
    expect(r.code).toBe(0);
    expect(r.out).toBe(`${root}\n`);
    expect(JSON.parse((await cli('cache', 'path', '--json')).out)).toEqual({ root });
  });

  it('cache ls --json lists the entries; the table names each status', async () => {
    const empty = await cli('cache', 'ls');
    expect(empty.code).toBe(0);
    expect(empty.out).toContain(`no cached chips in ${root}`);
    const e = await populate();
    const r = await cli('cache', 'ls', '--json');
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.out);
    expect(doc.root).toBe(root);
    expect(doc.compilerHash).toBe(compilerHash());
    expect(doc.entries.map((x: { entry: string }) => x.entry)).toEqual([e.ok, e.stale, e.corrupt].sort());
    const status = Object.fromEntries(doc.entries.map((x: { entry: string; stale: boolean; corrupt?: string }) => [x.entry, x.corrupt ?? x.stale]));
    expect(status).toEqual({ [e.ok]: false, [e.stale]: true, [e.corrupt]: 'sha256 mismatch' });
    expect(doc.entries.find((x: { entry: string }) => x.entry === e.ok).key).toEqual(JSON.parse(canonicalKey(KEY)));
    const text = await cli('cache', 'ls');
    expect(text.code).toBe(0);
    const line = (name: string) => text.out.split('\n').find((l) => l.startsWith(name))!;
    expect(line(e.ok)).toMatch(/rv32im\s+chip-test\s+codeWords=1024 memWords=8192\s+bf16\s+100\.\d+ KiB\s+\d+ s\s+ok$/);
    expect(line(e.stale)).toMatch(/\bf32\b.*stale$/);
    expect(line(e.corrupt)).toMatch(/corrupt: sha256 mismatch$/);
    expect(text.out).toMatch(/3 cached chips, .* 2 stale or corrupt/);
  });

  it('cache clear --stale, then cache clear', async () => {
    const e = await populate();
    const s = await cli('cache', 'clear', '--stale', '--json');
    expect(s.code).toBe(0);
    expect(JSON.parse(s.out)).toMatchObject({ root, stale: true, removed: 2 });
    expect(JSON.parse((await cli('cache', 'ls', '--json')).out).entries.map((x: { entry: string }) => x.entry)).toEqual([e.ok]);
    const c = await cli('cache', 'clear');
    expect(c.code).toBe(0);
    expect(c.out).toMatch(/^removed 1 cached chip \(100\.\d+ KiB\) from /);
    expect(JSON.parse((await cli('cache', 'ls', '--json')).out).entries).toEqual([]);
    expect(fs.existsSync(path.join(root, 'not-an-entry', 'keep.txt'))).toBe(true);
  });

  it('an unreadable root is exit 2 with cache.unreadable', async () => {
    const file = path.join(tmp, `file-root-${n}`);
    fs.writeFileSync(file, 'x');
    process.env.CHIPC_CACHE_DIR = file;
    const r = await cli('cache', 'ls', '--json');
    expect(r.code).toBe(2);
    expect(JSON.parse(r.out).error.code).toBe('cache.unreadable');
    expect(r.err).toContain('chipc: error [cache.unreadable]:');
  });
});
