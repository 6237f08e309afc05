/**
 * The GDN layer's step as WebAssembly functions: the recurrent step's 128-wide loops over a value
 * head (gdn-sparse-step.ts) with 4-lane float32 SIMD — the column dots kv_j = dot(S[:,j], k) and
 * o_j = dot(S[:,j], q) of a state whose entries are finite, and δ_j = fl(fl(v_j − kv_j)·β) with its
 * tests — the tracked conv step (gdn-tracked.ts trackedConvStep) and the tracked gated norm
 * (gdn-gated-norm.ts gatedNormHead). They run on the numeric context's wasm memory (wasm-kernels.ts
 * WasmHeap), which holds the states, the conv state, the layer's buffers, the track's records and
 * the step's scratch when they fit.
 *
 * Why: in JavaScript each of these loops pays, per element, a typed-array load and store with their
 * checks and a double↔float32 conversion; a value head's step ran them over 128 columns two to four
 * times (docs/benchmarks.md "The executor's round 30"). Four lanes at a time, with the same IEEE
 * float32 operations in the same order per lane, give the same bits: a float32 product or sum of
 * float32 operands is what JavaScript's double operation rounded to float32 gives (the double
 * result of +, −, × on float32 operands rounds to float32 without double-rounding error,
 * 53 ≥ 2·24 + 2).
 *
 * dots(sAt, xAt, rnzAt, dk, dv, kindPos, outAt, idxAt, scrAt) → status (byte addresses; S float32
 * [dk × dv] row-major, x float32 [dk], rowNonZero uint8 [dk], out float32 [dv], idx int32 [dk]); dk
 * and dv multiples of 4. The scratch block at scrAt holds the dot list (dk int32), the rows not
 * known to be +0 (dk int32), the columns' any-flags (dv int32) and io (5 int32). It is
 * gdn-sparse-step.ts nonZeroIndices with a dot list, then columnDotsInto:
 *  - the scan: idx ← the i with x_i ≠ 0 (NaN included), in order, n of them; the dot list ← those
 *    with rowNonZero[i] ≠ 0 or x_i not finite, nd of them; io ← [n, nd, 1 if every x_i is finite,
 *    negOff (every x_i in a row with rowNonZero = 0 has its sign bit set: x < 0 or x = −0, a NaN
 *    never), every (every x_i has)]. With some x_i not finite it returns 1 here (the caller runs
 *    its JavaScript dots; idx and io stand).
 *  - the dots: sign = kindPos ? every : −1 (kindPos: the state is STATE_POS or STATE_ZERO); out_j ←
 *    −0, then for each t < nd in order, p = fl(S[r_t, j]·x_r) and out_j ← fl(out_j + p) where p ≠ 0;
 *    then a column whose sum is ±0 takes +0 if some p ≠ 0 was added (it is +0 already: once
 *    non-zero, a sum comes back to zero only by exact cancellation, which rounds to +0), else the
 *    zero sum of its unvisited terms: +0 unless negOff, then −0 if sign = 1, +0 if sign = 0, and for
 *    sign = −1 +0 if some row i with rowNonZero[i] ≠ 0 gives p = fl(S[i, j]·x_i) with 1/p > 0,
 *    else −0. Such a p is ±0 or NaN (a row of x_i ≠ 0 with a non-zero p was visited, and the
 *    column would have had a p ≠ 0), so 1/p > 0 is "p is +0", a test of its bits.
 *  Returns 0, or 2 when some out_j is NaN (the caller recomputes in JavaScript, whose NaN bits are
 *  the reference's).
 *
 * delta(vAt, kvAt, beta, deltaAt, dv) → flags (beta a float32 value; dv a multiple of 4): δ_j ←
 * fl(fl(v_j − kv_j)·β) for j < dv; bit 0 set when every δ_j is finite, bit 1 when every δ_j is ±0
 * (a NaN is not). The caller recomputes δ in JavaScript when bit 0 is clear (NaN bits, as above).
 *
 * convActivate(ctlAt) → n and convChannels(ctlAt) → status, over a control block (CONV_CTL: the
 * arrays' addresses and the call's counts) — trackedConvStep's two loops. convActivate: each
 * channel c of the listed projection rows (c < zOff; or every c < convDim when rowsAt = −1) that
 * is not active and whose input bits differ from its newest tap's joins the active list; returns
 * and stores n. convChannels, for active entries i from `resume` to n: the channel's window after
 * its skipped shifts and this step's (taps j + nsh, then the newest, with the new input as the
 * newest tap) and its fold y (the single-tap product, or −0 + Σ_j fl(w_j·tap_j) in ascending j when
 * that is ±0 or more taps weigh), in float32; with a tap or y not finite it stops there (status 1,
 * `resume` = i, the channel untouched). Otherwise it writes the window, the record (lazySince −1,
 * the newest bits), conved[c] = silu32(y) (±0 and y ≥ 17 pass, y ≤ −89 gives −0, else
 * env.siluFormula(y, form) called back), marks the key or value head when conved[c]'s bits moved
 * (with the value head's count of entries beyond 2^126), and settles the channel (not moved, every
 * tap equal), makes it lazy (single-tap with y ≠ 0 and its taps from the weighed one on equal, or
 * the K − 1 shifted windows folding to y's bits; lazySince = step, listed once) or keeps it active
 * (compacted at m). Status 0 when done; m and the lazy count are stored either way.
 * convChannels4(ctlAt) is convChannels for K = 4 (the hosts' conv kernel: Qwen3.5 and Qwen3-Next)
 * with K baked in, its loops over the taps unrolled: the same operations in the same order, with
 * constant tap indices instead of a counter (2 µs a token less on the generic chip's decode at
 * qwen3.5-4b, docs/benchmarks.md "The executor's round 42"). The control block's K must be 4
 * (wasm-heap.ts convChannelsAt picks the function by K). convChannelsBf16 and convChannels4Bf16, for
 * the bf16 profile: conved[c] = bf(silu32(bf(y))) (gdn-token.ts convOutput), and a finite y whose
 * bf(y) is ±∞ is left to JavaScript as a non-finite fold is (silu32 of −∞ is NaN).
 *
 * gatedNorm(ctlAt) → status, over a control block (NORM_CTL) — gdn-gated-norm.ts gatedNormHead for
 * the value heads h from `resume` to hv of a step that is not fresh (dv a multiple of 4). A head
 * is passed over unless `full` or coreChanged[h] ≠ 0. A head whose record is kept (normKept)
 * lists the entries j whose o bits (when coreChanged has bit 0, or full) or z bits (bit 1, or
 * full) differ from normIn / normZ, four at a time (i32x4 compares and a lane mask); none: passed
 * over. Its sum acc (normAcc[h] when no o moved, else −0 + Σ_j fl(o_j²) in ascending j, float32)
 * equal to normAcc[h] (a float32 compare: a NaN sum never is): the listed entries are recomputed
 * with r = normR[h]. Otherwise, and for a head not kept, every entry with acc = the sum and r =
 * rsqrt32(fl(mean(acc) + fl(eps))) — mean fl(acc / dv) (meanDiv) or fl(acc·invN), rsqrt32 as
 * numeric.ts takes it in double (sqrt, rounded to float32, 1 / that, rounded) — and acc, r and
 * normKept[h] = 1 stored. An entry is fl(fl(w_j·fl(o_j·r))·silu32(z_j)), silu32 as convChannels
 * takes it (z may also be −∞ or NaN: the formula, called back). The outputs are computed into
 * the block's scratch first: with one NaN the call stops at the head (status 1, `resume` = h,
 * nothing of the head written; its NaN bits are JavaScript's to give). Otherwise each computed
 * entry's o and z bits go to normIn / normZ, its output to normed, and o0 + j is appended to the
 * changed list when the output's bits moved (the count `nc` in and out). Status 0 when done.
 * gatedNormBf16 is gatedNorm for the bf16 profile: an entry is bf(fl(bf(fl(w_j·bf(fl(o_j·r))))·
 * silu32(z_j))) (norms.ts gatedNormEntryBf16); sums, factors and tests are gatedNorm's.
 *
 * keyRows(sAt, kAt, idxAt, kn, deltaAt, dv, rnzAt, ioAt) → flags (byte addresses: S float32 [dk × dv]
 * row-major, k float32 from its offset, idx int32 [kn], δ float32 [dv], rowNonZero uint8, io one
 * float32; dv a multiple of 4) — gdn-sparse-step.ts updateKeyRows: for the rows i = idx[t], t < kn,
 * S_ij ← fl(S_ij + fl(k_i·δ_j)) for every j. A first pass computes every new entry and tests it;
 * with one not finite or −0 the call returns 0 and writes nothing (the caller runs its JavaScript,
 * whose NaN bits and state kind are the reference's). Otherwise a second pass writes the same
 * lanes, sets rowNonZero[i] = 1, stores the greatest |S_ij| written at io, and returns 1 | 2 (some
 * written entry ≠ 0) | 4 (some written entry < 0).
 *
 * l2norm(xAt, n, outAt, s, nzAt) → status (x, out float32 [n], n a multiple of 4; nz int32 [n]
 * scratch) — gdn-token.ts l2normSeq: out ← x, the sum acc = −0 + Σ fl(x_i²) over the x_i ≠ 0 in
 * ascending i (each fl(acc + fl(x_i²)), float32), r = fl(1 / fl(sqrt(fl(acc + fl(1e−6))))) in
 * float32 (both correctly rounded, as JavaScript's double sqrt and division rounded to float32 are);
 * with r finite and positive, out_i ← fl(fl(x_i·r)·s) at those i (fl(y·1) = y: s = 1 gives
 * fl(x_i·r)) and 0 is returned; otherwise 1, with out holding x (the caller runs its JavaScript).
 */
