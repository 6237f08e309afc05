/**
 * RAM → pinned Gated DeltaNet heads, exact by construction (docs/numerics.md "The GDN path"; layout and
 * bounds in docs/gadgets-gdn.md). One IR RAM (rows × word of unsigned fields, one write port,
 * P read ports) becomes P identical copies of key heads; the recurrent state of a key head's
 * value heads IS its part of the RAM copy. No FFN unit is needed: the address decode happens in
 * the key/query projections and the read-out in the gated norm and out_proj.
 *
 * Math per token (the layer is pinned by the assembler: g = −0, exp(g) = 1, conv tap 1.0):
 *  - key row i of a key head holding address A(i):
 *      k_pre_i = S·(2·(Σ_b s_b·a_b + zeros(A) − nbits) + 1),  s_b = +1 if bit b of A else −1
 *    = S·(1 − 2·mismatching bits): S for the addressed row, ≤ −S for every other row (so a row
 *    that is not addressed reads −0 however far the address is: an address move changes the q / k
 *    bits of the key heads that hold the old or the new address only, and incremental decode
 *    steps only their value heads).
 *    S = 128 (a power of two ≥ 89): silu(S) = S, silu(≤ −128) = −0, and L2
 *    (Σk² = S² = 4^7, eps absorbed) gives k = e_A exactly, or k = ±0 in the other key heads.
 *    q the same from a read port's address bits, plus 2S·(en − 1) for its enable (a disabled
 *    read: every q_pre ≤ −S, q = ±0; an enabled one: q = fl(1/√dk)·e_A).
 *  - β pre-activation b = 256·en − 128 (or 128 without enable): β = sigmoid(b) ∈ {1, +0}. The
 *    write enable is in β only: with β = +0, δ = fl((v − kv)·β) = ±0 and S + k·δ = S (S holds no
 *    −0: +0 + (±0) = +0), so a disabled write changes nothing though its key is one-hot.
 *  - a row is G = dv/4 base-4 digit groups of 4 columns per value head; the word's bits are packed
 *    LSB first (fields in order), 2 bits per group, unused bits are constant 0. Column (g, d):
 *      v_pre = T − P·(number of the group's bits that differ from the bits of d)
 *    with P = 512: T for the hot column (silu(T) = T), ≤ T − P ≤ −100 for the others (−0).
 *    T is a float32 with fl(T·fl(1/√dk)) = o_hot (a power of two ≥ 16), also after bf16 rounding
 *    of T (bf16 profile). Stored entries are only +0 and T, so the delta form is exact:
 *    v − kv ∈ {0, ±T}, T + (−T) = +0, and the L2-exact key writes the whole row.
 *  - read: o_j = S[A, j]·q_A ∈ {0, o_hot}; every written row has exactly G hot entries, so
 *    mean(o²) = G·o_hot²/dv = o_hot²/4 = 4^k ≥ 64 (eps absorbed, rsqrt = 2/o_hot exact) and the
 *    gated norm gives hot_out = 2·1·silu(32) = 64 on hot columns, 0 elsewhere; an unwritten row
 *    or a disabled read gives o = ±0 and 0 everywhere.
 *  - out_proj weight of column (g, d) into a field's value dim: Σ over the group's bits of that
 *    field of bit_k(d)·2^j / hot_out, into a bit dim: bit_k(d)/hot_out, into `valid`: 1/hot_out
 *    on all 4 columns of group 0. Each output is a sum of integer products, at most one non-zero
 *    per digit group of its field: exact in any order, with or without FMA.
 */
import { ChipcError } from '../util/errors.ts';
import type { GdnDims } from '../model/naming.ts';
import type { RamDecl } from '../ir/types.ts';
import { SLOT_MAX } from '../ir/types.ts';
import { bf16ToF32, f32ToBf16 } from '../safetensors/dtype.ts';
import { splitBf16 } from '../lower/frame.ts';
import type { Form, GdnKeyHeadSpec, GdnValueHeadSpec, Term, VDim } from '../lower/forms.ts';
import type { GdnRamHeadRole, GdnRamLayout, GdnRamLowering, HotValue } from '../lower/ram-lowering.ts';

// (The result types live in lower/ram-lowering.ts, where a lowered GDN op carries them; importers still find them here.)
export type { GdnRamCost, GdnRamHeadRole, GdnRamLayout, GdnRamLowering, HotValue } from '../lower/ram-lowering.ts';

const f32 = Math.fround;

/** The part of a target's GDN dims (model/naming.ts gdnDims) a RAM lowering depends on. */
export type GdnRamDims = Pick<GdnDims, 'hk' | 'hv' | 'dk' | 'dv'>;

