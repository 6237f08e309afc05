/**
 * The residual frame: how a compiled model keeps every sublayer's RMSNorm an exact power of two.
 *
 * Math (docs/numerics.md "The whole-vector RMSNorm", re-verified in test/numerics-rmsnorm.test.ts): write the hidden
 * size H = h·4^e with 4 ∤ h and h = Σ n_i² with the fewest squares. Anchor dim i holds the
 * constant a_i = n_i·2^m in every position's residual, so Σ a_i² = H·4^(m−e) and, as long as
 * every float partial sum of the other dims' squares stays ≤ 2^(E−24) with
 * E = ⌊log2 min a_i²⌋, the mean is exactly 4^(m−e) in any summation order and
 * rsqrt(mean + 1e−6) = 2^(e−m) exactly (m ≥ e + 3 makes the eps vanish). Normalised content is
 * then x·2^(e−m) and normalised anchor i is n_i·2^e — exact in float32 and bf16.
 *
 * Preconditions: every slot holds an integer |x| ≤ 256 (the bf16 profile's exact range), so the
 * rest energy is at most 2^16 per slot; `m` is chosen so that slots·2^16 (+ the constant-one
 * dims) meets the bound. H must also satisfy fl(H·fl(1/H)) = 1 so the CUDA-style mean
 * (sum·fl(1/H)) is exact too.
 */
import { ChipcError } from '../util/errors.ts';

export interface Anchor {
  dim: number;
  /** The anchor's raw residual value is n·2^m. */
  n: number;
}

export interface ResidualFrame {
  hidden: number;
  /** H = h·4^e. */
  e: number;
  m: number;
  anchors: Anchor[];
  /** The anchor whose n is a power of two: constants are drawn from it exactly. */
  unitAnchor: Anchor;
  /** Dims holding the raw constant 1 (extra exact constant terms, e.g. for the RAM hot value). */
  constOnes: number[];
  /** First dim available to signal slots; slots are [firstSlot, hidden). */
  firstSlot: number;
  /** Normalised content = raw · normScale = raw · 2^(e−m). */
  normScale: number;
  /** Largest exact Σ(rest²) the frame tolerates (2^(E−24)). */
  restBound: number;
}

/** Largest magnitude a slot may hold (bf16: 8 significant bits). */
export const SLOT_LIMIT = 256;
/** How many constant-one dims every frame carries. */
export const CONST_ONES = 2;

/**
 * Split x into ≤ 3 bf16-exact parts that sum to x exactly (x must be a float32): a row's constant
 * drawn from the frame's unit anchor and its CONST_ONES constant-one dims (assemble/rows.ts), and
 * the gadgets' exactness checks on such constants.
 */
export function splitBf16(x: number): number[] {
  if (x === 0) return [];
  if (Math.fround(x) !== x) throw new ChipcError('assemble.constant', `constant ${x} is not a float32`);
  const parts: number[] = [];
  let rest = x;
  for (let i = 0; i < 3 && rest !== 0; i++) {
    const e = Math.floor(Math.log2(Math.abs(rest)));
    const q = 2 ** (e - 7);
    const p = Math.trunc(rest / q) * q;
    parts.push(p);
    rest -= p;
  }
  if (rest !== 0) throw new ChipcError('assemble.constant', `constant ${x} needs more than 24 significant bits`);
  return parts;
}

/** True when the CUDA-style mean sum·fl(1/H) equals sum/H for exact powers of four. */
export function meanMulExact(H: number): boolean {
  return Math.fround(H * Math.fround(1 / H)) === 1;
}

