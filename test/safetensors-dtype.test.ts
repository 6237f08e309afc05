/**
 * dtype conversions: bf16 / f16 round-to-nearest-even on hand-derived bit patterns, exactness
 * flags, NaN / inf / −0, an independent float64 reference over many inputs, and the decoders'
 * single rounding of wide integers.
 */
import { describe, expect, it } from 'vitest';
import { ChipcError } from '../src/util/errors.ts';
import {
  bf16Exact, bf16ToF32, bigintToF32, decodeToF32, dtypeBits, DTYPES, encodeFromF32, f16BitsToF32Bits, f16Exact, f16ToF32,
  f32Bits, f32BitsToBf16, f32BitsToBf16Checked, f32BitsToF16, f32BitsToF16Checked, f32FromBits, f32ToBf16, f32ToBf16Checked, f32ToF16,
} from '../src/safetensors/dtype.ts';

const hex = (n: number, w = 4): string => '0x' + (n >>> 0).toString(16).padStart(w, '0');

function expectCode(fn: () => unknown, code: string): ChipcError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ChipcError);
    expect((e as ChipcError).code).toBe(code);
    return e as ChipcError;
  }
  throw new Error(`expected ChipcError ${code}`);
}

describe('dtype sizes', () => {
  it('has 22 dtypes with the format bit widths', () => {
    expect(DTYPES.length).toBe(22);
    expect(DTYPES.map((d) => `${d}:${dtypeBits(d)}`).join(' ')).toBe(
      'BOOL:8 F4:4 F6_E2M3:6 F6_E3M2:6 U8:8 I8:8 F8_E5M2:8 F8_E4M3:8 F8_E8M0:8 F8_E4M3FNUZ:8 F8_E5M2FNUZ:8 ' +
      'I16:16 U16:16 F16:16 BF16:16 I32:32 U32:32 F32:32 C64:64 F64:64 I64:64 U64:64',
    );
  });
});

describe('bf16 round to nearest even (hand-derived)', () => {
  // [float32 bits, expected bf16 bits, exact]
  const cases: [number, number, boolean][] = [
    [0x3f800000, 0x3f80, true], // 1.0
    [0x3f808000, 0x3f80, false], // 1 + 2^-8: tie between 0x3F80 and 0x3F81 → even 0x3F80
    [0x3f818000, 0x3f82, false], // tie between 0x3F81 and 0x3F82 → even 0x3F82
    [0x3f808001, 0x3f81, false], // just above the tie
    [0x3f807fff, 0x3f80, false], // just below the tie
    [0x43808000, 0x4380, false], // 257 → 256 (spacing 2 in [256, 512), tie to even)
    [0x43818000, 0x4382, false], // 259 → 260
    [0x7f7fffff, 0x7f80, false], // max float32 rounds up to +inf
    [0x7f7f7fff, 0x7f7f, false],
    [0xff7fffff, 0xff80, false], // −max → −inf
    [0x00008000, 0x0000, false], // subnormal tie → +0
    [0x00018000, 0x0002, false], // subnormal tie → even 2
    [0x00000000, 0x0000, true],
    [0x80000000, 0x8000, true], // −0 keeps its sign
    [0x7f800000, 0x7f80, true], // +inf
    [0xff800000, 0xff80, true], // −inf
    [0x7fc00000, 0x7fc0, true], // quiet NaN
    [0xffc00000, 0xffc0, true], // negative quiet NaN keeps the sign
    [0xffc00001, 0xffc0, false], // NaN with low payload: sign kept, not exact
    [0x7f800001, 0x7fc0, false], // signalling NaN (payload only in low bits) → quiet NaN
    [0xff810000, 0xffc1, false], // signalling NaN → quiet, sign and top payload kept
  ];
  for (const [b, want, exact] of cases) {
    it(`${hex(b, 8)} → ${hex(want)} exact=${exact}`, () => {
      expect(hex(f32BitsToBf16(b))).toBe(hex(want));
      expect(f32BitsToBf16Checked(b)).toEqual({ bits: want, exact });
    });
  }
  it('number API: 257, 3, −0, inf, NaN, non-float32 doubles', () => {
    expect(f32ToBf16(257)).toBe(0x4380);
    expect(f32ToBf16Checked(3)).toEqual({ bits: 0x4040, exact: true });
    expect(f32ToBf16Checked(-0)).toEqual({ bits: 0x8000, exact: true });
    expect(f32ToBf16Checked(-Infinity)).toEqual({ bits: 0xff80, exact: true });
    expect(Number.isNaN(bf16ToF32(f32ToBf16(NaN)))).toBe(true);
    expect(bf16Exact(1 + 2 ** -7)).toBe(true);
    expect(bf16Exact(1 + 2 ** -8)).toBe(false);
    expect(bf16Exact(0.1)).toBe(false); // not even a float32
    expect(Object.is(bf16ToF32(0x8000), -0)).toBe(true);
    expect(bf16ToF32(0x4380)).toBe(256);
  });
});

