/**
 * Public shapes of chipc's safetensors layer (format: docs/host-architecture.md §6, docs/safetensors.md).
 * Implementations: dtype.ts (dtypes and conversions), reader.ts (one file, lazy),
 * checkpoint.ts (a file or a sharded directory with model.safetensors.index.json),
 * writer.ts (streaming, deterministic, atomic, sharded).
 */
export type DType =
  | 'BOOL' | 'U8' | 'I8' | 'F8_E5M2' | 'F8_E4M3' | 'F8_E8M0' | 'F8_E4M3FNUZ' | 'F8_E5M2FNUZ'
  | 'I16' | 'U16' | 'F16' | 'BF16'
  | 'I32' | 'U32' | 'F32'
  | 'C64' | 'F64' | 'I64' | 'U64'
  | 'F4' | 'F6_E2M3' | 'F6_E3M2';

export interface TensorInfo {
  name: string;
  dtype: DType;
  shape: number[];
  /** Relative to the start of the byte buffer (docs/host-architecture.md §6.2), [begin, end). */
  dataOffsets: [number, number];
  /** Product of shape (1 for a scalar). */
  numel: number;
  byteLength: number;
}

/** A read-only view of tensors, from one file or a sharded checkpoint. */
export interface TensorStore {
  /** Tensor names in a deterministic order (ascending by name). */
  readonly names: readonly string[];
  readonly metadata: Readonly<Record<string, string>>;
  has(name: string): boolean;
  info(name: string): TensorInfo;
  /** Raw little-endian bytes of [start, end) of the tensor's data (defaults: whole tensor). */
  readBytes(name: string, start?: number, end?: number): Uint8Array;
  /** Whole tensor as float32 (any float/int dtype upcast exactly, BOOL as 0/1). */
  readF32(name: string): Float32Array;
  /** Stream the tensor's bytes in chunks of at most `chunkBytes` (never holding the whole tensor). */
  chunks(name: string, chunkBytes?: number): Iterable<Uint8Array>;
  close(): void;
}

/**
 * Something the writer can stream. `chunks()` yields the tensor's little-endian bytes in order;
 * their total must equal numel × dtype size exactly (the writer checks and refuses otherwise).
 * A consumer is done with a chunk when it asks for the next one: a source may reuse its buffer.
 */
export interface TensorSource {
  name: string;
  dtype: DType;
  shape: number[];
  chunks(): Iterable<Uint8Array>;
  /**
   * Optional: the same bytes as `chunks()`, where a number n stands for n zero bytes, so that a
   * consumer that only needs the non-zero bytes (the `.chip` writer) skips the zeros it knows of
   * without visiting them. Chunks follow the same reuse rule.
   */
  sparseChunks?(): Iterable<Uint8Array | number>;
}

export interface WriteOptions {
  /** String map stored as `__metadata__`; `format: "pt"` is always present. */
  metadata?: Record<string, string>;
  /**
   * Skip zero runs of 64 KiB or more, leaving holes (default true; util/sparse-file.ts): the file
   * reads the same, takes less disk and is written in a fraction of the time. The zeros skipped
   * are those a source yields as counts (`sparseChunks`) or as slices of the writer's shared zero
   * buffer (zerosSource, sparseSource). false writes every byte.
   */
  holes?: boolean;
}

export interface CheckpointWriteOptions extends WriteOptions {
  /** Bytes of tensor data per shard (default 5 GB as huggingface_hub). One shard → model.safetensors, no index. */
  maxShardSize?: number;
}

/**
 * Progress of a checkpoint write (writer.ts writeCheckpoint `onProgress`). Byte counts are file
 * bytes (8-byte length + header + tensor data) summed over every shard, so `bytesWritten` ends at
 * `totalBytes`, the checkpoint's size on disk without the index and extra files.
 */
export interface WriteProgress {
  /** File bytes written so far, over all shards (monotone, never above totalBytes). */
  bytesWritten: number;
  /** File bytes of all shards together, known before the first byte is written. */
  totalBytes: number;
  /** 1-based index of the shard being written, and the number of shards. */
  shard: number;
  shards: number;
  /** File name of the shard being written. */
  file: string;
  /** Tensor whose bytes were just written; null for a shard's header and for the final report. */
  tensor: string | null;
  /** True exactly once: the last report, after the directory is complete and in place. */
  done: boolean;
}
