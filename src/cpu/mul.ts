/**
 * RV32M multiplication for the RV32IM circuit, in chipc's circuit DSL: MUL (low 32 bits of the
 * product) and MULH / MULHSU / MULHU (high 32 bits; signed×signed, signed×unsigned,
 * unsigned×unsigned), on the `Word`s of alu.ts (4 bytes, least significant first).
 *
 * All four share one construction over nibble digits (a = Σ 16^i·a_i, b = Σ 16^j·b_j):
 *   layer 1  partial products: for each nibble pair (i, j) one table over (a_i, b_j) (combined
 *            index span 256) giving p_ij = A_i·B_j split as p_ij = 16·h_ij + l_ij, l ∈ [0, 15].
 *            A_i = a_i, except that a signed operand's top digit is signed, A_7 = a_7 − 16·[a_7 ≥ 8]
 *            (then a = Σ 16^i·A_i exactly, two's complement); then h ∈ [−8, 6], and the table
 *            stores h + 8 ≥ 0; the offsets 8·16^(i+j+1) are cancelled by adding the constant
 *            (−Σ offsets) mod 2^64 digit by digit into the columns (free; see `columnBias`).
 *            Column digit sums D_k = Σ_{i+j=k} l_ij + Σ_{i+j=k−1} h_ij (+ bias digit) are free
 *            linear forms, D_k ∈ [0, 233] (at most 8 l's, 7 h's, one bias digit ≤ 15).
 *   layer 2  r_k = D_k mod 16, q_k = ⌊D_k / 16⌋ ∈ [0, 14] (tables over D_k, span ≤ 234).
 *            The product is Σ_m 256^m·B_m with byte sums
 *            B_m = r_{2m} + 16·r_{2m+1} + q_{2m−1} + 16·q_{2m} ∈ [0, 493] (free forms).
 *   layer 3  the carry class of each byte sum, w_m = −1 (B_m ≤ 254), 0 (= 255), +1 (≥ 256): one
 *            table over B_m (its ramps sit at 254…256, within the gate window of [0, 493]).
 *            Since B_m + 1 < 512, a carry into a byte is at most 1.
 *   layer 4  the carry into byte m, c_m = [Σ_{j<m} 2^j·w_j > 0] (the highest non-propagating
 *            byte decides; all propagate ⇒ no carry, as the carry into byte 0 is 0); one compare
 *            each, the form lies in [−255, 255].
 *   result   byte m = B_m + c_m − 256·c_{m+1}, a free linear form declared [0, 255].
 * So every multiply is 4 FFN layers deep from the operands' nibbles (token nibbles: layer 1; bytes
 * from elsewhere: +1 layer for the nibble split). The result bytes are linear forms (no nibbles);
 * a consumer that needs their nibbles pays one split layer (alu.ts `nibbles`).
 *
 * Units (measured on circuits/rv32im/mul-demo.ts; docs/rv32-alu.md) are dominated by layer 1:
 * a pair table with both l and h costs up to ~256 units (shared ramps over the 256-index).
 */
import type { CircuitBuilder, Sig } from '../dsl/index.ts';
import { ChipcError } from '../util/errors.ts';
import { wordNibbles, type Word } from './alu.ts';

/** Digit of a nibble as a factor: the top nibble of a signed operand is two's complement. */
function digitValue(x: number, signedTop: boolean): number {
  return signedTop && x >= 8 ? x - 16 : x;
}

/**
 * The 16 nibble digits of C = (−Σ_{signed pairs} 8·16^(i+j+1)) mod 2^64, least significant first:
 * the constant that cancels the +8 offsets stored in the signed pairs' high digits.
 */
function columnBias(signedPairs: [number, number][]): number[] {
  let off = 0n;
  for (const [i, j] of signedPairs) off += 8n << BigInt(4 * (i + j + 1));
  const c = ((1n << 64n) - (off % (1n << 64n))) % (1n << 64n);
  return Array.from({ length: 16 }, (_, k) => Number((c >> BigInt(4 * k)) & 15n));
}

/**
 * The product a·b mod 2^64 as 8 bytes (or its low `bytes` bytes), with a and/or b read as signed
 * (two's complement) per the flags. The construction and its 4 layers: module comment.
 */
