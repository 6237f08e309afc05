/**
 * The fast single-token recurrent step of the GDN mixer (sparse path, sequential order, decode):
 * recurrentStepSparse, bit-identical to gdn.ts recurrentStep in sequential order, with what it
 * needs: the kinds of state it keeps per value head (STATE_*, classifyState), its scratch
 * (SparseStepScratch) and the tracked decode step's kv memo (KvMemo, gdn-tracked.ts).
 *
 * The cache keeps per head a summary of S — all +0 / no −0 and finite / unknown, and which rows
 * are known to be all +0 (GdnCache.kind, rowNonZero) — so an unused head (k = q = ±0, S all +0)
 * costs O(dk + dv) and a one-hot key (a pinned RAM write) updates one row. Every shortcut is exact
 * (see recurrentStepSparse): a skipped term S·(±0) is ±0, so a column dot visits only the non-zero
 * entries of the vector and decides the sign of a zero sum as matmul.ts does (columnDotsInto), and
 * S + (±0) = S for every S ≠ −0, so rows with k_i = ±0 are left alone while δ is finite.
 * Precondition: the kind and the all-+0 rows passed in are true of S (a state handed out is
 * re-classified by classifyState before each step); anything else runs the full update.
 */
import { exp32 } from './numeric.ts';
import { ViewAt, type WasmHeap } from './wasm-heap.ts';
import { gdnDotsScratchLength } from './wasm-layout.ts';

const f32 = Math.fround;
/**
 * Constants that make V8 compile a comparison as one of floats from its first run: `x !== FLOAT_ZERO`
 * is `x !== 0`, and `Math.abs(x) <= F64_MAX` is "x is finite", but a comparison with −0 or
 * Number.MAX_VALUE (heap numbers, not small integers) is recorded as one of numbers, where
 * `x !== 0` and `x - x !== 0` were recorded as small-integer operations while the first values
 * were integral, and the compiled step was thrown away at the first fraction or −0 and compiled
 * again (docs/benchmarks.md "The executor's round 24").
 */
const FLOAT_ZERO = -0;
const F64_MAX = Number.MAX_VALUE;

/** recurrentStepSparse's β = ±0 shortcut: B·Σ|k_i| and B at most 2^125, every |v_j| at most 2^126. */
export const BETA_ZERO_BOUND = 2 ** 125;
const V_BOUND = 2 ** 126;

/** Σ|x_i| over x[off .. off+n), in double, in index order (the β = ±0 shortcut's Σ|k_i|). */
export function absSum(x: Float32Array, off: number, n: number): number {
  let s = 0;
  for (let i = 0; i < n; i++) s += Math.abs(x[off + i]);
  return s;
}

/**
 * 1 when the float32 with bit pattern `bits` is not within the β = ±0 shortcut's bound on v
 * (|v| ≤ 2^126, whose pattern's magnitude is 0x7e800000: NaN and ±∞ lie above it), else 0.
 */
export function beyondVBound(bits: number): number {
  return (bits & 0x7fffffff) > 0x7e800000 ? 1 : 0;
}

/**
 * What is known about one head's state S, for the sparse decode step (recurrentStepSparse):
 *  - STATE_ANY: nothing (it may hold −0 or non-finite entries);
 *  - STATE_CLEAN: no −0 and no non-finite entry (so S·(±0) = ±0 and S + (±0) = S everywhere);
 *  - STATE_ZERO: every entry is +0 (bit pattern 0), which implies STATE_POS;
 *  - STATE_POS: STATE_CLEAN and no entry has its sign bit set (every entry is +0 or positive
 *    finite), so S_ij·x has the sign of x for every ±0 x (a pinned RAM holds only +0 and T > 0).
 */
export const STATE_ANY = 0;
export const STATE_CLEAN = 1;
export const STATE_ZERO = 2;
export const STATE_POS = 3;

/**
 * The STATE_* kind of S by a scan of its bit patterns. With `rowNonZero` (length dk, S being
 * dk × dv) it also records which rows hold a bit pattern other than +0 (1) and which are all +0 (0);
 * with `sMax`, it writes max |S_ij| at sMax[h] (Infinity if some entry is not finite).
 * With `entries` (positions, of which the first `count`), only those are read: for a state known to
 * be +0 elsewhere the result is the same, since the scan passes over +0 entries (and a position
 * listed twice is read once more, which changes nothing).
 */