/**
 * One address digit given as a one-hot group instead of bits: address bits [lo, lo + width) read
 * as the value v = Σ_j 2^j·bit_{lo+j}, and oneHot[v] is 1 exactly for the current v (exactly one
 * dim of the group is 1 at every position; null = a value that never occurs, read as 0). A digit
 * costs 2^width dims where bits cost width, but a change of the digit moves two of its dims, each
 * read by the rows with that digit only (1/2^width of them), where a changed bit is read by every
 * row: the decode's work per changed address is about 2^width/width times smaller
 * (docs/gadgets-gdn.md, "Address digits").
 */
export interface RamAddrDigit {
  lo: number;
  width: number;
  oneHot: (VDim | null)[];
}

/** Input vdims of the write port (all 0/1, LSB first). */
export interface RamWriteVDims {
  /** The address bits; entries covered by `addrDigits` are ignored (may be any dim). */
  addrBits: VDim[];
  /** Address bits given as one-hot digits instead (disjoint bit spans; default none). */
  addrDigits?: RamAddrDigit[];
  /** Write enable (0/1): a dim, or a form over dims whose value is 0 or 1 (a sum of exclusive 0/1 dims); null = always write. */
  enable: VDim | Form | null;
  /** fieldBits[f][j]: bit j of field f's value (ceil(log2(hi + 1)) bits per field). */
  fieldBits: VDim[][];
}

/** Input vdims of one read port. */
export interface RamReadVDims {
  addrBits: VDim[];
  addrDigits?: RamAddrDigit[];
  /** Read enable (0/1), a dim or a form as the write's; null = always read. A disabled read outputs 0 (valid 0). */
  enable: VDim | Form | null;
}

/**
 * Output vdims of one read port: residual[dim] += the value, so each must hold 0 before the
 * layer (a fresh vdim). Any entry may be null / absent (not produced).
 */
export interface RamReadOutVDims {
  /** values[f]: field f's value as an integer. */
  values?: (VDim | null)[];
  /** bits[f][j]: bit j of field f. */
  bits?: (VDim[] | null)[];
  /** 1 when the addressed row has ever been written (and the read is enabled), else 0. */
  valid?: VDim | null;
  /** groups[g]: Σ coef·(field's value) over its terms, as one integer (distinct fields, positive coefs). */
  groups?: { dim: VDim; terms: { field: number; coef: number }[] }[];
}

export interface GdnRamIo {
  write: RamWriteVDims | null;
  reads: { addr: RamReadVDims; out: RamReadOutVDims }[];
}

export interface GdnRamOptions {
  /** Key/query decode scale S (default 128). Exact only for a power of two ≥ 89; others are for hazard tests. */
  keyScale?: number;
  /** Key heads this RAM may use in its layer (default: all of the target's). */
  maxKeyHeads?: number;
  /** Prefix of the spec tags (default the RAM's name). */
  tag?: string;
  /** Two words per key-head row where the shape allows it (default true; docs/gadgets-gdn.md "Packed rows"). */
  packRows?: boolean;
}

/** Default key decode scale (a power of two ≥ 89: silu(−128) = −0 exactly). */
const RAM_KEY_SCALE = 128;
/** Gate pre-activation of the read-out: silu(32) = 32 exactly (identity region > 16.64). */
const RAM_Z = 32;
/** Mismatch penalty of the value form (T − P ≤ −100 keeps silu at exactly −0). */
const RAM_PENALTY = 512;

const bf16 = (x: number) => bf16ToF32(f32ToBf16(x));

function isPow2(x: number): boolean {
  return x > 0 && 2 ** Math.round(Math.log2(x)) === x;
}

function ceilLog2(n: number): number {
  let b = 0;
  while (2 ** b < n) b++;
  return b;
}

/** Number of significant bits of a float32 (for preferring short hot values). */
function sigBits(x: number): number {
  let m = Math.abs(x);
  while (!Number.isInteger(m)) m *= 2;
  while (m > 0 && m % 2 === 0) m /= 2;
  let b = 0;
  while (m >= 1) { m = Math.floor(m / 2); b++; }
  return b;
}

/** Adjacent float32 above (dir 1) or below (dir −1) a positive float32 x. */
function nextUp(x: number, dir: 1 | -1): number {
  const a = new Float32Array([x]);
  const u = new Uint32Array(a.buffer);
  u[0] += dir;
  return a[0]!;
}

/**
 * The hot value T for key dim dk: a float32 T ≥ 17 (silu identity region) with
 * fl(T·s) = o_hot and bf16(fl(bf16(T)·s)) = o_hot, s = fl(1/√dk), for the smallest power of two
 * o_hot ≥ 16 that has one; among the candidates the one with the fewest significant bits (so a
 * power of two when √dk is one). Searched over the float32s within 64 ulps of o_hot/s.
 * dk = 128: T = 181.01934814453125 (docs/gadgets-gdn.md "Hot value T"), o_hot = 16.
 */
