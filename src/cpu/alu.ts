/**
 * 32-bit ALU building blocks for the RV32IM circuit, in chipc's circuit DSL.
 *
 * A 32-bit value is a `Word`: 4 byte signals, least significant first, each with the range
 * [0, 255]. Every residual value must stay within ±256 and the DSL infers ranges by interval
 * arithmetic, so a byte written as `a + b + c − 256·carry` (inferred [−256, 511]) is given a
 * declared range (`c.linear(terms, bias, [0, 255])`, checked by the interpreter at every position):
 * add32 and sub32 return such forms (no nibble tables). Other functions build each result byte as
 * the free linear form 16·H + L of two nibbles. The nibbles of a byte are remembered (see
 * `nibbles`): free for bytes built from nibbles, computed on demand from the carries for an add of
 * nibble-known operands, else split from the byte by two tables (one FFN layer).
 *
 * Depths below count FFN layers from the first layer where the operands' nibbles exist (token
 * fields: layer 1; a byte from elsewhere: one more layer for the split, which for most functions
 * overlaps work that needs only the bytes). Unit counts are measured by `chipc compile --report`
 * on the demo circuits (docs/rv32-alu.md).
 */
import type { CircuitBuilder, Sig } from '../dsl/index.ts';
import { ChipcError } from '../util/errors.ts';

/** A 32-bit value: 4 byte signals [0, 255], least significant byte first. */
export type Word = Sig[];

/** A shift amount prepared for the shifters: m = shamt & 3, and onehot[n] = [shamt >> 2 = n], n < 8. */
export interface ShiftAmount {
  m: Sig;
  onehot: Sig[];
}

// ── nibbles ───────────────────────────────────────────────────────────────────────────────────

/** byte signal → [low nibble, high nibble] (or how to get them), for bytes built from nibbles or already split. */
const nibbleCache = new WeakMap<Sig, [Sig, Sig] | (() => [Sig, Sig])>();
/** nibble signal → its 4 bits, least significant first. */
const bitCache = new WeakMap<Sig, Sig[]>();
/** Bytes whose nibbles cost nothing (built from nibbles, or the complement of such a byte). */
const freeNibbles = new WeakSet<Sig>();
/** shamt signal → its prepared ShiftAmount. */
const shamtCache = new WeakMap<Sig, ShiftAmount>();

function checkWord(w: Word, what: string): void {
  if (w.length !== 4) throw new ChipcError('alu.word', `${what}: a Word has 4 bytes, got ${w.length}`);
  for (const b of w) {
    const r = b.range;
    if (r.lo < 0 || r.hi > 255) throw new ChipcError('alu.word', `${what}: byte "${b.name}" has range [${r.lo}, ${r.hi}], not within [0, 255]`);
  }
}

/** The byte 16·hi + lo (a free linear form, range [0, 255]); its nibbles are remembered. */
export function byteFromNibbles(c: CircuitBuilder, lo: Sig, hi: Sig): Sig {
  const b = c.linear([[hi, 16], [lo, 1]]);
  nibbleCache.set(b, [lo, hi]);
  freeNibbles.add(b);
  return b;
}

/**
 * [low, high] nibbles of a byte: x & 15 and x >> 4. Free when the byte was built from nibbles
 * (byteFromNibbles, token words); otherwise two tables over the byte (1 FFN layer, ~64 units).
 */
export function nibbles(c: CircuitBuilder, x: Sig): [Sig, Sig] {
  const hit = nibbleCache.get(x);
  if (typeof hit === 'function') {
    const pair = hit();
    nibbleCache.set(x, pair);
    return pair;
  }
  if (hit) return hit;
  const r = x.range;
  if (r.lo < 0 || r.hi > 255) throw new ChipcError('alu.word', `nibbles: "${x.name}" has range [${r.lo}, ${r.hi}], not a byte`);
  const pair: [Sig, Sig] = [
    c.table(`${x.name}.lo`, [x], (v) => v & 15, [0, 15]),
    c.table(`${x.name}.hi`, [x], (v) => v >> 4, [0, 15]),
  ];
  nibbleCache.set(x, pair);
  return pair;
}

