/**
 * Streaming, deterministic, atomic safetensors writer (docs/host-architecture.md §6.5 and §6.6),
 * plus helpers that make TensorSources (dense, sparse, zeros) without materialising big tensors.
 *
 * - Tensors are laid out by dtype alignment descending (reference enum order), then name.
 * - The header is compact JSON, `__metadata__` first (`format: "pt"` plus user keys, sorted),
 *   padded with spaces to a multiple of 8 bytes.
 * - Data is streamed chunk by chunk into a temporary file in the target directory, then renamed;
 *   on any error the temporary file is removed.
 * - A checkpoint directory is written into a temporary sibling directory and renamed into place.
 */
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ChipcError } from '../util/errors.ts';
import type {
  CheckpointWriteOptions, DType, TensorInfo, TensorSource, TensorStore, WriteOptions, WriteProgress,
} from './types.ts';
import { byteSizeOf, dtypeBytes, dtypeRank, encodeFromF32, ENCODABLE, fmtF32, isDType } from './dtype.ts';
import { compareCodePoints, MAX_FORMAT_INT } from './reader.ts';
import { INDEX_FILE_NAME, SINGLE_FILE_NAME } from './checkpoint.ts';
import { removeTemp, tempSibling } from '../util/temp-files.ts';
import { BufferedWriter, ZEROS } from '../util/sparse-file.ts';

/** huggingface_hub's default max_shard_size ("5GB" = 5·10^9 bytes). */
export const DEFAULT_MAX_SHARD_SIZE = 5_000_000_000;

/** Elements encoded per chunk by denseSource. */
const DENSE_CHUNK_ELEMENTS = 1 << 20;

interface Prepared {
  source: TensorSource;
  info: TensorInfo;
}

/** Validates a shape; returns numel and byte size. `label` names the tensor. */
function checkShape(label: string, dtype: unknown, shape: unknown): { numel: number; byteLength: number } {
  if (!isDType(dtype)) throw new ChipcError('safetensors.write-dtype', `${label}: unknown dtype ${JSON.stringify(dtype)}`);
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0 && d <= MAX_FORMAT_INT)) {
    throw new ChipcError('safetensors.write-shape', `${label}: shape ${JSON.stringify(shape)} is not an array of non-negative integers ≤ 2^48 − 1`);
  }
  let numel = 1n;
  for (const d of shape) numel *= BigInt(d);
  const bytes = byteSizeOf(dtype, numel);
  if (bytes === null) throw new ChipcError('safetensors.write-shape', `${label}: ${numel} elements of ${dtype} is not a whole number of bytes`);
  if (bytes > BigInt(MAX_FORMAT_INT)) throw new ChipcError('safetensors.write-too-large', `${label}: ${bytes} bytes exceeds the format's 2^48 − 1 limit`);
  return { numel: Number(numel), byteLength: Number(bytes) };
}

function prepare(sources: readonly TensorSource[]): Prepared[] {
  const seen = new Set<string>();
  const out: Prepared[] = [];
  for (const s of sources) {
    if (typeof s.name !== 'string' || s.name === '' || s.name === '__metadata__') {
      throw new ChipcError('safetensors.write-name', `invalid tensor name ${JSON.stringify(s.name)} (must be a non-empty string other than "__metadata__")`);
    }
    if (seen.has(s.name)) throw new ChipcError('safetensors.write-duplicate', `tensor ${JSON.stringify(s.name)} is given twice`);
    seen.add(s.name);
    const { numel, byteLength } = checkShape(`tensor ${JSON.stringify(s.name)}`, s.dtype, s.shape);
    out.push({ source: s, info: { name: s.name, dtype: s.dtype, shape: [...s.shape], dataOffsets: [0, 0], numel, byteLength } });
  }
  return out;
}

function metadataWithFormat(meta: Record<string, string> | undefined): Record<string, string> {
  const m: Record<string, string> = { format: 'pt' };
  for (const [k, v] of Object.entries(meta ?? {})) {
    if (typeof v !== 'string') throw new ChipcError('safetensors.write-metadata', `metadata value of ${JSON.stringify(k)} is not a string`);
    if (k === 'format' && v !== 'pt') throw new ChipcError('safetensors.write-metadata', `metadata "format" must be "pt" (transformers refuses other values), got ${JSON.stringify(v)}`);
    m[k] = v;
  }
  return m;
}

