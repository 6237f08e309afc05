/**
 * Host side of the store firmware service (firmware/services/store.c, firmware/lib/store.c;
 * docs/store.md "Store firmware service"): the service area's word layout, request encoding
 * (op + arguments → the [byteAddress, word] writes of one call), answer decoding (exit code +
 * console values, 3 bytes each → the reference model's result shapes without `cost`), memory ↔ rows
 * conversion, and `FirmwareStore`, which drives the service on the golden emulator.
 *
 * The firmware runs exactly the reference model's algorithm (src/store/model.ts) on RAM words,
 * so after every operation `rowsFromMemory` decodes the area to the model's rows.
 */
import { ServiceEmulator, type ServiceWrite } from '../chip/service.ts';
import { ChipcError } from '../util/errors.ts';
import {
  RESULT_CODES, TABLE_NAMES, resolveStoreParams,
  type DeleteResult, type GetResult, type ListResult, type PutResult, type ResultCode, type StoreModel,
  type StoreOptions, type StoreParams, type StoreResult, type TableName,
} from './model.ts';

/**
 * The store area's header word 0 once initialised: "STR1" in little-endian bytes (store.h
 * STORE_MAGIC; not the store file's magic, file.ts STORE_FILE_MAGIC).
 */
const STORE_AREA_MAGIC = 0x31525453;
/** Header words (store.h STORE_HEADER_WORDS); the mailbox starts right after. */
const HEADER_WORDS = 16;
/** Word offset of the request mailbox in the area. */
export const MAILBOX_OFFSET = HEADER_WORDS;
/** The mailbox holds at least the init request: op + F, N, M, C, P, V + the area's word count. */
const MAILBOX_MIN_WORDS = 8;
/** Request op codes (word 0 of the mailbox). */
const STORE_OPS = { init: 1, put: 2, get: 3, delete: 4, list: 5 } as const;
/** Exit code of a refused request: unknown op, store not initialised, bad init. */
const BAD_REQUEST = 7;
/** Firmware packing limits (dir row: nameLen in 12 bits, contentLen and first chunk in 16). */
const FIRMWARE_MAX_NAME = 4095;
const FIRMWARE_MAX_CONTENT = 65535;
const FIRMWARE_MAX_POOL = 65536;
/** The ELF symbol where the service area starts. */
export const SERVICE_AREA_SYMBOL = '__service_area';

/** Word offsets (from the area's first word) of the parts of a store's service area. */
export interface StoreLayout {
  readonly mailbox: number;
  readonly mailboxWords: number;
  readonly counters: number;
  readonly dir: number;
  readonly chunk: number;
  readonly link: number;
  readonly free: number;
  /** Words the header, mailbox and tables need (= storeAreaWords). */
  readonly end: number;
}

/**
 * ChipcError `store.params` unless the parameters fit the firmware's packing:
 * nameMax ≤ 4095, contentMax ≤ 65535, chunkPool ≤ 65536 (the model's own limits are checked by
 * resolveStoreParams).
 */
function checkFirmwareParams(p: StoreParams): void {
  const lim: [keyof StoreParams, string, number][] = [
    ['nameMax', 'nameMax', FIRMWARE_MAX_NAME], ['contentMax', 'contentMax', FIRMWARE_MAX_CONTENT], ['chunkPool', 'chunkPool', FIRMWARE_MAX_POOL],
  ];
  for (const [key, name, max] of lim) {
    if (p[key] > max) throw new ChipcError('store.params', `store option ${name} = ${p[key]} is above the firmware store's limit ${max} (dir rows pack it into ${max === FIRMWARE_MAX_NAME ? 12 : 16} bits)`);
  }
}

/**
 * The area layout: header (16 words), mailbox max(8, 3 + N + M), counters 3, dir 2·D, chunk P·C,
 * link P, free P — consecutive, in this order.
 */
export function storeLayout(p: StoreParams): StoreLayout {
  checkFirmwareParams(p);
  const mailboxWords = Math.max(MAILBOX_MIN_WORDS, 3 + p.nameMax + p.contentMax);
  const counters = MAILBOX_OFFSET + mailboxWords;
  const dir = counters + 3;
  const chunk = dir + 2 * p.dirSlots;
  const link = chunk + p.chunkPool * p.chunkSize;
  const free = link + p.chunkPool;
  return { mailbox: MAILBOX_OFFSET, mailboxWords, counters, dir, chunk, link, free, end: free + p.chunkPool };
}