export function classifyState(S: Float32Array, rowNonZero?: Uint8Array, sMax?: Float64Array, h = 0,
  entries?: ArrayLike<number>, count = 0): number {
  const u = new Uint32Array(S.buffer, S.byteOffset, S.length);
  let kind = STATE_ZERO;
  let neg = false;
  let max = 0;
  if (rowNonZero) rowNonZero.fill(0);
  const dv = rowNonZero ? S.length / rowNonZero.length : 0;
  const n = entries === undefined ? u.length : count;
  for (let t = 0; t < n; t++) {
    const i = entries === undefined ? t : entries[t]!;
    const b = u[i];
    if (b === 0) continue;
    if (rowNonZero) rowNonZero[Math.floor(i / dv)] = 1;
    if (b === 0x80000000 || (b & 0x7f800000) === 0x7f800000) kind = STATE_ANY;
    else {
      if (b >>> 31 === 1) neg = true;
      if (kind === STATE_ZERO) kind = STATE_CLEAN;
    }
    const a = Math.abs(S[i]);
    if (a > max) max = a; // (read only when every entry is finite)
  }
  if (sMax) sMax[h] = kind === STATE_ANY ? Infinity : max;
  return kind === STATE_CLEAN && !neg ? STATE_POS : kind;
}

/** Scratch buffers of recurrentStepSparse (sized for dk, dv; reused across calls). */
export interface SparseStepScratch {
  kIdx: Int32Array;
  qIdx: Int32Array;
  /** The entries of kIdx / qIdx a column dot visits (see nonZeroIndices). */
  kDot: Int32Array;
  qDot: Int32Array;
  /** [count of the dot list, 1 if every entry is finite]. */
  dotCount: Int32Array;
  nzRows: Int32Array;
  delta: Float32Array;
  /** Set by recurrentStepSparse: [0] = 1 if the step may have changed S, else 0. */
  modified: Uint8Array;
  /** Scratch of the row-wise column dots: kv_j (without a memo) and per-column flags. */
  kv: Float32Array;
  any: Uint8Array;
  /**
   * The wasm memory whose kernels (wasm-gdn-kernels.ts) the step calls, when these arrays were
   * carved from it (null: the JavaScript loops only); the step also checks that S, k, q, v, o and
   * the memo lie in it. `scr` is the dots kernel's scratch block and `dotIo` its io words (n, nd,
   * finite, negOff, every).
   */
  heap: WasmHeap | null;
  scr: Int32Array;
  dotIo: Int32Array;
  /** keyRows' io (the greatest |S_ij| written): the scratch block's last word, as a float32. */
  keyIo: Float32Array;
  /** The l2norm kernel's list of non-zero entries (dk int32; carved with the rest). */
  l2nz: Int32Array;
  /** The byte addresses the kernels are called with (StepAt); meaningful while `heap` is not null. */
  at: StepAt;
}

/**
 * The byte addresses in a step scratch's heap of its own arrays (fixed), and of the arrays of the
 * step in progress (recurrentStepSparse sets them where it starts: −1 for one that lies elsewhere),
 * found through memos of the views last passed (wasm-heap.ts ViewAt: a view's `buffer` and
 * `byteOffset` are builtin calls, about 15 of them a step before). S and its row marks differ
 * from head to head: the caller may pass per-head memos (GdnCache.headAt).
 */
export interface StepAt {
  kIdx: number; qIdx: number; delta: number; kv: number; scr: number; keyIo: number; l2nz: number;
  s: number; rnz: number; k: number; q: number; v: number; o: number; memoKv: number;
  sView: ViewAt; rnzView: ViewAt; kView: ViewAt; qView: ViewAt; vView: ViewAt; oView: ViewAt; memoKvView: ViewAt;
}

/** A StepAt for a scratch whose own arrays lie at the given addresses (−1 each without a heap). */
function newStepAt(kIdx: number, qIdx: number, delta: number, kv: number, scr: number, keyIo: number, l2nz: number): StepAt {
  return {
    kIdx, qIdx, delta, kv, scr, keyIo, l2nz, s: -1, rnz: -1, k: -1, q: -1, v: -1, o: -1, memoKv: -1,
    sView: new ViewAt(), rnzView: new ViewAt(), kView: new ViewAt(), qView: new ViewAt(), vView: new ViewAt(), oView: new ViewAt(),
    memoKvView: new ViewAt(),
  };
}

/**
 * Per value head of one layer, what a tracked decode step can reuse from the previous one (see
 * recurrentStepSparse's `memo`): kv_j = dot(S[:,j], k) as that step computed it, at h·dv + j, and
 * whether it still describes S (valid: computed on a finite-kind state that the step then left
 * unchanged) and whether k was all finite.
 */
export interface KvMemo {
  kv: Float32Array;
  valid: Uint8Array;
  kFinite: Uint8Array;
  /** 1 when k was all ±0 (no row of S can be updated while δ stays finite). */
  kZero: Uint8Array;
}

