/**
 * Lazy, validating reader of one .safetensors file (format: docs/host-architecture.md §6, docs/safetensors.md).
 * Opening reads only the 8-byte length and the header; tensor bytes are read on demand with
 * positional reads, so a many-GB file costs a few KB to open. Every rule the reference (Rust)
 * implementation enforces is checked, plus a few stricter ones (duplicate keys, padding other than
 * spaces, integers above 2^48 − 1), each with its own ChipcError code.
 */
import * as fs from 'node:fs';
import { ChipcError } from '../util/errors.ts';
import type { DType, TensorInfo, TensorStore } from './types.ts';
import { byteSizeOf, decodeToF32, dtypeBits, isDType } from './dtype.ts';

/** The reference reader's cap on the header size N (bytes). */
export const MAX_HEADER_SIZE = 100_000_000;
/** Largest integer the format's schema allows in shapes and offsets (2^48 − 1). */
export const MAX_FORMAT_INT = 2 ** 48 - 1;
/** Default chunk size of `chunks()` (16 MiB). */
export const DEFAULT_CHUNK_BYTES = 16 * 1024 * 1024;

/** Compare strings by Unicode code point (what Rust and Python sort by; JS `<` compares UTF-16 units). */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // Surrogates (0xD800..0xDFFF) encode code points above 0xFFFF: they sort after 0xE000..0xFFFF.
    const sx = x >= 0xd800 && x <= 0xdfff;
    const sy = y >= 0xd800 && y <= 0xdfff;
    if (sx !== sy) return sx ? 1 : -1;
    return x - y;
  }
  return a.length - b.length;
}

// ---------------------------------------------------------------------------------------------
// Strict JSON: standard JSON syntax, duplicate keys reported, numbers kept as their source text.

/** A JSON number with its exact source text (so integer syntax and range can be checked). */
export class JsonNumber {
  constructor(readonly raw: string) {}
  get value(): number { return Number(this.raw); }
}
export type JsonValue = string | boolean | null | JsonNumber | JsonValue[] | JsonObject;
/** Object with a null prototype; `keys` keeps source order. */
export interface JsonObject { readonly kind: 'object'; readonly keys: string[]; readonly map: Map<string, JsonValue> }

/** Maximum nesting depth accepted (valid headers use 3). Bounds recursion on hostile input. */
const MAX_JSON_DEPTH = 64;

class StrictJsonParser {
  pos = 0;
  constructor(readonly text: string, readonly fail: (code: string, msg: string) => never) {}

