/**
 * The `.chip` file: a compact, sparse, byte-exact image of a dense checkpoint directory
 * (layout: docs/chip-file.md). This module holds the constants, the manifest's shape, its one
 * canonical serialisation and its validation, and the block-table codec (LEB128 varints).
 *
 *   magic (8) · version u32 LE · reserved u32 (0) · manifest length u64 LE · manifest (UTF-8 JSON)
 *   · payload (manifest.payloadSize bytes) · SHA-256 of every preceding byte (32)
 *
 * Version 1 stores every tensor's block bytes and block table verbatim. Version 2 adds a codec per
 * tensor: `br` cuts each segment (block bytes, block table) into frames of `frameSize` decoded
 * bytes, each stored brotli-compressed or verbatim, with a frame index (varints) so a reader
 * inflates only the frames a byte range meets (codec.ts). Version 3 gives the raw files the same
 * codec (a chip's `chipc-manifest.json` is ≈ 12 MB of JSON that brotli takes to ≈ 0.6 MB).
 * Version 4 makes a safetensors file's `sha256` optional: hashing every dense byte (≈ 6.5 GB at
 * qwen3.5-4b, most of them zeros) cost a writer as much as everything else it does, and the
 * file's own trailing SHA-256 already guards the stored bytes; writers record it on request.
 */
import { ChipcError } from '../util/errors.ts';
import type { DType } from '../safetensors/types.ts';
import { byteSizeOf, isDType } from '../safetensors/dtype.ts';
import { compareCodePoints } from '../safetensors/reader.ts';

/** 0x89 "CHIP" CR LF 0x1A: a non-ASCII first byte and a CR LF catch text-mode transfers (as PNG). */
export const CHIP_MAGIC = Uint8Array.of(0x89, 0x43, 0x48, 0x49, 0x50, 0x0d, 0x0a, 0x1a);
/** The newest format version (written with codec `br`); version 1 (CHIP_VERSION_PLAIN) is still read and written. */
export const CHIP_VERSION = 4;
/**
 * Every version this chipc reads (version 2: the codec on tensors only, raw files verbatim;
 * version 3: raw files in frames too, every file's sha256 present; both read, no longer written).
 */
export const CHIP_VERSIONS_READ: readonly number[] = [1, 2, 3, 4];
/** The first version whose raw files carry a codec. */
export const CHIP_VERSION_RAW_CODEC = 3;
/** The first version in which a safetensors file's sha256 may be absent. */
export const CHIP_VERSION_OPTIONAL_SHA = 4;
/** Version 1: every segment verbatim, no codec fields (what `--codec none` writes). */
export const CHIP_VERSION_PLAIN = 1;
/** Default decoded bytes per brotli frame (version 2). */
export const DEFAULT_FRAME_SIZE = 1 << 20;
/** Accepted frame sizes: [1, MAX_FRAME_SIZE] bytes (a reader holds whole inflated frames). */
export const MAX_FRAME_SIZE = 16 << 20;
/** magic + version + reserved + manifest length. */
export const PREFIX_BYTES = 24;
export const CHECKSUM_BYTES = 32;
export const FORMAT_NAME = 'chipc-sparse-checkpoint';
/** Default minimum zero run (bytes) that separates two blocks; shorter runs stay inside a block. */
export const DEFAULT_MIN_GAP = 8;
/** Upper bound on the manifest length accepted when reading (bytes). */
export const MAX_MANIFEST_BYTES = 256 * 1024 * 1024;

/** [offset, length] of a byte range of the payload. */
export type Range = [number, number];

/** How a tensor's segments are stored: verbatim, or as frames of brotli / verbatim bytes. */
export type ChipCodec = 'none' | 'br';

export interface ChipTensor {
  name: string;
  dtype: DType;
  shape: number[];
  /** As in the shard's header: [begin, end) within its data buffer. */
  dataOffsets: [number, number];
  /** `none` in a version 1 file (not serialised there). */
  codec: ChipCodec;
  /** The concatenated bytes of the tensor's blocks (stored form), in the payload. */
  data: Range;
  /** Decoded length of `data` (= data[1] for codec none; serialised only for br). */
  dataSize: number;
  /** The block table (varint pairs, stored form) in the payload, and the number of blocks it holds. */
  table: Range;
  /** Decoded length of `table` (= table[1] for codec none; serialised only for br). */
  tableSize: number;
  /** The frame index (codec br: one varint per frame of data, then of table); [end of table, 0] for none. */
  frames: Range;
  blocks: number;
}