/** The 8 nibbles of a word, least significant first. */
export function wordNibbles(c: CircuitBuilder, w: Word): Sig[] {
  checkWord(w, 'wordNibbles');
  return w.flatMap((b) => nibbles(c, b));
}

/** The word whose nibbles are `n` (8 signals in [0, 15], least significant first). */
export function wordFromNibbles(c: CircuitBuilder, n: Sig[]): Word {
  if (n.length !== 8) throw new ChipcError('alu.word', `wordFromNibbles: 8 nibbles needed, got ${n.length}`);
  return [0, 1, 2, 3].map((k) => byteFromNibbles(c, n[2 * k]!, n[2 * k + 1]!));
}

/**
 * A word given by the input token: `value(t)` is the uint32 for token t. The nibbles are token
 * fields (free, in the embedding) and the bytes their linear forms; with `splitNibbles: false`
 * the bytes themselves are token fields, so consumers split them with tables (the generic path
 * for bytes that come from a RAM).
 */
export function wordFromTokens(c: CircuitBuilder, name: string, value: (t: number) => number, opts: { splitNibbles?: boolean } = {}): Word {
  const u = (t: number): number => {
    const v = value(t);
    if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new ChipcError('alu.word', `wordFromTokens "${name}": token ${t} gives ${v}, not a uint32`);
    return v;
  };
  if (opts.splitNibbles === false) {
    return [0, 1, 2, 3].map((k) => c.tokenField(`${name}.b${k}`, (t) => (u(t) >>> (8 * k)) & 255, [0, 255]));
  }
  const n = Array.from({ length: 8 }, (_, k) => c.tokenField(`${name}.n${k}`, (t) => (u(t) >>> (4 * k)) & 15, [0, 15]));
  return wordFromNibbles(c, n);
}

/** A constant word (constants are folded into the weights). */
export function constWord(c: CircuitBuilder, v: number): Word {
  if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new ChipcError('alu.word', `constWord: ${v} is not a uint32`);
  const n = Array.from({ length: 8 }, (_, k) => c.constant((v >>> (4 * k)) & 15));
  return wordFromNibbles(c, n);
}

/**
 * ~a: byte 255 − a_k, nibbles 15 − n (free linear forms with exact ranges). The bytes are forms of
 * a's bytes, so a consumer that needs only bytes does not wait for a's nibbles.
 */
export function not32(c: CircuitBuilder, a: Word): Word {
  checkWord(a, 'not32');
  return a.map((x) => {
    const y = c.linear([[x, -1]], 255);
    if (freeNibbles.has(x)) freeNibbles.add(y);
    nibbleCache.set(y, () => {
      const [lo, hi] = nibbles(c, x);
      return [c.linear([[lo, -1]], 15), c.linear([[hi, -1]], 15)];
    });
    return y;
  });
}

/**
 * The 4 bits of a nibble (least significant first): free when the nibble was built from bits,
 * else 4 tables over the nibble (1 FFN layer, ~30 units).
 */
export function nibbleBits(c: CircuitBuilder, x: Sig): Sig[] {
  const hit = bitCache.get(x);
  if (hit) return hit;
  const r = x.range;
  if (r.lo < 0 || r.hi > 15) throw new ChipcError('alu.word', `nibbleBits: "${x.name}" has range [${r.lo}, ${r.hi}], not a nibble`);
  const bits = [0, 1, 2, 3].map((i) => c.table(`${x.name}.bit${i}`, [x], (v) => (v >> i) & 1, [0, 1]));
  bitCache.set(x, bits);
  return bits;
}

