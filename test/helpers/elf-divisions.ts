/**
 * The division instructions (div, divu, rem, remu) of an image's functions whose name `names`
 * matches (firmware/expected.ts functionInstructions): name → mnemonics in address order. A
 * division costs the chip 2 tokens per radix-16 quotient digit (docs/token-protocol.md), so the
 * firmware's hot helpers are checked to hold none where a multiply does.
 */
import { functionInstructions } from '../../firmware/expected.ts';

export function divisionsByFunction(bytes: Uint8Array, names: RegExp): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const fn of functionInstructions(bytes)) {
    if (!names.test(fn.name)) continue;
    out.set(fn.name, fn.words.flatMap((w) => (w.mnemonic !== null && /^(div|rem)/.test(w.mnemonic) ? [w.mnemonic] : [])));
  }
  return out;
}