export function mulBytes(
  c: CircuitBuilder, a: Word, b: Word, signedA: boolean, signedB: boolean, bytes: 4 | 8, tag: string,
  columnExtra?: (na: Sig[], nb: Sig[]) => [Sig | number, number][][],
): Word {
  const na = wordNibbles(c, a);
  const nb = wordNibbles(c, b);
  const cols = 2 * bytes; // nibble columns that matter (the low `bytes` bytes of the product)
  const lTerms: [Sig | number, number][][] = Array.from({ length: cols }, () => []);
  const hTerms: [Sig | number, number][][] = Array.from({ length: cols }, () => []);
  // Extra addends per nibble column (weight 16^k), computed beside the partial products from the
  // operands' nibbles: the caller's way to add a multiple of a power of 16 to the product mod
  // 2^(8·bytes) at no extra depth, as long as every column sum stays within [0, 255] (checked below).
  const extra = columnExtra?.(na, nb) ?? [];
  for (const [k, terms] of extra.entries()) if (k < cols) hTerms[k]!.push(...terms);
  const signedPairs: [number, number][] = [];
  // layer 1: the partial products' digits
  for (let i = 0; i < 8; i++) {
    for (let j = 0; j < 8 && i + j < cols; j++) {
      const sa = signedA && i === 7;
      const sb = signedB && j === 7;
      const signedPair = sa || sb;
      const prod = (x: number, y: number): number => digitValue(x, sa) * digitValue(y, sb);
      lTerms[i + j]!.push([c.table(`${tag}.l${i}_${j}`, [na[i]!, nb[j]!], (x, y) => prod(x, y) & 15, [0, 15]), 1]);
      if (i + j + 1 < cols) {
        if (signedPair) signedPairs.push([i, j]);
        const off = signedPair ? 8 : 0;
        hTerms[i + j + 1]!.push([c.table(`${tag}.h${i}_${j}`, [na[i]!, nb[j]!], (x, y) => (prod(x, y) >> 4) + off, [0, 14]), 1]);
      }
    }
  }
  const bias = columnBias(signedPairs);
  // layer 2: column digit sums split into digit and carry
  const r: Sig[] = [];
  const q: Sig[] = [];
  for (let k = 0; k < cols; k++) {
    const D = c.linear([...lTerms[k]!, ...hTerms[k]!], bias[k]!).named(`${tag}.D${k}`);
    if (D.range.lo < 0 || D.range.hi > 255) throw new ChipcError('mul.column-range', `${tag}: column ${k} has range [${D.range.lo}, ${D.range.hi}]`);
    r.push(c.table(`${tag}.r${k}`, [D], (v) => v & 15, [0, 15]));
    q.push(c.table(`${tag}.q${k}`, [D], (v) => v >> 4)); // range: inferred from D's, [0, 14]
  }
  // layer 3: byte sums and their carry classes
  const B: Sig[] = [];
  const w: Sig[] = [];
  for (let m = 0; m < bytes; m++) {
    const terms: [Sig, number][] = [[r[2 * m]!, 1], [r[2 * m + 1]!, 16], [q[2 * m]!, 16]];
    if (m > 0) terms.push([q[2 * m - 1]!, 1]);
    const Bm = c.linear(terms).named(`${tag}.B${m}`);
    if (Bm.range.hi > 510) throw new ChipcError('mul.byte-sum', `${tag}: byte sum ${m} reaches ${Bm.range.hi}`);
    B.push(Bm);
    w.push(c.table(`${tag}.w${m}`, [Bm], (v) => (v >= 256 ? 1 : v === 255 ? 0 : -1), [-1, 1]));
  }
  // layer 4: carries by lookahead compares; the result bytes are declared-range forms
  const carry: (Sig | number)[] = [0];
  for (let m = 1; m <= bytes; m++) {
    carry.push(c.linear(w.slice(0, m).map((x, j) => [x, 2 ** j] as [Sig, number])).gt(0).named(`${tag}.c${m}`));
  }
  return B.map((Bm, m) => c.linear([[Bm, 1], [carry[m]!, 1], [carry[m + 1]!, -256]], 0, [0, 255]).named(`${tag}.byte${m}`));
}

/** MUL: (a·b) mod 2^32 (signedness does not matter). 4 layers from nibbles (see module comment). */
export function mul32(c: CircuitBuilder, a: Word, b: Word, tag = 'mul'): Word {
  return mulBytes(c, a, b, false, false, 4, tag);
}

/** MULH: ⌊a·b / 2^32⌋ mod 2^32 with a, b signed. 4 layers from nibbles. */
export function mulh32(c: CircuitBuilder, a: Word, b: Word, tag = 'mulh'): Word {
  return mulBytes(c, a, b, true, true, 8, tag).slice(4);
}

/** MULHSU: ⌊a·b / 2^32⌋ mod 2^32 with a signed, b unsigned. 4 layers from nibbles. */
export function mulhsu32(c: CircuitBuilder, a: Word, b: Word, tag = 'mulhsu'): Word {
  return mulBytes(c, a, b, true, false, 8, tag).slice(4);
}

/** MULHU: ⌊a·b / 2^32⌋ with a, b unsigned. 4 layers from nibbles. */
export function mulhu32(c: CircuitBuilder, a: Word, b: Word, tag = 'mulhu'): Word {
  return mulBytes(c, a, b, false, false, 8, tag).slice(4);
}