export interface ChipRawFile {
  name: string;
  kind: 'raw';
  size: number;
  sha256: string;
  /** `none` in versions 1 and 2 (not serialised there). */
  codec: ChipCodec;
  /** The file's bytes in the payload: verbatim (codec none), or its frames' stored bytes (br). */
  data: Range;
  /** The frame index (codec br); [end of data, 0] for none. */
  frames: Range;
}

export interface ChipSafetensorsFile {
  name: string;
  kind: 'safetensors';
  size: number;
  /** The dense file's SHA-256; null where the writer did not hash it (version 4, not serialised then). */
  sha256: string | null;
  /** The file's first 8 + N bytes (length prefix and header JSON with its padding), verbatim. */
  header: Range;
  /** In data-offset order (the order they are stored in the shard). */
  tensors: ChipTensor[];
}

export type ChipFileEntry = ChipRawFile | ChipSafetensorsFile;

export interface ChipManifest {
  format: typeof FORMAT_NAME;
  version: number;
  minGap: number;
  /** Decoded bytes per frame (version 2; 0 in version 1, where it is not serialised). */
  frameSize: number;
  payloadSize: number;
  /** Every file of the directory, sorted by name (code points). */
  files: ChipFileEntry[];
}

/** The canonical manifest text: JSON with a fixed key order and no whitespace. */
export function serializeManifest(m: ChipManifest): string {
  const r = (x: Range): string => `[${x[0]},${x[1]}]`;
  const files = m.files.map((f) => {
    const sha = f.sha256 === null ? '' : `,"sha256":"${f.sha256}"`;
    const head = `{"name":${JSON.stringify(f.name)},"kind":"${f.kind}","size":${f.size}${sha}`;
    if (f.kind === 'raw') {
      if (m.version < CHIP_VERSION_RAW_CODEC) return `${head},"data":${r(f.data)}}`;
      if (f.codec === 'none') return `${head},"codec":"none","data":${r(f.data)}}`;
      return `${head},"codec":"br","data":${r(f.data)},"frames":${r(f.frames)}}`;
    }
    const tensors = f.tensors.map((t) => {
      const id = `{"name":${JSON.stringify(t.name)},"dtype":"${t.dtype}","shape":[${t.shape.join(',')}],"dataOffsets":${r(t.dataOffsets)}`;
      if (m.version === CHIP_VERSION_PLAIN) return `${id},"data":${r(t.data)},"table":${r(t.table)},"blocks":${t.blocks}}`;
      if (t.codec === 'none') return `${id},"codec":"none","data":${r(t.data)},"table":${r(t.table)},"blocks":${t.blocks}}`;
      return `${id},"codec":"br","data":${r(t.data)},"dataSize":${t.dataSize},"table":${r(t.table)},"tableSize":${t.tableSize},` +
        `"frames":${r(t.frames)},"blocks":${t.blocks}}`;
    });
    return `${head},"header":${r(f.header)},"tensors":[${tensors.join(',')}]}`;
  });
  const frame = m.version === CHIP_VERSION_PLAIN ? '' : `"frameSize":${m.frameSize},`;
  return `{"format":"${m.format}","version":${m.version},"minGap":${m.minGap},${frame}"payloadSize":${m.payloadSize},"files":[${files.join(',')}]}`;
}

/** A plain file name: no directory part, not `.`/`..`, no NUL. */
export function isPlainFileName(name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && !name.includes('/') && !name.includes('\\') && !name.includes('\0');
}

/**
 * Validates a parsed manifest and returns it typed. Checks types, that file names are plain,
 * unique and sorted, that tensors tile their shard's data buffer, and that the payload ranges
 * tile [0, payloadSize) exactly in manifest order (so no two ranges overlap and no byte is
 * unaccounted for). Finally the text must be the canonical serialisation (no duplicate keys,
 * extra fields or whitespace). `label` starts every message.
 */
