/**
 * Host side of the bignum service (firmware/services/bignum.c, docs/bignum.md): encodes a
 * request (op, area size, two operands as neg / len / 32-bit limbs) into the words written at
 * `__service_area`, runs it on a ServiceEmulator (the golden RV32 emulator), and decodes the
 * result numbers from memory. The same request words drive the chip through the weights
 * (`BignumService.requestWrites` gives them; src/chip/service.ts feeds them as tokens).
 */
import { ServiceEmulator, type ServiceWrite } from '../chip/service.ts';
import { ChipcError } from '../util/errors.ts';

/** Operation codes (word 0 of the request). u* take non-negative operands only. */
export const BIGNUM_OPS = {
  uadd: 1, usub: 2, umul: 3, udivmod: 4, ucmp: 5,
  add: 6, sub: 7, mul: 8, divmod: 9, cmp: 10, fdivmod: 11,
} as const;
export type BignumOp = keyof typeof BIGNUM_OPS;

/** The service's exit codes. */
export const BIGNUM_EXIT = { ok: 0, divisionByZero: 1, badRequest: 2 } as const;

/** Largest operand the service accepts: 256 limbs = 8,192 bits (BN_MAX_LIMBS in bignum.h). */
export const BN_MAX_LIMBS = 256;
export const BN_MAX_BITS = 32 * BN_MAX_LIMBS;

/** Default data RAM of a bignum service: 32 KiB from 0x80000000 (8 KiB code, the rest data). */
export const BIGNUM_MEM_BYTES = 32 * 1024;

/** An operand exactly as it is laid out in the request: sign word, length word, limbs. */
export interface RawOperand {
  neg: number;
  /** The length word; defaults to limbs.length (set it otherwise to build a malformed request). */
  len?: number;
  limbs: readonly number[];
}

/** A number read back from the service area. */
export interface DecodedNumber {
  value: bigint;
  neg: number;
  len: number;
  limbs: number[];
}

const MASK32 = 0xffffffffn;

/** The little-endian 32-bit limbs of |x| (none for 0). */
export function limbsOf(x: bigint): number[] {
  let m = x < 0n ? -x : x;
  const out: number[] = [];
  while (m > 0n) {
    out.push(Number(m & MASK32));
    m >>= 32n;
  }
  return out;
}

/** The value sum(limbs[i] * 2^(32 i)), negated when neg is 1. */
export function valueOf(neg: number, limbs: readonly number[]): bigint {
  let v = 0n;
  for (let i = limbs.length - 1; i >= 0; i--) v = (v << 32n) | BigInt(limbs[i]! >>> 0);
  return neg ? -v : v;
}

/** The normalized operand of x: neg = 1 only for x < 0, no zero top limb. */
export function operandOf(x: bigint): RawOperand {
  return { neg: x < 0n ? 1 : 0, limbs: limbsOf(x) };
}

function operandWords(o: RawOperand): number[] {
  return [o.neg >>> 0, (o.len ?? o.limbs.length) >>> 0, ...o.limbs.map((l) => l >>> 0)];
}

/** The request words from word 0: op, area size in words, operand a, operand b. */
export function encodeRequest(op: number, areaWords: number, a: RawOperand, b: RawOperand): number[] {
  return [op >>> 0, areaWords >>> 0, ...operandWords(a), ...operandWords(b)];
}

/** Extra words the service needs after the request (mirrors the service's own check). */
export function scratchWords(op: BignumOp, aLimbs: number, bLimbs: number): number {
  switch (op) {
    case 'umul': case 'mul': return 2 + aLimbs + bLimbs;
    case 'udivmod': case 'divmod': case 'fdivmod':
      return (3 + (aLimbs > bLimbs ? aLimbs - bLimbs + 1 : 1)) + (2 + bLimbs) + (aLimbs + bLimbs + 1);
    case 'ucmp': case 'cmp': return 0;
    default: return 3 + Math.max(aLimbs, bLimbs);
  }
}

/** What one request did. */
export interface BignumResult {
  exitCode: number;
  /** The numbers written from word 2 on (two for the divmod ops, one otherwise; none on error). */
  numbers: DecodedNumber[];
  instructions: number;
  console: Uint8Array;
}

const isDivmod = (op: BignumOp) => op === 'udivmod' || op === 'divmod' || op === 'fdivmod';

/** The bignum service on the golden emulator. */
export class BignumService {
  readonly emu: ServiceEmulator;
  /** Byte address of __service_area. */
  readonly area: number;
  /** Words from __service_area to the end of the RAM (request word 1). */
  readonly areaWords: number;

  private constructor(emu: ServiceEmulator) {
    this.emu = emu;
    this.area = emu.symbol('__service_area');
    const end = emu.memory.base + emu.memBytes;
    if (this.area % 4 !== 0 || this.area >= end) {
      throw new ChipcError('bignum.area', `the service area at 0x${this.area.toString(16)} is not a word inside the RAM`);
    }
    this.areaWords = (end - this.area) / 4;
  }

  /**
   * Load the service image (fixtures/firmware/bignum.elf) into a RAM of memBytes bytes; `codeBytes`
   * is the chip's code RAM (the emulator's fetch limit, so a fetch beyond it traps as on the chip).
   */
  static load(elf: Uint8Array, memBytes = BIGNUM_MEM_BYTES, codeBytes?: number): BignumService {
    return new BignumService(ServiceEmulator.load(elf, memBytes, codeBytes));
  }

