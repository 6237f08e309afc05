/**
 * Reference model ("golden emulator") of the hashed filesystem store (issue 5), written at the
 * level of RAM rows so the circuit can implement exactly this algorithm on pinned GDN RAM rows.
 *
 * State = five tables of rows; every row is a fixed number of non-negative integer fields < 2^24
 * (exact in float32). A row is either unwritten (reads as all zeros, like an unwritten RAM row) or
 * written; written rows stay written (a delete leaves stale data behind, as the hardware does).
 *
 *   counters  1 row  {fileCount, freeTop, bump}
 *   dir       D rows {used, fp, nameLen, contentLen, firstChunk}
 *   chunk     P rows {C token ids}
 *   link      P rows {next + 1}           (0 = end of chain)
 *   free      P rows {chunk index}        (the free stack; entries 0 … freeTop−1 are live)
 *
 * Every operation is a deterministic sequence of row reads and writes with bounded loops and no
 * dynamic memory; each result carries the count of row reads/writes per table and probe steps.
 * The algorithm, limits, result codes and cost rules are documented in docs/store.md.
 */
import { ChipcError } from '../util/errors.ts';

/** Largest value of any row field: fields must be exact in float32. */
export const FIELD_LIMIT = 2 ** 24;
/** Fingerprint modulus: fp ∈ [0, 2^19). */
export const FP_BITS = 19;
export const FP_MOD = 2 ** FP_BITS;
/** Fingerprint multiplier: fp ← (31·fp + t + 1) mod 2^19. */
export const FP_MUL = 31;
/** Largest vocabulary: with t < 2^19 the fingerprint step's value before the mod is < 2^24. */
export const MAX_VOCAB = 2 ** 19;
/** Largest maxFiles: D = 2·F rounded up to a power of two stays ≤ 2^19 = the fingerprint range. */
export const MAX_FILES = 2 ** 18;
/** Largest chunk size (fields per chunk row). */
export const MAX_CHUNK = 1024;

/** Compile options of a store. */
export interface StoreOptions {
  /** maxFiles F (default 512, 1 … 2^18). */
  maxFiles?: number;
  /** nameMax N in tokens (default 32, ≥ 1). */
  nameMax?: number;
  /** contentMax M in tokens (default 4096, ≥ 0). */
  contentMax?: number;
  /** Tokens per content chunk C (default 16, 1 … 1024). */
  chunkSize?: number;
  /** Chunk pool P (default max(4·F, ceil((N+M)/C)); at least ceil((N+M)/C); < 2^24). */
  chunkPool?: number;
  /** Vocabulary V: token ids 0 … V−1 (default 248,320, 1 … 2^19). */
  vocab?: number;
}

/** Resolved, validated parameters. `dirSlots` D is derived from `maxFiles`. */
export interface StoreParams {
  readonly maxFiles: number;
  readonly dirSlots: number;
  readonly nameMax: number;
  readonly contentMax: number;
  readonly chunkSize: number;
  readonly chunkPool: number;
  readonly vocab: number;
}

export const DEFAULT_STORE_OPTIONS: Required<Omit<StoreOptions, 'chunkPool'>> = {
  maxFiles: 512, nameMax: 32, contentMax: 4096, chunkSize: 16, vocab: 248_320,
};

function checkInt(name: string, v: number, lo: number, hi: number): number {
  if (!Number.isInteger(v) || v < lo || v > hi) {
    throw new ChipcError('store.params', `store option ${name} must be an integer in ${lo} … ${hi}, got ${v}`);
  }
  return v;
}

/** Smallest power of two ≥ x (x ≥ 1). */
function pow2AtLeast(x: number): number {
  let p = 1;
  while (p < x) p *= 2;
  return p;
}

/**
 * Validates options and derives D = smallest power of two ≥ 2F and the default pool
 * P = max(4F, ceil((N+M)/C)). Throws ChipcError `store.params` naming the bad option.
 */