import {
  at4, bf16Of, F32, F64, f64c, get, I32, i32, inc, kernelModuleOf, mem, OP, push, set, simd, SIMD, splatConst, tee, V128, vmem, whileLess,
} from './wasm-emit.ts';
import { CONV_CTL, CONV_CTL_WORDS, NORM_CTL, NORM_CTL_WORDS } from './wasm-layout.ts';
import { SATURATE_ONE_FROM, SATURATE_ZERO_TO } from './numeric.ts';

const ZEROS = splatConst(0);
const NEG_ZEROS = splatConst(-0x80000000);
const ONES = splatConst(-1);
const FLT_MAX = splatConst(0x7f7fffff);

/**
 * One row's operands for a pass over its columns, from the row index code `index` (pushing an
 * i32): local r ← the index, xs ← splat(x_r) (x float32 from xAt), rowAt ← row r of S (float32,
 * dv columns, from sAt). Locals are the kernel's own.
 */
const rowOperands = (index: number[], L: { r: number; x: number; xs: number; s: number; dv: number; rowAt: number }) => [
  ...index, ...set(L.r),
  ...at4(L.x, L.r), ...mem(OP.f32Load, 2), ...simd(SIMD.f32x4Splat), ...set(L.xs),
  ...get(L.s), ...get(L.r), ...get(L.dv), OP.i32Mul, ...i32(2), OP.i32Shl, OP.i32Add, ...set(L.rowAt),
];

/** Locals of dots: its nine parameters, then eighteen int32, two float32 and thirteen v128. */
const D = {
  sAt: 0, xAt: 1, rnzAt: 2, dk: 3, dv: 4, kindPos: 5, outAt: 6, idxAt: 7, scrAt: 8,
  i: 9, e: 10, n: 11, nd: 12, fin: 13, sign: 14, nzn: 15, t: 16, r: 17, rowAt: 18, g: 19, dotAt: 20, nzAt: 21, anyAt: 22,
  ioAt: 23, negOff: 24, every: 25, isFin: 26,
  xv: 27, xi: 28,
  v: 29, sgn: 30, allNegV: 31, everyV: 32, xs: 33, p: 34, m: 35, acc: 36, anyV: 37, nanAny: 38, need: 39, zs: 40, res: 41,
} as const;

/** dots' locals for rowOperands. */
const D_ROW = { r: D.r, x: D.xAt, xs: D.xs, s: D.sAt, dv: D.dv, rowAt: D.rowAt };

const ioStore = (slot: number, v: number[]) => [...get(D.ioAt), ...v, ...mem(OP.i32Store, 2, 4 * slot)];

/** The scalar part of the scan for entries e ∈ [i, i + 4) of a group with a non-zero lane. */
const scanLanes = [
  ...get(D.i), ...set(D.e),
  ...whileLess(D.e, [...get(D.i), ...i32(4), OP.i32Add], [
    ...at4(D.xAt, D.e), ...mem(OP.f32Load, 2), ...tee(D.xv), OP.f32Const, 0, 0, 0, 0, OP.f32Ne, OP.if, OP.void,
    ...push(D.idxAt, D.n, get(D.e)),
    ...get(D.xv), ...get(D.xv), OP.f32Sub, OP.f32Const, 0, 0, 0, 0, OP.f32Eq, ...tee(D.isFin), OP.i32Eqz, OP.if, OP.void,
    ...i32(0), ...set(D.fin),
    OP.end,
    ...get(D.rnzAt), ...get(D.e), OP.i32Add, ...mem(OP.i32Load8U, 0), ...i32(0), OP.i32Ne, ...get(D.isFin), OP.i32Eqz, OP.i32Or,
    OP.if, OP.void, ...push(D.dotAt, D.nd, get(D.e)), OP.end,
    OP.end,
    ...inc(D.e, 1),
  ]),
];

const scan = [
  ...i32(0), ...set(D.n), ...i32(0), ...set(D.nd), ...i32(1), ...set(D.fin),
  ...ONES, ...set(D.allNegV), ...ONES, ...set(D.everyV),
  ...i32(0), ...set(D.i),
  ...whileLess(D.i, get(D.dk), [
    ...at4(D.xAt, D.i), ...vmem(SIMD.load), ...tee(D.v),
    ...ZEROS, ...simd(SIMD.f32x4Lt), ...get(D.v), ...NEG_ZEROS, ...simd(SIMD.i32x4Eq), ...simd(SIMD.or), ...tee(D.sgn),
    ...get(D.everyV), ...simd(SIMD.and), ...set(D.everyV),
    ...get(D.rnzAt), ...get(D.i), OP.i32Add, ...vmem(SIMD.load32Zero),
    ...simd(SIMD.i16x8ExtendLowI8x16U), ...simd(SIMD.i32x4ExtendLowI16x8U), ...ZEROS, ...simd(SIMD.i32x4Ne),
    ...get(D.sgn), ...simd(SIMD.or), ...get(D.allNegV), ...simd(SIMD.and), ...set(D.allNegV),
    ...get(D.v), ...ZEROS, ...simd(SIMD.f32x4Ne), ...simd(SIMD.anyTrue), OP.if, OP.void,
    ...scanLanes,
    OP.end,
    ...inc(D.i, 4),
  ]),
  ...get(D.allNegV), ...simd(SIMD.i32x4AllTrue), ...set(D.negOff),
  ...get(D.everyV), ...simd(SIMD.i32x4AllTrue), ...set(D.every),
  ...ioStore(0, get(D.n)), ...ioStore(1, get(D.nd)), ...ioStore(2, get(D.fin)), ...ioStore(3, get(D.negOff)), ...ioStore(4, get(D.every)),
  ...get(D.fin), OP.i32Eqz, OP.if, OP.void, ...i32(1), OP.return, OP.end,
];

/** The zero sum's four lanes for the columns at byte offset g of a row (module comment): a v128 on the stack. */
const zeroSum = [
  ...get(D.negOff), OP.i32Eqz, OP.if, V128,
  ...ZEROS,
  OP.else,
  ...get(D.sign), ...i32(0), OP.i32GeS, OP.if, V128,
  ...NEG_ZEROS, ...ZEROS, ...get(D.sign), ...i32(1), OP.i32Eq, OP.select,
  OP.else,
  ...ZEROS, ...set(D.zs), // (zs: the lanes found +0 so far)
  ...i32(0), ...set(D.t),
  // over the rows until every lane that needs its zero sum has found a +0 term (as the JavaScript
  // returns at the first): the rows' loop with that exit
  OP.block, OP.void, OP.loop, OP.void,
  ...get(D.t), ...get(D.nzn), OP.i32GeU, OP.brIf, 1,
  ...at4(D.nzAt, D.t), ...mem(OP.i32Load, 2), ...set(D.r),
  ...get(D.sAt), ...get(D.r), ...get(D.dv), OP.i32Mul, ...i32(2), OP.i32Shl, OP.i32Add, ...get(D.g), OP.i32Add, ...vmem(SIMD.load),
  ...at4(D.xAt, D.r), ...mem(OP.f32Load, 2), ...simd(SIMD.f32x4Splat), ...simd(SIMD.f32x4Mul),
  ...ZEROS, ...simd(SIMD.i32x4Eq), ...get(D.zs), ...simd(SIMD.or), ...tee(D.zs),
  ...get(D.need), ...simd(SIMD.not), ...simd(SIMD.or), ...simd(SIMD.i32x4AllTrue), OP.brIf, 1,
  ...inc(D.t, 1),
  OP.br, 0,
  OP.end, OP.end,
  ...ZEROS, ...NEG_ZEROS, ...get(D.zs), ...simd(SIMD.bitselect),
  OP.end,
  OP.end,
];

