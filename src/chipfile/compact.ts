/**
 * Dense checkpoint directory → `.chip` file (docs/chip-file.md). Streaming: each tensor is read
 * in chunks through the TensorStore and scanned for non-zero blocks (scan.ts), whose bytes go to
 * a temporary payload file; then the final file (prefix, manifest, payload, checksum) is written
 * under a temporary name and renamed into place. On any error both temporaries are removed.
 */
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ChipcError } from '../util/errors.ts';
import { openCheckpoint, ShardedStore, SINGLE_FILE_NAME } from '../safetensors/checkpoint.ts';
import { compareCodePoints, DEFAULT_CHUNK_BYTES, openSafetensors, SafetensorsFile } from '../safetensors/reader.ts';
import {
  CHECKSUM_BYTES, CHIP_MAGIC, CHIP_VERSION, CHIP_VERSION_PLAIN, DEFAULT_FRAME_SIZE, DEFAULT_MIN_GAP, encodeBlockTable, FORMAT_NAME,
  isPlainFileName, MAX_FRAME_SIZE, PREFIX_BYTES, serializeManifest, type ChipCodec, type ChipFileEntry, type ChipManifest,
  type ChipRawFile, type ChipTensor, type Range,
} from './format.ts';
import { encodeFrameIndex, FrameEncoder } from './codec.ts';
import type { ByteHash } from './hash-thread.ts';
import { BufferedWriter, readExactly, removeTemp, tempSibling, ZEROS } from './io.ts';
import type { TensorInfo } from '../safetensors/types.ts';
import { BlockScanner } from './scan.ts';

/** Largest accepted minGap (a gap is bridged with zeros sliced from the 1 MiB shared buffer). */
export const MAX_MIN_GAP = 65536;

export interface CompactOptions {
  /** Replace an existing file at the target (default: refuse). */
  overwrite?: boolean;
  /** Zero runs shorter than this many bytes stay inside a block (default 8). */
  minGap?: number;
  /** Bytes per streamed chunk (default 16 MiB). */
  chunkBytes?: number;
  /** `br` (default): version 2, frames brotli-compressed where that pays; `none`: version 1, all verbatim. */
  codec?: ChipCodec;
  /** Decoded bytes per frame with codec br (default 1 MiB). Part of the file's bytes. */
  frameSize?: number;
  /**
   * Record each safetensors file's SHA-256 in the manifest (default: only with codec none, whose
   * version 1 requires it). Hashing reads every dense byte: most of a compiled chip's write.
   */
  fileHashes?: boolean;
}

/** The codec settings every .chip writer resolves its options to. */
export interface ChipWriteCodec {
  codec: ChipCodec;
  frameSize: number;
  /** Whether safetensors files get their dense SHA-256 (always with codec none). */
  fileHashes: boolean;
}

/**
 * Checks and defaults the codec options (`codec` br unless "none"; `frameSize` 1 MiB; `fileHashes`
 * off, except with codec none).
 */
export function resolveCodec(opts: { codec?: ChipCodec; frameSize?: number; fileHashes?: boolean }): ChipWriteCodec {
  const codec = opts.codec ?? 'br';
  if (codec !== 'br' && codec !== 'none') throw new ChipcError('chipfile.option', `codec must be "br" or "none", got ${JSON.stringify(codec)}`);
  const frameSize = opts.frameSize ?? DEFAULT_FRAME_SIZE;
  if (!Number.isSafeInteger(frameSize) || frameSize < 1 || frameSize > MAX_FRAME_SIZE) {
    throw new ChipcError('chipfile.option', `frameSize must be an integer in [1, ${MAX_FRAME_SIZE}], got ${frameSize}`);
  }
  if (opts.fileHashes !== undefined && typeof opts.fileHashes !== 'boolean') throw new ChipcError('chipfile.option', `fileHashes must be a boolean, got ${JSON.stringify(opts.fileHashes)}`);
  return { codec, frameSize, fileHashes: codec === 'none' || opts.fileHashes === true };
}

/** The manifest of a finished payload, in the version the codec asks for. */
export function chipManifest(wc: ChipWriteCodec, minGap: number, payloadSize: number, files: ChipFileEntry[]): ChipManifest {
  const plain = wc.codec === 'none';
  return { format: FORMAT_NAME, version: plain ? CHIP_VERSION_PLAIN : CHIP_VERSION, minGap, frameSize: plain ? 0 : wc.frameSize, payloadSize, files };
}

