/**
 * Typed arrays carved from zero-filled buffers, for structures that allocate several large arrays
 * at once and write few of their entries (an incremental matmul's per-row records).
 *
 * Why: the allocator zero-fills a buffer it takes from the process heap page by page, and a fresh
 * page costs a fault, about 11 µs per 4 KiB page on the virtual machine of the benchmarks
 * (docs/benchmarks.md, "The cold window"). A buffer it maps instead is zero pages that fault only
 * where they are touched. glibc maps a request above its mmap threshold, which starts at 128 KiB
 * but rises to the size of each mapped chunk the process frees, up to 32 MiB: loading a chip frees
 * chunks of up to ~10 MB, and dropping an executor frees its own. So a record buffer of its own
 * (a few hundred KiB per matrix of the chip) came from the heap and was cleared whole, and so did
 * a 16 MiB chunk once an earlier executor's was freed. A ZeroArena's chunks of 33 MiB are always
 * mapped: a fresh process's first step touches only the records of the rows it folds.
 *
 * The chunks are SharedArrayBuffers (no other thread sees them): V8 counts an ArrayBuffer's whole
 * length as external memory and starts collections when that grows fast (a 33 MiB chunk in the
 * first step brought a scavenge and a mark-compact "for external memory pressure"), but does not
 * count a shared buffer; the pages a chunk's records touch are a fraction of it.
 */

type ViewCtor = { new (buffer: ArrayBufferLike, byteOffset: number, length: number): ArrayBufferView; readonly BYTES_PER_ELEMENT: number };

/**
 * One zero-filled buffer holding an array per entry of `spec` ([constructor, length]), each
 * starting at a multiple of 8 bytes; returns the views by the spec's keys.
 */
export function carveArrays<S extends Record<string, readonly [ViewCtor, number]>>(spec: S, arena?: ZeroArena): { [K in keyof S]: InstanceType<S[K][0]> } {
  const offsets: number[] = [];
  let bytes = 0;
  for (const [ctor, length] of Object.values(spec)) {
    bytes = Math.ceil(bytes / 8) * 8;
    offsets.push(bytes);
    bytes += length * ctor.BYTES_PER_ELEMENT;
  }
  const [buf, base] = arena !== undefined ? arena.take(bytes) : [new ArrayBuffer(bytes), 0];
  const out: Record<string, ArrayBufferView> = {};
  let i = 0;
  for (const [key, [ctor, length]] of Object.entries(spec)) out[key] = new ctor(buf, base + offsets[i++]!, length);
  return out as { [K in keyof S]: InstanceType<S[K][0]> };
}

/**
 * Zero-filled regions carved one after another from chunks of at least `chunkBytes` (one chunk
 * per request that does not fit the current one's rest; SharedArrayBuffers, module comment). Why:
 * a chunk above the allocator's largest mmap threshold is mapped as zero pages, so only the pages
 * written fault, where a request of its own below the threshold comes from the heap and is
 * cleared whole (module comment).
 */
export class ZeroArena {
  private chunk: SharedArrayBuffer | null = null;
  private used = 0;
  /**
   * Chunks of `chunkBytes` (or the request, if larger); a request below `minBytes` gets a buffer
   * of its own (a small model's executor does not map a chunk for a few KiB of records).
   */
  constructor(private readonly chunkBytes: number, private readonly minBytes: number) {}
  /** A zero-filled region of `bytes` bytes (a multiple of 8 from its start): [buffer, offset]. */
  take(bytes: number): [ArrayBufferLike, number] {
    if (bytes < this.minBytes) return [new ArrayBuffer(bytes), 0];
    const need = Math.ceil(bytes / 8) * 8;
    if (this.chunk === null || this.used + need > this.chunk.byteLength) {
      this.chunk = new SharedArrayBuffer(Math.max(this.chunkBytes, need));
      this.used = 0;
    }
    const at = this.used;
    this.used += need;
    return [this.chunk, at];
  }
}
