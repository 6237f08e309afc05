/** Element sizes and a printable decoding of one element of any fixed-width dtype. */
import type { DType } from '../safetensors/types.ts';
import { ChipcError } from '../util/errors.ts';

const BYTES: Partial<Record<DType, number>> = {
  BOOL: 1, U8: 1, I8: 1, F8_E5M2: 1, F8_E4M3: 1, F8_E8M0: 1, F8_E4M3FNUZ: 1, F8_E5M2FNUZ: 1,
  I16: 2, U16: 2, F16: 2, BF16: 2, I32: 4, U32: 4, F32: 4, C64: 8, F64: 8, I64: 8, U64: 8,
};

export function elementBytes(dtype: DType): number {
  const b = BYTES[dtype];
  if (b === undefined) throw new ChipcError('inspect.dtype', `dtype ${dtype} has no whole-byte elements`);
  return b;
}

function hex(buf: Uint8Array, off: number, n: number): string {
  let s = '0x';
  for (let i = n - 1; i >= 0; i--) s += buf[off + i]!.toString(16).padStart(2, '0');
  return s;
}

/** A human-readable value plus its raw bit pattern, e.g. `1.5 (0x3fc00000)`. */
export function decodeElement(buf: Uint8Array, off: number, dtype: DType): string {
  const n = elementBytes(dtype);
  const dv = new DataView(buf.buffer, buf.byteOffset + off, n);
  const bits = hex(buf, off, n);
  switch (dtype) {
    case 'F32':
      return `${dv.getFloat32(0, true)} (${bits})`;
    case 'F64':
      return `${dv.getFloat64(0, true)} (${bits})`;
    case 'BF16':
      return `${new Float32Array(new Uint32Array([dv.getUint16(0, true) << 16]).buffer)[0]} (${bits})`;
    case 'F16':
      return `${f16(dv.getUint16(0, true))} (${bits})`;
    case 'I8': return String(dv.getInt8(0));
    case 'U8': case 'BOOL': return String(dv.getUint8(0));
    case 'I16': return String(dv.getInt16(0, true));
    case 'U16': return String(dv.getUint16(0, true));
    case 'I32': return String(dv.getInt32(0, true));
    case 'U32': return String(dv.getUint32(0, true));
    case 'I64': return String(dv.getBigInt64(0, true));
    case 'U64': return String(dv.getBigUint64(0, true));
    default:
      return bits;
  }
}

function f16(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}