/** The nibble Σ 2^i·bit_i (a free linear form, range [0, 15]); its bits are remembered. */
export function nibbleFromBits(c: CircuitBuilder, bits: Sig[]): Sig {
  if (bits.length !== 4) throw new ChipcError('alu.word', `nibbleFromBits: 4 bits needed, got ${bits.length}`);
  const n = c.linear(bits.map((b, i) => [b, 2 ** i] as [Sig, number]));
  bitCache.set(n, bits);
  return n;
}

// ── addition ──────────────────────────────────────────────────────────────────────────────────

/**
 * Carry class of a byte sum s ∈ [0, 510] (s = a + b, or a + 255 − b): −1 kill (s ≤ 254),
 * 0 propagate (s = 255), +1 generate (s ≥ 256). One table, 3 units.
 */
export function carryClass(c: CircuitBuilder, s: Sig, name: string): Sig {
  return c.table(name, [s], (v) => (v >= 256 ? 1 : v === 255 ? 0 : -1), [-1, 1]);
}

/**
 * Carry into byte k from classes w_0…w_{k−1} and carry-in: with w_{−1} = 2·cin − 1,
 * c_k = [X_k > 0], X_k = Σ_{j=−1}^{k−1} 2^{j+1}·w_j. The highest non-propagating byte decides
 * (its term outweighs all lower ones: 2^{j+1} > Σ_{i<j+1} 2^i), all-propagate gives w_{−1}'s
 * sign, i.e. cin. X_k ∈ [−31, 31]: one compare, ≤ 2 units.
 */
export function carries(c: CircuitBuilder, w: Sig[], cin: Sig | 0 | 1, tag: string): Sig[] {
  const wm1: [Sig | number, number] = typeof cin === 'number' ? [2 * cin - 1, 1] : [cin, 2];
  const bias = typeof cin === 'number' ? 0 : -1;
  const out: Sig[] = [];
  for (let k = 1; k <= w.length; k++) {
    const terms: [Sig | number, number][] = [wm1];
    for (let j = 0; j < k; j++) terms.push([w[j]!, 2 ** (j + 1)]);
    out.push(c.linear(terms, bias).gt(0).named(`${tag}.c${k}`));
  }
  return out;
}

/**
 * 32-bit addition: sum = (a + b + cin) mod 2^32, carry = [a + b + cin ≥ 2^32].
 * Layer 1: carry class of each byte sum (table over a_k + b_k);
 * layer 2: the carries c_k into each byte (carry lookahead: one compare each, see `carries`);
 * result byte k = a_k + b_k + c_k − 256·c_{k+1}, a free linear form declared [0, 255].
 * Depth 2 on bytes (no nibbles needed: byte operands are not split). The result's nibbles, when a
 * consumer asks for them: if both operands' nibbles are free, L_k = (al + bl + c_k) mod 16 (table
 * over [0, 31]) and H_k = (ah + bh + [r_k + c_k ≥ 2]) mod 16 (table over (r_k + c_k, ah + bh),
 * span 124; r_k = [al + bl ≥ 15] + [al + bl ≥ 16], a layer-1 table), so depth 3; otherwise the
 * result bytes are split by tables (depth 3).
 */
