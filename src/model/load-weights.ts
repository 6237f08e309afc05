/**
 * TensorStore (a safetensors checkpoint) → ModelWeights in the family-neutral layout of
 * weights.ts.
 *
 * Checks that the store holds exactly the expected tensors (docs/host-architecture.md §2) with the right shapes, upcasts
 * every dtype to float32, and converts Qwen3-Next's fused `in_proj_qkvz` / `in_proj_ba` into the
 * split rows. `mode: 'sparse'` builds CSR matrices by streaming each tensor's bytes in chunks, so a
 * mostly-zero checkpoint of billions of elements loads without any dense matrix in memory.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ChipcError } from '../util/errors.ts';
import { openCheckpoint } from '../safetensors/checkpoint.ts';
import { openChipFile, type ChipFile, type HeldTensor } from '../chipfile/read.ts';
import { blockDataPos, blockMarks, blocksMeeting, type BlockTable } from '../chipfile/format.ts';
import { parseHfConfig } from './hf-config.ts';
import { isMoeLayer, type ModelConfig } from './config.ts';
import type { TensorStore } from '../safetensors/types.ts';
import {
  HUB_TEXT_PREFIX, MODEL_PREFIX, baDiskToNeutral, expectedTensors, gdnDims, isIgnoredTensor,
  qkvzDiskToNeutral,
} from './naming.ts';
import { sparsifyMatrix } from './random-weights.ts';
import { lazyRowMatrix } from './lazy-rows.ts';
import type {
  AttentionWeights, CsrMatrix, DenseMlpWeights, GdnWeights, LayerWeights, Matrix, ModelWeights,
  MoeMlpWeights,
} from './weights.ts';

export type LoadMode = 'dense' | 'sparse' | 'both';

export interface LoadOptions {
  mode: LoadMode;
  /** Bytes per streamed chunk in sparse mode (default 4 MiB). */
  chunkBytes?: number;
  /**
   * Sparse mode from a `.chip`, untied embeddings: hold the token embedding's stored bytes and
   * decode its rows on demand (model/lazy-rows.ts; its `csr` is built on first access) instead of
   * building its CSR now. For a reader that looks up a few rows — a chip run.
   */
  lazyEmbedding?: boolean;
}

const LIST_LIMIT = 20;

function listNames(title: string, names: string[]): string {
  const shown = names.slice(0, LIST_LIMIT).join(', ');
  const more = names.length > LIST_LIMIT ? `, … (${names.length - LIST_LIMIT} more)` : '';
  return `${names.length} ${title}: ${shown}${more}`;
}

/**
 * The text-model prefix the store uses: `model.` or, for Qwen3.5 hub checkpoints,
 * `model.language_model.`.
 */
export function detectTextPrefix(store: TensorStore, cfg: ModelConfig): string {
  if (cfg.family === 'qwen3_5_text' && !store.has(`${MODEL_PREFIX}embed_tokens.weight`)
    && store.names.some((n) => n.startsWith(HUB_TEXT_PREFIX))) {
    return HUB_TEXT_PREFIX;
  }
  return MODEL_PREFIX;
}

/**
 * Verify the store holds every expected tensor with its shape and nothing unexpected (ignoring
 * `mtp.*`, `model.visual.*` for Qwen3.5, and a redundant `lm_head.weight` of a tied model).
 * Throws one ChipcError (code weights.mismatch) listing missing, unexpected and mis-shaped tensors.
 * Returns the text prefix in use.
 */