export function findHotValue(dk: number): HotValue {
  if (!Number.isInteger(dk) || dk < 1) throw new ChipcError('ram.dims', `GDN key head dim ${dk} must be a positive integer`);
  const s = f32(Math.pow(dk, -0.5));
  for (let oHot = 16; oHot <= 2 ** 20; oHot *= 2) {
    const center = f32(oHot / s);
    const cands: number[] = [];
    let lo = center;
    let hi = center;
    for (let i = 0; i < 64; i++) { lo = nextUp(lo, -1); hi = nextUp(hi, 1); }
    for (let t = lo; t <= hi; t = nextUp(t, 1)) {
      if (t < 17) continue;
      if (f32(t * s) !== oHot) continue;
      if (bf16(f32(bf16(t) * s)) !== oHot) continue;
      cands.push(t);
    }
    if (cands.length > 0) {
      cands.sort((a, b) => sigBits(a) - sigBits(b) || Math.abs(a - center) - Math.abs(b - center));
      const T = cands[0]!;
      return { T, oHot, Tbf16: bf16(T), qScale: s };
    }
  }
  throw new ChipcError('ram.hot-value', `no float32 hot value T reads back as a power of two for key head dim ${dk}`);
}

/**
 * True when every subset sum of the form's products (each 0/1 dim at 0 and at 1) and of its
 * constant's bf16 parts is a float32: then every partial sum in any summation order (FMA too:
 * products are exact) is exact. Only for forms over 0/1 dims with few terms.
 */
export function formExactInAnyOrder(fm: Form): boolean {
  if (f32(fm.constant) !== fm.constant) return false;
  const parts = splitBf16(fm.constant);
  const n = fm.terms.length;
  if (n + parts.length > 16) throw new Error('internal: formExactInAnyOrder on a large form');
  for (let assign = 0; assign < 1 << n; assign++) {
    const leaves = [...parts];
    fm.terms.forEach((t, i) => { if ((assign >> i) & 1) leaves.push(t.coef); });
    for (let sub = 1; sub < 1 << leaves.length; sub++) {
      let sum = 0;
      for (let i = 0; i < leaves.length; i++) if ((sub >> i) & 1) sum += leaves[i]!;
      if (f32(sum) !== sum) return false;
    }
  }
  return true;
}

/** An enable as a form (a dim is the form 1·dim); null stays null. */
function enableForm(e: VDim | Form | null): Form | null {
  return e === null ? null : typeof e === 'number' ? { terms: [{ dim: e, coef: 1 }], constant: 0 } : e;
}

function bad(code: string, msg: string): never {
  throw new ChipcError(code, msg);
}

function fieldWidth(hi: number): number {
  return hi <= 0 ? 0 : ceilLog2(hi + 1);
}

/**
 * Lowers one RAM into GDN key heads for a target with GDN dims `dims`. Head order: for each
 * read port p, for each row block b, for each word part w: index (p·rowBlocks + b)·wordParts + w
 * (`roles` says the same). The caller places them in one linear_attention layer whose gated-norm
 * weight is `normWeight` for every value head, and whose FFN does not need to help.
 */
