/**
 * The decode's hottest loops as WebAssembly functions, and the per-context wasm memory their arrays
 * live in: the incremental matmul's pass over its changed columns and their walks (delta.ts
 * deltaLinearIn), or the walks alone, and the SwiGLU of the units they reached (mlp.ts swigluDelta).
 * The residual stream's list loops (wasm-residual-kernels.ts) are functions of this module too; the
 * GDN step's kernels are a module of their own (wasm-gdn-kernels.ts), instantiated on the same
 * memory by WasmHeap.
 *
 * Why: V8's code for these loops in JavaScript spends up to twice the time per element that the
 * same loop takes as wasm (bench/walk-floor.ts: the walk over the gate/up projections of eleven
 * layers, 8.2–8.4 against 4.7–6.8 ns per entry; docs/benchmarks.md), the typed arrays' bounds and
 * kind checks and the double↔float32 conversions of Float32Array elements included. A wasm function reads
 * only its own memory, so the arrays these loops touch (the column records, the rows' marks, y,
 * the reached-row and changed-column lists, the matrix's CSC rows and weights, the input vector,
 * the SwiGLU's h and changed-unit list) are carved from one WebAssembly.Memory per numeric context
 * (WasmHeap), and the JavaScript around the loops reads and writes them as ordinary typed-array
 * views. The functions do the IEEE operations of the JavaScript they replace, in its order (each
 * double operation, and the rounding to float32 of a store, to nearest, ties to even): the same
 * bits whatever the operands.
 *
 * walk(nWalk, walkAt, markAt, yAt, rowsAt, rowIdxAt, valuesAt, trackAt, cur, nr) → nr (byte
 * addresses; rowIdx 16-bit, values float32, mark 16-bit, y float32, rows int32; the track block
 * TRACK at trackAt): for each walk-list entry j < nWalk — at walkAt + 16j the column's first and end
 * entry k0, k1 (int32) and its Δx (float64) — and each k in [k0, k1), with r = rowIdx[k] and f =
 * mark[r]:
 *  - f bit 0 clear (a bounded row): if f ≠ cur, mark[r] ← cur and rows[nr++] ← r; then
 *    y[r] ← float32(double(y[r]) + double(values[k]) · Δx), as `yv[r] += cv[k] * dx` on
 *    Float32Arrays (delta.ts's module comment gives why that is exact there);
 *  - f bit 0 set (a tracked row): if f's epoch (f & ~3) ≠ cur, mark[r] ← cur | 1, rows[nr++] ← r and
 *    the row is updated; else it is updated unless f bit 1 is set (the row is to be refolded). The
 *    update is delta.ts trackedUpdate's, in double: with w = values[k], x_new, x_old and
 *    lowbit32(x_new) from the track block's walkX (16j) and walkLow (4j), and the row's record e
 *    (4 float64 at exactAt + 32·slot[r]: exact sum, absolute sum, T, lowest bit), pn = w·x_new, po
 *    = w·x_old, e0 ← e0 + (pn − po), e1 ← e1 + (|pn| − |po|), y[r] ← float32(e0 + 0); when T = 0, or
 *    pn ≠ 0 and (the weight's lowest set bit + lowbit < e3 or |pn| ≥ T), or not e1 + |e0| < 2T,
 *    mark[r] ← cur | 3 and r is appended to the refold list (count in the block, in and out).
 * It returns nr. These are the JavaScript loop's operations in its order, marks and lists included.
 * Preconditions: every address and index in range of the memory (the caller's layout), rows < 2^16,
 * cur a mark value with bits 0 and 1 clear, a slot and record for every tracked row.
 *
 * delta(nCand, candAt, xAt, recAt, rowIdxAt, valuesAt, markAt, yAt, rowsAt, trackAt, changedAt,
 * cur, t0, ioAt) → status: deltaLinearIn's pass over candidates t ∈ [t0, nCand) (c = cand[t], or
 * t when candAt = −1), its state's column records at recAt + 16c (bits, M_c as float32, L_c, the
 * column's first entry; the next record holds its end), with io[0] nr, io[1] nc and io[6] (1 when
 * every row is bounded) in. Per candidate: bits equal to the record's → passed over; x_c not
 * finite → status 2, stopped at t; x_c ≠ 0 widening the column's bounds (|x| > M_c, or lowbit32(x)
 * < L_c where L_c > 0 or x is not an int32) → status 1, stopped at t; both leave column c
 * untouched for the caller. Otherwise the sign count moves by sign(x_new) − sign(x_old), the record
 * takes the new bits, c is appended to `changed`, and unless both values are ±0 or the column has
 * no entries, its entries are walked as walk's are with Δx = x_new − x_old in double (the tracked
 * rows' updates reading x_new, x_old and lowbit32(x_new), 0 for x_new = ±0). Out: io[0] nr, io[1]
 * nc, io[2] the sign count's change, io[3] entries walked, io[5] the stop (nCand when done, status
 * 0), the track block's refold count. These are delta.ts's operations in its order.
 *
 * swiglu(nr, rowsAt, n, goAt, hAt, changedAt, form) → nch (gate at goAt + 4i, up at goAt + 4(n + i),
 * float32; h float32; rows and changed int32): for t < nr, with r = rows[t] and unit i = r < n ? r :
 * r − n, h[i] ← float32(silu32(g_i) · double(u_i)) (g_i = ±0 passes through) and i is appended to
 * changed when h[i]'s bits moved. silu32 (numeric.ts): ±0 → itself, g ≥ 17 → g, g ≤ −89 (not −∞)
 * → −0, otherwise the imported env.siluFormula(g, form) (form 0 'mul', 1 'div'): numeric.ts's own
 * formula, called back in JavaScript (no exp in wasm; a compiled chip's units sit at the saturated
 * ends, so the call is rare). Returns the changed count. Preconditions: addresses in range, n and
 * every r < 2n below 2^30.
 */
