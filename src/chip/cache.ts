/**
 * The cache of compiled chips (docs/cli.md "chipc cache"): a compiled chip, as a `.chip` file, kept
 * per key — the circuit, the target, the options that shape it, the dtype — and per compiler, so
 * that a command which needs the same chip again (`chipc run PROG.elf`: one generic CPU chip per
 * target, code size, data size and dtype) loads it instead of compiling it.
 *
 * Where: `$CHIPC_CACHE_DIR`, else `$XDG_CACHE_HOME/chipc`, else the platform's cache folder
 * (Linux `~/.cache/chipc`, macOS `~/Library/Caches/chipc`, Windows `%LOCALAPPDATA%\chipc\Cache`).
 *
 * Layout: one folder per entry, `<root>/<entry>/chip.chip` + `<root>/<entry>/entry.json` (the key,
 * the compiler hash, the chip's byte size and sha256, when it was made, chipc's version). The
 * entry's name is a readable prefix (circuit and target) and 16 hex digits of
 * sha256(canonical key + compiler hash): a change to the compiler's sources is a new name, so an
 * old entry is never loaded by a newer compiler (it is "stale" and `chipc cache clear --stale`
 * removes it).
 *
 * Writing is atomic: the builder writes into a temporary folder `<root>/.tmp-…` (same file
 * system), the chip is hashed there and entry.json written beside it, then the folder is renamed
 * into place. Two processes building the same entry both succeed: the first rename wins, the
 * second finds a valid entry there and discards its own (or replaces one that is not valid). A
 * builder that throws leaves nothing behind: its temporary folder is removed and the error
 * propagates.
 *
 * Reading verifies: entry.json parses and has every field, its key and compiler hash are this
 * key's and this compiler's, chip.chip has the recorded size and sha256. Anything else is
 * reported through `log` in one line ("chipc: cached chip … is corrupt (sha256 mismatch);
 * rebuilding") and the entry is rebuilt.
 *
 * `noCache`: the chip is built into a fresh folder under the OS temp dir, nothing is written under
 * the cache root; the result's `dispose()` removes it, and so does process exit if the caller
 * never disposes (a normal exit: not SIGKILL).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ChipcError } from '../util/errors.ts';
import { PACKAGE_ROOT } from '../util/package-root.ts';

/** The package root (the folder holding package.json, src/, circuits/, riscv/, targets/). */
export { PACKAGE_ROOT };

/** The chip file's and the entry record's names inside an entry folder. */
export const CHIP_FILE = 'chip.chip';
export const ENTRY_FILE = 'entry.json';
const ENTRY_FORMAT = 'chipc-chip-cache-entry';
const ENTRY_VERSION = 1;
/** Temporary folders: a build in progress (`.tmp-`), an entry being removed (`.trash-`). */
const TMP_PREFIX = '.tmp-';
const TRASH_PREFIX = '.trash-';
/** A leftover temporary folder older than this is abandoned (its process died): `clearCache` removes it. */
const ABANDONED_MS = 60 * 60 * 1000;
/** An entry folder's name: a slug of circuit and target, '-', 16 hex digits. */
const ENTRY_NAME = /^[a-z0-9][a-z0-9._-]*-[0-9a-f]{16}$/;

/** What determines a compiled chip, besides the compiler. */
export interface ChipCacheKey {
  /** The circuit, e.g. "rv32im" (a name the caller chooses; part of the entry's name). */
  circuit: string;
  /** The target's name (a built-in name or a config.json path as the caller resolves it). */
  target: string;
  /** The options that shape the chip (code words, data words, …): numbers (finite) or strings. */
  options: Record<string, number | string>;
  /** The weights' dtype, e.g. "bf16". */
  dtype: string;
}

/** entry.json. */
export interface ChipCacheRecord {
  format: typeof ENTRY_FORMAT;
  version: typeof ENTRY_VERSION;
  key: ChipCacheKey;
  compilerHash: string;
  chip: { file: string; bytes: number; sha256: string };
  /** ISO 8601. */
  created: string;
  chipcVersion: string;
}

export interface GetOrBuildOptions {
  /** Build into a temporary folder outside the cache and return it (the caller uses it once). */
  noCache?: boolean;
  /** One line per notable event (a stale or corrupt entry rebuilt). */
  log?: (line: string) => void;
  /** The cache root (default: cacheRoot()). */
  root?: string;
}

