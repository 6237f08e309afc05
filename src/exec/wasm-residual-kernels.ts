/**
 * The incremental residual stream's two list loops (residual-track.ts) as WebAssembly functions,
 * part of the scalar kernels' module (wasm-kernels.ts): the residual add over its inputs' change
 * lists (addTracked) and a norm site's output over its input's change list when every changed
 * square is absorbed (NormSite.run). A decode step of crc32 on the generic chip at qwen3.5-4b runs
 * the add 22 times, over about 60 listed indices a call, and the norm 23 times, over about 40.
 *
 * Why: the JavaScript loops pay per entry typed-array loads and stores with their checks and the
 * double↔float32 conversions; the same float32 operations in wasm give the same bits (a float32
 * sum or product of float32 operands is what JavaScript's double operation rounds to float32:
 * 53 ≥ 2·24 + 2), so only NaN results, whose bits the engines need not agree on, are left to
 * JavaScript.
 *
 * addLists(xAt, bAt, oAt, aAt, aN, bListAt, bN, chAt, ioAt) → status (byte addresses; x, b, o
 * float32; the lists int32): for the indices i of list a (aN of them), then of list b (bN), in
 * order, s = fl(x_i + b_i); o_i ← s, and i is appended to ch when s's bits differ from o_i's before
 * (a repeated index is unchanged the second time). At an s that is NaN it stops before storing:
 * status 1; status 0 when done. io[0] is the appended count either way. After a stop the caller
 * runs the whole loop again from that count: the entries done already give the bits they hold
 * and are not appended again.
 *
 * normListed(xAt, pAt, listAt, n, w1At, ovAt, chAt, r) → m (r a float32 value): for the listed
 * indices j, first the test that each x_j is finite and fl(P_{j−1} + fl(x_j²)) equals P_j (P_{−1}
 * = −0): NormSite's absorbedEach, with finiteness added; when some j fails it returns −1 having
 * written nothing. Then for each listed i in order, v = fl(fl(x_i·r)·w1_i); ov_i ← v, and i is
 * appended to ch when v's bits differ from ov_i's before; returns the appended count. With r and
 * every w1_i finite no v is NaN: x_i is finite, and |x_i·r| stays below about √H because P_{H−1}
 * ≥ fl(x_i²) (r = 0 when that sum overflowed), so no product is ∞·0 (the caller checks r and w1).
 *
 * addListsBf16 and normListedBf16 are the same loops for the bf16 profile: each sum, and each
 * output, is cast, bf(fl(x_i + b_i)) and bf(fl(fl(x_i·r)·w1_i)) (wasm-emit.ts bf16Of, before the
 * comparison with the old bits and the NaN test; the cast of a NaN is a NaN).
 */
import { at4, bf16Of, F32, get, I32, i32, inc, mem, OP, push, set, tee, whileLess, type KernelFn } from './wasm-emit.ts';

const f32Zero = (negative: boolean) => [OP.f32Const, 0, 0, 0, negative ? 0x80 : 0];

// addLists' locals: its nine parameters, then four int32, one float32 and one int32 (bf16Of's)
const A = { xAt: 0, bAt: 1, oAt: 2, aAt: 3, aN: 4, bListAt: 5, bN: 6, chAt: 7, ioAt: 8, t: 9, i: 10, n: 11, old: 12, s: 13, b: 14 } as const;
const ioStore = (slot: number, v: number[]) => [...get(A.ioAt), ...v, ...mem(OP.i32Store, 2, 4 * slot)];

/** addLists' loop over one list (bf16: each sum cast, bf(fl(x_i + b_i)); a NaN stays NaN). */
const addPass = (listAt: number, count: number, bf16: boolean) => [
  ...i32(0), ...set(A.t),
  ...whileLess(A.t, get(count), [
    ...at4(listAt, A.t), ...mem(OP.i32Load, 2), ...set(A.i),
    ...at4(A.oAt, A.i), ...mem(OP.i32Load, 2), ...set(A.old),
    ...at4(A.xAt, A.i), ...mem(OP.f32Load, 2), ...at4(A.bAt, A.i), ...mem(OP.f32Load, 2), OP.f32Add, ...(bf16 ? bf16Of(A.b) : []), ...tee(A.s),
    ...get(A.s), OP.f32Ne, OP.if, OP.void,
    ...ioStore(0, get(A.n)), ...i32(1), OP.return,
    OP.end,
    ...at4(A.oAt, A.i), ...get(A.s), ...mem(OP.f32Store, 2),
    ...get(A.s), OP.i32ReinterpretF32, ...get(A.old), OP.i32Ne, OP.if, OP.void,
    ...push(A.chAt, A.n, get(A.i)),
    OP.end,
    ...inc(A.t, 1),
  ]),
];