export function validateManifest(text: string, label: string, fileVersion: number): ChipManifest {
  const bad = (msg: string): never => {
    throw new ChipcError('chipfile.manifest', `${label}: manifest: ${msg}`);
  };
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    return bad(`not valid JSON (${(e as Error).message})`);
  }
  const obj = (x: unknown, what: string): Record<string, unknown> => {
    if (typeof x !== 'object' || x === null || Array.isArray(x)) bad(`${what} is not an object`);
    return x as Record<string, unknown>;
  };
  const int = (x: unknown, what: string): number => {
    if (typeof x !== 'number' || !Number.isSafeInteger(x) || x < 0) bad(`${what} is ${JSON.stringify(x)}, not a non-negative integer`);
    return x as number;
  };
  const str = (x: unknown, what: string): string => {
    if (typeof x !== 'string') bad(`${what} is not a string`);
    return x as string;
  };
  const arr = (x: unknown, what: string): unknown[] => {
    if (!Array.isArray(x)) bad(`${what} is not an array`);
    return x as unknown[];
  };
  const pair = (x: unknown, what: string): [number, number] => {
    const a = arr(x, what);
    if (a.length !== 2) bad(`${what} must be [a, b]`);
    return [int(a[0], `${what}[0]`), int(a[1], `${what}[1]`)];
  };
  const root = obj(v, 'the manifest');
  if (root.format !== FORMAT_NAME) bad(`format is ${JSON.stringify(root.format)}, expected ${JSON.stringify(FORMAT_NAME)}`);
  const version = int(root.version, 'version');
  if (version !== fileVersion) bad(`version ${version} does not match the file's version ${fileVersion}`);
  const minGap = int(root.minGap, 'minGap');
  if (minGap < 1) bad('minGap must be at least 1');
  let frameSize = 0;
  if (version !== CHIP_VERSION_PLAIN) {
    frameSize = int(root.frameSize, 'frameSize');
    if (frameSize < 1 || frameSize > MAX_FRAME_SIZE) bad(`frameSize ${frameSize} is outside [1, ${MAX_FRAME_SIZE}]`);
  }
  const payloadSize = int(root.payloadSize, 'payloadSize');
  let cursor = 0;
  const range = (x: unknown, what: string): Range => {
    const r = pair(x, what);
    if (r[0] !== cursor) bad(`${what} starts at payload offset ${r[0]}, expected ${cursor} (ranges must follow each other without gap or overlap)`);
    if (r[0] + r[1] > payloadSize) bad(`${what} [${r[0]}, +${r[1]}) runs past the payload of ${payloadSize} bytes`);
    cursor = r[0] + r[1];
    return r;
  };
  const files: ChipFileEntry[] = [];
  const tensorNames = new Set<string>();
  for (const [i, fv] of arr(root.files, 'files').entries()) {
    const f = obj(fv, `files[${i}]`);
    const name = str(f.name, `files[${i}].name`);
    const q = JSON.stringify(name);
    if (!isPlainFileName(name)) bad(`file name ${q} is not a plain file name`);
    if (files.length > 0 && compareCodePoints(files[files.length - 1].name, name) >= 0) bad(`file ${q} is out of order or repeated (names must be sorted and unique)`);
    const size = int(f.size, `file ${q} size`);
    const hexSha = (x: unknown): string => {
      const h = str(x, `file ${q} sha256`);
      if (!/^[0-9a-f]{64}$/.test(h)) bad(`file ${q} sha256 is not 64 lowercase hex digits`);
      return h;
    };
    if (f.kind === 'raw') {
      const sha256 = hexSha(f.sha256);
      let codec: ChipCodec = 'none';
      if (version >= CHIP_VERSION_RAW_CODEC) {
        if (f.codec !== 'none' && f.codec !== 'br') bad(`file ${q} codec is ${JSON.stringify(f.codec)}, expected "none" or "br"`);
        codec = f.codec as ChipCodec;
      }
      const data = range(f.data, `file ${q} data`);
      const frames = codec === 'br' ? range(f.frames, `file ${q} frames`) : [cursor, 0] as Range;
      if (codec === 'none' && data[1] !== size) bad(`file ${q}: data holds ${data[1]} bytes but size is ${size}`);
      if (codec === 'br') {
        if (data[1] > size) bad(`file ${q}: stores ${data[1]} bytes, more than its ${size} decoded bytes`);
        if (size === 0 || frames[1] === 0) bad(`file ${q}: codec br needs bytes and a frame index`);
      }
      files.push({ name, kind: 'raw', size, sha256, codec, data, frames });
      continue;
    }
    if (f.kind !== 'safetensors') bad(`file ${q} kind is ${JSON.stringify(f.kind)}, expected "raw" or "safetensors"`);
    if (!name.endsWith('.safetensors')) bad(`file ${q} is of kind safetensors but its name does not end in .safetensors`);
    // only a safetensors file of version 4 may leave its sha256 out
    const sha256 = version >= CHIP_VERSION_OPTIONAL_SHA && f.sha256 === undefined ? null : hexSha(f.sha256);
    const header = range(f.header, `file ${q} header`);
    if (header[1] < 8) bad(`file ${q} header is ${header[1]} bytes, shorter than the 8-byte length prefix`);
    const tensors: ChipTensor[] = [];
    let end = 0;
    for (const [j, tv] of arr(f.tensors, `file ${q} tensors`).entries()) {
      const t = obj(tv, `file ${q} tensors[${j}]`);
      const tname = str(t.name, `file ${q} tensors[${j}].name`);
      const tq = `tensor ${JSON.stringify(tname)}`;
      if (tensorNames.has(tname)) bad(`${tq} appears twice`);
      tensorNames.add(tname);
      const dtype = t.dtype;
      if (!isDType(dtype)) return bad(`${tq} dtype ${JSON.stringify(dtype)} is unknown`);
      const shape = arr(t.shape, `${tq} shape`).map((d, k) => int(d, `${tq} shape[${k}]`));
      const dataOffsets = pair(t.dataOffsets, `${tq} dataOffsets`);
      let numel = 1n;
      for (const d of shape) numel *= BigInt(d);
      const bytes = byteSizeOf(dtype, numel);
      if (bytes === null || bytes !== BigInt(dataOffsets[1] - dataOffsets[0])) bad(`${tq}: dataOffsets [${dataOffsets[0]}, ${dataOffsets[1]}] do not hold shape [${shape.join(', ')}] of ${dtype}`);
      if (dataOffsets[0] !== end) bad(`${tq} begins at ${dataOffsets[0]} but the previous tensor ends at ${end}`);
      end = dataOffsets[1];
      let codec: ChipCodec = 'none';
      if (version !== CHIP_VERSION_PLAIN) {
        if (t.codec !== 'none' && t.codec !== 'br') bad(`${tq} codec is ${JSON.stringify(t.codec)}, expected "none" or "br"`);
        codec = t.codec as ChipCodec;
      }
      const data = range(t.data, `${tq} data`);
      const dataSize = codec === 'br' ? int(t.dataSize, `${tq} dataSize`) : data[1];
      const table = range(t.table, `${tq} table`);
      const tableSize = codec === 'br' ? int(t.tableSize, `${tq} tableSize`) : table[1];
      const frames = codec === 'br' ? range(t.frames, `${tq} frames`) : [cursor, 0] as Range;
      const blocks = int(t.blocks, `${tq} blocks`);
      if (dataSize > dataOffsets[1] - dataOffsets[0]) bad(`${tq} stores ${dataSize} block bytes, more than its ${dataOffsets[1] - dataOffsets[0]} bytes`);
      if ((blocks === 0) !== (dataSize === 0) || (blocks === 0) !== (tableSize === 0)) bad(`${tq}: blocks, data and table must be all empty or all non-empty`);
      if (codec === 'br') {
        // A stored frame is never longer than its decoded bytes, so neither is a segment.
        if (data[1] > dataSize || table[1] > tableSize) bad(`${tq}: a stored segment is longer than its decoded size`);
        if (blocks === 0 || frames[1] === 0) bad(`${tq}: codec br needs blocks and a frame index`);
      }
      tensors.push({ name: tname, dtype, shape, dataOffsets, codec, data, dataSize, table, tableSize, frames, blocks });
    }
    if (header[1] + end !== size) bad(`file ${q}: header ${header[1]} + data ${end} bytes ≠ size ${size}`);
    files.push({ name, kind: 'safetensors', size, sha256, header, tensors });
  }
  if (cursor !== payloadSize) bad(`the ranges cover ${cursor} bytes of the ${payloadSize}-byte payload`);
  const m: ChipManifest = { format: FORMAT_NAME, version, minGap, frameSize, payloadSize, files };
  if (serializeManifest(m) !== text) bad('not in canonical form (unexpected fields, key order, duplicates or whitespace)');
  return m;
}