export interface ChipCacheResult {
  /** The chip file: `<root>/<entry>/chip.chip`, or under the OS temp dir with noCache. */
  path: string;
  /** Whether it was found in the cache (the builder was not called). */
  hit: boolean;
  /** Seconds spent: verifying the entry on a hit; building, hashing and installing on a miss. */
  seconds: number;
  /** The entry's name (also with noCache: the name it would have). */
  entry: string;
  /** Removes the chip when it was built with noCache (idempotent); a no-op for a cached chip. */
  dispose(): void;
}

export interface ChipCacheListing {
  /** The entry folder's name. */
  entry: string;
  /** The entry folder. */
  dir: string;
  /** Its chip file. */
  path: string;
  /** null when entry.json is unreadable. */
  key: ChipCacheKey | null;
  /** Bytes on disk of the entry's files. */
  bytes: number;
  /** ISO 8601: entry.json's, else the folder's modification time. */
  created: string;
  compilerHash: string | null;
  chipcVersion: string | null;
  /** Built by another compiler (its compilerHash is not this one's): never loaded again. */
  stale: boolean;
  /** Why the entry is not valid, when it is not (missing file, size or sha256 mismatch, bad entry.json). */
  corrupt?: string;
}

export interface ListOptions {
  root?: string;
  /** Check each chip's sha256 (default true); false checks sizes only. */
  hash?: boolean;
}

export interface ClearOptions {
  root?: string;
  /** Remove only stale and corrupt entries (and abandoned temporary folders). */
  staleOnly?: boolean;
}

// ---------------------------------------------------------------------------------------------
// Where

/**
 * The cache root: `$CHIPC_CACHE_DIR` if set (resolved against the working directory); else
 * `$XDG_CACHE_HOME/chipc` (an absolute XDG_CACHE_HOME); else Linux and other Unixes
 * `~/.cache/chipc`, macOS `~/Library/Caches/chipc`, Windows `%LOCALAPPDATA%\chipc\Cache`.
 */
export function cacheRoot(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string {
  const p = platform === 'win32' ? path.win32 : path.posix;
  if (env.CHIPC_CACHE_DIR) return p.resolve(env.CHIPC_CACHE_DIR);
  if (env.XDG_CACHE_HOME && p.isAbsolute(env.XDG_CACHE_HOME)) return p.join(env.XDG_CACHE_HOME, 'chipc');
  if (platform === 'win32') {
    const local = env.LOCALAPPDATA || p.join(env.USERPROFILE || os.homedir(), 'AppData', 'Local');
    return p.join(local, 'chipc', 'Cache');
  }
  const home = env.HOME || os.homedir();
  if (platform === 'darwin') return p.join(home, 'Library', 'Caches', 'chipc');
  return p.join(home, '.cache', 'chipc');
}

// ---------------------------------------------------------------------------------------------
// The compiler's identity

/** Files that determine a compiled chip, relative to the package root with '/' separators, sorted. */
export function compilerSourceFiles(root = PACKAGE_ROOT): string[] {
  const out: string[] = [];
  const walk = (rel: string): void => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(path.join(root, rel), { withFileTypes: true });
    } catch {
      return; // a folder the package does not have
    }
    for (const e of entries) {
      const r = `${rel}/${e.name}`;
      if (e.isDirectory()) walk(r);
      else if (e.isFile() && e.name.endsWith('.ts')) out.push(r);
    }
  };
  for (const d of ['src', 'circuits', 'riscv']) walk(d);
  try {
    for (const e of fs.readdirSync(path.join(root, 'targets'), { withFileTypes: true })) {
      if (e.isFile() && e.name.endsWith('.json')) out.push(`targets/${e.name}`);
    }
  } catch { /* no targets folder */ }
  return out.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** chipc's version (package.json). */
export function chipcVersion(root = PACKAGE_ROOT): string {
  return packageVersion(root);
}

function packageVersion(root: string): string {
  try {
    const v = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version?: unknown }).version;
    return typeof v === 'string' ? v : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** The hash of the compiler at `root` (not memoised): sha256 hex over package.json's version and every source file. */
export function computeCompilerHash(root = PACKAGE_ROOT): string {
  const h = crypto.createHash('sha256');
  h.update(`chipc-compiler-hash 1\0version\0${packageVersion(root)}\0`);
  for (const rel of compilerSourceFiles(root)) {
    const bytes = fs.readFileSync(path.join(root, rel));
    h.update(`${rel}\0${bytes.length}\0`);
    h.update(bytes);
  }
  return h.digest('hex');
}

