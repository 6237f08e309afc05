/**
 * The decode's hottest loops as WebAssembly functions (the emitter of their module): the incremental
 * matmul's pass over its changed columns and their walks (delta.ts deltaLinearIn), or the walks
 * alone, and the SwiGLU of the units they reached (mlp.ts swigluDelta). The residual stream's list
 * loops (wasm-residual-kernels.ts) and an incremental matmul's first fold (wasm-fold-kernel.ts) are
 * functions of this module too; the GDN step's kernels are a module of their own
 * (wasm-gdn-kernels.ts). The runtime compiles both from their stored bytes (wasm-kernel-bytes.ts,
 * written by `npx tsx tools/wasm-kernel-bytes.ts --write`) and instantiates them on one memory per
 * context (wasm-heap.ts WasmHeap).
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
 * castRowsBf16(nr, rowsAt, accAt, yAt): y_r ← bf(acc_r) (wasm-emit.ts bf16Of) for r = rows[t], t < nr
 * (float32 acc and y, int32 rows): the bf16 outputs of the rows an incremental matmul reached.
 *
 * swiglu(nr, rowsAt, n, goAt, hAt, changedAt, form) → nch (gate at goAt + 4i, up at goAt + 4(n + i),
 * float32; h float32; rows and changed int32): for t < nr, with r = rows[t] and unit i = r < n ? r :
 * r − n, h[i] ← float32(silu32(g_i) · double(u_i)) (g_i = ±0 passes through) and i is appended to
 * changed when h[i]'s bits moved. silu32 (numeric.ts): ±0 → itself, g ≥ 17 → g, g ≤ −89 (not −∞)
 * → −0, otherwise the imported env.siluFormula(g, form) (form 0 'mul', 1 'div'): numeric.ts's own
 * formula, called back in JavaScript (no exp in wasm; a compiled chip's units sit at the saturated
 * ends, so the call is rare). Returns the changed count. Preconditions: addresses in range, n and
 * every r < 2n below 2^30. swigluBf16 is swiglu with the bf16 profile's casts (mlp.ts): h[i] ←
 * bf(float32(bf(silu32(g_i)) · double(u_i))) (wasm-emit.ts bf16Of).
 */
import { residualKernelFns } from './wasm-residual-kernels.ts';
import { foldKernelFns } from './wasm-fold-kernel.ts';
import { addr, at4, bf16Of, F64, f64c, get, I32, i32, inc, kernelModuleOf, lowbitOf, mem, OP, set, tee, whileLess } from './wasm-emit.ts';
import { TRACK } from './wasm-layout.ts';
import { SATURATE_ONE_FROM, SATURATE_ZERO_TO } from './numeric.ts';


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

// swiglu's locals: its seven parameters, then five int32, two float64 and one int32 (bf16Of's)
const A = { nr: 0, rowsAt: 1, n: 2, goAt: 3, hAt: 4, changedAt: 5, form: 6, t: 7, i: 8, old: 9, nch: 10, at: 11, g: 12, s: 13, b: 14 } as const;
/** swiglu's body; `bf16`: swigluBf16's, with bf16's two casts (module comment). */
const swigluBody = (bf16: boolean): number[] => [
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
  ...get(A.g), ...f64c(SATURATE_ONE_FROM), OP.f64Ge, OP.if, OP.f64Block,
  ...get(A.g),
  OP.else,
  ...get(A.g), ...f64c(SATURATE_ZERO_TO), OP.f64Le, ...get(A.g), ...f64c(-Infinity), OP.f64Ne, OP.i32And, OP.if, OP.f64Block,
  ...f64c(-0),
  OP.else,
  ...get(A.g), ...get(A.form), OP.call, 0,
  OP.end, OP.end, OP.end,
  // (bf16: s = bf(s), the activation's output cast)
  ...(bf16 ? [OP.f32DemoteF64, ...bf16Of(A.b), OP.f64PromoteF32] : []),
  ...set(A.s),
  // h[i] = float32(s · u) (bf16: bf of it)
  ...get(A.at),
  ...get(A.s), ...get(A.goAt), ...get(A.n), ...get(A.i), OP.i32Add, ...i32(2), OP.i32Shl, OP.i32Add, ...mem(OP.f32Load, 2), OP.f64PromoteF32, OP.f64Mul,
  OP.f32DemoteF64, ...(bf16 ? bf16Of(A.b) : []), ...mem(OP.f32Store, 2),
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

// castRowsBf16's locals: its four parameters, then three int32
const R = { nr: 0, rowsAt: 1, accAt: 2, yAt: 3, t: 4, r: 5, b: 6 } as const;
const castRowsBody: number[] = [
  ...i32(0), ...set(R.t),
  ...whileLess(R.t, get(R.nr), [
    ...at4(R.rowsAt, R.t), ...mem(OP.i32Load, 2), ...set(R.r),
    ...at4(R.yAt, R.r), ...at4(R.accAt, R.r), ...mem(OP.f32Load, 2), ...bf16Of(R.b), ...mem(OP.f32Store, 2),
    ...inc(R.t, 1),
  ]),
  OP.end,
];

/**
 * The kernels' module (wasm-emit.ts kernelModuleOf): silu32's formula imported as function 0;
 * `trackedUpdate` (function 1, which walk and delta call), `walk` (2), `swiglu` (3), `delta` (4),
 * wasm-residual-kernels.ts `addLists` (5) and `normListed` (6), wasm-fold-kernel.ts `foldColumns` (7)
 * and `foldInputs` (8), then the bf16 profile's `swigluBf16` (9), `addListsBf16` (10),
 * `normListedBf16` (11) and `castRowsBf16` (12) exported.
 */
export function kernelModuleBytes(): Uint8Array {
  return kernelModuleOf([
    {
      name: 'trackedUpdate', params: [...Array.from({ length: 7 }, () => I32), F64, F64], results: [I32], locals: [[3, I32], [5, F64]],
      body: trackedUpdateBody,
    },
    { name: 'walk', params: Array.from({ length: 10 }, () => I32), results: [I32], locals: [[13, I32], [3, F64]], body: walkBody },
    { name: 'swiglu', params: Array.from({ length: 7 }, () => I32), results: [I32], locals: [[5, I32], [2, F64]], body: swigluBody(false) },
    { name: 'delta', params: Array.from({ length: 14 }, () => I32), results: [I32], locals: [[21, I32], [3, F64]], body: deltaBody },
    ...residualKernelFns(false),
    ...foldKernelFns(),
    { name: 'swigluBf16', params: Array.from({ length: 7 }, () => I32), results: [I32], locals: [[5, I32], [2, F64], [1, I32]], body: swigluBody(true) },
    ...residualKernelFns(true),
    { name: 'castRowsBf16', params: [I32, I32, I32, I32], results: [], locals: [[3, I32]], body: castRowsBody },
  ]);
}
