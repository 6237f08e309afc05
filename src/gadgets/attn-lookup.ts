/**
 * Lookup → one hard-attention head, exact by construction (docs/numerics.md "Hard attention"; layout, math,
 * bounds and costs in docs/gadgets-attn.md). One IR lookup becomes one kv head and one of its
 * query heads of a full_attention layer; the layer-wide q_norm / k_norm weights it needs are
 * returned beside it (they are shared by every head of the layer).
 *
 * Semantics (src/ir/interpret.ts): at position t the read returns the value of the published
 * position s ≤ t whose key equals the query and whose stamp is largest, with hit = 1, or the
 * defaults with hit = 0 when none matches. Position 0 is the BOS token (the sink).
 *
 * Math (all q/k content in head dims ≥ R, so RoPE rotates exact zeros; dims < R are 0):
 *  - k codes (raw, before k_norm): ±c per key bit (c·(2b − 1)), per publish flag and per stamp bit,
 *    the centring offset (n + [publish])·c, constant fillers f_i·c; so Σk² = D·4^j·c² at every
 *    non-BOS position and k_norm multiplies by exactly 2^−j/c (then by the layer's (1+w_k) = sk).
 *  - BOS adds isBos·n_s·2^p on the sink dims (n_s from D = h·4^e, h = Σ n_s²); p is so large that
 *    every other square is absorbed: Σk² = h·4^p exactly in any order, k_norm gives the sink
 *    n_s·2^e·sk and leaves the BOS codes ≤ 2^−8 design units of score in total.
 *  - q (raw): B·(2a − 1) per query bit, P on publish, 2^l on stamp bit l, −B on the offset, σ on the
 *    power-of-two sink dim, bf16-exact fillers on dims where k is always 0; Σq² = D·4^i exactly
 *    (all integers < 2^24), so q_norm multiplies by exactly 2^−i (then by sq = 1+w_q).
 *    (Every q value is scaled by 2^zq so that σ is an integer.)
 *  - score of a non-BOS position, in design units U = 2^(zq−i−j)·sq·sk (a power of two):
 *      B·(n − 2·Ham) + P·(2f − 1) + (2T − 2^L + 1) + K,   B = P = W = 2^(L+1),
 *    K = −(B·n + P) when centred (default), else 0; BOS scores M0 − W (M0 = the match centre).
 *    Latest match − earlier match ≥ 2, match − BOS ≥ 2^L + 1, BOS − (non-match or unpublished)
 *    ≥ 2^L + 1; every partial sum is an integer number of units < 2^24: exact in any order, FMA too.
 *  - s_j = fl(dot·fl(D^−0.5)): the scale is chosen so that 2 units ≥ 128 after it (checked by
 *    enumerating every possible winner and its nearest rival through the f32 — and, by default,
 *    the eager-bf16 — score rounding), so exp(s_j − max) is exactly 1 for the winner and exactly 0
 *    for every other position: the softmax row is one-hot and a = the winner's v in any order.
 *  - v (raw): value_i + (default_i − valueAtBos_i)·isBos, hit: 1 − isBos; the gate is 32
 *    (sigmoid = 1 exactly) on those columns; o_proj copies each column into its output vdim
 *    with weight 1 (one non-zero product per output).
 */
import { ChipcError } from '../util/errors.ts';
import type { ModelConfig } from '../model/config.ts';
import { bf16Exact, bf16ToF32, f32ToBf16 } from '../safetensors/dtype.ts';
import { anchorPlan, fewestSquares, meanMulExact, splitBf16 } from '../lower/frame.ts';
import type { AttnKvHeadSpec, AttnQueryHeadSpec, Form, VDim } from '../lower/forms.ts';

const f32 = Math.fround;
const bf16 = (x: number): number => bf16ToF32(f32ToBf16(x));

/** Largest value magnitude a lookup copies (bf16-exact integers). */
export const LOOKUP_VALUE_LIMIT = 256;
/** The design margin after the D^−0.5 scale (exp underflows to 0 at ≤ −103.97). */
export const LOOKUP_MARGIN = 128;
/** The margin required after eager-bf16 score rounding (8 above exp's underflow point). */
export const LOOKUP_EAGER_MARGIN = 112;
/** The output-gate pre-activation: sigmoid(32) = 1 exactly in float32. */
export const LOOKUP_GATE = 32;