/** Fewest squares summing to h (Lagrange / Legendre): returns the n_i, largest first. */
export function fewestSquares(h: number): number[] {
  const isSq = (x: number) => Number.isInteger(Math.sqrt(x));
  if (isSq(h)) return [Math.sqrt(h)];
  for (let a = Math.floor(Math.sqrt(h)); a >= 1; a--) if (isSq(h - a * a)) return [a, Math.sqrt(h - a * a)];
  for (let a = Math.floor(Math.sqrt(h)); a >= 1; a--) {
    const r = h - a * a;
    for (let b = Math.floor(Math.sqrt(r)); b >= 1; b--) if (isSq(r - b * b)) return [a, b, Math.sqrt(r - b * b)];
  }
  for (let a = Math.floor(Math.sqrt(h)); a >= 1; a--) {
    const r = h - a * a;
    for (let b = Math.floor(Math.sqrt(r)); b >= 1; b--) {
      const r2 = r - b * b;
      for (let c = Math.floor(Math.sqrt(r2)); c >= 1; c--) if (isSq(r2 - c * c)) return [a, b, c, Math.sqrt(r2 - c * c)];
    }
  }
  throw new Error(`internal: no four-square decomposition of ${h}`);
}

function isPow2(n: number): boolean {
  return n >= 1 && (n & (n - 1)) === 0;
}

/** Anchor decomposition of H, or null when no anchor has a power-of-two n. */
export function anchorPlan(H: number): { e: number; ns: number[] } | null {
  let h = H;
  let e = 0;
  while (h % 4 === 0) {
    h /= 4;
    e++;
  }
  const ns = fewestSquares(h);
  // Prefer a decomposition with a power-of-two term (constants come from it exactly).
  if (!ns.some(isPow2)) return null;
  return { e, ns };
}

/** Whether H can host a frame at all (anchor plan + exact CUDA mean). */
export function hiddenIsUsable(H: number): boolean {
  return H >= 8 && meanMulExact(H) && anchorPlan(H) !== null;
}

/** Smallest usable H ≥ minimum. */
export function chooseHidden(minimum: number): number {
  for (let H = Math.max(8, minimum); H < minimum + 100_000; H++) if (hiddenIsUsable(H)) return H;
  throw new ChipcError('frame.hidden', `no usable hidden size at or above ${minimum}`);
}

/**
 * Build the frame for hidden size H holding `slots` signal slots (each |x| ≤ SLOT_LIMIT).
 * Anchors take dims 0…k−1, the constant-one dims follow, slots start after them.
 */
export function makeFrame(H: number, slots: number): ResidualFrame {
  const plan = anchorPlan(H);
  if (plan === null || !meanMulExact(H)) {
    throw new ChipcError('frame.hidden', `hidden size ${H} cannot host exact anchors (choose one with chooseHidden)`);
  }
  const { e, ns } = plan;
  const overhead = ns.length + CONST_ONES;
  if (overhead + slots > H) {
    throw new ChipcError('frame.width', `hidden size ${H} has room for ${H - overhead} slots, the circuit needs ${slots}`);
  }
  const rest = slots * SLOT_LIMIT * SLOT_LIMIT + CONST_ONES;
  const minN2 = Math.min(...ns.map((n) => n * n));
  // Need 2m + ⌊log2 minN2⌋ − 24 ≥ log2(rest), and m ≥ e + 3.
  const need = Math.ceil((24 + Math.log2(rest) - Math.floor(Math.log2(minN2))) / 2);
  const m = Math.max(e + 3, need);
  const anchors = ns.map((n, i) => ({ dim: i, n }));
  const unitAnchor = anchors.find((a) => isPow2(a.n))!;
  const E = 2 * m + Math.floor(Math.log2(minN2));
  return {
    hidden: H,
    e,
    m,
    anchors,
    unitAnchor,
    constOnes: Array.from({ length: CONST_ONES }, (_, i) => ns.length + i),
    firstSlot: overhead,
    normScale: 2 ** (e - m),
    restBound: 2 ** (E - 24),
  };
}

/** The raw residual value of every frame dim (anchors and constant ones), others 0. */
export function frameConstants(f: ResidualFrame): Map<number, number> {
  const m = new Map<number, number>();
  for (const a of f.anchors) m.set(a.dim, a.n * 2 ** f.m);
  for (const d of f.constOnes) m.set(d, 1);
  return m;
}