/** Independent reference: nearest bf16 chosen by float64 distances (exact here), ties to even. */
function refBf16(b: number): number {
  const x = f32FromBits(b);
  if (Number.isNaN(x)) return -1;
  const lo = (b >>> 16) & 0xffff; // truncation toward zero
  const hi = (lo + 1) & 0xffff; // next magnitude
  const xl = bf16ToF32(lo);
  if (xl === x) return lo;
  const xh = (hi & 0x7fff) === 0x7f80 ? Math.sign(x) * 2 ** 128 : bf16ToF32(hi); // beyond max: the IEEE overflow threshold point
  const dl = Math.abs(x - xl);
  const dh = Math.abs(xh - x);
  if (dl < dh) return lo;
  if (dh < dl) return hi;
  return (lo & 1) === 0 ? lo : hi;
}

describe('bf16 against an independent float64 reference', () => {
  it('agrees on 200k pseudo-random bit patterns and all tie points near 1', () => {
    let s = 12345;
    const next = (): number => { s = (Math.imul(s, 1103515245) + 12345) >>> 0; return s; };
    for (let i = 0; i < 200000; i++) {
      const b = (next() ^ (next() << 16)) >>> 0;
      const r = refBf16(b);
      if (r < 0) continue;
      if (f32BitsToBf16(b) !== r) throw new Error(`${hex(b, 8)}: got ${hex(f32BitsToBf16(b))}, reference ${hex(r)}`);
    }
    // Every tie in [1, 2): mantissa m + 1/2 rounds to the even one of m, m + 1 (m = 0x7F carries to 2.0).
    for (let m = 0; m < 0x80; m++) {
      const b = 0x3f800000 | (m << 16) | 0x8000;
      const want = 0x3f80 + (m % 2 === 0 ? m : m + 1);
      expect(f32BitsToBf16(b)).toBe(want);
      expect(refBf16(b)).toBe(want);
    }
  });
});

