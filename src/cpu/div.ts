/**
 * RV32M division building blocks for the RV32IM circuit, in chipc's circuit DSL: one radix-16
 * digit step of unsigned long division (`divStep`), meant to run once per generated token
 * position with the partial remainder passed between positions, and the helpers for signed
 * division (`absWord`, `negWord`) and for feeding the dividend's nibbles (`nibble`).
 * Words are the `Word`s of alu.ts (4 bytes, least significant first). docs/rv32-div.md has the
 * measured cost and how DIV / DIVU / REM / REMU are built from 8 steps.
 *
 * Depths count FFN layers from the first layer where the operands' nibbles exist (token nibble
 * fields, or words built from nibbles such as a previous step's remainder: layer 1; bytes from
 * elsewhere: +1 layer for the nibble split of alu.ts `nibbles`).
 */
import type { CircuitBuilder, Sig } from '../dsl/index.ts';
import { ChipcError } from '../util/errors.ts';
import { wordFromNibbles, wordNibbles, type Word } from './alu.ts';

function checkNibble(x: Sig, what: string): void {
  const r = x.range;
  if (r.lo < 0 || r.hi > 15) throw new ChipcError('div.nibble', `${what}: "${x.name}" has range [${r.lo}, ${r.hi}], not within [0, 15]`);
}

const sign = (v: number): number => Math.sign(v);

/**
 * One radix-16 step of unsigned long division.
 *
 * Math (exact for ALL inputs R, B ∈ [0, 2^32), nib ∈ [0, 15]): with X = 16·R + nib (36 bits),
 *   q   = min(15, ⌊X / B⌋)   (q = 15 when B = 0),
 *   rem = (X − q·B) mod 2^32.
 * Under the division precondition 0 ≤ R < B (hence B ≥ 1) this is the long-division step:
 * X < 16·B, so q = ⌊X / B⌋ ∈ [0, 15] and rem = X − q·B ∈ [0, B), no wrap. With B = 0 it gives
 * q = 15 and rem = X mod 2^32, so 8 chained steps compute RISC-V's DIVU/REMU by zero
 * (q = 2^32 − 1, r = a) with no special case (docs/rv32-div.md).
 *
 * Construction. Digits: x_0 = nib, x_{j+1} = nibble j of R (j = 0…7), so X = Σ_{j=0}^{8} 16^j·x_j;
 * b_j = nibble j of B (b_8 = 0). For every multiple m = 1…15, T_m = X − m·B = Σ_j 16^j·d_{m,j}
 * with d_{m,j} = x_j − m·b_j ∈ [−15m, 15] (a free linear form).
 *   layer 1  k_{m,j} = ⌊d_{m,j} / 16⌋ ∈ [−m, 0] (one table over d, span 16m + 1 ≤ 241), j = 0…7.
 *            Then t_{m,j} = (d_{m,j} − 16·k_{m,j}) + k_{m,j−1} ∈ [0, 15] + [−15, 0] = [−15, 15]
 *            (k_{m,−1} = 0; t_{m,8} = x_8 + k_{m,7}) are free forms with T_m = Σ_j 16^j·t_{m,j}
 *            (declared [−15, 15]; the interpreter checks it).
 *   layer 2  digit signs σ_{m,j} = sign(t_{m,j}) (tables over [−15, 15]), j = 0…7, and
 *            S_m = sign(16·t_{m,8} + t_{m,7}) (a table over [−16m − 15, 255]).
 *            Because |t| ≤ 15, |Σ_{i<j} 16^i·t_i| ≤ 16^j − 1 < 16^j: the sign of any prefix sum
 *            V_{m,j} = Σ_{i<j} 16^i·t_{m,i} is the sign of its highest non-zero digit.
 *   layer 3  g_m = [T_m ≥ 0] = [X ≥ m·B] = [128·S_m + Σ_{i<7} 2^i·σ_{m,i} ≥ 0] (form in [−255, 255]).
 *            q = Σ_m g_m (free; g_m is monotone in m since m·B is, so q = min(15, ⌊X / B⌋)).
 *            The nibbles of T_m mod 2^32 are v_{m,j} = t_{m,j} − β_{m,j} + 16·β_{m,j+1} ∈ [0, 15]
 *            with the borrows β_{m,j} = [V_{m,j} < 0] = [F_{m,j} < 0], F_{m,j} = Σ_{i<j} 2^i·σ_{m,i}
 *            ∈ [−(2^j − 1), 2^j − 1] (β_{m,0} = β_{m,1} = 0 since t_{m,0} ≥ 0): two's complement
 *            digits of the prefix sums, V_{m,j} = −16^j·β_{m,j} + low_j with low_j ∈ [0, 16^j).
 *   layer 4  with the one-hot o_m = g_m − g_{m+1} (g_0 = 1, g_16 = 0; declared [0, 1]) of q,
 *            rem nibble j = v_{q,j} = p_j − b_j + 16·b_{j+1}, where
 *              p_j = Σ_{m=0}^{15} select(o_m, t_{m,j}, 0) (t_{0,j} = x_j: T_0 = X), a choice, and
 *              b_j = Σ_{m=1}^{15} [F_{m,j} + 2^j·(1 − o_m) < 0] = β_{q,j} (j = 2…8; 0 for q = 0):
 *            the compare holds only for the picked multiple, since F ≥ −(2^j − 1) makes the form ≥ 1
 *            when o_m = 0 (its form lies in [−(2^j − 1), 3·2^j − 1]). b_j is a sum of single-use
 *            compares, one dim (passes/lower-encodings.ts sumDim). The borrows wait for the one-hot,
 *            so they sit in the choice's layer and the 105 borrows of all multiples never exist:
 *            the signs σ are what the layer-4 FFN reads.
 * So q is ready after 3 FFN layers and rem after 4, from the nibbles of R and B. rem is built
 * from nibbles (wordFromNibbles), so the next step reads its nibbles for free.
 * Every slot value is an integer within ±256 (k ∈ [−15, 0], σ, S ∈ {−1, 0, 1}, bits, p_j ∈ [−15, 15],
 * b_j ∈ [0, 15], nibbles);
 * every table input spans ≤ 511 values with ramps inside the bf16 gate window.
 */