export interface CompactResult {
  path: string;
  files: number;
  tensors: number;
  blocks: number;
  /** Sum of the directory's file sizes. */
  denseBytes: number;
  /** Size of the .chip file. */
  chipBytes: number;
  /** Tensor bytes stored in blocks (non-zero bytes plus the short zero runs inside blocks). */
  blockBytes: number;
}

/** The directory's entries, sorted by code point; anything but a plain regular file is refused. */
export function listCheckpointFiles(dir: string): string[] {
  let st: fs.Stats;
  try {
    st = fs.statSync(dir);
  } catch (e) {
    throw new ChipcError('chipfile.dir', `${dir}: no such directory`, { cause: e });
  }
  if (!st.isDirectory()) throw new ChipcError('chipfile.dir', `${dir}: not a directory (compact takes a checkpoint directory)`);
  const names = fs.readdirSync(dir).sort(compareCodePoints);
  for (const n of names) {
    const lst = fs.lstatSync(path.join(dir, n));
    if (!lst.isFile() || !isPlainFileName(n)) {
      throw new ChipcError('chipfile.dir-entry', `${dir}: entry ${JSON.stringify(n)} is not a regular file (a .chip stands for a flat directory of files)`);
    }
  }
  return names;
}

/**
 * Writes the `.chip` form of the checkpoint directory `dir` to `target`. The directory must open
 * as a checkpoint (openCheckpoint validates shards and index), and every `*.safetensors` file in
 * it must be part of that checkpoint. All other files are stored verbatim.
 */
export function compactCheckpoint(dir: string, target: string, opts: CompactOptions = {}): CompactResult {
  const minGap = opts.minGap ?? DEFAULT_MIN_GAP;
  if (!Number.isSafeInteger(minGap) || minGap < 1 || minGap > MAX_MIN_GAP) throw new ChipcError('chipfile.option', `minGap must be an integer in [1, ${MAX_MIN_GAP}], got ${minGap}`);
  const chunkBytes = opts.chunkBytes ?? DEFAULT_CHUNK_BYTES;
  if (!Number.isSafeInteger(chunkBytes) || chunkBytes < 1) throw new ChipcError('chipfile.option', `chunkBytes must be a positive integer, got ${chunkBytes}`);
  const wc = resolveCodec(opts);
  const names = listCheckpointFiles(dir);
  // Validate the directory as a checkpoint and find its tensor files.
  const ckpt = openCheckpoint(dir);
  let shardFiles: Set<string>;
  try {
    shardFiles = ckpt instanceof ShardedStore ? new Set(ckpt.shards.map((s) => path.basename(s.path))) : new Set([SINGLE_FILE_NAME]);
  } finally {
    ckpt.close();
  }
  for (const n of names) {
    if (n.endsWith('.safetensors') && !shardFiles.has(n)) {
      throw new ChipcError('chipfile.stray-shard', `${dir}: ${n} is not part of the checkpoint (not ${SINGLE_FILE_NAME} and not in the index); remove it`);
    }
  }

  const out = path.resolve(target);
  if (fs.existsSync(out)) {
    if (!fs.statSync(out).isFile()) throw new ChipcError('chipfile.target-exists', `${target}: exists and is not a regular file`);
    if (!opts.overwrite) throw new ChipcError('chipfile.target-exists', `${target}: file exists (pass overwrite to replace it)`);
  }
  fs.mkdirSync(path.dirname(out), { recursive: true });
  const payloadTmp = tempSibling(out, 'payload');
  const finalTmp = tempSibling(out, 'tmp');
  let pfd: number | null = null;
  try {
    pfd = fs.openSync(payloadTmp, 'wx+');
    const payload = new BufferedWriter(pfd);
    const files: ChipFileEntry[] = [];
    let denseBytes = 0;
    let blocks = 0;
    let blockBytes = 0;
    let tensorCount = 0;
    const range = (start: number): Range => [start, payload.position - start];
    for (const name of names) {
      const full = path.join(dir, name);
      const hash = crypto.createHash('sha256');
      if (!shardFiles.has(name)) {
        const fd = fs.openSync(full, 'r');
        let stored: ReturnType<typeof writeRawFile>;
        try {
          const size = fs.fstatSync(fd).size;
          stored = writeRawFile(payload, wc, (function* () {
            for (let at = 0; at < size; at += chunkBytes) yield readExactly(fd, at, Math.min(chunkBytes, size - at), full);
          })(), hash);
        } finally {
          fs.closeSync(fd);
        }
        files.push({ name, kind: 'raw', sha256: hash.digest('hex'), ...stored });
        denseBytes += stored.size;
        continue;
      }
      const st: SafetensorsFile = openSafetensors(full);
      try {
        const headerStart = payload.position;
        const fd = fs.openSync(full, 'r');
        let headerBytes: Uint8Array;
        try {
          headerBytes = readExactly(fd, 0, st.dataStart, full);
        } finally {
          fs.closeSync(fd);
        }
        const fileHash = wc.fileHashes ? hash : null;
        fileHash?.update(headerBytes);
        payload.write(headerBytes);
        const header = range(headerStart);
        const tensors: ChipTensor[] = [];
        for (const info of st.infos()) {
          const t = writeTensorBlocks(payload, minGap, wc, info, st.chunks(info.name, chunkBytes), fileHash);
          if (t.seen !== info.byteLength) throw new ChipcError('chipfile.source-size', `${full}: tensor ${JSON.stringify(info.name)} streamed ${t.seen} bytes, expected ${info.byteLength}`);
          tensors.push(t.tensor);
          blocks += t.tensor.blocks;
          blockBytes += t.storedBytes;
        }
        tensorCount += tensors.length;
        const size = st.dataStart + st.dataSize;
        files.push({ name, kind: 'safetensors', size, sha256: fileHash ? fileHash.digest('hex') : null, header, tensors });
        denseBytes += size;
      } finally {
        st.close();
      }
    }
    payload.flush();
    const manifest = chipManifest(wc, minGap, payload.position, files);
    const payloadFd = pfd;
    pfd = null; // finishChipFile closes it
    const manifestBytes = finishChipFile(out, manifest, payloadFd, payloadTmp, finalTmp);
    return {
      path: target, files: files.length, tensors: tensorCount, blocks, denseBytes,
      chipBytes: PREFIX_BYTES + manifestBytes.length + payload.position + CHECKSUM_BYTES, blockBytes,
    };
  } catch (e) {
    if (pfd !== null) fs.closeSync(pfd);
    removeTemp(payloadTmp);
    removeTemp(finalTmp);
    throw e;
  }
}