/** The attention shape a lookup is lowered for. */
export interface AttnDims {
  /** head_dim D. */
  D: number;
  /** Rotary width R = int(D · partial_rotary_factor); content goes in dims R..D−1. */
  R: number;
  /** Query heads per kv head (Hq / Hkv). */
  group: number;
}

export function attnDimsOf(cfg: ModelConfig): AttnDims {
  return {
    D: cfg.headDim,
    R: Math.trunc(cfg.headDim * cfg.partialRotaryFactor),
    group: cfg.numAttentionHeads / cfg.numKeyValueHeads,
  };
}

/** Input vdims of a lookup (all bits 0/1). */
export interface LookupInVDims {
  /** Key bits of the entry a position publishes (n bits). */
  keyBits: VDim[];
  /** Query bits of the read at a position (the same n bits, same order). */
  queryBits: VDim[];
  /** Stamp bits, LSB first (L bits; empty = keys unique among published entries). */
  stampBits: VDim[];
  /** 1 when the position publishes; null = every non-BOS position publishes. Must be 0 at BOS. */
  publish: VDim | null;
  /** 1 exactly at the BOS position (position 0), 0 elsewhere. */
  isBos: VDim;
  /** The value vdims copied from the winning entry (raw integers, |v| ≤ 256). */
  values: VDim[];
}

/** Output vdims: residual[dim] += the read, so each must hold 0 before the layer. */
export interface LookupOutVDims {
  /** One per value (null = not produced). */
  values: (VDim | null)[];
  /** The hit flag (1 = a published entry matched), or null. */
  hit: VDim | null;
}

/** A layer-wide (1 + w) choice: powers of two in [1, 256] or ≥ 2^24 (fl(1 + w) = w there). */
export interface LookupNormScales {
  q: number;
  k: number;
}

export interface LookupOptions {
  /** Default values (hit = 0), one per value; default zeros. Integers, |d| ≤ 256. */
  defaults?: number[];
  /**
   * The raw values of the value vdims at the BOS position (default zeros). Values at position 0
   * depend only on the BOS token, so the compiler can evaluate them; v subtracts them at BOS.
   */
  valueAtBos?: number[];
  /**
   * Stay exact when scores are rounded to bf16 before the softmax (transformers' eager attention
   * in bf16, which the executor's bf16 profile models). Default true: uses the centred layout and
   * requires L ≤ 8. False: uncentred (needs less (1+w) scale), exact with float32 scores only.
   */
  eagerBf16?: boolean;
  /** Fixed layer-wide scales (the layer's other lookups must use the same); default: the least that fits. */
  scales?: LookupNormScales;
  /** Required margin after the D^−0.5 scale (default 128). Lower only to demonstrate the hazard. */
  minMargin?: number;
  tag?: string;
}

export interface LookupLayout {
  /** Head dims of each code (all ≥ R). */
  keyDims: number[];
  publishDim: number | null;
  stampDims: number[];
  offsetDim: number | null;
  kFillerDims: number[];
  sinkDims: number[];
  qFillerDims: number[];
  /** First head dim after the content (content occupies [R, contentEnd)). */
  contentEnd: number;
  /** k code magnitude c, q scale exponent zq, norm exponents: Σk² = D·4^j·c², Σq² = D·4^i. */
  c: number;
  zq: number;
  i: number;
  j: number;
  /** Sink exponent: the BOS sink dims hold n_s·2^p. */
  p: number;
  /** Raw q magnitudes: B (key bits and publish), σ (the sink). */
  B: number;
  sigma: number;
  centred: boolean;
  /** v columns: values 0..nv−1, hit at nv. */
  hitCol: number;
}