export function divStep(c: CircuitBuilder, R: Word, nib: Sig, B: Word, tag = 'div'): { q: Sig; rem: Word; ge: Sig[] } {
  checkNibble(nib, `divStep ${tag} nib`);
  const rn = wordNibbles(c, R);
  const bn = wordNibbles(c, B);
  const x: Sig[] = [nib, ...rn]; // x_0 … x_8
  const ge: Sig[] = []; // g_1 … g_15
  const signs: Sig[][] = []; // σ_{m,0…7}, m = 1…15
  const tDigits: Sig[][] = []; // t_{m,0…7}, m = 1…15
  for (let m = 1; m <= 15; m++) {
    const t = `${tag}.m${m}`;
    // layer 1: d_{m,j} = x_j − m·b_j and its floor-16 carry k_{m,j}
    const d = bn.map((b, j) => c.linear([[x[j]!, 1], [b, -m]]));
    const k = d.map((dj, j) => c.table(`${t}.k${j}`, [dj], (v) => Math.floor(v / 16), [-m, 0]));
    // normalised digits t_{m,0…8} ∈ [−15, 15]
    const td: Sig[] = d.map((dj, j) => {
      const terms: [Sig, number][] = [[dj, 1], [k[j]!, -16]];
      if (j > 0) terms.push([k[j - 1]!, 1]);
      return c.linear(terms, 0, j === 0 ? [0, 15] : [-15, 15]).named(`${t}.t${j}`);
    });
    td.push(c.add(x[8]!, k[7]!).named(`${t}.t8`));
    // layer 2: digit signs, and the sign of the top pair
    const s = td.slice(0, 8).map((tj, j) => c.table(`${t}.s${j}`, [tj], sign, [-1, 1]));
    const top = c.table(`${t}.S`, [c.linear([[td[8]!, 16], [td[7]!, 1]])], sign, [-1, 1]);
    // layer 3: g_m = [T_m ≥ 0]; the borrow forms F_{m,j} wait for the one-hot (layer 4)
    const gTerms: [Sig, number][] = s.slice(0, 7).map((sj, i) => [sj, 2 ** i]);
    gTerms.push([top, 128]);
    ge.push(c.linear(gTerms).ge(0).named(`${tag}.ge${m}`));
    signs.push(s);
    tDigits.push(td.slice(0, 8));
  }
  const q = c.add(...ge).named(`${tag}.q`);
  // layer 4: rem = T_q mod 2^32. The one-hot o_m = g_m − g_{m+1} picks t_{q,j} (a choice), and
  // the picked multiple's borrows come from compares that hold only for it (see the doc comment).
  const onehot: Sig[] = [];
  for (let m = 0; m <= 15; m++) {
    const terms: [Sig | number, number][] = [];
    if (m === 0) terms.push([1, 1]);
    else terms.push([ge[m - 1]!, 1]);
    if (m < 15) terms.push([ge[m]!, -1]);
    onehot.push(c.linear(terms, 0, [0, 1]).named(`${tag}.is${m}`));
  }
  // borrowSum[j] = Σ_m [o_m = 1 ∧ F_{m,j} < 0] = β_{q,j} (j = 2…8; 0 below)
  const borrowSum: (Sig | number)[] = [0, 0];
  for (let j = 2; j <= 8; j++) {
    const picked = signs.map((s, i) => {
      const m = i + 1;
      const terms: [Sig | number, number][] = s.slice(0, j).map((sj, l) => [sj, 2 ** l]);
      terms.push([1, 2 ** j], [ge[m - 1]!, -(2 ** j)]);
      if (m < 15) terms.push([ge[m]!, 2 ** j]);
      return c.linear(terms).lt(0).named(`${tag}.m${m}.b${j}`);
    });
    borrowSum.push(c.add(...picked).named(`${tag}.b${j}`));
  }
  // (one o_m holds: a choice, whose nibble is one dim, passes/lower-encodings.ts choiceDim)
  const remNibbles = Array.from({ length: 8 }, (_, j) => {
    const picked = c.choose(onehot.map((o, m) => [o, m === 0 ? x[j]! : tDigits[m - 1]![j]!] as [Sig, Sig]), [j === 0 ? 0 : -15, 15]).named(`${tag}.p${j}`);
    return c.linear([[picked, 1], [borrowSum[j]!, -1], [borrowSum[j + 1]!, 16]], 0, [0, 15]).named(`${tag}.r${j}`);
  });
  return { q, rem: wordFromNibbles(c, remNibbles), ge };
}