export function resolveStoreParams(opts: StoreOptions = {}): StoreParams {
  const d = DEFAULT_STORE_OPTIONS;
  const maxFiles = checkInt('maxFiles', opts.maxFiles ?? d.maxFiles, 1, MAX_FILES);
  const nameMax = checkInt('nameMax', opts.nameMax ?? d.nameMax, 1, FIELD_LIMIT - 1);
  const contentMax = checkInt('contentMax', opts.contentMax ?? d.contentMax, 0, FIELD_LIMIT - 1);
  const chunkSize = checkInt('chunkSize', opts.chunkSize ?? d.chunkSize, 1, MAX_CHUNK);
  const vocab = checkInt('vocab', opts.vocab ?? d.vocab, 1, MAX_VOCAB);
  const maxChain = Math.ceil((nameMax + contentMax) / chunkSize);
  // P ≤ 2^24 − 1 so that link values next+1 ≤ P stay < 2^24.
  if (maxChain > FIELD_LIMIT - 1) {
    throw new ChipcError('store.params', `store options nameMax + contentMax need ${maxChain} chunks of ${chunkSize} tokens; at most ${FIELD_LIMIT - 1} chunks fit`);
  }
  const chunkPool = opts.chunkPool === undefined
    ? Math.min(FIELD_LIMIT - 1, Math.max(4 * maxFiles, maxChain))
    : checkInt('chunkPool', opts.chunkPool, maxChain, FIELD_LIMIT - 1);
  return { maxFiles, dirSlots: pow2AtLeast(2 * maxFiles), nameMax, contentMax, chunkSize, chunkPool, vocab };
}

export const TABLE_NAMES = ['counters', 'dir', 'chunk', 'link', 'free'] as const;
export type TableName = (typeof TABLE_NAMES)[number];

/** Shape of one table: `rows` rows of `fieldMax.length` fields, field f in 0 … fieldMax[f]. */
export interface TableSpec {
  readonly name: TableName;
  readonly rows: number;
  readonly fieldMax: readonly number[];
}

/** Table shapes of a store with these parameters, in the fixed order of TABLE_NAMES. */
export function storeTables(p: StoreParams): TableSpec[] {
  return [
    { name: 'counters', rows: 1, fieldMax: [p.maxFiles, p.chunkPool, p.chunkPool] },
    { name: 'dir', rows: p.dirSlots, fieldMax: [1, FP_MOD - 1, p.nameMax, p.contentMax, p.chunkPool - 1] },
    { name: 'chunk', rows: p.chunkPool, fieldMax: new Array<number>(p.chunkSize).fill(p.vocab - 1) },
    { name: 'link', rows: p.chunkPool, fieldMax: [p.chunkPool] },
    { name: 'free', rows: p.chunkPool, fieldMax: [p.chunkPool - 1] },
  ];
}

// Field indices.
const CNT_FILES = 0, CNT_FREE_TOP = 1, CNT_BUMP = 2;
const DIR_USED = 0, DIR_FP = 1, DIR_NAME_LEN = 2, DIR_CONTENT_LEN = 3, DIR_FIRST = 4;

/** Result codes, with the small integer ids a circuit reports them by. */
export const RESULT_CODES = {
  OK: 0, NOT_FOUND: 1, FULL: 2, NAME_EMPTY: 3, NAME_TOO_LONG: 4, CONTENT_TOO_LONG: 5, BAD_TOKEN: 6,
} as const;
export type ResultCode = keyof typeof RESULT_CODES;
export type NameError = 'NAME_EMPTY' | 'NAME_TOO_LONG' | 'BAD_TOKEN';

/** Row traffic of one operation. */
export interface StoreCost {
  /** Row reads per table. */
  readonly reads: Record<TableName, number>;
  /** Row writes per table. */
  readonly writes: Record<TableName, number>;
  /** Sum of reads / writes over the tables. */
  readonly rowReads: number;
  readonly rowWrites: number;
  /** Directory slots examined by the lookup (home slot first). */
  readonly probes: number;
  /** Directory slots examined by backward-shift deletion after the deleted slot. */
  readonly shiftSteps: number;
}

export type PutResult =
  | { op: 'put'; code: 'OK'; replaced: boolean; slot: number; cost: StoreCost }
  | { op: 'put'; code: 'FULL' | 'CONTENT_TOO_LONG' | NameError; cost: StoreCost };
export type GetResult =
  | { op: 'get'; code: 'OK'; content: number[]; slot: number; cost: StoreCost }
  | { op: 'get'; code: 'NOT_FOUND' | NameError; cost: StoreCost };