export function checkCheckpointTensors(store: TensorStore, cfg: ModelConfig): string {
  const prefix = detectTextPrefix(store, cfg);
  const expected = expectedTensors(cfg, { prefix });
  const expectedNames = new Set(expected.map((t) => t.name));
  const missing: string[] = [];
  const misshaped: string[] = [];
  for (const t of expected) {
    if (!store.has(t.name)) { missing.push(t.name); continue; }
    const shape = store.info(t.name).shape;
    if (shape.length !== t.shape.length || shape.some((v, i) => v !== t.shape[i])) {
      misshaped.push(`${t.name} [${shape.join(', ')}] (expected [${t.shape.join(', ')}])`);
    }
  }
  const unexpected: string[] = [];
  for (const n of store.names) {
    if (expectedNames.has(n) || isIgnoredTensor(cfg, n)) continue;
    if (n === 'lm_head.weight' && cfg.tieWordEmbeddings) {
      // Tied models use embed_tokens; a stored copy is tolerated if it has the right shape.
      const shape = store.info(n).shape;
      if (shape.length !== 2 || shape[0] !== cfg.vocabSize || shape[1] !== cfg.hiddenSize) {
        misshaped.push(`${n} [${shape.join(', ')}] (expected [${cfg.vocabSize}, ${cfg.hiddenSize}])`);
      }
      continue;
    }
    unexpected.push(n);
  }
  if (missing.length + misshaped.length + unexpected.length > 0) {
    const parts: string[] = [];
    if (missing.length) parts.push(listNames('missing', missing));
    if (unexpected.length) parts.push(listNames('unexpected', unexpected));
    if (misshaped.length) parts.push(listNames('mis-shaped', misshaped));
    throw new ChipcError('weights.mismatch',
      `checkpoint does not match the ${cfg.family} config (${cfg.numLayers} layers, hidden ${cfg.hiddenSize}): ${parts.join('; ')}`);
  }
  return prefix;
}

// ---------------------------------------------------------------------------------------------
// Streaming non-zero collection

/**
 * Entry arrays that several CSRs decoded one after another share: each takes its entries from
 * `n` on, so consecutive matrices' `colIdx` and `values` are adjacent views of one buffer pair.
 * The executor stacks matrices that read the same input (exec/stack-rows.ts) and then walks the
 * stack's rows in one CSR; adjacent parts make that CSR a view instead of a copy, which a fresh
 * process otherwise wrote page by page in its first step.
 */
export interface EntryArena {
  readonly colIdx: Uint32Array;
  readonly values: Float32Array;
  /** Entries taken so far. */
  n: number;
}

/**
 * A CSR matrix built from the non-zero elements of a [rows, cols] tensor visited in ascending flat
 * index (so by disk row, then column): `rowStart[o]` is where disk row o's entries begin. The entry
 * arrays are sized up front (`capacity`, exact or an upper bound) and grown by doubling past it.
 */
class DiskRowCsr {
  readonly rowStart: Uint32Array;
  colIdx: Uint32Array;
  values: Float32Array;
  n = 0;
  /** The disk row of the last entry added (rows up to it have their start recorded). */
  row = -1;
  /** Whether the entry arrays are views of a shared EntryArena's (finish keeps them as views). */
  readonly shared: boolean;
  constructor(readonly rows: number, readonly cols: number, capacity = 1024, arena?: EntryArena) {
    this.rowStart = new Uint32Array(rows + 1);
    this.shared = arena !== undefined;
    if (arena !== undefined) {
      // the next `capacity` free entries of the arena (blockCsr's capacity is an upper bound: no growth)
      this.colIdx = arena.colIdx.subarray(arena.n, arena.n + capacity);
      this.values = arena.values.subarray(arena.n, arena.n + capacity);
      return;
    }
    const cap = Math.max(16, capacity);
    this.colIdx = new Uint32Array(cap);
    this.values = new Float32Array(cap);
  }
  /** Adds flat element i = o·cols + c with value v (i above every earlier one). */
  add(i: number, v: number): void {
    const o = Math.floor(i / this.cols);
    while (this.row < o) this.rowStart[++this.row] = this.n;
    if (this.n === this.values.length) this.grow();
    this.colIdx[this.n] = i - o * this.cols;
    this.values[this.n] = v;
    this.n++;
  }
  grow(): void {
    if (this.shared) throw new ChipcError('weights.checkpoint', 'a shared entry arena was sized too small');
    const cap = this.n * 2;
    const c = new Uint32Array(cap); c.set(this.colIdx); this.colIdx = c;
    const v = new Float32Array(cap); v.set(this.values); this.values = v;
  }
  /**
   * The CSR of the neutral rows: neutral row rowMap[o] is disk row o (o when null). Without a
   * row map the entry arrays are kept (as views) when at least half full: a copy writes fresh
   * memory page by page, which cost more than the slack (a chip's embedding: 4.7 M entries in
   * arrays sized 6.7 M from its blocks, which hold zeros between close entries).
   */
  finish(rowMap: ArrayLike<number> | null): CsrMatrix {
    const { rows, n, rowStart } = this;
    while (this.row < rows) rowStart[++this.row] = n;
    if (rowMap === null) {
      const keep = this.shared || 2 * n >= this.values.length;
      return keep
        ? { rowPtr: rowStart, colIdx: this.colIdx.subarray(0, n), values: this.values.subarray(0, n) }
        : { rowPtr: rowStart, colIdx: this.colIdx.slice(0, n), values: this.values.slice(0, n) };
    }
    const rowPtr = new Uint32Array(rows + 1);
    for (let o = 0; o < rows; o++) rowPtr[rowMap[o]! + 1] = rowStart[o + 1]! - rowStart[o]!;
    for (let r = 0; r < rows; r++) rowPtr[r + 1] += rowPtr[r]!;
    const colIdx = new Uint32Array(n);
    const values = new Float32Array(n);
    for (let o = 0; o < rows; o++) {
      const from = rowStart[o]!;
      const to = rowStart[o + 1]!;
      if (to === from) continue;
      colIdx.set(this.colIdx.subarray(from, to), rowPtr[rowMap[o]!]);
      values.set(this.values.subarray(from, to), rowPtr[rowMap[o]!]);
    }
    return { rowPtr, colIdx, values };
  }
}

