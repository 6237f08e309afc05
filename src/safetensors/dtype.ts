/**
 * safetensors dtypes: sizes, the writer's alignment order, and exact conversions between float32
 * and bf16 / f16 plus decoders (bytes of any numeric dtype → Float32Array) and encoders
 * (Float32Array → bytes). Bytes are always little-endian, whatever the platform.
 */
import { ChipcError } from '../util/errors.ts';
import type { DType } from './types.ts';

/**
 * Every dtype in the order of the reference Rust `Dtype` enum (increasing alignment). The writer
 * sorts tensors by this rank descending, then by name (docs/host-architecture.md §6.5).
 */
export const DTYPES: readonly DType[] = [
  'BOOL', 'F4', 'F6_E2M3', 'F6_E3M2', 'U8', 'I8', 'F8_E5M2', 'F8_E4M3', 'F8_E8M0',
  'F8_E4M3FNUZ', 'F8_E5M2FNUZ', 'I16', 'U16', 'F16', 'BF16', 'I32', 'U32', 'F32',
  'C64', 'F64', 'I64', 'U64',
];

const BITS: Record<DType, number> = {
  BOOL: 8, U8: 8, I8: 8, F8_E5M2: 8, F8_E4M3: 8, F8_E8M0: 8, F8_E4M3FNUZ: 8, F8_E5M2FNUZ: 8,
  I16: 16, U16: 16, F16: 16, BF16: 16,
  I32: 32, U32: 32, F32: 32,
  C64: 64, F64: 64, I64: 64, U64: 64,
  F4: 4, F6_E2M3: 6, F6_E3M2: 6,
};

const RANK = new Map<string, number>(DTYPES.map((d, i) => [d, i]));

/** True when `s` is one of the dtype strings of the format. */
export function isDType(s: unknown): s is DType {
  return typeof s === 'string' && RANK.has(s);
}

/** Bits per element. */
export function dtypeBits(d: DType): number {
  return BITS[d];
}

/** Bytes per element, or throws for the sub-byte dtypes (F4, F6_*), which have none. */
export function dtypeBytes(d: DType): number {
  const b = BITS[d];
  if (b % 8 !== 0) throw new ChipcError('safetensors.subbyte-dtype', `dtype ${d} has ${b} bits per element, not a whole number of bytes`);
  return b / 8;
}

/** Position in the reference enum order (0 = BOOL … 21 = U64). */
export function dtypeRank(d: DType): number {
  return RANK.get(d)!;
}

/** Byte size of `numel` elements of `d` (exact BigInt); null when numel·bits is not a multiple of 8. */
export function byteSizeOf(d: DType, numel: bigint): bigint | null {
  const bits = numel * BigInt(BITS[d]);
  return bits % 8n === 0n ? bits / 8n : null;
}

// ---------------------------------------------------------------------------------------------
// Bit-level helpers

const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/** The IEEE-754 binary32 bit pattern of fround(x). */
export function f32Bits(x: number): number {
  f32Scratch[0] = x;
  return u32Scratch[0];
}

/** The float32 value with bit pattern `bits` (as a JS number, exactly). */
export function f32FromBits(bits: number): number {
  u32Scratch[0] = bits >>> 0;
  return f32Scratch[0];
}

/** True when the platform stores typed arrays little-endian (then bytes can be viewed directly). */
export const LITTLE_ENDIAN_PLATFORM = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

// ---------------------------------------------------------------------------------------------
// bfloat16

/**
 * bf16 bit pattern of the float32 with bits `b`: round to nearest, ties to even, on the top 16
 * bits (`(b + 0x7FFF + ((b >> 16) & 1)) >> 16`); overflow rounds to ±inf as in IEEE. NaN maps to
 * a quiet NaN keeping the sign and the top payload bits (`(b >> 16) | 0x0040`).
 */
export function f32BitsToBf16(b: number): number {
  b >>>= 0;
  if ((b & 0x7fffffff) > 0x7f800000) return (b >>> 16) | 0x0040;
  // (b + 0x7fff + lsb ≤ 0xff808000 for every b that is not NaN: below 2^32, so >>> is the floor)
  return (b + 0x7fff + ((b >>> 16) & 1)) >>> 16;
}

/**
 * bf16 bit pattern nearest to x (x is taken as float32: a double is first rounded by
 * Math.fround). Round to nearest even; see f32BitsToBf16.
 */
export function f32ToBf16(x: number): number {
  return f32BitsToBf16(f32Bits(x));
}

/**
 * f32BitsToBf16 plus whether it was exact: `exact` iff widening the result back gives the same
 * float32 bit pattern (±0, ±inf and quiet NaNs with zero low payload are exact; a signalling NaN,
 * which is quietened, is not).
 */