export function lowerRamToGdn(ram: RamDecl, io: GdnRamIo, dims: GdnRamDims, opts: GdnRamOptions = {}): GdnRamLowering {
  const name = ram.name;
  const { hk: Hk, hv: Hv, dk, dv } = dims;
  const r = Hv / Hk;
  if (!Number.isInteger(r) || r < 1) bad('ram.dims', `GDN value heads (${Hv}) must be a multiple of key heads (${Hk})`);
  if (!Number.isInteger(dv) || dv < 4 || dv % 4 !== 0) {
    bad('ram.dims', `RAM ${name}: GDN value head dim ${dv} must be a positive multiple of 4 (one base-4 digit per 4 columns)`);
  }
  const S = opts.keyScale ?? RAM_KEY_SCALE;
  if (!isPow2(S)) bad('ram.options', `RAM ${name}: key scale ${S} must be a power of two`);
  const maxKeyHeads = opts.maxKeyHeads ?? Hk;
  const tag = opts.tag ?? `ram ${name}`;

  // ---- shape of the RAM -------------------------------------------------------------------
  if (!Number.isInteger(ram.rows) || ram.rows < 1) bad('ram.rows', `RAM ${name}: ${ram.rows} rows (need a positive integer)`);
  const fieldWidthArr = ram.fields.map((fr, f) => {
    if (fr.lo !== 0 || !Number.isInteger(fr.hi) || fr.hi < 0) {
      bad('ram.field', `RAM ${name}: field ${f} range [${fr.lo}, ${fr.hi}] must be unsigned ([0, hi], hi a non-negative integer)`);
    }
    return fieldWidth(fr.hi);
  });
  const fieldOffset: number[] = [];
  let wordBits = 0;
  for (const w of fieldWidthArr) { fieldOffset.push(wordBits); wordBits += w; }
  const nbits = ceilLog2(ram.rows);
  const G = dv / 4;
  const groups = Math.max(1, Math.ceil(wordBits / 2));
  const valueHeadsPerWord = Math.ceil(groups / G);
  const fullRows = 2 ** Math.floor(Math.log2(dk));
  // Packed rows (docs/gadgets-gdn.md) when the rows are also a power of two ≥ 2·dk (so every
  // address is a row): the select bit (chosen once the ports' digits are checked, selectBitOf)
  // picks the value head, in β for writes and in z for reads.
  const wordsPerRow = ramWordsPerRow(ram, dims, opts);
  const rowsPerKeyHead = Math.min(fullRows, 2 ** nbits);
  const rowBits = Math.log2(rowsPerKeyHead);
  const rowBlocks = Math.ceil(ram.rows / (rowsPerKeyHead * wordsPerRow));
  const wordParts = wordsPerRow === 2 ? 1 : Math.ceil(valueHeadsPerWord / r);
  const ports = io.reads.length;
  const keyHeadsNeeded = ports * rowBlocks * wordParts;
  if (keyHeadsNeeded > maxKeyHeads) {
    bad('fit.ram', `RAM ${name} (${ram.rows} rows × ${wordBits}-bit word, ${ports} read port${ports === 1 ? '' : 's'}) needs `
      + `${keyHeadsNeeded} GDN key heads (${rowBlocks} row block${rowBlocks === 1 ? '' : 's'} of ${rowsPerKeyHead} rows × `
      + `${wordParts} word part${wordParts === 1 ? '' : 's'} of ${r * G * 2} bits × ${ports} port${ports === 1 ? '' : 's'}); `
      + `one layer has ${maxKeyHeads} available (dk ${dk}, dv ${dv}, ${r} value heads per key head)`);
  }

  // ---- the io matches the RAM -------------------------------------------------------------
  if ((ram.write === null) !== (io.write === null)) {
    bad('ram.io', `RAM ${name}: write port ${ram.write ? 'declared but no write vdims given' : 'vdims given but the RAM has none'}`);
  }
  if (ports !== ram.reads.length) bad('ram.io', `RAM ${name}: ${ram.reads.length} read ports declared, ${ports} given`);
  const checkAddr = (bits: VDim[], what: string, digits: RamAddrDigit[] | undefined) => {
    if (bits.length !== nbits) bad('ram.io', `RAM ${name}: ${what} has ${bits.length} address bits; ${ram.rows} rows need ${nbits}`);
    const covered = new Array<boolean>(nbits).fill(false);
    for (const dg of digits ?? []) {
      if (!Number.isInteger(dg.lo) || !Number.isInteger(dg.width) || dg.width < 1 || dg.lo < 0 || dg.lo + dg.width > nbits) {
        bad('ram.io', `RAM ${name}: ${what} has an address digit over bits [${dg.lo}, ${dg.lo + dg.width}) outside the ${nbits} address bits`);
      }
      if (dg.oneHot.length !== 2 ** dg.width) bad('ram.io', `RAM ${name}: ${what}'s digit over bits [${dg.lo}, ${dg.lo + dg.width}) has ${dg.oneHot.length} one-hot dims; it needs ${2 ** dg.width}`);
      for (let b = dg.lo; b < dg.lo + dg.width; b++) {
        if (covered[b]) bad('ram.io', `RAM ${name}: ${what}'s address digits overlap at bit ${b}`);
        covered[b] = true;
      }
    }
  };
  if (io.write) {
    checkAddr(io.write.addrBits, 'write port', io.write.addrDigits);
    if ((ram.write!.enable === null) !== (io.write.enable === null)) {
      bad('ram.io', `RAM ${name}: write enable ${io.write.enable === null ? 'missing' : 'given but not declared'}`);
    }
    if (io.write.fieldBits.length !== ram.fields.length) {
      bad('ram.io', `RAM ${name}: write port gives ${io.write.fieldBits.length} fields; the word has ${ram.fields.length}`);
    }
    io.write.fieldBits.forEach((b, f) => {
      if (b.length !== fieldWidthArr[f]) {
        bad('ram.io', `RAM ${name}: field ${f} (range [0, ${ram.fields[f]!.hi}]) needs ${fieldWidthArr[f]} bits, ${b.length} given`);
      }
    });
  }
  io.reads.forEach((rd, p) => {
    checkAddr(rd.addr.addrBits, `read port ${p}`, rd.addr.addrDigits);
    if ((ram.reads[p]!.enable === null) !== (rd.addr.enable === null)) {
      bad('ram.io', `RAM ${name}: read port ${p} enable ${rd.addr.enable === null ? 'missing' : 'given but not declared'}`);
    }
    const vals = rd.out.values;
    if (vals && vals.length !== ram.fields.length) bad('ram.io', `RAM ${name}: read port ${p} has ${vals.length} value outputs for ${ram.fields.length} fields`);
    vals?.forEach((d, f) => {
      if (d !== null && ram.fields[f]!.hi > SLOT_MAX) {
        bad('ram.field', `RAM ${name}: field ${f} (range [0, ${ram.fields[f]!.hi}]) cannot be read as one value: a residual slot holds at most ${SLOT_MAX} (read its bits instead)`);
      }
    });
    rd.out.groups?.forEach((g, i) => {
      const seen = new Set<number>();
      let hi = 0;
      for (const t of g.terms) {
        if (!Number.isInteger(t.field) || t.field < 0 || t.field >= ram.fields.length || seen.has(t.field) || !Number.isInteger(t.coef) || t.coef < 1) {
          bad('ram.io', `RAM ${name}: read port ${p} group ${i} has a term (field ${t.field}, coefficient ${t.coef}) that is not a distinct field with a positive integer coefficient`);
        }
        seen.add(t.field);
        hi += t.coef * ram.fields[t.field]!.hi;
      }
      if (hi > SLOT_MAX) bad('ram.field', `RAM ${name}: read port ${p} group ${i} reaches ${hi}; a residual slot holds at most ${SLOT_MAX}`);
    });
    const bitsOut = rd.out.bits;
    if (bitsOut && bitsOut.length !== ram.fields.length) bad('ram.io', `RAM ${name}: read port ${p} has ${bitsOut.length} bit outputs for ${ram.fields.length} fields`);
    bitsOut?.forEach((bs, f) => {
      if (bs && bs.length !== fieldWidthArr[f]) bad('ram.io', `RAM ${name}: read port ${p} field ${f} bit outputs: ${bs.length} given, ${fieldWidthArr[f]} bits`);
    });
  });

  // The select bit of packed rows: the address bit at or above the row bits whose [select = j]
  // forms read the fewest dims over all ports (a plain bit: 1; inside a digit of width w: 2^(w−1)
  // one-hot dims), the highest of equals. Those forms are in every column's z of every read.
  const selectBit = wordsPerRow === 2 ? selectBitOf(rowBits, nbits, [io.write?.addrDigits, ...io.reads.map((rd) => rd.addr.addrDigits)]) : -1;
  const rowOf = (b: number, j: number, i: number): number => ramRowOf({ rowsPerKeyHead, ...(selectBit >= 0 ? { selectBit } : {}) }, b, j, i);

  // ---- numbers of the layout --------------------------------------------------------------
  const hot = findHotValue(dk);
  let P = RAM_PENALTY;
  while (hot.T - P > -100) P *= 2;
  const mean = (G * hot.oHot * hot.oHot) / dv; // = o_hot²/4
  // mean must be an exact power of 4 ≥ 64 in both mean modes (sum/dv and sum·fl(1/dv)).
  const sumSq = G * hot.oHot * hot.oHot;
  if (!(mean >= 64 && isPow2(mean) && Number.isInteger(Math.log2(mean) / 2)) || f32(sumSq * f32(1 / dv)) !== mean || f32(sumSq / dv) !== mean) {
    throw new Error(`internal: RAM row mean ${mean} is not an exact power of four ≥ 64`);
  }
  const normWeight = 1;
  const rs = 1 / Math.sqrt(mean); // exact power of two
  const hotOut = f32(f32(normWeight * f32(hot.oHot * rs)) * RAM_Z);
  if (!isPow2(hotOut)) throw new Error('internal: RAM hot output is not a power of two');

  // ---- forms ------------------------------------------------------------------------------
  /**
   * Decode form S·(1 − 2·mismatches(addr, A)) − 2S·(1 − en): a bit mismatches when it differs from
   * A's (x for a wanted 0, 1 − x for a wanted 1), a one-hot digit when its dim for A's digit is
   * not 1 (1 − oneHot[d]; a missing dim is a constant 0, always a mismatch). Every value is an odd
   * multiple of S within ±S·(2·(digits + bits) + 3): exact in any order, in bf16 too.
   */
  const decode = (bits: VDim[], digits: RamAddrDigit[] | undefined, en: Form | null, A: number, ignore = 0): Form => {
    const terms: Term[] = [];
    let constant = S;
    let inDigit = 0; // the bits the digits cover (checkAddr: disjoint, inside nbits ≤ 31)
    for (const dg of digits ?? []) {
      const mask = 2 ** dg.width - 1;
      inDigit |= mask << dg.lo;
      // the digit matches when its value agrees with A's on the bits not ignored: the sum of the
      // one-hot dims of those values (one of them or none is 1)
      const care = mask & ~(ignore >> dg.lo);
      const want = (A >> dg.lo) & care;
      constant -= 2 * S;
      dg.oneHot.forEach((dim, d) => {
        if ((d & care) === want && dim !== null && dim !== undefined) terms.push({ dim, coef: 2 * S });
      });
    }
    bits.forEach((d, b) => {
      if ((inDigit >> b) & 1 || (ignore >> b) & 1) return;
      const one = (A >> b) & 1;
      if (one) constant -= 2 * S;
      terms.push({ dim: d, coef: one ? 2 * S : -2 * S });
    });
    if (en !== null) {
      for (const t of en.terms) terms.push({ dim: t.dim, coef: 2 * S * t.coef });
      constant += 2 * S * en.constant - 2 * S;
    }
    return { terms: mergeTerms(terms), constant };
  };
  const zeroForm = (): Form => ({ terms: [], constant: 0 });


  /** Word bit at position pos: the write vdim, or null for a constant 0 (padding). */
  const wordBitDims: (VDim | null)[] = new Array(groups * 2).fill(null);
  const bitField: { f: number; j: number }[] = [];
  ram.fields.forEach((_, f) => {
    for (let j = 0; j < fieldWidthArr[f]!; j++) {
      const pos = fieldOffset[f]! + j;
      bitField[pos] = { f, j };
      if (io.write) wordBitDims[pos] = io.write.fieldBits[f]![j]!;
    }
  });
  /** v form of column (group g, digit d): T − P·(mismatching bits). */
  const valueForm = (g: number, d: number): Form => {
    const terms: Term[] = [];
    let constant = hot.T;
    for (let k = 0; k < 2; k++) {
      const want = (d >> k) & 1;
      const dim = wordBitDims[2 * g + k];
      if (dim === null || dim === undefined) {
        if (want) constant -= P; // the constant bit 0 mismatches a wanted 1
      } else if (want) {
        constant -= P; // mismatch = 1 − x
        terms.push({ dim, coef: P });
      } else {
        terms.push({ dim, coef: -P }); // mismatch = x
      }
    }
    return { terms: mergeTerms(terms), constant };
  };
  const verified = new Set<string>();
  const checkValueForm = (fm: Form) => {
    const key = `${fm.constant}|${fm.terms.map((t) => t.coef).join(',')}`;
    if (verified.has(key)) return;
    if (!formExactInAnyOrder(fm)) throw new Error(`internal: RAM value form ${key} has an inexact partial sum`);
    verified.add(key);
  };

  const writeEnable = enableForm(io.write?.enable ?? null);
  const bForm: Form = writeEnable !== null
    ? { terms: writeEnable.terms.map((t) => ({ dim: t.dim, coef: 256 * t.coef })), constant: 256 * writeEnable.constant - 128 }
    : { terms: [], constant: io.write ? 128 : -128 };
  /** Address bit `selectBit` (the value-head select of packed rows) equal to j, as a 0/1 form. */
  const selectForm = (bits: VDim[], digits: RamAddrDigit[] | undefined, j: number): Form => {
    const dg = (digits ?? []).find((x) => selectBit >= x.lo && selectBit < x.lo + x.width);
    if (dg !== undefined) {
      const terms: Term[] = [];
      dg.oneHot.forEach((dim, d) => { if (((d >> (selectBit - dg.lo)) & 1) === j && dim !== null && dim !== undefined) terms.push({ dim, coef: 1 }); });
      return { terms: mergeTerms(terms), constant: 0 };
    }
    const x = bits[selectBit]!;
    return j === 1 ? { terms: [{ dim: x, coef: 1 }], constant: 0 } : { terms: [{ dim: x, coef: -1 }], constant: 1 };
  };
  const scaled = (fm: Form, c: number, add: number): Form => ({ terms: fm.terms.map((t) => ({ dim: t.dim, coef: t.coef * c })), constant: fm.constant * c + add });
  const addForms = (a: Form, b: Form): Form => ({ terms: mergeTerms([...a.terms, ...b.terms]), constant: a.constant + b.constant });
  /**
   * β of value head j of packed rows: 256·en + 256·[select = j] − 384 (or 256·[select = j] − 128
   * without an enable): +128 for the addressed head of an enabled write (β = 1), ≤ −128 otherwise
   * (β = +0).
   */
  const packedB = (j: number): Form => {
    const w = io.write!;
    const sel = scaled(selectForm(w.addrBits, w.addrDigits, j), 256, 0);
    return writeEnable !== null ? addForms(sel, scaled(writeEnable, 256, -384)) : scaled(sel, 1, -128);
  };
  /** z of value head j of packed rows: 32 for the read's head (silu = 32), −128 for the other (silu = −0). */
  const packedZ = (rd: RamReadVDims, j: number): Form => scaled(selectForm(rd.addrBits, rd.addrDigits, j), 160, -128);

  // ---- heads ------------------------------------------------------------------------------
  const heads: GdnKeyHeadSpec[] = [];
  const roles: GdnRamHeadRole[] = [];
  const productsPerOut = new Map<VDim, number>();
  const countProduct = (dim: VDim) => productsPerOut.set(dim, (productsPerOut.get(dim) ?? 0) + 1);
  for (let p = 0; p < ports; p++) {
    const rd = io.reads[p]!;
    const readEnable = enableForm(rd.addr.enable);
    // per field, the read groups whose terms read it: (group dim, the coefficient of its first such
    // term), in group order (looked up for every bit of every value head's columns)
    const groupsOfField = new Map<number, { dim: VDim; coef: number }[]>();
    for (const grp of rd.out.groups ?? []) {
      const seen = new Set<number>();
      for (const t of grp.terms) {
        if (seen.has(t.field)) continue;
        seen.add(t.field);
        let list = groupsOfField.get(t.field);
        if (list === undefined) groupsOfField.set(t.field, (list = []));
        list.push({ dim: grp.dim, coef: t.coef });
      }
    }
    for (let b = 0; b < rowBlocks; b++) {
      const q: Form[] = [];
      const k: Form[] = [];
      // packed rows: the select bit is decoded by β and z, not by the key
      const ignore = wordsPerRow === 2 ? 2 ** selectBit : 0;
      for (let i = 0; i < dk; i++) {
        const A = rowOf(b, 0, i);
        const live = i < rowsPerKeyHead && A < ram.rows;
        q.push(live ? decode(rd.addr.addrBits, rd.addr.addrDigits, readEnable, A, ignore) : zeroForm());
        // The write enable lives in β alone (β = +0 writes nothing): a key that also read it would
        // make every key channel of the RAM change with it, which incremental decode pays for.
        k.push(live && io.write ? decode(io.write.addrBits, io.write.addrDigits, null, A, ignore) : zeroForm());
      }
      for (let w = 0; w < wordParts; w++) {
        const values: (GdnValueHeadSpec | null)[] = [];
        for (let j = 0; j < r; j++) {
          // packed rows: value head j holds the rows whose select bit is j (its word is vi = 0)
          const vi = wordsPerRow === 2 ? (j < 2 ? 0 : valueHeadsPerWord) : w * r + j;
          if (vi >= valueHeadsPerWord) { values.push(null); continue; }
          const v: Form[] = [];
          const out: GdnValueHeadSpec['out'] = [];
          for (let gl = 0; gl < G; gl++) {
            const g = vi * G + gl;
            for (let d = 0; d < 4; d++) {
              const col = gl * 4 + d;
              const fm = valueForm(g, d);
              checkValueForm(fm);
              v.push(fm);
              // Read-out weights of this column.
              const valueW = new Map<VDim, number>();
              for (let kb = 0; kb < 2; kb++) {
                const pos = 2 * g + kb;
                const bf = bitField[pos];
                if (!bf || !((d >> kb) & 1)) continue;
                const vd = rd.out.values?.[bf.f];
                if (vd !== null && vd !== undefined) valueW.set(vd, (valueW.get(vd) ?? 0) + 2 ** bf.j);
                for (const gt of groupsOfField.get(bf.f) ?? []) valueW.set(gt.dim, (valueW.get(gt.dim) ?? 0) + gt.coef * 2 ** bf.j);
                const bd = rd.out.bits?.[bf.f]?.[bf.j];
                if (bd !== null && bd !== undefined) out.push({ col, dim: bd, weight: 1 / hotOut });
              }
              for (const [dim, wgt] of valueW) out.push({ col, dim, weight: wgt / hotOut });
              if (g === 0 && rd.out.valid !== null && rd.out.valid !== undefined) out.push({ col, dim: rd.out.valid, weight: 1 / hotOut });
            }
          }
          // Products per output: one hot column per group feeds each output at most once.
          const perGroup = new Map<string, true>();
          for (const o of out) {
            const key = `${o.dim}:${Math.floor(o.col / 4)}`;
            if (!perGroup.has(key)) { perGroup.set(key, true); if (b === 0) countProduct(o.dim); }
          }
          const zForm = wordsPerRow === 2 ? packedZ(rd.addr, j) : { terms: [], constant: RAM_Z };
          values.push({
            v,
            z: Array.from({ length: dv }, () => zForm),
            b: wordsPerRow === 2 && io.write ? packedB(j) : bForm,
            out,
            // Gated-norm outputs are exactly 0 or hotOut (order-invariance analysis).
            outBound: hotOut,
            outQuantum: hotOut,
            tag: `${tag} port ${p} rows ${rowOf(b, wordsPerRow === 2 ? j : 0, 0)}.. value head ${vi}`,
          });
        }
        heads.push({ q, k, values, tag: `${tag} port ${p} block ${b} part ${w}` });
        roles.push({ port: p, block: b, part: w });
      }
    }
  }

  // ---- cost -------------------------------------------------------------------------------
  const formNnz = (fm: Form) => fm.terms.filter((t) => t.coef !== 0).length + splitBf16(fm.constant).length;
  let nonZeros = 0;
  let valueHeads = 0;
  for (const h of heads) {
    for (const fm of h.q) nonZeros += formNnz(fm);
    for (const fm of h.k) nonZeros += formNnz(fm);
    for (const vh of h.values) {
      if (!vh) continue;
      valueHeads++;
      for (const fm of vh.v) nonZeros += formNnz(fm);
      for (const fm of vh.z) nonZeros += formNnz(fm);
      nonZeros += formNnz(vh.b);
      nonZeros += vh.out.length;
    }
  }
  const maxProductsPerOutput = Math.max(0, ...productsPerOut.values());

  return {
    heads,
    roles,
    normWeight,
    layout: {
      keyScale: S, addrBits: nbits, rowsPerKeyHead, rowBlocks, wordBits, groups, groupsPerValueHead: G,
      valueHeadsPerWord, wordParts, wordsPerRow, ...(selectBit >= 0 ? { selectBit } : {}), fieldOffset, fieldWidth: fieldWidthArr, hot, penalty: P,
      zConst: RAM_Z, normWeight, hotOut,
    },
    cost: { keyHeads: heads.length, valueHeads, nonZeros, maxProductsPerOutput },
  };
}