export function add32(c: CircuitBuilder, a: Word, b: Word, cin: Sig | 0 | 1 = 0, tag = 'add'): { sum: Word; carry: Sig } {
  checkWord(a, 'add32 a');
  checkWord(b, 'add32 b');
  if (typeof cin !== 'number') {
    const r = cin.range;
    if (r.lo < 0 || r.hi > 1) throw new ChipcError('alu.carry', `add32: carry-in "${cin.name}" has range [${r.lo}, ${r.hi}], not a bit`);
  }
  const w = [0, 1, 2, 3].map((k) => carryClass(c, c.add(a[k]!, b[k]!), `${tag}.w${k}`));
  const cs = carries(c, w, cin, tag);
  const cinto: (Sig | number)[] = [cin, ...cs.slice(0, 3)];
  const sumNibbles = (k: number): [Sig, Sig] => {
    const [al, ah] = nibbles(c, a[k]!);
    const [bl, bh] = nibbles(c, b[k]!);
    const tl = c.add(al, bl);
    const th = c.add(ah, bh);
    const ck = cinto[k]!;
    const r = c.table(`${tag}.r${k}`, [tl], (v) => (v >= 16 ? 2 : v === 15 ? 1 : 0), [0, 2]);
    return [
      c.table(`${tag}.L${k}`, [c.add(tl, ck)], (v) => v & 15, [0, 15]),
      c.table(`${tag}.H${k}`, [c.add(r, ck), th], (q, u) => (u + (q >= 2 ? 1 : 0)) & 15, [0, 15]),
    ];
  };
  const sum = [0, 1, 2, 3].map((k) => {
    const byte = c.linear([[a[k]!, 1], [b[k]!, 1], [cinto[k]!, 1], [cs[k]!, -256]], 0, [0, 255]).named(`${tag}.s${k}`);
    if (freeNibbles.has(a[k]!) && freeNibbles.has(b[k]!)) nibbleCache.set(byte, () => sumNibbles(k));
    return byte;
  });
  return { sum, carry: cs[3]! };
}

/** (a − b) mod 2^32 = a + ~b + 1, and borrow = [a < b] (unsigned). Depth 2 (bytes; nibbles: 3), borrow 2. */
export function sub32(c: CircuitBuilder, a: Word, b: Word, tag = 'sub'): { diff: Word; borrow: Sig } {
  const { sum, carry } = add32(c, a, not32(c, b), 1, tag);
  return { diff: sum, borrow: c.linear([[carry, -1]], 1) };
}

// ── comparisons ───────────────────────────────────────────────────────────────────────────────

/** sign(a_k − b_k) ∈ {−1, 0, 1} per byte: the carry class of a_k + ~b_k. One table, 3 units. */
function byteOrder(c: CircuitBuilder, a: Word, b: Word, tag: string): Sig[] {
  return [0, 1, 2, 3].map((k) => c.table(`${tag}.w${k}`, [c.sub(a[k]!, b[k]!)], (d) => Math.sign(d), [-1, 1]));
}

/**
 * Unsigned a < b (a bit): with w_k = sign(a_k − b_k), X = Σ 2^k·w_k is negative iff a < b
 * (the highest differing byte dominates). Layer 1: 4 tables; layer 2: one compare. Depth 2.
 */
export function sltu(c: CircuitBuilder, a: Word, b: Word, tag = 'sltu'): Sig {
  checkWord(a, 'sltu a');
  checkWord(b, 'sltu b');
  const w = byteOrder(c, a, b, tag);
  return c.linear(w.map((x, k) => [x, 2 ** k] as [Sig, number])).lt(0).named(tag);
}

/**
 * Signed a < b (two's complement): X' = Σ 2^k·w_k − 16·[a ≥ 2^31] + 16·[b ≥ 2^31] < 0. When the
 * signs differ the ±16 term outweighs |Σ 2^k·w_k| ≤ 15, otherwise the unsigned order holds.
 * Layer 1: 4 order tables and 2 sign compares; layer 2: one compare. Depth 2.
 */
export function slt(c: CircuitBuilder, a: Word, b: Word, tag = 'slt'): Sig {
  checkWord(a, 'slt a');
  checkWord(b, 'slt b');
  const w = byteOrder(c, a, b, tag);
  const sa = a[3]!.ge(128);
  const sb = b[3]!.ge(128);
  const terms: [Sig, number][] = w.map((x, k) => [x, 2 ** k]);
  terms.push([sa, -16], [sb, 16]);
  return c.linear(terms).lt(0).named(tag);
}

