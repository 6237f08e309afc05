/**
 * Typed arrays carved from one zero-filled ArrayBuffer, for a structure that allocates several
 * large arrays at once and writes few of their entries (an incremental matmul's per-row records).
 *
 * Why one buffer: the allocator zero-fills a buffer it takes from the process heap (below its
 * mmap threshold, 128 KiB by default) page by page, and a fresh page costs a fault; on the virtual
 * machine of the benchmarks (docs/benchmarks.md, "Page faults") about 11 µs per 4 KiB page. A
 * buffer above the threshold is mapped as zero pages that fault only where they are touched. So
 * twelve arrays of 100 KiB cost every page of all twelve, and one 1.2 MiB buffer holding them
 * costs only the pages used. The contents are the same: every array starts at +0 either way.
 * (That holds while the threshold is the default: glibc raises it to the size of each mapped
 * chunk it frees, up to 32 MiB, and loading a chip frees chunks of several MiB, so after a load
 * these buffers often come from the heap and are cleared whole. One buffer above any threshold
 * for all of them faulted less but did not shorten a fresh process's first 1,000 tokens:
 * docs/benchmarks.md "The cold window".)
 */

type ViewCtor = { new (buffer: ArrayBuffer, byteOffset: number, length: number): ArrayBufferView; readonly BYTES_PER_ELEMENT: number };

/**
 * One zero-filled buffer holding an array per entry of `spec` ([constructor, length]), each
 * starting at a multiple of 8 bytes; returns the views by the spec's keys.
 */
export function carveArrays<S extends Record<string, readonly [ViewCtor, number]>>(spec: S): { [K in keyof S]: InstanceType<S[K][0]> } {
  const offsets: number[] = [];
  let bytes = 0;
  for (const [ctor, length] of Object.values(spec)) {
    bytes = Math.ceil(bytes / 8) * 8;
    offsets.push(bytes);
    bytes += length * ctor.BYTES_PER_ELEMENT;
  }
  const buf = new ArrayBuffer(bytes);
  const out: Record<string, ArrayBufferView> = {};
  let i = 0;
  for (const [key, [ctor, length]] of Object.entries(spec)) out[key] = new ctor(buf, offsets[i++]!, length);
  return out as { [K in keyof S]: InstanceType<S[K][0]> };
}