/** A memo for hv value heads of dv columns, nothing valid; `kv` (hv·dv entries) is its kv array when given (a layer's, GdnBuffers.memoKv). */
export function newKvMemo(hv: number, dv: number, kv: Float32Array = new Float32Array(hv * dv)): KvMemo {
  return { kv, valid: new Uint8Array(hv), kFinite: new Uint8Array(hv), kZero: new Uint8Array(hv) };
}

/**
 * The step's scratch for heads of dk × dv. With a wasm memory that has the GDN kernels and room,
 * and dk, dv multiples of 4 (the kernels' 4-lane groups), the arrays the kernels touch are carved
 * from it and `heap` is set.
 */
export function newSparseStepScratch(dk: number, dv: number, heap: WasmHeap | null = null): SparseStepScratch {
  const scrLength = gdnDotsScratchLength(dk, dv);
  const c = heap !== null && heap.hasGdnKernels && dk % 4 === 0 && dv % 4 === 0
    ? heap.carve({
      kIdx: [Int32Array, dk], qIdx: [Int32Array, dk], delta: [Float32Array, dv], kv: [Float32Array, dv], scr: [Int32Array, scrLength],
      l2nz: [Int32Array, dk],
    })
    : null;
  const scr = c?.scr ?? new Int32Array(scrLength);
  const keyIo = new Float32Array(scr.buffer, scr.byteOffset + 4 * (scrLength - 1), 1);
  const at = c === null ? newStepAt(-1, -1, -1, -1, -1, -1, -1)
    : newStepAt(c.kIdx.byteOffset, c.qIdx.byteOffset, c.delta.byteOffset, c.kv.byteOffset, c.scr.byteOffset, keyIo.byteOffset, c.l2nz.byteOffset);
  return {
    kIdx: c?.kIdx ?? new Int32Array(dk), qIdx: c?.qIdx ?? new Int32Array(dk), kDot: new Int32Array(dk), qDot: new Int32Array(dk),
    dotCount: new Int32Array(2), nzRows: new Int32Array(dk), delta: c?.delta ?? new Float32Array(dv), modified: new Uint8Array(1),
    kv: c?.kv ?? new Float32Array(dv), any: new Uint8Array(dv),
    heap: c === null ? null : heap, scr, dotIo: scr.subarray(2 * dk + dv), keyIo, l2nz: c?.l2nz ?? new Int32Array(dk), at,
  };
}

/** Sign bit of a float (true for −0 and negative values, and for NaNs with the bit set). */
function signBit(x: number): boolean {
  return x < 0 || Object.is(x, -0); // (V8 compiles the −0 test to a bit test, no division)
}

/**
 * Column dots out[outOff + j] = Σ_i S[i,j]·x[xOff+i] over i < dk for every j < dv, each in
 * sequential order from −0 (what ctx.dot computes in sequential order), visiting only the n
 * indices idx[0..n) where x is non-zero. Exact when S is
 * finite (kind ≥ STATE_CLEAN), by matmul.ts's argument: every skipped term S·(±0) is ±0, so a
 * non-zero sum of the visited terms is the full sum, and a zero one is +0 if some visited term was
 * non-zero (exact cancellation). If none was, every term is ±0 and the sum is −0 iff every term is
 * −0: a row known to be all +0 gives +0·x_i, −0 iff x_i has its sign bit set (`xNegOffRows`: true
 * iff that holds for every such row); the other rows (nzRows[0..nzn)) are checked one by one.
 * The rows are walked one by one (each visited row of S read contiguously), each column's sum
 * kept in out in idx order; `any` is scratch (dv).
 */
function columnDotsInto(
  S: Float32Array, dv: number, x: Float32Array, xOff: number, idx: Int32Array, n: number,
  nzRows: Int32Array, nzn: number, xNegOffRows: boolean, signOfX: number, out: Float32Array, outOff: number, any: Uint8Array,
): void {
  if (n === 1) {
    // One visited row (a one-hot key or query: a RAM's row), in one pass: the sum is the product
    // itself (fl(−0 + p) = p for p ≠ 0), and a zero product leaves the zero-sum cases below with
    // no visited term non-zero
    const i = idx[0];
    const xi = x[xOff + i];
    const row = i * dv;
    for (let j = 0; j < dv; j++) {
      const p = f32(S[row + j] * xi);
      if (p !== FLOAT_ZERO) out[outOff + j] = p;
      else out[outOff + j] = zeroSum(S, dv, x, xOff, nzRows, nzn, xNegOffRows, signOfX, j);
    }
    return;
  }
  for (let j = 0; j < dv; j++) { out[outOff + j] = -0; any[j] = 0; }
  for (let t = 0; t < n; t++) {
    const i = idx[t];
    const xi = x[xOff + i];
    const row = i * dv;
    for (let j = 0; j < dv; j++) {
      const p = f32(S[row + j] * xi);
      if (p !== 0) { any[j] = 1; out[outOff + j] = f32(out[outOff + j] + p); }
    }
  }
  for (let j = 0; j < dv; j++) {
    const acc = out[outOff + j];
    if (acc !== 0 || Number.isNaN(acc)) continue;
    out[outOff + j] = any[j] === 1 ? 0 : zeroSum(S, dv, x, xOff, nzRows, nzn, xNegOffRows, signOfX, j);
  }
}

