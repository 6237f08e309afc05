/**
 * The FFN memo: a decode step's dense SwiGLU looked up by the bits of the input columns it reads,
 * instead of recomputed, when an earlier step computed it for the same bits (sparse path,
 * sequential order, CSR-only matrices: where mlp.ts swigluDelta runs).
 *
 * Exactness. Under delta.ts's scatter precondition — every input entry finite, and
 * maxRowNnz < cols − negTotal (negTotal: the input entries with the sign bit set; maxRowNnz: the
 * most stored entries of a gate or up row) — row r of the stacked [gate; up]·x is
 * act(fold of fl(w_rc·x_c) ≠ 0 over r's stored columns from +0), a pure function of the bits of x
 * at r's stored columns (delta.ts module comment). So h = act(fl(act(silu(g))·u)) and the down
 * projection of h are pure functions of the bits of x on C, the union of the stacked matrix's
 * stored columns (the *key*). The incremental form's output at an input x0 where the precondition
 * held is therefore the output at every input x1 where it holds whose bits on C are x0's. The memo
 * keeps such outputs (only those the incremental form computed: its down projection's output is
 * +0 on the rows without stored entries, so an entry holds the values of the others, R). A lookup
 * compares the whole key, bit for bit (the hash only finds the candidate), and checks the
 * precondition at x1 without reading past the key: no entry of x1 is ±∞ or NaN (found where the
 * input is taken whole, then followed through its change lists), and maxRowNnz < |C| − (the key's
 * sign-bit-set entries), since the entries off C add at most H − |C| to negTotal. (Where that does
 * not hold the step is computed, and the incremental form checks the precondition exactly.)
 *
 * Skipped steps. On a hit the matrices' states (delta.ts, the SwiGLU's h) keep the input of the
 * last step they computed. The memo lists every column whose bits changed since that step, and
 * the next computed step takes the list as its candidate columns (DeltaShare `since`, named by
 * that step's stamp): the incremental form is exact for any change between two inputs.
 *
 * The output. The memo's own vector `out` is the layer's FFN output at every step, and the memo is
 * the OutputSource its reader follows (residual-track.ts SourceSeen): each step lists the indices
 * whose bits moved. A hit writes its entry and clears the other indices that may not be +0; a
 * computed step copies the down projection's changed rows and the indices hits wrote since the
 * last computed step (every index when the down projection's state is not the one `out` was
 * computed from, one version on).
 *
 * Capacity: ExecTuning.ffnMemoEntries entries per layer in two-way sets (the way found or filled
 * last is kept at the next eviction), each its key's and its output's entries other than +0 (or
 * all of them, when more than half are not +0). A key is remembered at its second computed step:
 * a doorkeeper per set holds the hash of the last key it turned away.
 */
import type { DenseMlpWeights } from '../model/weights.ts';
import { wasmHeapOf, type DeltaShare, type InputChanges, type OutputSource } from './delta.ts';
import type { MatmulPath, MatmulStats } from './matmul.ts';
import { nonEmptyRowsOf } from './matmul-plans.ts';
import { newFfnSites, swiglu, type FfnSites, type SwigluIo } from './mlp.ts';
import type { ExecNumericContext } from './numeric.ts';
import type { ExecMemos } from './plans.ts';
import { phaseEnd, phaseStart } from './profile.ts';
import type { WasmHeap } from './wasm-heap.ts';

/** A column's hash term: the key's hash is their sum, so a changed column moves it by its new term less its old. */
function hashTerm(p: number, b: number): number {
  let v = Math.imul((b ^ Math.imul(p, 0x9e3779b1)) | 0, 0x85ebca77);
  v ^= v >>> 15;
  v = Math.imul(v, 0xc2b2ae3d);
  return v ^ (v >>> 13);
}

/** The largest stored-entry count of a row of a CSR. */
function maxRowEntries(rowPtr: Uint32Array): number {
  let most = 0;
  for (let r = 0; r + 1 < rowPtr.length; r++) most = Math.max(most, rowPtr[r + 1] - rowPtr[r]);
  return most;
}