/** Words of service area a store with these parameters needs: header + mailbox + tables. */
export function storeAreaWords(p: StoreParams): number {
  return storeLayout(p).end;
}

/** Maps a token to its request word: an integer in 0 … 2^32 − 1 as itself, anything else to
 * 2^32 − 1 — which is ≥ V (V ≤ 2^19), so the firmware answers BAD_TOKEN exactly as the model. */
function tokenWord(t: number): number {
  return Number.isInteger(t) && t >= 0 && t <= 0xffffffff ? t : 0xffffffff;
}

/** A store request. */
export type StoreRequest =
  | { op: 'put'; name: readonly number[]; content: readonly number[] }
  | { op: 'get'; name: readonly number[] }
  | { op: 'delete'; name: readonly number[] }
  | { op: 'list' };

/**
 * The writes of one request into the mailbox at `base` (the area's byte address): op, n, c, then
 * the name and content tokens — only what the firmware reads: no c for get/delete, no tokens
 * when n > N (or c > M for put; the firmware answers from n and c alone), so a request never
 * runs past the mailbox.
 */
export function encodeRequest(req: StoreRequest, base: number, p: StoreParams): ServiceWrite[] {
  const mb = base + 4 * MAILBOX_OFFSET;
  const w: ServiceWrite[] = [[mb, STORE_OPS[req.op]]];
  if (req.op === 'list') return w;
  const n = req.name.length;
  w.push([mb + 4, n]);
  let tokens: readonly number[] = req.name;
  if (req.op === 'put') {
    w.push([mb + 8, req.content.length]);
    if (n <= p.nameMax && req.content.length <= p.contentMax) tokens = [...req.name, ...req.content];
    else tokens = [];
  } else if (n > p.nameMax) {
    tokens = [];
  }
  for (let i = 0; i < tokens.length; i++) w.push([mb + 12 + 4 * i, tokenWord(tokens[i])]);
  return w;
}

/**
 * The init request's writes: op, then F, N, M, C, P, V and the area's word count. `values` is
 * taken as given (no host checks: the firmware validates), each an unsigned 32-bit word.
 */
export function encodeInitRequest(base: number, values: readonly [number, number, number, number, number, number], areaWords: number): ServiceWrite[] {
  const mb = base + 4 * MAILBOX_OFFSET;
  return [STORE_OPS.init, ...values, areaWords].map((v, i): ServiceWrite => [mb + 4 * i, v]);
}

/** The init values {F, N, M, C, P, V} of resolved parameters. */
export function initValues(p: StoreParams): [number, number, number, number, number, number] {
  return [p.maxFiles, p.nameMax, p.contentMax, p.chunkSize, p.chunkPool, p.vocab];
}

type NoCost<T> = T extends unknown ? Omit<T, 'cost'> : never;
type NoCostNoSlot<T> = T extends unknown ? Omit<T, 'cost' | 'slot'> : never;
/** The firmware's answers: the model's results without `cost`; get and delete report no `slot`. */
export type FirmwarePutResult = NoCost<PutResult>;
export type FirmwareGetResult = NoCostNoSlot<GetResult>;
export type FirmwareDeleteResult = NoCostNoSlot<DeleteResult>;
export type FirmwareListResult = NoCost<ListResult>;
export type FirmwareResult = FirmwarePutResult | FirmwareGetResult | FirmwareDeleteResult | FirmwareListResult;

/** A reference-model result as the firmware service reports it: no cost; get and delete carry no slot. */
export function asFirmwareAnswer(r: StoreResult): FirmwareResult {
  const { cost: _cost, ...rest } = r as StoreResult & { slot?: number };
  if (r.op === 'get' || r.op === 'delete') delete (rest as { slot?: number }).slot;
  return rest as FirmwareResult;
}

