/**
 * TensorSources → `.chip` file directly (docs/chip-file.md, "Writing straight from a compile"):
 * the checkpoint is laid out exactly as writeCheckpoint would write it (layoutCheckpoint: same
 * shard plan, headers, index and extra files), and each tensor's bytes stream from its source
 * through the block scanner, whose block bytes go to a temporary payload file, and, with
 * `fileHashes`, through the SHA-256 of its file (docs/chip-file.md "Version 4"). No dense file or directory is written, and memory is one source chunk plus the
 * current tensor's block table. The result is byte-identical to `compactCheckpoint` of the
 * directory writeCheckpoint would have written (same manifest, same blocks: the scanner's output
 * depends only on the bytes, not on how they are chunked). Atomic: temporaries, then a rename.
 */
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ChipcError } from '../util/errors.ts';
import type { TensorSource, WriteProgress } from '../safetensors/types.ts';
import { layoutCheckpoint, type CheckpointDirWriteOptions } from '../safetensors/writer.ts';
import { CHECKSUM_BYTES, DEFAULT_MIN_GAP, PREFIX_BYTES, type ChipCodec, type ChipFileEntry, type ChipTensor, type Range } from './format.ts';
import { BufferedWriter, removeTemp, tempSibling } from './io.ts';
import { byteHasher } from './hash-thread.ts';
import { chipManifest, finishChipFile, MAX_MIN_GAP, resolveCodec, writeRawFile, writeTensorBlocks, type CompactResult } from './compact.ts';

export interface ChipFromSourcesOptions {
  /** Bytes of tensor data per shard (writeCheckpoint's maxShardSize; default 5 GB). */
  maxShardSize?: number;
  /** Extra `__metadata__` strings (format: "pt" is always written). */
  metadata?: Record<string, string>;
  /** More files of the checkpoint (config.json, chipc-manifest.json, …): name → contents. */
  extraFiles?: Record<string, string | Uint8Array>;
  /** Replace an existing file at the target (default: refuse). */
  overwrite?: boolean;
  /** Zero runs shorter than this many bytes stay inside a block (default 8). */
  minGap?: number;
  /** `br` (default): version 2, frames brotli-compressed where that pays; `none`: version 1, all verbatim. */
  codec?: ChipCodec;
  /** Decoded bytes per frame with codec br (default 1 MiB). */
  frameSize?: number;
  /** Record each safetensors file's dense SHA-256 (CompactOptions.fileHashes; default off). */
  fileHashes?: boolean;
  /**
   * Progress in dense bytes: the same reports writeCheckpoint's onProgress would give for the
   * directory (bytesWritten counts the shard bytes streamed through the scanner).
   */
  onProgress?: (p: WriteProgress) => void;
}

/**
 * Writes the `.chip` file of the checkpoint `writeCheckpoint(dir, sources, opts)` would write,
 * at `target`, without writing the directory. Each source is iterated once.
 */