  private err(msg: string): never {
    return this.fail('safetensors.header-json', `invalid JSON at character ${this.pos}: ${msg}`);
  }
  private ws(): void {
    const t = this.text;
    while (this.pos < t.length) {
      const c = t.charCodeAt(this.pos);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) this.pos++;
      else break;
    }
  }
  value(depth: number, path: string): JsonValue {
    if (depth > MAX_JSON_DEPTH) this.err(`nested deeper than ${MAX_JSON_DEPTH}`);
    this.ws();
    const t = this.text;
    if (this.pos >= t.length) this.err('unexpected end');
    const c = t[this.pos];
    if (c === '{') return this.object(depth, path);
    if (c === '[') {
      this.pos++;
      const arr: JsonValue[] = [];
      this.ws();
      if (t[this.pos] === ']') { this.pos++; return arr; }
      for (;;) {
        arr.push(this.value(depth + 1, `${path}[${arr.length}]`));
        this.ws();
        const d = t[this.pos++];
        if (d === ']') return arr;
        if (d !== ',') { this.pos--; this.err("expected ',' or ']'"); }
      }
    }
    if (c === '"') return this.string();
    if (c === 't' && t.startsWith('true', this.pos)) { this.pos += 4; return true; }
    if (c === 'f' && t.startsWith('false', this.pos)) { this.pos += 5; return false; }
    if (c === 'n' && t.startsWith('null', this.pos)) { this.pos += 4; return null; }
    const m = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
    m.lastIndex = this.pos;
    const r = m.exec(t);
    if (r === null) this.err(`unexpected character ${JSON.stringify(c)}`);
    this.pos += r[0].length;
    return new JsonNumber(r[0]);
  }
  object(depth: number, path: string): JsonObject {
    const t = this.text;
    this.pos++; // '{'
    const obj: JsonObject = { kind: 'object', keys: [], map: new Map() };
    this.ws();
    if (t[this.pos] === '}') { this.pos++; return obj; }
    for (;;) {
      this.ws();
      if (t[this.pos] !== '"') this.err('expected a string key');
      const key = this.string();
      this.ws();
      if (t[this.pos] !== ':') this.err("expected ':'");
      this.pos++;
      if (obj.map.has(key)) this.fail('safetensors.duplicate-key', `duplicate key ${JSON.stringify(key)} in ${path}`);
      const v = this.value(depth + 1, path === 'the header' ? `entry ${JSON.stringify(key)}` : `${path}.${key}`);
      obj.keys.push(key);
      obj.map.set(key, v);
      this.ws();
      const d = t[this.pos++];
      if (d === '}') return obj;
      if (d !== ',') { this.pos--; this.err("expected ',' or '}'"); }
    }
  }
  string(): string {
    const t = this.text;
    this.pos++; // opening quote
    let out = '';
    let start = this.pos;
    for (;;) {
      if (this.pos >= t.length) this.err('unterminated string');
      const c = t.charCodeAt(this.pos);
      if (c === 0x22) { out += t.slice(start, this.pos); this.pos++; return out; }
      if (c < 0x20) this.err('control character in string');
      if (c === 0x5c) {
        out += t.slice(start, this.pos);
        const e = t[this.pos + 1];
        const simple: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
        if (e !== undefined && e in simple) { out += simple[e]; this.pos += 2; }
        else if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(t.slice(this.pos + 2, this.pos + 6))) {
          out += String.fromCharCode(parseInt(t.slice(this.pos + 2, this.pos + 6), 16));
          this.pos += 6;
        } else this.err('bad escape');
        start = this.pos;
        continue;
      }
      this.pos++;
    }
  }
}

/**
 * Parses `text` as one JSON value followed by nothing but `trailing` characters (default: JSON
 * whitespace). Duplicate object keys at any depth are an error (safetensors.duplicate-key). Errors go to
 * `fail(code, message)`, which must throw.
 */
export function parseStrictJson(
  text: string,
  fail: (code: string, msg: string) => never,
  trailing: 'json-whitespace' | 'spaces' = 'json-whitespace',
): JsonValue {
  const p = new StrictJsonParser(text, fail);
  const v = p.value(0, 'the header');
  const rest = text.slice(p.pos);
  if (trailing === 'spaces' ? /[^ ]/.test(rest) : /[^ \t\r\n]/.test(rest)) {
    const at = p.pos + rest.search(trailing === 'spaces' ? /[^ ]/ : /[^ \t\r\n]/);
    fail('safetensors.header-padding', `non-space character ${JSON.stringify(text[at])} at character ${at} after the header's JSON object (only spaces may pad it)`);
  }
  return v;
}

export function isJsonObject(v: JsonValue | undefined): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof JsonNumber);
}

// ---------------------------------------------------------------------------------------------
// Header validation

/** What the header says, validated. `tensors` sorted by data offsets (then name). */
export interface ParsedHeader {
  headerSize: number;
  metadata: Record<string, string>;
  tensors: TensorInfo[];
  /** Byte length of the data buffer (the last END). */
  dataSize: number;
}

/** Reads `length` bytes at absolute file position `position`. */
export type ReadAt = (position: number, length: number) => Uint8Array;

function fmtPath(label: string): string {
  return label;
}

/**
 * Validates and parses the header of a safetensors byte source of `fileSize` bytes, reading only
 * the first 8 + N bytes through `readAt`. `label` (usually the file path) starts every message.
 */