const CODE_NAMES = Object.keys(RESULT_CODES) as ResultCode[];
const ALLOWED: Record<StoreRequest['op'], readonly ResultCode[]> = {
  put: ['OK', 'FULL', 'NAME_EMPTY', 'NAME_TOO_LONG', 'CONTENT_TOO_LONG', 'BAD_TOKEN'],
  get: ['OK', 'NOT_FOUND', 'NAME_EMPTY', 'NAME_TOO_LONG', 'BAD_TOKEN'],
  delete: ['OK', 'NOT_FOUND', 'NAME_EMPTY', 'NAME_TOO_LONG', 'BAD_TOKEN'],
  list: ['OK'],
};

/** Bytes of one answer value on the console: three, little-endian (every value is < 2^24). */
const ANSWER_VALUE_BYTES = 3;

/** Reads the answer's values (three bytes each, low byte first) from console bytes; ChipcError `store.answer` when they do not fit. */
class AnswerReader {
  private pos = 0;
  constructor(private readonly bytes: Uint8Array, private readonly what: string) {}
  next(): number {
    const p = this.pos;
    if (p + ANSWER_VALUE_BYTES > this.bytes.length) {
      throw new ChipcError('store.answer', `${this.what}: the answer ends ${p === this.bytes.length ? 'before a value' : 'inside a value'} (byte ${p} of ${this.bytes.length})`);
    }
    this.pos = p + ANSWER_VALUE_BYTES;
    return this.bytes[p]! | this.bytes[p + 1]! << 8 | this.bytes[p + 2]! << 16;
  }
  end(): void {
    if (this.pos !== this.bytes.length) throw new ChipcError('store.answer', `${this.what}: ${this.bytes.length - this.pos} byte(s) left after the answer`);
  }
}

/**
 * Decodes one answer: the exit code (a RESULT_CODES id) and the console bytes, as store.c writes
 * them (put OK: slot, replaced; get OK: c and c tokens; list OK: count, then per name n and its
 * tokens; nothing otherwise). ChipcError `store.bad-request` for exit code 7, `store.answer` for
 * any other code or console bytes that do not parse exactly.
 */
export function decodeAnswer(op: 'put', exitCode: number, console: Uint8Array): FirmwarePutResult;
export function decodeAnswer(op: 'get', exitCode: number, console: Uint8Array): FirmwareGetResult;
export function decodeAnswer(op: 'delete', exitCode: number, console: Uint8Array): FirmwareDeleteResult;
export function decodeAnswer(op: 'list', exitCode: number, console: Uint8Array): FirmwareListResult;
export function decodeAnswer(op: StoreRequest['op'], exitCode: number, console: Uint8Array): FirmwareResult;
export function decodeAnswer(op: StoreRequest['op'], exitCode: number, console: Uint8Array): FirmwareResult {
  if (exitCode === BAD_REQUEST) throw new ChipcError('store.bad-request', `the store service refused the ${op} request (BAD_REQUEST: store not initialised?)`);
  const code = CODE_NAMES[exitCode];
  if (!Number.isInteger(exitCode) || code === undefined || !ALLOWED[op].includes(code)) {
    throw new ChipcError('store.answer', `the store service answered a ${op} with exit code ${exitCode}, which a ${op} cannot give`);
  }
  const r = new AnswerReader(console, `${op} answer`);
  if (code !== 'OK') {
    r.end();
    return { op, code } as FirmwareResult;
  }
  let out: FirmwareResult;
  if (op === 'put') {
    const slot = r.next();
    const replaced = r.next();
    if (replaced > 1) throw new ChipcError('store.answer', `put answer: replaced = ${replaced} is not 0 or 1`);
    out = { op, code, replaced: replaced === 1, slot };
  } else if (op === 'get') {
    const c = r.next();
    const content: number[] = [];
    for (let i = 0; i < c; i++) content.push(r.next());
    out = { op, code, content };
  } else if (op === 'delete') {
    out = { op, code };
  } else {
    const count = r.next();
    const names: number[][] = [];
    for (let k = 0; k < count; k++) {
      const n = r.next();
      const name: number[] = [];
      for (let i = 0; i < n; i++) name.push(r.next());
      names.push(name);
    }
    out = { op, code, names };
  }
  r.end();
  return out;
}