export function f32BitsToBf16Checked(b: number): { bits: number; exact: boolean } {
  const bits = f32BitsToBf16(b);
  return { bits, exact: ((bits << 16) >>> 0) === b >>> 0 };
}

/**
 * f32ToBf16 plus whether the conversion was exact (see f32BitsToBf16Checked); a double that is not
 * a float32 value is never exact. NaN arrives as a JS number, whose sign and payload JS does not
 * guarantee: use f32BitsToBf16Checked on bit patterns when they matter.
 */
export function f32ToBf16Checked(x: number): { bits: number; exact: boolean } {
  const r = f32BitsToBf16Checked(f32Bits(x));
  return { bits: r.bits, exact: r.exact && (Number.isNaN(x) || Object.is(Math.fround(x), x)) };
}

/** True when x (a float32) is exactly representable in bf16 (see f32ToBf16Checked). */
export function bf16Exact(x: number): boolean {
  return f32ToBf16Checked(x).exact;
}

/** The float32 value of bf16 bits h (exact: the bits become the top half of a float32). */
export function bf16ToF32(h: number): number {
  return f32FromBits((h & 0xffff) << 16);
}

// ---------------------------------------------------------------------------------------------
// float16 (IEEE binary16)

/**
 * binary16 bit pattern of the float32 with bits `b`: round to nearest, ties to even, including
 * into the subnormal range (units of 2^-24) and overflow to ±inf (anything ≥ 65520 in magnitude).
 * NaN maps to a quiet NaN keeping the sign and the top 10 payload bits.
 */
export function f32BitsToF16(b: number): number {
  b >>>= 0;
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  const mant = b & 0x7fffff;
  if (exp === 0xff) return mant === 0 ? sign | 0x7c00 : sign | 0x7e00 | (mant >>> 13);
  const e = exp - 112; // binary16 biased exponent
  if (e >= 31) return sign | 0x7c00;
  if (e >= 1) {
    let h = (e << 10) | (mant >>> 13);
    const rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem === 0x1000 && (h & 1) === 1)) h += 1; // a carry into the exponent is correct (up to inf)
    return sign | h;
  }
  // Subnormal result: value = m · 2^(exp − 150) = (m >> s) units of 2^-24 with s = 126 − exp.
  const m = exp === 0 ? mant : mant | 0x800000;
  const s = 126 - exp;
  if (s > 24) return sign; // m < 2^24 ≤ 2^(s−1): below half a unit
  let h = m >>> s;
  const rem = m & ((1 << s) - 1);
  const half = 1 << (s - 1);
  if (rem > half || (rem === half && (h & 1) === 1)) h += 1;
  return sign | h;
}

/** binary16 bits nearest to x (x taken as float32, see f32ToBf16). */
export function f32ToF16(x: number): number {
  return f32BitsToF16(f32Bits(x));
}

/** f32BitsToF16 plus whether it was exact (widening the result back gives bit pattern b). */
export function f32BitsToF16Checked(b: number): { bits: number; exact: boolean } {
  const bits = f32BitsToF16(b);
  return { bits, exact: f16BitsToF32Bits(bits) === b >>> 0 };
}

/** f32ToF16 plus whether it was exact (a double that is not a float32 value never is). */
export function f32ToF16Checked(x: number): { bits: number; exact: boolean } {
  const r = f32BitsToF16Checked(f32Bits(x));
  return { bits: r.bits, exact: r.exact && (Number.isNaN(x) || Object.is(Math.fround(x), x)) };
}

/** True when x (a float32) is exactly representable in binary16. */
export function f16Exact(x: number): boolean {
  return f32ToF16Checked(x).exact;
}

/** float32 bit pattern of binary16 bits h (exact; NaN payload kept in the top mantissa bits). */
export function f16BitsToF32Bits(h: number): number {
  const sign = (h & 0x8000) << 16;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0x1f) return (sign | 0x7f800000 | (mant << 13)) >>> 0;
  if (exp !== 0) return (sign | ((exp + 112) << 23) | (mant << 13)) >>> 0;
  if (mant === 0) return sign >>> 0;
  return (sign | f32Bits(mant * 2 ** -24)) >>> 0; // subnormal half: m·2^-24 is a normal float32
}

/** The float32 value of binary16 bits h (exact). */
export function f16ToF32(h: number): number {
  return f32FromBits(f16BitsToF32Bits(h));
}

let f16Table: Uint32Array | null = null;
function f16ToF32BitsTable(): Uint32Array {
  if (f16Table === null) {
    f16Table = new Uint32Array(65536);
    for (let h = 0; h < 65536; h++) f16Table[h] = f16BitsToF32Bits(h);
  }
  return f16Table;
}