let memo: string | undefined;

/**
 * The SHA-256 (64 hex digits) of the compiler's own sources that determine a compiled chip: every
 * `.ts` file under src/, circuits/ and riscv/, targets/*.json and package.json's version, each as
 * its relative path and bytes, in path order. Computed once per process.
 */
export function compilerHash(): string {
  memo ??= computeCompilerHash();
  return memo;
}

// ---------------------------------------------------------------------------------------------
// Keys and names

function checkKey(key: ChipCacheKey): void {
  const bad = (what: string): never => {
    throw new ChipcError('cache.key', `chip cache key: ${what}`);
  };
  if (key === null || typeof key !== 'object') bad('not an object');
  for (const f of ['circuit', 'target', 'dtype'] as const) {
    if (typeof key[f] !== 'string' || key[f] === '') bad(`${f} must be a non-empty string`);
  }
  if (key.options === null || typeof key.options !== 'object' || Array.isArray(key.options)) bad('options must be an object');
  for (const [k, v] of Object.entries(key.options)) {
    if (typeof v === 'string') continue;
    if (typeof v !== 'number' || !Number.isFinite(v)) bad(`option ${k} must be a string or a finite number, not ${String(v)}`);
  }
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const keys = Object.keys(v).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/** The key as canonical JSON: object keys sorted at every level, no blanks. Refuses a malformed key (`cache.key`). */
export function canonicalKey(key: ChipCacheKey): string {
  checkKey(key);
  return canonical({ circuit: key.circuit, dtype: key.dtype, options: key.options, target: key.target });
}

function slug(s: string): string {
  return s.toLowerCase().replace(/\.(ts|json)$/, '').replace(/[^a-z0-9.]+/g, '-').replace(/^[-.]+|[-.]+$/g, '').slice(0, 32).replace(/[-.]+$/, '');
}

/** The entry's folder name: `<circuit>-<target>-<16 hex of sha256(canonical key + compiler hash)>`. */
export function entryName(key: ChipCacheKey, hash = compilerHash()): string {
  const digest = crypto.createHash('sha256').update(`${canonicalKey(key)}\n${hash}`).digest('hex').slice(0, 16);
  const prefix = [slug(path.basename(key.circuit)), slug(path.basename(key.target))].filter((s) => s !== '').join('-');
  return `${prefix === '' ? 'chip' : prefix}-${digest}`;
}

// ---------------------------------------------------------------------------------------------
// Verifying

/** SHA-256 (hex) of a file, read in 4 MiB chunks. */
export function sha256File(file: string): string {
  const h = crypto.createHash('sha256');
  const fd = fs.openSync(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(1 << 22);
    for (;;) {
      const n = fs.readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      h.update(buf.subarray(0, n));
    }
  } finally {
    fs.closeSync(fd);
  }
  return h.digest('hex');
}

/** entry.json's fields, or the reason it is not a record. */
function parseRecord(text: string): ChipCacheRecord | string {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return `${ENTRY_FILE} is not valid JSON`;
  }
  const r = doc as Partial<ChipCacheRecord> | null;
  if (r === null || typeof r !== 'object' || Array.isArray(r)) return `${ENTRY_FILE} is not an object`;
  if (r.format !== ENTRY_FORMAT || r.version !== ENTRY_VERSION) return `${ENTRY_FILE} is not a version ${ENTRY_VERSION} ${ENTRY_FORMAT}`;
  if (typeof r.compilerHash !== 'string') return `${ENTRY_FILE} has no compilerHash`;
  try {
    checkKey(r.key as ChipCacheKey);
  } catch {
    return `${ENTRY_FILE} has a malformed key`;
  }
  const c = r.chip;
  if (c === null || typeof c !== 'object' || c.file !== CHIP_FILE || !Number.isSafeInteger(c.bytes) || c.bytes < 0
    || typeof c.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(c.sha256)) return `${ENTRY_FILE} has a malformed chip record`;
  if (typeof r.created !== 'string' || typeof r.chipcVersion !== 'string') return `${ENTRY_FILE} has a malformed created time or version`;
  return r as ChipCacheRecord;
}

type Verdict =
  | { ok: true; record: ChipCacheRecord }
  | { ok: false; kind: 'missing' }
  | { ok: false; kind: 'stale'; record: ChipCacheRecord; reason: string }
  | { ok: false; kind: 'corrupt'; record: ChipCacheRecord | null; reason: string };