/**
 * The memo's rests: after a window of WINDOW lookups with fewer than WINDOW / 2 hits (a layer
 * whose inputs seldom repeat, where the lookups cost more than the hits save) it computes every
 * step for REST_MIN steps, twice as many after each further poor window (at most REST_MAX), then
 * looks up again; its entries stay. Only the speed depends on it. (Half, not a quarter: with a
 * quarter, bigfact's decode past step 12,000 ran 4.88 µs a token slower than without the memo,
 * faster in 14 of 80 pairs; with half +0.77, 37 of 80, and crc32 −4.98, sort −3.19.)
 */
const WINDOW = 256;
const REST_MIN = 512;
const REST_MAX = 16384;

/** A Uint32Array view of a Float32Array's elements. */
function bitsOf(v: Float32Array): Uint32Array {
  return new Uint32Array(v.buffer, v.byteOffset, v.length);
}

/** A layer's FFN memo (module comment). */
export class FfnMemo implements OutputSource {
  version = 0;
  /** The gate, up and down projections' CSR the entries were computed with. */
  private readonly storage: readonly unknown[];
  readonly full = false;
  readonly rows: Int32Array;
  nRows = 0;
  /** The layer's FFN output (read it, do not write it). */
  readonly out: Float32Array;
  private readonly outBits: Uint32Array;
  /** Per input column, its place in the key, or −1 for a column no gate or up row reads. */
  private readonly keyAt: Int32Array;
  /** The current input's bits on C, and how many of them are not +0. */
  private readonly key: Uint32Array;
  private keyNnz = 0;
  /** The key's hash: the sum of its columns' terms (hashTerm), mod 2^32. */
  private hash = 0;
  /** Whether some input entry is ±∞ or NaN. */
  private nonFinite = true;
  /** The stamp of the input the key holds (−1: none yet). */
  private inStamp = -1;
  /** The stamp of the last input the matrices computed (−1: unknown, their next step scans every column). */
  private computedStamp = -1;
  /** The columns listed as changed since that input (each once: pendMark). */
  private readonly pend: Int32Array;
  private readonly pendMark: Uint8Array;
  private nPend = 0;
  private readonly since: InputChanges;
  private readonly share: DeltaShare;
  /** The down projection's rows with stored entries (R). */
  private readonly outRows: Uint32Array;
  /** The most stored entries of a gate or up row. */
  private readonly maxRowNnz: number;
  /**
   * The entries: slot s holds its key's entries other than +0 as (place, bits) pairs at
   * keys[s·|C| …] (slotKeyNnz[s] of them; −1: the bits of all of C, when more than half are not
   * +0), its output's entries other than +0 on R as (index, bits) pairs at vals[s·|R| …]
   * (slotNnz[s]; −1: the bits of all of R, likewise), its hash and its key's count of
   * sign-bit-set entries. A hit reads only the pairs. The slabs grow by doubling up to the
   * table's size.
   */
  private keys: Uint32Array;
  private vals: Uint32Array;
  private readonly slotHash: Int32Array;
  private readonly slotNnz: Int32Array;
  private readonly slotKeyNnz: Int32Array;
  private readonly slotNeg: Int32Array;
  /**
   * The doorkeeper: per set, the hash of the last key a computed step did not remember. A key is
   * remembered at its second computed step (a key seen once is most often never seen again).
   */
  private readonly seen: Int32Array;
  private nSlots = 0;
  private slabSlots: number;
  /** Two ways per set: slot + 1 (0: empty); `evict[set]` names the way a new entry replaces. */
  private readonly table: Int32Array;
  private readonly evict: Uint8Array;
  private readonly sets: number;
  /** A list of indices that holds every one where out is not +0 (nz[0 … nNz); inNz[i]: i is listed). */
  private readonly nz: Int32Array;
  private readonly inNz: Uint8Array;
  private nNz = 0;
  /** The indices out's bits moved at since the last computed step (each once: dirtyMark). */
  private readonly dirty: Int32Array;
  private readonly dirtyMark: Uint8Array;
  private nDirty = 0;
  /** 1 at the indices of R; `outMark` (by `version`) marks an entry's indices while it is taken. */
  private readonly inR: Uint8Array;
  private readonly outMark: Int32Array;
  /** The down projection's state out was last computed from, at version outDsVersion (null: none). */
  private outDs: OutputSource | null = null;
  private outDsVersion = -1;
  /** Bit views of the input and of the computed output, and the vectors they view. */
  private xSrc: Float32Array | null = null;
  private xView: Uint32Array | null = null;
  private ySrc: Float32Array | null = null;
  private yView: Uint32Array | null = null;
  hits = 0;
  /** The current window's lookups and hits, and the steps left to rest (module comment). */
  private windowSteps = 0;
  private windowHits = 0;
  private restLeft = 0;
  private restLength = REST_MIN;