/** Writer order: dtype rank descending, then name ascending (code points). */
function writerOrder(a: Prepared, b: Prepared): number {
  return dtypeRank(b.info.dtype) - dtypeRank(a.info.dtype) || compareCodePoints(a.info.name, b.info.name);
}

/** Lays out `prepared` (sorted in place) and returns the padded header bytes. */
function buildHeader(prepared: Prepared[], metadata: Record<string, string>): { header: Uint8Array; dataSize: number } {
  prepared.sort(writerOrder);
  let offset = 0;
  const parts: string[] = [];
  const metaKeys = Object.keys(metadata).sort(compareCodePoints);
  parts.push(`"__metadata__":{${metaKeys.map((k) => `${JSON.stringify(k)}:${JSON.stringify(metadata[k])}`).join(',')}}`);
  for (const p of prepared) {
    p.info.dataOffsets = [offset, offset + p.info.byteLength];
    offset += p.info.byteLength;
    parts.push(`${JSON.stringify(p.info.name)}:{"dtype":"${p.info.dtype}","shape":[${p.info.shape.join(',')}],"data_offsets":[${p.info.dataOffsets[0]},${p.info.dataOffsets[1]}]}`);
  }
  if (offset > MAX_FORMAT_INT) throw new ChipcError('safetensors.write-too-large', `total data of ${offset} bytes exceeds the format's 2^48 − 1 limit`);
  const json = new TextEncoder().encode(`{${parts.join(',')}}`);
  const padded = Math.ceil(json.length / 8) * 8;
  const header = new Uint8Array(padded).fill(0x20);
  header.set(json);
  return { header, dataSize: offset };
}

const tempName = tempSibling;

export interface WriteResult {
  path: string;
  headerSize: number;
  dataSize: number;
  /** Tensors in file order, with their data offsets. */
  tensors: TensorInfo[];
}

/** Called after every piece of a file is written: its byte count and the tensor it belongs to (null: the header). */
type BytesHook = (bytes: number, tensor: string | null) => void;

/** Size on disk of a safetensors file holding `prepared` (8-byte length + padded header + data). */
function fileSizeOf(prepared: Prepared[], metadata: Record<string, string>): number {
  const { header, dataSize } = buildHeader(prepared, metadata);
  return 8 + header.length + dataSize;
}

function writePrepared(target: string, prepared: Prepared[], opts: WriteOptions, onBytes?: BytesHook): WriteResult {
  const { header, dataSize } = buildHeader(prepared, metadataWithFormat(opts.metadata));
  const tmp = tempName(target, 'tmp');
  let fd: number | null = null;
  try {
    fd = fs.openSync(tmp, 'wx');
    const holes = opts.holes !== false;
    const w = new BufferedWriter(fd, [], holes);
    const len = new Uint8Array(8);
    new DataView(len.buffer).setBigUint64(0, BigInt(header.length), true);
    w.write(len);
    w.write(header);
    onBytes?.(8 + header.length, null);
    for (const { source, info } of prepared) {
      const q = JSON.stringify(info.name);
      let written = 0;
      const count = (n: number): void => {
        if (written + n > info.byteLength) {
          throw new ChipcError('safetensors.source-size', `tensor ${q}: source yielded more than the ${info.byteLength} bytes its shape ${JSON.stringify(info.shape)} of ${info.dtype} needs`);
        }
        written += n;
        onBytes?.(n, info.name);
      };
      // With holes, the zeros a source knows of (sparseChunks' counts, slices of the shared zero
      // buffer) are skipped when the run is long enough; the bytes are the same either way.
      const chunks = holes && source.sparseChunks ? source.sparseChunks() : source.chunks();
      for (const chunk of chunks) {
        if (typeof chunk === 'number') {
          if (!Number.isSafeInteger(chunk) || chunk < 0) throw new ChipcError('safetensors.source-chunk', `tensor ${q}: source yielded a zero run of ${chunk} bytes`);
          count(chunk);
          w.writeZeros(chunk);
        } else if (chunk instanceof Uint8Array) {
          count(chunk.length);
          if (chunk.buffer === ZEROS.buffer) w.writeZeros(chunk.length);
          else w.write(chunk);
        } else {
          throw new ChipcError('safetensors.source-chunk', `tensor ${q}: source yielded a ${Object.prototype.toString.call(chunk)}, not a Uint8Array`);
        }
      }
      if (written !== info.byteLength) {
        throw new ChipcError('safetensors.source-size', `tensor ${q}: source yielded ${written} bytes but shape ${JSON.stringify(info.shape)} of ${info.dtype} needs ${info.byteLength}`);
      }
    }
    w.end();
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fd = null;
    fs.renameSync(tmp, target);
  } catch (e) {
    if (fd !== null) fs.closeSync(fd);
    removeTemp(tmp);
    throw e;
  }
  return { path: target, headerSize: header.length, dataSize, tensors: prepared.map((p) => ({ ...p.info })) };
}

