/**
 * The generic RV32IM+Zba chip: one compiled checkpoint per (target, code RAM size, data RAM size)
 * that runs any program fitting its RAMs — the program's code end and `tohost` arrive at run
 * time as configuration words, its entry as the prompt's J (docs/token-protocol.md). `chipc cpu`
 * writes one; `chipc run` without `--model` takes one from the chip cache (src/chip/cache.ts),
 * compiling it only when the cache has none for this compiler (cached.ts; the compile itself is
 * build.ts's compileGenericChip, imported only on a miss).
 */
import type { ModelConfig } from '../model/config.ts';
import { ChipcError } from '../util/errors.ts';
import { memBankWordsFor, type CpuOptions } from '../../riscv/chip-shape.ts';
import { checkRamSizes, fmtBytes, DEFAULT_CODE_BYTES, DEFAULT_MEM_BYTES } from './run.ts';

/** What a generic chip is compiled for: a target shape and its two RAM sizes. */
export interface GenericChipSpec {
  /** The target's name (a built-in name or a config.json path) and its config. */
  targetName: string;
  target: ModelConfig;
  /** Code RAM bytes (a power of two, 256 bytes … 64 KiB). */
  codeBytes: number;
  /** Data RAM bytes (a multiple of 256, at most 128 KiB). */
  memBytes: number;
  /**
   * Turn the last layer with an empty mixer into a full-attention layer that adds exactly 0
   * (CompileOptions.attentionLayer), so that transformers' `generate()` runs the chip alone.
   */
  attentionLayer?: boolean;
  /**
   * The hidden size to emit instead of the target's (CompileOptions.hidden): a chip merged into a
   * host needs H_host·4^k (docs/merge.md). Refused (fit.width) when the chip does not fit in it.
   */
  hidden?: number;
}

/** Data-RAM banks a chip can have (the bank-select tables of src/cpu/cpu.ts stay exact up to this many). */
export const MAX_MEM_BANKS = 4;

/**
 * The default RAM sizes of the generic chip for a target: 16 KiB of code; 64 KiB of data, or the
 * most MAX_MEM_BANKS banks hold when that is less (a bank is what one GDN layer holds: 32 KiB at
 * chip-test, 8 KiB at qwen3.5-4b and the Qwen3-Next targets, so 32 KiB there).
 */
export function defaultChipSizes(target?: ModelConfig): { codeBytes: number; memBytes: number } {
  const bankBytes = target === undefined ? Infinity : 4 * memBankWordsFor(target);
  return { codeBytes: DEFAULT_CODE_BYTES, memBytes: Math.min(DEFAULT_MEM_BYTES, MAX_MEM_BANKS * bankBytes) };
}

/** The chip's shape for a spec (ChipcError chip.code / chip.mem for a size the chip cannot have). */
export function genericShape(spec: GenericChipSpec): Required<CpuOptions> {
  const { codeBytes, memBytes } = spec;
  checkRamSizes({ codeBytes, memBytes });
  const memBankWords = memBankWordsFor(spec.target);
  const banks = Math.ceil(memBytes / 4 / memBankWords);
  if (banks > MAX_MEM_BANKS) {
    throw new ChipcError('chip.mem', `a data RAM of ${fmtBytes(memBytes)} needs ${banks} banks at ${spec.targetName} (one GDN layer holds ${fmtBytes(4 * memBankWords)}); ` +
      `a chip has at most ${MAX_MEM_BANKS}: pass --mem-size ${MAX_MEM_BANKS * 4 * memBankWords} or less`);
  }
  return { codeWords: codeBytes / 4, memWords: memBytes / 4, memBankWords };
}

/** A one-line description: "16 KiB code, 64 KiB data". */
export function describeSizes(spec: Pick<GenericChipSpec, 'codeBytes' | 'memBytes'>): string {
  return `${fmtBytes(spec.codeBytes)} code, ${fmtBytes(spec.memBytes)} data`;
}
