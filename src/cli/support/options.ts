/**
 * Command-line option values parsed one way everywhere. Numeric ones: `Number()` alone takes "", `Number()` alone takes "",
 * " 12 ", "1e3", "0x10" and "1.0" as numbers and turns "abc" into NaN that later code may
 * quietly read as 0; these parsers take only the forms they document and name the flag, the
 * value and the accepted range when they refuse (a ChipcError with the caller's code).
 */
import fs from 'node:fs';
import { ChipcError } from '../../util/errors.ts';

export interface IntegerBounds {
  min: number;
  max?: number;
}

function rangeText(b: IntegerBounds): string {
  if (b.max !== undefined) return `an integer in [${b.min}, ${b.max}]`;
  if (b.min === 0) return 'a non-negative integer';
  if (b.min === 1) return 'a positive integer';
  return `an integer ≥ ${b.min}`;
}

/** An integer in decimal digits (a leading '-' only where `min` < 0), within the bounds. */
export function integerOption(value: string, flag: string, code: string, bounds: IntegerBounds): number {
  const ok = bounds.min < 0 ? /^-?\d+$/ : /^\d+$/;
  const v = Number(value);
  if (!ok.test(value) || !Number.isSafeInteger(v) || v < bounds.min || (bounds.max !== undefined && v > bounds.max)) {
    throw new ChipcError(code, `${flag} must be ${rangeText(bounds)}, not "${value}"`);
  }
  return v;
}

/** A byte count or address: decimal or 0x hex, optional k / m suffix (KiB / MiB). */
export function parseSize(s: string, what: string): number {
  const m = /^(0x[0-9a-f]+|\d+)([km]?)$/i.exec(s.trim());
  if (!m) throw new ChipcError('cli.number', `${what} must be a number (decimal or 0x hex, optional k/m suffix), not "${s}"`);
  const v = Number(m[1]) * (m[2]!.toLowerCase() === 'k' ? 1024 : m[2]!.toLowerCase() === 'm' ? 1 << 20 : 1);
  if (!Number.isSafeInteger(v)) throw new ChipcError('cli.number', `${what} ${s} is too large`);
  return v;
}

/** The data RAM size of `run` and `trace`: a size as parseSize reads it, a multiple of 4 bytes ≥ 64. */
export function memSizeOption(value: string): number {
  const v = parseSize(value, '--mem-size');
  if (v < 64 || v % 4 !== 0) throw new ChipcError('cli.mem-size', `--mem-size must be a multiple of 4 bytes ≥ 64, not "${value}"`);
  return v;
}

/** `--code-size`: the code RAM's bytes (a power of two; the chip checks the range), with the size spellings. */
export function codeSizeOption(value: string): number {
  const v = parseSize(value, '--code-size');
  if (v < 256 || !Number.isInteger(Math.log2(v))) throw new ChipcError('cli.code-size', `--code-size must be a power of two ≥ 256 bytes, not "${value}"`);
  return v;
}

/** `--max-shard-size`: a positive integer number of bytes, in decimal digits. */
export function maxShardSizeOption(value: string): number {
  return integerOption(value, '--max-shard-size', 'cli.max-shard-size', { min: 1 });
}

/** What `--input TEXT` / `--input-file F` give a command (console input, docs/token-protocol.md "Console input"). */
export interface InputFlags {
  input?: string;
  inputFile?: string;
}

/**
 * The console input bytes of `--input TEXT` (UTF-8) or `--input-file F` (the file's bytes), or
 * undefined for neither. ChipcError cli.input when both are given, cli.file when F cannot be read.
 */
export function inputOption(o: InputFlags): Uint8Array | undefined {
  if (o.input !== undefined && o.inputFile !== undefined) throw new ChipcError('cli.input', '--input and --input-file exclude each other');
  if (o.input !== undefined) return new TextEncoder().encode(o.input);
  if (o.inputFile === undefined) return undefined;
  try {
    return new Uint8Array(fs.readFileSync(o.inputFile));
  } catch (e) {
    throw new ChipcError('cli.file', `cannot read --input-file ${o.inputFile}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`);
  }
}

/** `--profile`: f32 or bf16 (ChipcError cli.profile otherwise). */
export function profileOption(value: string): 'f32' | 'bf16' {
  if (value !== 'f32' && value !== 'bf16') throw new ChipcError('cli.profile', `--profile must be f32 or bf16, not "${value}"`);
  return value;
}

/** `--engine`: weights (the compiled chip in the reference executor) or ir (the chip circuit); ChipcError cli.engine otherwise. */
export function engineOption(value: string): 'weights' | 'ir' {
  if (value !== 'weights' && value !== 'ir') throw new ChipcError('cli.engine', `--engine must be weights or ir, not "${value}"`);
  return value;
}

/** The help of `--file-hashes`, on every command that writes a `.chip`. */
export const FILE_HASHES_HELP = 'with a .chip output: record each safetensors file\'s SHA-256 in its manifest (hashes every dense byte: about doubles the write; expand checks them)';
/** The help of `--no-holes`, on every command that writes a dense checkpoint directory. */
export const NO_HOLES_HELP = 'with a checkpoint directory output: write every zero byte instead of leaving zero runs of 64 KiB or more as holes (the files read the same either way)';
/** The help of `--codec`, on every command that writes a `.chip`. */
export const CODEC_HELP = 'br: the current format version (4), 1 MiB frames brotli-compressed where that saves ≥ 1/8; none: version 1, all verbatim, with every file\'s SHA-256';