/**
 * Whether a key head of `dims` can hold two words of `wordBits` per row, one per value head
 * (packed rows, docs/gadgets-gdn.md): an even number of value heads per key head, each holding the
 * whole word. lowerRamToGdn packs such a RAM when its rows are also a power of two ≥ 2·dk;
 * riscv/chip-shape.ts sizes the RV32 chip's banks by the same rule.
 */
export function packsRows(dims: GdnRamDims, wordBits: number): boolean {
  const r = dims.hv / dims.hk;
  return Number.isInteger(r) && r % 2 === 0 && dims.dv >= 4 && Math.max(1, Math.ceil(wordBits / 2)) <= dims.dv / 4;
}

/**
 * Words per state row of a RAM lowered for `dims`: 2 (packed rows) when a key head holds two of
 * its words per row (packsRows) and its rows are a power of two ≥ 2·dk (every address a row),
 * unless `opts.packRows` is false; else 1.
 */
export function ramWordsPerRow(ram: RamDecl, dims: GdnRamDims, opts: GdnRamOptions = {}): 1 | 2 {
  const wordBits = ram.fields.reduce((sum, f) => sum + fieldWidth(f.hi), 0);
  const fullRows = 2 ** Math.floor(Math.log2(dims.dk));
  return opts.packRows !== false && packsRows(dims, wordBits) && ram.rows === 2 ** ceilLog2(ram.rows) && ram.rows >= 2 * fullRows ? 2 : 1;
}