// ---------------------------------------------------------------------------------------------
// Block tables

/** Bytes of `x` (a safe non-negative integer) as an unsigned LEB128 varint. */
export function varintSize(x: number): number {
  let n = 1;
  while (x >= 0x80) {
    x = Math.floor(x / 0x80);
    n++;
  }
  return n;
}

/**
 * Writes `x` (a safe non-negative integer) as unsigned LEB128 into out[p…] (7 bits per byte, low
 * first, high bit set on every byte but the last); returns the position after it.
 */
export function writeVarint(out: Uint8Array, p: number, x: number): number {
  while (x >= 0x80) {
    out[p++] = (x % 0x80) | 0x80;
    x = Math.floor(x / 0x80);
  }
  out[p++] = x;
  return p;
}

/**
 * A tensor's blocks. Uint32Arrays when the tensor has fewer than 2^32 bytes (every tensor of a
 * compiled chip: the qwen3.5-4b embedding is 1.3 GB), else Float64Arrays: a chip's embedding and LM
 * head have millions of blocks, and the fresh memory of their tables was most of opening its
 * `.chip` (a page fault for every 4 KiB first written). So where a block's bytes lie in the block
 * data is not stored per block: the blocks' bytes are contiguous in block order, so block k's start
 * at the offset of block k − 1's plus its length; `marks` keeps that offset for every
 * BLOCK_MARK_STRIDE-th block (blockDataPos reads any block's), and a walk in block order adds the
 * lengths as it goes.
 */