/** a = b (a bit): Σ_k [a_k = b_k] = 4. Layer 1: 4 equality compares; layer 2: one compare. Depth 2. */
export function eq32(c: CircuitBuilder, a: Word, b: Word, tag = 'eq'): Sig {
  checkWord(a, 'eq32 a');
  checkWord(b, 'eq32 b');
  const e = [0, 1, 2, 3].map((k) => a[k]!.eq(b[k]!));
  return c.add(...e).eq(4).named(tag);
}

// ── bitwise ───────────────────────────────────────────────────────────────────────────────────

/**
 * How bitwise operations are built: 'bits' — split nibbles into bits (4 tables per nibble, shared
 * by every bitwise op on the same operands), then one bit gate per bit ([x + y ≥ 2] for and,
 * [x + y ≥ 1] for or, [x + y = 1] for xor); depth 2 from nibbles. 'table' — one table per nibble
 * pair over (a_n, b_n) (index span 256, ~170 units each); depth 1 from nibbles.
 */
export type BitwiseMode = 'bits' | 'table';

type BitOp = 'and' | 'or' | 'xor';
const BITOP: Record<BitOp, (x: number, y: number) => number> = { and: (x, y) => x & y, or: (x, y) => x | y, xor: (x, y) => x ^ y };

function bitwise(c: CircuitBuilder, a: Word, b: Word, op: BitOp, mode: BitwiseMode, tag: string): Word {
  checkWord(a, `${tag} a`);
  checkWord(b, `${tag} b`);
  const na = wordNibbles(c, a);
  const nb = wordNibbles(c, b);
  if (mode === 'table') return wordFromNibbles(c, na.map((x, k) => c.table(`${tag}.n${k}`, [x, nb[k]!], BITOP[op], [0, 15])));
  return wordFromNibbles(c, na.map((x, k) => {
    const bx = nibbleBits(c, x);
    const by = nibbleBits(c, nb[k]!);
    return nibbleFromBits(c, bx.map((u, i) => {
      const t = c.add(u, by[i]!);
      return (op === 'and' ? t.ge(2) : op === 'or' ? t.ge(1) : t.eq(1)).named(`${tag}.n${k}.b${i}`);
    }));
  }));
}

/** a & b, per bit [a_i + b_i ≥ 2] (or per-nibble tables; see BitwiseMode). */
export function and32(c: CircuitBuilder, a: Word, b: Word, mode: BitwiseMode = 'bits', tag = 'and'): Word {
  return bitwise(c, a, b, 'and', mode, tag);
}
/** a | b, per bit [a_i + b_i ≥ 1] (or per-nibble tables; see BitwiseMode). */
export function or32(c: CircuitBuilder, a: Word, b: Word, mode: BitwiseMode = 'bits', tag = 'or'): Word {
  return bitwise(c, a, b, 'or', mode, tag);
}
/** a ^ b, per bit [a_i + b_i = 1] (or per-nibble tables; see BitwiseMode). */
export function xor32(c: CircuitBuilder, a: Word, b: Word, mode: BitwiseMode = 'bits', tag = 'xor'): Word {
  return bitwise(c, a, b, 'xor', mode, tag);
}

// ── shifts ────────────────────────────────────────────────────────────────────────────────────

/**
 * The shifters' view of a shift amount s ∈ [0, 31]: m = s & 3 and the one-hot of s >> 2
 * (tables over s: 1 FFN layer; remembered per signal).
 */
export function shiftAmount(c: CircuitBuilder, shamt: Sig): ShiftAmount {
  const hit = shamtCache.get(shamt);
  if (hit) return hit;
  const r = shamt.range;
  if (r.lo < 0 || r.hi > 31) throw new ChipcError('alu.shamt', `shift amount "${shamt.name}" has range [${r.lo}, ${r.hi}], not within [0, 31]`);
  const sa: ShiftAmount = {
    m: c.table(`${shamt.name}.m`, [shamt], (v) => v & 3, [0, 3]),
    onehot: Array.from({ length: 8 }, (_, n) => c.table(`${shamt.name}.is${n}`, [shamt], (v) => (v >> 2 === n ? 1 : 0), [0, 1])),
  };
  shamtCache.set(shamt, sa);
  return sa;
}