import { gdnKernelModuleBytes } from './wasm-gdn-kernels.ts';
import { residualKernelFns } from './wasm-residual-kernels.ts';
import { foldKernelFn } from './wasm-fold-kernel.ts';
import { addr, F64, f64c, get, I32, i32, kernelModuleOf, lowbitOf, mem, OP, set, tee } from './wasm-emit.ts';

/**
 * The word indices of a delta state's track block (int32, TRACK_WORDS of them), which walk and
 * delta read the tracked rows' arrays from: the rows' record slots (int32), the records (float64,
 * 4 a slot: delta.ts rowExact), the refold list (int32) and its count (in and out), and for walk
 * the listed columns' x_new, x_old (float64) and lowbit32(x_new) (int32).
 */
export const TRACK = { slotAt: 0, exactAt: 1, refoldAt: 2, nf: 3, walkXAt: 4, walkLowAt: 5 } as const;
export const TRACK_WORDS = 8;

// walk's locals: its ten parameters, then thirteen int32 and three float64
const L = {
  nWalk: 0, walkAt: 1, markAt: 2, yAt: 3, rowsAt: 4, rowIdxAt: 5, valuesAt: 6, trackAt: 7, cur: 8, nr: 9,
  j: 10, k: 11, kEnd: 12, r: 13, f: 14, at: 15, lx: 16, slotAt: 17, exactAt: 18, refoldAt: 19, nf: 20,
  walkXAt: 21, walkLowAt: 22,
  dx: 23, xn: 24, xo: 25,
} as const;
/** The locals an entry loop uses (walk and delta name theirs differently). */
interface EntryLocals {
  k: number; kEnd: number; r: number; f: number; at: number; nr: number; dx: number; markAt: number; yAt: number; rowsAt: number;
  rowIdxAt: number; valuesAt: number; cur: number; lx: number; slotAt: number; exactAt: number; refoldAt: number;
  nf: number; xn: number; xo: number;
}

// trackedUpdate's locals: its nine parameters, then three int32 and five float64
const U = {
  valuesAt: 0, k: 1, slotAt: 2, r: 3, exactAt: 4, yAt: 5, lx: 6, xn: 7, xo: 8,
  at: 9, wb: 10, we: 11, T: 12, pn: 13, po: 14, v: 15, sAbs: 16,
} as const;
/** The kernels' function index of trackedUpdate (the first after silu32's imported formula). */
const TRACKED_UPDATE = 1;

/**
 * trackedUpdate(valuesAt, k, slotAt, r, exactAt, yAt, lx, x_new, x_old) → 1 when the row is to be
 * refolded: a tracked row's exact update by entry k (module comment, walk), a function of its own
 * so that the entry loops that call it keep few locals (their bounded rows' path is the hot one).
 */
const trackedUpdateBody: number[] = [
  ...addr(U.slotAt, U.r, 2), ...mem(OP.i32Load, 2), ...i32(5), OP.i32Shl, ...get(U.exactAt), OP.i32Add, ...set(U.at),
  ...get(U.at), ...mem(OP.f64Load, 3, 16), ...set(U.T),
  ...addr(U.valuesAt, U.k, 2), ...mem(OP.f32Load, 2), OP.f64PromoteF32, ...get(U.xn), OP.f64Mul, ...set(U.pn),
  ...addr(U.valuesAt, U.k, 2), ...mem(OP.f32Load, 2), OP.f64PromoteF32, ...get(U.xo), OP.f64Mul, ...set(U.po),
  ...get(U.at), ...get(U.at), ...mem(OP.f64Load, 3, 0), ...get(U.pn), ...get(U.po), OP.f64Sub, OP.f64Add, ...tee(U.v), ...mem(OP.f64Store, 3, 0),
  ...get(U.at), ...get(U.at), ...mem(OP.f64Load, 3, 8), ...get(U.pn), OP.f64Abs, ...get(U.po), OP.f64Abs, OP.f64Sub, OP.f64Add,
  ...tee(U.sAbs), ...mem(OP.f64Store, 3, 8),
  // y_r = v + 0 rounded to float32 (exact when the row is accepted; −0 + 0 = +0)
  ...addr(U.yAt, U.r, 2), ...get(U.v), ...f64c(0), OP.f64Add, OP.f32DemoteF64, ...mem(OP.f32Store, 2),
  // T = 0, or a non-zero product whose lowest bit or size breaks the row's bound, or the row no longer exact
  ...get(U.T), ...f64c(0), OP.f64Eq,
  ...get(U.pn), ...f64c(0), OP.f64Ne,
  // the weight's lowest set bit, from its bits (delta.ts weightLows; a ±0 weight's, which
  // weightLows gives as 0, is never read: its pn is ±0)
  ...addr(U.valuesAt, U.k, 2), ...mem(OP.i32Load, 2), ...set(U.wb), ...lowbitOf(U.wb, U.we),
  ...get(U.lx), OP.i32Add, OP.f64ConvertI32S, ...get(U.at), ...mem(OP.f64Load, 3, 24), OP.f64Lt,
  ...get(U.pn), OP.f64Abs, ...get(U.T), OP.f64Ge, OP.i32Or, OP.i32And, OP.i32Or,
  ...get(U.sAbs), ...get(U.v), OP.f64Abs, OP.f64Add, ...get(U.T), ...get(U.T), OP.f64Add, OP.f64Lt, OP.i32Eqz, OP.i32Or,
  OP.end,
];

