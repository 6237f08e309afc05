/**
 * Opening a `.chip` file (docs/chip-file.md): the whole file is checked on open (magic, version,
 * reserved field, sizes, the SHA-256 over every preceding byte, the manifest, every stored
 * safetensors header against the manifest, every frame index and block table), then it serves as
 * a TensorStore: tensor bytes are rebuilt on demand from the blocks (zeros elsewhere) with
 * positional reads; brotli frames (versions 2 and 3) are inflated only where a range meets them
 * and kept in a bounded LRU cache.
 */
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import { ChipcError } from '../util/errors.ts';
import type { TensorInfo, TensorStore } from '../safetensors/types.ts';
import { compareCodePoints, DEFAULT_CHUNK_BYTES, parseHeader } from '../safetensors/reader.ts';
import { decodeToF32 } from '../safetensors/dtype.ts';
import {
  blockDataPos, blocksMeeting, CHECKSUM_BYTES, CHIP_MAGIC, CHIP_VERSIONS_READ, decodeBlockTable, DEFAULT_FRAME_SIZE, MAX_MANIFEST_BYTES, PREFIX_BYTES, validateManifest,
  type BlockTable, type ChipFileEntry, type ChipManifest, type ChipSafetensorsFile, type ChipTensor,
} from './format.ts';
import { decodeFrameIndex, FrameCache, inflateFrame, type FrameList } from './codec.ts';
import { readExactly } from './io.ts';

/** Default bound on the inflated frames a ChipFile keeps (decoded bytes). */
export const DEFAULT_FRAME_CACHE_BYTES = 64 << 20;

export interface OpenChipOptions {
  /** Bound on the cache of inflated frames, in decoded bytes (default 64 MiB; 0 disables it). */
  frameCacheBytes?: number;
}

interface TensorEntry {
  tensor: ChipTensor;
  info: TensorInfo;
  table: BlockTable;
  /** Codec br: where the block-data frames are; null for codec none. */
  dataFrames: FrameList | null;
}

/**
 * Decoded bytes [from, to) of a segment of `size` decoded bytes stored at payload offset `at`:
 * verbatim (frames null) or as frames of `frameSize` (verbatim frames read in place, brotli
 * frames inflated through `inflate`).
 */
function readSegment(read: (offset: number, length: number) => Uint8Array, at: number, size: number, frames: FrameList | null,
  frameSize: number, from: number, to: number, inflate: (k: number, stored: Uint8Array, decoded: number) => Uint8Array): Uint8Array {
  if (frames === null) return read(at + from, to - from);
  if (to <= from) return new Uint8Array(0);
  const out = new Uint8Array(to - from);
  for (let k = Math.floor(from / frameSize); k * frameSize < to; k++) {
    const f0 = k * frameSize;
    const decoded = Math.min(frameSize, size - f0);
    const s = Math.max(from, f0);
    const e = Math.min(to, f0 + decoded);
    if (frames.stored[k] === decoded) {
      out.set(read(frames.offsets[k] + (s - f0), e - s), s - from);
    } else {
      const frame = inflate(k, read(frames.offsets[k], frames.stored[k]), decoded);
      out.set(frame.subarray(s - f0, e - f0), s - from);
    }
  }
  return out;
}

/** An open, fully validated `.chip` file; a TensorStore over the checkpoint it stands for. */
export class ChipFile implements TensorStore {
  readonly names: readonly string[];
  readonly metadata: Readonly<Record<string, string>>;
  /** Absolute file position of the payload. */
  readonly payloadStart: number;
  private readonly byName = new Map<string, TensorEntry>();
  private readonly files = new Map<string, ChipFileEntry>();
  private readonly cache: FrameCache;
  private closed = false;

  constructor(readonly path: string, private readonly fd: number, readonly manifest: ChipManifest, payloadStart: number,
    metadata: Record<string, string>, entries: TensorEntry[], private readonly rawFrames: ReadonlyMap<string, FrameList>,
    frameCacheBytes: number = DEFAULT_FRAME_CACHE_BYTES) {
    this.payloadStart = payloadStart;
    this.cache = new FrameCache(frameCacheBytes);
    for (const f of manifest.files) this.files.set(f.name, f);
    for (const e of entries) this.byName.set(e.info.name, e);
    this.names = Object.freeze([...this.byName.keys()].sort(compareCodePoints));
    this.metadata = Object.freeze({ ...metadata });
  }