  /**
   * `capacity`: entries kept (rounded up to a power of two, at least 2). `heap`: the context's
   * wasm memory, where out, its change list and the changed-column list are carved when they fit
   * (the residual add and the matrices' pass over their changed columns then run there). `hashMask`
   * narrows the hash (tests: with few bits, different keys share a set and a hash, and only the
   * whole-key compare tells them apart).
   */
  constructor(
    readonly ctxMemos: ExecMemos, readonly siluForm: 'mul' | 'div', readonly weights: DenseMlpWeights, outRows: Uint32Array,
    readonly capacity: number, heap: WasmHeap | null = null, private readonly hashMask = -1,
  ) {
    const H = weights.gateProj.cols;
    const gate = weights.gateProj.csr;
    const up = weights.upProj.csr;
    this.storage = [gate, up, weights.downProj.csr];
    if (gate === undefined || up === undefined) throw new Error('FfnMemo: the gate and up projections need their CSR');
    this.keyAt = new Int32Array(H).fill(-1);
    const read = new Uint8Array(H);
    for (const c of [gate.colIdx, up.colIdx]) for (let i = 0; i < c.length; i++) read[c[i]] = 1;
    let n = 0;
    for (let c = 0; c < H; c++) if (read[c] === 1) this.keyAt[c] = n++;
    this.key = new Uint32Array(n);
    this.pendMark = new Uint8Array(H);
    this.share = { stamp: -1, since: null };
    this.outRows = outRows;
    this.maxRowNnz = Math.max(maxRowEntries(gate.rowPtr), maxRowEntries(up.rowPtr));
    const D = weights.downProj.rows;
    const a = heap?.carve({ out: [Float32Array, D], rows: [Int32Array, D], pend: [Int32Array, H] }) ?? null;
    this.out = a !== null ? a.out : new Float32Array(D);
    this.rows = a !== null ? a.rows : new Int32Array(D);
    this.pend = a !== null ? a.pend : new Int32Array(H);
    this.since = { prevStamp: -1, changed: this.pend, nChanged: 0 };
    this.outBits = bitsOf(this.out);
    this.nz = new Int32Array(D);
    this.inNz = new Uint8Array(D);
    this.dirty = new Int32Array(D);
    this.dirtyMark = new Uint8Array(D);
    this.inR = new Uint8Array(D);
    for (let t = 0; t < outRows.length; t++) this.inR[outRows[t]] = 1;
    this.outMark = new Int32Array(D);
    let slots = 2;
    while (slots < capacity) slots *= 2;
    this.sets = slots / 2;
    this.table = new Int32Array(slots);
    this.evict = new Uint8Array(this.sets);
    this.seen = new Int32Array(this.sets);
    this.slotHash = new Int32Array(slots);
    this.slotNnz = new Int32Array(slots);
    this.slotKeyNnz = new Int32Array(slots);
    this.slotNeg = new Int32Array(slots);
    this.slabSlots = Math.min(slots, 16);
    this.keys = new Uint32Array(this.slabSlots * n);
    this.vals = new Uint32Array(this.slabSlots * outRows.length);
  }