export type DeleteResult =
  | { op: 'delete'; code: 'OK'; slot: number; cost: StoreCost }
  | { op: 'delete'; code: 'NOT_FOUND' | NameError; cost: StoreCost };
export type ListResult = { op: 'list'; code: 'OK'; names: number[][]; cost: StoreCost };
export type StoreResult = PutResult | GetResult | DeleteResult | ListResult;

/**
 * Fingerprint of a name: h₀ = 0, h ← (31·h + t + 1) mod 2^19 for each token t in order.
 * With t < 2^19 the value before the mod is ≤ 31·(2^19−1) + 2^19 = 2^24 − 31: exact in float32.
 */
export function nameFingerprint(name: readonly number[]): number {
  let h = 0;
  for (const t of name) h = (FP_MUL * h + t + 1) % FP_MOD;
  return h;
}

/** Chunks a file of n name tokens and c content tokens occupies: ceil((n+c)/C). */
export function chainLength(n: number, c: number, chunkSize: number): number {
  return Math.ceil((n + c) / chunkSize);
}

class Table {
  readonly data: Uint32Array;
  readonly written: Uint8Array;
  constructor(readonly spec: TableSpec) {
    this.data = new Uint32Array(spec.rows * spec.fieldMax.length);
    this.written = new Uint8Array(spec.rows);
  }
  get width(): number { return this.spec.fieldMax.length; }
}

/**
 * One pass along a chain: chunk k's index is learnt by reading the link row of chunk k−1 (once),
 * and chunk k's row is read once and kept, so an operation never reads a row of its chain twice.
 */
class ChainWalk {
  private readonly chunks: number[];
  private readonly cache: (Uint32Array | undefined)[] = [];
  constructor(first: number, private readonly read: (t: TableName, i: number) => Uint32Array) {
    this.chunks = [first];
  }
  /** Index of the chain's k-th chunk (reads the links up to it that were not read yet). */
  chunkAt(k: number): number {
    while (this.chunks.length <= k) this.chunks.push(this.read('link', this.chunks[this.chunks.length - 1])[0] - 1);
    return this.chunks[k];
  }
  /** The chain's k-th chunk row. */
  rowAt(k: number): Uint32Array {
    return (this.cache[k] ??= this.read('chunk', this.chunkAt(k)).slice());
  }
}

/** Mutable per-operation counters. */
class CostMeter {
  reads: Record<TableName, number> = { counters: 0, dir: 0, chunk: 0, link: 0, free: 0 };
  writes: Record<TableName, number> = { counters: 0, dir: 0, chunk: 0, link: 0, free: 0 };
  probes = 0;
  shiftSteps = 0;
  done(): StoreCost {
    const sum = (r: Record<TableName, number>): number => TABLE_NAMES.reduce((s, t) => s + r[t], 0);
    return { reads: this.reads, writes: this.writes, rowReads: sum(this.reads), rowWrites: sum(this.writes), probes: this.probes, shiftSteps: this.shiftSteps };
  }
}

/** The store: parameters, tables of rows, and the four operations. */
export class StoreModel {
  readonly params: StoreParams;
  readonly tables: readonly TableSpec[];
  private readonly t: Record<TableName, Table>;
  private m = new CostMeter();

  constructor(opts: StoreOptions | StoreParams = {}) {
    this.params = resolveStoreParams(opts);
    this.tables = storeTables(this.params);
    const t = {} as Record<TableName, Table>;
    for (const spec of this.tables) t[spec.name] = new Table(spec);
    this.t = t;
    // An empty store: only the counters row is occupied, all zero.
    this.rawWrite('counters', 0, [0, 0, 0]);
  }

  // ---- row access (the only primitives; operations use read/write, which count) ----

  /** Fields of row i of `table`, or undefined when the row was never written. */
  row(table: TableName, i: number): number[] | undefined {
    const tb = this.t[table];
    if (!Number.isInteger(i) || i < 0 || i >= tb.spec.rows) {
      throw new ChipcError('store.row', `row ${i} is outside table ${table} (0 … ${tb.spec.rows - 1})`);
    }
    if (!tb.written[i]) return undefined;
    return Array.from(tb.data.subarray(i * tb.width, (i + 1) * tb.width));
  }

