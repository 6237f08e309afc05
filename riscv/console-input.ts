/**
 * Console input (docs/token-protocol.md "Console input"): bytes a host feeds a program after it is
 * loaded. The program's linker script reserves an input area — the symbols `__input_area` (its
 * address, 4-aligned) and `__input_size` (its size in bytes, firmware/runtime/link.ld) — holding
 * the byte count in its first word and the bytes from its second word on (byte i at
 * __input_area + 4 + i, little-endian within each word). The firmware's getchar() reads them in
 * order (firmware/runtime/runtime.c).
 *
 * The host writes the area's words: into the golden emulator's memory before the run, and on the
 * chip as loader tokens E(p) D(lo) H(hi) after the program's image and before the final J(entry)
 * (writeTokens) — so the chip, the golden emulator and a service call all see the same bytes.
 */
import { BOS_ID, CODE_BASE, codeWord, encodeToken } from './protocol.ts';
import type { Memory } from './memory.ts';
import { ChipcError } from '../src/util/errors.ts';

/** One word a host writes: a 4-aligned byte address and the 32-bit unsigned word to store there. */
export type MemoryWrite = readonly [address: number, word: number];

/** Where a program takes its console input. */
export interface InputArea {
  /** Byte address of the area's first word (the byte count). */
  address: number;
  /** Bytes of input the area holds (its size less the count word). */
  capacity: number;
}

/** The input area named by a program's symbols, or null when it has none (a program that reads no input). */
export function inputAreaOf(symbols: ReadonlyMap<string, number>): InputArea | null {
  const address = symbols.get('__input_area');
  const size = symbols.get('__input_size');
  if (address === undefined || size === undefined) return null;
  return { address: address >>> 0, capacity: Math.max(0, (size >>> 0) - 4) };
}

/**
 * The words that put `bytes` into `area`: the count word, then every word the bytes cover (zero
 * words too, so a service's earlier, longer input never shows through). ChipcError 'input.none'
 * when the program has no input area and bytes were given; 'input.too-long' when they exceed its
 * capacity; 'input.area' for an area that is not 4-aligned. `label` names the program in the message.
 */
export function inputWrites(area: InputArea | null, bytes: Uint8Array, label = 'the program'): MemoryWrite[] {
  if (area === null) {
    if (bytes.length === 0) return [];
    throw new ChipcError('input.none', `${label} has no console input area (symbols __input_area, __input_size; firmware/runtime/link.ld reserves one): it cannot read the ${bytes.length} input bytes given`);
  }
  if (area.address % 4 !== 0) throw new ChipcError('input.area', `${label}: its input area at 0x${area.address.toString(16)} is not 4-aligned`);
  if (bytes.length > area.capacity) {
    throw new ChipcError('input.too-long', `${label}: the input is ${bytes.length} bytes; its input area holds ${area.capacity} (link it with a larger -Wl,--defsym=__input_size=N)`);
  }
  const writes: MemoryWrite[] = [[area.address, bytes.length]];
  for (let i = 0; i < bytes.length; i += 4) {
    let w = 0;
    for (let k = 0; k < 4 && i + k < bytes.length; k++) w |= bytes[i + k]! << (8 * k);
    writes.push([area.address + 4 + i, w >>> 0]);
  }
  return writes;
}

/** Store the writes into an emulator's memory (what the loader tokens do on the chip). */
export function applyWrites(memory: Memory, writes: readonly MemoryWrite[]): void {
  for (const [address, word] of writes) memory.write32(address, word);
}

/** Words of the data RAM a loader address reaches (p = 0x8000 + k names register k, or configuration word k − 32). */
export const LOADER_WORDS = 0x8000;

/**
 * The token that latches loader address p (protocol v8, docs/token-protocol.md "Loading by
 * prompt"): E(0, p) for p < 0x4000, K(p − 0x4000) for the data RAM's words from 0x4000, and
 * OUT(0, p − 0x8000) for a register (p − 0x8000 < 32) or a configuration word. None of them starts
 * an instruction in another slot than 0, so the chip's slot latch changes at most once in a loader
 * prompt (the chunked-prefill rule, docs/numerics.md).
 */
export function loaderAddressToken(p: number): number {
  if (!Number.isInteger(p) || p < 0 || p >= 0x8000 + 256) throw new ChipcError('input.address', `loader address ${p} is outside [0, 0x8100)`);
  if (p < 0x4000) return encodeToken({ kind: 'E', j: 0, v: (p ^ 0x2000) - 0x2000 });
  if (p < 0x8000) return encodeToken({ kind: 'K', v: ((p - 0x4000) ^ 0x2000) - 0x2000 });
  return encodeToken({ kind: 'OUT', j: 0, b: p - 0x8000 });
}

/** The three loader tokens that write `word` at loader address p: its address token, D(low half), H(high half). */
export function loaderWordTokens(p: number, word: number): number[] {
  return [loaderAddressToken(p), encodeToken({ kind: 'D', v: word & 0xffff }), encodeToken({ kind: 'H', v: word >>> 16 })];
}

/**
 * The loader tokens (loaderWordTokens: address p, D(lo), H(hi)) of the writes (p = the word index from CODE_BASE).
 * ChipcError 'input.address' for an address that is not a 4-aligned word of the data RAM
 * [CODE_BASE, CODE_BASE + min(memBytes, 128 KiB)).
 */
export function writeTokens(writes: readonly MemoryWrite[], memBytes: number): number[] {
  const out: number[] = [];
  const limit = Math.min(Math.floor(memBytes / 4), LOADER_WORDS);
  for (const [address, word] of writes) {
    const p = (address - CODE_BASE) / 4;
    if (!Number.isInteger(p) || p < 0 || p >= limit) {
      throw new ChipcError('input.address', `the word at 0x${(address >>> 0).toString(16)} is not a 4-aligned address in the chip's data RAM [0x${CODE_BASE.toString(16)}, 0x${(CODE_BASE + 4 * limit).toString(16)})`);
    }
    out.push(...loaderWordTokens(p, word));
  }
  return out;
}

/**
 * The prompt that starts a loaded program with its input: `first` (BOS; for a service call the
 * previous call's HALT or TRAP), the input's loader tokens, J(entry). ChipcError
 * protocol.code-range for an entry J cannot name (codeWord).
 */
export function startPrompt(writes: readonly MemoryWrite[], entry: number, memBytes: number, first = BOS_ID): number[] {
  const j = encodeToken({ kind: 'J', w: codeWord(entry) });
  return [first, ...writeTokens(writes, memBytes), j];
}

/**
 * The writes of a program's first run: none without input (a fresh RAM's count word reads 0, so
 * the prompt stays [BOS, J(entry)]), else inputWrites. A service call writes the count word
 * always (inputWrites), so that an earlier input never shows through.
 */
export function firstRunInputWrites(area: InputArea | null, input: Uint8Array | undefined, label?: string): MemoryWrite[] {
  return input === undefined || input.length === 0 ? [] : inputWrites(area, input, label);
}