  /** File names of the directory this file stands for, sorted. */
  fileNames(): string[] {
    return this.manifest.files.map((f) => f.name);
  }

  hasFile(name: string): boolean {
    return this.files.has(name);
  }

  /** The bytes of a stored verbatim file (config.json, the index, chipc-manifest.json, …). */
  readFile(name: string): Uint8Array {
    const f = this.rawFile(name);
    if (f.codec === 'none') return this.readPayload(f.data[0], f.data[1]);
    return readSegment((o, l) => this.readPayload(o, l), f.data[0], f.size, this.rawFrames.get(name)!, this.manifest.frameSize, 0, f.size,
      (k, stored, decoded) => inflateFrame(stored, decoded, `${this.path}: file ${JSON.stringify(name)} frame ${k}`));
  }

  /**
   * The bytes of a stored verbatim file in order, in pieces: its decoded frames (brotli files),
   * or reads of at most a frame's size. A reader that needs only the start stops early, and the
   * frames after it are never read or inflated.
   */
  *readFilePieces(name: string): Iterable<Uint8Array> {
    const f = this.rawFile(name);
    if (f.codec === 'none') {
      const step = this.manifest.frameSize > 0 ? this.manifest.frameSize : DEFAULT_FRAME_SIZE;
      for (let at = 0; at < f.data[1]; at += step) yield this.readPayload(f.data[0] + at, Math.min(step, f.data[1] - at));
      return;
    }
    const frames = this.rawFrames.get(name)!;
    for (let k = 0; k < frames.stored.length; k++) {
      const decoded = Math.min(this.manifest.frameSize, f.size - k * this.manifest.frameSize);
      const stored = this.readPayload(frames.offsets[k]!, frames.stored[k]!);
      // (a stored length equal to the decoded one means a verbatim frame: codec.ts)
      yield frames.stored[k] === decoded ? stored : inflateFrame(stored, decoded, `${this.path}: file ${JSON.stringify(name)} frame ${k}`);
    }
  }

  /** The manifest entry of a stored verbatim file; ChipcError chipfile.no-file for a missing name or a safetensors file. */
  private rawFile(name: string): ChipFileEntry & { kind: 'raw' } {
    const f = this.files.get(name);
    if (f === undefined) throw new ChipcError('chipfile.no-file', `${this.path}: holds no file named ${JSON.stringify(name)}`);
    if (f.kind !== 'raw') throw new ChipcError('chipfile.no-file', `${this.path}: ${name} is a safetensors file; read its tensors`);
    return f;
  }

  /** `length` bytes at payload offset `offset`. */
  readPayload(offset: number, length: number): Uint8Array {
    this.checkOpen();
    return readExactly(this.fd, this.payloadStart + offset, length, this.path);
  }

