/**
 * `.chip-state` files: the occupied rows of every RAM of a compiled circuit, versioned and
 * checksummed (format in docs/state-files.md). A state file is the direct way to load firmware or
 * saved memory into a model's GDN state; `applyStateFile` gives the bit-identical state that a
 * prompt of the same writes leaves (src/load/ram-state.ts, test/load-ram-state.test.ts).
 *
 * Layout (all integers little-endian u32):
 *   "CHIPSTAT" · version · body length N · body (N bytes) · SHA-256 of every byte before it (32)
 *   body: circuit name (str) · RAM count · per RAM: name (str) · rows · field count F ·
 *         F × field hi · occupied row count n · n × (row · F × value), rows strictly increasing
 *   str: byte length · UTF-8 bytes
 * The header (magic, version, length) and the trailing checksum keep this shape in every version;
 * the body layout belongs to the version.
 */
import * as fs from 'node:fs';
import { createHash } from 'node:crypto';
import { ChipcError } from '../util/errors.ts';
import type { Executor } from '../exec/executor.ts';

import {
  applyRamContents, captureRamContents, checkRamContents, type RamContents, type RamDeclShape, type RamHost, type RamStatePlacement,
} from './ram-state.ts';

/**
 * What the state-file functions need of a model: its circuit's name and RAM declarations, and
 * where each RAM's GDN heads are. A CompileResult is one; so is a checkpoint read with its
 * manifest (`chipc exec --state`, src/chip/loaded.ts ramsOfCheckpoint).
 */
export interface StateHost extends RamHost {
  ir: { name: string; rams: readonly RamDeclShape[] };
  rams: readonly RamStatePlacement[];
}
import { makeParentDir, removeTemp, tempSibling } from '../util/temp-files.ts';

export const STATE_FILE_MAGIC = 'CHIPSTAT';
export const STATE_FILE_VERSION = 1;
/** Bytes of the header (magic, version, body length) and of the trailing SHA-256. */
const HEADER_BYTES = 16;
const CHECKSUM_BYTES = 32;

export interface StateFileRam {
  name: string;
  rows: number;
  /** The upper bound (hi) of each field; fields are unsigned (lo = 0). */
  fields: number[];
  /** Occupied rows, ascending: row → field values. */
  contents: Map<number, number[]>;
}

export interface StateFile {
  version: number;
  /** The circuit's name (CircuitIR.name). */
  circuit: string;
  /** Every RAM of the circuit, in declaration order. */
  rams: StateFileRam[];
}

function fail(code: string, msg: string): never {
  throw new ChipcError(code, msg);
}

/**
 * The state file of `res`'s circuit holding `contents` (RAM name → occupied rows). RAMs not
 * named are empty; a name that is not a RAM of the circuit, or contents that do not fit the
 * declaration, is a ChipcError.
 */
export function stateFileOf(res: StateHost, contents: ReadonlyMap<string, RamContents>): StateFile {
  const names = new Set(res.ir.rams.map((r) => r.name));
  for (const name of contents.keys()) {
    if (!names.has(name)) fail('state.ram', `circuit "${res.ir.name}" has no RAM named "${name}" (RAMs: ${[...names].join(', ') || 'none'})`);
  }
  return {
    version: STATE_FILE_VERSION,
    circuit: res.ir.name,
    rams: res.ir.rams.map((decl) => {
      const c = contents.get(decl.name) ?? new Map<number, readonly number[]>();
      checkRamContents(decl, c);
      return {
        name: decl.name,
        rows: decl.rows,
        fields: decl.fields.map((f) => f.hi),
        contents: new Map([...c.entries()].sort((a, b) => a[0] - b[0]).map(([row, v]) => [row, [...v]])),
      };
    }),
  };
}