/**
 * Column j's dot when every visited term was ±0 (so every term of the full sum is ±0): −0 iff
 * every term is −0, as sparseColumnDot decides the sign of the zero. The rows not visited give
 * ±0 terms whose signs `xNegOffRows` and `signOfX` summarise; the other rows are checked.
 */
function zeroSum(
  S: Float32Array, dv: number, x: Float32Array, xOff: number, nzRows: Int32Array, nzn: number, xNegOffRows: boolean, signOfX: number, j: number,
): number {
  if (!xNegOffRows) return 0;
  if (signOfX >= 0) return signOfX === 1 ? -0 : 0;
  for (let t = 0; t < nzn; t++) {
    const i = nzRows[t];
    if (1 / f32(S[i * dv + j] * x[xOff + i]) > 0) return 0;
  }
  return -0;
}

/** Lists the rows marked in rowNonZero into out; returns how many. */
function listRows(rowNonZero: Uint8Array, out: Int32Array): number {
  let n = 0;
  for (let i = 0; i < rowNonZero.length; i++) if (rowNonZero[i]) out[n++] = i;
  return n;
}

/**
 * Indices of the non-zero entries of x[xOff .. xOff+dk) into idx; returns their count, and in
 * `negOff[0]` whether every entry of a row NOT in nzRows (rowNonZero[i] = 0) has its sign bit set,
 * in `allNeg[0]` whether every entry has it.
 * With dotIdx, also lists there (count in `dotCount[0]`) the non-zero entries a column dot over S
 * must visit: those in rows not known to be all +0, and any non-finite one. A finite x_i in an
 * all-+0 row gives the term fl(+0·x_i) = ±0, which sparseColumnDot skips anyway (its sign is
 * covered by negOff). `allFinite[0]`: every entry is finite.
 */
function nonZeroIndices(
  x: Float32Array, xOff: number, dk: number, idx: Int32Array, rowNonZero: Uint8Array, negOff: boolean[],
  dotIdx?: Int32Array, dotCount?: Int32Array,
): number {
  let n = 0;
  let nd = 0;
  let allNeg = true;
  let everyNeg = true;
  let finite = true;
  for (let i = 0; i < dk; i++) {
    const v = x[xOff + i];
    if (v !== 0) {
      idx[n++] = i;
      const fin = v - v === 0;
      if (!fin) finite = false;
      if (dotIdx && (rowNonZero[i] || !fin)) dotIdx[nd++] = i;
    }
    // (once both flags are false the sign bits no longer matter)
    if ((everyNeg || allNeg) && !signBit(v)) { everyNeg = false; if (!rowNonZero[i]) allNeg = false; }
  }
  negOff[0] = allNeg;
  negOff[1] = everyNeg;
  if (dotCount) { dotCount[0] = nd; dotCount[1] = finite ? 1 : 0; }
  return n;
}

const negOffScratch = [false, false];

