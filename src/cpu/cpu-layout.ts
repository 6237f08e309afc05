/**
 * The chip's shape and address layout: the options (RAM sizes, bank size), their checks and the
 * numbers every stage derives from them (CpuShape), the RAM banks, the loader's configuration
 * addresses, the console address, and which byte goes where in a word-crossing access. Plain
 * numbers only — no signals. What a host needs of them (the options, banks, configuration
 * addresses) is defined in riscv/chip-shape.ts and re-exported here.
 */
import { ChipcError } from '../util/errors.ts';
import { CODE_BASE } from '../../riscv/protocol.ts';
import { CODE_STORE_WORDS, MEM_BANK_WORDS, memLayout, type CpuOptions } from '../../riscv/chip-shape.ts';

export { CONFIG_CODE_END, CONFIG_TOHOST, MEM_BANK_WORDS, codeBanks, memBankWordsFor, memLayout, memPlace, memWordAt, type CpuOptions, type MemLayout } from '../../riscv/chip-shape.ts';

export { CODE_BASE };

// ── word-crossing accesses (protocol v2): which byte goes where ─────────────────────────────────
/** Width in bytes of a load/store funct3 (0 for an invalid one). */
export const widthOf = (f3: number): number => ((f3 & 3) === 3 ? 0 : 1 << (f3 & 3));
/** Does an access of funct3 `f3` at offset `o` in its word cross into the next word? */
export const crosses = (f3: number, o: number): boolean => widthOf(f3) > 0 && o + widthOf(f3) > 4;
/** Digit width of the fetch's read row (the pc's word index inside its code bank). */
export const FETCH_DIGIT_BITS = 5;

/**
 * The data RAM's row bits split into digits of `width` bits from bit 0 up; the last (top) may be
 * narrower (a remainder at the bottom instead measured worse: row bit 0 flips more often).
 */
export function rowDigits(bits: number, width = 3): { lo: number; width: number }[] {
  const out: { lo: number; width: number }[] = [];
  for (let lo = 0; lo < bits; lo += width) out.push({ lo, width: Math.min(width, bits - lo) });
  return out;
}

/**
 * Where byte i of a load's value comes from: 'old<L>' = lane L of the word read at this position,
 * 'latch<j>' = byte j of the first position's D payload (crossing loads), null = not a value byte.
 * A crossing load reads first the word holding at most two of its bytes (the word of the address
 * unless it holds three, i.e. LW at offset 1), and the other word at its later positions.
 */
export function loadByteSource(f3: number, o: number, i: number): string | null {
  const n = widthOf(f3);
  if (i >= n) return null;
  if (!crosses(f3, o)) return `old${o + i}`;
  const firstIsNext = 4 - o > 2;
  const a = o + i;
  const inNext = a >= 4;
  if (inNext === firstIsNext) return `latch${firstIsNext ? a - 4 : i}`;
  return `old${inNext ? a - 4 : a}`;
}
/** The lane of the word read first that goes into byte j of a crossing load's D payload, or −1. */
export function loadPrefixLane(f3: number, o: number, j: number): number {
  if (!crosses(f3, o)) return -1;
  const k1 = 4 - o;
  return k1 <= 2 ? (j < k1 ? o + j : -1) : (j < widthOf(f3) - k1 ? j : -1);
}
/** The byte of rs2 a store puts into lane L of the word it merges (the next word when `second`), or −1 to keep it. */
export function storeByteSource(f3: number, o: number, second: number, lane: number): number {
  const n = widthOf(f3);
  const i = crosses(f3, o) && second ? lane + 4 - o : lane - o;
  return i >= 0 && i < n ? i : -1;
}

/** The console device: a store of any width to this address outputs the low byte of rs2. */
export const CONSOLE_ADDR = 0x1000_0000;

/** What every stage derives from CpuOptions (cpuShape): RAM sizes, address bits and banks. */
export interface CpuShape {
  /** Code RAM words (a power of two) and the bits of a code word index below it. */
  codeWords: number;
  addrBits: number;
  /** Data RAM words and the bits of a row index below it. */
  memWords: number;
  memBits: number;
  /**
   * Rows one RAM bank can hold (the code RAM's bank size); the data RAM's banks (a power of two,
   * memBankShift = its log2: word w lives in bank w mod memBankCount, row w >> memBankShift —
   * interleaved, so the bank is the address's bits 2… and known from its low nibble) and the row
   * bits inside one (of its memWords / memBankCount rows).
   */
  bankWords: number;
  memBankCount: number;
  memBankShift: number;
  bankBits: number;
  /** Code-RAM banks (1 when the code RAM fits one bank) and the row bits inside one (addrBits with one bank). */
  codeBankCount: number;
  codeBankBits: number;
  /** Data RAM bytes (a multiple of 256) and code RAM bytes: the bounds of the fault checks. */
  memBytes: number;
  codeBytes: number;
}

/** The shape of a chip with these options (ChipcError chip.code / chip.mem for one it cannot have). */
export function cpuShape(opts: CpuOptions): CpuShape {
  if (!Number.isInteger(opts.codeWords) || opts.codeWords < 64 || !Number.isInteger(Math.log2(opts.codeWords)) || opts.codeWords > 16384) {
    throw new ChipcError('chip.code', `a code RAM of ${opts.codeWords} words is not a power of two in [64, 16,384] (256 bytes … 64 KiB)`);
  }
  const addrBits = Math.log2(opts.codeWords);
  const memWords = opts.memWords ?? 8192;
  if (!Number.isInteger(memWords) || memWords < 64 || memWords % 64 !== 0) {
    throw new ChipcError('chip.mem', `a data RAM of ${memWords} words is not a positive multiple of 64 words (256 bytes)`);
  }
  const memBits = Math.max(1, Math.ceil(Math.log2(memWords)));
  if (memBits > 15) throw new ChipcError('chip.mem', `data RAM of ${memWords} words is larger than the 128 KiB (32,768 words) the loader addresses`);
  const bankWords = opts.memBankWords ?? MEM_BANK_WORDS;
  if (!Number.isInteger(Math.log2(bankWords)) || bankWords < 1) throw new ChipcError('chip.mem', `a data-RAM bank of ${bankWords} words is not a power of two`);
  const { count: memBankCount, shift: memBankShift, rows } = memLayout(memWords, bankWords);
  const bankBits = Math.max(1, Math.ceil(Math.log2(rows)));
  // The code RAM in banks of the same size when it is larger than one (fetch reads every bank; the
  // one holding the pc is enabled, the others read 0).
  const codeBankCount = Math.max(1, Math.ceil(opts.codeWords / bankWords));
  const codeBankBits = codeBankCount === 1 ? addrBits : Math.log2(bankWords);
  if (codeBankCount > 1 && bankWords < CODE_STORE_WORDS) {
    throw new ChipcError('chip.code', `RAM banks of ${bankWords} words are smaller than the ${CODE_STORE_WORDS} code words a code store reaches; use a code RAM of at most one bank`);
  }
  return {
    codeWords: opts.codeWords, addrBits, memWords, memBits, bankWords, memBankCount, memBankShift, bankBits, codeBankCount, codeBankBits,
    memBytes: 4 * memWords, codeBytes: 4 * opts.codeWords,
  };
}