describe('f16 (hand-derived)', () => {
  const cases: [number, number, boolean][] = [
    [f32Bits(1), 0x3c00, true],
    [f32Bits(65504), 0x7bff, true], // max half
    [f32Bits(65519), 0x7bff, false],
    [f32Bits(65520), 0x7c00, false], // tie between 65504 (odd mantissa) and 65536 → overflow to inf
    [f32Bits(2 ** -24), 0x0001, true], // smallest subnormal
    [f32Bits(2 ** -25), 0x0000, false], // tie between 0 and 2^-24 → even 0
    [0x33000001, 0x0001, false], // just above 2^-25
    [f32Bits(1.5 * 2 ** -24), 0x0002, false], // tie between 1 and 2 units → 2
    [0x387fe000, 0x0400, false], // 2^-14 − 2^-25: tie between 0x03FF and 0x0400 → even, carries into the exponent
    [f32Bits(1023 * 2 ** -24), 0x03ff, true], // largest subnormal
    [0x3f801000, 0x3c00, false], // 1 + 2^-11: tie → even
    [0x3f803000, 0x3c02, false], // 1 + 3·2^-11: tie → even 0x3C02
    [0x80000000, 0x8000, true],
    [0x80000001, 0x8000, false], // negative float32 subnormal → −0
    [0x7f800000, 0x7c00, true],
    [0xff800000, 0xfc00, true],
    [0x7fc00000, 0x7e00, true],
    [0xffc00000, 0xfe00, true],
    [0x7f800001, 0x7e00, false], // signalling NaN → quiet
    [f32Bits(1e-10), 0x0000, false],
    [f32Bits(1e10), 0x7c00, false],
  ];
  for (const [b, want, exact] of cases) {
    it(`${hex(b, 8)} → ${hex(want)}`, () => {
      expect(hex(f32BitsToF16(b))).toBe(hex(want));
      expect(f32BitsToF16Checked(b)).toEqual({ bits: want, exact });
    });
  }
  it('f16ToF32 matches the float64 formula on all 65536 patterns and round-trips', () => {
    for (let h = 0; h < 65536; h++) {
      const sign = h & 0x8000 ? -1 : 1;
      const e = (h >> 10) & 31;
      const m = h & 1023;
      const want = e === 31 ? (m === 0 ? sign * Infinity : NaN) : e === 0 ? sign * m * 2 ** -24 : sign * (1 + m / 1024) * 2 ** (e - 15);
      const got = f16ToF32(h);
      if (Number.isNaN(want)) {
        if (!Number.isNaN(got)) throw new Error(`${hex(h)} should be NaN`);
        if (f32BitsToF16(f16BitsToF32Bits(h)) !== (h | 0x0200)) throw new Error(`${hex(h)}: NaN payload/sign lost`); // quiet bit set
      } else {
        if (!Object.is(got, want)) throw new Error(`${hex(h)}: ${got} vs ${want}`);
        if (f32ToF16(got) !== h) throw new Error(`round trip of ${hex(h)}`);
        if (!f16Exact(got)) throw new Error(`${hex(h)} not exact`);
      }
    }
  });
  it('rounds random float32 values like a nearest-search over the sorted half table', () => {
    const pos: number[] = [];
    for (let h = 0; h < 0x7c00; h++) pos.push(f16ToF32(h)); // ascending finite non-negative halves
    let s = 99;
    const next = (): number => { s = (Math.imul(s, 1664525) + 1013904223) >>> 0; return s; };
    for (let i = 0; i < 50000; i++) {
      const b = (0x33000000 + (next() % (0x47800000 - 0x33000000))) >>> 0; // [2^-25, 65536)
      const x = f32FromBits(b);
      let lo = 0, hi = pos.length - 1;
      while (hi - lo > 1) { const mid = (lo + hi) >> 1; if (pos[mid] <= x) lo = mid; else hi = mid; }
      let want: number;
      if (x >= 65504) want = x - 65504 < 16 ? 0x7bff : 0x7c00; // 65520 and above overflow (tie → even = inf)
      else {
        const dl = x - pos[lo], dh = pos[hi] - x;
        want = dl < dh ? lo : dh < dl ? hi : (lo & 1) === 0 ? lo : hi;
      }
      if (f32BitsToF16(b) !== want) throw new Error(`${hex(b, 8)} (${x}): got ${hex(f32BitsToF16(b))}, want ${hex(want)}`);
      if (f32BitsToF16(b | 0x80000000) !== (want | 0x8000)) throw new Error(`negative ${hex(b, 8)}`);
    }
  });
});

