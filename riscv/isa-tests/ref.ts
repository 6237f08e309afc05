/**
 * Independent BigInt reference model of the RV32IM + Zba results the ISA test programs check.
 *
 * Written from the unprivileged spec's definitions, not from the emulator: every value is an
 * unbounded BigInt reduced to 32 bits at the end, so no float64 or `| 0` shortcut is involved.
 * Inputs may be any BigInt (negative numbers mean their two's complement); outputs are unsigned
 * 32-bit BigInts in [0, 2^32).
 */

const MASK32 = (1n << 32n) - 1n;
const INT_MIN = 1n << 31n;

/** x mod 2^32, in [0, 2^32). */
export const u32 = (x: bigint): bigint => x & MASK32;
/** x mod 2^32 read as a signed 32-bit value, in [−2^31, 2^31). */
export const s32 = (x: bigint): bigint => BigInt.asIntN(32, x);
/** Sign-extend the low `bits` bits of x, result as u32. */
export const sext = (x: bigint, bits: number): bigint => u32(BigInt.asIntN(bits, x));

/** Shift amount: the low 5 bits of rs2 (RV32 masks register shift amounts). */
const shamt = (b: bigint): bigint => u32(b) & 31n;

/** Register-register (and, with an immediate as `b`, register-immediate) operations. */
export const REF: Readonly<Record<string, (a: bigint, b: bigint) => bigint>> = {
  /** (a + b) mod 2^32 */
  add: (a, b) => u32(a + b),
  /** (a − b) mod 2^32 */
  sub: (a, b) => u32(a - b),
  and: (a, b) => u32(a) & u32(b),
  or: (a, b) => u32(a) | u32(b),
  xor: (a, b) => u32(a) ^ u32(b),
  /** a · 2^(b mod 32) mod 2^32 */
  sll: (a, b) => u32(u32(a) << shamt(b)),
  /** ⌊u(a) / 2^(b mod 32)⌋ */
  srl: (a, b) => u32(a) >> shamt(b),
  /** ⌊s(a) / 2^(b mod 32)⌋ (BigInt >> floors) */
  sra: (a, b) => u32(s32(a) >> shamt(b)),
  slt: (a, b) => (s32(a) < s32(b) ? 1n : 0n),
  sltu: (a, b) => (u32(a) < u32(b) ? 1n : 0n),
  /** low 32 bits of the product */
  mul: (a, b) => u32(s32(a) * s32(b)),
  /** high 32 bits of the 64-bit signed × signed product */
  mulh: (a, b) => u32((s32(a) * s32(b)) >> 32n),
  /** high 32 bits of the 64-bit signed × unsigned product */
  mulhsu: (a, b) => u32((s32(a) * u32(b)) >> 32n),
  /** high 32 bits of the 64-bit unsigned × unsigned product */
  mulhu: (a, b) => u32((u32(a) * u32(b)) >> 32n),
  /** signed quotient rounded toward zero; x/0 = −1; INT_MIN/−1 = INT_MIN (spec table) */
  div: (a, b) => {
    if (s32(b) === 0n) return MASK32;
    if (u32(a) === INT_MIN && s32(b) === -1n) return INT_MIN;
    return u32(s32(a) / s32(b)); // BigInt division truncates toward zero
  },
  /** unsigned quotient; x/0 = 2^32 − 1 */
  divu: (a, b) => (u32(b) === 0n ? MASK32 : u32(a) / u32(b)),
  /** signed remainder with the dividend's sign; x%0 = x; INT_MIN%−1 = 0 */
  rem: (a, b) => {
    if (s32(b) === 0n) return u32(a);
    if (u32(a) === INT_MIN && s32(b) === -1n) return 0n;
    return u32(s32(a) % s32(b)); // BigInt % takes the dividend's sign
  },
  /** unsigned remainder; x%0 = x */
  remu: (a, b) => (u32(b) === 0n ? u32(a) : u32(a) % u32(b)),
  /** (a · 2 + b) mod 2^32 */
  sh1add: (a, b) => u32(u32(a) * 2n + u32(b)),
  /** (a · 4 + b) mod 2^32 */
  sh2add: (a, b) => u32(u32(a) * 4n + u32(b)),
  /** (a · 8 + b) mod 2^32 */
  sh3add: (a, b) => u32(u32(a) * 8n + u32(b)),
};

/** The register-immediate forms: the 12-bit immediate is sign-extended first (for sltiu too). */
export const REF_IMM: Readonly<Record<string, (a: bigint, imm: number) => bigint>> = {
  addi: (a, i) => REF.add(a, BigInt(i)),
  slti: (a, i) => REF.slt(a, BigInt(i)),
  sltiu: (a, i) => REF.sltu(a, BigInt(i)),
  xori: (a, i) => REF.xor(a, BigInt(i)),
  ori: (a, i) => REF.or(a, BigInt(i)),
  andi: (a, i) => REF.and(a, BigInt(i)),
  slli: (a, i) => REF.sll(a, BigInt(i)),
  srli: (a, i) => REF.srl(a, BigInt(i)),
  srai: (a, i) => REF.sra(a, BigInt(i)),
};

/** Branch conditions. */
export const REF_BRANCH: Readonly<Record<string, (a: bigint, b: bigint) => boolean>> = {
  beq: (a, b) => u32(a) === u32(b),
  bne: (a, b) => u32(a) !== u32(b),
  blt: (a, b) => s32(a) < s32(b),
  bge: (a, b) => s32(a) >= s32(b),
  bltu: (a, b) => u32(a) < u32(b),
  bgeu: (a, b) => u32(a) >= u32(b),
};

/** Little-endian value of `width` bytes of `mem` at `off` (unsigned BigInt). */
export function readLE(mem: readonly number[], off: number, width: number): bigint {
  let v = 0n;
  for (let i = width - 1; i >= 0; i--) v = (v << 8n) | BigInt(mem[off + i] & 0xff);
  return v;
}

/** Write the low `width` bytes of `v` little-endian into `mem` at `off`. */
export function writeLE(mem: number[], off: number, width: number, v: bigint): void {
  for (let i = 0; i < width; i++) mem[off + i] = Number((u32(v) >> BigInt(8 * i)) & 0xffn);
}

/** `0x…` literal of the u32 value of x, for assembly text. */
export const hx = (x: bigint): string => `0x${u32(x).toString(16)}`;