/**
 * Writes one .safetensors file at `target` from `sources` (streamed; each source iterated once).
 * Refuses duplicate or invalid names, invalid shapes and sources whose byte count is wrong.
 * Atomic: written to a temporary file beside `target`, then renamed over it.
 */
export function writeSafetensors(target: string, sources: readonly TensorSource[], opts: WriteOptions = {}): WriteResult {
  return writePrepared(target, prepare(sources), opts);
}

// ---------------------------------------------------------------------------------------------
// Sharded checkpoints

export interface CheckpointDirWriteOptions extends CheckpointWriteOptions {
  /** Replace an existing non-empty directory (default: refuse). */
  overwrite?: boolean;
  /** More files (e.g. config.json) written into the directory before it is renamed into place. */
  extraFiles?: Record<string, string | Uint8Array>;
  /**
   * Called after every chunk written to a shard (and once after the shard's header), with the
   * running byte count over all shards; then once more with `done: true` when the directory is in
   * place. Synchronous: a slow callback slows the write (throttle inside it, see src/cli/support/progress.ts).
   * Has no effect on the bytes written.
   */
  onProgress?: (p: WriteProgress) => void;
}

export interface CheckpointWriteResult {
  dir: string;
  /** File names written (shards, then the index if any, then extra files). */
  files: string[];
  /** Sum of tensor data bytes (the index's total_size). */
  totalSize: number;
  /** Sum of element counts (the index's total_parameters). */
  totalParameters: number;
  weightMap: Record<string, string>;
}

/**
 * Splits tensors (in ascending name order) into shards the way huggingface_hub does: a tensor
 * larger than `maxShardSize` gets a shard of its own (placed when met); otherwise it joins the
 * current shard unless that would exceed the limit, which closes the current shard first.
 */
export function planShards<T extends { name: string; byteLength: number }>(tensors: readonly T[], maxShardSize: number): T[][] {
  const sorted = [...tensors].sort((a, b) => compareCodePoints(a.name, b.name));
  const shards: T[][] = [];
  let cur: T[] = [];
  let curSize = 0;
  for (const t of sorted) {
    if (t.byteLength > maxShardSize) {
      shards.push([t]);
      continue;
    }
    if (curSize + t.byteLength > maxShardSize && cur.length > 0) {
      shards.push(cur);
      cur = [];
      curSize = 0;
    }
    cur.push(t);
    curSize += t.byteLength;
  }
  if (cur.length > 0 || shards.length === 0) shards.push(cur);
  return shards;
}

/** `model-0000i-of-0000n.safetensors` (i 1-based). */
export function shardFileName(i: number, n: number): string {
  return `model-${String(i).padStart(5, '0')}-of-${String(n).padStart(5, '0')}.safetensors`;
}

/**
 * Serialises like Python's `json.dumps(v, indent=2, sort_keys=True)` (ensure_ascii: every
 * character outside space..'~' escaped as \uXXXX lowercase; keys sorted by code point).
 * Supports objects, arrays, strings, finite numbers (integers printed as integers), booleans, null.
 */