/**
 * recurrentStep in sequential order, bit-identical to it, for a state whose STATE_* kind and
 * all-+0 rows are known (`kind` and `rowNonZero` — 0 only for a row of +0s — must be true of S on
 * entry; both are updated to stay true on exit; the kind is returned). Same math:
 *   S ← fl(S·exp(g)); kv_j = dot(S[:,j], k); δ_j = fl(fl(v_j − kv_j)·β); S_ij = fl(S_ij + fl(k_i·δ_j));
 *   o_j = dot(S[:,j], q)
 * with these exact shortcuts:
 *  - exp(g) = 1: no decay (x·1 = x); S all +0 and exp(g) finite: no decay (+0·e = +0 for e ≥ 0);
 *    a finite decay keeps +0 rows +0;
 *  - S finite (CLEAN/ZERO): kv and o visit only the non-zero k_i / q_i (sparseColumnDot), and a
 *    zero sum's sign needs only the rows not known to be +0;
 *  - S has no −0 and is finite and every δ_j is finite: rows i with k_i = ±0 are left alone, since
 *    fl(k_i·δ_j) = ±0 and S_ij + (±0) = S_ij for S_ij ≠ −0 (+0 + −0 = +0). A one-hot key (a pinned
 *    RAM write) touches one row; an all-zero key (an unused head) touches none.
 * Anything else (a state that may hold −0 or non-finite values, non-finite δ) runs the full update.
 *
 * `memo` (a tracked decode step, head h): when `kSame` — k is bit-identical to the previous call's
 * for this head and S has not changed since then — and memo.valid[h], the kv_j are memo.kv's (a
 * pure function of S, k and S's kind and +0 rows, all unchanged), unless this step decays S. If
 * then every δ_j is ±0 and k is finite, or k was all ±0 and every δ_j is finite (the update leaves
 * rows with k_i = ±0 alone), nothing changes S and the memo still describes it: with `same` (q
 * bit-identical too, and o[oOff..] still holding that call's output) o = dot(S[:,j], q) is the
 * previous output and the step returns at once; otherwise only the output dots are computed. Any
 * other outcome runs the step as above, which refreshes the memo (valid only when that step left
 * S unchanged). `kSame` defaults to `same`, which implies it.
 *
 * `qSame` (a tracked decode step): q is bit-identical to the q of this head's previous step, S is
 * as that step left it, and o[oOff..] still holds that step's output. A step that then leaves S
 * unchanged (a read-only head whose key moved, a RAM whose β is ±0) has the same output
 * dot(S[:,j], q): it returns before the output dots.
 *
 * `sMax` (the cache's bound, at h): an upper bound B of |S_ij| while `kind` is not STATE_ANY,
 * kept by every write this step makes (Infinity when unknown). With no decay and β = ±0, the step
 * skips kv and the update when B·Σ_i|k_i| ≤ 2^125 and every |v_j| ≤ 2^126: then every partial sum
 * of kv_j is below 2^125·(1 + 2^−23)^(dk+1) < 2^126 (dk ≤ 2^16), so v_j − kv_j is below 2^127 in
 * magnitude and rounds to a finite float, δ_j = fl(finite·(±0)) = ±0, and with k finite (Σ|k_i|
 * is) and S free of −0 the update leaves S as it is. With qSame o is then the previous output and
 * the step returns at once; otherwise only the output dots are computed. (A pinned RAM's bank whose
 * write key moved while its β is ±0: most of a store's value heads; and a bank whose read and write
 * rows share a key head, both moved, while it writes nothing.)
 */