export function writeChipFromSources(target: string, sources: readonly TensorSource[], opts: ChipFromSourcesOptions = {}): CompactResult {
  const minGap = opts.minGap ?? DEFAULT_MIN_GAP;
  if (!Number.isSafeInteger(minGap) || minGap < 1 || minGap > MAX_MIN_GAP) throw new ChipcError('chipfile.option', `minGap must be an integer in [1, ${MAX_MIN_GAP}], got ${minGap}`);
  const wc = resolveCodec(opts);
  const layoutOpts: CheckpointDirWriteOptions = { maxShardSize: opts.maxShardSize, metadata: opts.metadata, extraFiles: opts.extraFiles };
  const layout = layoutCheckpoint(sources, layoutOpts);
  const out = path.resolve(target);
  if (fs.existsSync(out)) {
    if (!fs.statSync(out).isFile()) throw new ChipcError('chipfile.target-exists', `${target}: exists and is not a regular file`);
    if (!opts.overwrite) throw new ChipcError('chipfile.target-exists', `${target}: file exists (pass overwrite to replace it)`);
  }
  fs.mkdirSync(path.dirname(out), { recursive: true });
  const shardFiles = layout.files.filter((f) => f.kind === 'safetensors');
  const totalBytes = shardFiles.reduce((s, f) => s + f.size, 0);
  const onProgress = opts.onProgress;
  let bytesWritten = 0;
  const payloadTmp = tempSibling(out, 'payload');
  const finalTmp = tempSibling(out, 'tmp');
  let pfd: number | null = null;
  // With fileHashes every dense byte is hashed (the files' sha256): on a second thread when there
  // are many. Raw files are always hashed (they are small).
  const hasher = wc.fileHashes ? byteHasher(totalBytes) : null;
  try {
    pfd = fs.openSync(payloadTmp, 'wx+');
    const payload = new BufferedWriter(pfd);
    const files: ChipFileEntry[] = [];
    let denseBytes = 0;
    let blocks = 0;
    let blockBytes = 0;
    let tensorCount = 0;
    const range = (start: number): Range => [start, payload.position - start];
    for (const f of layout.files) {
      if (f.kind === 'raw') {
        const hash = crypto.createHash('sha256');
        const stored = writeRawFile(payload, wc, [f.bytes], hash);
        files.push({ name: f.name, kind: 'raw', sha256: hash.digest('hex'), ...stored });
        denseBytes += f.bytes.length;
        continue;
      }
      const shard = shardFiles.indexOf(f) + 1;
      const report = (tensor: string | null): void =>
        onProgress?.({ bytesWritten, totalBytes, shard, shards: shardFiles.length, file: f.name, tensor, done: false });
      const hash = hasher?.newHash() ?? null;
      const headerStart = payload.position;
      hash?.update(f.header);
      payload.write(f.header);
      const header = range(headerStart);
      bytesWritten += f.header.length;
      report(null);
      const tensors: ChipTensor[] = [];
      for (const { source, info } of f.tensors) {
        const q = JSON.stringify(info.name);
        // the zeros a source knows of are skipped, not scanned (TensorSource.sparseChunks)
        const sparse = source.sparseChunks !== undefined;
        const chunks = sparse ? source.sparseChunks!() : source.chunks();
        const t = writeTensorBlocks(payload, minGap, wc, info, chunks, hash, (chunk, seen) => {
          const n = chunk instanceof Uint8Array ? chunk.length : sparse && typeof chunk === 'number' && Number.isSafeInteger(chunk) && chunk >= 0 ? chunk : -1;
          if (n < 0) {
            const what = typeof chunk === 'number' ? `${sparse ? 'a zero run of' : 'the number'} ${chunk}` : `a ${Object.prototype.toString.call(chunk)}`;
            throw new ChipcError('safetensors.source-chunk', `tensor ${q}: source yielded ${what}, not a Uint8Array${sparse ? ' or a byte count' : ''}`);
          }
          if (seen + n > info.byteLength) {
            throw new ChipcError('safetensors.source-size', `tensor ${q}: source yielded more than the ${info.byteLength} bytes its shape ${JSON.stringify(info.shape)} of ${info.dtype} needs`);
          }
          bytesWritten += n;
          report(info.name);
        });
        if (t.seen !== info.byteLength) {
          throw new ChipcError('safetensors.source-size', `tensor ${q}: source yielded ${t.seen} bytes but shape ${JSON.stringify(info.shape)} of ${info.dtype} needs ${info.byteLength}`);
        }
        tensors.push(t.tensor);
        blocks += t.tensor.blocks;
        blockBytes += t.storedBytes;
      }
      tensorCount += tensors.length;
      files.push({ name: f.name, kind: 'safetensors', size: f.size, sha256: hash ? hash.digestHex() : null, header, tensors });
      denseBytes += f.size;
    }
    payload.flush();
    const manifest = chipManifest(wc, minGap, payload.position, files);
    const payloadFd = pfd;
    pfd = null; // finishChipFile closes it
    const manifestBytes = finishChipFile(out, manifest, payloadFd, payloadTmp, finalTmp);
    const last = shardFiles[shardFiles.length - 1];
    onProgress?.({ bytesWritten, totalBytes, shard: shardFiles.length, shards: shardFiles.length, file: last ? last.name : '', tensor: null, done: true });
    return {
      path: target, files: files.length, tensors: tensorCount, blocks, denseBytes,
      chipBytes: PREFIX_BYTES + manifestBytes.length + manifest.payloadSize + CHECKSUM_BYTES, blockBytes,
    };
  } catch (e) {
    if (pfd !== null) fs.closeSync(pfd);
    removeTemp(payloadTmp);
    removeTemp(finalTmp);
    throw e;
  } finally {
    hasher?.close();
  }
}