/** An entry loop's call of trackedUpdate for entry k of row r; a row to refold is marked and listed. */
function callTrackedUpdate(E: EntryLocals): number[] {
  return [
    ...get(E.valuesAt), ...get(E.k), ...get(E.slotAt), ...get(E.r), ...get(E.exactAt), ...get(E.yAt), ...get(E.lx), ...get(E.xn), ...get(E.xo),
    OP.call, TRACKED_UPDATE,
    OP.if, OP.void,
    ...addr(E.markAt, E.r, 1), ...get(E.cur), ...i32(3), OP.i32Or, ...mem(OP.i32Store16, 1),
    ...addr(E.refoldAt, E.nf, 2), ...get(E.r), ...mem(OP.i32Store, 2), ...get(E.nf), ...i32(1), OP.i32Add, ...set(E.nf),
    OP.end,
  ];
}

/**
 * The walk of one column's entries k ∈ [k, kEnd) (module comment, walk): bounded rows updated,
 * tracked rows updated exactly (the trackedUpdate function) unless they are to be refolded.
 */
function entryLoop(E: EntryLocals): number[] {
  const listRow = [...addr(E.rowsAt, E.nr, 2), ...get(E.r), ...mem(OP.i32Store, 2), ...get(E.nr), ...i32(1), OP.i32Add, ...set(E.nr)];
  return [
    OP.block, OP.void, OP.loop, OP.void,
    ...get(E.k), ...get(E.kEnd), OP.i32GeS, OP.brIf, 1,
    ...addr(E.rowIdxAt, E.k, 1), ...mem(OP.i32Load16U, 1), ...set(E.r),
    ...addr(E.markAt, E.r, 1), ...mem(OP.i32Load16U, 1), ...tee(E.f),
    ...i32(1), OP.i32And, OP.i32Eqz, OP.if, OP.void,
    // a bounded row
    ...get(E.f), ...get(E.cur), OP.i32Ne, OP.if, OP.void,
    ...addr(E.markAt, E.r, 1), ...get(E.cur), ...mem(OP.i32Store16, 1),
    ...listRow,
    OP.end,
    ...addr(E.yAt, E.r, 2), ...tee(E.at),
    ...get(E.at), ...mem(OP.f32Load, 2), OP.f64PromoteF32,
    ...addr(E.valuesAt, E.k, 2), ...mem(OP.f32Load, 2), OP.f64PromoteF32, ...get(E.dx), OP.f64Mul,
    OP.f64Add, OP.f32DemoteF64, ...mem(OP.f32Store, 2),
    OP.else, // a tracked row
    ...get(E.f), ...i32(~3), OP.i32And, ...get(E.cur), OP.i32Ne, OP.if, OP.void,
    ...addr(E.markAt, E.r, 1), ...get(E.cur), ...i32(1), OP.i32Or, ...mem(OP.i32Store16, 1),
    ...listRow,
    ...callTrackedUpdate(E),
    OP.else, // reached before in this call: updated unless it is to be refolded
    ...get(E.f), ...i32(2), OP.i32And, OP.i32Eqz, OP.if, OP.void,
    ...callTrackedUpdate(E),
    OP.end,
    OP.end,
    OP.end,
    ...get(E.k), ...i32(1), OP.i32Add, ...set(E.k),
    OP.br, 0,
    OP.end, OP.end,
  ];
}

/** The track block's words (wasm-kernels.ts TRACK): the state's tracked-row arrays and the refold count. */
const loadTrack = (E: { slotAt: number; exactAt: number; refoldAt: number; nf: number }, trackAt: number) => [
  ...get(trackAt), ...mem(OP.i32Load, 2, 4 * TRACK.slotAt), ...set(E.slotAt),
  ...get(trackAt), ...mem(OP.i32Load, 2, 4 * TRACK.exactAt), ...set(E.exactAt),
  ...get(trackAt), ...mem(OP.i32Load, 2, 4 * TRACK.refoldAt), ...set(E.refoldAt),
  ...get(trackAt), ...mem(OP.i32Load, 2, 4 * TRACK.nf), ...set(E.nf),
];

const walkBody: number[] = [
  ...i32(0), ...set(L.j),
  ...loadTrack(L, L.trackAt),
  ...get(L.trackAt), ...mem(OP.i32Load, 2, 4 * TRACK.walkXAt), ...set(L.walkXAt),
  ...get(L.trackAt), ...mem(OP.i32Load, 2, 4 * TRACK.walkLowAt), ...set(L.walkLowAt),
  OP.block, OP.void, OP.loop, OP.void, // over the walk list
  ...get(L.j), ...get(L.nWalk), OP.i32GeU, OP.brIf, 1,
  ...addr(L.walkAt, L.j, 4), ...tee(L.at), ...mem(OP.i32Load, 2), ...set(L.k),
  ...get(L.at), ...mem(OP.i32Load, 2, 4), ...set(L.kEnd),
  ...get(L.at), ...mem(OP.f64Load, 3, 8), ...set(L.dx),
  // what the tracked rows' updates read (written by the caller only while some row is tracked)
  ...addr(L.walkXAt, L.j, 4), ...tee(L.at), ...mem(OP.f64Load, 3, 0), ...set(L.xn),
  ...get(L.at), ...mem(OP.f64Load, 3, 8), ...set(L.xo),
  ...addr(L.walkLowAt, L.j, 2), ...mem(OP.i32Load, 2), ...set(L.lx),
  ...entryLoop(L),
  ...get(L.j), ...i32(1), OP.i32Add, ...set(L.j),
  OP.br, 0,
  OP.end, OP.end,
  ...get(L.trackAt), ...get(L.nf), ...mem(OP.i32Store, 2, 4 * TRACK.nf),
  ...get(L.nr),
  OP.end,
];

