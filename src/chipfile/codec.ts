/**
 * The version 2 frame codec of the `.chip` file (docs/chip-file.md, "Version 2"): a segment
 * (a tensor's block bytes or its block table) is cut into frames of `frameSize` decoded bytes
 * (the last one shorter); each frame is stored brotli-compressed when that saves at least an
 * eighth of it, else verbatim. The frame index lists each frame's stored length as a varint; a
 * stored length equal to the frame's decoded length means "verbatim", a shorter one "brotli".
 * Brotli parameters are fixed (BROTLI_PARAMS), so the stored bytes depend only on the segment's
 * bytes, the frame size and the brotli encoder bundled with Node.
 */
import * as zlib from 'node:zlib';
import { ChipcError } from '../util/errors.ts';
import { varintReader, varintSize, writeVarint } from './format.ts';

/** Fixed brotli encoder parameters of a frame of `length` decoded bytes. */
export function brotliParams(length: number): Record<number, number> {
  const c = zlib.constants;
  return {
    [c.BROTLI_PARAM_QUALITY]: 5,
    [c.BROTLI_PARAM_LGWIN]: 22,
    [c.BROTLI_PARAM_MODE]: c.BROTLI_MODE_GENERIC,
    [c.BROTLI_PARAM_SIZE_HINT]: length,
  };
}

/** Whether a frame of `decoded` bytes whose brotli form has `compressed` bytes is stored compressed: it must save ≥ 1/8. */
export function worthCompressing(compressed: number, decoded: number): boolean {
  return 8 * compressed <= 7 * decoded;
}

/** The stored form of one frame: brotli when worthCompressing, else the bytes themselves. */
export function encodeFrame(frame: Uint8Array): Uint8Array {
  const br = zlib.brotliCompressSync(frame, { params: brotliParams(frame.length) });
  return worthCompressing(br.length, frame.length) ? new Uint8Array(br.buffer, br.byteOffset, br.length) : frame;
}

/**
 * Collects one segment's bytes (pushed in pieces of any size) into frames of `frameSize` bytes
 * and hands each frame's stored form to `sink` as it is complete; remembers the stored lengths.
 * Memory: one frame buffer.
 */
export class FrameEncoder {
  /** Stored length of each frame so far. */
  readonly stored: number[] = [];
  /** Decoded bytes pushed so far. */
  size = 0;
  /** Whether any frame was stored compressed. */
  compressed = false;
  /**
   * The frame being filled: grown by doubling up to frameSize as bytes come (a chip has about two
   * hundred segments, most far below a frame, and a fresh zeroed 1 MiB per segment cost a page
   * fault per 4 KiB).
   */
  private buf: Uint8Array;
  private fill = 0;

  constructor(private readonly frameSize: number, private readonly sink: (bytes: Uint8Array) => void) {
    this.buf = new Uint8Array(Math.min(frameSize, 4096));
  }

  /** Room for at least `n` more bytes in buf, or a full frame's worth (buf.length = frameSize). */
  private reserve(n: number): void {
    if (this.fill + n <= this.buf.length || this.buf.length === this.frameSize) return;
    let size = this.buf.length;
    while (size < this.fill + n && size < this.frameSize) size *= 2;
    const grown = new Uint8Array(Math.min(size, this.frameSize));
    grown.set(this.buf.subarray(0, this.fill));
    this.buf = grown;
  }

  push(bytes: Uint8Array): void {
    this.pushRange(bytes, 0, bytes.length);
  }

  /** push(bytes.subarray(from, to)) without the subarray (most blocks of a chip are a few bytes). */
  pushRange(bytes: Uint8Array, from: number, to: number): void {
    this.reserve(to - from);
    const buf = this.buf;
    if (to - from <= 16 && this.fill + (to - from) < buf.length) {
      // a short piece that does not complete the frame: copied byte by byte (a set() of a
      // subarray costs more for a few bytes)
      let f = this.fill;
      for (let i = from; i < to; i++) buf[f++] = bytes[i]!;
      this.fill = f;
      this.size += to - from;
      return;
    }
    let at = from;
    while (at < to) {
      const k = Math.min(to - at, buf.length - this.fill);
      buf.set(bytes.subarray(at, at + k), this.fill);
      this.fill += k;
      at += k;
      if (this.fill === this.frameSize) this.flushFrame();
    }
    this.size += to - from;
  }

  /** Ends the segment: the last, shorter frame. */
  finish(): void {
    if (this.fill > 0) this.flushFrame();
  }

  private flushFrame(): void {
    const frame = this.buf.subarray(0, this.fill);
    const out = encodeFrame(frame);
    if (out !== frame) this.compressed = true;
    this.sink(out);
    this.stored.push(out.length);
    this.fill = 0;
  }
}