export function parseHeader(readAt: ReadAt, fileSize: number, label: string): ParsedHeader {
  const fail = (code: string, msg: string): never => {
    throw new ChipcError(code, `${fmtPath(label)}: ${msg}`);
  };
  if (fileSize < 8) fail('safetensors.file-too-small', `file is ${fileSize} bytes, shorter than the 8-byte header length`);
  const lenBytes = readAt(0, 8);
  const n64 = new DataView(lenBytes.buffer, lenBytes.byteOffset, 8).getBigUint64(0, true);
  if (n64 > BigInt(MAX_HEADER_SIZE)) fail('safetensors.header-too-large', `header size ${n64} exceeds the limit of ${MAX_HEADER_SIZE} bytes`);
  const n = Number(n64);
  if (8 + n > fileSize) fail('safetensors.header-past-eof', `header of ${n} bytes runs past the end of the ${fileSize}-byte file`);
  const headerBytes = readAt(8, n);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(headerBytes);
  } catch {
    return fail('safetensors.header-utf8', 'header is not valid UTF-8');
  }
  if (text[0] !== '{') fail('safetensors.header-start', `header must be a JSON object starting with '{' (first character: ${text.length ? JSON.stringify(text[0]) : 'none, the header is empty'})`);
  const root = parseStrictJson(text, fail, 'spaces');
  if (!isJsonObject(root)) return fail('safetensors.header-start', 'header is not a JSON object');

  let metadata: Record<string, string> = {};
  const entries: TensorInfo[] = [];
  for (const key of root.keys) {
    const v = root.map.get(key)!;
    if (key === '__metadata__') {
      metadata = parseMetadata(v, fail);
      continue;
    }
    entries.push(parseEntry(key, v, fail));
  }
  entries.sort((a, b) => a.dataOffsets[0] - b.dataOffsets[0] || a.dataOffsets[1] - b.dataOffsets[1] || compareCodePoints(a.name, b.name));
  let end = 0;
  for (const t of entries) {
    const [b, e] = t.dataOffsets;
    if (b !== end) {
      if (end === 0 && b > 0) fail('safetensors.offset-start', `tensor ${JSON.stringify(t.name)}: the first tensor (by data_offsets) begins at ${b}, not 0`);
      if (b > end) fail('safetensors.offset-gap', `tensor ${JSON.stringify(t.name)}: begins at ${b} but the previous tensor ends at ${end} (a gap)`);
      fail('safetensors.offset-overlap', `tensor ${JSON.stringify(t.name)}: begins at ${b} but the previous tensor ends at ${end} (an overlap)`);
    }
    end = e;
  }
  const expected = 8 + n + end;
  if (fileSize > expected) fail('safetensors.trailing-bytes', `file is ${fileSize} bytes but the header accounts for ${expected} (${fileSize - expected} trailing bytes)`);
  if (fileSize < expected) fail('safetensors.truncated', `file is ${fileSize} bytes but the header needs ${expected} (truncated by ${expected - fileSize} bytes)`);
  return { headerSize: n, metadata, tensors: entries, dataSize: end };
}

function parseMetadata(v: JsonValue, fail: (code: string, msg: string) => never): Record<string, string> {
  if (!isJsonObject(v)) return fail('safetensors.metadata', '__metadata__ must be an object mapping strings to strings');
  const out: Record<string, string> = Object.create(null);
  for (const k of v.keys) {
    const s = v.map.get(k);
    if (typeof s !== 'string') fail('safetensors.metadata', `__metadata__ value of ${JSON.stringify(k)} is not a string`);
    out[k] = s as string;
  }
  return out;
}

/** A non-negative integer token ≤ 2^48 − 1; `what` names it in messages. */
function formatInt(v: JsonValue | undefined, code: string, what: string, fail: (code: string, msg: string) => never): number {
  if (!(v instanceof JsonNumber) || !/^(0|[1-9][0-9]*)$/.test(v.raw)) {
    const shown = v instanceof JsonNumber ? v.raw : JSON.stringify(v);
    return fail(code, `${what} is ${shown}, not a non-negative integer`);
  }
  if (v.raw.length > 15 || v.value > MAX_FORMAT_INT) fail('safetensors.int-range', `${what} is ${v.raw}, above the format's limit 2^48 − 1`);
  return v.value;
}