/** float16 bits → float32 value (exact). */
function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 31) return mant === 0 ? sign * Infinity : NaN;
  return sign * (1024 + mant) * 2 ** (exp - 25);
}

const STREAM_ELEM_BYTES: Record<string, number> = { F32: 4, BF16: 2, F16: 2 };

/**
 * A store that knows where a tensor's non-zero bytes are (a `.chip` reader): its blocks — byte
 * ranges of the tensor's data, ascending and disjoint, zero everywhere outside them — and their
 * bytes, concatenated in block order (block k's at blockDataPos(table, k): marks[0] for block 0,
 * each next block's right after).
 */
export interface BlockSource {
  blocks(name: string): BlockTable;
  readBlockData(name: string, from: number, to: number): Uint8Array;
}

function isBlockSource(store: TensorStore): store is TensorStore & BlockSource {
  const s = store as Partial<BlockSource>;
  return typeof s.blocks === 'function' && typeof s.readBlockData === 'function';
}

/**
 * Call `visit(flatIndex, value)` for every element of the tensor that is not ±0 (NaN is visited),
 * in ascending flat index. F32/BF16/F16 are decoded from streamed chunks — or, from a store that
 * lists its non-zero blocks (BlockSource), from the blocks' bytes only: a compiled chip's
 * embedding and LM head are ≈ 99.9 % zeros (hundreds of MB scanned otherwise). Any other dtype is
 * read whole through `readF32` (those are not used for large weights). Exported for tests.
 */
