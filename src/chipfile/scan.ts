/**
 * Finds a tensor's non-zero blocks while its bytes stream past in chunks. A block starts at a
 * non-zero byte and ends after a non-zero byte; two non-zero bytes separated by a zero run
 * shorter than `minGap` bytes belong to the same block (the zeros are stored), a run of `minGap`
 * or more zeros separates blocks. The block bytes go to `sink` as they are found, so memory is
 * the current chunk plus the (start, length) table. A chip's embedding has millions of blocks of
 * a few bytes, so the table is kept in typed arrays and the sink gets ranges, not subarrays.
 */
import { ZEROS } from './io.ts';

/** Receives bytes[from … to) of a block (the array is the scanner's chunk or a run of zeros). */
export type BlockSink = (bytes: Uint8Array, from: number, to: number) => void;

export class BlockScanner {
  /** Blocks found so far. */
  count = 0;
  private startsBuf = new Float64Array(64);
  private lengthsBuf = new Float64Array(64);
  /** Bytes given to the sink so far. */
  storedBytes = 0;
  private pos = 0; // tensor offset of the current chunk's first byte
  private open = false;
  private blockStart = 0; // absolute start of the open block
  private blockEnd = 0; // absolute end of the open block's last non-zero byte + 1
  private written = 0; // absolute end of the open block's bytes given to the sink
  private chunk: Uint8Array = ZEROS;
  private pendingFrom = -1; // chunk offset where the not-yet-sunk part of the open block starts, or −1

  constructor(private readonly minGap: number, private readonly sink: BlockSink) {}

  /** Block starts (byte offsets within the tensor), ascending: a view valid until the next push. */
  get starts(): Float64Array {
    return this.startsBuf.subarray(0, this.count);
  }

  /** Block lengths, in the order of `starts` (a view valid until the next push). */
  get lengths(): Float64Array {
    return this.lengthsBuf.subarray(0, this.count);
  }

  /** Scans the next `chunk` of the tensor's bytes. */
  push(chunk: Uint8Array): void {
    this.chunk = chunk;
    this.pendingFrom = -1;
    const n = chunk.length;
    const head = Math.min(n, (4 - (chunk.byteOffset & 3)) & 3);
    for (let i = 0; i < head; i++) if (chunk[i] !== 0) this.span(i, i + 1);
    const words = (n - head) >>> 2;
    if (words > 0) {
      const w = new Int32Array(chunk.buffer, chunk.byteOffset + head, words);
      const quads = words & ~3;
      for (let k = 0; k < words; k++) {
        // Dense tensors of a chip are mostly zeros: skip them four words at a time.
        if ((k & 3) === 0 && k < quads) {
          while (k < quads && (w[k]! | w[k + 1]! | w[k + 2]! | w[k + 3]!) === 0) k += 4;
          if (k >= words) break;
        }
        if (w[k] === 0) continue;
        const b = head + 4 * k;
        if (this.minGap <= 2) {
          // A zero run inside the word (at most 2 bytes) may separate blocks: go byte by byte.
          for (let i = b; i < b + 4; i++) if (chunk[i] !== 0) this.span(i, i + 1);
          continue;
        }
        // The first and last non-zero byte of this word (memory order); the ≤ 2 zeros between stay inside.
        let s = b;
        while (chunk[s] === 0) s++;
        let e = b + 4;
        while (chunk[e - 1] === 0) e--;
        this.span(s, e);
      }
    }
    for (let i = head + 4 * words; i < n; i++) if (chunk[i] !== 0) this.span(i, i + 1);
    this.flushPending();
    this.pos += n;
  }

  /**
   * Scans `n` zero bytes: the same as pushing them, without visiting them. Zeros never start or
   * end a block by themselves; whether the run separates the open block from the next non-zero
   * byte is decided when that byte arrives (span), from the positions alone.
   */
  skipZeros(n: number): void {
    this.pos += n;
  }

  /** Ends the tensor: closes the open block. */
  finish(): void {
    this.close();
  }

  /** [s, e) of the current chunk starts and ends with a non-zero byte. */
  private span(s: number, e: number): void {
    const S = this.pos + s;
    if (this.open && S - this.blockEnd < this.minGap) {
      if (this.pendingFrom < 0) {
        // The open block's written part ended in an earlier chunk: the bytes up to this chunk are zeros.
        this.emit(ZEROS, 0, this.pos - this.written); // < minGap bytes
        this.pendingFrom = 0;
      }
      this.blockEnd = this.pos + e;
      return;
    }
    this.flushPending();
    this.close();
    this.open = true;
    this.blockStart = S;
    this.blockEnd = this.pos + e;
    this.written = S;
    this.pendingFrom = s;
  }

  private flushPending(): void {
    if (this.pendingFrom < 0) return;
    const end = this.blockEnd - this.pos;
    this.emit(this.chunk, this.pendingFrom, end);
    this.pendingFrom = -1;
  }

  private emit(bytes: Uint8Array, from: number, to: number): void {
    if (to <= from) return;
    this.sink(bytes, from, to);
    this.written += to - from;
    this.storedBytes += to - from;
  }

  private close(): void {
    if (!this.open) return;
    if (this.count === this.startsBuf.length) {
      const starts = new Float64Array(2 * this.count);
      starts.set(this.startsBuf);
      this.startsBuf = starts;
      const lengths = new Float64Array(2 * this.count);
      lengths.set(this.lengthsBuf);
      this.lengthsBuf = lengths;
    }
    this.startsBuf[this.count] = this.blockStart;
    this.lengthsBuf[this.count] = this.blockEnd - this.blockStart;
    this.count++;
    this.open = false;
  }
}