/** Rows of each table: [row index, fields] for every row that is not all zero, increasing. */
export type TableRows = Record<TableName, [number, number[]][]>;

/**
 * The tables' rows read from memory (`read32(byteAddress)`, the area at byte address `base`):
 * counters, dir (unpacked: used, fp, nameLen, contentLen, first), chunk, link, free. All-zero rows
 * are left out — the model's unwritten rows and its written all-zero rows alike.
 */
export function rowsFromMemory(read32: (addr: number) => number, base: number, p: StoreParams): TableRows {
  const L = storeLayout(p);
  const word = (off: number) => read32(base + 4 * off) >>> 0;
  const out = {} as TableRows;
  const table = (name: TableName, off: number, rows: number, width: number, unpack?: (w: number[]) => number[]): void => {
    const list: [number, number[]][] = [];
    for (let i = 0; i < rows; i++) {
      const w: number[] = [];
      for (let f = 0; f < width; f++) w.push(word(off + i * width + f));
      if (w.some((v) => v !== 0)) list.push([i, unpack ? unpack(w) : w]);
    }
    out[name] = list;
  };
  table('counters', L.counters, 1, 3);
  table('dir', L.dir, p.dirSlots, 2, ([w0, w1]) => [w0 & 1, (w0 >>> 1) & 0x7ffff, w0 >>> 20, w1 & 0xffff, w1 >>> 16]);
  table('chunk', L.chunk, p.chunkPool, p.chunkSize);
  table('link', L.link, p.chunkPool, 1);
  table('free', L.free, p.chunkPool, 1);
  return out;
}

/** A model's rows in the same form as rowsFromMemory (all-zero rows left out). */
export function rowsFromModel(model: StoreModel): TableRows {
  const out = {} as TableRows;
  for (const t of TABLE_NAMES) out[t] = [...model.rows(t)].filter(([, f]) => f.some((v) => v !== 0));
  return out;
}

/** The header words of an initialised store (magic, F, D, N, M, C, P, V, the tables' offsets, end). */
function headerWords(p: StoreParams): number[] {
  const L = storeLayout(p);
  const h = [STORE_AREA_MAGIC, p.maxFiles, p.dirSlots, p.nameMax, p.contentMax, p.chunkSize, p.chunkPool, p.vocab, L.counters, L.dir, L.chunk, L.link, L.free, L.end];
  while (h.length < HEADER_WORDS) h.push(0);
  return h;
}

/**
 * The nonzero words of the area (byte address `base`) that hold `model`'s state: the header and
 * every nonzero word of its rows (dir rows packed). Written into an all-zero area (a fresh chip
 * session) they give exactly the memory the firmware would have after the same operations, so a
 * store file can be imported into a chip session. ChipcError `store.params` when the parameters
 * exceed the firmware's limits.
 */
export function memoryWordsFromModel(model: StoreModel, base: number): ServiceWrite[] {
  const p = model.params;
  const L = storeLayout(p);
  const out: ServiceWrite[] = [];
  const put = (off: number, v: number): void => {
    if (v !== 0) out.push([base + 4 * off, v >>> 0]);
  };
  headerWords(p).forEach((v, i) => put(i, v));
  const starts: Record<TableName, number> = { counters: L.counters, dir: L.dir, chunk: L.chunk, link: L.link, free: L.free };
  for (const t of TABLE_NAMES) {
    for (const [i, f] of model.rows(t)) {
      if (t === 'dir') {
        const [used, fp, n, c, first] = f;
        put(L.dir + 2 * i, used | (fp << 1) | (n << 20));
        put(L.dir + 2 * i + 1, c | (first << 16));
      } else {
        for (let k = 0; k < f.length; k++) put(starts[t] + i * f.length + k, f[k]);
      }
    }
  }
  return out;
}

/** One call's decoded answer and the instructions the firmware retired for it. */
export interface FirmwareCall<R> {
  result: R;
  instructions: number;
}

/**
 * The store service on the golden emulator: `FirmwareStore.load(elf, memBytes, opts)` loads the
 * image (not yet initialised: call `init()`), then put/get/delete/list send one request each and
 * decode the answer. `rows()` decodes the area; `importModel` writes a model's state into a fresh
 * (all-zero) area instead of init.
 */