export function recurrentStepSparse(
  dk: number, dv: number, S: Float32Array, kind: number, rowNonZero: Uint8Array,
  q: Float32Array, qOff: number, k: Float32Array, kOff: number, v: Float32Array, vOff: number,
  g: number, beta: number, o: Float32Array, oOff: number, scratch: SparseStepScratch,
  memo?: KvMemo, h = 0, same = false, qSame = false, sMax?: Float64Array, kSame = same, sView?: ViewAt, rnzView?: ViewAt,
): number {
  const eg = exp32(g);
  scratch.modified[0] = 0;
  // the kernels' addresses of this step's arrays (StepAt; −1 where one lies outside the heap)
  const heap = scratch.heap;
  if (heap !== null) {
    const a = scratch.at;
    a.s = (sView ?? a.sView).of(heap, S);
    a.rnz = (rnzView ?? a.rnzView).of(heap, rowNonZero);
    a.k = a.kView.of(heap, k);
    a.q = a.qView.of(heap, q);
    a.v = a.vView.of(heap, v);
    a.o = a.oView.of(heap, o);
    a.memoKv = memo ? a.memoKvView.of(heap, memo.kv) : -1;
  }
  const decays = eg !== 1 && !(kind === STATE_ZERO && Number.isFinite(eg));
  // (a call of its own, made on every tracked step: its paths first taken a few tokens into a
  // run — a key that stayed while the query moved — had this function's optimised code thrown away)
  if (memo && kvMemoStep(dk, dv, S, kind, rowNonZero, q, qOff, v, vOff, beta, o, oOff, scratch, memo, h, same, kSame, decays)) return kind;
  if (memo) memo.valid[h] = 0;
  if (decays) {
    scratch.modified[0] = 1;
    let nonZero = false;
    let dirty = false;
    let neg = false;
    let max = 0;
    for (let i = 0; i < S.length; i++) {
      const y = f32(S[i] * eg);
      S[i] = y;
      if (y !== 0) {
        nonZero = true;
        if (y - y !== 0) dirty = true;
        else { if (y < 0) neg = true; const a = Math.abs(y); if (a > max) max = a; }
      } else if (1 / y < 0) dirty = true;
    }
    // not dirty ⇒ eg finite (a +0 row times inf would be NaN), so +0 rows stayed +0
    kind = dirty ? STATE_ANY : nonZero ? (neg ? STATE_CLEAN : STATE_POS) : STATE_ZERO;
    if (sMax) sMax[h] = dirty ? Infinity : max;
  }
  // β = ±0 and every v_j − kv_j provably finite: S stays, and with it o unless q moved (see `sMax`
  // above; a call of its own for the reason kvMemoStep is one; the memo stays invalid: kv is not
  // computed)
  if (sMax !== undefined && betaZeroKeeps(dk, dv, S, kind, rowNonZero, q, qOff, k, kOff, v, vOff, beta, o, oOff, scratch, sMax, h, scratch.modified[0] === 0, qSame)) return kind;
  // (scratch.kv read whether or not it is used: its first use, by an untracked step, came late)
  const { kIdx, kDot, dotCount, nzRows, delta, kv: scratchKv } = scratch;
  const finiteState = kind !== STATE_ANY;
  let allDeltaFinite = true;
  let allDeltaZero = true;
  let kFinite = false;
  let kn = 0;
  if (finiteState) {
    // kv_j for every j (into the memo, which keeps them for the next step, or into scratch)
    const kvArr = memo ? memo.kv : scratchKv;
    const m0 = memo ? h * dv : 0;
    const a = scratch.at;
    const kvAt = memo ? a.memoKv : a.kv;
    const inHeap = heap !== null && a.s >= 0 && a.k >= 0 && kvAt >= 0 && a.rnz >= 0;
    // the scan and the dots in wasm (status 0; 1 or 2: redone below in JavaScript, which also
    // redoes the scan, the same lists)
    const st = inHeap
      ? heap.gdnDotsAt(a.s, a.k + 4 * kOff, a.rnz, dk, dv, kind === STATE_POS || kind === STATE_ZERO, kvAt + 4 * m0, a.kIdx, a.scr) : -1;
    if (st === 0) {
      kn = scratch.dotIo[0];
      kFinite = true; // (status 0: every k_i is finite)
    } else {
      kn = nonZeroIndices(k, kOff, dk, kIdx, rowNonZero, negOffScratch, kDot, dotCount);
      const kNegOff = negOffScratch[0];
      const kSign = kind === STATE_POS || kind === STATE_ZERO ? (negOffScratch[1] ? 1 : 0) : -1;
      const kdn = dotCount[0];
      kFinite = dotCount[1] === 1;
      const nzn = kSign >= 0 ? 0 : listRows(rowNonZero, nzRows);
      columnDotsInto(S, dv, k, kOff, kDot, kdn, nzRows, nzn, kNegOff, kSign, kvArr, m0, scratch.any);
    }
    // δ in wasm when every δ_j is finite (flags bit 0); else in JavaScript (its NaN bits)
    const fl = inHeap && a.v >= 0 && f32(beta) === beta ? heap.gdnDeltaAt(a.v + 4 * vOff, kvAt + 4 * m0, beta, a.delta, dv) : 0;
    if ((fl & 1) !== 0) {
      allDeltaZero = (fl & 2) !== 0;
    } else {
      for (let j = 0; j < dv; j++) {
        const kv = kvArr[m0 + j];
        const dj = f32(f32(v[vOff + j] - kv) * beta);
        delta[j] = dj;
        if (!(Math.abs(dj) <= F64_MAX)) allDeltaFinite = false;
        if (dj !== FLOAT_ZERO) allDeltaZero = false;
      }
    }
  } else {
    for (let j = 0; j < dv; j++) {
      let kv = -0;
      for (let i = 0; i < dk; i++) kv = f32(kv + f32(S[i * dv + j] * k[kOff + i]));
      delta[j] = f32(f32(v[vOff + j] - kv) * beta);
    }
  }
  // every δ_j = ±0 and k finite: fl(k_i·δ_j) = ±0, and S_ij + (±0) = S_ij since S holds no −0
  const kept = finiteState && allDeltaZero && kFinite;
  const keyRows = !kept && finiteState && allDeltaFinite;
  // (called at every step, with no rows unless it updates: the first write of a run came after the
  // JIT had compiled this function, and a call first made then had that code thrown away)
  kind = updateKeyRows(S, dv, k, kOff, kIdx, keyRows ? kn : 0, delta, rowNonZero, kind, scratch, sMax, h);
  if (!kept && !keyRows) {
    scratch.modified[0] = 1;
    for (let i = 0; i < dk; i++) {
      const ki = k[kOff + i];
      const row = i * dv;
      for (let j = 0; j < dv; j++) S[row + j] = f32(S[row + j] + f32(ki * delta[j]));
    }
    kind = classifyState(S, rowNonZero, sMax, h);
  }
  // kv (computed above on a finite state) still describes S when the step left S as it was
  if (memo && finiteState && scratch.modified[0] === 0) { memo.valid[h] = 1; memo.kFinite[h] = kFinite ? 1 : 0; memo.kZero[h] = kn === 0 ? 1 : 0; }
  // q and S as at the step that wrote o[oOff..], and this step left S alone: o is still dot(S, q)
  // (modified tested first, so that both tests run at every step:
  // docs/benchmarks.md "The executor's rounds 21–23")
  if (scratch.modified[0] === 0 && qSame) return kind;
  outputDots(dk, dv, S, kind, rowNonZero, q, qOff, o, oOff, scratch);
  return kind;
}