// ---------------------------------------------------------------------------------------------
// 64-bit integers → float32

/**
 * float32 nearest to the integer v, ties to even, with ONE rounding (what a C cast
 * `(float)int64` / torch `.float()` does). `Math.fround(Number(v))` would round twice and can be
 * wrong near float32 ties (e.g. 2^60 + 2^36 + 1).
 */
export function bigintToF32(v: bigint): number {
  const neg = v < 0n;
  const a = neg ? -v : v;
  let r: number;
  if (a < 2n ** 53n) {
    r = Math.fround(Number(a)); // Number(a) exact, one rounding
  } else {
    const len = a.toString(2).length;
    const shift = BigInt(len - 24);
    let mant = a >> shift;
    const rem = a & ((1n << shift) - 1n);
    const half = 1n << (shift - 1n);
    if (rem > half || (rem === half && (mant & 1n) === 1n)) mant += 1n;
    r = Number(mant) * 2 ** Number(shift); // mant ≤ 2^24: exact
  }
  return neg ? -r : r;
}

// ---------------------------------------------------------------------------------------------
// Decoding and encoding buffers

/** Dtypes that decodeToF32 accepts. */
export const DECODABLE: readonly DType[] = ['F32', 'BF16', 'F16', 'F64', 'I8', 'U8', 'I16', 'U16', 'I32', 'U32', 'I64', 'U64', 'BOOL'];

/**
 * Upcasts little-endian elements of `d` to float32, as torch `.float()` does:
 * F32 / BF16 / F16 / I8 / U8 / I16 / U16 / BOOL are exact (BOOL bytes must be 0 or 1);
 * F64, I32, U32, I64, U64 round to nearest float32, ties to even, in one rounding (integers with
 * more than 24 significant bits are NOT exact). Other dtypes (F8_*, F4, F6_*, C64) are refused.
 * `label` names the tensor in error messages.
 */
export function decodeToF32(d: DType, bytes: Uint8Array, label = 'tensor'): Float32Array {
  if (!DECODABLE.includes(d)) throw new ChipcError('safetensors.unsupported-dtype', `${label}: cannot convert dtype ${d} to float32 (supported: ${DECODABLE.join(', ')})`);
  const size = dtypeBytes(d);
  if (bytes.length % size !== 0) throw new ChipcError('safetensors.byte-length', `${label}: ${bytes.length} bytes is not a whole number of ${d} elements`);
  const n = bytes.length / size;
  const out = new Float32Array(n);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  switch (d) {
    case 'F32':
      if (LITTLE_ENDIAN_PLATFORM) new Uint8Array(out.buffer).set(bytes);
      else for (let i = 0; i < n; i++) out[i] = dv.getFloat32(4 * i, true);
      break;
    case 'BF16': {
      const u = new Uint32Array(out.buffer);
      for (let i = 0; i < n; i++) u[i] = dv.getUint16(2 * i, true) << 16;
      break;
    }
    case 'F16': {
      const t = f16ToF32BitsTable();
      const u = new Uint32Array(out.buffer);
      for (let i = 0; i < n; i++) u[i] = t[dv.getUint16(2 * i, true)];
      break;
    }
    case 'F64': for (let i = 0; i < n; i++) out[i] = dv.getFloat64(8 * i, true); break;
    case 'I8': for (let i = 0; i < n; i++) out[i] = dv.getInt8(i); break;
    case 'U8': for (let i = 0; i < n; i++) out[i] = bytes[i]; break;
    case 'I16': for (let i = 0; i < n; i++) out[i] = dv.getInt16(2 * i, true); break;
    case 'U16': for (let i = 0; i < n; i++) out[i] = dv.getUint16(2 * i, true); break;
    case 'I32': for (let i = 0; i < n; i++) out[i] = dv.getInt32(4 * i, true); break;
    case 'U32': for (let i = 0; i < n; i++) out[i] = dv.getUint32(4 * i, true); break;
    case 'I64': for (let i = 0; i < n; i++) out[i] = bigintToF32(dv.getBigInt64(8 * i, true)); break;
    case 'U64': for (let i = 0; i < n; i++) out[i] = bigintToF32(dv.getBigUint64(8 * i, true)); break;
    case 'BOOL':
      for (let i = 0; i < n; i++) {
        const b = bytes[i];
        if (b > 1) throw new ChipcError('safetensors.bool-value', `${label}: BOOL element ${i} has byte value ${b} (only 0 and 1 are booleans)`);
        out[i] = b;
      }
      break;
    default:
      throw new ChipcError('safetensors.unsupported-dtype', `${label}: cannot convert dtype ${d} to float32`);
  }
  return out;
}