  /** The (address, word) writes of a request; ChipcError 'bignum.request' when it does not fit the area. */
  requestWrites(op: number, a: RawOperand, b: RawOperand): ServiceWrite[] {
    const words = encodeRequest(op, this.areaWords, a, b);
    if (words.length > this.areaWords) {
      throw new ChipcError('bignum.request', `a request of ${words.length} words does not fit the ${this.areaWords}-word service area`);
    }
    return words.map((w, i) => [this.area + 4 * i, w] as const);
  }

  /** Reads the number at word `index` of the area (neg, len, limbs). */
  readNumber(index: number): DecodedNumber {
    const mem = this.emu.memory;
    const neg = mem.read32(this.area + 4 * index);
    const len = mem.read32(this.area + 4 * index + 4);
    if (neg > 1 || index + 2 + len > this.areaWords) {
      throw new ChipcError('bignum.result', `malformed result at area word ${index}: neg ${neg}, len ${len}`);
    }
    const limbs: number[] = [];
    for (let i = 0; i < len; i++) limbs.push(mem.read32(this.area + 4 * (index + 2 + i)));
    return { value: valueOf(neg, limbs), neg, len, limbs };
  }

  /**
   * Runs one request as given (no validation beyond fitting the area, so malformed requests can be
   * sent on purpose) and reads the results back when it succeeded. `op` is a name or a raw code.
   */
  request(op: BignumOp | number, a: RawOperand, b: RawOperand, maxInstructions?: number): BignumResult {
    const code = typeof op === 'number' ? op : BIGNUM_OPS[op];
    const call = this.emu.call(this.requestWrites(code, a, b), maxInstructions !== undefined ? { maxInstructions } : {});
    const numbers: DecodedNumber[] = [];
    if (call.exitCode === BIGNUM_EXIT.ok) {
      const first = this.readNumber(2);
      numbers.push(first);
      const name = typeof op === 'number' ? (Object.keys(BIGNUM_OPS) as BignumOp[]).find((k) => BIGNUM_OPS[k] === op) : op;
      if (name !== undefined && isDivmod(name)) numbers.push(this.readNumber(4 + first.len));
    }
    return { exitCode: call.exitCode, numbers, instructions: call.instructions, console: call.console };
  }

  /** Runs op on two BigInts; ChipcError for operands the service refuses or a failed request. */
  run(op: BignumOp, a: bigint, b: bigint): BignumResult {
    for (const [name, x] of [['a', a], ['b', b]] as const) {
      if (op.startsWith('u') && x < 0n) throw new ChipcError('bignum.operand', `operand ${name} of ${op} must be non-negative, got ${x}`);
      const bits = (x < 0n ? -x : x).toString(2).length;
      if (x !== 0n && bits > BN_MAX_BITS) {
        throw new ChipcError('bignum.operand', `operand ${name} has ${bits} bits; the service takes at most ${BN_MAX_BITS}`);
      }
    }
    const ra = operandOf(a), rb = operandOf(b);
    const need = 2 + (2 + ra.limbs.length) + (2 + rb.limbs.length) + scratchWords(op, ra.limbs.length, rb.limbs.length);
    if (need > this.areaWords) {
      throw new ChipcError('bignum.request', `${op} on ${ra.limbs.length}- and ${rb.limbs.length}-limb operands needs ${need} words; the service area has ${this.areaWords}`);
    }
    const r = this.request(op, ra, rb);
    if (r.exitCode === BIGNUM_EXIT.divisionByZero) throw new ChipcError('bignum.divzero', `${op}: division by zero`);
    if (r.exitCode !== BIGNUM_EXIT.ok) throw new ChipcError('bignum.service', `${op}: the service refused the request (exit ${r.exitCode})`);
    return r;
  }

  add(a: bigint, b: bigint): bigint { return this.run('add', a, b).numbers[0]!.value; }
  sub(a: bigint, b: bigint): bigint { return this.run('sub', a, b).numbers[0]!.value; }
  mul(a: bigint, b: bigint): bigint { return this.run('mul', a, b).numbers[0]!.value; }
  cmp(a: bigint, b: bigint): number { return Number(this.run('cmp', a, b).numbers[0]!.value); }
  /** Truncating division (C): q = trunc(a / b), r = a - q b. */
  divmod(a: bigint, b: bigint): { q: bigint; r: bigint } {
    const [q, r] = this.run('divmod', a, b).numbers;
    return { q: q!.value, r: r!.value };
  }
  /** Floor division: q = floor(a / b), r = a - q b (r has b's sign). */
  fdivmod(a: bigint, b: bigint): { q: bigint; r: bigint } {
    const [q, r] = this.run('fdivmod', a, b).numbers;
    return { q: q!.value, r: r!.value };
  }
  /** Unsigned subtraction: (a - b) mod 2^(32 max(limbs)) and the borrow out (a < b). */
  usub(a: bigint, b: bigint): { value: bigint; borrow: number } {
    const n = this.run('usub', a, b).numbers[0]!;
    return { value: valueOf(0, n.limbs), borrow: n.neg };
  }
}