/**
 * recurrentStepSparse's kv memo (see its `memo`): true when it applies — `kSame`, no decay, a finite
 * kind, a valid memo of a finite key — and the step leaves S as it is (o then holds the step's
 * output: the previous one with `same`, else the output dots it computed); false when the step
 * must run as usual.
 */
function kvMemoStep(
  dk: number, dv: number, S: Float32Array, kind: number, rowNonZero: Uint8Array, q: Float32Array, qOff: number,
  v: Float32Array, vOff: number, beta: number, o: Float32Array, oOff: number, scratch: SparseStepScratch, memo: KvMemo,
  h: number, same: boolean, kSame: boolean, decays: boolean,
): boolean {
  if (!kSame || decays || kind === STATE_ANY || memo.valid[h] !== 1 || memo.kFinite[h] !== 1) return false;
  const kv = memo.kv;
  const m0 = h * dv;
  // k all ±0 (kz = 1): every δ_j finite leaves S as it is (the update's rows with k_i = ±0 are
  // left alone); k finite (kz = 0): δ all ±0 does (fl(k_i·δ_j) = ±0 and S_ij + (±0) = S_ij; an
  // infinite or NaN δ_j is not ±0).
  const kz = memo.kZero[h];
  const heap = scratch.heap;
  const a = scratch.at;
  if (heap !== null && a.v >= 0 && a.memoKv >= 0 && f32(beta) === beta) {
    // δ in wasm (into the step's scratch, which nothing reads after this test)
    const fl = heap.gdnDeltaAt(a.v + 4 * vOff, a.memoKv + 4 * m0, beta, a.delta, dv);
    if ((fl & 1) === 0 || (kz === 0 && (fl & 2) === 0)) return false;
  } else {
    for (let j = 0; j < dv; j++) {
      const dj = f32(f32(v[vOff + j] - kv[m0 + j]) * beta);
      // (both tests made at every j from the first step: a test first made later, when k first went
      // all ±0, had the compiled step thrown away)
      if (!(Math.abs(dj) <= F64_MAX) || (kz === 0 && dj !== FLOAT_ZERO)) return false;
    }
  }
  // S stays and the memo still describes it: with q as before so does o; otherwise the output dots
  if (!same) outputDots(dk, dv, S, kind, rowNonZero, q, qOff, o, oOff, scratch);
  return true;
}

/**
 * recurrentStepSparse's β = ±0 shortcut (see its `sMax`): true when `ready` (S not decayed), β =
 * ±0, the kind is finite, B·Σ|k_i| ≤ 2^125 and every |v_j| ≤ 2^126: then the step leaves S as it
 * is, and o holds its output — the previous one with `qSame`, else the output dots computed here.
 */
function betaZeroKeeps(
  dk: number, dv: number, S: Float32Array, kind: number, rowNonZero: Uint8Array, q: Float32Array, qOff: number,
  k: Float32Array, kOff: number, v: Float32Array, vOff: number, beta: number, o: Float32Array, oOff: number,
  scratch: SparseStepScratch, sMax: Float64Array, h: number, ready: boolean, qSame: boolean,
): boolean {
  if (!ready || beta !== 0 || kind === STATE_ANY || !(sMax[h] <= BETA_ZERO_BOUND)) return false;
  if (!(sMax[h] * absSum(k, kOff, dk) <= BETA_ZERO_BOUND)) return false;
  for (let j = 0; j < dv; j++) if (!(Math.abs(v[vOff + j]) <= V_BOUND)) return false;
  if (!qSame) outputDots(dk, dv, S, kind, rowNonZero, q, qOff, o, oOff, scratch);
  return true;
}