export function pythonJsonDumps(v: unknown, indent = 2, level = 0): string {
  const pad = (l: number): string => ' '.repeat(indent * l);
  if (v === null) return 'null';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) throw new ChipcError('safetensors.write-json', `cannot write ${v} as a Python-compatible JSON integer`);
    return String(v);
  }
  if (typeof v === 'string') return pyString(v);
  if (Array.isArray(v)) {
    if (v.length === 0) return '[]';
    return `[\n${v.map((x) => pad(level + 1) + pythonJsonDumps(x, indent, level + 1)).join(',\n')}\n${pad(level)}]`;
  }
  if (typeof v === 'object') {
    const keys = Object.keys(v as object).sort(compareCodePoints);
    if (keys.length === 0) return '{}';
    const rec = v as Record<string, unknown>;
    return `{\n${keys.map((k) => `${pad(level + 1)}${pyString(k)}: ${pythonJsonDumps(rec[k], indent, level + 1)}`).join(',\n')}\n${pad(level)}}`;
  }
  throw new ChipcError('safetensors.write-json', `cannot write a ${typeof v} as JSON`);
}

function pyString(s: string): string {
  const named: Record<string, string> = { '"': '\\"', '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f' };
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    const c = s.charCodeAt(i);
    if (ch in named) out += named[ch];
    else if (c < 0x20 || c > 0x7e) out += `\\u${c.toString(16).padStart(4, '0')}`; // UTF-16 units: surrogate pairs as Python writes them
    else out += ch;
  }
  return out + '"';
}

/** The exact text of model.safetensors.index.json for a weight map (as transformers writes it). */
export function indexJson(totalSize: number, totalParameters: number, weightMap: Record<string, string>): string {
  return pythonJsonDumps({ metadata: { total_parameters: totalParameters, total_size: totalSize }, weight_map: weightMap }) + '\n';
}

/**
 * Renames the finished directory `tmpDir` to `target`; an existing `target` is first moved aside
 * and removed only once the new one is in place (restored if the rename fails).
 */
export function moveDirIntoPlace(tmpDir: string, target: string): void {
  if (fs.existsSync(target)) {
    const old = tempName(target, 'old');
    fs.renameSync(target, old);
    try {
      fs.renameSync(tmpDir, target);
    } catch (e) {
      fs.renameSync(old, target);
      throw e;
    }
    fs.rmSync(old, { recursive: true, force: true });
  } else {
    fs.renameSync(tmpDir, target);
  }
}

/** The shard plan of a checkpoint directory (shared by writeCheckpoint and layoutCheckpoint). */
interface CheckpointPlan {
  meta: Record<string, string>;
  shards: { file: string; members: Prepared[] }[];
  weightMap: Record<string, string>;
  totalSize: number;
  totalParameters: number;
  extra: [string, string | Uint8Array][];
}

/** Validates the options and sources, plans the shards and names their files, checks the extra file names. */
function planCheckpoint(sources: readonly TensorSource[], opts: CheckpointDirWriteOptions): CheckpointPlan {
  const max = opts.maxShardSize ?? DEFAULT_MAX_SHARD_SIZE;
  if (!Number.isSafeInteger(max) || max <= 0) throw new ChipcError('safetensors.write-shard-size', `maxShardSize must be a positive integer, got ${max}`);
  const prepared = prepare(sources);
  const meta = metadataWithFormat(opts.metadata);
  const planned = planShards(prepared.map((p) => ({ name: p.info.name, byteLength: p.info.byteLength, p })), max);
  const n = planned.length;
  const weightMap: Record<string, string> = {};
  let totalSize = 0;
  let totalParameters = 0;
  for (const p of prepared) {
    totalSize += p.info.byteLength;
    totalParameters += p.info.numel;
  }
  const extra = Object.entries(opts.extraFiles ?? {});
  for (const [name] of extra) {
    if (name === '' || name !== path.basename(name) || name === '.' || name === '..' || name.includes('\\') || name.endsWith('.safetensors') || name === INDEX_FILE_NAME) {
      throw new ChipcError('checkpoint.extra-file', `extra file name ${JSON.stringify(name)} must be a plain file name that is not a shard or the index`);
    }
  }
  const shards = planned.map((shard, i) => {
    const file = n === 1 ? SINGLE_FILE_NAME : shardFileName(i + 1, n);
    for (const s of shard) weightMap[s.name] = file;
    return { file, members: shard.map((s) => s.p) };
  });
  return { meta, shards, weightMap, totalSize, totalParameters, extra };
}