  /** Occupied (written) rows of `table`, in increasing row order. */
  *rows(table: TableName): Generator<[number, number[]]> {
    const tb = this.t[table];
    for (let i = 0; i < tb.spec.rows; i++) {
      if (tb.written[i]) yield [i, Array.from(tb.data.subarray(i * tb.width, (i + 1) * tb.width))];
    }
  }

  /** Number of occupied rows of `table`. */
  occupiedRows(table: TableName): number {
    let n = 0;
    for (const w of this.t[table].written) n += w;
    return n;
  }

  /**
   * Writes a row directly (loading a store file). Range-checked against the table's field maxima
   * (ChipcError `store.row`). Does not check the store's structure: see checkInvariants().
   */
  setRow(table: TableName, i: number, fields: readonly number[]): void {
    const tb = this.t[table];
    if (!Number.isInteger(i) || i < 0 || i >= tb.spec.rows) {
      throw new ChipcError('store.row', `row ${i} is outside table ${table} (0 … ${tb.spec.rows - 1})`);
    }
    if (fields.length !== tb.width) {
      throw new ChipcError('store.row', `table ${table} row ${i} needs ${tb.width} fields, got ${fields.length}`);
    }
    fields.forEach((v, f) => {
      if (!Number.isInteger(v) || v < 0 || v > tb.spec.fieldMax[f]) {
        throw new ChipcError('store.row', `table ${table} row ${i} field ${f} = ${v} is outside 0 … ${tb.spec.fieldMax[f]}`);
      }
    });
    this.rawWrite(table, i, fields);
  }

  /** True when no row but the all-zero counters row is occupied (a freshly made store). */
  isEmpty(): boolean {
    for (const name of TABLE_NAMES) {
      const occ = this.occupiedRows(name);
      if (name === 'counters' ? occ !== 1 : occ !== 0) return false;
    }
    return this.t.counters.data.every((v) => v === 0);
  }

  /** Number of files stored. */
  get fileCount(): number { return this.t.counters.data[CNT_FILES]; }

  private rawWrite(table: TableName, i: number, fields: readonly number[]): void {
    const tb = this.t[table];
    tb.data.set(fields, i * tb.width);
    tb.written[i] = 1;
  }
  private read(table: TableName, i: number): Uint32Array {
    this.m.reads[table]++;
    const tb = this.t[table];
    return tb.data.subarray(i * tb.width, (i + 1) * tb.width);
  }
  private write(table: TableName, i: number, fields: readonly number[]): void {
    this.m.writes[table]++;
    this.rawWrite(table, i, fields);
  }
  private begin(): void { this.m = new CostMeter(); }

  // ---- helpers of the algorithm ----

  /** NAME_EMPTY | NAME_TOO_LONG | BAD_TOKEN for a bad name, else undefined. */
  private nameError(name: readonly number[]): NameError | undefined {
    if (name.length === 0) return 'NAME_EMPTY';
    if (name.length > this.params.nameMax) return 'NAME_TOO_LONG';
    if (!this.tokensOk(name)) return 'BAD_TOKEN';
    return undefined;
  }
  private tokensOk(ts: readonly number[]): boolean {
    const v = this.params.vocab;
    for (const t of ts) if (!Number.isInteger(t) || t < 0 || t >= v) return false;
    return true;
  }

  /** A walk along one chain (see ChainWalk); its reads count against this operation. */
  private walk(first: number): ChainWalk {
    return new ChainWalk(first, (t, i) => this.read(t, i));
  }

  /**
   * Lookup by linear probing from the home slot fp mod D. Each probe reads one dir row; the walk
   * stops at the first unused slot (not found: that slot is where an insert goes) or at a slot
   * whose fp and nameLen match and whose name, read through its chain, equals `name`.
   * Bounded: at most D probes (the load ≤ 50 % keeps unused slots). On a match it returns the
   * entry's fields and the chain walk the comparison made (so later steps re-read nothing).
   */
  private lookup(name: readonly number[], fp: number): { found: false; slot: number } | { found: true; slot: number; entry: number[]; chain: ChainWalk } {
    const D = this.params.dirSlots;
    let slot = fp & (D - 1);
    for (let i = 0; i < D; i++) {
      this.m.probes++;
      const entry = Array.from(this.read('dir', slot));
      if (entry[DIR_USED] === 0) return { found: false, slot };
      if (entry[DIR_FP] === fp && entry[DIR_NAME_LEN] === name.length) {
        const chain = this.walk(entry[DIR_FIRST]);
        if (this.nameEquals(chain, name)) return { found: true, slot, entry, chain };
      }
      slot = (slot + 1) & (D - 1);
    }
    throw new ChipcError('store.corrupt', 'directory has no unused slot (load above 100 %)');
  }