/**
 * The entry folder `dir` checked: entry.json parses, matches `expect` (canonical key and compiler
 * hash; either may be omitted), chip.chip has the recorded size and (with `hash`) sha256.
 */
function verifyEntry(dir: string, expect: { key?: string; compilerHash?: string }, hash = true): Verdict {
  let text: string;
  try {
    text = fs.readFileSync(path.join(dir, ENTRY_FILE), 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
      return fs.existsSync(dir) ? { ok: false, kind: 'corrupt', record: null, reason: `${ENTRY_FILE} missing` } : { ok: false, kind: 'missing' };
    }
    return { ok: false, kind: 'corrupt', record: null, reason: `${ENTRY_FILE} unreadable: ${(e as Error).message}` };
  }
  const rec = parseRecord(text);
  if (typeof rec === 'string') return { ok: false, kind: 'corrupt', record: null, reason: rec };
  if (expect.key !== undefined && canonicalKey(rec.key) !== expect.key) return { ok: false, kind: 'corrupt', record: rec, reason: 'key mismatch' };
  if (expect.compilerHash !== undefined && rec.compilerHash !== expect.compilerHash) {
    return { ok: false, kind: 'stale', record: rec, reason: `built by compiler ${rec.compilerHash.slice(0, 16)}, this is ${expect.compilerHash.slice(0, 16)}` };
  }
  const chip = path.join(dir, CHIP_FILE);
  let size: number;
  try {
    const st = fs.statSync(chip);
    if (!st.isFile()) return { ok: false, kind: 'corrupt', record: rec, reason: `${CHIP_FILE} is not a file` };
    size = st.size;
  } catch {
    return { ok: false, kind: 'corrupt', record: rec, reason: `${CHIP_FILE} missing` };
  }
  if (size !== rec.chip.bytes) return { ok: false, kind: 'corrupt', record: rec, reason: `size mismatch: ${size} bytes, ${ENTRY_FILE} says ${rec.chip.bytes}` };
  if (hash) {
    let got: string;
    try {
      got = sha256File(chip);
    } catch (e) {
      return { ok: false, kind: 'corrupt', record: rec, reason: `${CHIP_FILE} unreadable: ${(e as Error).message}` };
    }
    if (got !== rec.chip.sha256) return { ok: false, kind: 'corrupt', record: rec, reason: 'sha256 mismatch' };
  }
  return { ok: true, record: rec };
}

// ---------------------------------------------------------------------------------------------
// Building

function unwritable(root: string, what: string, e: unknown): ChipcError {
  return new ChipcError('cache.unwritable',
    `cannot ${what} in the chip cache ${root}: ${(e as Error).message} (set CHIPC_CACHE_DIR to a writable folder, or run without the cache: --no-cache)`,
    { cause: e });
}

function rmQuiet(p: string): void {
  try {
    fs.rmSync(p, { recursive: true, force: true });
  } catch { /* best effort */ }
}

function fsyncFile(file: string): void {
  const fd = fs.openSync(file, 'r+');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

function fsyncDir(dir: string): void {
  try {
    const fd = fs.openSync(dir, 'r');
    try { fs.fsyncSync(fd); } finally { fs.closeSync(fd); }
  } catch { /* some platforms cannot open a folder */ }
}

function tmpName(prefix: string, entry: string): string {
  return `${prefix}${entry}-${process.pid}-${crypto.randomBytes(4).toString('hex')}`;
}

/** Temporary folders of noCache builds not yet disposed: removed at process exit. */
const uncached = new Set<string>();
let exitHook = false;

function removeUncachedAtExit(dir: string): void {
  uncached.add(dir);
  if (!exitHook) {
    exitHook = true;
    process.once('exit', () => {
      for (const d of uncached) rmQuiet(d);
    });
  }
}

/** Runs the builder on `<dir>/chip.chip` and checks it wrote a file there; removes `dir` when it did not. */
async function runBuilder(dir: string, build: (tmpPath: string) => void | Promise<void>): Promise<string> {
  const chip = path.join(dir, CHIP_FILE);
  try {
    await build(chip);
    let st: fs.Stats;
    try {
      st = fs.statSync(chip);
    } catch {
      throw new ChipcError('cache.no-output', `the chip builder wrote no chip at ${chip}`);
    }
    if (!st.isFile()) throw new ChipcError('cache.no-output', `the chip builder wrote ${chip}, which is not a file`);
  } catch (e) {
    rmQuiet(dir);
    throw e;
  }
  return chip;
}

const isExistsError = (e: unknown): boolean =>
  ['EEXIST', 'ENOTEMPTY', 'EPERM', 'EACCES', 'EBUSY'].includes((e as NodeJS.ErrnoException).code ?? '');

/**
 * Moves the built folder `tmp` into place at `final`. When `final` exists (another process
 * installed it since, or it is the stale / corrupt entry being rebuilt): a valid entry is kept and
 * `tmp` discarded; anything else is moved aside and removed, and the rename tried again.
 */
function install(root: string, tmp: string, final: string, expect: { key: string; compilerHash: string }): void {
  for (let attempt = 0; ; attempt++) {
    try {
      fs.renameSync(tmp, final);
      fsyncDir(root);
      return;
    } catch (e) {
      if (!isExistsError(e) || attempt >= 8) {
        rmQuiet(tmp);
        throw unwritable(root, `install entry ${path.basename(final)}`, e);
      }
    }
    if (verifyEntry(final, expect).ok) {
      rmQuiet(tmp); // the other builder's entry is as good as ours
      return;
    }
    const trash = path.join(root, tmpName(TRASH_PREFIX, path.basename(final)));
    try {
      fs.renameSync(final, trash);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
        rmQuiet(tmp);
        throw unwritable(root, `replace entry ${path.basename(final)}`, e);
      }
      // gone meanwhile: try the rename again
    }
    rmQuiet(trash);
  }
}

