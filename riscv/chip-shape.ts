/**
 * The RV32 chip's shape as its users see it — what a host needs to load a program, place RAM rows
 * and pick bank sizes, without the circuit: the configuration words' loader addresses, the RAM
 * options, the bank split. The circuit (src/cpu/) builds on these; the chip runner
 * (src/chip) and the CLI read them here, so that src/ needs the circuit only to compile it.
 */
import type { TargetShape } from '../src/dsl/index.ts';
import { ChipcError } from '../src/util/errors.ts';
import { packsRows } from '../src/gadgets/gdn-ram.ts';
import { A_COUNT, PROTOCOL_ALPHABET_SIZE } from './protocol.ts';

/** Code words a store can reach through A(w) (the first 4 KiB of code). */
export const CODE_STORE_WORDS = A_COUNT;
/** The chip's vocabulary: the whole token alphabet. */
export const VOCAB = PROTOCOL_ALPHABET_SIZE;

/**
 * Loader addresses of the chip's run-time configuration (docs/token-protocol.md "Loading by
 * prompt"): E(p) with p = 0x8000 + 32 + k, then D(lo), H(hi), writes configuration word k:
 * 0 the program's code end in words (min(code end, CODE_STORE_WORDS): which stores are code
 * stores), 1 its `tohost` address with bit 0 set (0: no tohost).
 */
export const CONFIG_CODE_END = 0x8000 + 32;
export const CONFIG_TOHOST = 0x8000 + 33;

/**
 * The chip's shape. Nothing here is program-specific: the program's code end and `tohost` arrive
 * at run time as configuration words (CONFIG_CODE_END, CONFIG_TOHOST), so one compiled chip runs
 * any program that fits its RAMs.
 */
export interface CpuOptions {
  /** Code RAM words (rows, a power of two ≥ 64), from CODE_BASE: what fetch can read; a fetch beyond it traps. */
  codeWords: number;
  /** Data RAM words (rows, a multiple of 64), from CODE_BASE: what loads and stores reach (default 8,192 = 32 KiB). */
  memWords?: number;
  /**
   * Rows of one RAM bank (a power of two, default MEM_BANK_WORDS): what one GDN layer of the
   * target holds (memBankWordsFor: 8,192 at chip-test, 4,096 at qwen3.5-4b, whose rows hold two
   * words). A code RAM larger than one bank is split into banks of this size; the data RAM is
   * always four interleaved banks of at most this size (memLayout).
   */
  memBankWords?: number;
}

/**
 * Default rows of one data-RAM bank: 8,192 words (32 KiB), what one GDN layer holds at chip-test
 * (64 key heads × 128 rows of one 32-bit word); qwen3.5-4b's layer holds 4,096 (16 × 128 rows of
 * two words, packed rows: memBankWordsFor), so a chip for it uses 4,096-word banks
 * (CpuOptions.memBankWords). The data RAM is four interleaved banks "mem", "mem1", "mem2", "mem3"
 * (memLayout); banks smaller than a layer share one.
 */
export const MEM_BANK_WORDS = 8192;

/**
 * Rows of one data-RAM bank for a target: what one GDN layer holds of 32-bit words (key heads ×
 * key head dim rows, twice that where the RAM gadget packs two words per row, `packsRows`;
 * docs/gadgets-gdn.md "Packed rows"), rounded down to a power of two, at most MEM_BANK_WORDS.
 */
export function memBankWordsFor(target: TargetShape): number {
  const dims = {
    hk: target.linearNumKeyHeads, hv: target.linearNumValueHeads ?? target.linearNumKeyHeads,
    dk: target.linearKeyHeadDim, dv: target.linearValueHeadDim ?? 0,
  };
  const packed = packsRows(dims, 32) ? 2 : 1;
  const rowsPerHead = 2 ** Math.floor(Math.log2(Math.max(1, target.linearKeyHeadDim)));
  const rows = Math.min(MEM_BANK_WORDS, target.linearNumKeyHeads * rowsPerHead * packed);
  return 2 ** Math.floor(Math.log2(Math.max(1, rows)));
}

/** The data RAM's banks: 4 (2^MEM_BANK_SHIFT), the address's bits 2 and 3, in its low nibble. */
export const MEM_BANK_SHIFT = 2;

/** The manifest's name for this layout (`rv32.memLayout`): a chip that records another keeps consecutive words in a bank. */
export const MEM_LAYOUT = 'interleaved';

/**
 * How the data RAM's words sit in its banks: interleaved over four banks — word w is row w >> 2
 * of bank w mod 4 — so that the bank of an address is its bits 2 and 3 (known from the address's
 * low nibble, before its carries) and the row is its bits from 4 up, whole nibbles. Small banks
 * share a GDN layer (the scheduler fills a layer's key heads); a bank holds at most bankWords
 * rows (what one layer holds), so the RAM at most 4·bankWords words (ChipcError chip.mem).
 */
export interface MemLayout {
  count: number;
  shift: number;
  /** Rows of each bank (memWords / count). */
  rows: number;
  names: string[];
}

export function memLayout(memWords: number, bankWords: number = MEM_BANK_WORDS): MemLayout {
  const count = 2 ** MEM_BANK_SHIFT;
  if (memWords % count !== 0 || memWords / count > bankWords) {
    throw new ChipcError('chip.mem', `a data RAM of ${memWords} words does not fit ${count} equal banks of at most ${bankWords} words`);
  }
  return { count, shift: MEM_BANK_SHIFT, rows: memWords / count, names: Array.from({ length: count }, (_, b) => (b === 0 ? 'mem' : `mem${b}`)) };
}

/** Bank and row of data word w. */
export function memPlace(layout: MemLayout, w: number): [bank: number, row: number] {
  return [w & (layout.count - 1), w >> layout.shift];
}

/** The data word at row `row` of bank `bank`. */
export function memWordAt(layout: MemLayout, bank: number, row: number): number {
  return (row << layout.shift) | bank;
}

/** The code RAM's banks for codeWords words (one RAM "code" when it fits one bank): [RAM name, first word, rows]. */
export function codeBanks(codeWords: number, bankWords: number = MEM_BANK_WORDS): [name: string, first: number, rows: number][] {
  if (codeWords <= bankWords) return [['code', 0, codeWords]];
  return Array.from({ length: Math.ceil(codeWords / bankWords) }, (_, b) => [b === 0 ? 'code' : `code${b}`, b * bankWords, bankWords]);
}