const dvBytes = [...get(D.dv), ...i32(2), OP.i32Shl];

/**
 * dots' one-pass form, when sign ≥ 0 (a state of non-negative entries) and at most one row is
 * visited: every column's zero sum is then the same (+0, or −0 when negOff and sign = 1), and a
 * column's sum is the visited row's p = fl(S[r, j]·x_r) when p ≠ 0 (fl(−0 + p) = p), else that zero
 * sum — what the passes below give, without them. Returns 0, or 2 at a NaN p (as they do).
 */
const dotsOneRow = [
  ...get(D.sign), ...i32(0), OP.i32GeS, ...get(D.nd), ...i32(2), OP.i32LtU, OP.i32And, OP.if, OP.void,
  ...NEG_ZEROS, ...ZEROS, ...get(D.negOff), ...get(D.sign), ...i32(1), OP.i32Eq, OP.i32And, OP.select, ...set(D.zs),
  ...i32(0), ...set(D.g),
  ...get(D.nd), OP.i32Eqz, OP.if, OP.void,
  ...whileLess(D.g, dvBytes, [...get(D.outAt), ...get(D.g), OP.i32Add, ...get(D.zs), ...vmem(SIMD.store), ...inc(D.g, 16)]),
  ...i32(0), OP.return,
  OP.end,
  ...rowOperands([...get(D.dotAt), ...mem(OP.i32Load, 2)], D_ROW),
  ...ZEROS, ...set(D.nanAny),
  ...whileLess(D.g, dvBytes, [
    ...get(D.outAt), ...get(D.g), OP.i32Add,
    ...get(D.rowAt), ...get(D.g), OP.i32Add, ...vmem(SIMD.load), ...get(D.xs), ...simd(SIMD.f32x4Mul), ...tee(D.p),
    ...get(D.zs), ...get(D.p), ...ZEROS, ...simd(SIMD.f32x4Ne), ...simd(SIMD.bitselect), ...vmem(SIMD.store),
    ...get(D.p), ...get(D.p), ...simd(SIMD.f32x4Ne), ...get(D.nanAny), ...simd(SIMD.or), ...set(D.nanAny),
    ...inc(D.g, 16),
  ]),
  ...i32(2), ...i32(0), ...get(D.nanAny), ...simd(SIMD.anyTrue), OP.select, OP.return,
  OP.end,
];

const dotsBody = [
  ...get(D.scrAt), ...set(D.dotAt),
  ...get(D.dotAt), ...get(D.dk), ...i32(2), OP.i32Shl, OP.i32Add, ...set(D.nzAt),
  ...get(D.nzAt), ...get(D.dk), ...i32(2), OP.i32Shl, OP.i32Add, ...set(D.anyAt),
  ...get(D.anyAt), ...dvBytes, OP.i32Add, ...set(D.ioAt),
  ...scan,
  // sign, and the rows not known to be +0 when the zero sums need them
  ...get(D.every), ...i32(-1), ...get(D.kindPos), OP.select, ...set(D.sign),
  ...dotsOneRow,
  ...i32(0), ...set(D.nzn),
  ...get(D.sign), ...i32(0), OP.i32LtS, OP.if, OP.void,
  ...i32(0), ...set(D.i),
  ...whileLess(D.i, get(D.dk), [
    ...get(D.rnzAt), ...get(D.i), OP.i32Add, ...mem(OP.i32Load8U, 0), OP.if, OP.void, ...push(D.nzAt, D.nzn, get(D.i)), OP.end,
    ...inc(D.i, 1),
  ]),
  OP.end,
  // out ← −0, any ← 0
  ...i32(0), ...set(D.g),
  ...whileLess(D.g, dvBytes, [
    ...get(D.outAt), ...get(D.g), OP.i32Add, ...NEG_ZEROS, ...vmem(SIMD.store),
    ...get(D.anyAt), ...get(D.g), OP.i32Add, ...ZEROS, ...vmem(SIMD.store),
    ...inc(D.g, 16),
  ]),
  // the visited rows, in order
  ...i32(0), ...set(D.t),
  ...whileLess(D.t, get(D.nd), [
    ...rowOperands([...at4(D.dotAt, D.t), ...mem(OP.i32Load, 2)], D_ROW),
    ...i32(0), ...set(D.g),
    ...whileLess(D.g, dvBytes, [
      ...get(D.rowAt), ...get(D.g), OP.i32Add, ...vmem(SIMD.load), ...get(D.xs), ...simd(SIMD.f32x4Mul), ...tee(D.p),
      ...ZEROS, ...simd(SIMD.f32x4Ne), ...set(D.m),
      ...get(D.outAt), ...get(D.g), OP.i32Add,
      ...get(D.outAt), ...get(D.g), OP.i32Add, ...vmem(SIMD.load), ...tee(D.acc), ...get(D.p), ...simd(SIMD.f32x4Add),
      ...get(D.acc), ...get(D.m), ...simd(SIMD.bitselect), ...vmem(SIMD.store),
      ...get(D.anyAt), ...get(D.g), OP.i32Add,
      ...get(D.anyAt), ...get(D.g), OP.i32Add, ...vmem(SIMD.load), ...get(D.m), ...simd(SIMD.or), ...vmem(SIMD.store),
      ...inc(D.g, 16),
    ]),
    ...inc(D.t, 1),
  ]),
  // the sums that are ±0
  ...ZEROS, ...set(D.nanAny),
  ...i32(0), ...set(D.g),
  ...whileLess(D.g, dvBytes, [
    ...get(D.outAt), ...get(D.g), OP.i32Add, ...vmem(SIMD.load), ...set(D.acc),
    ...get(D.anyAt), ...get(D.g), OP.i32Add, ...vmem(SIMD.load), ...set(D.anyV),
    ...get(D.acc), ...get(D.acc), ...simd(SIMD.f32x4Ne), ...get(D.nanAny), ...simd(SIMD.or), ...set(D.nanAny),
    // (a ±0 sum of some p ≠ 0 is +0 already: once non-zero, a sum reaches zero only by exact
    // cancellation, which rounds to +0, and adds no ±0 after; the JavaScript sets it +0 anyway)
    ...get(D.acc), ...set(D.res),
    ...get(D.acc), ...ZEROS, ...simd(SIMD.f32x4Eq), ...get(D.anyV), ...simd(SIMD.andNot), ...tee(D.need), ...simd(SIMD.anyTrue), OP.if, OP.void,
    ...zeroSum, ...get(D.res), ...get(D.need), ...simd(SIMD.bitselect), ...set(D.res),
    OP.end,
    ...get(D.outAt), ...get(D.g), OP.i32Add, ...get(D.res), ...vmem(SIMD.store),
    ...inc(D.g, 16),
  ]),
  ...i32(2), ...i32(0), ...get(D.nanAny), ...simd(SIMD.anyTrue), OP.select,
  OP.end,
];

/** Locals of delta: its five parameters, then one int32 and four v128. */
const E = { vAt: 0, kvAt: 1, beta: 2, deltaAt: 3, dv: 4, g: 5, bs: 6, d: 7, finAll: 8, zeroAll: 9 } as const;
const deltaBody = [
  ...get(E.beta), ...simd(SIMD.f32x4Splat), ...set(E.bs),
  ...ONES, ...set(E.finAll), ...ONES, ...set(E.zeroAll),
  ...i32(0), ...set(E.g),
  ...whileLess(E.g, [...get(E.dv), ...i32(2), OP.i32Shl], [
    ...get(E.deltaAt), ...get(E.g), OP.i32Add,
    ...get(E.vAt), ...get(E.g), OP.i32Add, ...vmem(SIMD.load),
    ...get(E.kvAt), ...get(E.g), OP.i32Add, ...vmem(SIMD.load),
    ...simd(SIMD.f32x4Sub), ...get(E.bs), ...simd(SIMD.f32x4Mul), ...tee(E.d), ...vmem(SIMD.store),
    ...get(E.d), ...simd(SIMD.f32x4Abs), ...FLT_MAX, ...simd(SIMD.f32x4Le), ...get(E.finAll), ...simd(SIMD.and), ...set(E.finAll),
    ...get(E.d), ...ZEROS, ...simd(SIMD.f32x4Eq), ...get(E.zeroAll), ...simd(SIMD.and), ...set(E.zeroAll),
    ...inc(E.g, 16),
  ]),
  ...get(E.finAll), ...simd(SIMD.i32x4AllTrue),
  ...get(E.zeroAll), ...simd(SIMD.i32x4AllTrue), ...i32(1), OP.i32Shl, OP.i32Or,
  OP.end,
];