// delta's locals: its fourteen parameters, then twenty-one int32 and three float64
const D = {
  nCand: 0, candAt: 1, xAt: 2, recAt: 3, rowIdxAt: 4, valuesAt: 5, markAt: 6, yAt: 7, rowsAt: 8, trackAt: 9,
  changedAt: 10, cur: 11, t0: 12, ioAt: 13,
  t: 14, c: 15, b: 16, ob: 17, k: 18, kEnd: 19, r: 20, f: 21, at: 22, nr: 23, nc: 24, neg: 25, walked: 26,
  lx: 27, rec: 28, allB: 29, e: 30, slotAt: 31, exactAt: 32, refoldAt: 33, nf: 34,
  xn: 35, xo: 36, dx: 37,
} as const;
/** io[0 … 3] ← nr, nc, neg, walked, io[5] ← t, the track block's refold count ← nf; then return `status`. */
const finish = (status: number) => [
  ...get(D.ioAt), ...get(D.nr), ...mem(OP.i32Store, 2, 0),
  ...get(D.ioAt), ...get(D.nc), ...mem(OP.i32Store, 2, 4),
  ...get(D.ioAt), ...get(D.neg), ...mem(OP.i32Store, 2, 8),
  ...get(D.ioAt), ...get(D.walked), ...mem(OP.i32Store, 2, 12),
  ...get(D.ioAt), ...get(D.t), ...mem(OP.i32Store, 2, 20),
  ...get(D.trackAt), ...get(D.nf), ...mem(OP.i32Store, 2, 4 * TRACK.nf),
  ...i32(status), OP.return,
];
const deltaBody: number[] = [
  ...get(D.ioAt), ...mem(OP.i32Load, 2, 0), ...set(D.nr),
  ...get(D.ioAt), ...mem(OP.i32Load, 2, 4), ...set(D.nc),
  ...get(D.ioAt), ...mem(OP.i32Load, 2, 24), ...set(D.allB),
  ...loadTrack(D, D.trackAt),
  ...get(D.t0), ...set(D.t),
  OP.block, OP.void, OP.loop, OP.void, // over the candidates
  ...get(D.t), ...get(D.nCand), OP.i32GeU, OP.brIf, 1,
  OP.block, OP.void, // a column to pass over branches out of this block
  // c = the candidate (or t itself when there is no list: candAt = −1)
  ...get(D.candAt), ...i32(-1), OP.i32Eq, OP.if, I32,
  ...get(D.t),
  OP.else,
  ...addr(D.candAt, D.t, 2), ...mem(OP.i32Load, 2),
  OP.end, ...set(D.c),
  ...addr(D.recAt, D.c, 4), ...set(D.rec),
  ...addr(D.xAt, D.c, 2), ...mem(OP.i32Load, 2), ...tee(D.b),
  ...get(D.rec), ...mem(OP.i32Load, 2), ...tee(D.ob), OP.i32Eq, OP.brIf, 0,
  ...addr(D.xAt, D.c, 2), ...mem(OP.f32Load, 2), OP.f64PromoteF32, ...set(D.xn),
  // a non-finite input: the caller drops the state (status 2), this column untouched
  ...get(D.xn), ...get(D.xn), OP.f64Sub, ...f64c(0), OP.f64Ne, OP.if, OP.void, ...finish(2), OP.end,
  // a widening: the caller takes this column (status 1), untouched
  ...get(D.xn), ...f64c(0), OP.f64Ne,
  ...get(D.xn), OP.f64Abs, ...get(D.rec), ...mem(OP.f32Load, 2, 4), OP.f64PromoteF32, OP.f64Gt,
  ...get(D.rec), ...mem(OP.i32Load, 2, 8), ...i32(0), OP.i32GtS,
  ...get(D.xn), OP.i32TruncSatF64S0, OP.i32TruncSatF64S1, OP.f64ConvertI32S, ...get(D.xn), OP.f64Ne, OP.i32Or,
  ...lowbitOf(D.b, D.e), ...get(D.rec), ...mem(OP.i32Load, 2, 8), OP.i32LtS, OP.i32And,
  OP.i32Or, OP.i32And, OP.if, OP.void, ...finish(1), OP.end,
  // the record: sign count, old value, new bits, changed list, the column's entries
  ...get(D.neg), ...get(D.b), ...i32(31), OP.i32ShrU, OP.i32Add, ...get(D.ob), ...i32(31), OP.i32ShrU, OP.i32Sub, ...set(D.neg),
  ...get(D.rec), ...mem(OP.f32Load, 2), OP.f64PromoteF32, ...set(D.xo),
  ...get(D.rec), ...get(D.b), ...mem(OP.i32Store, 2),
  ...addr(D.changedAt, D.nc, 2), ...get(D.c), ...mem(OP.i32Store, 2),
  ...get(D.nc), ...i32(1), OP.i32Add, ...set(D.nc),
  ...get(D.rec), ...mem(OP.i32Load, 2, 12), ...set(D.k),
  ...get(D.rec), ...mem(OP.i32Load, 2, 28), ...set(D.kEnd),
  // ±0 → ±0, or no entries: nothing to walk
  ...get(D.xn), ...f64c(0), OP.f64Eq, ...get(D.xo), ...f64c(0), OP.f64Eq, OP.i32And,
  ...get(D.kEnd), ...get(D.k), OP.i32LeS, OP.i32Or, OP.brIf, 0,
  ...get(D.walked), ...get(D.kEnd), OP.i32Add, ...get(D.k), OP.i32Sub, ...set(D.walked),
  ...get(D.xn), ...get(D.xo), OP.f64Sub, ...set(D.dx),
  // lowbit32(x_new), which only the tracked rows' updates read (none while every row is bounded)
  ...get(D.allB), OP.i32Eqz, OP.if, OP.void,
  ...i32(0), ...lowbitOf(D.b, D.e), ...get(D.xn), ...f64c(0), OP.f64Eq, OP.select, ...set(D.lx),
  OP.end,
  ...entryLoop(D),
  OP.end, // (the column passed over lands here)
  ...get(D.t), ...i32(1), OP.i32Add, ...set(D.t),
  OP.br, 0,
  OP.end, OP.end,
  ...finish(0),
  OP.end,
];