/**
 * The RAM row that state row i of value head j in row block b holds: b·rowsPerKeyHead + i, with
 * packed rows' select bit (at or above the row bits) inserted as j.
 */
export function ramRowOf(lay: Pick<GdnRamLayout, 'rowsPerKeyHead' | 'selectBit'>, b: number, j: number, i: number): number {
  const x = b * lay.rowsPerKeyHead + i;
  if (lay.selectBit === undefined) return x;
  const low = x % 2 ** lay.selectBit;
  return (x - low) * 2 + j * 2 ** lay.selectBit + low;
}

/**
 * The select bit of packed rows: among address bits [rowBits, nbits), the one whose [select = j]
 * forms read the fewest dims summed over the ports' digit lists (a bit outside every digit: 1;
 * inside a digit of width w: 2^(w−1)); the highest bit among equals.
 */
function selectBitOf(rowBits: number, nbits: number, ports: (RamAddrDigit[] | undefined)[]): number {
  let best = -1;
  let bestCost = Infinity;
  for (let bit = nbits - 1; bit >= rowBits; bit--) {
    let cost = 0;
    for (const digits of ports) {
      const dg = (digits ?? []).find((x) => bit >= x.lo && bit < x.lo + x.width);
      cost += dg === undefined ? 1 : 2 ** (dg.width - 1);
    }
    if (cost < bestCost) { best = bit; bestCost = cost; }
  }
  return best;
}

/**
 * The terms with each dim's coefficients summed (from 0, in the order given: the sort is stable),
 * zero sums dropped, dims ascending.
 */
function mergeTerms(terms: Term[]): Term[] {
  let ascending = true;
  for (let i = 1; i < terms.length && ascending; i++) ascending = terms[i - 1]!.dim <= terms[i]!.dim;
  const sorted = ascending ? terms : terms.slice().sort((a, b) => a.dim - b.dim);
  const out: Term[] = [];
  for (let i = 0; i < sorted.length;) {
    const dim = sorted[i]!.dim;
    let coef = 0;
    for (; i < sorted.length && sorted[i]!.dim === dim; i++) coef += sorted[i]!.coef;
    if (coef !== 0) out.push({ dim, coef });
  }
  return out;
}