/**
 * The GDN kernels' module (wasm-emit.ts kernelModuleOf): silu32's formula imported as function 0;
 * `dots` (1), `delta` (2), `convActivate` (3), `convChannels` (4), `gatedNorm` (5), `keyRows` (6),
 * `l2norm` (7), `convChannels4` (8), and the bf16 profile's `convChannelsBf16` (9),
 * `convChannels4Bf16` (10) and `gatedNormBf16` (11) exported.
 */
export function gdnKernelModuleBytes(): Uint8Array {
  return kernelModuleOf([
    { name: 'dots', params: Array.from({ length: 9 }, () => I32), results: [I32], locals: [[18, I32], [2, F32], [13, V128]], body: dotsBody },
    { name: 'delta', params: [I32, I32, F32, I32, I32], results: [I32], locals: [[1, I32], [4, V128]], body: deltaBody },
    { name: 'convActivate', params: [I32], results: [I32], locals: CONV_LOCALS, body: convActivateBody },
    { name: 'convChannels', params: [I32], results: [I32], locals: CONV_LOCALS, body: convChannelsBody(convK(null), false) },
    { name: 'gatedNorm', params: [I32], results: [I32], locals: NORM_LOCALS, body: gatedNormBody(false) },
    { name: 'keyRows', params: Array.from({ length: 8 }, () => I32), results: [I32], locals: [[4, I32], [6, V128]], body: keyRowsBody },
    { name: 'l2norm', params: [I32, I32, I32, F32, I32], results: [I32], locals: [[5, I32], [3, F32], [1, V128]], body: l2normBody },
    { name: 'convChannels4', params: [I32], results: [I32], locals: CONV_LOCALS, body: convChannelsBody(convK(4), false) },
    { name: 'convChannelsBf16', params: [I32], results: [I32], locals: CONV_BF16_LOCALS, body: convChannelsBody(convK(null), true) },
    { name: 'convChannels4Bf16', params: [I32], results: [I32], locals: CONV_BF16_LOCALS, body: convChannelsBody(convK(4), true) },
    { name: 'gatedNormBf16', params: [I32], results: [I32], locals: NORM_BF16_LOCALS, body: gatedNormBody(true) },
  ]);
}


/** Locals of convActivate and convChannels: the control block's address, then int32, float32 and float64 locals. */
const C = {
  ctlAt: 0,
  rowsAt: 1, nRows: 2, m: 3, nLazy: 4, step: 5, n: 6, i: 7, chanAt: 8, activeAt: 9, lazyAt: 10, tapAtAt: 11, convAt: 12,
  cwAt: 13, mixedAt: 14, convedAt: 15, qDirtyAt: 16, kDirtyAt: 17, vDirtyAt: 18, vBeyondAt: 19, convDim: 20, zOff: 21,
  keyDim: 22, dk: 23, dv: 24, K: 25, form: 26, c: 27, rec: 28, base: 29, since: 30, nsh: 31, j: 32, at: 33, single: 34,
  moved: 35, before: 36, after: 37, t: 38, winAt: 39, bad: 40, h: 41, cwBase: 42, bits: 43,
  sw: 44, y: 45, v: 46, x: 47,
  s: 48,
  // the bf16 functions' two more: bf(y), and bf16Of's int32
  yb: 49, cb: 50,
} as const;
const CONV_I32_LOCALS = 43; // 1 … 43
const word = (w: number) => [...get(C.ctlAt), ...mem(OP.i32Load, 2, 4 * w)];
const setWord = (w: number, v: number[]) => [...get(C.ctlAt), ...v, ...mem(OP.i32Store, 2, 4 * w)];
const loadCtl = (names: (keyof typeof CONV_CTL & keyof typeof C)[]) => names.flatMap((k) => [...word(CONV_CTL[k]), ...set(C[k])]);
const f32c = (v: number) => { const b = new Uint8Array(4); new DataView(b.buffer).setFloat32(0, v, true); return [OP.f32Const, ...b]; };
/** base + index·4 (index an i32 local or code). */
const plus4 = (base: number, index: number[]) => [...get(base), ...index, ...i32(2), OP.i32Shl, OP.i32Add];
/** The channel record's word k (chan[4c + k]) address. */
const recWord = (k: number) => [...get(C.rec), ...i32(4 * k), OP.i32Add];

/** A channel becomes active when not active and its input's bits differ from its newest tap's (gdn-tracked.ts trackedConvStep). */
const activateChannel = [
  ...get(C.chanAt), ...get(C.c), ...i32(4), OP.i32Shl, OP.i32Add, ...set(C.rec),
  ...get(C.rec), ...mem(OP.i32Load, 2, 4), ...i32(1), OP.i32And, OP.i32Eqz,
  ...plus4(C.mixedAt, get(C.c)), ...mem(OP.i32Load, 2), ...get(C.rec), ...mem(OP.i32Load, 2, 12), OP.i32Ne, OP.i32And,
  OP.if, OP.void,
  ...get(C.rec), ...get(C.rec), ...mem(OP.i32Load, 2, 4), ...i32(1), OP.i32Or, ...mem(OP.i32Store, 2, 4),
  ...plus4(C.activeAt, get(C.n)), ...get(C.c), ...mem(OP.i32Store, 2), ...inc(C.n, 1),
  OP.end,
];

const convActivateBody = [
  ...loadCtl(['rowsAt', 'nRows', 'chanAt', 'activeAt', 'mixedAt', 'convDim', 'zOff']),
  ...word(CONV_CTL.nActive), ...set(C.n),
  ...get(C.rowsAt), ...i32(-1), OP.i32Eq, OP.if, OP.void,
  ...i32(0), ...set(C.c),
  ...whileLess(C.c, get(C.convDim), [...activateChannel, ...inc(C.c, 1)]),
  OP.else,
  ...i32(0), ...set(C.t),
  ...whileLess(C.t, get(C.nRows), [
    ...plus4(C.rowsAt, get(C.t)), ...mem(OP.i32Load, 2), ...tee(C.c), ...get(C.zOff), OP.i32LtS, OP.if, OP.void, ...activateChannel, OP.end,
    ...inc(C.t, 1),
  ]),
  OP.end,
  ...setWord(CONV_CTL.n, get(C.n)),
  ...get(C.n),
  OP.end,
];

/** The window's tap j (scratch, float32) and the state's tap j of this channel (float32), as addresses. */
const winTap = (j: number[]) => plus4(C.winAt, j);
const stateTap = (j: number[]) => plus4(C.base, j);
const cwTap = (j: number[]) => plus4(C.cwBase, j);
const Km1 = [...get(C.K), ...i32(1), OP.i32Sub];

/**
 * The conv kernel's code for a kernel size: `null` reads K from the control block (any K, loops
 * over the taps); a number bakes it in (the loops unrolled, their indices constants).
 */
interface ConvK {
  K: number[];
  Km1: number[];
  /**
   * body(j) for j ∈ [from, K − cut), j counted in `local` when looped; `from` a constant or a
   * local (unrolled: every j, each body under the test j ≥ from).
   */
  taps: (local: number, from: number | { local: number }, cut: 0 | 1, body: (j: number[]) => number[]) => number[];
}
const convK = (k: number | null): ConvK => k === null
  ? {
    K: get(C.K), Km1,
    taps: (local, from, cut, body) => [
      ...(typeof from === 'number' ? i32(from) : get(from.local)), ...set(local),
      ...whileLess(local, cut ? Km1 : get(C.K), [...body(get(local)), ...inc(local, 1)]),
    ],
  }
  : {
    K: i32(k), Km1: i32(k - 1),
    taps: (_local, from, cut, body) => {
      const lo = typeof from === 'number' ? from : 0;
      return Array.from({ length: Math.max(0, k - cut - lo) }, (_, i) => {
        const j = i32(lo + i);
        return typeof from === 'number' ? body(j) : [...j, ...get(from.local), OP.i32GeS, OP.if, OP.void, ...body(j), OP.end];
      }).flat();
    },
  };