// swiglu's locals: its seven parameters, then five int32 and two float64
const A = { nr: 0, rowsAt: 1, n: 2, goAt: 3, hAt: 4, changedAt: 5, form: 6, t: 7, i: 8, old: 9, nch: 10, at: 11, g: 12, s: 13 } as const;
const swigluBody: number[] = [
  ...i32(0), ...set(A.t),
  ...i32(0), ...set(A.nch),
  OP.block, OP.void, OP.loop, OP.void,
  ...get(A.t), ...get(A.nr), OP.i32GeU, OP.brIf, 1,
  // i = r < n ? r : r − n
  ...addr(A.rowsAt, A.t, 2), ...mem(OP.i32Load, 2), ...tee(A.i),
  ...get(A.n), ...i32(0), ...get(A.i), ...get(A.n), OP.i32GeU, OP.select, OP.i32Sub, ...set(A.i),
  ...addr(A.hAt, A.i, 2), ...tee(A.at), ...mem(OP.i32Load, 2), ...set(A.old),
  ...addr(A.goAt, A.i, 2), ...mem(OP.f32Load, 2), OP.f64PromoteF32, ...tee(A.g),
  // s = silu32(g)
  ...f64c(0), OP.f64Eq, OP.if, OP.f64Block,
  ...get(A.g),
  OP.else,
  ...get(A.g), ...f64c(17), OP.f64Ge, OP.if, OP.f64Block,
  ...get(A.g),
  OP.else,
  ...get(A.g), ...f64c(-89), OP.f64Le, ...get(A.g), ...f64c(-Infinity), OP.f64Ne, OP.i32And, OP.if, OP.f64Block,
  ...f64c(-0),
  OP.else,
  ...get(A.g), ...get(A.form), OP.call, 0,
  OP.end, OP.end, OP.end,
  ...set(A.s),
  // h[i] = float32(s · u)
  ...get(A.at),
  ...get(A.s), ...get(A.goAt), ...get(A.n), ...get(A.i), OP.i32Add, ...i32(2), OP.i32Shl, OP.i32Add, ...mem(OP.f32Load, 2), OP.f64PromoteF32, OP.f64Mul,
  OP.f32DemoteF64, ...mem(OP.f32Store, 2),
  ...get(A.at), ...mem(OP.i32Load, 2), ...get(A.old), OP.i32Ne, OP.if, OP.void,
  ...addr(A.changedAt, A.nch, 2), ...get(A.i), ...mem(OP.i32Store, 2),
  ...get(A.nch), ...i32(1), OP.i32Add, ...set(A.nch),
  OP.end,
  ...get(A.t), ...i32(1), OP.i32Add, ...set(A.t),
  OP.br, 0,
  OP.end, OP.end,
  ...get(A.nch),
  OP.end,
];


/**
 * The kernels' module (wasm-emit.ts kernelModuleOf): silu32's formula imported as function 0;
 * `trackedUpdate` (function 1, which walk and delta call), `walk` (2), `swiglu` (3), `delta` (4),
 * wasm-residual-kernels.ts `addLists` (5) and `normListed` (6) and wasm-fold-kernel.ts `foldColumns` (7)
 * exported.
 */
export function kernelModuleBytes(): Uint8Array {
  return kernelModuleOf([
    {
      name: 'trackedUpdate', params: [...Array.from({ length: 7 }, () => I32), F64, F64], results: [I32], locals: [[3, I32], [5, F64]],
      body: trackedUpdateBody,
    },
    { name: 'walk', params: Array.from({ length: 10 }, () => I32), results: [I32], locals: [[13, I32], [3, F64]], body: walkBody },
    { name: 'swiglu', params: Array.from({ length: 7 }, () => I32), results: [I32], locals: [[5, I32], [2, F64]], body: swigluBody },
    { name: 'delta', params: Array.from({ length: 14 }, () => I32), results: [I32], locals: [[21, I32], [3, F64]], body: deltaBody },
    ...residualKernelFns(),
    foldKernelFn(),
  ]);
}

type WalkFn = (nWalk: number, walkAt: number, markAt: number, yAt: number, rowsAt: number, rowIdxAt: number,
  valuesAt: number, trackAt: number, cur: number, nr: number) => number;
type DeltaFn = (nCand: number, candAt: number, xAt: number, recAt: number, rowIdxAt: number, valuesAt: number, markAt: number,
  yAt: number, rowsAt: number, trackAt: number, changedAt: number, cur: number, t0: number, ioAt: number) => number;
type SwigluFn = (nr: number, rowsAt: number, n: number, goAt: number, hAt: number, changedAt: number, form: number) => number;
type GdnDotsFn = (sAt: number, xAt: number, rnzAt: number, dk: number, dv: number, kindPos: number, outAt: number, idxAt: number, scrAt: number) => number;
type AddListsFn = (xAt: number, bAt: number, oAt: number, aAt: number, aN: number, bListAt: number, bN: number, chAt: number,
  ioAt: number) => number;
type NormListedFn = (xAt: number, pAt: number, listAt: number, n: number, w1At: number, ovAt: number, chAt: number, r: number) => number;
type GdnDeltaFn = (vAt: number, kvAt: number, beta: number, deltaAt: number, dv: number) => number;
type KeyRowsFn = (sAt: number, kAt: number, idxAt: number, kn: number, deltaAt: number, dv: number, rnzAt: number, ioAt: number) => number;
type FoldColumnsFn = (colEnd: number, recAt: number, rowIdxAt: number, valuesAt: number, yAt: number, boundAt: number, lowAt: number,
  markAt: number, listAt: number, refoldAt: number) => number;