/**
 * recurrentStepSparse's update for a finite kind and every δ_j finite: S_ij ← fl(S_ij + fl(k_i·δ_j))
 * for the kn rows kIdx[0..kn) where k_i is not ±0 (the others are left alone: S + (±0) = S for S ≠
 * −0); marks them in rowNonZero, keeps sMax[h] a bound and returns the new kind (with kn = 0: S
 * and the kind as they were).
 */
function updateKeyRows(
  S: Float32Array, dv: number, k: Float32Array, kOff: number, kIdx: Int32Array, kn: number, delta: Float32Array,
  rowNonZero: Uint8Array, kind: number, scratch: SparseStepScratch, sMax: Float64Array | undefined, h: number,
): number {
  if (kn === 0) return kind;
  let nonZero = kind !== STATE_ZERO;
  let dirty = false;
  // negative entries outside the updated rows may remain unless the state had none
  let neg = kind === STATE_CLEAN;
  scratch.modified[0] = 1;
  const heap = scratch.heap;
  const a = scratch.at;
  // the rows in wasm when every new entry is finite and not −0 (else nothing is written there and
  // the loop below computes them, with the reference's NaN bits); kIdx and delta are the step
  // scratch's (their addresses in StepAt)
  if (heap !== null && a.s >= 0 && a.k >= 0 && a.rnz >= 0 && dv % 4 === 0) {
    const fl = heap.gdnKeyRowsAt(a.s, a.k + 4 * kOff, a.kIdx, kn, a.delta, dv, a.rnz, a.keyIo);
    if (fl !== 0) {
      if (sMax) sMax[h] = Math.max(sMax[h], scratch.keyIo[0]);
      return nonZero || (fl & 2) !== 0 ? (neg || (fl & 4) !== 0 ? STATE_CLEAN : STATE_POS) : STATE_ZERO;
    }
  }
  let max = 0;
  for (let t = 0; t < kn; t++) {
    const i = kIdx[t];
    const ki = k[kOff + i];
    const row = i * dv;
    rowNonZero[i] = 1;
    for (let j = 0; j < dv; j++) {
      const y = f32(S[row + j] + f32(ki * delta[j]));
      S[row + j] = y;
      if (y !== 0) {
        nonZero = true;
        if (y - y !== 0) dirty = true;
        else { if (y < 0) neg = true; const a = Math.abs(y); if (a > max) max = a; }
      } else if (1 / y < 0) dirty = true;
    }
  }
  // the rows not written keep entries within the old bound
  if (sMax) sMax[h] = dirty ? Infinity : Math.max(sMax[h], max);
  return dirty ? STATE_ANY : nonZero ? (neg ? STATE_CLEAN : STATE_POS) : STATE_ZERO;
}

/** o_j = dot(S[:,j], q) for every j < dv, as recurrentStep computes it (sequential order), for S of STATE_* kind `kind` with all-+0 rows as in rowNonZero. */
function outputDots(
  dk: number, dv: number, S: Float32Array, kind: number, rowNonZero: Uint8Array, q: Float32Array, qOff: number,
  o: Float32Array, oOff: number, scratch: SparseStepScratch,
): void {
  const { qIdx, qDot, dotCount, nzRows } = scratch;
  if (kind !== STATE_ANY) {
    const heap = scratch.heap;
    const a = scratch.at;
    if (heap !== null && a.s >= 0 && a.q >= 0 && a.o >= 0 && a.rnz >= 0
      && heap.gdnDotsAt(a.s, a.q + 4 * qOff, a.rnz, dk, dv, kind === STATE_POS || kind === STATE_ZERO, a.o + 4 * oOff, a.qIdx, a.scr) === 0) return;
    nonZeroIndices(q, qOff, dk, qIdx, rowNonZero, negOffScratch, qDot, dotCount);
    const qNegOff = negOffScratch[0];
    const qSign = kind === STATE_POS || kind === STATE_ZERO ? (negOffScratch[1] ? 1 : 0) : -1;
    const qdn = dotCount[0];
    const nzn = qSign >= 0 ? 0 : listRows(rowNonZero, nzRows);
    columnDotsInto(S, dv, q, qOff, qDot, qdn, nzRows, nzn, qNegOff, qSign, o, oOff, scratch.any);
  } else {
    for (let j = 0; j < dv; j++) {
      let acc = -0;
      for (let i = 0; i < dk; i++) acc = f32(acc + f32(S[i * dv + j] * q[qOff + i]));
      o[oOff + j] = acc;
    }
  }
}