/** Taps j ∈ [from, K − 1) of the state equal (bits) its newest: an i32 on the stack (1 when so). `from`: 0, or local C.at. */
const tapsEqualFrom = (kc: ConvK, from: number | { local: number }) => [
  ...i32(1), ...set(C.bad), // (bad: here "all equal so far")
  ...stateTap(kc.Km1), ...mem(OP.i32Load, 2), ...set(C.bits),
  ...kc.taps(C.j, from, 1, (j) => [
    ...stateTap(j), ...mem(OP.i32Load, 2), ...get(C.bits), OP.i32Ne, OP.if, OP.void, ...i32(0), ...set(C.bad), OP.end,
  ]),
  ...get(C.bad),
];

/**
 * steadyAhead (gdn-tracked.ts): for s = 1 … K − 1 the fold of the window shifted by s (taps j + s,
 * then the newest) equals y bit for bit: an i32 on the stack.
 */
const steadyAhead = (kc: ConvK) => [
  ...i32(1), ...set(C.bad),
  ...stateTap(kc.Km1), ...mem(OP.f32Load, 2), ...set(C.x),
  ...kc.taps(C.t, 1, 0, (t) => [
    ...f32c(-0), ...set(C.v),
    ...kc.taps(C.j, 0, 0, (j) => [
      ...get(C.v),
      ...cwTap(j), ...mem(OP.f32Load, 2),
      ...stateTap([...j, ...t, OP.i32Add]), ...mem(OP.f32Load, 2), ...get(C.x),
      ...j, ...t, OP.i32Add, ...kc.K, OP.i32LtS, OP.select,
      OP.f32Mul, OP.f32Add, ...set(C.v),
    ]),
    ...get(C.v), OP.i32ReinterpretF32, ...get(C.y), OP.i32ReinterpretF32, OP.i32Ne, OP.if, OP.void, ...i32(0), ...set(C.bad), OP.end,
  ]),
  ...get(C.bad),
];

const bailOut = [
  ...setWord(CONV_CTL.resume, get(C.i)), ...setWord(CONV_CTL.m, get(C.m)), ...setWord(CONV_CTL.nLazy, get(C.nLazy)),
  ...i32(1), OP.return,
];
/** beyondVBound of the bits in local l: (bits & 0x7fffffff) > 0x7e800000. */
const beyond = (l: number) => [...get(l), ...i32(0x7fffffff), OP.i32And, ...i32(0x7e800000), OP.i32GtS];

/** convChannels' body for a kernel size; `bf16`: with the bf16 profile's casts (convChannelsBf16, module comment). */
const convChannelsBody = (kc: ConvK, bf16: boolean) => [
  ...loadCtl(['nLazy', 'step', 'n', 'chanAt', 'activeAt', 'lazyAt', 'tapAtAt', 'convAt', 'cwAt', 'mixedAt', 'convedAt',
    'qDirtyAt', 'kDirtyAt', 'vDirtyAt', 'vBeyondAt', 'keyDim', 'dk', 'dv', 'K', 'form']),
  ...word(CONV_CTL.resume), ...set(C.i),
  ...word(CONV_CTL.m), ...set(C.m),
  ...get(C.ctlAt), ...i32(4 * CONV_CTL_WORDS), OP.i32Add, ...set(C.winAt),
  ...whileLess(C.i, get(C.n), [
    ...plus4(C.activeAt, get(C.i)), ...mem(OP.i32Load, 2), ...set(C.c),
    ...get(C.chanAt), ...get(C.c), ...i32(4), OP.i32Shl, OP.i32Add, ...set(C.rec),
    ...get(C.convAt), ...get(C.c), ...kc.K, OP.i32Mul, ...i32(2), OP.i32Shl, OP.i32Add, ...set(C.base),
    ...get(C.cwAt), ...get(C.c), ...kc.K, OP.i32Mul, ...i32(2), OP.i32Shl, OP.i32Add, ...set(C.cwBase),
    // the shifts a lazy channel skipped and this step's: nsh = since ≥ 0 ? min(step − 1 − since, K − 1) + 1 : 1
    ...get(C.rec), ...mem(OP.i32Load, 2), ...tee(C.since),
    ...i32(0), OP.i32GeS, OP.if, I32,
    ...get(C.step), ...i32(1), OP.i32Sub, ...get(C.since), OP.i32Sub, ...tee(C.nsh),
    ...kc.Km1, ...get(C.nsh), ...kc.Km1, OP.i32LtS, OP.select, ...i32(1), OP.i32Add,
    OP.else, ...i32(1), OP.end, ...set(C.nsh),
    // the shifted window into the scratch, the new input as its newest tap; every tap finite, or JavaScript takes the channel
    ...stateTap(kc.Km1), ...mem(OP.f32Load, 2), ...set(C.x),
    ...kc.taps(C.j, 0, 1, (j) => [
      ...winTap(j),
      ...stateTap([...j, ...get(C.nsh), OP.i32Add]), ...mem(OP.f32Load, 2), ...get(C.x),
      ...j, ...get(C.nsh), OP.i32Add, ...kc.K, OP.i32LtS, OP.select,
      ...mem(OP.f32Store, 2),
    ]),
    ...winTap(kc.Km1), ...plus4(C.mixedAt, get(C.c)), ...mem(OP.f32Load, 2), ...mem(OP.f32Store, 2),
    ...i32(0), ...set(C.bad),
    ...kc.taps(C.j, 0, 0, (j) => [
      ...winTap(j), ...mem(OP.f32Load, 2), ...tee(C.v), ...get(C.v), OP.f32Sub, ...f32c(0), OP.f32Ne, ...get(C.bad), OP.i32Or, ...set(C.bad),
    ]),
    ...get(C.bad), OP.if, OP.void, ...bailOut, OP.end,
    // the fold: a single-tap channel's product, or the whole fold when it is ±0 or more taps weigh
    ...get(C.rec), ...mem(OP.f32Load, 2, 8), ...tee(C.sw), ...get(C.sw), OP.f32Eq, ...set(C.single),
    ...get(C.tapAtAt), ...get(C.c), OP.i32Add, ...mem(OP.i32Load8U, 0), ...kc.Km1, ...get(C.single), OP.select, ...set(C.at),
    ...get(C.sw), ...winTap(get(C.at)), ...mem(OP.f32Load, 2), OP.f32Mul, ...f32c(0), ...get(C.single), OP.select, ...tee(C.y),
    ...f32c(0), OP.f32Eq, OP.if, OP.void,
    ...f32c(-0), ...set(C.y),
    ...kc.taps(C.j, 0, 0, (j) => [
      ...get(C.y), ...cwTap(j), ...mem(OP.f32Load, 2), ...winTap(j), ...mem(OP.f32Load, 2), OP.f32Mul, OP.f32Add, ...set(C.y),
    ]),
    OP.end,
    ...get(C.y), ...get(C.y), OP.f32Sub, ...f32c(0), OP.f32Ne, OP.if, OP.void, ...bailOut, OP.end,
    // (bf16: the output's input is bf(y), which rounds the largest finite folds to ±∞: JavaScript takes those)
    ...(bf16 ? [...get(C.y), ...bf16Of(C.cb), ...tee(C.yb), ...get(C.yb), OP.f32Sub, ...f32c(0), OP.f32Ne, OP.if, OP.void, ...bailOut, OP.end] : []),
    // commit: the window, the record's lazySince and newest bits
    ...kc.taps(C.j, 0, 0, (j) => [...stateTap(j), ...winTap(j), ...mem(OP.i32Load, 2), ...mem(OP.i32Store, 2)]),
    ...get(C.since), ...i32(0), OP.i32GeS, OP.if, OP.void, ...get(C.rec), ...i32(-1), ...mem(OP.i32Store, 2), OP.end,
    ...plus4(C.mixedAt, get(C.c)), ...mem(OP.i32Load, 2), ...tee(C.bits), ...get(C.rec), ...mem(OP.i32Load, 2, 12), OP.i32Ne, ...set(C.moved),
    ...get(C.rec), ...get(C.bits), ...mem(OP.i32Store, 2, 12),
    // the output silu32(y): ±0 and y ≥ 17 pass, y ≤ −89 gives −0 (y is finite), else the formula
    // (bf16: bf(silu32(bf(y))), gdn-token.ts convOutput)
    ...plus4(C.convedAt, get(C.c)), ...mem(OP.i32Load, 2), ...set(C.before),
    ...plus4(C.convedAt, get(C.c)),
    ...get(yIn(bf16)), ...f32c(0), OP.f32Eq, ...get(yIn(bf16)), ...f32c(SATURATE_ONE_FROM), OP.f32Ge, OP.i32Or, OP.if, F64,
    ...get(yIn(bf16)), OP.f64PromoteF32,
    OP.else,
    ...get(yIn(bf16)), ...f32c(SATURATE_ZERO_TO), OP.f32Le, OP.if, F64,
    ...f64c(-0),
    OP.else,
    ...get(yIn(bf16)), OP.f64PromoteF32, ...get(C.form), OP.call, 0,
    OP.end, OP.end,
    OP.f32DemoteF64, ...(bf16 ? bf16Of(C.cb) : []), ...mem(OP.f32Store, 2),
    ...plus4(C.convedAt, get(C.c)), ...mem(OP.i32Load, 2), ...tee(C.after), ...get(C.before), OP.i32Ne, OP.if, OP.void,
    ...get(C.c), ...get(C.keyDim), OP.i32LtS, OP.if, OP.void,
    ...get(C.qDirtyAt), ...get(C.c), ...get(C.dk), OP.i32DivU, OP.i32Add, ...i32(1), ...mem(OP.i32Store8, 0),
    OP.else,
    ...get(C.c), ...get(C.keyDim), ...i32(1), OP.i32Shl, OP.i32LtS, OP.if, OP.void,
    ...get(C.kDirtyAt), ...get(C.c), ...get(C.keyDim), OP.i32Sub, ...get(C.dk), OP.i32DivU, OP.i32Add, ...i32(1), ...mem(OP.i32Store8, 0),
    OP.else,
    ...get(C.c), ...get(C.keyDim), ...i32(1), OP.i32Shl, OP.i32Sub, ...get(C.dv), OP.i32DivU, ...set(C.h),
    ...get(C.vDirtyAt), ...get(C.h), OP.i32Add, ...i32(1), ...mem(OP.i32Store8, 0),
    ...plus4(C.vBeyondAt, get(C.h)), ...plus4(C.vBeyondAt, get(C.h)), ...mem(OP.i32Load, 2),
    ...beyond(C.after), OP.i32Add, ...beyond(C.before), OP.i32Sub, ...mem(OP.i32Store, 2),
    OP.end, OP.end,
    OP.end,
    // settled (not moved, every tap equal), lazy (the same fold while the input stays), or still active
    ...get(C.moved), OP.i32Eqz, OP.if, I32, ...tapsEqualFrom(kc, 0), OP.else, ...i32(0), OP.end,
    OP.if, OP.void,
    ...recWord(1), ...get(C.rec), ...mem(OP.i32Load, 2, 4), ...i32(-2), OP.i32And, ...mem(OP.i32Store, 2),
    OP.else,
    ...get(C.single), ...get(C.y), ...f32c(0), OP.f32Ne, OP.i32And, OP.if, I32,
    ...tapsEqualFrom(kc, { local: C.at }),
    OP.else,
    ...steadyAhead(kc),
    OP.end,
    OP.if, OP.void,
    ...get(C.rec), ...get(C.step), ...mem(OP.i32Store, 2),
    ...get(C.rec), ...mem(OP.i32Load, 2, 4), ...i32(2), OP.i32And, OP.i32Eqz, OP.if, OP.void,
    ...plus4(C.lazyAt, get(C.nLazy)), ...get(C.c), ...mem(OP.i32Store, 2), ...inc(C.nLazy, 1),
    OP.end,
    ...get(C.rec), ...i32(2), ...mem(OP.i32Store, 2, 4),
    OP.else,
    ...plus4(C.activeAt, get(C.m)), ...get(C.c), ...mem(OP.i32Store, 2), ...inc(C.m, 1),
    OP.end,
    OP.end,
    ...inc(C.i, 1),
  ]),
  ...setWord(CONV_CTL.resume, get(C.i)), ...setWord(CONV_CTL.m, get(C.m)), ...setWord(CONV_CTL.nLazy, get(C.nLazy)),
  ...i32(0),
  OP.end,
];
const CONV_LOCALS: number[][] = [[CONV_I32_LOCALS, I32], [4, F32], [1, F64]];
const CONV_BF16_LOCALS: number[][] = [...CONV_LOCALS, [1, F32], [1, I32]];
/** The local the conv output's SiLU reads: y, or bf(y) in the bf16 functions. */
const yIn = (bf16: boolean) => (bf16 ? C.yb : C.y);