export function forEachNonZero(store: TensorStore, name: string, chunkBytes: number,
  visit: (index: number, value: number) => void): void {
  const info = store.info(name);
  const elem = STREAM_ELEM_BYTES[info.dtype];
  if (elem === undefined) {
    const data = store.readF32(name);
    for (let i = 0; i < data.length; i++) if (data[i] !== 0) visit(i, data[i]);
    return;
  }
  if (isBlockSource(store)) {
    // the block decoder of nonZeroCsr, the tensor as rows of 2^30 elements
    const rowLength = 2 ** 30;
    const rows = Math.max(1, Math.ceil(info.numel / rowLength));
    const { rowPtr, colIdx, values } = blockCsr(store, name, info.dtype, elem, chunkBytes, rows, rowLength, null);
    for (let r = 0; r < rows; r++) for (let k = rowPtr[r]!; k < rowPtr[r + 1]!; k++) visit(r * rowLength + colIdx[k]!, values[k]!);
    return;
  }
  const bits = new Uint32Array(1);
  const asF32 = new Float32Array(bits.buffer);
  let index = 0;
  let carry: Uint8Array = new Uint8Array(0);
  const step = Math.max(elem, chunkBytes - (chunkBytes % elem));
  for (const chunk of store.chunks(name, step)) {
    let buf = chunk;
    if (carry.length > 0) {
      buf = new Uint8Array(carry.length + chunk.length);
      buf.set(carry); buf.set(chunk, carry.length);
    }
    const whole = buf.length - (buf.length % elem);
    carry = buf.slice(whole);
    let body = buf.subarray(0, whole);
    if (body.byteOffset % elem !== 0) body = body.slice();
    const n = whole / elem;
    if (info.dtype === 'F32') {
      const f = new Float32Array(body.buffer, body.byteOffset, n);
      for (let i = 0; i < n; i++) if (f[i] !== 0) visit(index + i, f[i]);
    } else if (info.dtype === 'BF16') {
      const u = new Uint16Array(body.buffer, body.byteOffset, n);
      for (let i = 0; i < n; i++) {
        if ((u[i] & 0x7fff) === 0) continue;
        bits[0] = u[i] << 16;
        visit(index + i, asF32[0]);
      }
    } else {
      const u = new Uint16Array(body.buffer, body.byteOffset, n);
      for (let i = 0; i < n; i++) if ((u[i] & 0x7fff) !== 0) visit(index + i, f16ToF32(u[i]));
    }
    index += n;
  }
  if (carry.length !== 0 || index !== info.numel) {
    throw new ChipcError('weights.checkpoint', `tensor ${name}: streamed ${index} elements (+${carry.length} stray bytes), expected ${info.numel}`);
  }
}

/**
 * The CSR of a [rows, cols] tensor's non-zero elements (forEachNonZero's elements and values),
 * neutral row rowMap[o] holding the tensor's row o (o when null). From a BlockSource (a `.chip`)
 * the blocks are decoded in one loop straight into entry arrays sized once from the block lengths
 * (blockCsr): a closure call per element, the arrays' doublings and a (row, col, value) triple list
 * sorted afterwards were most of opening a saved chip. Exported for tests.
 */
export function nonZeroCsr(store: TensorStore, name: string, chunkBytes: number, rows: number, cols: number,
  rowMap: ArrayLike<number> | null): CsrMatrix {
  const info = store.info(name);
  const elem = STREAM_ELEM_BYTES[info.dtype];
  if (isBlockSource(store) && elem !== undefined) return blockCsr(store, name, info.dtype, elem, chunkBytes, rows, cols, rowMap);
  const m = new DiskRowCsr(rows, cols);
  forEachNonZero(store, name, chunkBytes, (i, v) => m.add(i, v));
  return m.finish(rowMap);
}

/**
 * nonZeroCsr from a BlockSource (F32, BF16 or F16 elements of `elem` bytes): each element that
 * meets a block is assembled from the block's bytes (bytes outside every block are zero; an
 * element split between two blocks gets its bytes from both) and stored unless ±0 (NaN is kept).
 * Block data is read in runs of blocks of at most `chunkBytes` (one block at least).
 */