/**
 * Writes a checkpoint directory: `model.safetensors` when everything fits in one shard, else
 * `model-0000i-of-0000n.safetensors` shards plus `model.safetensors.index.json`. Atomic-ish: all
 * files are written into a temporary sibling directory that is then renamed to `dir`. An existing
 * non-empty `dir` is refused unless `overwrite: true` (then it is replaced as a whole).
 */
export function writeCheckpoint(dir: string, sources: readonly TensorSource[], opts: CheckpointDirWriteOptions = {}): CheckpointWriteResult {
  const { meta, shards, weightMap, totalSize, totalParameters, extra } = planCheckpoint(sources, opts);
  const n = shards.length;
  const target = path.resolve(dir);
  if (fs.existsSync(target)) {
    if (!fs.statSync(target).isDirectory()) throw new ChipcError('checkpoint.target-exists', `${dir}: exists and is not a directory`);
    if (fs.readdirSync(target).length > 0 && !opts.overwrite) throw new ChipcError('checkpoint.target-exists', `${dir}: directory exists and is not empty (pass overwrite to replace it)`);
  }
  const files: string[] = [];
  const tmpDir = tempName(target, 'tmpdir');
  // The parent may not exist yet (`-o out/model`): create it, as a user expects of an output path.
  fs.mkdirSync(path.dirname(path.resolve(target)), { recursive: true });
  fs.mkdirSync(tmpDir);
  const onProgress = opts.onProgress;
  // Sizes of every shard file are known before writing (headers are deterministic), so progress
  // has a fixed total from the first report on.
  const totalBytes = onProgress ? shards.reduce((s, shard) => s + fileSizeOf(shard.members, meta), 0) : 0;
  let bytesWritten = 0;
  try {
    shards.forEach((shard, i) => {
      const file = shard.file;
      const hook: BytesHook | undefined = onProgress && ((bytes, tensor) => {
        bytesWritten += bytes;
        onProgress({ bytesWritten, totalBytes, shard: i + 1, shards: n, file, tensor, done: false });
      });
      writePrepared(path.join(tmpDir, file), shard.members, { metadata: meta, holes: opts.holes }, hook);
      files.push(file);
    });
    if (n > 1) {
      fs.writeFileSync(path.join(tmpDir, INDEX_FILE_NAME), indexJson(totalSize, totalParameters, weightMap));
      files.push(INDEX_FILE_NAME);
    }
    for (const [name, content] of extra) {
      fs.writeFileSync(path.join(tmpDir, name), content);
      files.push(name);
    }
    moveDirIntoPlace(tmpDir, target);
  } catch (e) {
    removeTemp(tmpDir);
    throw e;
  }
  if (bytesWritten !== totalBytes) throw new Error(`internal: wrote ${bytesWritten} shard bytes, planned ${totalBytes}`);
  onProgress?.({
    bytesWritten, totalBytes, shard: n, shards: n, file: n === 1 ? SINGLE_FILE_NAME : shardFileName(n, n), tensor: null, done: true,
  });
  return { dir, files, totalSize, totalParameters, weightMap };
}

// ---------------------------------------------------------------------------------------------
// Sources

export interface SourceOptions {
  /**
   * Refuse values that the dtype cannot hold exactly (ChipcError safetensors.inexact naming the element).
   * Default TRUE here: chipc never rounds a weight silently. Pass false to round to nearest even.
   */
  exact?: boolean;
}

/**
 * A tensor from data in memory. `data` is a Float32Array of numel values (encoded to `dtype` in
 * chunks, see encodeFromF32) or a Uint8Array of the tensor's exact little-endian bytes (any dtype).
 */