/** Locals of gatedNorm: the control block's address, then int32, float32, float64 and v128 locals. */
const N = {
  ctlAt: 0,
  coreAt: 1, normInAt: 2, normZAt: 3, zAt: 4, nwAt: 5, normedAt: 6, changedAt: 7, accAt: 8, rAt: 9, keptAt: 10,
  coreChangedAt: 11, hv: 12, dv: 13, full: 14, form: 15, meanDiv: 16, nc: 17,
  h: 18, cc: 19, o0: 20, may: 21, m: 22, oMoved: 23, j: 24, i: 25, bm: 26, movedAt: 27, tmpAt: 28, at: 29, bits: 30, nb: 31,
  acc: 32, rr: 33, z: 34, invN: 35, eps: 36, val: 37,
  s: 38,
  mo: 39, oMask: 40, zMask: 41,
  // gatedNormBf16's one more: bf16Of's int32
  nb16: 42,
} as const;
const NORM_I32_LOCALS = 31; // 1 … 31
const nWord = (w: number) => [...get(N.ctlAt), ...mem(OP.i32Load, 2, 4 * w)];
const nSetWord = (w: number, v: number[]) => [...get(N.ctlAt), ...v, ...mem(OP.i32Store, 2, 4 * w)];
const nLoadCtl = (names: (keyof typeof NORM_CTL & keyof typeof N)[]) => names.flatMap((k) => [...nWord(NORM_CTL[k]), ...set(N[k])]);
/** base + (o0 + j)·4: entry j of the head's block of a valueDim array. */
const headAt = (base: number, j: number[]) => [...get(base), ...get(N.o0), ...j, OP.i32Add, ...i32(2), OP.i32Shl, OP.i32Add];
const nPlus4 = (base: number, index: number[]) => [...get(base), ...index, ...i32(2), OP.i32Shl, OP.i32Add];

/** The head's sum of squares acc = −0 + Σ_j fl(o_j²) in ascending j, float32 (norms.ts gatedNormSquares): sets N.acc. */
const squares = [
  ...f32c(-0), ...set(N.acc),
  ...i32(0), ...set(N.j),
  ...whileLess(N.j, get(N.dv), [
    ...get(N.acc), ...headAt(N.coreAt, get(N.j)), ...mem(OP.f32Load, 2), ...tee(N.z), ...get(N.z), OP.f32Mul, OP.f32Add, ...set(N.acc),
    ...inc(N.j, 1),
  ]),
];

/**
 * Entry j's fl(fl(w_j·fl(o_j·r))·silu32(z_j)) (norms.ts gatedNormEntry) into N.val, or with `bf16`
 * bf(fl(bf(fl(w_j·bf(fl(o_j·r))))·silu32(z_j))) (gatedNormEntryBf16); with a NaN result the call
 * stops at this head (status 1), nothing of it written.
 */
/** bf16Of on the stack's float32 in the bf16 functions, nothing otherwise. */
const cast16 = (bf16: boolean) => (bf16 ? bf16Of(N.nb16) : []);
const entryOf = (j: number[], bf16: boolean) => [
  ...headAt(N.zAt, j), ...mem(OP.f32Load, 2), ...set(N.z),
  ...get(N.z), ...f32c(0), OP.f32Eq, ...get(N.z), ...f32c(SATURATE_ONE_FROM), OP.f32Ge, OP.i32Or, OP.if, F64,
  ...get(N.z), OP.f64PromoteF32,
  OP.else,
  ...get(N.z), ...f32c(SATURATE_ZERO_TO), OP.f32Le, ...get(N.z), ...f32c(-Infinity), OP.f32Ne, OP.i32And, OP.if, F64,
  ...f64c(-0),
  OP.else,
  ...get(N.z), OP.f64PromoteF32, ...get(N.form), OP.call, 0,
  OP.end, OP.end,
  ...set(N.s),
  ...nPlus4(N.nwAt, j), ...mem(OP.f32Load, 2), ...headAt(N.coreAt, j), ...mem(OP.f32Load, 2), ...get(N.rr), OP.f32Mul, ...cast16(bf16), OP.f32Mul,
  ...cast16(bf16), OP.f64PromoteF32, ...get(N.s), OP.f64Mul, OP.f32DemoteF64, ...cast16(bf16), ...tee(N.val), ...get(N.val), OP.f32Ne, OP.if, OP.void,
  ...nSetWord(NORM_CTL.resume, get(N.h)), ...nSetWord(NORM_CTL.nc, get(N.nc)), ...i32(1), OP.return,
  OP.end,
];