export interface LookupScores {
  /** Pre-scale dot per design unit (a power of two). */
  unit: number;
  /** fl(D^−0.5). */
  scale: number;
  /** Smallest winner-over-rival gap after the scale, float32 scores. */
  marginF32: number;
  /** The same with eager-bf16 score rounding (NaN when the two rivals round together: 0). */
  marginEagerBf16: number;
  /** Design-unit scores: match winners M0 − 2^L + 1 … M0 + 2^L − 1 (odd steps of 2), BOS. */
  matchCentre: number;
  bos: number;
  /** Largest |partial sum| of a non-BOS score, in design units (< 2^24). */
  maxPartial: number;
}

export interface LookupCost {
  kvHeads: 1;
  queryHeads: 1;
  /** Head dims used by q/k content (of D − R) and by v (of D). */
  contentDims: number;
  valueDims: number;
  /** Weight non-zeros before slot packing (q, gate, k, v rows incl. constant parts; o_proj). */
  nonZeros: number;
}

export interface LookupLowering {
  kv: AttnKvHeadSpec;
  /** The query head's index inside kv.queries (0). */
  queryIndex: number;
  norms: LookupNormScales & { qNormWeight: number[]; kNormWeight: number[] };
  layout: LookupLayout;
  scores: LookupScores;
  cost: LookupCost;
}

// ---------------------------------------------------------------------------------------------
// helpers

function isPow2(x: number): boolean {
  return x > 0 && Number.isFinite(x) && 2 ** Math.round(Math.log2(x)) === x;
}

/** Whether (1+w) = scale is realisable exactly: w = scale − 1 (≤ 256) or w = scale (≥ 2^24). */
export function normScaleAllowed(scale: number): boolean {
  return isPow2(scale) && (scale <= 256 || scale >= 2 ** 24) && scale <= 2 ** 60;
}

/** The stored zero-centred weight w for a (1+w) scale: f32(1 + w) = scale exactly. */
export function normWeightFor(scale: number): number {
  if (!normScaleAllowed(scale)) {
    throw new ChipcError('fit.lookup.norm-scale', `q/k norm scale ${scale} is not a power of two in [1, 256] or ≥ 2^24`);
  }
  return scale <= 256 ? scale - 1 : scale;
}

/** Layer-wide q_norm / k_norm weights (D entries each, uniform) for the given scales. */
export function lookupNormWeights(D: number, scales: LookupNormScales): { qNormWeight: number[]; kNormWeight: number[] } {
  const wq = normWeightFor(scales.q);
  const wk = normWeightFor(scales.k);
  return { qNormWeight: new Array<number>(D).fill(wq), kNormWeight: new Array<number>(D).fill(wk) };
}

/**
 * Positive bf16-exact integers whose squares sum to r exactly, as few as found (≤ maxTerms),
 * largest first; null when none is found. Small remainders (≤ 2^16) use Lagrange's four squares
 * (every integer ≤ 256 is bf16-exact).
 */
export function fillSquares(r: number, maxTerms = 6): number[] | null {
  if (!Number.isSafeInteger(r) || r < 0) return null;
  if (r === 0) return [];
  let budget = 200_000;
  const dfs = (rest: number, t: number, cap: number): number[] | null => {
    if (rest === 0) return [];
    if (t === 0 || budget-- <= 0) return null;
    if (rest <= 65536) {
      const fs = fewestSquares(rest);
      if (fs.length <= t && fs[0]! <= cap) return fs;
      if (fs.length > t) return null;
    }
    const hi = Math.min(cap, Math.floor(Math.sqrt(rest)));
    const lo = Math.ceil(Math.sqrt(rest / t));
    let tried = 0;
    // walk the bf16-exact integers downwards: multiples of 2^(bitlength − 8)
    const stepOf = (x: number) => 2 ** Math.max(0, Math.floor(Math.log2(x)) - 7);
    for (let a = hi >= 1 ? Math.floor(hi / stepOf(hi)) * stepOf(hi) : 0; a >= Math.max(lo, 1) && tried < 48; a -= stepOf(a - 1 >= 1 ? a - 1 : 1)) {
      if (!bf16Exact(a)) continue;
      tried++;
      const s = dfs(rest - a * a, t - 1, a);
      if (s) return [a, ...s];
    }
    return null;
  };
  for (let t = 1; t <= maxTerms; t++) {
    const s = dfs(r, t, Infinity);
    if (s) return s;
  }
  return null;
}