  /**
   * Bytes [from, to) of tensor `name`'s block data (all its blocks' bytes concatenated, decoded):
   * a positional read, or the brotli frames the range meets, inflated (through the cache).
   */
  readBlockData(name: string, from: number, to: number): Uint8Array {
    this.checkOpen();
    const { tensor, dataFrames } = this.get(name);
    if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || from < 0 || to < from || to > tensor.dataSize) {
      throw new ChipcError('safetensors.range', `${this.path}: block data range [${from}, ${to}) is outside tensor ${JSON.stringify(name)}'s ${tensor.dataSize} bytes`);
    }
    const label = `${this.path}: tensor ${JSON.stringify(name)} block data`;
    return readSegment((o, l) => this.readPayload(o, l), tensor.data[0], tensor.dataSize, dataFrames, this.manifest.frameSize, from, to,
      (k, stored, decoded) => {
        const key = `${name}\0${k}`;
        const hit = this.cache.get(key);
        if (hit !== undefined) return hit;
        const frame = inflateFrame(stored, decoded, `${label} frame ${k}`);
        this.cache.set(key, frame);
        return frame;
      });
  }

  /** The decoded block table of tensor `name`. */
  blocks(name: string): BlockTable {
    return this.get(name).table;
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  info(name: string): TensorInfo {
    const t = this.get(name).info;
    return { ...t, shape: [...t.shape], dataOffsets: [t.dataOffsets[0], t.dataOffsets[1]] };
  }

  /** Bytes [start, end) of the tensor: zeros, with the blocks that meet the range copied in. */
  readBytes(name: string, start?: number, end?: number): Uint8Array {
    this.checkOpen();
    const { info, table } = this.get(name);
    return blockRangeBytes(table, info.byteLength, start, end, `${this.path}: tensor ${JSON.stringify(name)}`,
      (from, to) => this.readBlockData(name, from, to));
  }

  /**
   * Tensor `name` held in memory (HeldTensor): its stored block data is read now, in one read, and
   * stays readable after this file is closed.
   */
  holdTensor(name: string, frameCacheBytes: number = HELD_FRAME_CACHE_BYTES): HeldTensor {
    this.checkOpen();
    const { tensor, info, table, dataFrames } = this.get(name);
    // the payload range of the stored data: the frames (br) or the bytes themselves (none)
    let lo = tensor.data[0];
    let hi = tensor.data[0] + tensor.dataSize;
    if (dataFrames !== null) {
      lo = Infinity;
      hi = -Infinity;
      for (let k = 0; k < dataFrames.offsets.length; k++) {
        lo = Math.min(lo, dataFrames.offsets[k]!);
        hi = Math.max(hi, dataFrames.offsets[k]! + dataFrames.stored[k]!);
      }
      if (dataFrames.offsets.length === 0) lo = hi = tensor.data[0];
    }
    const stored = this.readPayload(lo, hi - lo);
    return new HeldTensor(`${this.path}: tensor ${JSON.stringify(name)}`, name, { ...info, shape: [...info.shape], dataOffsets: [info.dataOffsets[0], info.dataOffsets[1]] },
      table, tensor.data[0], tensor.dataSize, dataFrames, this.manifest.frameSize, (o, l) => stored.subarray(o - lo, o - lo + l), frameCacheBytes);
  }

  readF32(name: string): Float32Array {
    const t = this.get(name).info;
    return decodeToF32(t.dtype, this.readBytes(name), `${this.path}: tensor ${JSON.stringify(name)}`);
  }

  *chunks(name: string, chunkBytes: number = DEFAULT_CHUNK_BYTES): Iterable<Uint8Array> {
    if (!Number.isSafeInteger(chunkBytes) || chunkBytes <= 0) throw new ChipcError('safetensors.range', `chunk size must be a positive integer, got ${chunkBytes}`);
    const t = this.get(name).info;
    for (let s = 0; s < t.byteLength; s += chunkBytes) yield this.readBytes(name, s, Math.min(t.byteLength, s + chunkBytes));
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.cache.clear();
    fs.closeSync(this.fd);
  }

  private get(name: string): TensorEntry {
    const t = this.byName.get(name);
    if (t === undefined) throw new ChipcError('safetensors.no-tensor', `${this.path}: no tensor named ${JSON.stringify(name)}`);
    return t;
  }

  private checkOpen(): void {
    if (this.closed) throw new ChipcError('safetensors.closed', `${this.path}: the file was closed`);
  }
}

/**
 * Bytes [start, end) (defaults: the whole tensor of `byteLength` bytes) of a tensor stored as
 * blocks: zeros, with the blocks that meet the range copied in from the block data
 * (`readData(from, to)`: bytes [from, to) of the blocks' bytes concatenated). ChipcError
 * safetensors.range for a range outside the tensor; `label` names it.
 */