export function denseSource(name: string, dtype: DType, shape: number[], data: Float32Array | Uint8Array, opts: SourceOptions = {}): TensorSource {
  const label = `tensor ${JSON.stringify(name)}`;
  const { numel, byteLength } = checkShape(label, dtype, shape);
  if (data instanceof Uint8Array) {
    if (data.length !== byteLength) throw new ChipcError('safetensors.source-size', `${label}: ${data.length} bytes given, shape ${JSON.stringify(shape)} of ${dtype} needs ${byteLength}`);
    return {
      name, dtype, shape: [...shape],
      *chunks() {
        for (let s = 0; s < data.length; s += 16 << 20) yield data.subarray(s, Math.min(data.length, s + (16 << 20)));
      },
    };
  }
  if (!(data instanceof Float32Array)) throw new ChipcError('safetensors.source-data', `${label}: data must be a Float32Array or Uint8Array`);
  if (data.length !== numel) throw new ChipcError('safetensors.source-size', `${label}: ${data.length} values given, shape ${JSON.stringify(shape)} has ${numel} elements`);
  if (!ENCODABLE.includes(dtype)) throw new ChipcError('safetensors.unsupported-dtype', `${label}: cannot encode float32 values as ${dtype}; pass raw bytes`);
  const exact = opts.exact ?? true;
  return {
    name, dtype, shape: [...shape],
    *chunks() {
      for (let s = 0; s < numel; s += DENSE_CHUNK_ELEMENTS) {
        yield encodeFromF32(dtype, data.subarray(s, Math.min(numel, s + DENSE_CHUNK_ELEMENTS)), { exact, indexBase: s, label });
      }
    },
  };
}

/** A tensor of `dtype` and `shape` whose bytes are all zero (never allocated: slices of a shared buffer). */
export function zerosSource(name: string, dtype: DType, shape: number[]): TensorSource {
  const { byteLength } = checkShape(`tensor ${JSON.stringify(name)}`, dtype, shape);
  return {
    name, dtype, shape: [...shape],
    *chunks() {
      for (let left = byteLength; left > 0; left -= ZEROS.length) yield ZEROS.subarray(0, Math.min(left, ZEROS.length));
    },
  };
}

/**
 * A mostly-zero tensor: element `indices[k]` (flat row-major index, strictly ascending) holds
 * `values[k]`, every other element is zero. Zero runs are streamed from a shared zero buffer, so
 * memory stays O(nnz + 1 MiB) whatever numel is. A value −0 is stored as −0.
 */
export function sparseSource(
  name: string, dtype: DType, shape: number[], indices: ArrayLike<number>, values: Float32Array, opts: SourceOptions = {},
): TensorSource {
  const label = `tensor ${JSON.stringify(name)}`;
  const { numel, byteLength } = checkShape(label, dtype, shape);
  if (!ENCODABLE.includes(dtype)) throw new ChipcError('safetensors.unsupported-dtype', `${label}: sparse sources support ${ENCODABLE.join(', ')}, not ${dtype}`);
  if (indices.length !== values.length) throw new ChipcError('safetensors.source-data', `${label}: ${indices.length} indices but ${values.length} values`);
  for (let k = 0; k < indices.length; k++) {
    const i = indices[k];
    if (!Number.isSafeInteger(i) || i < 0 || i >= numel) throw new ChipcError('safetensors.source-data', `${label}: index ${k} is ${i}, outside [0, ${numel})`);
    if (k > 0 && i <= indices[k - 1]) throw new ChipcError('safetensors.source-data', `${label}: indices must be strictly ascending (indices[${k - 1}] = ${indices[k - 1]}, indices[${k}] = ${i})`);
  }
  const exact = opts.exact ?? true;
  let encoded: Uint8Array;
  try {
    encoded = encodeFromF32(dtype, values, { exact, label });
  } catch (e) {
    if (!(e instanceof ChipcError) || e.code !== 'safetensors.inexact') throw e;
    for (let k = 0; k < values.length; k++) {
      try {
        encodeFromF32(dtype, values.subarray(k, k + 1), { exact, label });
      } catch {
        throw new ChipcError('safetensors.inexact', `${label}: element ${indices[k]} (non-zero #${k}) = ${fmtF32(values[k])} is not exactly representable as ${dtype}`);
      }
    }
    throw e;
  }
  const size = dtypeBytes(dtype);
  const STAGE = 1 << 20;
  return {
    name, dtype, shape: [...shape],
    *chunks() {
      const EMPTY = new Uint8Array(0);
      let emitted = 0; // bytes yielded so far
      let stage = EMPTY; // staging buffer; EMPTY when none is allocated
      let fill = 0;
      // Fresh stage buffers are zero-filled, so short zero runs only advance `fill`.
      const room = (): void => {
        if (stage.length === 0) { stage = new Uint8Array(Math.min(STAGE, byteLength - emitted)); fill = 0; }
      };
      function* flush(): Generator<Uint8Array> {
        if (fill > 0) {
          const out = stage.subarray(0, fill);
          emitted += fill;
          stage = EMPTY;
          fill = 0;
          yield out;
        }
      }
      function* zeros(nb: number): Generator<Uint8Array> {
        if (nb === 0) return;
        if (fill + nb <= stage.length) { fill += nb; return; }
        yield* flush();
        if (nb < STAGE / 4) { room(); fill = nb; return; }
        for (let left = nb; left > 0; left -= ZEROS.length) {
          const c = ZEROS.subarray(0, Math.min(left, ZEROS.length));
          emitted += c.length;
          yield c;
        }
      }
      let pos = 0; // next element index to emit
      for (let k = 0; k < indices.length; k++) {
        yield* zeros((indices[k] - pos) * size);
        if (fill + size > stage.length) { yield* flush(); room(); }
        stage.set(encoded.subarray(k * size, (k + 1) * size), fill);
        fill += size;
        pos = indices[k] + 1;
      }
      yield* zeros((numel - pos) * size);
      yield* flush();
    },
  };
}