/** The frame index bytes: each stored length as an unsigned LEB128 varint, in order. */
export function encodeFrameIndex(stored: readonly number[]): Uint8Array {
  let size = 0;
  for (const s of stored) size += varintSize(s);
  const out = new Uint8Array(size);
  let p = 0;
  for (const s of stored) p = writeVarint(out, p, s);
  return out;
}

/** Where one segment's frames are: payload offset and stored length of each (decoded frame k is [k·frameSize, …)). */
export interface FrameList {
  offsets: Float64Array;
  stored: Float64Array;
}

/** Number of frames of a segment of `size` decoded bytes. */
export function frameCount(size: number, frameSize: number): number {
  return Math.ceil(size / frameSize);
}

/**
 * Decodes and checks a frame index for two segments (data, then table) of the given decoded
 * sizes, stored at payload offsets `dataAt` (`dataStored` bytes) and `tableAt` (`tableStored`
 * bytes): exactly one canonical varint (≤ 8 bytes) per frame, no byte left over, every stored
 * length in [1, the frame's decoded length], and the stored lengths of each segment summing to
 * its stored length. `fail` must throw.
 */
export function decodeFrameIndex(bytes: Uint8Array, frameSize: number,
  segs: { at: number; stored: number; size: number; what: string }[], fail: (msg: string) => never): FrameList[] {
  const reader = varintReader(bytes, 'frame index', fail);
  const varint = reader.next;
  const lists = segs.map((seg) => {
    const n = frameCount(seg.size, frameSize);
    const offsets = new Float64Array(n);
    const stored = new Float64Array(n);
    let at = seg.at;
    for (let k = 0; k < n; k++) {
      const what = `${seg.what} frame ${k}'s stored length`;
      const s = varint(what);
      const decoded = Math.min(frameSize, seg.size - k * frameSize);
      if (s < 1 || s > decoded) fail(`${what} is ${s}, outside [1, its ${decoded} decoded bytes]`);
      offsets[k] = at;
      stored[k] = s;
      at += s;
    }
    if (at - seg.at !== seg.stored) fail(`${seg.what} frames hold ${at - seg.at} stored bytes but the segment is ${seg.stored} bytes`);
    return { offsets, stored };
  });
  if (reader.offset() !== bytes.length) fail(`frame index has ${bytes.length - reader.offset()} bytes after its frames`);
  return lists;
}

/**
 * Inflates one brotli frame that must decode to exactly `decoded` bytes; any brotli error, or
 * output of another length, is a chipfile.codec error naming `label` (the tensor and frame).
 *
 * The output buffer holds the whole frame and one byte more (zlib's chunkSize): with the default
 * 16 KiB chunks Node collects a frame in 64 chunks and copies them into a buffer of its own; one
 * chunk is returned as it is, and the byte to spare ends the decode at its first pass. A 1 MiB
 * frame, each output kept: 5.6 → 2.6 ms and 421 → 170 page faults; the 31 frames of 64 KiB or
 * more (25.1 MiB) that `chipc run` inflates from the qwen3.5-4b chip: 121–126 → 102–112 ms
 * (docs/benchmarks.md "Compact `.chip` form").
 */
export function inflateFrame(stored: Uint8Array, decoded: number, label: string): Uint8Array {
  let out: Buffer;
  try {
    out = zlib.brotliDecompressSync(stored, { maxOutputLength: decoded, chunkSize: Math.max(64, decoded + 1) });
  } catch (e) {
    const why = (e as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' ? `decodes to more than ${decoded} bytes` : `does not decode (${(e as Error).message})`;
    throw new ChipcError('chipfile.codec', `${label}: brotli frame ${why}`, { cause: e });
  }
  if (out.length !== decoded) throw new ChipcError('chipfile.codec', `${label}: brotli frame decodes to ${out.length} bytes, expected ${decoded}`);
  return new Uint8Array(out.buffer, out.byteOffset, out.length);
}

/** A bounded least-recently-used cache of inflated frames (by key), counted in decoded bytes. */
export class FrameCache {
  private readonly map = new Map<string, Uint8Array>();
  private bytes = 0;

  constructor(readonly maxBytes: number) {}

  get(key: string): Uint8Array | undefined {
    const v = this.map.get(key);
    if (v !== undefined) {
      this.map.delete(key);
      this.map.set(key, v);
    }
    return v;
  }

  set(key: string, v: Uint8Array): void {
    if (v.length > this.maxBytes) return;
    this.map.set(key, v);
    this.bytes += v.length;
    for (const [k, old] of this.map) {
      if (this.bytes <= this.maxBytes) break;
      this.map.delete(k);
      this.bytes -= old.length;
    }
  }

  clear(): void {
    this.map.clear();
    this.bytes = 0;
  }
}