class ByteWriter {
  private buf = new Uint8Array(256);
  private view = new DataView(this.buf.buffer);
  length = 0;
  private grow(n: number): void {
    if (this.length + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.length + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }
  u32(x: number): void {
    if (!Number.isInteger(x) || x < 0 || x > 0xffffffff) fail('state.encode', `cannot store ${x} as an unsigned 32-bit integer`);
    this.grow(4);
    this.view.setUint32(this.length, x, true);
    this.length += 4;
  }
  bytes(b: Uint8Array): void {
    this.grow(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }
  str(s: string): void {
    const b = new TextEncoder().encode(s);
    this.u32(b.length);
    this.bytes(b);
  }
  result(): Uint8Array {
    return this.buf.slice(0, this.length);
  }
}

class ByteReader {
  private readonly view: DataView;
  private off = 0;
  constructor(private readonly buf: Uint8Array, private readonly source: string) {
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }
  private need(n: number, what: string): void {
    if (this.off + n > this.buf.length) fail('state.corrupt', `${this.source}: the body ends inside ${what} (byte ${this.off})`);
  }
  u32(what: string): number {
    this.need(4, what);
    const x = this.view.getUint32(this.off, true);
    this.off += 4;
    return x;
  }
  str(what: string): string {
    const n = this.u32(`the length of ${what}`);
    this.need(n, what);
    const b = this.buf.subarray(this.off, this.off + n);
    this.off += n;
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(b);
    } catch {
      return fail('state.corrupt', `${this.source}: ${what} is not valid UTF-8`);
    }
  }
  get remaining(): number {
    return this.buf.length - this.off;
  }
}

function sha256(b: Uint8Array): Uint8Array {
  return new Uint8Array(createHash('sha256').update(b).digest());
}

/** The bytes of a state file (deterministic: the same file gives the same bytes). */
export function encodeStateFile(file: StateFile): Uint8Array {
  if (file.version !== STATE_FILE_VERSION) fail('state.version', `cannot write state file version ${file.version} (this chipc writes version ${STATE_FILE_VERSION})`);
  const body = new ByteWriter();
  body.str(file.circuit);
  body.u32(file.rams.length);
  for (const ram of file.rams) {
    body.str(ram.name);
    body.u32(ram.rows);
    body.u32(ram.fields.length);
    for (const hi of ram.fields) body.u32(hi);
    const rows = [...ram.contents.keys()].sort((a, b) => a - b);
    body.u32(rows.length);
    for (const row of rows) {
      const v = ram.contents.get(row)!;
      if (v.length !== ram.fields.length) fail('state.contents', `RAM "${ram.name}" row ${row}: ${v.length} values for ${ram.fields.length} fields`);
      body.u32(row);
      for (const x of v) body.u32(x);
    }
  }
  const b = body.result();
  const out = new ByteWriter();
  out.bytes(new TextEncoder().encode(STATE_FILE_MAGIC));
  out.u32(STATE_FILE_VERSION);
  out.u32(b.length);
  out.bytes(b);
  const head = out.result();
  const all = new Uint8Array(head.length + CHECKSUM_BYTES);
  all.set(head);
  all.set(sha256(head), head.length);
  return all;
}

/**
 * Parses state file bytes. Refused with a ChipcError naming the problem: `state.truncated`
 * (shorter than its header says), `state.format` (not a state file, or trailing bytes),
 * `state.checksum` (the SHA-256 does not match: corrupted), `state.version` (a version this chipc
 * cannot read), `state.corrupt` (a body that does not parse or breaks the format's rules).
 */
export function decodeStateFile(bytes: Uint8Array, source = 'state file'): StateFile {
  const magic = new TextEncoder().encode(STATE_FILE_MAGIC);
  if (bytes.length < magic.length || magic.some((m, i) => bytes[i] !== m)) {
    fail(bytes.length < magic.length ? 'state.truncated' : 'state.format',
      `${source}: not a chipc state file (${bytes.length < magic.length ? `only ${bytes.length} bytes` : `it does not start with "${STATE_FILE_MAGIC}"`})`);
  }
  if (bytes.length < HEADER_BYTES + CHECKSUM_BYTES) {
    fail('state.truncated', `${source}: truncated: ${bytes.length} bytes, a state file has at least ${HEADER_BYTES + CHECKSUM_BYTES}`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = view.getUint32(8, true);
  const bodyLen = view.getUint32(12, true);
  const total = HEADER_BYTES + bodyLen + CHECKSUM_BYTES;
  if (bytes.length < total) fail('state.truncated', `${source}: truncated: ${bytes.length} bytes, its header says ${total}`);
  if (bytes.length > total) fail('state.format', `${source}: ${bytes.length - total} unexpected bytes after the checksum (its header says ${total} bytes)`);
  const want = sha256(bytes.subarray(0, HEADER_BYTES + bodyLen));
  const got = bytes.subarray(HEADER_BYTES + bodyLen);
  if (want.some((x, i) => got[i] !== x)) fail('state.checksum', `${source}: checksum mismatch: the file is corrupted`);
  if (version !== STATE_FILE_VERSION) {
    fail('state.version', `${source}: state file version ${version} is not supported (this chipc reads version ${STATE_FILE_VERSION})`);
  }
  const rd = new ByteReader(bytes.subarray(HEADER_BYTES, HEADER_BYTES + bodyLen), source);
  const circuit = rd.str('the circuit name');
  const nRams = rd.u32('the RAM count');
  const rams: StateFileRam[] = [];
  const names = new Set<string>();
  for (let k = 0; k < nRams; k++) {
    const name = rd.str(`the name of RAM ${k}`);
    if (names.has(name)) fail('state.corrupt', `${source}: RAM "${name}" appears twice`);
    names.add(name);
    const rows = rd.u32(`the row count of RAM "${name}"`);
    const nFields = rd.u32(`the field count of RAM "${name}"`);
    // Each field costs 4 bytes: a count past the remaining bytes is corrupt (no huge allocation).
    if (nFields * 4 > rd.remaining) fail('state.corrupt', `${source}: RAM "${name}" claims ${nFields} fields, more than the file holds`);
    const fields = Array.from({ length: nFields }, (_, f) => rd.u32(`field ${f} of RAM "${name}"`));
    const n = rd.u32(`the occupied row count of RAM "${name}"`);
    if (n * 4 * (1 + nFields) > rd.remaining) fail('state.corrupt', `${source}: RAM "${name}" claims ${n} occupied rows, more than the file holds`);
    const contents = new Map<number, number[]>();
    let last = -1;
    for (let e = 0; e < n; e++) {
      const row = rd.u32(`an occupied row of RAM "${name}"`);
      if (row <= last) fail('state.corrupt', `${source}: RAM "${name}": row ${row} after row ${last} (rows must be strictly increasing)`);
      if (row >= rows) fail('state.corrupt', `${source}: RAM "${name}": row ${row} is outside [0, ${rows})`);
      last = row;
      const values = fields.map((hi, f) => {
        const x = rd.u32(`row ${row} of RAM "${name}"`);
        if (x > hi) fail('state.corrupt', `${source}: RAM "${name}" row ${row} field ${f}: value ${x} is above the field's maximum ${hi}`);
        return x;
      });
      contents.set(row, values);
    }
    rams.push({ name, rows, fields, contents });
  }
  if (rd.remaining !== 0) fail('state.corrupt', `${source}: ${rd.remaining} bytes left over after the last RAM`);
  return { version, circuit, rams };
}

/**
 * Writes the state file of `res` holding `contents` (RAM name → occupied rows) to `file`
 * atomically: the bytes go to a temporary name in the same directory, then a rename.
 */
export function saveStateFile(file: string, res: StateHost, contents: ReadonlyMap<string, RamContents>): void {
  writeStateFile(file, stateFileOf(res, contents));
}

/** Writes `state` to `file` atomically (temporary name in the same directory, then rename). */
export function writeStateFile(file: string, state: StateFile): void {
  const bytes = encodeStateFile(state);
  const tmp = tempSibling(file);
  try {
    makeParentDir(file);
    fs.writeFileSync(tmp, bytes, { flag: 'wx' });
    fs.renameSync(tmp, file);
  } catch (e) {
    removeTemp(tmp);
    throw new ChipcError('state.write', `cannot write state file ${file}: ${(e as Error).message}`, { cause: e });
  }
}

/** Reads and checks a state file (see decodeStateFile for the errors). */
export function loadStateFile(file: string): StateFile {
  let bytes: Uint8Array;
  try {
    bytes = fs.readFileSync(file);
  } catch (e) {
    throw new ChipcError('state.read', `cannot read state file ${file}: ${(e as Error).message}`, { cause: e });
  }
  return decodeStateFile(bytes, file);
}

function matchDecl(decl: RamDeclShape, ram: StateFileRam): void {
  const want = decl.fields.map((f) => f.hi);
  if (ram.rows !== decl.rows || ram.fields.length !== want.length || ram.fields.some((hi, f) => hi !== want[f] || decl.fields[f]!.lo !== 0)) {
    fail('state.mismatch', `RAM "${ram.name}": the state file has ${ram.rows} rows × fields [${ram.fields.map((h) => `0..${h}`).join(', ')}], the circuit declares ${decl.rows} rows × [${decl.fields.map((f) => `${f.lo}..${f.hi}`).join(', ')}]`);
  }
}

/**
 * Loads a state file into `executor` (running `res`'s weights): each RAM's GDN state is replaced
 * by the file's contents (rows it does not list become unwritten). The file must be for the same
 * circuit (name) and list exactly the circuit's RAMs with the same shapes: ChipcError
 * `state.mismatch` otherwise. Every RAM is checked before any state is written.
 */
export function applyStateFile(executor: Executor, res: StateHost, file: StateFile): void {
  const plan = checkStateFileFor(res, file);
  for (const { ram } of plan) {
    const placement = res.rams.find((p) => p.ram === ram.id)!;
    applyRamContents(executor, res, placement, file.rams.find((r) => r.name === ram.name)!.contents);
  }
}

/** Checks that `file` fits `res`'s circuit (see applyStateFile); returns the RAMs to load. */
export function checkStateFileFor(res: StateHost, file: StateFile): { ram: RamDeclShape }[] {
  if (file.circuit !== res.ir.name) fail('state.mismatch', `the state file is for circuit "${file.circuit}", the model is circuit "${res.ir.name}"`);
  const byName = new Map(file.rams.map((r) => [r.name, r]));
  for (const r of file.rams) {
    if (!res.ir.rams.some((d) => d.name === r.name)) fail('state.mismatch', `the state file has RAM "${r.name}", which circuit "${res.ir.name}" does not declare`);
  }
  const plan: { ram: RamDeclShape }[] = [];
  for (const decl of res.ir.rams) {
    const r = byName.get(decl.name);
    if (!r) fail('state.mismatch', `the state file has no entry for RAM "${decl.name}" of circuit "${res.ir.name}"`);
    matchDecl(decl, r);
    checkRamContents(decl, r.contents);
    if (!res.rams.some((p) => p.ram === decl.id)) {
      if (r.contents.size > 0) fail('state.mismatch', `RAM "${decl.name}" has no GDN heads in the compiled model, but the state file fills ${r.contents.size} of its rows`);
      continue;
    }
    plan.push({ ram: decl });
  }
  return plan;
}

/** The state file of the RAM contents held by `executor`'s GDN state (captureRamContents per RAM). */
export function captureStateFile(executor: Executor, res: StateHost): StateFile {
  const contents = new Map<string, RamContents>();
  for (const p of res.rams) contents.set(p.name, captureRamContents(executor, res, p));
  return stateFileOf(res, contents);
}