/** The k-th nibble (k = 0 lowest … 7) of a word: free for words built from nibbles, else one split table. */
export function nibble(c: CircuitBuilder, A: Word, k: number): Sig {
  if (!Number.isInteger(k) || k < 0 || k > 7) throw new ChipcError('div.nibble', `nibble: index ${k} is not an integer in [0, 7]`);
  return wordNibbles(c, A)[k]!;
}

/**
 * Two's complement negation, (2^32 − A) mod 2^32 = ~A + 1, on nibbles: the carry into nibble j is
 * z_j = [n_0 = … = n_{j−1} = 0] = [Σ_{i<j} n_i = 0] (one compare each, the form lies in
 * [0, 15j]; z_0 = 1), and result nibble j = 15 − n_j + z_j − 16·z_{j+1} ∈ [0, 15] (a free form,
 * declared: z_{j+1} = 1 implies z_j = 1 and n_j = 0). Depth 1 from A's nibbles (8 compares);
 * the result is built from nibbles. −0 = 0 and −2^31 = 2^31.
 */
export function negWord(c: CircuitBuilder, A: Word, tag = 'neg'): Word {
  const n = wordNibbles(c, A);
  const z: (Sig | number)[] = [1];
  for (let j = 1; j <= 8; j++) z.push(c.add(...n.slice(0, j)).eq(0).named(`${tag}.z${j}`));
  return wordFromNibbles(c, n.map((nj, j) =>
    c.linear([[nj, -1], [z[j]!, 1], [z[j + 1]!, -16]], 15, [0, 15]).named(`${tag}.n${j}`)));
}

/**
 * Magnitude and sign of a two's complement word: neg = [A ≥ 2^31] (= [n_7 ≥ 8]) and
 * mag = neg ? (2^32 − A) mod 2^32 : A, as an unsigned word (INT_MIN → 0x80000000).
 * Layer 1: neg and negWord's carries; layer 2: one select per nibble. Depth 2 from A's nibbles;
 * mag is built from nibbles.
 */
export function absWord(c: CircuitBuilder, A: Word, tag = 'abs'): { mag: Word; neg: Sig } {
  const n = wordNibbles(c, A);
  const neg = n[7]!.ge(8).named(`${tag}.neg`);
  const negA = wordNibbles(c, negWord(c, A, `${tag}.neg`));
  return { mag: wordFromNibbles(c, n.map((nj, j) => c.select(neg, negA[j]!, nj).named(`${tag}.m${j}`))), neg };
}

/**
 * Signs of a signed division (DIV / REM) from the unsigned result of 8 steps on the magnitudes:
 * with Q = ⌊|a| / |b|⌋ and R = |a| mod |b| (|b| = 0: Q = 2^32 − 1 and R = |a|, what the steps give),
 *   quot = flip ? (2^32 − Q) mod 2^32 : Q,  flip = [negA + negB + 2·bZero = 1] (signs differ, b ≠ 0),
 *   rem  = negA ? (2^32 − R) mod 2^32 : R.
 * This is RISC-V's DIV / REM for every input: b = 0 gives quot = −1 (Q = all ones, no flip) and
 * rem = a; INT_MIN / −1 gives |a| = 2^31, Q = 2^31, negated to 2^31 = INT_MIN, rem 0.
 * Layer 1: flip (one compare) and the negations' carries; layer 2: one select per nibble.
 * Depth 2 from the nibbles of Q and R (negA, negB, bZero must be bits).
 */
export function signedResult(
  c: CircuitBuilder, Q: Word, R: Word, negA: Sig, negB: Sig, bZero: Sig, tag = 'sdiv',
): { quot: Word; rem: Word } {
  for (const [s, what] of [[negA, 'negA'], [negB, 'negB'], [bZero, 'bZero']] as const) {
    const r = s.range;
    if (r.lo < 0 || r.hi > 1) throw new ChipcError('div.bit', `signedResult: ${what} "${s.name}" has range [${r.lo}, ${r.hi}], not a bit`);
  }
  const flip = c.linear([[negA, 1], [negB, 1], [bZero, 2]]).eq(1).named(`${tag}.flip`);
  const pick = (cond: Sig, w: Word, t: string): Word => {
    const n = wordNibbles(c, w);
    const nn = wordNibbles(c, negWord(c, w, `${t}.neg`));
    return wordFromNibbles(c, n.map((x, j) => c.select(cond, nn[j]!, x).named(`${t}.${j}`)));
  };
  return { quot: pick(flip, Q, `${tag}.q`), rem: pick(negA, R, `${tag}.r`) };
}
