/**
 * An incremental matmul's first fold (delta.ts foldFresh, f32) as a WebAssembly function of the
 * scalar kernels' module (wasm-kernels.ts): the column records, the rows' bounds, lowest bits,
 * marks and folds from one walk of the non-zero input columns' CSC entries. A fresh process runs
 * it for every matrix of the chip at its first position, before the JIT has compiled anything:
 * the same loops in JavaScript ran there in the interpreter, at tens of ns an entry.
 *
 * foldColumns(colEnd, recAt, rowIdxAt, valuesAt, yAt, boundAt, gapAt, markAt, listAt, refoldAt) →
 * the refold count (byte addresses; the column records as delta.ts's colBits, 16 bytes a column:
 * bits, M_c as float32, L_c, the column's first entry, the next record holding its end; rowIdx
 * 16-bit; values, y float32; per row the bound B float64, NO_LOW − G as uint16 and the mark
 * 16-bit; list and refold int32). It does what delta.ts foldByColumns does, in its order:
 *  1. every column c < colEnd, x the float32 of its record's bits b: M_c ← |x|; L_c ← NO_LOW
 *     (32767) when x = ±0 (then nothing more), else lowbit32(b); then each entry k of the column
 *     with weight w ≠ ±0 and row r = rowIdx[k]: p = fl32(w·x); y_r ← fl32(y_r + p) when p ≠ ±0;
 *     r appended to list when B_r = +0 (its first such entry); B_r ← (B_r + |w|·|x|)·(1 + 2^−50)
 *     in double; G_r ← min(G_r, lowbit32(w) + L_c);
 *  2. every listed row r: bounded when G_r = NO_LOW, or G_r ≥ −149 and B_r < 2^(24 + min(G_r,
 *     102)) (delta.ts boundedRow); mark_r ← 0 if so, else 1 and r appended to refold.
 * Rows that no entry reaches are left as they were. The float32 operations are the JavaScript's
 * (a float32 product or sum of float32 operands is what a double operation rounds to float32:
 * 53 ≥ 2·24 + 2), the double ones the same IEEE operations: the same bits. Preconditions: every
 * address in range of the memory, every x finite (foldFresh checks), the records' bits and entry
 * ranges written (foldInputs, or fillColumnRecords), every row's y, B, NO_LOW − G and mark +0
 * (G = NO_LOW).
 *
 * foldInputs(cols, colEnd, xAt, recAt, colPtrAt) → the count of sign-bit-set inputs, or −1 (x
 * float32 from xAt, the records as above, colPtr uint32): foldFresh's pass over its input and
 * fillColumnRecords. −1, nothing written, when some x_c is not finite (exponent field all ones);
 * else, b the bits of x_c, the sign bits counted, b stored as column c's bits for c < cols when
 * c < colEnd or b ≠ 0, and column c's first entry ← colPtr[c] for c ≤ colEnd.
 */
import { addr, F32, F64, f64c, get, I32, i32, inc, lowbitOf, mem, OP, set, tee, whileLess, type KernelFn } from './wasm-emit.ts';

/** delta.ts NO_LOW. */
const NO_LOW = 32767;
/** delta.ts BOUND_INFLATE's bits are those of this double. */
const INFLATE = 1 + 2 ** -50;

// foldColumns' locals: its ten parameters, then twelve int32, three float32 and two float64
const F = {
  colEnd: 0, recAt: 1, rowIdxAt: 2, valuesAt: 3, yAt: 4, boundAt: 5, gapAt: 6, markAt: 7, listAt: 8, refoldAt: 9,
  c: 10, rec: 11, b: 12, low: 13, k: 14, kEnd: 15, r: 16, e: 17, wb: 18, at: 19, n: 20, nf: 21,
  v: 22, w: 23, p: 24,
  av: 25, B: 26,
} as const;

const f32Zero = [OP.f32Const, 0, 0, 0, 0];
/** for (local = 0; local < limit; local++) { body } (unsigned compare; the body must not branch past it). */
const upTo = (local: number, limit: number, body: number[]) => [...i32(0), ...set(local), ...whileLess(local, get(limit), [...body, ...inc(local, 1)])];