/** Commits entry j with its output at tmp[i]: the (o, z) bits it was computed from, the output, and j listed when its bits moved. */
const commitEntry = (j: number[], i: number[]) => [
  ...headAt(N.normInAt, j), ...headAt(N.coreAt, j), ...mem(OP.i32Load, 2), ...mem(OP.i32Store, 2),
  ...headAt(N.normZAt, j), ...headAt(N.zAt, j), ...mem(OP.i32Load, 2), ...mem(OP.i32Store, 2),
  ...headAt(N.normedAt, j), ...tee(N.at), ...mem(OP.i32Load, 2), ...set(N.bits),
  ...get(N.at), ...nPlus4(N.tmpAt, i), ...mem(OP.i32Load, 2), ...tee(N.nb), ...mem(OP.i32Store, 2),
  ...get(N.nb), ...get(N.bits), OP.i32Ne, OP.if, OP.void,
  ...nPlus4(N.changedAt, get(N.nc)), ...get(N.o0), ...j, OP.i32Add, ...mem(OP.i32Store, 2), ...inc(N.nc, 1),
  OP.end,
];

/** gatedNorm's body; `bf16`: gatedNormBf16's, whose entries make the bf16 profile's casts (entryOf). */
const gatedNormBody = (bf16: boolean) => [
  ...nLoadCtl(['coreAt', 'normInAt', 'normZAt', 'zAt', 'nwAt', 'normedAt', 'changedAt', 'accAt', 'rAt', 'keptAt', 'coreChangedAt', 'hv', 'dv', 'full', 'form', 'meanDiv', 'nc']),
  ...get(N.ctlAt), ...mem(OP.f32Load, 2, 4 * NORM_CTL.invN), ...set(N.invN),
  ...get(N.ctlAt), ...mem(OP.f32Load, 2, 4 * NORM_CTL.eps), ...set(N.eps),
  ...get(N.ctlAt), ...i32(4 * NORM_CTL_WORDS), OP.i32Add, ...set(N.movedAt),
  ...get(N.movedAt), ...get(N.dv), ...i32(2), OP.i32Shl, OP.i32Add, ...set(N.tmpAt),
  ...nWord(NORM_CTL.resume), ...set(N.h),
  OP.block, OP.void, OP.loop, OP.void,
  ...get(N.h), ...get(N.hv), OP.i32GeU, OP.brIf, 1,
  OP.block, OP.void, // (br 0 from here: the next head)
  ...get(N.coreChangedAt), ...get(N.h), OP.i32Add, ...mem(OP.i32Load8U, 0), ...tee(N.cc), ...get(N.full), OP.i32Or, OP.i32Eqz, OP.brIf, 0,
  ...get(N.h), ...get(N.dv), OP.i32Mul, ...set(N.o0),
  OP.block, OP.void, // (br 0 from here: the head's full recompute)
  ...get(N.keptAt), ...get(N.h), OP.i32Add, ...mem(OP.i32Load8U, 0), ...i32(1), OP.i32Ne, OP.brIf, 0,
  // the entries whose o (may & 1) or z (may & 2) bits moved since they were computed, four at a time
  ...i32(3), ...get(N.cc), ...get(N.full), OP.select, ...set(N.may),
  ...i32(-1), ...i32(0), ...get(N.may), ...i32(1), OP.i32And, OP.select, ...simd(SIMD.i32x4Splat), ...set(N.oMask),
  ...i32(-1), ...i32(0), ...get(N.may), ...i32(2), OP.i32And, OP.select, ...simd(SIMD.i32x4Splat), ...set(N.zMask),
  ...i32(0), ...set(N.m), ...i32(0), ...set(N.oMoved),
  ...i32(0), ...set(N.j),
  ...whileLess(N.j, get(N.dv), [
    ...headAt(N.coreAt, get(N.j)), ...vmem(SIMD.load), ...headAt(N.normInAt, get(N.j)), ...vmem(SIMD.load), ...simd(SIMD.i32x4Ne),
    ...get(N.oMask), ...simd(SIMD.and), ...tee(N.mo),
    ...headAt(N.zAt, get(N.j)), ...vmem(SIMD.load), ...headAt(N.normZAt, get(N.j)), ...vmem(SIMD.load), ...simd(SIMD.i32x4Ne),
    ...get(N.zMask), ...simd(SIMD.and), ...simd(SIMD.or), ...simd(SIMD.i32x4Bitmask), ...tee(N.bm),
    OP.if, OP.void,
    ...get(N.oMoved), ...get(N.mo), ...simd(SIMD.anyTrue), OP.i32Or, ...set(N.oMoved),
    OP.block, OP.void, OP.loop, OP.void,
    ...get(N.bm), OP.i32Eqz, OP.brIf, 1,
    ...nPlus4(N.movedAt, get(N.m)), ...get(N.j), ...get(N.bm), OP.i32Ctz, OP.i32Add, ...mem(OP.i32Store, 2), ...inc(N.m, 1),
    ...get(N.bm), ...get(N.bm), ...i32(1), OP.i32Sub, OP.i32And, ...set(N.bm),
    OP.br, 0,
    OP.end, OP.end,
    OP.end,
    ...inc(N.j, 4),
  ]),
  ...get(N.m), OP.i32Eqz, OP.brIf, 1, // nothing moved: the next head
  // the same o bits give the same sum; a NaN sum never compares equal (the head is redone in full)
  ...get(N.oMoved), OP.if, OP.void, ...squares, OP.else, ...nPlus4(N.accAt, get(N.h)), ...mem(OP.f32Load, 2), ...set(N.acc), OP.end,
  ...get(N.acc), ...nPlus4(N.accAt, get(N.h)), ...mem(OP.f32Load, 2), OP.f32Ne, OP.brIf, 0,
  ...nPlus4(N.rAt, get(N.h)), ...mem(OP.f32Load, 2), ...set(N.rr),
  ...i32(0), ...set(N.i),
  ...whileLess(N.i, get(N.m), [
    ...nPlus4(N.movedAt, get(N.i)), ...mem(OP.i32Load, 2), ...set(N.j),
    ...entryOf(get(N.j), bf16),
    ...nPlus4(N.tmpAt, get(N.i)), ...get(N.val), ...mem(OP.f32Store, 2),
    ...inc(N.i, 1),
  ]),
  ...i32(0), ...set(N.i),
  ...whileLess(N.i, get(N.m), [
    ...nPlus4(N.movedAt, get(N.i)), ...mem(OP.i32Load, 2), ...set(N.j),
    ...commitEntry(get(N.j), get(N.i)),
    ...inc(N.i, 1),
  ]),
  OP.br, 1,
  OP.end,
  // every entry: acc, r = rsqrt32(fl(mean(acc) + fl(eps))) (norms.ts gatedNormFactor), the outputs
  ...squares,
  ...get(N.meanDiv), OP.if, F32,
  ...get(N.acc), OP.f64PromoteF32, ...get(N.dv), OP.f64ConvertI32S, OP.f64Div, OP.f32DemoteF64,
  OP.else,
  ...get(N.acc), ...get(N.invN), OP.f32Mul,
  OP.end,
  ...get(N.eps), OP.f32Add, OP.f64PromoteF32, OP.f64Sqrt, OP.f32DemoteF64, OP.f64PromoteF32, ...set(N.s),
  ...f64c(1), ...get(N.s), OP.f64Div, OP.f32DemoteF64, ...set(N.rr),
  ...i32(0), ...set(N.j),
  ...whileLess(N.j, get(N.dv), [
    ...entryOf(get(N.j), bf16),
    ...nPlus4(N.tmpAt, get(N.j)), ...get(N.val), ...mem(OP.f32Store, 2),
    ...inc(N.j, 1),
  ]),
  ...nPlus4(N.accAt, get(N.h)), ...get(N.acc), ...mem(OP.f32Store, 2),
  ...nPlus4(N.rAt, get(N.h)), ...get(N.rr), ...mem(OP.f32Store, 2),
  ...get(N.keptAt), ...get(N.h), OP.i32Add, ...i32(1), ...mem(OP.i32Store8, 0),
  ...i32(0), ...set(N.j),
  ...whileLess(N.j, get(N.dv), [...commitEntry(get(N.j), get(N.j)), ...inc(N.j, 1)]),
  OP.end,
  ...inc(N.h, 1),
  OP.br, 0,
  OP.end, OP.end,
  ...nSetWord(NORM_CTL.resume, get(N.h)), ...nSetWord(NORM_CTL.nc, get(N.nc)),
  ...i32(0),
  OP.end,
];
const NORM_LOCALS: number[][] = [[NORM_I32_LOCALS, I32], [6, F32], [1, F64], [3, V128]];
const NORM_BF16_LOCALS: number[][] = [...NORM_LOCALS, [1, I32]];