type L2normFn = (xAt: number, n: number, outAt: number, s: number, nzAt: number) => number;

/** silu32's formula for a form (numeric.ts siluFormula): swiglu's callback for the unsaturated units. */
export type SiluFormula = (x: number, form: 'mul' | 'div') => number;

/** The parts of the WebAssembly JS API used here (the project's TypeScript libs do not declare them). */
interface WasmMemory { readonly buffer: ArrayBuffer }
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Memory: new (d: { initial: number; maximum: number }) => WasmMemory;
  Instance: new (mod: object, imports: { env: { memory: WasmMemory; siluFormula?: (x: number, form: number) => number } }) => { exports: Record<string, unknown> };
}
const wasm = (globalThis as unknown as { WebAssembly?: WasmApi }).WebAssembly;

/**
 * A getter of the module of `bytes`, compiled at its first call and kept for the process (null
 * where WebAssembly, or an instruction the module uses such as SIMD, is not available).
 */
function compiledOnce(bytes: () => Uint8Array): () => object | null {
  let compiled: object | null | undefined;
  return () => {
    if (compiled === undefined) {
      try {
        compiled = wasm === undefined ? null : new wasm.Module(bytes());
      } catch {
        compiled = null;
      }
    }
    return compiled;
  };
}
const kernelModule = compiledOnce(kernelModuleBytes);
/** The GDN kernels' module (wasm-gdn-kernels.ts; SIMD). */
const gdnKernelModule = compiledOnce(gdnKernelModuleBytes);

/** The arrays of a state's kernels that `delta` reads besides the state's own (plans.ts DeltaKernel). */
export interface DeltaArrays { rowIdx: Uint16Array; values: Float32Array; track: Int32Array; io: Int32Array }

type ViewCtor<T> = { new (buffer: ArrayBufferLike, byteOffset: number, length: number): T; readonly BYTES_PER_ELEMENT: number };
type InstanceType<C> = C extends ViewCtor<infer T> ? T : never;

/**
 * One numeric context's wasm memory, of a fixed size (a memory that grows detaches every view of
 * its buffer), zero-filled, carved by a bump pointer into the arrays of the context's incremental
 * matmuls, SwiGLUs, norm outputs and GDN layers (each starting at a multiple of 8 bytes), and both
 * kernel modules instantiated on it (the GDN one where SIMD is there: hasGdnKernels). The first 8
 * bytes hold addLists' appended count. Untouched pages are the
 * system's zero pages, so a large memory costs address space, not resident memory. A request that
 * does not fit gets null (the caller keeps its JavaScript arrays and loop); nothing is freed before
 * the context is.
 */
export class WasmHeap {
  readonly buffer: ArrayBuffer;
  private readonly walkFn: WalkFn;
  private readonly swigluFn: SwigluFn;
  private readonly deltaFn: DeltaFn;
  private readonly addListsFn: AddListsFn;
  private readonly normListedFn: NormListedFn;
  private readonly gdnDotsFn: GdnDotsFn;
  private readonly gdnDeltaFn: GdnDeltaFn;
  private readonly convActivateFn: (ctlAt: number) => number;
  private readonly convChannelsFn: (ctlAt: number) => number;
  private readonly gatedNormFn: (ctlAt: number) => number;
  private readonly keyRowsFn: KeyRowsFn;
  private readonly l2normFn: L2normFn;
  private readonly foldColumnsFn: FoldColumnsFn;
  /** Whether the GDN kernels (wasm-gdn-kernels.ts) are there: they need SIMD. */
  readonly hasGdnKernels: boolean;
  /** addLists' io word (bytes 0–3): the appended count. */
  private readonly addIo: Int32Array;
  private used = 8;

  private constructor(memory: WasmMemory, instance: { exports: Record<string, unknown> }, gdn: { exports: Record<string, unknown> } | null) {
    this.buffer = memory.buffer;
    this.walkFn = instance.exports.walk as WalkFn;
    this.swigluFn = instance.exports.swiglu as SwigluFn;
    this.deltaFn = instance.exports.delta as DeltaFn;
    this.addListsFn = instance.exports.addLists as AddListsFn;
    this.normListedFn = instance.exports.normListed as NormListedFn;
    this.foldColumnsFn = instance.exports.foldColumns as FoldColumnsFn;
    this.hasGdnKernels = gdn !== null;
    const missing = (): number => { throw new Error('the GDN kernels are not available (hasGdnKernels)'); };
    this.gdnDotsFn = gdn === null ? missing : gdn.exports.dots as GdnDotsFn;
    this.gdnDeltaFn = gdn === null ? missing : gdn.exports.delta as GdnDeltaFn;
    this.convActivateFn = gdn === null ? missing : gdn.exports.convActivate as (ctlAt: number) => number;
    this.convChannelsFn = gdn === null ? missing : gdn.exports.convChannels as (ctlAt: number) => number;
    this.gatedNormFn = gdn === null ? missing : gdn.exports.gatedNorm as (ctlAt: number) => number;
    this.keyRowsFn = gdn === null ? missing : gdn.exports.keyRows as KeyRowsFn;
    this.l2normFn = gdn === null ? missing : gdn.exports.l2norm as L2normFn;
    this.addIo = new Int32Array(this.buffer, 0, 1);
  }