function blockCsr(store: BlockSource, name: string, dtype: string, elem: number, chunkBytes: number, rows: number, cols: number,
  rowMap: ArrayLike<number> | null, arena?: EntryArena): CsrMatrix {
  const { starts, lengths, marks } = store.blocks(name);
  const e4 = elem === 4;
  const f16 = dtype === 'F16';
  const capacity = blockCapacity(store, name, elem);
  const m = new DiskRowCsr(rows, cols, capacity, arena);
  const { rowStart, colIdx: tc, values: tv } = m;
  let row = -1;
  const bits = new Uint32Array(1);
  const asF32 = new Float32Array(bits.buffer);
  let n = 0;
  // element e from its little-endian bits, unless ±0 (NaN is kept) — the path of the elements
  // that straddle a block edge (assembled from both blocks)
  const put = (e: number, raw: number): void => {
    let v: number;
    if (f16) {
      if ((raw & 0x7fff) === 0) return;
      v = f16ToF32(raw);
    } else {
      bits[0] = e4 ? raw : raw << 16;
      if (asF32[0] === 0) return;
      v = asF32[0]!;
    }
    const o = Math.floor(e / cols);
    while (row < o) rowStart[++row] = n;
    tc[n] = e - o * cols;
    tv[n] = v;
    n++;
  };
  let pending = -1;
  let raw = 0;
  // block k's offset in the block data: the blocks' bytes are contiguous, from marks[0]
  let base = marks[0]!;
  for (let k = 0; k < starts.length;) {
    let k1 = k + 1;
    let stored = lengths[k]!;
    while (k1 < starts.length && stored + lengths[k1]! <= chunkBytes) stored += lengths[k1++]!;
    const data = store.readBlockData(name, base, base + stored);
    let at = base; // block b's offset in the block data
    for (let b = k; b < k1; b++) {
      const s = starts[b]!;
      const end = s + lengths[b]!;
      const off = at - base - s; // data[off + pos] is the tensor's byte pos, for pos in [s, end)
      at += lengths[b]!;
      const eFirst = Math.floor(s / elem);
      const eEnd = Math.ceil(end / elem);
      for (let e = eFirst; e < eEnd; e++) {
        const pos0 = e * elem;
        if (pos0 < s || pos0 + elem > end) {
          if (e !== pending) {
            if (pending >= 0) put(pending, raw);
            pending = e;
            raw = 0;
          }
          for (let j = 0; j < elem; j++) {
            const pos = pos0 + j;
            if (pos >= s && pos < end) raw = (raw | (data[off + pos]! << (8 * j))) >>> 0;
          }
          continue;
        }
        if (pending >= 0) { put(pending, raw); pending = -1; }
        // wholly inside this block (nearly every element): put's steps, inline on this hot path
        const at = off + pos0;
        let v: number;
        if (e4) {
          bits[0] = data[at]! | (data[at + 1]! << 8) | (data[at + 2]! << 16) | (data[at + 3]! << 24);
          v = asF32[0]!;
          if (v === 0) continue;
        } else {
          const h = data[at]! | (data[at + 1]! << 8);
          if ((h & 0x7fff) === 0) continue;
          if (f16) v = f16ToF32(h);
          else {
            bits[0] = h << 16;
            v = asF32[0]!;
          }
        }
        const o = Math.floor(e / cols);
        while (row < o) rowStart[++row] = n;
        tc[n] = e - o * cols;
        tv[n] = v;
        n++;
      }
    }
    base += stored;
    k = k1;
  }
  if (pending >= 0) put(pending, raw);
  // (capacity counts every element that meets a block, once per block it meets: n cannot pass it)
  if (n > tv.length) throw new ChipcError('weights.checkpoint', `tensor ${name}: ${n} non-zero elements in blocks sized for ${tv.length}`);
  m.n = n;
  m.row = row;
  const csr = m.finish(rowMap);
  if (arena !== undefined) arena.n += n;
  return csr;
}

/**
 * Every element of the tensor that meets one of its blocks, once per block it meets: an upper
 * bound of its stored (non-zero) elements.
 */
function blockCapacity(store: BlockSource, name: string, elem: number): number {
  const { starts, lengths } = store.blocks(name);
  let capacity = 0;
  for (let k = 0; k < starts.length; k++) capacity += Math.ceil((starts[k]! + lengths[k]!) / elem) - Math.floor(starts[k]! / elem);
  return capacity;
}

function canHold(store: TensorStore): store is TensorStore & { holdTensor(name: string): HeldTensor } {
  return typeof (store as { holdTensor?: unknown }).holdTensor === 'function';
}

/**
 * A [rows, cols] tensor held in memory as a matrix read row by row (lazyRowMatrix): a row is
 * blockCsr over the blocks that meet it, the whole CSR blockCsr over all of them — each element
 * decoded as nonZeroCsr decodes it from the file. ChipcError weights.mismatch when the tensor is
 * not rows × cols F32, BF16 or F16 elements. Exported for tests.
 */