const foldColumnsBody: number[] = [
  ...i32(0), ...set(F.n),
  // 1. the columns
  ...upTo(F.c, F.colEnd, [
    ...addr(F.recAt, F.c, 4), ...tee(F.rec), ...mem(OP.i32Load, 2), ...set(F.b),
    ...get(F.rec), ...mem(OP.f32Load, 2), ...tee(F.v),
    ...get(F.rec), ...get(F.v), OP.f32Abs, ...mem(OP.f32Store, 2, 4),
    ...f32Zero, OP.f32Eq, OP.if, OP.void,
    ...get(F.rec), ...i32(NO_LOW), ...mem(OP.i32Store, 2, 8),
    OP.else,
    ...get(F.rec), ...lowbitOf(F.b, F.e), ...tee(F.low), ...mem(OP.i32Store, 2, 8),
    ...get(F.v), OP.f32Abs, OP.f64PromoteF32, ...set(F.av),
    ...get(F.rec), ...mem(OP.i32Load, 2, 12), ...set(F.k),
    ...get(F.rec), ...mem(OP.i32Load, 2, 28), ...set(F.kEnd),
    OP.block, OP.void, OP.loop, OP.void,
    ...get(F.k), ...get(F.kEnd), OP.i32GeS, OP.brIf, 1,
    ...addr(F.valuesAt, F.k, 2), ...mem(OP.f32Load, 2), ...tee(F.w),
    ...f32Zero, OP.f32Ne, OP.if, OP.void,
    ...addr(F.rowIdxAt, F.k, 1), ...mem(OP.i32Load16U, 1), ...set(F.r),
    // y_r ← fl32(y_r + p) for p = fl32(w·x) ≠ ±0
    ...get(F.w), ...get(F.v), OP.f32Mul, ...tee(F.p), ...f32Zero, OP.f32Ne, OP.if, OP.void,
    ...addr(F.yAt, F.r, 2), ...tee(F.at), ...get(F.at), ...mem(OP.f32Load, 2), ...get(F.p), OP.f32Add, ...mem(OP.f32Store, 2),
    OP.end,
    // the row listed at its first entry (B_r = +0), then B_r ← (B_r + |w|·|x|)·(1 + 2^−50)
    ...addr(F.boundAt, F.r, 3), ...tee(F.at), ...mem(OP.f64Load, 3), ...tee(F.B), ...f64c(0), OP.f64Eq, OP.if, OP.void,
    ...addr(F.listAt, F.n, 2), ...get(F.r), ...mem(OP.i32Store, 2),
    ...get(F.n), ...i32(1), OP.i32Add, ...set(F.n),
    OP.end,
    ...get(F.at), ...get(F.B), ...get(F.w), OP.f32Abs, OP.f64PromoteF32, ...get(F.av), OP.f64Mul, OP.f64Add, ...f64c(INFLATE), OP.f64Mul,
    ...mem(OP.f64Store, 3),
    // G_r ← min(G_r, lowbit32(w) + L_c), kept as NO_LOW − G_r
    ...addr(F.valuesAt, F.k, 2), ...mem(OP.i32Load, 2), ...set(F.wb),
    ...i32(NO_LOW), ...lowbitOf(F.wb, F.e), ...get(F.low), OP.i32Add, OP.i32Sub, ...set(F.e),
    ...get(F.e), ...addr(F.gapAt, F.r, 1), ...mem(OP.i32Load16U, 1), OP.i32GtS, OP.if, OP.void,
    ...addr(F.gapAt, F.r, 1), ...get(F.e), ...mem(OP.i32Store16, 1),
    OP.end,
    OP.end,
    ...get(F.k), ...i32(1), OP.i32Add, ...set(F.k),
    OP.br, 0,
    OP.end, OP.end,
    OP.end,
  ]),
  // 2. the listed rows' marks and the refold list
  ...i32(0), ...set(F.nf),
  ...upTo(F.c, F.n, [
    ...addr(F.listAt, F.c, 2), ...mem(OP.i32Load, 2), ...set(F.r),
    ...i32(NO_LOW), ...addr(F.gapAt, F.r, 1), ...mem(OP.i32Load16U, 1), OP.i32Sub, ...set(F.e),
    ...addr(F.boundAt, F.r, 3), ...mem(OP.f64Load, 3), ...set(F.B),
    // G = NO_LOW, or G ≥ −149 and B < 2^(24 + min(G, 102)) (the double of exponent field 24 + min(G, 102) + 1023)
    ...get(F.e), ...i32(NO_LOW), OP.i32Eq,
    ...get(F.e), ...i32(-149), OP.i32GeS,
    ...get(F.B),
    ...get(F.e), ...i32(102), ...get(F.e), ...i32(102), OP.i32LtS, OP.select, ...i32(24 + 1023), OP.i32Add,
    OP.i64ExtendI32S, OP.i64Const, 52, OP.i64Shl, OP.f64ReinterpretI64,
    OP.f64Lt, OP.i32And, OP.i32Or,
    OP.i32Eqz, OP.if, OP.void,
    ...addr(F.markAt, F.r, 1), ...i32(1), ...mem(OP.i32Store16, 1),
    ...addr(F.refoldAt, F.nf, 2), ...get(F.r), ...mem(OP.i32Store, 2),
    ...get(F.nf), ...i32(1), OP.i32Add, ...set(F.nf),
    OP.end,
  ]),
  ...get(F.nf),
  OP.end,
];