/** Locals of keyRows: its eight parameters, then four int32 and six v128. */
const KR = { sAt: 0, kAt: 1, idxAt: 2, kn: 3, deltaAt: 4, dv: 5, rnzAt: 6, ioAt: 7, t: 8, i: 9, rowAt: 10, g: 11,
  ks: 12, y: 13, bad: 14, nz: 15, ng: 16, mx: 17 } as const;
/** Over the listed rows i = idx[t] (t < kn): ks = splat(k_i), rowAt = row i of S, then `inner` for each 4 columns at byte g. */
const keyRowsLoop = (inner: number[], afterRow: number[]) => [
  ...i32(0), ...set(KR.t),
  ...whileLess(KR.t, get(KR.kn), [
    ...rowOperands([...at4(KR.idxAt, KR.t), ...mem(OP.i32Load, 2)], { r: KR.i, x: KR.kAt, xs: KR.ks, s: KR.sAt, dv: KR.dv, rowAt: KR.rowAt }),
    ...i32(0), ...set(KR.g),
    ...whileLess(KR.g, [...get(KR.dv), ...i32(2), OP.i32Shl], [...inner, ...inc(KR.g, 16)]),
    ...afterRow,
    ...inc(KR.t, 1),
  ]),
];
/** The four lanes fl(S_ij + fl(k_i·δ_j)) of the row at rowAt, columns at byte g: a v128 on the stack. */
const keyRowLanes = [
  ...get(KR.rowAt), ...get(KR.g), OP.i32Add, ...vmem(SIMD.load),
  ...get(KR.ks), ...get(KR.deltaAt), ...get(KR.g), OP.i32Add, ...vmem(SIMD.load), ...simd(SIMD.f32x4Mul),
  ...simd(SIMD.f32x4Add),
];
const keyRowsBody = [
  ...ZEROS, ...set(KR.bad), ...ZEROS, ...set(KR.nz), ...ZEROS, ...set(KR.ng), ...ZEROS, ...set(KR.mx),
  // first pass: the new entries' tests, nothing written
  ...keyRowsLoop([
    ...keyRowLanes, ...tee(KR.y),
    ...simd(SIMD.f32x4Abs), ...FLT_MAX, ...simd(SIMD.f32x4Le), ...simd(SIMD.not),
    ...get(KR.y), ...NEG_ZEROS, ...simd(SIMD.i32x4Eq), ...simd(SIMD.or), ...get(KR.bad), ...simd(SIMD.or), ...set(KR.bad),
    ...get(KR.y), ...ZEROS, ...simd(SIMD.f32x4Ne), ...get(KR.nz), ...simd(SIMD.or), ...set(KR.nz),
    ...get(KR.y), ...ZEROS, ...simd(SIMD.f32x4Lt), ...get(KR.ng), ...simd(SIMD.or), ...set(KR.ng),
    ...get(KR.y), ...simd(SIMD.f32x4Abs), ...get(KR.mx), ...simd(SIMD.f32x4Max), ...set(KR.mx),
  ], []),
  ...get(KR.bad), ...simd(SIMD.anyTrue), OP.if, OP.void, ...i32(0), OP.return, OP.end,
  // second pass: the same lanes written, and each row marked not +0
  ...keyRowsLoop([
    ...get(KR.rowAt), ...get(KR.g), OP.i32Add, ...keyRowLanes, ...vmem(SIMD.store),
  ], [...get(KR.rnzAt), ...get(KR.i), OP.i32Add, ...i32(1), ...mem(OP.i32Store8, 0)]),
  ...get(KR.ioAt),
  ...get(KR.mx), ...simd(SIMD.f32x4ExtractLane), 0, ...get(KR.mx), ...simd(SIMD.f32x4ExtractLane), 1, OP.f32Max,
  ...get(KR.mx), ...simd(SIMD.f32x4ExtractLane), 2, OP.f32Max, ...get(KR.mx), ...simd(SIMD.f32x4ExtractLane), 3, OP.f32Max,
  ...mem(OP.f32Store, 2),
  ...i32(1),
  ...get(KR.nz), ...simd(SIMD.anyTrue), ...i32(1), OP.i32Shl, OP.i32Or,
  ...get(KR.ng), ...simd(SIMD.anyTrue), ...i32(2), OP.i32Shl, OP.i32Or,
  OP.end,
];

/** Locals of l2norm: its five parameters, then five int32, three float32 and one v128. */
const LN = { xAt: 0, n: 1, outAt: 2, s: 3, nzAt: 4, i: 5, bits: 6, j: 7, m: 8, t: 9, acc: 10, v: 11, r: 12, vv: 13 } as const;
const l2normBody = [
  ...i32(0), ...set(LN.m), ...f32c(-0), ...set(LN.acc),
  ...i32(0), ...set(LN.i),
  // the copy, and the sum of the non-zero entries' squares in ascending order (their indices listed)
  ...whileLess(LN.i, [...get(LN.n), ...i32(2), OP.i32Shl], [
    ...get(LN.outAt), ...get(LN.i), OP.i32Add, ...get(LN.xAt), ...get(LN.i), OP.i32Add, ...vmem(SIMD.load), ...tee(LN.vv), ...vmem(SIMD.store),
    ...get(LN.vv), ...ZEROS, ...simd(SIMD.f32x4Ne), ...simd(SIMD.i32x4Bitmask), ...set(LN.bits),
    OP.block, OP.void, OP.loop, OP.void,
    ...get(LN.bits), OP.i32Eqz, OP.brIf, 1,
    ...get(LN.i), ...i32(2), OP.i32ShrU, ...get(LN.bits), OP.i32Ctz, OP.i32Add, ...set(LN.j),
    ...at4(LN.xAt, LN.j), ...mem(OP.f32Load, 2), ...tee(LN.v), ...get(LN.v), OP.f32Mul, ...get(LN.acc), OP.f32Add, ...set(LN.acc),
    ...push(LN.nzAt, LN.m, get(LN.j)),
    ...get(LN.bits), ...get(LN.bits), ...i32(1), OP.i32Sub, OP.i32And, ...set(LN.bits),
    OP.br, 0,
    OP.end, OP.end,
    ...inc(LN.i, 16),
  ]),
  // r = fl(1 / fl(sqrt(fl(acc + fl(1e−6))))); not finite and positive: left to the caller
  ...f32c(1), ...get(LN.acc), ...f32c(1e-6), OP.f32Add, OP.f32Sqrt, OP.f32Div, ...set(LN.r),
  ...get(LN.r), ...get(LN.r), OP.f32Sub, ...f32c(0), OP.f32Eq, ...get(LN.r), ...f32c(0), OP.f32Gt, OP.i32And, OP.i32Eqz,
  OP.if, OP.void, ...i32(1), OP.return, OP.end,
  ...i32(0), ...set(LN.t),
  ...whileLess(LN.t, get(LN.m), [
    ...at4(LN.nzAt, LN.t), ...mem(OP.i32Load, 2), ...set(LN.j),
    ...at4(LN.outAt, LN.j), ...at4(LN.xAt, LN.j), ...mem(OP.f32Load, 2), ...get(LN.r), OP.f32Mul, ...get(LN.s), OP.f32Mul, ...mem(OP.f32Store, 2),
    ...inc(LN.t, 1),
  ]),
  ...i32(0),
  OP.end,
];