export function heldRows(held: HeldTensor, rows: number, cols: number, chunkBytes: number): Matrix {
  const { dtype, numel } = held.info;
  const elem = STREAM_ELEM_BYTES[dtype];
  if (elem === undefined || numel !== rows * cols) {
    throw new ChipcError('weights.mismatch', `tensor ${held.name} (${dtype}, ${numel} elements) cannot be read as ${rows}×${cols} F32, BF16 or F16 rows`);
  }
  // (inflated now: a run's first thousand tokens met most frames of a chip's embedding)
  held.inflateFrames();
  const table = held.table;
  const rowBytes = cols * elem;
  const readRow = (r: number): CsrMatrix => {
    // the blocks that meet row r, cut to it and placed from its start (rows start on an element)
    const s = r * rowBytes;
    const [lo, last] = blocksMeeting(table, s, s + rowBytes);
    const n = last - lo;
    const starts = new Float64Array(n);
    const lengths = new Float64Array(n);
    // (the row's blocks are contiguous in the block data: the first one's bytes, cut to the row, on)
    const first = n === 0 ? 0 : blockDataPos(table, lo) + (Math.max(s, table.starts[lo]!) - table.starts[lo]!);
    for (let k = 0; k < n; k++) {
      const bs = Math.max(s, table.starts[lo + k]!);
      lengths[k] = Math.min(s + rowBytes, table.starts[lo + k]! + table.lengths[lo + k]!) - bs;
      starts[k] = bs - s;
    }
    const rowTable: BlockTable = { starts, lengths, marks: blockMarks(lengths, n, first) };
    const row: BlockSource = { blocks: () => rowTable, readBlockData: (name, from, to) => held.readBlockData(name, from, to) };
    return blockCsr(row, held.name, dtype, elem, chunkBytes, 1, cols, null);
  };
  return lazyRowMatrix(rows, cols, readRow, () => blockCsr(held, held.name, dtype, elem, chunkBytes, rows, cols, null));
}

/** Rows [from, to) of a CSR matrix as its own CSR. */
function csrRows(csr: CsrMatrix, from: number, to: number): CsrMatrix {
  const base = csr.rowPtr[from];
  const rowPtr = new Uint32Array(to - from + 1);
  for (let r = from; r <= to; r++) rowPtr[r - from] = csr.rowPtr[r] - base;
  const end = csr.rowPtr[to];
  return { rowPtr, colIdx: csr.colIdx.slice(base, end), values: csr.values.slice(base, end) };
}

// ---------------------------------------------------------------------------------------------

/**
 * Load the checkpoint in `store` as ModelWeights of `cfg`. Every expected tensor must be present
 * with the expected shape (see checkCheckpointTensors). Tied models get lmHead === embedTokens.
 */