  /** Entries kept. */
  get size(): number {
    return this.nSlots;
  }

  /**
   * Whether the memo's entries are outputs of f in ctx at capacity `capacity`: the same numeric
   * context's memos and silu form, and the same matrices with the same storage (a matrix given
   * new storage is a new function).
   */
  holdsFor(ctx: ExecNumericContext, f: DenseMlpWeights, capacity: number): boolean {
    return this.weights === f && this.ctxMemos === ctx.memos && this.siluForm === ctx.siluForm && this.capacity === capacity
      && this.storage[0] === f.gateProj.csr && this.storage[1] === f.upProj.csr && this.storage[2] === f.downProj.csr;
  }

  /**
   * True when this step is one of a rest's (module comment; counted down): the caller computes it
   * without the memo, and the memo's next step takes its input whole.
   */
  rests(): boolean {
    if (this.restLeft === 0) return false;
    this.restLeft--;
    this.inStamp = -1;
    return true;
  }

  /** Counts a lookup (module comment, rests). */
  private count(hit: boolean): void {
    this.windowSteps++;
    if (hit) this.windowHits++;
    if (this.windowSteps < WINDOW) return;
    if (2 * this.windowHits < WINDOW) {
      this.restLeft = this.restLength;
      this.restLength = Math.min(2 * this.restLength, REST_MAX);
    } else this.restLength = REST_MIN;
    this.windowSteps = 0;
    this.windowHits = 0;
  }

  /**
   * Takes the step's input x (stamped `stamp`; `changes`: a superset of the columns where it
   * differs from the input stamped changes.prevStamp, or null) into the key and its hash, and
   * lists its changed columns among those since the last computed step (every listed one: the
   * matrices pass over a column whose bits they hold).
   */
  private observe(x: Float32Array, stamp: number, changes: InputChanges | null): void {
    // (a view kept while the caller passes the same vector: reading a typed array's buffer and
    // offset at every step costs builtin calls, docs/benchmarks.md "The executor's round 36")
    if (this.xSrc !== x) {
      this.xSrc = x;
      this.xView = new Uint32Array(x.buffer, x.byteOffset, this.pendMark.length);
      this.inStamp = -1;
    }
    const xb = this.xView as Uint32Array;
    const keyAt = this.keyAt;
    const key = this.key;
    if (changes === null || this.inStamp === -1 || changes.prevStamp !== this.inStamp) {
      // everything: the key and its hash from scratch; the matrices' next step scans every column
      let h = 0;
      let nnz = 0;
      let nonFinite = 0;
      for (let c = 0; c < xb.length; c++) {
        const b = xb[c];
        nonFinite |= (b & 0x7f800000) === 0x7f800000 ? 1 : 0;
        const p = keyAt[c];
        if (p < 0) continue;
        key[p] = b;
        h = (h + hashTerm(p, b)) | 0;
        nnz += b !== 0 ? 1 : 0;
      }
      this.hash = h;
      this.keyNnz = nnz;
      this.nonFinite = nonFinite !== 0;
      this.computedStamp = -1;
      this.clearPending();
    } else {
      let h = this.hash;
      let nnz = this.keyNnz;
      let nonFinite = 0;
      const list = changes.changed;
      const pend = this.pend;
      const pendMark = this.pendMark;
      let nPend = this.nPend;
      for (let t = 0; t < changes.nChanged; t++) {
        const c = list[t];
        const b = xb[c];
        nonFinite |= (b & 0x7f800000) === 0x7f800000 ? 1 : 0;
        const p = keyAt[c];
        if (p >= 0) {
          const o = key[p];
          if (o !== b) {
            key[p] = b;
            h = (h + hashTerm(p, b) - hashTerm(p, o)) | 0;
            nnz += (b !== 0 ? 1 : 0) - (o !== 0 ? 1 : 0);
          }
        }
        if (pendMark[c] === 0) { pendMark[c] = 1; pend[nPend++] = c; }
      }
      this.nPend = nPend;
      this.hash = h;
      this.keyNnz = nnz;
      if (nonFinite !== 0 || this.nonFinite) {
        // (a scan of every entry, while some is or was not finite: never on a compiled chip's run)
        nonFinite = 0;
        for (let c = 0; c < xb.length; c++) nonFinite |= (xb[c] & 0x7f800000) === 0x7f800000 ? 1 : 0;
        this.nonFinite = nonFinite !== 0;
      }
    }
    this.inStamp = stamp;
  }