export interface BlockTable {
  starts: Float64Array | Uint32Array;
  /** Uint16Array where every block is shorter than 64 KiB (a chip's sparse tensors: their blocks are runs of non-zero bytes). */
  lengths: Float64Array | Uint32Array | Uint16Array;
  /** marks[i]: the offset of block i·BLOCK_MARK_STRIDE's bytes within the tensor's block data. */
  marks: Float64Array;
}

/** Blocks per entry of BlockTable.marks. */
export const BLOCK_MARK_STRIDE = 64;

/** The offset of block k's bytes within its tensor's block data (k ≤ the block count). */
export function blockDataPos(table: BlockTable, k: number): number {
  const { lengths, marks } = table;
  const m = Math.floor(k / BLOCK_MARK_STRIDE);
  let pos = marks[m]!;
  for (let j = m * BLOCK_MARK_STRIDE; j < k; j++) pos += lengths[j]!;
  return pos;
}

/**
 * The marks of blocks of these lengths whose bytes start at `first` in the block data (and run on
 * contiguously): one per BLOCK_MARK_STRIDE blocks, from block 0.
 */
export function blockMarks(lengths: ArrayLike<number>, count: number, first = 0): Float64Array {
  const marks = new Float64Array(Math.floor(count / BLOCK_MARK_STRIDE) + 1);
  let pos = first;
  for (let k = 0; k < count; k++) {
    if (k % BLOCK_MARK_STRIDE === 0) marks[k / BLOCK_MARK_STRIDE] = pos;
    pos += lengths[k]!;
  }
  if (count % BLOCK_MARK_STRIDE === 0) marks[count / BLOCK_MARK_STRIDE] = pos;
  return marks;
}

/**
 * The blocks of `table` that meet bytes [start, end) of their tensor: [lo, last) (empty when
 * lo = last). Blocks do not overlap and ascend, so their ends ascend with their starts: a binary
 * search for the first block ending after `start`, then every block starting before `end`. They
 * are contiguous in the block data (blockDataPos(table, lo) on).
 */
export function blocksMeeting(table: BlockTable, start: number, end: number): [lo: number, last: number] {
  const { starts, lengths } = table;
  let lo = 0;
  let hi = starts.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (starts[mid]! + lengths[mid]! <= start) lo = mid + 1;
    else hi = mid;
  }
  let last = lo;
  while (last < starts.length && starts[last]! < end) last++;
  return [lo, last];
}

/**
 * Encodes blocks as varint pairs (gap, length): gap = start for the first block, else start minus
 * the previous block's end. Non-overlap is structural: a decoded block can never start before
 * the previous one ends.
 */