  /** Compares `name` with the chain's first name.length tokens, chunk by chunk; stops at the first differing chunk. */
  private nameEquals(chain: ChainWalk, name: readonly number[]): boolean {
    const C = this.params.chunkSize;
    for (let k = 0; k * C < name.length; k++) {
      const row = chain.rowAt(k);
      const end = Math.min(C, name.length - k * C);
      for (let j = 0; j < end; j++) if (row[j] !== name[k * C + j]) return false;
    }
    return true;
  }

  /** Tokens [from, from+count) of a chain (chunk rows before `from`'s chunk are not read). */
  private readTokens(chain: ChainWalk, from: number, count: number): number[] {
    const C = this.params.chunkSize;
    const out: number[] = [];
    for (let pos = from; pos < from + count; pos++) out.push(chain.rowAt(Math.floor(pos / C))[pos % C]);
    return out;
  }

  /** Pushes every chunk of a chain of `len` chunks onto the free stack, in chain order. */
  private freeChain(chain: ChainWalk, len: number, cnt: number[]): void {
    for (let k = 0; k < len; k++) {
      this.write('free', cnt[CNT_FREE_TOP], [chain.chunkAt(k)]);
      cnt[CNT_FREE_TOP]++;
    }
  }

  /** Pops the free stack if non-empty, else takes the bump pointer. Caller checked capacity. */
  private alloc(cnt: number[]): number {
    if (cnt[CNT_FREE_TOP] > 0) {
      cnt[CNT_FREE_TOP]--;
      return this.read('free', cnt[CNT_FREE_TOP])[0];
    }
    return cnt[CNT_BUMP]++;
  }

  /**
   * Writes name ++ content as a new chain: per chunk, one chunk row (C tokens, zero padded) and,
   * once the next chunk is known, the previous chunk's link row (next+1); the last link is 0.
   */
  private writeChain(tokens: readonly number[], cnt: number[]): number {
    const C = this.params.chunkSize;
    const len = Math.ceil(tokens.length / C);
    let first = -1, prev = -1;
    for (let k = 0; k < len; k++) {
      const chunk = this.alloc(cnt);
      const row = new Array<number>(C).fill(0);
      for (let j = 0; j < C && k * C + j < tokens.length; j++) row[j] = tokens[k * C + j];
      this.write('chunk', chunk, row);
      if (prev >= 0) this.write('link', prev, [chunk + 1]);
      else first = chunk;
      prev = chunk;
    }
    this.write('link', prev, [0]);
    return first;
  }

  // ---- operations ----

  /**
   * put(name, content). Checks, in order: name (NAME_EMPTY, NAME_TOO_LONG), CONTENT_TOO_LONG,
   * BAD_TOKEN (name, then content), then looks the name up and checks capacity (FULL): a new name
   * needs fileCount < F; the chain needs ceil((n+c)/C) ≤ freeTop + (P − bump) (+ the old chain's
   * length on an overwrite). Only then writes. A failed put writes no row.
   */
  put(name: readonly number[], content: readonly number[]): PutResult {
    this.begin();
    const p = this.params;
    const ne = name.length === 0 ? 'NAME_EMPTY' : name.length > p.nameMax ? 'NAME_TOO_LONG' : undefined;
    if (ne) return { op: 'put', code: ne, cost: this.m.done() };
    if (content.length > p.contentMax) return { op: 'put', code: 'CONTENT_TOO_LONG', cost: this.m.done() };
    if (!this.tokensOk(name) || !this.tokensOk(content)) return { op: 'put', code: 'BAD_TOKEN', cost: this.m.done() };

    const cnt = Array.from(this.read('counters', 0));
    const fp = nameFingerprint(name);
    const hit = this.lookup(name, fp);
    const { found, slot } = hit;
    const need = chainLength(name.length, content.length, p.chunkSize);
    let avail = cnt[CNT_FREE_TOP] + (p.chunkPool - cnt[CNT_BUMP]);
    let oldLen = 0;
    if (hit.found) {
      oldLen = chainLength(hit.entry[DIR_NAME_LEN], hit.entry[DIR_CONTENT_LEN], p.chunkSize);
      avail += oldLen;
    } else if (cnt[CNT_FILES] >= p.maxFiles) {
      return { op: 'put', code: 'FULL', cost: this.m.done() };
    }
    if (need > avail) return { op: 'put', code: 'FULL', cost: this.m.done() };

    if (hit.found) this.freeChain(hit.chain, oldLen, cnt);
    const first = this.writeChain([...name, ...content], cnt);
    this.write('dir', slot, [1, fp, name.length, content.length, first]);
    if (!found) cnt[CNT_FILES]++;
    this.write('counters', 0, cnt);
    return { op: 'put', code: 'OK', replaced: found, slot, cost: this.m.done() };
  }

