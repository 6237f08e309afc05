/**
 * Streaming per-tensor statistics for `chipc inspect`: element count, non-zero count and sha256
 * of the raw bytes, computed chunk by chunk so a multi-gigabyte tensor is never held in memory.
 * A float −0 counts as zero (only the magnitude bits are tested).
 */
import { createHash } from 'node:crypto';
import type { DType, TensorStore } from '../safetensors/types.ts';
import { elementBytes } from './elements.ts';

export interface TensorStats {
  name: string;
  dtype: DType;
  shape: number[];
  numel: number;
  nonZeros: number;
  sha256: string;
}

/** Elements of sub-byte dtypes cannot be counted one by one; report −1 for them. */
function wholeElementBytes(dtype: DType): number | undefined {
  try {
    return elementBytes(dtype);
  } catch {
    return undefined;
  }
}

/** Count non-zero elements of a little-endian buffer holding whole elements of `dtype`. */
export function countNonZeros(buf: Uint8Array, dtype: DType): number {
  const bytes = elementBytes(dtype);
  // Floats: the sign is the top bit of the last (most significant, little-endian) byte.
  const signMaskTop = dtype.startsWith('F') || dtype === 'BF16' || dtype === 'C64' ? 0x7f : 0xff;
  const half = dtype === 'C64' ? 4 : bytes;
  let count = 0;
  for (let e = 0; e + bytes <= buf.length; e += bytes) {
    let nz = false;
    for (let h = 0; h < bytes && !nz; h += half) {
      for (let b = 0; b < half; b++) {
        const v = buf[e + h + b]!;
        const m = b === half - 1 ? v & signMaskTop : v;
        if (m !== 0) {
          nz = true;
          break;
        }
      }
    }
    if (nz) count++;
  }
  return count;
}

/** Fast path for F32 / BF16 (the dtypes chipc emits): word-wise magnitude test. */
function countNonZerosFast(buf: Uint8Array, dtype: DType): number {
  if (dtype === 'F32' && buf.byteOffset % 4 === 0) {
    const w = new Uint32Array(buf.buffer, buf.byteOffset, buf.length >>> 2);
    let c = 0;
    for (let i = 0; i < w.length; i++) if ((w[i]! & 0x7fffffff) !== 0) c++;
    return c;
  }
  if ((dtype === 'BF16' || dtype === 'F16') && buf.byteOffset % 2 === 0) {
    const w = new Uint16Array(buf.buffer, buf.byteOffset, buf.length >>> 1);
    let c = 0;
    for (let i = 0; i < w.length; i++) if ((w[i]! & 0x7fff) !== 0) c++;
    return c;
  }
  return countNonZeros(buf, dtype);
}

export function tensorStats(store: TensorStore, name: string): TensorStats {
  const info = store.info(name);
  const hash = createHash('sha256');
  let nonZeros = 0;
  const elem = wholeElementBytes(info.dtype);
  // Chunks are cut at element boundaries by keeping any partial element for the next round.
  let carry = new Uint8Array(0);
  for (const chunk of store.chunks(name)) {
    hash.update(chunk);
    if (elem === undefined) continue;
    let data = chunk;
    if (carry.length > 0) {
      data = new Uint8Array(carry.length + chunk.length);
      data.set(carry);
      data.set(chunk, carry.length);
    }
    const whole = data.length - (data.length % elem);
    // Copy to an aligned buffer when needed so the typed-array fast path applies.
    const body = data.byteOffset % elem === 0 ? data.subarray(0, whole) : data.slice(0, whole);
    nonZeros += countNonZerosFast(body, info.dtype);
    carry = data.slice(whole);
  }
  return {
    name,
    dtype: info.dtype,
    shape: info.shape,
    numel: info.numel,
    nonZeros: elem === undefined ? -1 : nonZeros,
    sha256: hash.digest('hex'),
  };
}

/** `model.layers.7.linear_attn.out_proj.weight` → 7 (also `model.language_model.layers.N`). */
export function layerIndexOf(name: string): number | null {
  const m = /(?:^|\.)layers\.(\d+)\./.exec(name);
  return m ? Number(m[1]) : null;
}