function blockRangeBytes(table: BlockTable, byteLength: number, start: number | undefined, end: number | undefined, label: string,
  readData: (from: number, to: number) => Uint8Array): Uint8Array {
  const s = start ?? 0;
  const e = end ?? byteLength;
  if (!Number.isSafeInteger(s) || !Number.isSafeInteger(e) || s < 0 || e < s || e > byteLength) {
    throw new ChipcError('safetensors.range', `${label}: byte range [${s}, ${e}) is outside the tensor's ${byteLength} bytes`);
  }
  const out = new Uint8Array(e - s);
  const { starts, lengths } = table;
  const [lo, last] = blocksMeeting(table, s, e);
  if (last === lo) return out;
  // The blocks [lo, last) are contiguous in the block data: one read covers them.
  const firstPos = blockDataPos(table, lo);
  let lastPos = firstPos;
  for (let k = lo; k < last - 1; k++) lastPos += lengths[k];
  const from = Math.max(s, starts[lo]);
  const dataFrom = firstPos + (from - starts[lo]);
  const to = Math.min(e, starts[last - 1] + lengths[last - 1]);
  const dataTo = lastPos + (to - starts[last - 1]);
  const stored = readData(dataFrom, dataTo);
  for (let k = lo, pos = firstPos; k < last; pos += lengths[k], k++) {
    const bs = Math.max(s, starts[k]);
    const be = Math.min(e, starts[k] + lengths[k]);
    const src = pos + (bs - starts[k]) - dataFrom;
    out.set(stored.subarray(src, src + (be - bs)), bs - s);
  }
  return out;
}

/** Default bound on the inflated frames a HeldTensor keeps (decoded bytes). */
export const HELD_FRAME_CACHE_BYTES = 16 << 20;

/**
 * One tensor of a `.chip` file held in memory (ChipFile.holdTensor): its block table and its block
 * data as stored in the file (brotli frames or verbatim bytes), readable after the file is closed.
 * A range inflates only the frames it meets, kept in a bounded cache of their own. It serves a
 * reader that needs a few rows of a large tensor — the executor's embedding lookups — without
 * decoding the whole tensor, and the whole tensor (as a BlockSource) when that is needed after all.
 */
export class HeldTensor {
  private readonly cache: FrameCache;

  constructor(private readonly label: string, readonly name: string, readonly info: TensorInfo, readonly table: BlockTable,
    private readonly dataAt: number, private readonly dataSize: number, private readonly frames: FrameList | null,
    private readonly frameSize: number, private readonly read: (offset: number, length: number) => Uint8Array, frameCacheBytes: number) {
    this.cache = new FrameCache(frameCacheBytes);
  }

  /** Bytes [start, end) of the tensor (defaults: all of it), as ChipFile.readBytes. */
  readBytes(start?: number, end?: number): Uint8Array {
    return blockRangeBytes(this.table, this.info.byteLength, start, end, this.label, (from, to) => this.readData(from, to));
  }

  /** BlockSource: the block table (of this tensor only). */
  blocks(name: string): BlockTable {
    this.check(name);
    return this.table;
  }

  /** BlockSource: bytes [from, to) of the block data (of this tensor only). */
  readBlockData(name: string, from: number, to: number): Uint8Array {
    this.check(name);
    if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || from < 0 || to < from || to > this.dataSize) {
      throw new ChipcError('safetensors.range', `${this.label}: block data range [${from}, ${to}) is outside its ${this.dataSize} bytes`);
    }
    return this.readData(from, to);
  }

  /**
   * Inflates the stored frames now, into the cache, as far as the cache's bound holds them (a
   * reader about to read rows all over the tensor pays for them here, not at its first reads).
   */
  inflateFrames(): void {
    if (this.frames === null) return;
    let bytes = 0;
    for (let k = 0; k < this.frames.offsets.length; k++) {
      const decoded = Math.min(this.frameSize, this.dataSize - k * this.frameSize);
      bytes += decoded;
      if (bytes > this.cache.maxBytes) return;
      this.readData(k * this.frameSize, k * this.frameSize + Math.min(1, decoded));
    }
  }

  private readData(from: number, to: number): Uint8Array {
    return readSegment(this.read, this.dataAt, this.dataSize, this.frames, this.frameSize, from, to, (k, stored, decoded) => {
      const key = String(k);
      const hit = this.cache.get(key);
      if (hit !== undefined) return hit;
      const frame = inflateFrame(stored, decoded, `${this.label} block data frame ${k}`);
      this.cache.set(key, frame);
      return frame;
    });
  }

  private check(name: string): void {
    if (name !== this.name) throw new ChipcError('safetensors.no-tensor', `${this.label}: holds only this tensor, not ${JSON.stringify(name)}`);
  }
}