/**
 * Streams one tensor's bytes into the payload as its non-zero blocks (BlockScanner, `minGap`)
 * followed by their table, hashing every byte into `hash` (the dense file's sha256) unless it is
 * null; a number n among the chunks stands for n zero bytes (TensorSource.sparseChunks). `onChunk`
 * sees each chunk first with the byte count before it (and may refuse it by throwing). With codec
 * br both segments go through a FrameEncoder and the frame index follows the table; when no frame
 * was worth compressing the tensor is stored as codec none (the payload bytes are then exactly
 * the verbatim segments, and no index is written). Returns the manifest entry, the bytes seen
 * (the caller checks them against info.byteLength) and the (decoded) bytes stored in blocks.
 */
export function writeTensorBlocks(
  payload: BufferedWriter, minGap: number, wc: ChipWriteCodec, info: TensorInfo, chunks: Iterable<Uint8Array | number>, hash: ByteHash | null,
  onChunk?: (chunk: Uint8Array | number, seenBefore: number) => void,
): { tensor: ChipTensor; seen: number; storedBytes: number } {
  const framed = wc.codec === 'br';
  const dataStart = payload.position;
  const dataFrames = framed ? new FrameEncoder(wc.frameSize, (b) => payload.write(b)) : null;
  const scanner = new BlockScanner(minGap, dataFrames ? (b, from, to) => dataFrames.pushRange(b, from, to) : (b, from, to) => payload.write(b.subarray(from, to)));
  let seen = 0;
  for (const chunk of chunks) {
    onChunk?.(chunk, seen);
    if (typeof chunk === 'number') {
      if (hash) for (let at = 0; at < chunk; at += ZEROS.length) hash.update(ZEROS.subarray(0, Math.min(ZEROS.length, chunk - at)));
      scanner.skipZeros(chunk);
      seen += chunk;
      continue;
    }
    hash?.update(chunk);
    scanner.push(chunk);
    seen += chunk.length;
  }
  scanner.finish();
  dataFrames?.finish();
  const data: Range = [dataStart, payload.position - dataStart];
  const tableStart = payload.position;
  const tableBytes = encodeBlockTable(scanner.starts, scanner.lengths, scanner.count);
  let codec: ChipCodec = 'none';
  let stored: number[] = [];
  if (dataFrames) {
    const tableFrames = new FrameEncoder(wc.frameSize, (b) => payload.write(b));
    tableFrames.push(tableBytes);
    tableFrames.finish();
    if (dataFrames.compressed || tableFrames.compressed) codec = 'br';
    stored = [...dataFrames.stored, ...tableFrames.stored];
  } else {
    payload.write(tableBytes);
  }
  const table: Range = [tableStart, payload.position - tableStart];
  const indexStart = payload.position;
  if (codec === 'br') payload.write(encodeFrameIndex(stored));
  const frames: Range = [indexStart, payload.position - indexStart];
  const tensor: ChipTensor = {
    name: info.name, dtype: info.dtype, shape: info.shape, dataOffsets: info.dataOffsets, codec,
    data, dataSize: scanner.storedBytes, table, tableSize: tableBytes.length, frames, blocks: scanner.count,
  };
  return { tensor, seen, storedBytes: scanner.storedBytes };
}