/** A shift amount given by the input token (free token fields); `value(t)` ∈ [0, 31]. */
export function shiftAmountFromTokens(c: CircuitBuilder, name: string, value: (t: number) => number): { shamt: Sig; amount: ShiftAmount } {
  const shamt = c.tokenField(name, value, [0, 31]);
  const amount: ShiftAmount = {
    m: c.tokenField(`${name}.m`, (t) => value(t) & 3, [0, 3]),
    onehot: Array.from({ length: 8 }, (_, n) => c.tokenField(`${name}.is${n}`, (t) => (value(t) >> 2 === n ? 1 : 0), [0, 1])),
  };
  shamtCache.set(shamt, amount);
  return { shamt, amount };
}

type ShiftKind = 'sll' | 'srl' | 'sra';

/**
 * The common shifter. With s = 4n + m:
 * layer 1: bit shift by m within nibble pairs, R_k = P_k + Q_k with two tables over (nibble, m):
 *   left  P_k = (N_k << m) & 15, Q_k = N_{k−1} >> (4 − m);
 *   right P_k = N_k >> m,        Q_k = (N_{k+1} << (4 − m)) & 15 (N_8 = 0, or 15·sign for sra);
 *   (P and Q have disjoint bits, so R_k = P_k + Q_k is the shifted nibble: declared [0, 15]);
 * layer 2: nibble shift by n, O_k = Σ_n select([s >> 2 = n], R_{k∓n}, 0) (one switch sum;
 *   at most one term is live, so the sum is declared [0, 15]: the output nibble).
 * sra's sign is [a_3 ≥ 128] (layer 1). Depth 2 (+1 when the shift amount needs its tables,
 * which overlap an operand split). (Before declared ranges, a third layer of range-restoring
 * tables brought O_k's inferred range [0, 120] back to [0, 15].)
 */
function shift32(c: CircuitBuilder, kind: ShiftKind, a: Word, shamt: Sig | ShiftAmount, tag: string, gate?: Sig): Word {
  checkWord(a, `${tag} a`);
  const { m, onehot } = 'm' in shamt ? shamt : shiftAmount(c, shamt);
  const N = wordNibbles(c, a);
  const left = kind === 'sll';
  // A table over (nibble, m), or with a gate over (nibble, m, gate), 0 while the gate is 0: with
  // the gate the slowest index its ramps all sit in the gate-1 half, so while the gate is 0 none
  // is active however the nibble and m move (no unit changes).
  const nibTable = (name: string, x: Sig, f: (x: number, s: number) => number, range: [number, number]): Sig => gate === undefined
    ? c.table(name, [x, m], f, range)
    : c.table(name, [x, m, gate], (v, s, g) => (g ? f(v, s) : 0), range);
  // sra: the sign nibble 15·[N_7 ≥ 8] fills above the top; Q_7 reads the sign from N_7 itself.
  const sign = kind !== 'sra' ? null : gate === undefined ? N[7]!.ge(8) : c.table(`${tag}.sign`, [N[7]!, gate], (v, g) => (g && v >= 8 ? 1 : 0), [0, 1]);
  const fill: Sig | null = sign === null ? null : c.linear([[sign, 15]]);
  const R: (Sig | null)[] = [];
  for (let k = 0; k < 8; k++) {
    const P = left
      ? nibTable(`${tag}.P${k}`, N[k]!, (x, s) => (x << s) & 15, [0, 15])
      : nibTable(`${tag}.P${k}`, N[k]!, (x, s) => x >> s, [0, 15]);
    const nb = left ? (k > 0 ? N[k - 1]! : null) : k < 7 ? N[k + 1]! : fill ? N[7]! : null;
    if (nb === null) {
      R.push(P);
      continue;
    }
    const above = (y: number): number => (!left && k === 7 ? (y >= 8 ? 15 : 0) : y); // sra: N_8 = 15·sign
    const Q = left
      ? nibTable(`${tag}.Q${k}`, nb, (y, s) => (s === 0 ? 0 : y >> (4 - s)), [0, 7])
      : nibTable(`${tag}.Q${k}`, nb, (y, s) => (s === 0 ? 0 : (above(y) << (4 - s)) & 15), [0, 14]);
    R.push(c.linear([[P, 1], [Q, 1]], 0, [0, 15])); // disjoint bits: the sum is the shifted nibble
  }
  const out: Sig[] = [];
  for (let k = 0; k < 8; k++) {
    const cases: [Sig, Sig][] = [];
    for (let n = 0; n < 8; n++) {
      const src = left ? k - n : k + n;
      const v = src >= 0 && src < 8 ? R[src]! : src >= 8 ? fill : null;
      if (v !== null) cases.push([onehot[n]!, v]);
    }
    // exactly one case is live (or none: 0): a choice, so the nibble is one dim
    out.push(c.choose(cases, [0, 15]).named(`${tag}.O${k}`));
  }
  return wordFromNibbles(c, out);
}