export function loadModelWeights(store: TensorStore, cfg: ModelConfig, opts: LoadOptions): ModelWeights {
  const mode = opts.mode;
  if (mode !== 'dense' && mode !== 'sparse' && mode !== 'both') {
    throw new ChipcError('weights.argument', `load mode must be dense, sparse or both, got ${String(mode)}`);
  }
  const chunkBytes = opts.chunkBytes ?? 4 << 20;
  const prefix = checkCheckpointTensors(store, cfg);
  const full = (n: string): string => n.startsWith(MODEL_PREFIX) ? prefix + n.slice(MODEL_PREFIX.length) : n;
  const H = cfg.hiddenSize;

  const vector = (name: string): Float32Array => store.readF32(full(name));

  /**
   * Load a [rows, cols] tensor whose on-disk row o is neutral row rowMap[o] (identity when null),
   * then split the neutral rows at `splits` (cumulative row counts) into separate matrices.
   */
  const matrices = (name: string, rows: number, cols: number, rowMap: Uint32Array | null,
    splits: number[]): Matrix[] => {
    const tensor = full(name);
    const bounds = [0, ...splits];
    if (mode === 'sparse') {
      const csr = nonZeroCsr(store, tensor, chunkBytes, rows, cols, rowMap);
      if (splits.length === 1) return [{ rows, cols, csr }];
      return splits.map((end, s) => ({ rows: end - bounds[s], cols, csr: csrRows(csr, bounds[s], end) }));
    }
    const disk = store.readF32(tensor);
    let out: Matrix[];
    if (rowMap === null && splits.length === 1) {
      out = [{ rows, cols, dense: disk }];
    } else {
      const neutral = new Float32Array(rows * cols);
      for (let o = 0; o < rows; o++) {
        const dst = rowMap === null ? o : rowMap[o];
        neutral.set(disk.subarray(o * cols, (o + 1) * cols), dst * cols);
      }
      out = splits.map((end, s) => ({
        rows: end - bounds[s], cols, dense: neutral.slice(bounds[s] * cols, end * cols),
      }));
    }
    return mode === 'both' ? out.map(sparsifyMatrix) : out;
  };
  const matrix = (name: string, rows: number, cols: number): Matrix =>
    matrices(name, rows, cols, null, [rows])[0];
  /**
   * Matrices [rows_i, cols] that the executor stacks (exec/stack-rows.ts), in its order: in sparse
   * mode from a `.chip`, decoded into one EntryArena, so their entry arrays are adjacent views and
   * the stack is a view too; otherwise one `matrix` each.
   */
  const rowGroup = (parts: readonly (readonly [name: string, rows: number])[], cols: number): Matrix[] => {
    const names = parts.map(([n]) => full(n));
    const dtypes = names.map((n) => store.info(n).dtype);
    const elems = dtypes.map((t) => STREAM_ELEM_BYTES[t]);
    if (mode !== 'sparse' || !isBlockSource(store) || elems.some((e) => e === undefined)) {
      return parts.map(([n, rows]) => matrix(n, rows, cols));
    }
    let capacity = 0;
    for (let i = 0; i < names.length; i++) capacity += blockCapacity(store, names[i], elems[i]!);
    const arena: EntryArena = { colIdx: new Uint32Array(capacity), values: new Float32Array(capacity), n: 0 };
    return parts.map(([, rows], i) => ({
      rows, cols, csr: blockCsr(store, names[i], dtypes[i], elems[i]!, chunkBytes, rows, cols, null, arena),
    }));
  };

  const layers: LayerWeights[] = [];
  for (let i = 0; i < cfg.numLayers; i++) {
    const p = `${MODEL_PREFIX}layers.${i}.`;
    let mixer: GdnWeights | AttentionWeights;
    if (cfg.layerTypes[i] === 'linear_attention') {
      const d = gdnDims(cfg);
      const la = `${p}linear_attn.`;
      let inProjQkv: Matrix, inProjZ: Matrix, inProjB: Matrix, inProjA: Matrix;
      if (cfg.family === 'qwen3_next') {
        [inProjQkv, inProjZ] = matrices(`${la}in_proj_qkvz.weight`, d.convDim + d.valueDim, H,
          qkvzDiskToNeutral(cfg), [d.convDim, d.convDim + d.valueDim]);
        [inProjB, inProjA] = matrices(`${la}in_proj_ba.weight`, 2 * d.hv, H,
          baDiskToNeutral(cfg), [d.hv, 2 * d.hv]);
      } else {
        // (exec/gdn-token.ts inProjParts: the order the executor stacks them in)
        [inProjQkv, inProjZ, inProjB, inProjA] = rowGroup([
          [`${la}in_proj_qkv.weight`, d.convDim], [`${la}in_proj_z.weight`, d.valueDim],
          [`${la}in_proj_b.weight`, d.hv], [`${la}in_proj_a.weight`, d.hv],
        ], H);
      }
      mixer = {
        kind: 'linear_attention',
        inProjQkv, inProjZ, inProjB, inProjA,
        conv1d: vector(`${la}conv1d.weight`),
        aLog: vector(`${la}A_log`),
        dtBias: vector(`${la}dt_bias`),
        norm: vector(`${la}norm.weight`),
        outProj: matrix(`${la}out_proj.weight`, H, d.valueDim),
      };
    } else {
      const D = cfg.headDim;
      const sa = `${p}self_attn.`;
      mixer = {
        kind: 'full_attention',
        qProj: matrix(`${sa}q_proj.weight`, cfg.numAttentionHeads * D * 2, H),
        kProj: matrix(`${sa}k_proj.weight`, cfg.numKeyValueHeads * D, H),
        vProj: matrix(`${sa}v_proj.weight`, cfg.numKeyValueHeads * D, H),
        oProj: matrix(`${sa}o_proj.weight`, H, cfg.numAttentionHeads * D),
        qNorm: vector(`${sa}q_norm.weight`),
        kNorm: vector(`${sa}k_norm.weight`),
      };
    }
    const mp = `${p}mlp.`;
    let mlp: DenseMlpWeights | MoeMlpWeights;
    if (isMoeLayer(cfg, i)) {
      const m = cfg.moe!;
      const ffn = (pre: string, inner: number) => {
        const [gateProj, upProj] = rowGroup([[`${pre}gate_proj.weight`, inner], [`${pre}up_proj.weight`, inner]], H);
        return { gateProj, upProj, downProj: matrix(`${pre}down_proj.weight`, H, inner) };
      };
      mlp = {
        kind: 'moe',
        gate: matrix(`${mp}gate.weight`, m.numExperts, H),
        experts: Array.from({ length: m.numExperts }, (_, e) => ffn(`${mp}experts.${e}.`, m.moeIntermediateSize)),
        sharedExpert: ffn(`${mp}shared_expert.`, m.sharedExpertIntermediateSize),
        sharedExpertGate: matrix(`${mp}shared_expert_gate.weight`, 1, H),
      };
    } else {
      // (exec/mlp.ts gateUpParts: the order the executor stacks them in)
      const [gateProj, upProj] = rowGroup([
        [`${mp}gate_proj.weight`, cfg.intermediateSize], [`${mp}up_proj.weight`, cfg.intermediateSize],
      ], H);
      mlp = { kind: 'dense', gateProj, upProj, downProj: matrix(`${mp}down_proj.weight`, H, cfg.intermediateSize) };
    }
    layers.push({
      inputLayernorm: vector(`${p}input_layernorm.weight`),
      postAttentionLayernorm: vector(`${p}post_attention_layernorm.weight`),
      mixer,
      mlp,
    });
  }
  const embedName = full(`${MODEL_PREFIX}embed_tokens.weight`);
  const embedTokens = mode === 'sparse' && opts.lazyEmbedding === true && !cfg.tieWordEmbeddings && canHold(store)
    && STREAM_ELEM_BYTES[store.info(embedName).dtype] !== undefined
    ? heldRows(store.holdTensor(embedName), cfg.vocabSize, H, chunkBytes)
    : matrix(`${MODEL_PREFIX}embed_tokens.weight`, cfg.vocabSize, H);
  return {
    config: cfg,
    embedTokens,
    layers,
    norm: vector(`${MODEL_PREFIX}norm.weight`),
    lmHead: cfg.tieWordEmbeddings ? embedTokens : matrix('lm_head.weight', cfg.vocabSize, H),
  };
}