/**
 * The chip for `key`: the cached one when a valid entry exists (`hit`), else built by `build` —
 * which must write a file at the path it is given (ending in `.chip`) — and stored. A stale or
 * corrupt entry is reported through `opts.log` and rebuilt. With `opts.noCache` the chip is built
 * into a temporary folder outside the cache (removed by `dispose()` or at process exit) and the
 * cache is neither read nor written. A builder error propagates and leaves no file behind.
 * Errors: `cache.unwritable` (the root cannot be created or written), `cache.key` (a malformed
 * key), `cache.no-output` (the builder returned without writing the file).
 */
export async function getOrBuildChip(
  key: ChipCacheKey,
  build: (tmpPath: string) => void | Promise<void>,
  opts: GetOrBuildOptions = {},
): Promise<ChipCacheResult> {
  const t0 = performance.now();
  const seconds = () => (performance.now() - t0) / 1000;
  const hash = compilerHash();
  const canon = canonicalKey(key);
  const entry = entryName(key, hash);
  const log = opts.log ?? (() => {});

  if (opts.noCache) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-chip-'));
    removeUncachedAtExit(dir);
    let chip: string;
    try {
      chip = await runBuilder(dir, build);
    } finally {
      if (!fs.existsSync(dir)) uncached.delete(dir);
    }
    const dispose = () => {
      rmQuiet(dir);
      uncached.delete(dir);
    };
    return { path: chip, hit: false, seconds: seconds(), entry, dispose };
  }

  const root = opts.root ?? cacheRoot();
  const final = path.join(root, entry);
  const expect = { key: canon, compilerHash: hash };
  const verdict = verifyEntry(final, expect);
  if (verdict.ok) return { path: path.join(final, CHIP_FILE), hit: true, seconds: seconds(), entry, dispose: () => {} };
  if (verdict.kind !== 'missing') log(`chipc: cached chip ${entry} is ${verdict.kind} (${verdict.reason}); rebuilding`);

  try {
    fs.mkdirSync(root, { recursive: true });
  } catch (e) {
    throw unwritable(root, 'create the folder', e);
  }
  const tmp = path.join(root, tmpName(TMP_PREFIX, entry));
  try {
    fs.mkdirSync(tmp);
  } catch (e) {
    throw unwritable(root, 'create a folder', e);
  }
  const chip = await runBuilder(tmp, build);
  try {
    fsyncFile(chip);
    const record: ChipCacheRecord = {
      format: ENTRY_FORMAT,
      version: ENTRY_VERSION,
      key: JSON.parse(canon) as ChipCacheKey,
      compilerHash: hash,
      chip: { file: CHIP_FILE, bytes: fs.statSync(chip).size, sha256: sha256File(chip) },
      created: new Date().toISOString(),
      chipcVersion: chipcVersion(),
    };
    const recTmp = path.join(tmp, `.${ENTRY_FILE}.tmp`);
    fs.writeFileSync(recTmp, JSON.stringify(record, null, 2) + '\n');
    fsyncFile(recTmp);
    fs.renameSync(recTmp, path.join(tmp, ENTRY_FILE));
  } catch (e) {
    rmQuiet(tmp);
    throw unwritable(root, 'write an entry', e);
  }
  install(root, tmp, final, expect);
  return { path: path.join(final, CHIP_FILE), hit: false, seconds: seconds(), entry, dispose: () => {} };
}