/** Whether the file at `p` starts with the .chip magic (false for directories and short files). */
export function isChipFile(p: string): boolean {
  try {
    if (!fs.statSync(p).isFile()) return false;
    const fd = fs.openSync(p, 'r');
    try {
      const b = new Uint8Array(CHIP_MAGIC.length);
      const got = fs.readSync(fd, b, 0, b.length, 0);
      return got === b.length && b.every((x, i) => x === CHIP_MAGIC[i]);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return false;
  }
}

/**
 * Opens and validates the `.chip` file at `p`; every problem is a ChipcError whose code starts
 * with CHIP_ and whose message names the file and the problem.
 */
export function openChipFile(p: string, opts: OpenChipOptions = {}): ChipFile {
  const cacheBytes = opts.frameCacheBytes ?? DEFAULT_FRAME_CACHE_BYTES;
  if (!Number.isSafeInteger(cacheBytes) || cacheBytes < 0) throw new ChipcError('chipfile.option', `frameCacheBytes must be a non-negative integer, got ${cacheBytes}`);
  let fd: number;
  try {
    fd = fs.openSync(p, 'r');
  } catch (e) {
    throw new ChipcError('chipfile.open', `${p}: cannot open: ${(e as Error).message}`, { cause: e });
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) throw new ChipcError('chipfile.open', `${p}: not a regular file`);
    return validate(p, fd, st.size, cacheBytes);
  } catch (e) {
    fs.closeSync(fd);
    throw e;
  }
}