/** a << (s & 31) (mod 2^32). Depth 2 from nibbles and prepared shift amount (see shift32). */
export function sll32(c: CircuitBuilder, a: Word, shamt: Sig | ShiftAmount, tag = 'sll', gate?: Sig): Word {
  return shift32(c, 'sll', a, shamt, tag, gate);
}
/** a >>> s (logical). Depth 2 (see shift32). */
export function srl32(c: CircuitBuilder, a: Word, shamt: Sig | ShiftAmount, tag = 'srl', gate?: Sig): Word {
  return shift32(c, 'srl', a, shamt, tag, gate);
}
/** a >> s (arithmetic: the sign fills). Depth 2 (see shift32). */
export function sra32(c: CircuitBuilder, a: Word, shamt: Sig | ShiftAmount, tag = 'sra', gate?: Sig): Word {
  return shift32(c, 'sra', a, shamt, tag, gate);
}

/**
 * a << k for a constant k ∈ [1, 3]: nibble j of the result is P_j + Q_j with
 * P_j = (N_j << k) & 15 ∈ [0, 16 − 2^k] and Q_j = N_{j−1} >> (4 − k) ∈ [0, 2^k − 1] (tables over one
 * nibble; disjoint bits, and the inferred range of the sum is exactly [0, 15]). Depth 1 from nibbles.
 */
export function shlConst(c: CircuitBuilder, a: Word, k: 1 | 2 | 3, tag = 'shl'): Word {
  if (![1, 2, 3].includes(k)) throw new ChipcError('alu.shamt', `shlConst: k = ${k} must be 1, 2 or 3`);
  const N = wordNibbles(c, a);
  return wordFromNibbles(c, N.map((x, j) => {
    const P = c.table(`${tag}.P${j}`, [x], (v) => (v << k) & 15);
    return j === 0 ? P : c.add(P, c.table(`${tag}.Q${j}`, [N[j - 1]!], (y) => y >> (4 - k)));
  }));
}

/** sh{k}add: ((a << k) + b) mod 2^32 (Zba). Depth 3 from nibbles (shlConst then add32; result nibbles: 4). */
export function shAdd(c: CircuitBuilder, a: Word, b: Word, k: 1 | 2 | 3, tag = `sh${k}add`): Word {
  return add32(c, shlConst(c, a, k, `${tag}.shl`), b, 0, tag).sum;
}
export const sh1add = (c: CircuitBuilder, a: Word, b: Word): Word => shAdd(c, a, b, 1);
export const sh2add = (c: CircuitBuilder, a: Word, b: Word): Word => shAdd(c, a, b, 2);
export const sh3add = (c: CircuitBuilder, a: Word, b: Word): Word => shAdd(c, a, b, 3);