// ---------------------------------------------------------------------------------------------
// Listing and clearing

function dirBytes(dir: string): number {
  let n = 0;
  try {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) n += dirBytes(p);
      else {
        try { n += fs.lstatSync(p).size; } catch { /* removed meanwhile */ }
      }
    }
  } catch { /* removed meanwhile */ }
  return n;
}

/** The folders under `root` that are cache entries by name, sorted. Other files and folders are not the cache's. */
function entryFolders(root: string): string[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(root, { withFileTypes: true });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new ChipcError('cache.unreadable', `cannot read the chip cache ${root}: ${(e as Error).message}`, { cause: e });
  }
  return entries.filter((e) => e.isDirectory() && ENTRY_NAME.test(e.name)).map((e) => e.name).sort();
}

/**
 * Every entry under the cache root, sorted by name, each checked: `stale` when another compiler
 * built it, `corrupt` naming what is wrong (with `hash: false`, sizes only). Folders and files that
 * are not named as entries are not listed (and never removed). A missing root lists nothing.
 */
export function listCacheEntries(opts: ListOptions = {}): ChipCacheListing[] {
  const root = opts.root ?? cacheRoot();
  const hash = compilerHash();
  return entryFolders(root).map((entry) => {
    const dir = path.join(root, entry);
    const v = verifyEntry(dir, {}, opts.hash ?? true);
    const rec = v.ok ? v.record : v.kind === 'missing' ? null : v.record;
    let created = rec?.created ?? '';
    if (created === '') {
      try { created = fs.statSync(dir).mtime.toISOString(); } catch { created = new Date(0).toISOString(); }
    }
    const item: ChipCacheListing = {
      entry,
      dir,
      path: path.join(dir, CHIP_FILE),
      key: rec?.key ?? null,
      bytes: dirBytes(dir),
      created,
      compilerHash: rec?.compilerHash ?? null,
      chipcVersion: rec?.chipcVersion ?? null,
      stale: rec !== null && rec.compilerHash !== hash,
    };
    if (!v.ok && v.kind !== 'missing') item.corrupt = v.reason;
    else if (!v.ok) item.corrupt = 'removed while listing';
    return item;
  });
}

/**
 * Removes cache entries: all of them, or with `staleOnly` those that are stale or corrupt; and
 * temporary folders of builds abandoned more than an hour ago. Returns how many entries were
 * removed and the bytes freed. Only folders named as entries are touched; the root stays.
 */
export function clearCache(opts: ClearOptions = {}): { removed: number; bytes: number } {
  const root = opts.root ?? cacheRoot();
  let removed = 0;
  let bytes = 0;
  const targets = opts.staleOnly
    ? listCacheEntries({ root }).filter((e) => e.stale || e.corrupt !== undefined).map((e) => e.entry)
    : entryFolders(root);
  for (const entry of targets) {
    const dir = path.join(root, entry);
    const trash = path.join(root, tmpName(TRASH_PREFIX, entry));
    try {
      fs.renameSync(dir, trash); // atomic: a reader sees the whole entry or none
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw unwritable(root, `remove entry ${entry}`, e);
    }
    const n = dirBytes(trash);
    try {
      fs.rmSync(trash, { recursive: true, force: true });
    } catch (e) {
      throw unwritable(root, `remove entry ${entry}`, e);
    }
    removed++;
    bytes += n;
  }
  // leftovers of builds and removals whose process died
  let names: fs.Dirent[] = [];
  try { names = fs.readdirSync(root, { withFileTypes: true }); } catch { /* no root */ }
  const now = Date.now();
  for (const e of names) {
    if (!e.isDirectory() || !(e.name.startsWith(TMP_PREFIX) || e.name.startsWith(TRASH_PREFIX))) continue;
    const p = path.join(root, e.name);
    try {
      if (now - fs.statSync(p).mtimeMs > ABANDONED_MS) {
        bytes += dirBytes(p);
        fs.rmSync(p, { recursive: true, force: true });
      }
    } catch { /* removed meanwhile */ }
  }
  return { removed, bytes };
}