function parseEntry(name: string, v: JsonValue, fail: (code: string, msg: string) => never): TensorInfo {
  const q = JSON.stringify(name);
  if (!isJsonObject(v)) return fail('safetensors.tensor-entry', `tensor ${q}: entry is not an object`);
  for (const k of v.keys) {
    if (k !== 'dtype' && k !== 'shape' && k !== 'data_offsets') fail('safetensors.tensor-entry', `tensor ${q}: unknown field ${JSON.stringify(k)} (allowed: dtype, shape, data_offsets)`);
  }
  for (const k of ['dtype', 'shape', 'data_offsets']) {
    if (!v.map.has(k)) fail('safetensors.tensor-entry', `tensor ${q}: missing field ${JSON.stringify(k)}`);
  }
  const dt = v.map.get('dtype');
  if (!isDType(dt)) return fail('safetensors.dtype', `tensor ${q}: unknown dtype ${dt instanceof JsonNumber ? dt.raw : JSON.stringify(dt)}`);
  const dtype: DType = dt;
  const sh = v.map.get('shape');
  if (!Array.isArray(sh)) return fail('safetensors.shape', `tensor ${q}: shape is not an array`);
  const shape = sh.map((d, i) => formatInt(d, 'safetensors.shape', `tensor ${q}: shape[${i}]`, fail));
  const off = v.map.get('data_offsets');
  if (!Array.isArray(off) || off.length !== 2) return fail('safetensors.data-offsets', `tensor ${q}: data_offsets must be [begin, end]`);
  const begin = formatInt(off[0], 'safetensors.data-offsets', `tensor ${q}: data_offsets begin`, fail);
  const end = formatInt(off[1], 'safetensors.data-offsets', `tensor ${q}: data_offsets end`, fail);
  if (end < begin) fail('safetensors.data-offsets', `tensor ${q}: data_offsets end ${end} is before begin ${begin}`);
  let numel = 1n;
  for (const d of shape) numel *= BigInt(d);
  const bytes = byteSizeOf(dtype, numel);
  if (bytes === null) fail('safetensors.misaligned', `tensor ${q}: ${numel} elements of ${dtypeBits(dtype)}-bit ${dtype} is not a whole number of bytes`);
  if (bytes !== BigInt(end - begin)) fail('safetensors.tensor-size', `tensor ${q}: shape [${shape.join(', ')}] of ${dtype} needs ${bytes} bytes but data_offsets [${begin}, ${end}] hold ${end - begin}`);
  return { name, dtype, shape, dataOffsets: [begin, end], numel: Number(numel), byteLength: end - begin };
}

// ---------------------------------------------------------------------------------------------
// The store

/** Positional read with the signature of fs.readSync(fd, buffer, offset, length, position). */
export type ReadFn = (fd: number, buffer: Uint8Array, offset: number, length: number, position: number) => number;

export interface OpenOptions {
  /** Replaces fs.readSync (tests count the bytes read through it). */
  read?: ReadFn;
}

/** A validated safetensors file; tensor bytes are read lazily. */
export class SafetensorsFile implements TensorStore {
  readonly names: readonly string[];
  readonly metadata: Readonly<Record<string, string>>;
  readonly headerSize: number;
  readonly dataSize: number;
  /** Absolute file position of the data buffer (8 + header size). */
  readonly dataStart: number;
  private readonly byName: Map<string, TensorInfo>;
  private closed = false;