  /**
   * A heap of `mib` MiB whose swiglu calls `silu` (numeric.ts siluFormula; passed in, so that this
   * module imports nothing) for the units off silu32's saturated ends, or null when WebAssembly or
   * the memory is not available.
   */
  static create(mib: number, silu: SiluFormula): WasmHeap | null {
    const mod = kernelModule();
    if (mod === null || wasm === undefined || !(mib > 0)) return null;
    try {
      const pages = Math.min(65536, Math.ceil((mib * 2 ** 20) / 65536));
      const memory = new wasm.Memory({ initial: pages, maximum: pages });
      const siluFormula = (x: number, form: number): number => silu(x, form === 0 ? 'mul' : 'div');
      const gdnMod = gdnKernelModule();
      const gdn = gdnMod === null ? null : new wasm.Instance(gdnMod, { env: { memory, siluFormula } });
      return new WasmHeap(memory, new wasm.Instance(mod, { env: { memory, siluFormula } }), gdn);
    } catch {
      return null;
    }
  }

  /** A short form for printers (a test's failure message would otherwise print the whole memory). */
  toJSON(): string {
    return `WasmHeap(${this.buffer.byteLength} bytes, ${this.free} free)`;
  }

  /** Bytes still free. */
  get free(): number {
    return this.buffer.byteLength - this.used;
  }

  /** A zero-filled array of `length` elements carved from the heap, or null when it does not fit. */
  take<T>(ctor: ViewCtor<T>, length: number): T | null {
    const bytes = Math.ceil((length * ctor.BYTES_PER_ELEMENT) / 8) * 8;
    if (bytes > this.free) return null;
    const at = this.used;
    this.used += bytes;
    return new ctor(this.buffer, at, length);
  }

  /**
   * An array per entry of `spec` ([constructor, length]), all carved from the heap, or null —
   * nothing taken — when they do not all fit (as arena.ts carveArrays, all or nothing).
   */
  carve<S extends Record<string, readonly [ViewCtor<unknown>, number]>>(spec: S): { [K in keyof S]: InstanceType<S[K][0]> } | null {
    let bytes = 0;
    for (const [ctor, length] of Object.values(spec)) bytes += Math.ceil((length * ctor.BYTES_PER_ELEMENT) / 8) * 8;
    if (bytes > this.free) return null;
    const out: Record<string, unknown> = {};
    for (const [key, [ctor, length]] of Object.entries(spec)) out[key] = this.take(ctor, length);
    return out as { [K in keyof S]: InstanceType<S[K][0]> };
  }

  /**
   * Runs walk (module comment) over walk-list entries [0, nWalk) with the track block `track`
   * (TRACK; its refold count in and out); every array must be a view of this heap. Returns nr
   * after the walk.
   */
  walk(nWalk: number, walkList: Int32Array, mark: Uint16Array, y: Float32Array, rows: Int32Array, rowIdx: Uint16Array,
    values: Float32Array, track: Int32Array, cur: number, nr: number): number {
    return this.walkFn(nWalk, walkList.byteOffset, mark.byteOffset, y.byteOffset, rows.byteOffset, rowIdx.byteOffset,
      values.byteOffset, track.byteOffset, cur, nr);
  }

  /**
   * The SwiGLU of the units of rows[0..nr) (module comment): h and `changed` updated, the changed
   * count returned; every array must be a view of this heap.
   */
  swiglu(nr: number, rows: Int32Array, n: number, go: Float32Array, h: Float32Array, changed: Int32Array, form: 'mul' | 'div'): number {
    return this.swigluFn(nr, rows.byteOffset, n, go.byteOffset, h.byteOffset, changed.byteOffset, form === 'mul' ? 0 : 1);
  }

  /**
   * delta.ts deltaLinearIn's pass over candidates [t0, n) in wasm (module comment, delta): the
   * candidates (null: every column t is a candidate) and x from xOff, the state's column records
   * `colBits`, marks, y, reached rows and changed columns, and `kern`'s plan copy, track block
   * (TRACK: the tracked rows' arrays, the refold count in and out) and in/out block `kern.io` ([0]
   * nr and [1] nc in and out, [6] 1 when every row is bounded; out [2] the sign count's change, [3]
   * entries walked, [5] where it stopped). Every array must be a view of this heap. Returns 0 when the
   * candidates are done, 1 at a column that widens its bounds, 2 at one that is not finite (that
   * column untouched: the caller takes it).
   */
  delta(n: number, cand: Int32Array | null, x: Float32Array, xOff: number, colBits: Uint32Array, kern: DeltaArrays,
    mark: Uint16Array, y: Float32Array, rows: Int32Array, changed: Int32Array, cur: number, t0: number): number {
    return this.deltaFn(n, cand === null ? -1 : cand.byteOffset, x.byteOffset + 4 * xOff, colBits.byteOffset, kern.rowIdx.byteOffset,
      kern.values.byteOffset, mark.byteOffset, y.byteOffset, rows.byteOffset, kern.track.byteOffset, changed.byteOffset, cur, t0,
      kern.io.byteOffset);
  }

  /**
   * wasm-gdn-kernels.ts dots over a value head: S (dk × dv), x from xOff, its rows' non-zero marks,
   * out from outOff, the scan's list `idx` and the kernel's scratch block `scr` (gdnDotsScratchLength
   * int32: the dot list, the rows not known to be +0, the any-flags, then io). Every array must be
   * a view of this heap and hasGdnKernels true. Returns 0, 1 (some x_i not finite: the dots not
   * done) or 2 (some out_j NaN).
   */
  gdnDots(S: Float32Array, x: Float32Array, xOff: number, rowNonZero: Uint8Array, dk: number, dv: number, kindPos: boolean,
    out: Float32Array, outOff: number, idx: Int32Array, scr: Int32Array): number {
    return this.gdnDotsFn(S.byteOffset, x.byteOffset + 4 * xOff, rowNonZero.byteOffset, dk, dv, kindPos ? 1 : 0,
      out.byteOffset + 4 * outOff, idx.byteOffset, scr.byteOffset);
  }