  private clearPending(): void {
    for (let t = 0; t < this.nPend; t++) this.pendMark[this.pend[t]] = 0;
    this.nPend = 0;
  }

  /**
   * The slot whose key is the current input's and for which the precondition holds, or −1. The
   * input's entries off C may have any sign: at most H − |C| of them have the sign bit set, so
   * negTotal ≤ H − |C| + (the key's count), and maxRowNnz < |C| − (the key's count) gives
   * maxRowNnz < H − negTotal. (Otherwise the step is computed, which checks it exactly.)
   */
  private find(): number {
    if (this.nonFinite) return -1;
    const h = this.hash & this.hashMask;
    const set = h & (this.sets - 1);
    const k = this.key;
    const n = k.length;
    const keys = this.keys;
    for (let way = 0; way < 2; way++) {
      const s = this.table[2 * set + way] - 1;
      if (s < 0 || this.slotHash[s] !== h) continue;
      const at = s * n;
      const kn = this.slotKeyNnz[s];
      let same = true;
      if (kn < 0) {
        for (let i = 0; i < n; i++) if (keys[at + i] !== k[i]) { same = false; break; }
      } else if (kn !== this.keyNnz) same = false;
      else {
        // the stored entries other than +0, as many as the key has: equal there, +0 elsewhere
        for (let t = 0; t < kn; t++) if (k[keys[at + 2 * t]] !== keys[at + 2 * t + 1]) { same = false; break; }
      }
      if (!same || this.maxRowNnz >= n - this.slotNeg[s]) continue;
      this.evict[set] = 1 - way;
      return s;
    }
    return -1;
  }

  /**
   * Remembers the current key with the output (out, just computed), in its set's empty or
   * evicted way, when the doorkeeper has seen its hash; otherwise the doorkeeper takes the hash.
   */
  private insert(): void {
    const h = this.hash & this.hashMask;
    const set = h & (this.sets - 1);
    if (this.seen[set] !== h) { this.seen[set] = h; return; }
    const way = this.table[2 * set] === 0 ? 0 : this.table[2 * set + 1] === 0 ? 1 : this.evict[set];
    let s = this.table[2 * set + way] - 1;
    if (s < 0) {
      s = this.nSlots++;
      if (s === this.slabSlots) {
        this.slabSlots = Math.min(2 * this.slabSlots, this.table.length);
        const keys = new Uint32Array(this.slabSlots * this.key.length);
        keys.set(this.keys);
        this.keys = keys;
        const vals = new Uint32Array(this.slabSlots * this.outRows.length);
        vals.set(this.vals);
        this.vals = vals;
      }
      this.table[2 * set + way] = s + 1;
    }
    this.evict[set] = 1 - way;
    this.slotHash[s] = h;
    const k = this.key;
    const keys = this.keys;
    const kAt = s * k.length;
    let neg = 0;
    if (2 * this.keyNnz > k.length) {
      keys.set(k, kAt);
      for (let i = 0; i < k.length; i++) neg += k[i] >>> 31;
      this.slotKeyNnz[s] = -1;
    } else {
      let m = kAt;
      for (let i = 0; i < k.length; i++) if (k[i] !== 0) { keys[m++] = i; keys[m++] = k[i]; neg += k[i] >>> 31; }
      this.slotKeyNnz[s] = this.keyNnz;
    }
    this.slotNeg[s] = neg;
    // (out is y now, +0 off R: its entries other than +0 are those of the list nz that are not +0)
    const R = this.outRows;
    const vals = this.vals;
    const at = s * R.length;
    const ob = this.outBits;
    const nz = this.nz;
    let nnz = 0;
    for (let t = 0; t < this.nNz; t++) {
      const i = nz[t];
      if (ob[i] !== 0) nz[nnz++] = i; else this.inNz[i] = 0;
    }
    this.nNz = nnz;
    if (2 * nnz > R.length) {
      for (let t = 0; t < R.length; t++) vals[at + t] = ob[R[t]];
      this.slotNnz[s] = -1;
    } else {
      for (let t = 0; t < nnz; t++) { const i = nz[t]; vals[at + 2 * t] = i; vals[at + 2 * t + 1] = ob[i]; }
      this.slotNnz[s] = nnz;
    }
  }