  constructor(
    readonly path: string,
    private readonly readAt: ReadAt,
    header: ParsedHeader,
    private readonly onClose: () => void,
  ) {
    this.headerSize = header.headerSize;
    this.dataSize = header.dataSize;
    this.dataStart = 8 + header.headerSize;
    this.metadata = Object.freeze({ ...header.metadata });
    this.byName = new Map(header.tensors.map((t) => [t.name, t]));
    this.names = Object.freeze([...this.byName.keys()].sort(compareCodePoints));
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  info(name: string): TensorInfo {
    const t = this.byName.get(name);
    if (t === undefined) throw new ChipcError('safetensors.no-tensor', `${this.path}: no tensor named ${JSON.stringify(name)}`);
    return { ...t, shape: [...t.shape], dataOffsets: [t.dataOffsets[0], t.dataOffsets[1]] };
  }

  /** Tensors in file (data offset) order. */
  infos(): TensorInfo[] {
    return [...this.byName.values()].sort((a, b) => a.dataOffsets[0] - b.dataOffsets[0] || a.dataOffsets[1] - b.dataOffsets[1]).map((t) => this.info(t.name));
  }

  readBytes(name: string, start?: number, end?: number): Uint8Array {
    this.checkOpen();
    const t = this.info(name);
    const s = start ?? 0;
    const e = end ?? t.byteLength;
    if (!Number.isSafeInteger(s) || !Number.isSafeInteger(e) || s < 0 || e < s || e > t.byteLength) {
      throw new ChipcError('safetensors.range', `${this.path}: byte range [${s}, ${e}) is outside tensor ${JSON.stringify(name)} of ${t.byteLength} bytes`);
    }
    return this.readAt(this.dataStart + t.dataOffsets[0] + s, e - s);
  }

  readF32(name: string): Float32Array {
    const t = this.info(name);
    return decodeToF32(t.dtype, this.readBytes(name), `${this.path}: tensor ${JSON.stringify(name)}`);
  }

  *chunks(name: string, chunkBytes: number = DEFAULT_CHUNK_BYTES): Iterable<Uint8Array> {
    if (!Number.isSafeInteger(chunkBytes) || chunkBytes <= 0) throw new ChipcError('safetensors.range', `chunk size must be a positive integer, got ${chunkBytes}`);
    const t = this.info(name);
    for (let s = 0; s < t.byteLength; s += chunkBytes) yield this.readBytes(name, s, Math.min(t.byteLength, s + chunkBytes));
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.onClose();
  }

  private checkOpen(): void {
    if (this.closed) throw new ChipcError('safetensors.closed', `${this.path}: the file was closed`);
  }
}

/**
 * Opens and validates a .safetensors file. Only the 8-byte length and the header are read here;
 * the file stays open (positional reads) until close().
 */
export function openSafetensors(path: string, opts: OpenOptions = {}): SafetensorsFile {
  const read: ReadFn = opts.read ?? ((fd, buf, off, len, pos) => fs.readSync(fd, buf, off, len, pos));
  let fd: number;
  try {
    fd = fs.openSync(path, 'r');
  } catch (e) {
    throw new ChipcError('safetensors.open', `${path}: cannot open: ${(e as Error).message}`, { cause: e });
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) throw new ChipcError('safetensors.open', `${path}: not a regular file`);
    const readAt: ReadAt = (position, length) => {
      let buf: Uint8Array;
      try {
        // Own ArrayBuffer (not the shared pool) and no zero-fill: every byte is overwritten below or we throw.
        buf = Buffer.allocUnsafeSlow(length);
      } catch (e) {
        throw new ChipcError('safetensors.too-large', `${path}: cannot hold ${length} bytes in one buffer; read it with chunks()`, { cause: e });
      }
      let done = 0;
      while (done < length) {
        const got = read(fd, buf, done, Math.min(length - done, 0x40000000), position + done);
        if (got <= 0) throw new ChipcError('safetensors.short-read', `${path}: file ended at byte ${position + done} while reading (was it changed after opening?)`);
        done += got;
      }
      return buf;
    };
    const header = parseHeader(readAt, st.size, path);
    return new SafetensorsFile(path, readAt, header, () => fs.closeSync(fd));
  } catch (e) {
    fs.closeSync(fd);
    throw e;
  }
}

/** A validated safetensors image held in memory (tests, fuzzing, small embedded files). */
export function openSafetensorsBuffer(bytes: Uint8Array, label = '<buffer>'): SafetensorsFile {
  const readAt: ReadAt = (position, length) => bytes.slice(position, position + length);
  return new SafetensorsFile(label, readAt, parseHeader(readAt, bytes.length, label), () => {});
}