export function encodeBlockTable(starts: ArrayLike<number>, lengths: ArrayLike<number>, count: number): Uint8Array {
  // sized first, then written: a chip's embedding has millions of blocks, and a growing array of
  // numbers copied into bytes afterwards was a fifth of writing its .chip
  let size = 0;
  let end = 0;
  for (let k = 0; k < count; k++) {
    size += varintSize(starts[k]! - end) + varintSize(lengths[k]!);
    end = starts[k]! + lengths[k]!;
  }
  const out = new Uint8Array(size);
  let p = 0;
  end = 0;
  for (let k = 0; k < count; k++) {
    p = writeVarint(out, p, starts[k]! - end);
    p = writeVarint(out, p, lengths[k]!);
    end = starts[k]! + lengths[k]!;
  }
  return out;
}

/**
 * A reader of canonical unsigned LEB128 varints (at most 8 bytes, no over-long encoding) from
 * `bytes`; `what` names the structure in errors ("<what> ends inside …"). `fail` must throw.
 */
export function varintReader(bytes: Uint8Array, what: string, fail: (msg: string) => never): { next: (item: string) => number; offset: () => number; seek: (to: number) => void } {
  let p = 0;
  const next = (item: string): number => {
    let x = 0;
    let scale = 1;
    for (let i = 0; ; i++) {
      if (p >= bytes.length) fail(`${what} ends inside ${item}`);
      if (i >= 8) fail(`${item} has more than 8 varint bytes`);
      const b = bytes[p++]!;
      x += (b & 0x7f) * scale;
      scale *= 0x80;
      if ((b & 0x80) === 0) {
        if (b === 0 && i > 0) fail(`${item} is an over-long varint`);
        return x;
      }
    }
  };
  return { next, offset: () => p, seek: (to: number) => { p = to; } };
}

/**
 * Decodes and checks a block table of `count` blocks for a tensor of `byteLength` bytes whose
 * blocks hold `dataLength` bytes in all: every varint canonical (no over-long encoding), every
 * length ≥ 1, every gap after the first ≥ minGap, the last end ≤ byteLength, the lengths summing
 * to dataLength, and no byte of the table left over. `fail` must throw.
 *
 * A tensor below 4 GiB goes through `decodeNarrowTable` first: one loop with no closures and one
 * array type, which a fresh process runs at every chip load over millions of blocks (a chip's
 * embedding and LM head hold 2 M between them). It accepts exactly the tables the checked decoder
 * accepts whose blocks are shorter than 64 KiB, with the same values; anything it does not accept
 * is decoded again by the checked decoder, which names the problem.
 */
export function decodeBlockTable(bytes: Uint8Array, count: number, byteLength: number, dataLength: number, minGap: number,
  fail: (msg: string) => never): BlockTable {
  if (byteLength <= 0xffffffff) {
    const table = decodeNarrowTable(bytes, count, byteLength, dataLength, minGap);
    if (table !== null) return table;
  }
  return decodeBlockTableChecked(bytes, count, byteLength, dataLength, minGap, fail);
}

/** decodeNarrowTable's position in its table (narrowVarint reads from it and moves it on). */
let narrowAt = 0;

/**
 * The canonical varint of at most 5 bytes at bytes[narrowAt] (narrowAt moved past it), or −1: the
 * table ends inside it, it is over-long (a last byte 0 after the first), or it runs to a sixth byte.
 */
function narrowVarint(bytes: Uint8Array, n: number): number {
  let at = narrowAt;
  let x = 0;
  let scale = 1;
  for (let i = 0; i < 5 && at < n; i++) {
    const b = bytes[at++]!;
    x += (b & 0x7f) * scale;
    if (b < 0x80) {
      if (b === 0 && i > 0) return -1;
      narrowAt = at;
      return x;
    }
    scale *= 0x80;
  }
  return -1;
}

/**
 * decodeBlockTable for a tensor of at most 2^32 − 1 bytes whose blocks are all shorter than 64 KiB
 * (lengths in a Uint16Array), or null: where the checked decoder would refuse the table, where it
 * is unsure (a varint of more than 5 bytes, whose value is 2^35 or more and so past any such
 * tensor's end anyway), and for a longer block (the checked decoder then gives the table in
 * Uint32Arrays). A canonical varint's last byte is not 0 unless it is the only byte; every value
 * here stays below 2^36, exact in a double.
 */