  /** get(name) → the content, NOT_FOUND, or a name error. Writes nothing. */
  get(name: readonly number[]): GetResult {
    this.begin();
    const ne = this.nameError(name);
    if (ne) return { op: 'get', code: ne, cost: this.m.done() };
    const hit = this.lookup(name, nameFingerprint(name));
    if (!hit.found) return { op: 'get', code: 'NOT_FOUND', cost: this.m.done() };
    const content = this.readTokens(hit.chain, hit.entry[DIR_NAME_LEN], hit.entry[DIR_CONTENT_LEN]);
    return { op: 'get', code: 'OK', content, slot: hit.slot, cost: this.m.done() };
  }

  /**
   * delete(name): frees the chain (pushes its chunks), then backward-shift deletion: walking on
   * from the emptied slot i, an entry at j whose home k is not cyclically in (i, j] moves to i and
   * i ← j; the walk ends at the first unused slot, and slot i is written all zero.
   */
  delete(name: readonly number[]): DeleteResult {
    this.begin();
    const ne = this.nameError(name);
    if (ne) return { op: 'delete', code: ne, cost: this.m.done() };
    const hit = this.lookup(name, nameFingerprint(name));
    if (!hit.found) return { op: 'delete', code: 'NOT_FOUND', cost: this.m.done() };
    const { slot, entry } = hit;
    const p = this.params;
    const cnt = Array.from(this.read('counters', 0));
    this.freeChain(hit.chain, chainLength(entry[DIR_NAME_LEN], entry[DIR_CONTENT_LEN], p.chunkSize), cnt);
    const D = p.dirSlots, mask = D - 1;
    let i = slot, j = slot;
    for (let step = 1; step < D; step++) {
      j = (j + 1) & mask;
      this.m.shiftSteps++;
      const ej = this.read('dir', j);
      if (ej[DIR_USED] === 0) break;
      const k = ej[DIR_FP] & mask;
      const stays = i <= j ? i < k && k <= j : i < k || k <= j;
      if (stays) continue;
      this.write('dir', i, Array.from(ej));
      i = j;
    }
    this.write('dir', i, [0, 0, 0, 0, 0]);
    cnt[CNT_FILES]--;
    this.write('counters', 0, cnt);
    return { op: 'delete', code: 'OK', slot, cost: this.m.done() };
  }

  /** list() → every name, in directory slot order; stops after fileCount names. */
  list(): ListResult {
    this.begin();
    const cnt = this.read('counters', 0);
    const names: number[][] = [];
    for (let s = 0; s < this.params.dirSlots && names.length < cnt[CNT_FILES]; s++) {
      const e = this.read('dir', s);
      if (e[DIR_USED] === 1) names.push(this.readTokens(this.walk(e[DIR_FIRST]), 0, e[DIR_NAME_LEN]));
    }
    return { op: 'list', code: 'OK', names, cost: this.m.done() };
  }

