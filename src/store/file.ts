/**
 * Store files (`.chip-store`, format version 1): the occupied rows of a StoreModel, compactly
 * encoded (LEB128 varints, row indices as gaps), with a SHA-256 checksum; atomic save; and
 * sessions, persistent (a path) or ephemeral (no path, never touching disk).
 *
 * Layout (docs/store.md "Store file format"):
 *   8 bytes  magic "CHIPSTOR"
 *   4 bytes  format version (u32 LE) = 1
 *   4 bytes  total file length in bytes (u32 LE), checksum included
 *   body     varints: maxFiles, nameMax, contentMax, chunkSize, chunkPool, vocab; then per table
 *            in the order counters, dir, chunk, link, free: occupied row count n, then n ×
 *            (gap, fields…) with gap = row − previous row − 1 (previous = −1 at the start)
 *   32 bytes SHA-256 of every byte before it
 * A varint is unsigned LEB128, minimal (no redundant 0x80 … 0x00 tail), value < 2^24 (≤ 4 bytes).
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ChipcError } from '../util/errors.ts';
import { FIELD_LIMIT, StoreModel, TABLE_NAMES, resolveStoreParams, type StoreOptions, type StoreParams } from './model.ts';
import { makeParentDir, removeStaleTemps, tempSibling } from '../util/temp-files.ts';

/** The store file's first 8 bytes (not the firmware store area's header word: firmware.ts STORE_AREA_MAGIC). */
const STORE_FILE_MAGIC = 'CHIPSTOR';
const STORE_FORMAT_VERSION = 1;
const HEADER_BYTES = 16;
const CHECKSUM_BYTES = 32;

/** The parameter fields in file order (dirSlots is derived, not stored). */
const PARAM_FIELDS = ['maxFiles', 'nameMax', 'contentMax', 'chunkSize', 'chunkPool', 'vocab'] as const;

class ByteWriter {
  private buf = new Uint8Array(1024);
  length = 0;
  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.length + n));
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
  }
  bytes(b: Uint8Array): void { this.room(b.length); this.buf.set(b, this.length); this.length += b.length; }
  u32(v: number): void { this.room(4); new DataView(this.buf.buffer).setUint32(this.length, v, true); this.length += 4; }
  /** Unsigned LEB128: 7 bits per byte, low group first, high bit = more bytes follow. */
  varint(v: number): void {
    this.room(5);
    while (v >= 0x80) { this.buf[this.length++] = (v & 0x7f) | 0x80; v = Math.floor(v / 128); }
    this.buf[this.length++] = v;
  }
  patchU32(at: number, v: number): void { new DataView(this.buf.buffer).setUint32(at, v, true); }
  result(): Uint8Array { return this.buf.slice(0, this.length); }
}

function sha256(b: Uint8Array): Uint8Array {
  return new Uint8Array(createHash('sha256').update(b).digest());
}

/** Encodes the occupied rows of `model` as a store file (deterministic: same rows → same bytes). */
export function encodeStore(model: StoreModel): Uint8Array {
  const w = new ByteWriter();
  w.bytes(new TextEncoder().encode(STORE_FILE_MAGIC));
  w.u32(STORE_FORMAT_VERSION);
  w.u32(0); // total length, patched below
  for (const f of PARAM_FIELDS) w.varint(model.params[f]);
  for (const t of TABLE_NAMES) {
    w.varint(model.occupiedRows(t));
    let prev = -1;
    for (const [i, fields] of model.rows(t)) {
      w.varint(i - prev - 1);
      prev = i;
      for (const v of fields) w.varint(v);
    }
  }
  w.patchU32(12, w.length + CHECKSUM_BYTES);
  const body = w.result();
  const out = new Uint8Array(body.length + CHECKSUM_BYTES);
  out.set(body);
  out.set(sha256(body), body.length);
  return out;
}

/**
 * Decodes a store file into a fresh StoreModel. Refuses (ChipcError, naming `source`):
 * `store.truncated` (shorter than its header says, or than a header), `store.format` (bad magic,
 * longer than its header says, malformed varint, rows out of order or range, bytes left over),
 * `store.version` (unknown version), `store.checksum` (SHA-256 mismatch: a corrupted byte),
 * `store.params` (invalid parameters), `store.corrupt` (rows that break the store's invariants),
 * `store.mismatch` (parameters differ from `expect`, when given).
 */