export class FirmwareStore {
  readonly params: StoreParams;
  /** Byte address of the service area (the ELF symbol __service_area). */
  readonly base: number;
  /** Words from the service area to the end of the data RAM. */
  readonly areaWords: number;

  constructor(readonly emu: ServiceEmulator, opts: StoreOptions | StoreParams = {}) {
    this.params = resolveStoreParams(opts);
    this.base = emu.symbol(SERVICE_AREA_SYMBOL);
    const ramEnd = emu.memory.base + emu.memory.size;
    this.areaWords = Math.floor((ramEnd - this.base) / 4);
    const need = storeAreaWords(this.params);
    if (need > this.areaWords) {
      throw new ChipcError('store.mem', `a store of ${this.params.maxFiles} files (N = ${this.params.nameMax}, M = ${this.params.contentMax}, C = ${this.params.chunkSize}, P = ${this.params.chunkPool}) needs ${need} words of service area; a ${emu.memBytes}-byte data RAM leaves ${this.areaWords}`);
    }
  }

  /** `codeBytes`: the chip's code RAM (the emulator's fetch limit, ServiceEmulator.load); default none. */
  static load(elf: Uint8Array, memBytes: number, opts: StoreOptions | StoreParams = {}, codeBytes?: number): FirmwareStore {
    return new FirmwareStore(ServiceEmulator.load(elf, memBytes, codeBytes), opts);
  }

  /** One raw call (no decoding): the exit code, console bytes and instruction count. */
  call(writes: readonly ServiceWrite[]): { exitCode: number; console: Uint8Array; instructions: number } {
    const r = this.emu.call(writes);
    return { exitCode: r.exitCode, console: r.console, instructions: r.instructions };
  }

  /** Initialises an empty store (re-initialising clears it). ChipcError when the firmware refuses. */
  init(): { instructions: number } {
    const r = this.call(encodeInitRequest(this.base, initValues(this.params), this.areaWords));
    if (r.exitCode !== 0 || r.console.length !== 0) throw new ChipcError('store.bad-request', `the store service refused init (exit code ${r.exitCode})`);
    return { instructions: r.instructions };
  }

  private op<R extends FirmwareResult>(req: StoreRequest): FirmwareCall<R> {
    const r = this.call(encodeRequest(req, this.base, this.params));
    return { result: decodeAnswer(req.op, r.exitCode, r.console) as R, instructions: r.instructions };
  }
  put(name: readonly number[], content: readonly number[]): FirmwareCall<FirmwarePutResult> { return this.op({ op: 'put', name, content }); }
  get(name: readonly number[]): FirmwareCall<FirmwareGetResult> { return this.op({ op: 'get', name }); }
  delete(name: readonly number[]): FirmwareCall<FirmwareDeleteResult> { return this.op({ op: 'delete', name }); }
  list(): FirmwareCall<FirmwareListResult> { return this.op({ op: 'list' }); }

  /** The tables decoded from the emulator's memory. */
  rows(): TableRows {
    const m = this.emu.memory;
    return rowsFromMemory((a) => m.read32(a), this.base, this.params);
  }

  /**
   * Writes `model`'s state into the area (instead of init), e.g. a loaded store file. The area must
   * be all zero (a fresh session) and the model's parameters equal this store's (ChipcError
   * `store.mismatch` / `store.import`).
   */
  importModel(model: StoreModel): void {
    const a = model.params, b = this.params;
    if ((Object.keys(b) as (keyof StoreParams)[]).some((k) => a[k] !== b[k])) {
      throw new ChipcError('store.mismatch', `the store's parameters ${JSON.stringify(a)} differ from the firmware store's ${JSON.stringify(b)}`);
    }
    const m = this.emu.memory;
    for (let i = 0; i < storeAreaWords(b); i++) {
      if (m.read32(this.base + 4 * i) !== 0) throw new ChipcError('store.import', `the service area is not empty (word ${i} is nonzero): import only into a fresh chip state`);
    }
    for (const [addr, word] of memoryWordsFromModel(model, this.base)) m.write32(addr, word);
  }
}
