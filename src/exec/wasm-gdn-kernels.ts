/**
 * The GDN recurrent step's 128-wide loops over a value head (gdn-sparse-step.ts) as WebAssembly
 * functions with 4-lane float32 SIMD: the column dots kv_j = dot(S[:,j], k) and o_j = dot(S[:,j], q)
 * of a state whose entries are finite, and δ_j = fl(fl(v_j − kv_j)·β) with its tests. They run on
 * the numeric context's wasm memory (wasm-kernels.ts WasmHeap), which holds the states, the
 * layer's buffers and the step's scratch when they fit.
 *
 * Why: in JavaScript each of these loops pays, per element, a typed-array load and store with their
 * checks and a double↔float32 conversion; a value head's step ran them over 128 columns two to
 * four times (docs/executor.md, round 30). Four lanes at a time, with the same IEEE float32
 * operations in the same order per lane, give the same bits: a float32 product or sum of float32
 * operands is what JavaScript's double operation rounded to float32 gives (the double result of
 * +, −, × on float32 operands rounds to float32 without double-rounding error, 53 ≥ 2·24 + 2).
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
 */
import {
  F32, fnCode, fnType, get, I32, i32, mem, name, OP, section, set, simd, SIMD, splatConst, tee, V128, vec, vmem,
} from './wasm-emit.ts';

const ZEROS = splatConst(0);
const NEG_ZEROS = splatConst(-0x80000000);
const ONES = splatConst(-1);
const FLT_MAX = splatConst(0x7f7fffff);

/** Locals of dots: its nine parameters, then eighteen int32, two float32 and thirteen v128. */
const D = {
  sAt: 0, xAt: 1, rnzAt: 2, dk: 3, dv: 4, kindPos: 5, outAt: 6, idxAt: 7, scrAt: 8,
  i: 9, e: 10, n: 11, nd: 12, fin: 13, sign: 14, nzn: 15, t: 16, r: 17, rowAt: 18, g: 19, dotAt: 20, nzAt: 21, anyAt: 22,
  ioAt: 23, negOff: 24, every: 25, isFin: 26,
  xv: 27, xi: 28,
  v: 29, sgn: 30, allNegV: 31, everyV: 32, xs: 33, p: 34, m: 35, acc: 36, anyV: 37, nanAny: 38, need: 39, zs: 40, res: 41,
} as const;

/** A loop `while (local < limit) { body }` (unsigned compare); the body must not branch past it. */
const whileLess = (local: number, limit: number[], body: number[]) => [
  OP.block, OP.void, OP.loop, OP.void,
  ...get(local), ...limit, OP.i32GeU, OP.brIf, 1,
  ...body,
  OP.br, 0,
  OP.end, OP.end,
];
const inc = (local: number, by: number) => [...get(local), ...i32(by), OP.i32Add, ...set(local)];
/** local ← base + (local2 << 2) … as an address on the stack. */
const at4 = (base: number, index: number) => [...get(base), ...get(index), ...i32(2), OP.i32Shl, OP.i32Add];
/** Appends value `v` (code pushing an i32) to the int32 list at `list`, count in local `cnt`. */
const push = (list: number, cnt: number, v: number[]) => [...at4(list, cnt), ...v, ...mem(OP.i32Store, 2), ...inc(cnt, 1)];
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
  ...ZEROS, ...set(D.zs), // (zs: the lanes found +0 or positive so far)
  ...i32(0), ...set(D.t),
  ...whileLess(D.t, get(D.nzn), [
    ...at4(D.nzAt, D.t), ...mem(OP.i32Load, 2), ...set(D.r),
    ...get(D.sAt), ...get(D.r), ...get(D.dv), OP.i32Mul, ...i32(2), OP.i32Shl, OP.i32Add, ...get(D.g), OP.i32Add, ...vmem(SIMD.load),
    ...at4(D.xAt, D.r), ...mem(OP.f32Load, 2), ...simd(SIMD.f32x4Splat), ...simd(SIMD.f32x4Mul),
    ...ZEROS, ...simd(SIMD.i32x4Eq), ...get(D.zs), ...simd(SIMD.or), ...set(D.zs),
    ...inc(D.t, 1),
  ]),
  ...ZEROS, ...NEG_ZEROS, ...get(D.zs), ...simd(SIMD.bitselect),
  OP.end,
  OP.end,
];

const dvBytes = [...get(D.dv), ...i32(2), OP.i32Shl];

const dotsBody = [
  ...get(D.scrAt), ...set(D.dotAt),
  ...get(D.dotAt), ...get(D.dk), ...i32(2), OP.i32Shl, OP.i32Add, ...set(D.nzAt),
  ...get(D.nzAt), ...get(D.dk), ...i32(2), OP.i32Shl, OP.i32Add, ...set(D.anyAt),
  ...get(D.anyAt), ...dvBytes, OP.i32Add, ...set(D.ioAt),
  ...scan,
  // sign, and the rows not known to be +0 when the zero sums need them
  ...get(D.every), ...i32(-1), ...get(D.kindPos), OP.select, ...set(D.sign),
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
    ...at4(D.dotAt, D.t), ...mem(OP.i32Load, 2), ...set(D.r),
    ...at4(D.xAt, D.r), ...mem(OP.f32Load, 2), ...simd(SIMD.f32x4Splat), ...set(D.xs),
    ...get(D.sAt), ...get(D.r), ...get(D.dv), OP.i32Mul, ...i32(2), OP.i32Shl, OP.i32Add, ...set(D.rowAt),
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

/** The GDN kernels' module: the memory imported as env.memory; `dots` (function 0) and `delta` (1) exported. */
export function gdnKernelModuleBytes(): Uint8Array {
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, vec([
      fnType(Array.from({ length: 9 }, () => I32), [I32]),
      fnType([I32, I32, F32, I32, I32], [I32]),
    ])),
    ...section(2, vec([[...name('env'), ...name('memory'), 0x02, 0x00, 0x01]])),
    ...section(3, vec([[0], [1]])),
    ...section(7, vec([[...name('dots'), 0x00, 0], [...name('delta'), 0x00, 1]])),
    ...section(10, vec([
      fnCode([[18, I32], [2, F32], [13, V128]], dotsBody),
      fnCode([[1, I32], [4, V128]], deltaBody),
    ])),
  ]);
}