  /**
   * wasm-gdn-kernels.ts delta: δ_j = fl(fl(v_j − kv_j)·β) for j < dv into delta; bit 0 of the
   * result set when every δ_j is finite, bit 1 when every δ_j is ±0. β must be a float32 value.
   */
  gdnDelta(v: Float32Array, vOff: number, kv: Float32Array, kvOff: number, beta: number, delta: Float32Array, dv: number): number {
    return this.gdnDeltaFn(v.byteOffset + 4 * vOff, kv.byteOffset + 4 * kvOff, beta, delta.byteOffset, dv);
  }

  /**
   * wasm-gdn-kernels.ts keyRows: S_ij ← fl(S_ij + fl(k_i·δ_j)) over the rows i = idx[t], t < kn
   * (k from kOff), when every new entry is finite and not −0: then rowNonZero[i] = 1, io[0] the
   * greatest |S_ij| written, and 1 | 2 (some entry written ≠ 0) | 4 (some < 0) returned; otherwise
   * 0, nothing written. Every array must be a view of this heap, dv a multiple of 4.
   */
  gdnKeyRows(S: Float32Array, k: Float32Array, kOff: number, idx: Int32Array, kn: number, delta: Float32Array, dv: number,
    rowNonZero: Uint8Array, io: Float32Array): number {
    return this.keyRowsFn(S.byteOffset, k.byteOffset + 4 * kOff, idx.byteOffset, kn, delta.byteOffset, dv, rowNonZero.byteOffset, io.byteOffset);
  }

  /**
   * wasm-gdn-kernels.ts l2norm: out[outOff…] ← gdn-token.ts l2normSeq of x[xOff…] (n entries, a
   * multiple of 4) scaled by s (a float32 value), with `nz` (n int32) as scratch; 0 when done, 1
   * when r is not finite and positive (out then holds x; the caller runs its JavaScript). Every
   * array must be a view of this heap.
   */
  gdnL2norm(x: Float32Array, xOff: number, n: number, out: Float32Array, outOff: number, s: number, nz: Int32Array): number {
    return this.l2normFn(x.byteOffset + 4 * xOff, n, out.byteOffset + 4 * outOff, s, nz.byteOffset);
  }

  /**
   * wasm-gdn-kernels.ts convActivate over the control block `ctl` (CONV_CTL): the channels of the
   * listed rows (or every channel) whose input moved join the active list; returns their count.
   */
  convActivate(ctl: Int32Array): number {
    return this.convActivateFn(ctl.byteOffset);
  }

  /**
   * wasm-gdn-kernels.ts convChannels over `ctl`: the active channels from ctl's resume index on;
   * 0 when done, 1 at a channel left to the caller (non-finite taps or fold; ctl says where).
   */
  convChannels(ctl: Int32Array): number {
    return this.convChannelsFn(ctl.byteOffset);
  }

  /**
   * wasm-gdn-kernels.ts gatedNorm over `ctl` (NORM_CTL): the heads from ctl's resume index on;
   * 0 when done, 1 at a head left to the caller (a NaN output; ctl says which, and the changed count).
   */
  gatedNorm(ctl: Int32Array): number {
    return this.gatedNormFn(ctl.byteOffset);
  }

  /**
   * wasm-residual-kernels.ts addLists: o_i = fl(x_i + b_i) for the indices of list a (aN), then of
   * list b (bN), the ones whose bits moved appended to `changed`; every array must be a view of
   * this heap. Returns 0 when done, 1 at a NaN sum (not stored); `appended` is the appended count
   * either way.
   */
  addLists(x: Float32Array, b: Float32Array, o: Float32Array, a: Int32Array, aN: number, bList: Int32Array, bN: number,
    changed: Int32Array): number {
    return this.addListsFn(x.byteOffset, b.byteOffset, o.byteOffset, a.byteOffset, aN, bList.byteOffset, bN, changed.byteOffset,
      this.addIo.byteOffset);
  }

  /**
   * wasm-residual-kernels.ts normListed: when every listed x_j is finite and its square absorbed in
   * the prefixes P (NormSite), ov_i = fl(fl(x_i·r)·w1_i) at the listed indices, the ones whose bits
   * moved appended to `changed`, and their count returned; otherwise −1, nothing written. r and
   * every w1_i must be finite (r a float32 value), every array a view of this heap.
   */
  normListed(x: Float32Array, P: Float32Array, list: Int32Array, n: number, w1: Float32Array, ov: Float32Array,
    changed: Int32Array, r: number): number {
    return this.normListedFn(x.byteOffset, P.byteOffset, list.byteOffset, n, w1.byteOffset, ov.byteOffset, changed.byteOffset, r);
  }

  /**
   * wasm-fold-kernel.ts foldColumns: an incremental matmul's first fold from its column records
   * (bits and entry ranges written) over columns [0, colEnd): M_c, L_c, the reached rows' bounds,
   * NO_LOW − G and marks, the folds in y, the reached rows listed in `list` and the ones to refold
   * in `refold`, whose count it returns. Every array must be a view of this heap.
   */
  foldColumns(colEnd: number, colBits: Uint32Array, rowIdx: Uint16Array, values: Float32Array, y: Float32Array, rowBound: Float64Array,
    rowLowGap: Uint16Array, mark: Uint16Array, list: Int32Array, refold: Int32Array): number {
    return this.foldColumnsFn(colEnd, colBits.byteOffset, rowIdx.byteOffset, values.byteOffset, y.byteOffset, rowBound.byteOffset,
      rowLowGap.byteOffset, mark.byteOffset, list.byteOffset, refold.byteOffset);
  }

  /** The number of indices the last addLists appended. */
  get appended(): number {
    return this.addIo[0]!;
  }

}

/** The int32 length of gdnDots' scratch block for a head of dk × dv: the dot and row lists, the any-flags and io. */
export function gdnDotsScratchLength(dk: number, dv: number): number {
  return 2 * dk + dv + 8;
}