export function decodeStore(bytes: Uint8Array, opts: { expect?: StoreOptions; source?: string } = {}): StoreModel {
  const src = opts.source ?? 'store file';
  const fail = (code: string, msg: string): never => { throw new ChipcError(code, `${src}: ${msg}`); };
  if (bytes.length < HEADER_BYTES + CHECKSUM_BYTES) {
    if (bytes.length < 8 || new TextDecoder().decode(bytes.subarray(0, 8)) === STORE_FILE_MAGIC) {
      fail('store.truncated', `truncated: ${bytes.length} bytes, shorter than the ${HEADER_BYTES + CHECKSUM_BYTES}-byte header and checksum`);
    }
  }
  if (new TextDecoder().decode(bytes.subarray(0, 8)) !== STORE_FILE_MAGIC) fail('store.format', `not a chipc store file (magic is not "${STORE_FILE_MAGIC}")`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = dv.getUint32(8, true);
  if (version !== STORE_FORMAT_VERSION) fail('store.version', `format version ${version} is not supported (this chipc reads version ${STORE_FORMAT_VERSION})`);
  const total = dv.getUint32(12, true);
  if (bytes.length < total) fail('store.truncated', `truncated: ${bytes.length} bytes, the header says ${total}`);
  if (bytes.length > total) fail('store.format', `${bytes.length - total} unexpected bytes after the end of the store (${total} bytes)`);
  if (total < HEADER_BYTES + CHECKSUM_BYTES) fail('store.format', `header length ${total} is shorter than a header and checksum`);
  const bodyEnd = total - CHECKSUM_BYTES;
  const want = sha256(bytes.subarray(0, bodyEnd));
  const got = bytes.subarray(bodyEnd, total);
  if (!want.every((b, i) => b === got[i])) fail('store.checksum', 'checksum mismatch: the file is corrupted');

  let pos = HEADER_BYTES;
  const varint = (what: string): number => {
    let v = 0, scale = 1;
    for (let k = 0; ; k++) {
      if (pos >= bodyEnd) fail('store.format', `${what}: varint runs past the end of the body at byte ${pos}`);
      const b = bytes[pos++];
      v += (b & 0x7f) * scale;
      if ((b & 0x80) === 0) {
        if (k > 0 && b === 0) fail('store.format', `${what}: non-minimal varint ending at byte ${pos - 1}`);
        break;
      }
      scale *= 128;
      if (k >= 3) fail('store.format', `${what}: varint longer than 4 bytes at byte ${pos - 1}`);
    }
    if (v >= FIELD_LIMIT) fail('store.format', `${what}: value ${v} ≥ 2^24`);
    return v;
  };
  const raw: Record<string, number> = {};
  for (const f of PARAM_FIELDS) raw[f] = varint(`parameter ${f}`);
  let params: StoreParams;
  try {
    params = resolveStoreParams(raw);
  } catch (e) {
    return fail('store.params', `invalid parameters: ${(e as Error).message}`);
  }
  const model = new StoreModel(params);
  for (const t of TABLE_NAMES) {
    const spec = model.tables.find((s) => s.name === t)!;
    const n = varint(`table ${t} row count`);
    if (n > spec.rows) fail('store.format', `table ${t}: ${n} occupied rows, the table has ${spec.rows}`);
    let prev = -1;
    for (let r = 0; r < n; r++) {
      const i = prev + 1 + varint(`table ${t} row gap`);
      if (i >= spec.rows) fail('store.format', `table ${t}: row ${i} is outside 0 … ${spec.rows - 1}`);
      prev = i;
      const fields: number[] = [];
      for (let f = 0; f < spec.fieldMax.length; f++) fields.push(varint(`table ${t} row ${i} field ${f}`));
      try {
        model.setRow(t, i, fields);
      } catch (e) {
        fail('store.format', (e as Error).message);
      }
    }
    if (t === 'counters' && n !== 1) fail('store.format', `table counters has ${n} occupied rows, expected 1`);
  }
  if (pos !== bodyEnd) fail('store.format', `${bodyEnd - pos} bytes left over after the last table`);
  try {
    model.checkInvariants();
  } catch (e) {
    fail('store.corrupt', (e as Error).message);
  }
  if (opts.expect) {
    const exp = resolveStoreParams(opts.expect);
    const diff = (Object.keys(exp) as (keyof StoreParams)[]).filter((k) => exp[k] !== params[k]);
    if (diff.length > 0) {
      fail('store.mismatch', `store parameters differ from this session's: ${diff.map((k) => `${k} ${params[k]} (session ${exp[k]})`).join(', ')}`);
    }
  }
  return model;
}

/**
 * Loads a store file into `model`, which must be empty (freshly made) and have the file's
 * parameters. Afterwards every table of `model` holds exactly the file's rows.
 */
export function importStore(model: StoreModel, bytes: Uint8Array, source?: string): void {
  if (!model.isEmpty()) throw new ChipcError('store.not-empty', 'a store file can only be imported into an empty store');
  const loaded = decodeStore(bytes, { expect: model.params, source });
  for (const t of TABLE_NAMES) for (const [i, fields] of loaded.rows(t)) model.setRow(t, i, fields);
}

/** The file operations a save or load uses (node:fs by default; tests inject failures). */
export interface StoreIo {
  openSync(file: string, flags: string): number;
  writeSync(fd: number, buf: Uint8Array, offset: number, length: number): number;
  fsyncSync(fd: number): void;
  closeSync(fd: number): void;
  renameSync(from: string, to: string): void;
  rmSync(file: string, opts: { force: boolean }): void;
  readFileSync(file: string): Uint8Array;
  existsSync(file: string): boolean;
}

export const nodeStoreIo: StoreIo = {
  openSync: (f, flags) => fs.openSync(f, flags),
  writeSync: (fd, b, o, l) => fs.writeSync(fd, b, o, l),
  fsyncSync: (fd) => fs.fsyncSync(fd),
  closeSync: (fd) => fs.closeSync(fd),
  renameSync: (a, b) => fs.renameSync(a, b),
  rmSync: (f, o) => fs.rmSync(f, o),
  readFileSync: (f) => fs.readFileSync(f),
  existsSync: (f) => fs.existsSync(f),
};

/**
 * Writes `bytes` to `file` atomically: a temporary file in the same directory (created
 * exclusively), written in full, fsynced, closed, renamed over `file`, then the directory fsynced.
 * A failure at any step removes the temporary file and leaves `file` as it was (ChipcError
 * `store.write`); a crash leaves either the old file or the new one (rename is atomic).
 */
export function writeFileAtomic(file: string, bytes: Uint8Array, io: StoreIo = nodeStoreIo): void {
  const dir = path.dirname(file);
  removeStaleTemps(file); // what a killed earlier save of this file left
  const tmp = tempSibling(path.join(dir, path.basename(file)));
  let fd: number | undefined;
  try {
    makeParentDir(file);
    fd = io.openSync(tmp, 'wx');
    for (let off = 0; off < bytes.length;) off += io.writeSync(fd, bytes, off, bytes.length - off);
    io.fsyncSync(fd);
    io.closeSync(fd);
    fd = undefined;
    io.renameSync(tmp, file);
  } catch (e) {
    if (fd !== undefined) try { io.closeSync(fd); } catch { /* already failing */ }
    try { io.rmSync(tmp, { force: true }); } catch { /* best effort */ }
    throw new ChipcError('store.write', `cannot save store file ${file}: ${(e as Error).message}`, { cause: e });
  }
  // Make the rename itself durable. Some platforms cannot open a directory: the file is saved.
  try {
    const dfd = io.openSync(dir, 'r');
    try { io.fsyncSync(dfd); } finally { io.closeSync(dfd); }
  } catch { /* directory fsync unsupported */ }
}

/** Saves `model` to `file` atomically (see writeFileAtomic). */
export function saveStoreFile(file: string, model: StoreModel, io: StoreIo = nodeStoreIo): void {
  writeFileAtomic(file, encodeStore(model), io);
}

/** Reads and decodes a store file (ChipcError `store.read` when it cannot be read). */
export function loadStoreFile(file: string, expect?: StoreOptions, io: StoreIo = nodeStoreIo): StoreModel {
  let bytes: Uint8Array;
  try {
    bytes = io.readFileSync(file);
  } catch (e) {
    throw new ChipcError('store.read', `cannot read store file ${file}: ${(e as Error).message}`, { cause: e });
  }
  return decodeStore(bytes, { expect, source: `store file ${file}` });
}

/**
 * A store session: a model plus where it persists. `StoreHandle.open(path, opts)` loads the file
 * when it exists (its parameters must equal `opts`) or starts empty; `save()` writes it atomically.
 * `StoreHandle.ephemeral(opts)` has no path: `save()` does nothing and nothing touches disk.
 */
export class StoreHandle {
  private constructor(readonly model: StoreModel, readonly path: string | undefined, private readonly io: StoreIo) {}

  /** `io` is never used by an ephemeral session (tests pass one that fails on any call). */
  static ephemeral(opts: StoreOptions = {}, io: StoreIo = nodeStoreIo): StoreHandle {
    return new StoreHandle(new StoreModel(opts), undefined, io);
  }

  static open(file: string, opts: StoreOptions = {}, io: StoreIo = nodeStoreIo): StoreHandle {
    const model = io.existsSync(file) ? loadStoreFile(file, opts, io) : new StoreModel(opts);
    return new StoreHandle(model, file, io);
  }

  get ephemeral(): boolean { return this.path === undefined; }

  /** Writes the store to its path; returns false (writing nothing) in ephemeral mode. */
  save(): boolean {
    if (this.path === undefined) return false;
    saveStoreFile(this.path, this.model, this.io);
    return true;
  }

  /** The store file's bytes, in memory (works in both modes). */
  exportBytes(): Uint8Array { return encodeStore(this.model); }
}