// foldInputs' locals: its five parameters, then three int32
const I = { cols: 0, colEnd: 1, xAt: 2, recAt: 3, colPtrAt: 4, c: 5, b: 6, neg: 7 } as const;

const foldInputsBody: number[] = [
  ...i32(0), ...set(I.neg),
  // the sign count, nothing written before a value that is not finite
  ...upTo(I.c, I.cols, [
    ...addr(I.xAt, I.c, 2), ...mem(OP.i32Load, 2), ...tee(I.b),
    ...i32(0x7f800000), OP.i32And, ...i32(0x7f800000), OP.i32Eq, OP.if, OP.void, ...i32(-1), OP.return, OP.end,
    ...get(I.neg), ...get(I.b), ...i32(31), OP.i32ShrU, OP.i32Add, ...set(I.neg),
  ]),
  // the records' bits
  ...upTo(I.c, I.cols, [
    ...addr(I.xAt, I.c, 2), ...mem(OP.i32Load, 2), ...set(I.b),
    ...get(I.c), ...get(I.colEnd), OP.i32LtU, ...get(I.b), ...i32(0), OP.i32Ne, OP.i32Or, OP.if, OP.void,
    ...addr(I.recAt, I.c, 4), ...get(I.b), ...mem(OP.i32Store, 2),
    OP.end,
  ]),
  // the walks' starts, c ≤ colEnd
  ...i32(0), ...set(I.c),
  ...whileLess(I.c, [...get(I.colEnd), ...i32(1), OP.i32Add], [
    ...addr(I.recAt, I.c, 4), ...addr(I.colPtrAt, I.c, 2), ...mem(OP.i32Load, 2), ...mem(OP.i32Store, 2, 12),
    ...inc(I.c, 1),
  ]),
  ...get(I.neg),
  OP.end,
];

/** foldColumns and foldInputs as functions of the scalar kernels' module (wasm-kernels.ts kernelModuleBytes). */
export function foldKernelFns(): KernelFn[] {
  return [
    {
      name: 'foldColumns', params: Array.from({ length: 10 }, () => I32), results: [I32], locals: [[12, I32], [3, F32], [2, F64]],
      body: foldColumnsBody,
    },
    { name: 'foldInputs', params: Array.from({ length: 5 }, () => I32), results: [I32], locals: [[3, I32]], body: foldInputsBody },
  ];
}