function validate(p: string, fd: number, size: number, cacheBytes: number): ChipFile {
  const fail = (code: string, msg: string): never => {
    throw new ChipcError(code, `${p}: ${msg}`);
  };
  if (size < PREFIX_BYTES + CHECKSUM_BYTES) fail('chipfile.truncated', `file is ${size} bytes, shorter than the ${PREFIX_BYTES + CHECKSUM_BYTES} bytes of an empty .chip file`);
  const prefix = readExactly(fd, 0, PREFIX_BYTES, p);
  if (!CHIP_MAGIC.every((x, i) => prefix[i] === x)) fail('chipfile.magic', 'not a .chip file (bad magic bytes)');
  const dv = new DataView(prefix.buffer);
  const version = dv.getUint32(8, true);
  if (!CHIP_VERSIONS_READ.includes(version)) {
    fail('chipfile.version', `format version ${version} is not supported (this chipc reads versions ${CHIP_VERSIONS_READ.join(', ')})`);
  }
  if (dv.getUint32(12, true) !== 0) fail('chipfile.reserved', 'the reserved field after the version is not zero');
  const m64 = dv.getBigUint64(16, true);
  if (m64 > BigInt(MAX_MANIFEST_BYTES)) fail('chipfile.manifest-size', `manifest length ${m64} exceeds the limit of ${MAX_MANIFEST_BYTES} bytes`);
  const manifestLength = Number(m64);
  if (PREFIX_BYTES + manifestLength + CHECKSUM_BYTES > size) fail('chipfile.truncated', `manifest of ${manifestLength} bytes runs past the end of the ${size}-byte file`);

  // Checksum first: everything after it can trust that the bytes are the ones written.
  const body = size - CHECKSUM_BYTES;
  const hash = crypto.createHash('sha256');
  const STEP = 4 << 20;
  for (let at = 0; at < body; at += STEP) hash.update(readExactly(fd, at, Math.min(STEP, body - at), p));
  const stored = readExactly(fd, body, CHECKSUM_BYTES, p);
  const actual = hash.digest();
  if (!actual.equals(stored)) fail('chipfile.checksum', 'SHA-256 checksum mismatch: the file is corrupted or truncated');

  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(readExactly(fd, PREFIX_BYTES, manifestLength, p));
  } catch (e) {
    if (e instanceof ChipcError) throw e;
    return fail('chipfile.manifest', 'manifest is not valid UTF-8');
  }
  const manifest = validateManifest(text, p, version);
  const payloadStart = PREFIX_BYTES + manifestLength;
  if (payloadStart + manifest.payloadSize + CHECKSUM_BYTES !== size) {
    fail('chipfile.size', `file is ${size} bytes but prefix, manifest, payload (${manifest.payloadSize}) and checksum need ${payloadStart + manifest.payloadSize + CHECKSUM_BYTES}`);
  }
  const payload = (offset: number, length: number): Uint8Array => readExactly(fd, payloadStart + offset, length, p);

  const entries: TensorEntry[] = [];
  const rawFrames = new Map<string, FrameList>();
  for (const f of manifest.files) {
    if (f.kind !== 'raw' || f.codec !== 'br') continue;
    const fq = `file ${JSON.stringify(f.name)}`;
    const [frames] = decodeFrameIndex(payload(f.frames[0], f.frames[1]), manifest.frameSize,
      [{ at: f.data[0], stored: f.data[1], size: f.size, what: 'data' }], (msg) => fail('chipfile.codec', `${fq}: ${msg}`));
    rawFrames.set(f.name, frames!);
  }
  let metadata: Record<string, string> | null = null;
  const shards = manifest.files.filter((f): f is ChipSafetensorsFile => f.kind === 'safetensors');
  for (const f of shards) {
    // The stored header must be a valid safetensors header describing exactly the manifest's tensors.
    const headerBytes = payload(f.header[0], f.header[1]);
    const readAt = (position: number, length: number): Uint8Array => {
      if (position + length > headerBytes.length) fail('chipfile.header', `${f.name}: stored header of ${headerBytes.length} bytes is shorter than its length prefix says`);
      return headerBytes.subarray(position, position + length);
    };
    let parsed;
    try {
      parsed = parseHeader(readAt, f.size, f.name);
    } catch (e) {
      if (e instanceof ChipcError && !e.code.startsWith('chipfile.')) throw new ChipcError('chipfile.header', `${p}: stored header of ${f.name} is invalid: ${e.message}`, { cause: e });
      throw e;
    }
    if (8 + parsed.headerSize !== headerBytes.length) fail('chipfile.header', `${f.name}: stored header is ${headerBytes.length} bytes but its length prefix says ${8 + parsed.headerSize}`);
    if (parsed.tensors.length !== f.tensors.length) fail('chipfile.header', `${f.name}: header lists ${parsed.tensors.length} tensors, the manifest ${f.tensors.length}`);
    parsed.tensors.forEach((h, i) => {
      const t = f.tensors[i];
      if (h.name !== t.name || h.dtype !== t.dtype || h.shape.join(',') !== t.shape.join(',') || h.dataOffsets[0] !== t.dataOffsets[0] || h.dataOffsets[1] !== t.dataOffsets[1]) {
        fail('chipfile.header', `${f.name}: tensor ${i} of the header (${JSON.stringify(h.name)}) does not match the manifest's (${JSON.stringify(t.name)})`);
      }
    });
    metadata ??= parsed.metadata;
    for (const t of f.tensors) {
      const tq = `tensor ${JSON.stringify(t.name)}`;
      const byteLength = t.dataOffsets[1] - t.dataOffsets[0];
      let dataFrames: FrameList | null = null;
      let tableFrames: FrameList | null = null;
      if (t.codec === 'br') {
        [dataFrames, tableFrames] = decodeFrameIndex(payload(t.frames[0], t.frames[1]), manifest.frameSize, [
          { at: t.data[0], stored: t.data[1], size: t.dataSize, what: 'data' },
          { at: t.table[0], stored: t.table[1], size: t.tableSize, what: 'table' },
        ], (msg) => fail('chipfile.codec', `${tq}: ${msg}`));
      }
      const tableBytes = readSegment(payload, t.table[0], t.tableSize, tableFrames, manifest.frameSize, 0, t.tableSize,
        (k, stored, decoded) => inflateFrame(stored, decoded, `${p}: ${tq} block table frame ${k}`));
      const table = decodeBlockTable(tableBytes, t.blocks, byteLength, t.dataSize, manifest.minGap,
        (msg) => fail('chipfile.blocks', `${tq}: ${msg}`));
      const numel = t.shape.reduce((a, d) => a * d, 1);
      entries.push({ tensor: t, table, dataFrames, info: { name: t.name, dtype: t.dtype, shape: [...t.shape], dataOffsets: [t.dataOffsets[0], t.dataOffsets[1]], numel, byteLength } });
    }
  }
  return new ChipFile(p, fd, manifest, payloadStart, metadata ?? {}, entries, rawFrames, cacheBytes);
}