/** Hex SHA-256 of a tensor's raw bytes, streamed chunk by chunk. */
export function sha256OfTensor(store: TensorStore, name: string): string {
  const h = crypto.createHash('sha256');
  for (const c of store.chunks(name)) h.update(c);
  return h.digest('hex');
}

// ---------------------------------------------------------------------------------------------
// Checkpoint layout without writing (for writers of other containers, e.g. the .chip file)

/** One file of a checkpoint directory as writeCheckpoint would write it. */
export type LaidOutFile =
  | { name: string; kind: 'raw'; bytes: Uint8Array }
  | {
    name: string;
    kind: 'safetensors';
    /** The file's first 8 + N bytes: the u64 header length and the padded header JSON. */
    header: Uint8Array;
    /** Tensors in file (data-offset) order, each with its source and its header entry. */
    tensors: { source: TensorSource; info: TensorInfo }[];
    /** 8 + N + the data buffer's length. */
    size: number;
  };

export interface CheckpointLayout {
  /** Every file writeCheckpoint would write, sorted by name (code points). */
  files: LaidOutFile[];
  totalSize: number;
  totalParameters: number;
  weightMap: Record<string, string>;
}

/**
 * The files `writeCheckpoint(dir, sources, opts)` writes, with the same shard plan, headers,
 * index text and extra files, but nothing written and no tensor streamed: each safetensors file
 * is given as its header bytes and its tensors' sources in file order. Same validation and
 * errors as writeCheckpoint (except those about the target directory).
 */
export function layoutCheckpoint(sources: readonly TensorSource[], opts: CheckpointDirWriteOptions = {}): CheckpointLayout {
  const { meta, shards, weightMap, totalSize, totalParameters, extra } = planCheckpoint(sources, opts);
  const n = shards.length;
  const files: LaidOutFile[] = [];
  for (const { file, members } of shards) {
    const { header, dataSize } = buildHeader(members, meta); // sorts `members` into file order
    const full = new Uint8Array(8 + header.length);
    new DataView(full.buffer).setBigUint64(0, BigInt(header.length), true);
    full.set(header, 8);
    files.push({
      name: file, kind: 'safetensors', header: full, size: full.length + dataSize,
      tensors: members.map((m) => ({ source: m.source, info: { ...m.info, shape: [...m.info.shape], dataOffsets: [m.info.dataOffsets[0], m.info.dataOffsets[1]] } })),
    });
  }
  if (n > 1) files.push({ name: INDEX_FILE_NAME, kind: 'raw', bytes: new TextEncoder().encode(indexJson(totalSize, totalParameters, weightMap)) });
  for (const [name, content] of extra) {
    files.push({ name, kind: 'raw', bytes: typeof content === 'string' ? new Uint8Array(Buffer.from(content, 'utf8')) : content });
  }
  files.sort((a, b) => compareCodePoints(a.name, b.name));
  return { files, totalSize, totalParameters, weightMap };
}