  /**
   * out[i] ← the float32 of bits b: listed when its bits move (and i put on the list nz when b is
   * not +0); `lookup`: the step is a lookup's (i joins the dirty list).
   */
  private write(i: number, b: number, lookup: boolean): void {
    const ob = this.outBits;
    const o = ob[i];
    if (o === b) return;
    ob[i] = b;
    this.rows[this.nRows++] = i;
    if (lookup && this.dirtyMark[i] === 0) { this.dirtyMark[i] = 1; this.dirty[this.nDirty++] = i; }
    if (b !== 0 && this.inNz[i] === 0) { this.inNz[i] = 1; this.nz[this.nNz++] = i; }
  }

  /** The step's output from slot s: its entries, +0 elsewhere. */
  private takeSlot(s: number): void {
    const R = this.outRows;
    const vals = this.vals;
    const at = s * R.length;
    const nnz = this.slotNnz[s];
    const nz = this.nz;
    if (nnz < 0) {
      // every index of R, then those off R that are not +0 (after the non-incremental form)
      for (let t = 0; t < R.length; t++) this.write(R[t], vals[at + t], true);
      for (let t = 0; t < this.nNz; t++) if (this.inR[nz[t]] === 0) this.write(nz[t], 0, true);
    } else {
      // the entry's indices marked; the listed others cleared; then the entry written, and the
      // list nz its indices
      const mark = this.outMark;
      const stamp = this.version + 1;
      const inNz = this.inNz;
      for (let t = 0; t < nnz; t++) mark[vals[at + 2 * t]] = stamp;
      for (let t = 0; t < this.nNz; t++) {
        const i = nz[t];
        inNz[i] = 0;
        if (mark[i] !== stamp) this.write(i, 0, true);
      }
      this.nNz = 0;
      for (let t = 0; t < nnz; t++) {
        const i = vals[at + 2 * t];
        this.write(i, vals[at + 2 * t + 1], true); // (lists i on nz when its bits moved)
        if (inNz[i] === 0) { inNz[i] = 1; nz[this.nNz++] = i; }
      }
    }
  }

  /**
   * The step's output from the computed vector y (yb its bits; ds: the down projection's state it
   * is, or null). Where ds is the state out was last computed from, one version on, y can differ
   * from out only at ds's changed rows and at the indices a lookup wrote since (the dirty list).
   */
  private takeComputed(yb: Uint32Array, ds: OutputSource | null): void {
    if (ds !== null && this.outDs === ds && ds.version === this.outDsVersion + 1 && !ds.full) {
      const dr = ds.rows;
      for (let t = 0; t < ds.nRows; t++) { const i = dr[t]; this.write(i, yb[i], false); }
      const dirty = this.dirty;
      for (let t = 0; t < this.nDirty; t++) { const i = dirty[t]; this.write(i, yb[i], false); }
    } else {
      for (let i = 0; i < yb.length; i++) this.write(i, yb[i], false);
    }
    this.outDs = ds;
    this.outDsVersion = ds === null ? -1 : ds.version;
    for (let t = 0; t < this.nDirty; t++) this.dirtyMark[this.dirty[t]] = 0;
    this.nDirty = 0;
  }

