/**
 * The division instructions (div, divu, rem, remu) of an image's functions, decoded from the words
 * of each function symbol whose name `names` matches: name → mnemonics in address order. A
 * division costs the chip 2 tokens per radix-16 quotient digit (docs/token-protocol.md), so the
 * firmware's hot helpers are checked to hold none where a multiply does.
 */
import { decode, parseElf } from '../../riscv/index.ts';

const STT_FUNC = 2;

export function divisionsByFunction(bytes: Uint8Array, names: RegExp): Map<string, string[]> {
  const img = parseElf(bytes);
  const out = new Map<string, string[]>();
  for (const sym of img.symbols) {
    if (sym.type !== STT_FUNC || sym.size === 0 || !names.test(sym.name)) continue;
    const seg = img.segments.find((g) => sym.value >= g.vaddr && sym.value + sym.size <= g.vaddr + g.filesz);
    if (seg === undefined) throw new Error(`function ${sym.name} lies in no loaded segment`);
    const dv = new DataView(seg.data.buffer, seg.data.byteOffset, seg.data.byteLength);
    const found: string[] = [];
    for (let a = sym.value; a < sym.value + sym.size; a += 4) {
      const d = decode(dv.getUint32(a - seg.vaddr, true));
      if (d && /^(div|rem)/.test(d.spec.name)) found.push(d.spec.name);
    }
    out.set(sym.name, found);
  }
  return out;
}