function decodeNarrowTable(bytes: Uint8Array, count: number, byteLength: number, dataLength: number, minGap: number): BlockTable | null {
  if (!Number.isInteger(count) || count < 0 || 2 * count > bytes.length) return null; // (two bytes per block at least)
  const starts = new Uint32Array(count);
  const lengths = new Uint16Array(count);
  const marks = new Float64Array(Math.floor(count / BLOCK_MARK_STRIDE) + 1);
  const n = bytes.length;
  narrowAt = 0;
  let end = 0;
  let sum = 0;
  for (let k = 0; k < count; k++) {
    const gap = narrowVarint(bytes, n);
    const len = gap < 0 ? -1 : narrowVarint(bytes, n);
    if (len < 1 || len > 0xffff || (k > 0 && gap < minGap)) return null;
    const start = end + gap;
    if (start + len > byteLength) return null;
    starts[k] = start;
    lengths[k] = len;
    if (k % BLOCK_MARK_STRIDE === 0) marks[k / BLOCK_MARK_STRIDE] = sum;
    sum += len;
    end = start + len;
  }
  if (narrowAt !== n || sum !== dataLength) return null;
  if (count % BLOCK_MARK_STRIDE === 0) marks[count / BLOCK_MARK_STRIDE] = sum;
  return { starts, lengths, marks };
}

/**
 * decodeBlockTable's checks, one varint at a time through a reader that names what failed (the
 * path of wide tensors and of every table the narrow loop does not accept).
 */
export function decodeBlockTableChecked(bytes: Uint8Array, count: number, byteLength: number, dataLength: number, minGap: number,
  fail: (msg: string) => never): BlockTable {
  const wide = byteLength > 0xffffffff;
  const starts = wide ? new Float64Array(count) : new Uint32Array(count);
  const lengths = wide ? new Float64Array(count) : new Uint32Array(count);
  const marks = new Float64Array(Math.floor(count / BLOCK_MARK_STRIDE) + 1);
  const reader = varintReader(bytes, 'block table', fail);
  const varint = reader.next;
  let end = 0;
  let sum = 0;
  // Canonical varints are decoded inline (a block table holds millions); anything the inline loop
  // does not accept — the table's end, a ninth byte, an over-long form — goes back to the reader
  // at the value's first byte, which reports it.
  const n = bytes.length;
  let at = 0;
  const inline = (): number => {
    const from = at;
    let x = 0;
    let scale = 1;
    for (let i = 0; i < 8 && at < n; i++) {
      const b = bytes[at++]!;
      x += (b & 0x7f) * scale;
      if (b < 0x80) {
        if (b === 0 && i > 0) break;
        return x;
      }
      scale *= 0x80;
    }
    at = from;
    return -1;
  };
  for (let k = 0; k < count; k++) {
    let gap = inline();
    if (gap < 0) { reader.seek(at); gap = varint(`block ${k}'s gap`); at = reader.offset(); }
    let len = inline();
    if (len < 0) { reader.seek(at); len = varint(`block ${k}'s length`); at = reader.offset(); }
    if (len < 1) fail(`block ${k} is empty`);
    if (k > 0 && gap < minGap) fail(`block ${k} starts ${gap} bytes after block ${k - 1} ends, less than minGap ${minGap} (blocks overlap or touch)`);
    const start = end + gap;
    if (start + len > byteLength) fail(`block ${k} [${start}, ${start + len}) runs past the tensor's ${byteLength} bytes`);
    starts[k] = start;
    lengths[k] = len;
    if (k % BLOCK_MARK_STRIDE === 0) marks[k / BLOCK_MARK_STRIDE] = sum;
    sum += len;
    end = start + len;
  }
  if (at !== bytes.length) fail(`block table has ${bytes.length - at} bytes after its ${count} blocks`);
  if (sum !== dataLength) fail(`blocks hold ${sum} bytes but the tensor's block data is ${dataLength} bytes`);
  if (count % BLOCK_MARK_STRIDE === 0) marks[count / BLOCK_MARK_STRIDE] = sum;
  return { starts, lengths, marks };
}