/** Dtypes that encodeFromF32 accepts. */
export const ENCODABLE: readonly DType[] = ['F32', 'BF16', 'F16', 'F64', 'I8', 'U8', 'I16', 'U16', 'I32', 'U32', 'I64', 'U64', 'BOOL'];

export interface EncodeOptions {
  /**
   * For BF16 / F16: refuse (ChipcError safetensors.inexact) any value that would round, naming the first
   * offending index and value. Default false (round to nearest even). F32 and F64 are always
   * exact; integer dtypes and BOOL always refuse values they cannot hold.
   */
  exact?: boolean;
  /** Added to element indices in error messages (for chunked encoding). */
  indexBase?: number;
  /** Names the tensor in error messages. */
  label?: string;
}

/** [lowest, one past the highest] integer of each integer dtype (exclusive bound: 2^64 − 1 is not a double). */
const INT_RANGE: Partial<Record<DType, [number, number]>> = {
  I8: [-128, 128], U8: [0, 256], I16: [-32768, 32768], U16: [0, 65536],
  I32: [-(2 ** 31), 2 ** 31], U32: [0, 2 ** 32],
  I64: [-(2 ** 63), 2 ** 63], U64: [0, 2 ** 64],
  BOOL: [0, 2],
};

/**
 * Encodes float32 values as little-endian elements of `d`. F32/F64: exact. BF16/F16: round to
 * nearest even (f32BitsToBf16 / f32BitsToF16), or refuse inexact values with `exact: true`.
 * Integer dtypes and BOOL: each value must be an integer in the dtype's range (else safetensors.inexact);
 * −0 encodes as 0.
 */
export function encodeFromF32(d: DType, values: Float32Array, opts: EncodeOptions = {}): Uint8Array {
  const label = opts.label ?? 'tensor';
  const base = opts.indexBase ?? 0;
  if (!ENCODABLE.includes(d)) throw new ChipcError('safetensors.unsupported-dtype', `${label}: cannot encode float32 values as dtype ${d} (supported: ${ENCODABLE.join(', ')})`);
  const n = values.length;
  const size = dtypeBytes(d);
  const out = new Uint8Array(n * size);
  const dv = new DataView(out.buffer);
  const bitsIn = new Uint32Array(values.buffer, values.byteOffset, n);
  const inexact = (i: number, what: string): never => {
    throw new ChipcError('safetensors.inexact', `${label}: element ${base + i} = ${fmtF32(values[i])} is not exactly representable as ${d}${what}`);
  };
  switch (d) {
    case 'F32':
      if (LITTLE_ENDIAN_PLATFORM) out.set(new Uint8Array(values.buffer, values.byteOffset, n * 4));
      else for (let i = 0; i < n; i++) dv.setUint32(4 * i, bitsIn[i], true);
      break;
    case 'F64': for (let i = 0; i < n; i++) dv.setFloat64(8 * i, values[i], true); break;
    case 'BF16':
      for (let i = 0; i < n; i++) {
        const b = bitsIn[i];
        const h = f32BitsToBf16(b);
        if (opts.exact && ((h << 16) >>> 0) !== b) inexact(i, ' (bf16 has 8 significant bits)');
        dv.setUint16(2 * i, h, true);
      }
      break;
    case 'F16':
      for (let i = 0; i < n; i++) {
        const b = bitsIn[i];
        const h = f32BitsToF16(b);
        if (opts.exact && f16BitsToF32Bits(h) !== b) inexact(i, ' (f16 has 11 significant bits, max 65504)');
        dv.setUint16(2 * i, h, true);
      }
      break;
    default: {
      const [lo, end] = INT_RANGE[d]!;
      for (let i = 0; i < n; i++) {
        const v = values[i];
        if (!Number.isInteger(v) || v < lo || v >= end) inexact(i, ` (integers in [${lo}, ${end}))`);
        switch (d) {
          case 'I8': dv.setInt8(i, v); break;
          case 'U8': case 'BOOL': out[i] = v; break; // -0 stores as 0
          case 'I16': dv.setInt16(2 * i, v, true); break;
          case 'U16': dv.setUint16(2 * i, v, true); break;
          case 'I32': dv.setInt32(4 * i, v, true); break;
          case 'U32': dv.setUint32(4 * i, v, true); break;
          case 'I64': dv.setBigInt64(8 * i, BigInt(v), true); break;
          case 'U64': dv.setBigUint64(8 * i, BigInt(v), true); break;
        }
      }
    }
  }
  return out;
}

/** A float32 value for messages: shortest decimal plus its bit pattern. */
export function fmtF32(x: number): string {
  return `${Object.is(x, -0) ? '-0' : String(x)} (0x${f32Bits(x).toString(16).padStart(8, '0')})`;
}
