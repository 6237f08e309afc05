/**
 * The RV32 chip's shape as its users see it — what a host needs to load a program, place RAM rows
 * and pick bank sizes, without the circuit: the configuration words' loader addresses, the RAM
 * options, the bank split. The circuit (src/cpu/) builds on these; the chip runner
 * (src/chip) and the CLI read them here, so that src/ needs the circuit only to compile it.
 */
import type { TargetShape } from '../src/dsl/index.ts';
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
   * target holds (memBankWordsFor: 8,192 at chip-test, 2,048 at qwen3.5-4b). The data RAM and a
   * code RAM larger than one bank are split into banks of this size.
   */
  memBankWords?: number;
}

/**
 * Default rows of one data-RAM bank: 8,192 words (32 KiB), what one GDN layer holds at chip-test
 * (64 key heads × 128 rows of one 32-bit word); qwen3.5-4b's layer holds 2,048 (16 × 128), so a
 * chip for it uses 2,048-word banks (CpuOptions.memBankWords). A data RAM larger than one bank is
 * split into banks "mem", "mem1", … placed in different layers.
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

/** The data RAM's banks for memWords words: [RAM name, first word, rows]. */
export function memBanks(memWords: number, bankWords: number = MEM_BANK_WORDS): [name: string, first: number, rows: number][] {
  const out: [string, number, number][] = [];
  for (let b = 0; b * bankWords < memWords; b++) out.push([b === 0 ? 'mem' : `mem${b}`, b * bankWords, Math.min(bankWords, memWords - b * bankWords)]);
  return out;
}

/** The code RAM's banks for codeWords words (one RAM "code" when it fits one bank): [RAM name, first word, rows]. */
export function codeBanks(codeWords: number, bankWords: number = MEM_BANK_WORDS): [name: string, first: number, rows: number][] {
  if (codeWords <= bankWords) return [['code', 0, codeWords]];
  return Array.from({ length: Math.ceil(codeWords / bankWords) }, (_, b) => [b === 0 ? 'code' : `code${b}`, b * bankWords, bankWords]);
}