describe('decoders', () => {
  const le = (n: number, f: (dv: DataView) => void): Uint8Array => { const u = new Uint8Array(n); f(new DataView(u.buffer)); return u; };
  const bitsOf = (a: Float32Array): number[] => Array.from(new Uint32Array(a.buffer));
  it('I32 / U32 round once to nearest even', () => {
    const b = le(16, (dv) => { dv.setInt32(0, 16777217, true); dv.setInt32(4, 16777219, true); dv.setInt32(8, -2147483648, true); dv.setInt32(12, 2147483647, true); });
    expect(Array.from(decodeToF32('I32', b))).toEqual([16777216, 16777220, -(2 ** 31), 2 ** 31]);
    const u = le(4, (dv) => dv.setUint32(0, 0xffffffff, true));
    expect(Array.from(decodeToF32('U32', u))).toEqual([2 ** 32]);
  });
  it('I64 / U64 round once (no double rounding through float64)', () => {
    // 2^60 + 2^36 + 1: just above the float32 tie 2^60 + 2^36 → 2^60 + 2^37. Via float64 it would
    // first become 2^60 + 2^36 (the tie) and then round to even, 2^60.
    expect(Math.fround(Number(2n ** 60n + 2n ** 36n + 1n))).toBe(2 ** 60); // the wrong, double-rounded value
    expect(bigintToF32(2n ** 60n + 2n ** 36n + 1n)).toBe(2 ** 60 + 2 ** 37);
    expect(bigintToF32(2n ** 60n + 2n ** 36n)).toBe(2 ** 60);
    expect(bigintToF32(2n ** 60n + 3n * 2n ** 36n)).toBe(2 ** 60 + 2 ** 38);
    const b = le(24, (dv) => { dv.setBigInt64(0, -(2n ** 63n), true); dv.setBigInt64(8, -(2n ** 60n + 2n ** 36n + 1n), true); dv.setBigInt64(16, 5n, true); });
    expect(Array.from(decodeToF32('I64', b))).toEqual([-(2 ** 63), -(2 ** 60 + 2 ** 37), 5]);
    const u = le(8, (dv) => dv.setBigUint64(0, 2n ** 64n - 1n, true));
    expect(Array.from(decodeToF32('U64', u))).toEqual([2 ** 64]);
  });
  it('small ints, BOOL, F64, BF16, F16', () => {
    expect(Array.from(decodeToF32('I8', new Uint8Array([0x80, 0x7f, 0xff])))).toEqual([-128, 127, -1]);
    expect(Array.from(decodeToF32('U16', new Uint8Array([0xff, 0xff, 0x01, 0x00])))).toEqual([65535, 1]);
    expect(Array.from(decodeToF32('I16', new Uint8Array([0x00, 0x80])))).toEqual([-32768]);
    expect(Array.from(decodeToF32('BOOL', new Uint8Array([0, 1])))).toEqual([0, 1]);
    expectCode(() => decodeToF32('BOOL', new Uint8Array([2])), 'safetensors.bool-value');
    const f = le(8, (dv) => dv.setFloat64(0, 1 + 2 ** -24, true)); // tie → even 1.0
    expect(bitsOf(decodeToF32('F64', f))).toEqual([0x3f800000]);
    expect(bitsOf(decodeToF32('BF16', new Uint8Array([0x80, 0x43, 0x00, 0x80])))).toEqual([0x43800000, 0x80000000]);
    expect(bitsOf(decodeToF32('F16', new Uint8Array([0x01, 0x00, 0x00, 0x3c])))).toEqual([f32Bits(2 ** -24), 0x3f800000]);
    expectCode(() => decodeToF32('F8_E4M3', new Uint8Array([1])), 'safetensors.unsupported-dtype');
    expectCode(() => decodeToF32('F32', new Uint8Array(3)), 'safetensors.byte-length');
  });
});

describe('encoders', () => {
  it('BF16 exact mode names the first inexact element', () => {
    const v = new Float32Array([1, 256, 257, 259]);
    const e = expectCode(() => encodeFromF32('BF16', v, { exact: true, label: 'w', indexBase: 10 }), 'safetensors.inexact');
    expect(e.message).toContain('element 12');
    expect(e.message).toContain('257');
    const r = encodeFromF32('BF16', v); // rounding mode
    expect(Array.from(new Uint16Array(r.buffer))).toEqual([0x3f80, 0x4380, 0x4380, 0x4382]);
  });
  it('F16 exact mode refuses overflow and rounding', () => {
    expectCode(() => encodeFromF32('F16', new Float32Array([65504, 65520]), { exact: true }), 'safetensors.inexact');
    expectCode(() => encodeFromF32('F16', new Float32Array([1 + 2 ** -11]), { exact: true }), 'safetensors.inexact');
    expect(Array.from(new Uint16Array(encodeFromF32('F16', new Float32Array([65504, -0]), { exact: true }).buffer))).toEqual([0x7bff, 0x8000]);
  });
  it('integer dtypes refuse fractions and out-of-range values', () => {
    expectCode(() => encodeFromF32('U8', new Float32Array([256])), 'safetensors.inexact');
    expectCode(() => encodeFromF32('I8', new Float32Array([0.5])), 'safetensors.inexact');
    expectCode(() => encodeFromF32('U64', new Float32Array([2 ** 64])), 'safetensors.inexact');
    expectCode(() => encodeFromF32('I64', new Float32Array([2 ** 63])), 'safetensors.inexact');
    expectCode(() => encodeFromF32('BOOL', new Float32Array([2])), 'safetensors.inexact');
    const b = encodeFromF32('I64', new Float32Array([-(2 ** 63)]));
    expect(new DataView(b.buffer).getBigInt64(0, true)).toBe(-(2n ** 63n));
  });
});