function twoAdic(x: number): number {
  let v = 0;
  let y = Math.abs(x);
  if (y === 0) return Infinity;
  while (y % 2 === 0) {
    y /= 2;
    v++;
  }
  return v;
}

function err(code: string, tag: string, msg: string): ChipcError {
  return new ChipcError(code, `lookup ${tag}: ${msg}`);
}

const term = (dim: VDim, coef: number) => ({ dim, coef });
const zero = (): Form => ({ terms: [], constant: 0 });

/** Non-zero weights a form costs: its terms plus its constant's bf16 parts. */
function formNonZeros(f: Form): number {
  return f.terms.filter((t) => t.coef !== 0).length + splitBf16(f.constant).length;
}

// ---------------------------------------------------------------------------------------------
// the lowering

/**
 * Lower one lookup to a kv head with one query head for attention shape `dims`.
 * Throws ChipcError naming the resource when it cannot fit: head dims (content > D − R, values
 * + hit > D), stamp bits (eager-bf16 resolution), norm exponents (Σq² ≥ 2^24 units), scale.
 */
export function lowerLookupToAttention(
  io: LookupInVDims, out: LookupOutVDims, dims: AttnDims, opts: LookupOptions = {},
): LookupLowering {
  const tag = opts.tag ?? 'lookup';
  const { D, R, group } = dims;
  if (!Number.isInteger(D) || D < 4 || !Number.isInteger(R) || R < 0 || R >= D || !Number.isInteger(group) || group < 1) {
    throw err('fit.lookup.shape', tag, `bad attention shape D=${D}, R=${R}, group=${group}`);
  }
  const plan = anchorPlan(D);
  if (plan === null || !meanMulExact(D)) {
    throw err('fit.lookup.head-dim', tag, `head_dim ${D} admits no exact power-of-four norm (needs D = h·4^e with a power-of-two square and fl(D·fl(1/D)) = 1)`);
  }
  const n = io.keyBits.length;
  if (io.queryBits.length !== n) {
    throw err('fit.lookup.bits', tag, `${n} key bits but ${io.queryBits.length} query bits`);
  }
  const L = io.stampBits.length;
  const hasPub = io.publish !== null;
  const nv = io.values.length;
  const centred = opts.eagerBf16 ?? true;
  const minMargin = opts.minMargin ?? LOOKUP_MARGIN;
  if (out.values.length !== nv) throw err('fit.lookup.values', tag, `${nv} values but ${out.values.length} output vdims`);
  const defaults = opts.defaults ?? new Array<number>(nv).fill(0);
  const atBos = opts.valueAtBos ?? new Array<number>(nv).fill(0);
  if (defaults.length !== nv || atBos.length !== nv) {
    throw err('fit.lookup.values', tag, `defaults/valueAtBos need ${nv} entries`);
  }
  for (const d of [...defaults, ...atBos]) {
    if (!Number.isInteger(d) || Math.abs(d) > LOOKUP_VALUE_LIMIT) {
      throw err('fit.lookup.values', tag, `default / BOS value ${d} is not an integer with |v| ≤ ${LOOKUP_VALUE_LIMIT}`);
    }
  }
  if (nv + 1 > D) throw err('fit.lookup.value-dims', tag, `${nv} values + hit need ${nv + 1} v dims; head_dim is ${D}`);
  if (centred && L > 8) {
    throw err('fit.lookup.stamp-bits', tag, `${L} stamp bits: eager-bf16 scores resolve at most 256 levels (L ≤ 8); pass eagerBf16: false for float32 scores`);
  }
  if (L > 22) throw err('fit.lookup.stamp-bits', tag, `${L} stamp bits: scores must stay below 2^24 units (L ≤ 22)`);

  const { e, ns } = plan;
  const sIdx = ns.findIndex(isPow2);
  const n0 = ns[sIdx]!;
  const W = 2 ** (L + 1);
  const B = W;
  const offsetMul = centred ? n + (hasPub ? 1 : 0) : 0; // k offset magnitude in c
  const M0 = centred ? 0 : B * n + (hasPub ? B : 0);
  const bosScore = M0 - W;
  const stampSq = (4 ** L - 1) / 3;

  // ---- k: choose j (Σk² = D·4^j·c²) with the fewest filler dims ------------------------------
  const Ek = n + (hasPub ? 1 : 0) + L + offsetMul * offsetMul;
  let kBest: { j: number; fill: number[] } | null = null;
  for (let j = -e; j <= 12; j++) {
    const T = D * 4 ** j;
    if (T < Math.max(Ek, 1)) continue;
    const fill = fillSquares(T - Ek, 4);
    if (fill && (kBest === null || fill.length < kBest.fill.length)) kBest = { j, fill };
    if (kBest && T > 16 * Math.max(Ek, 1)) break;
  }
  if (!kBest) throw err('fit.lookup.k-norm', tag, `no exact k norm for ${Ek} code units in head_dim ${D}`);
  const { j } = kBest;
  const c = 2 ** Math.max(0, Math.ceil((6 - 2 * j) / 2)); // mean = 4^j·c² ≥ 64 absorbs eps
  const kFill = kBest.fill;

  // ---- q: choose zq (σ integer) and i (Σq² = D·4^i) ------------------------------------------
  // σ_raw = bosScore·2^(zq−j)/(n0·2^e)
  const sigmaOf = (zq: number) => (bosScore * 2 ** (zq - j)) / (n0 * 2 ** e);
  let zq0 = 0;
  while (!Number.isInteger(sigmaOf(zq0))) zq0++;
  let qBest: { zq: number; i: number; fill: number[]; sigma: number } | null = null;
  for (let zq = zq0; zq <= zq0 + 2; zq++) {
    const s = 2 ** zq;
    const sigma = sigmaOf(zq);
    const content = s * s * (B * B * n + (hasPub ? B * B : 0) + stampSq + (offsetMul > 0 ? B * B : 0)) + sigma * sigma;
    const vContent = Math.min(...[s * B, s, sigma].filter((x) => x !== 0).map(twoAdic));
    for (let i = 3; i <= 40; i++) {
      const T = D * 4 ** i;
      if (T < content) continue;
      if (T / 4 ** vContent >= 2 ** 24) break;
      const fill = fillSquares(T - content, 6);
      if (fill === null) continue;
      // partial sums of the q squares are integers; exact when T / 4^v < 2^24
      const vals = [s * B, s, sigma, ...fill].filter((x) => x !== 0);
      const v = Math.min(...vals.map(twoAdic));
      if (T / 4 ** v >= 2 ** 24) continue;
      const better = qBest === null || fill.length < qBest.fill.length
        || (fill.length === qBest.fill.length && i - zq < qBest.i - qBest.zq);
      if (better) qBest = { zq, i, fill, sigma };
      break;
    }
  }
  if (!qBest) {
    throw err('fit.lookup.q-norm', tag, `Σq² of ${n} key bits and ${L} stamp bits exceeds 2^24 units: too many key/stamp bits for an exact q norm`);
  }
  const { zq, i, sigma } = qBest;
  if (!bf16Exact(sigma)) {
    throw err('fit.lookup.key-bits', tag, `the BOS sink query ${sigma} is not bf16-exact (too many key bits for the uncentred layout)`);
  }
  const qFill = qBest.fill;
  const s2 = 2 ** zq;

  // ---- head-dim layout -------------------------------------------------------------------------
  let d = R;
  const take = (k: number) => Array.from({ length: k }, () => d++);
  const keyDims = take(n);
  const publishDim = hasPub ? take(1)[0]! : null;
  const stampDims = take(L);
  const offsetDim = offsetMul > 0 ? take(1)[0]! : null;
  const kFillerDims = take(kFill.length);
  const sinkDims = take(ns.length);
  const qFillerDims = take(qFill.length);
  const contentEnd = d;
  if (contentEnd > D) {
    throw err('fit.lookup.head-dims', tag,
      `needs ${contentEnd - R} q/k content dims (${n} key bits, ${hasPub ? 1 : 0} publish, ${L} stamp bits, ${offsetDim === null ? 0 : 1} offset, ${kFill.length}+${qFill.length} fillers, ${ns.length} sink) but only D − R = ${D - R} are outside the rotary dims`);
  }

  // ---- forms -----------------------------------------------------------------------------------
  const k: Form[] = Array.from({ length: D }, zero);
  const q: Form[] = Array.from({ length: D }, zero);
  const code = (dim: VDim, mag: number): Form => ({ terms: [term(dim, 2 * mag)], constant: -mag }); // mag·(2x − 1)
  keyDims.forEach((hd, b) => {
    k[hd] = code(io.keyBits[b]!, c);
    q[hd] = code(io.queryBits[b]!, s2 * B);
  });
  if (publishDim !== null) {
    k[publishDim] = code(io.publish!, c);
    q[publishDim] = { terms: [], constant: s2 * B };
  }
  stampDims.forEach((hd, l) => {
    k[hd] = code(io.stampBits[l]!, c);
    q[hd] = { terms: [], constant: s2 * 2 ** l };
  });
  if (offsetDim !== null) {
    k[offsetDim] = { terms: [], constant: offsetMul * c };
    q[offsetDim] = { terms: [], constant: -s2 * B };
  }
  kFillerDims.forEach((hd, x) => (k[hd] = { terms: [], constant: kFill[x]! * c }));
  qFillerDims.forEach((hd, x) => (q[hd] = { terms: [], constant: qFill[x]! }));
  if (sigma !== 0) q[sinkDims[sIdx]!] = { terms: [], constant: sigma };

  // Sink exponent p: (a) every non-sink square absorbed: min n_s²·4^p ≥ 2^25·Σ(rest);
  // (b) the BOS codes' score ≤ 2^−8 units: 2^p ≥ 2^8·Σ|q_raw·k_raw|·2^(e − zq + j).
  const restK = D * 4 ** j * c * c;
  let qkAbs = 0;
  for (let hd = R; hd < contentEnd; hd++) {
    const kMag = Math.abs(k[hd]!.constant);
    const qMag = Math.abs(q[hd]!.constant);
    if (!sinkDims.includes(hd)) qkAbs += kMag * qMag;
  }
  const minNs2 = Math.min(...ns.map((x) => x * x));
  const pA = Math.ceil((25 + Math.log2(restK) - Math.log2(minNs2)) / 2);
  const pB = Math.ceil(8 + Math.log2(Math.max(qkAbs, 1)) + e - zq + j);
  const p = Math.max(pA, pB, 1);
  if (p > 56) throw err('fit.lookup.sink', tag, `BOS sink exponent ${p} would overflow float32 sums of squares`);
  sinkDims.forEach((hd, x) => (k[hd] = { terms: [term(io.isBos, ns[x]! * 2 ** p)], constant: 0 }));

  // ---- values, gate, o_proj --------------------------------------------------------------------
  const v: Form[] = Array.from({ length: D }, zero);
  const gate: Form[] = Array.from({ length: D }, zero);
  const outs: AttnQueryHeadSpec['out'] = [];
  io.values.forEach((dim, x) => {
    const shift = defaults[x]! - atBos[x]!;
    if (!bf16Exact(shift)) {
      throw err('fit.lookup.values', tag, `default ${defaults[x]} − BOS value ${atBos[x]} = ${shift} is not bf16-exact`);
    }
    v[x] = { terms: shift === 0 ? [term(dim, 1)] : [term(dim, 1), term(io.isBos, shift)], constant: 0 };
    gate[x] = { terms: [], constant: LOOKUP_GATE };
    const o = out.values[x];
    if (o !== null && o !== undefined) outs.push({ col: x, dim: o, weight: 1 });
  });
  const hitCol = nv;
  v[hitCol] = { terms: [term(io.isBos, -1)], constant: 1 };
  gate[hitCol] = { terms: [], constant: LOOKUP_GATE };
  if (out.hit !== null) outs.push({ col: hitCol, dim: out.hit, weight: 1 });

  // ---- scales and margins ----------------------------------------------------------------------
  const scale = f32(Math.pow(D, -0.5));
  const winners: { w: number; rival: number }[] = [];
  for (let T = 0; T < 2 ** L; T++) {
    const x = M0 + 2 * T - (2 ** L - 1);
    winners.push({ w: x, rival: T > 0 ? x - 2 : bosScore });
  }
  winners.push({ w: bosScore, rival: M0 - 3 * 2 ** L - 1 });
  const margins = (unit: number) => {
    const rF = (x: number) => f32(f32(x * unit) * scale);
    const rB = (x: number) => bf16(f32(bf16(x * unit) * scale));
    let mF = Infinity;
    let mB = Infinity;
    for (const { w, rival } of winners) {
      mF = Math.min(mF, rF(w) - rF(rival));
      mB = Math.min(mB, rB(w) - rB(rival));
    }
    return { mF, mB };
  };
  const ok = (m: { mF: number; mB: number }) => m.mF >= minMargin && (!centred || m.mB >= Math.min(minMargin, LOOKUP_EAGER_MARGIN));
  const expo = zq - i - j; // unit = 2^expo · sq · sk
  let scales: LookupNormScales;
  if (opts.scales) {
    scales = opts.scales;
    normWeightFor(scales.q);
    normWeightFor(scales.k);
    const m = margins(2 ** expo * scales.q * scales.k);
    if (!ok(m)) {
      throw err('fit.lookup.margin', tag,
        `layer scales (1+w) q=${scales.q}, k=${scales.k} give a score margin of ${m.mF} (eager bf16: ${m.mB}); needs ≥ ${minMargin}: raise the layer's (1+w) or use fewer key/stamp bits`);
    }
  } else {
    let found: LookupNormScales | null = null;
    for (let t = 0; t <= 48 && found === null; t++) {
      const cand: LookupNormScales = t <= 16
        ? { q: 2 ** Math.floor(t / 2), k: 2 ** Math.ceil(t / 2) }
        : t <= 32 ? { q: 2 ** Math.max(0, t - 24), k: 2 ** 24 } : { q: 2 ** (t - 24), k: 2 ** 24 };
      if (!normScaleAllowed(cand.q) || !normScaleAllowed(cand.k)) continue;
      if (ok(margins(2 ** expo * cand.q * cand.k))) found = cand;
    }
    if (found === null) {
      throw err('fit.lookup.margin', tag, `no (1+w) ≤ 2^48 reaches a score margin of ${minMargin} (${L} stamp bits${centred ? ', eager bf16' : ''})`);
    }
    scales = found;
  }
  const unit = 2 ** expo * scales.q * scales.k;
  const m = margins(unit);
  const maxPartial = B * n + (hasPub ? B : 0) + (2 ** L - 1) + (offsetMul > 0 ? B * offsetMul : 0);
  if (maxPartial >= 2 ** 24) throw err('fit.lookup.score-range', tag, `scores reach ${maxPartial} units ≥ 2^24`);

  // The gated output of every column is the winner's raw value (an integer within ±256) or the
  // hit flag, exactly: bound and quantum for the order-invariance analysis of o_proj.
  const query: AttnQueryHeadSpec = { q, gate, out: outs, outBound: LOOKUP_VALUE_LIMIT, outQuantum: 1, tag: `${tag}.q` };
  const queries: (AttnQueryHeadSpec | null)[] = Array.from({ length: group }, (_, x) => (x === 0 ? query : null));
  const kv: AttnKvHeadSpec = { k, v, queries, tag };
  let nonZeros = outs.length;
  for (const f of [...q, ...gate, ...k, ...v]) nonZeros += formNonZeros(f);
  return {
    kv,
    queryIndex: 0,
    norms: { ...scales, ...lookupNormWeights(D, scales) },
    layout: {
      keyDims, publishDim, stampDims, offsetDim, kFillerDims, sinkDims, qFillerDims, contentEnd,
      c, zq, i, j, p, B: s2 * B, sigma, centred, hitCol,
    },
    scores: {
      unit, scale, marginF32: m.mF, marginEagerBf16: m.mB, matchCentre: M0, bos: bosScore, maxPartial,
    },
    cost: { kvHeads: 1, queryHeads: 1, contentDims: contentEnd - R, valueDims: nv + 1, nonZeros },
  };
}