/**
 * Open a checkpoint written by saveModel (or any HF text checkpoint of either family): a
 * directory, or a `.chip` file (the compact sparse form, docs/chip-file.md, whose embedded
 * `config.json` is used; any regular file is opened as one). Parse the config, load the tensors, close the files.
 */
export function loadModel(dir: string, opts: LoadOptions): ModelWeights {
  if (fs.statSync(dir, { throwIfNoEntry: false })?.isFile()) {
    const chip = openChipFile(dir);
    try {
      return loadModelFromChipFile(chip, dir, opts);
    } finally {
      chip.close();
    }
  }
  const configPath = path.join(dir, 'config.json');
  let text: string;
  try {
    text = fs.readFileSync(configPath, 'utf8');
  } catch (e) {
    throw new ChipcError('target.config', `cannot read ${configPath}: ${(e as Error).message}`, { cause: e });
  }
  const cfg = parseConfigText(text, configPath);
  const store = openCheckpoint(dir);
  try {
    return loadModelWeights(store, cfg, opts);
  } finally {
    store.close();
  }
}

/** loadModel of an open `.chip` file (left open); `label` names it in errors. */
export function loadModelFromChipFile(chip: ChipFile, label: string, opts: LoadOptions): ModelWeights {
  if (!chip.hasFile('config.json')) throw new ChipcError('target.config', `${label}: the .chip file holds no config.json`);
  const cfg = parseConfigText(new TextDecoder().decode(chip.readFile('config.json')), `${label}: config.json`);
  return loadModelWeights(chip, cfg, opts);
}

function parseConfigText(text: string, label: string): ModelConfig {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new ChipcError('target.config', `cannot read ${label}: ${(e as Error).message}`, { cause: e });
  }
  return parseHfConfig(json);
}