/**
 * Writes a raw file's bytes (pushed in pieces) to the payload, hashing them into `hash`: verbatim
 * with codec none; with br, in frames (each brotli or verbatim, as a tensor's segments) followed by
 * the frame index — or, when no frame was worth compressing, as codec none (the same bytes).
 */
export function writeRawFile(payload: BufferedWriter, wc: ChipWriteCodec, pieces: Iterable<Uint8Array>, hash: ByteHash):
  Pick<ChipRawFile, 'size' | 'codec' | 'data' | 'frames'> {
  const start = payload.position;
  let size = 0;
  const frames = wc.codec === 'br' ? new FrameEncoder(wc.frameSize, (b) => payload.write(b)) : null;
  for (const b of pieces) {
    hash.update(b);
    if (frames) frames.push(b);
    else payload.write(b);
    size += b.length;
  }
  frames?.finish();
  const data: Range = [start, payload.position - start];
  if (frames === null || !frames.compressed) return { size, codec: 'none', data, frames: [payload.position, 0] };
  const indexStart = payload.position;
  payload.write(encodeFrameIndex(frames.stored));
  return { size, codec: 'br', data, frames: [indexStart, payload.position - indexStart] };
}

/**
 * Writes prefix, manifest, the payload (copied from the temporary payload file `pfd`, which this
 * closes and removes) and the checksum to `finalTmp`, fsyncs and renames it to `out`. Shared by
 * every .chip writer so the container bytes come from one place. On error the caller removes
 * `finalTmp` and `payloadTmp`; the descriptors are closed here either way.
 */
export function finishChipFile(out: string, manifest: ChipManifest, pfd: number, payloadTmp: string, finalTmp: string): Uint8Array {
  const manifestBytes = new TextEncoder().encode(serializeManifest(manifest));
  let ffd: number | null = null;
  try {
    ffd = fs.openSync(finalTmp, 'wx');
    const sum = crypto.createHash('sha256');
    const fin = new BufferedWriter(ffd, [sum]);
    const prefix = new Uint8Array(PREFIX_BYTES);
    prefix.set(CHIP_MAGIC, 0);
    const dv = new DataView(prefix.buffer);
    dv.setUint32(8, manifest.version, true);
    dv.setUint32(12, 0, true);
    dv.setBigUint64(16, BigInt(manifestBytes.length), true);
    fin.write(prefix);
    fin.write(manifestBytes);
    const size = manifest.payloadSize;
    for (let at = 0; at < size; at += 1 << 22) {
      fin.write(readExactly(pfd, at, Math.min(1 << 22, size - at), payloadTmp));
    }
    fin.write(sum.copy().digest());
    fin.flush();
    fs.fsyncSync(ffd);
  } finally {
    if (ffd !== null) fs.closeSync(ffd);
    fs.closeSync(pfd);
  }
  fs.rmSync(payloadTmp, { force: true });
  fs.renameSync(finalTmp, out);
  return manifestBytes;
}