  /**
   * One decode step of the layer's FFN at input x (stamped `stamp`, its changes against the
   * previous step's input or null): looked up, or computed by swiglu with the sites in `io` and
   * remembered. Returns out; `io.outSource` is this memo.
   */
  step(
    ctx: ExecNumericContext, x: Float32Array, stamp: number, changes: InputChanges | null, path: MatmulPath,
    stats: MatmulStats | undefined, outBuf: Float32Array, io: SwigluIo,
  ): Float32Array {
    let t0 = phaseStart();
    this.observe(x, stamp, changes);
    this.nRows = 0;
    const s = this.find();
    this.count(s >= 0);
    if (s >= 0) {
      this.takeSlot(s);
      this.hits++;
      if (stats) stats.ffnMemoHits++;
    } else {
      const share = this.share;
      share.stamp = stamp;
      if (this.computedStamp !== -1) {
        this.since.prevStamp = this.computedStamp;
        this.since.nChanged = this.nPend;
        share.since = this.since;
      } else share.since = null;
      io.share = share;
      t0 = phaseEnd('ffn.memo', t0);
      const y = swiglu(ctx, this.weights, x, path, stats, outBuf, io);
      t0 = phaseStart();
      const ds = io.outSource;
      this.computedStamp = stamp;
      this.clearPending();
      if (this.ySrc !== y) { this.ySrc = y; this.yView = bitsOf(y); }
      this.takeComputed(this.yView as Uint32Array, ds);
      // (the incremental form ran: its precondition held, so y is the key's output)
      if (ds !== null) this.insert();
    }
    this.version++;
    io.outSource = this;
    phaseEnd('ffn.memo', t0);
    return this.out;
  }
}

/** A decode layer's FFN: its SwiGLU's lookups (mlp.ts FfnSites), its memo once made, and its tracked steps so far. */
export interface TrackedFfn {
  sites: FfnSites;
  memo: FfnMemo | null;
  steps: number;
}

export function newTrackedFfn(): TrackedFfn {
  return { sites: newFfnSites(), memo: null, steps: 0 };
}

/**
 * A tracked decode step's dense FFN at the normalised input x (stamped `stamp`, `changes` as
 * FfnMemo.step takes them): through the layer's memo where ExecTuning.ffnMemoEntries > 0, the
 * layer has taken ExecTuning.ffnMemoFrom tracked steps and the incremental form can run (sparse
 * path, sequential order, CSR-only matrices), else swiglu with the layer's sites. Returns the
 * output; io.outSource names the versioned vector it is (or null).
 */
export function trackedFfn(
  ctx: ExecNumericContext, layer: TrackedFfn, f: DenseMlpWeights, x: Float32Array, stamp: number, changes: InputChanges | null,
  path: MatmulPath, stats: MatmulStats | undefined, outBuf: Float32Array, io: SwigluIo & { share: DeltaShare },
): Float32Array {
  io.sites = layer.sites;
  const cap = layer.steps++ >= ctx.tuning.ffnMemoFrom ? ctx.tuning.ffnMemoEntries : 0;
  const incremental = path === 'sparse' && ctx.order.kind === 'sequential' && !f.gateProj.dense && !f.upProj.dense && !f.downProj.dense
    && f.gateProj.csr !== undefined && f.upProj.csr !== undefined;
  if (cap > 0 && incremental) {
    let memo = layer.memo;
    if (memo === null || !memo.holdsFor(ctx, f, cap)) {
      memo = layer.memo = new FfnMemo(ctx.memos, ctx.siluForm, f, nonEmptyRowsOf(ctx.plans, f.downProj), cap, wasmHeapOf(ctx));
    }
    if (!memo.rests()) {
      const own = io.share;
      const y = memo.step(ctx, x, stamp, changes, path, stats, outBuf, io);
      io.share = own;
      return y;
    }
  } else layer.memo = null;
  io.share.stamp = stamp;
  io.share.since = changes;
  return swiglu(ctx, f, x, path, stats, outBuf, io);
}