const addListsBody = (bf16: boolean) => [
  ...i32(0), ...set(A.n),
  ...addPass(A.aAt, A.aN, bf16),
  ...addPass(A.bListAt, A.bN, bf16),
  ...ioStore(0, get(A.n)),
  ...i32(0),
  OP.end,
];

// normListed's locals: its eight parameters, then four int32, two float32 and one int32 (bf16Of's)
const N = { xAt: 0, pAt: 1, listAt: 2, n: 3, w1At: 4, ovAt: 5, chAt: 6, r: 7, t: 8, j: 9, m: 10, old: 11, v: 12, y: 13, b: 14 } as const;

const normListedBody = (bf16: boolean) => [
  // the test, before anything is written
  ...i32(0), ...set(N.t),
  ...whileLess(N.t, get(N.n), [
    ...at4(N.listAt, N.t), ...mem(OP.i32Load, 2), ...set(N.j),
    ...at4(N.xAt, N.j), ...mem(OP.f32Load, 2), ...tee(N.v),
    ...get(N.v), OP.f32Sub, ...f32Zero(false), OP.f32Ne, OP.if, OP.void, ...i32(-1), OP.return, OP.end,
    // P_{j−1}, or −0 at j = 0 (the load before P then reads memory the caller carved before it)
    ...f32Zero(true), ...at4(N.pAt, N.j), ...i32(4), OP.i32Sub, ...mem(OP.f32Load, 2), ...get(N.j), OP.i32Eqz, OP.select,
    ...get(N.v), ...get(N.v), OP.f32Mul, OP.f32Add,
    ...at4(N.pAt, N.j), ...mem(OP.f32Load, 2), OP.f32Ne, OP.if, OP.void, ...i32(-1), OP.return, OP.end,
    ...inc(N.t, 1),
  ]),
  // the outputs
  ...i32(0), ...set(N.t),
  ...i32(0), ...set(N.m),
  ...whileLess(N.t, get(N.n), [
    ...at4(N.listAt, N.t), ...mem(OP.i32Load, 2), ...set(N.j),
    ...at4(N.ovAt, N.j), ...mem(OP.i32Load, 2), ...set(N.old),
    ...at4(N.xAt, N.j), ...mem(OP.f32Load, 2), ...get(N.r), OP.f32Mul, ...at4(N.w1At, N.j), ...mem(OP.f32Load, 2), OP.f32Mul, ...(bf16 ? bf16Of(N.b) : []), ...set(N.y),
    ...at4(N.ovAt, N.j), ...get(N.y), ...mem(OP.f32Store, 2),
    ...get(N.y), OP.i32ReinterpretF32, ...get(N.old), OP.i32Ne, OP.if, OP.void,
    ...push(N.chAt, N.m, get(N.j)),
    OP.end,
    ...inc(N.t, 1),
  ]),
  ...get(N.m),
  OP.end,
];

/**
 * The residual kernels (module comment), for the scalar module's function list (wasm-kernels.ts):
 * `addLists` and `normListed`, or with `bf16` `addListsBf16` and `normListedBf16`.
 */
export function residualKernelFns(bf16: boolean): KernelFn[] {
  const suffix = bf16 ? 'Bf16' : '';
  const cast = bf16 ? [[1, I32]] : [];
  return [
    { name: `addLists${suffix}`, params: Array.from({ length: 9 }, () => I32), results: [I32], locals: [[4, I32], [1, F32], ...cast], body: addListsBody(bf16) },
    {
      name: `normListed${suffix}`, params: [...Array.from({ length: 7 }, () => I32), F32], results: [I32], locals: [[4, I32], [2, F32], ...cast],
      body: normListedBody(bf16),
    },
  ];
}