  /**
   * Structural check of the whole state (used after loading a file). Throws ChipcError
   * `store.corrupt` naming the first violation: counters in range (freeTop ≤ bump ≤ P); used dir
   * entries = fileCount, each with a valid name length, a chain of exactly ceil((n+c)/C) chunks
   * below bump ending in link 0 with zero padding, fp = fingerprint of the stored name, reachable
   * from its home slot without crossing an unused slot, names distinct; unused dir rows all zero;
   * every chunk below bump in exactly one chain or in the free stack; no chunk/link/free row
   * written at or beyond bump.
   */
  checkInvariants(): void {
    const p = this.params;
    const bad = (msg: string): never => { throw new ChipcError('store.corrupt', `store state is inconsistent: ${msg}`); };
    const at = (tb: TableName, i: number): Uint32Array => {
      const t = this.t[tb];
      return t.data.subarray(i * t.width, (i + 1) * t.width);
    };
    const [files, freeTop, bump] = at('counters', 0);
    if (!this.t.counters.written[0]) bad('counters row is missing');
    if (files > p.maxFiles) bad(`fileCount ${files} > maxFiles ${p.maxFiles}`);
    if (!(freeTop <= bump && bump <= p.chunkPool)) bad(`counters freeTop ${freeTop}, bump ${bump} not 0 ≤ freeTop ≤ bump ≤ ${p.chunkPool}`);
    for (const tb of ['chunk', 'link', 'free'] as const) {
      for (let i = bump; i < p.chunkPool; i++) if (this.t[tb].written[i]) bad(`${tb} row ${i} is written at or beyond bump ${bump}`);
    }
    const owner = new Int32Array(p.chunkPool).fill(-1); // slot owning the chunk; −2 = free stack
    const D = p.dirSlots;
    let used = 0;
    const names = new Set<string>();
    for (let s = 0; s < D; s++) {
      const e = at('dir', s);
      if (e[DIR_USED] === 0) {
        if (e.some((v) => v !== 0)) bad(`unused directory slot ${s} has non-zero fields`);
        continue;
      }
      used++;
      const n = e[DIR_NAME_LEN], c = e[DIR_CONTENT_LEN];
      if (n < 1) bad(`directory slot ${s} has an empty name`);
      const len = chainLength(n, c, p.chunkSize);
      const tokens: number[] = [];
      let chunk = e[DIR_FIRST];
      for (let k = 0; k < len; k++) {
        if (chunk >= bump) bad(`directory slot ${s}: chain chunk ${chunk} is at or beyond bump ${bump}`);
        if (owner[chunk] !== -1) bad(`chunk ${chunk} is in two chains (slots ${owner[chunk]} and ${s}) or also free`);
        owner[chunk] = s;
        tokens.push(...at('chunk', chunk));
        const next = at('link', chunk)[0];
        if (k === len - 1) {
          if (next !== 0) bad(`directory slot ${s}: last chunk ${chunk} links on to ${next - 1}`);
        } else {
          if (next === 0) bad(`directory slot ${s}: chain ends after ${k + 1} of ${len} chunks`);
          chunk = next - 1;
        }
      }
      if (tokens.slice(n + c).some((v) => v !== 0)) bad(`directory slot ${s}: padding after the content is not zero`);
      const name = tokens.slice(0, n);
      if (nameFingerprint(name) !== e[DIR_FP]) bad(`directory slot ${s}: fingerprint ${e[DIR_FP]} does not match its name`);
      const key = name.join(',');
      if (names.has(key)) bad(`directory slot ${s}: name stored twice`);
      names.add(key);
      for (let q = e[DIR_FP] & (D - 1); q !== s; q = (q + 1) & (D - 1)) {
        if (at('dir', q)[DIR_USED] === 0) bad(`directory slot ${s} is not reachable from its home slot ${e[DIR_FP] & (D - 1)} (slot ${q} is unused)`);
      }
    }
    if (used !== files) bad(`${used} directory entries but fileCount ${files}`);
    if (files > 0 && used * 2 > D) bad(`directory load ${used}/${D} above 50 %`);
    for (let k = 0; k < freeTop; k++) {
      const chunk = at('free', k)[0];
      if (chunk >= bump) bad(`free stack entry ${k} = chunk ${chunk} is at or beyond bump ${bump}`);
      if (owner[chunk] !== -1) bad(`free chunk ${chunk} is also ${owner[chunk] === -2 ? 'free twice' : `in the chain of slot ${owner[chunk]}`}`);
      owner[chunk] = -2;
    }
    for (let c = 0; c < bump; c++) if (owner[c] === -1) bad(`chunk ${c} below bump is neither in a chain nor free (leaked)`);
  }
}
