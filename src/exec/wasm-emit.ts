/**
 * A small WebAssembly binary emitter for the executor's hand-written kernels (wasm-kernels.ts,
 * wasm-gdn-kernels.ts, wasm-residual-kernels.ts): the opcodes they use, LEB128 integers, the
 * sections of a module (with a name section naming the functions, for profiles and stack traces),
 * and short forms for local access, constants, memory operands, loops and lists. Code is a flat
 * array of bytes built by spreading these pieces; nothing here validates it (WebAssembly.Module
 * does, when the module is compiled). Encodings follow the WebAssembly core specification's binary
 * format (version 2, which includes the 128-bit SIMD instructions under the 0xfd prefix).
 */

/** Value types. */
export const I32 = 0x7f;
export const F32 = 0x7d;
export const F64 = 0x7c;
export const V128 = 0x7b;

/** The scalar opcodes the kernels use. */
export const OP = {
  block: 0x02, loop: 0x03, if: 0x04, end: 0x0b, br: 0x0c, brIf: 0x0d, void: 0x40,
  localGet: 0x20, localSet: 0x21, localTee: 0x22,
  i32Load: 0x28, f32Load: 0x2a, f64Load: 0x2b, i32Load8U: 0x2d, i32Load16U: 0x2f, i32Store: 0x36, f32Store: 0x38, i32Store16: 0x3b,
  i32Const: 0x41, f32Const: 0x43, f64Const: 0x44, i32Eqz: 0x45, i32Ne: 0x47, i32GeU: 0x4f, i32LtU: 0x49, i32GtU: 0x4b,
  f32Eq: 0x5b, f32Ne: 0x5c, f32Le: 0x5f, f32Ge: 0x60,
  i32DivU: 0x6e, i32Store8: 0x3a, i32ReinterpretF32: 0xbc, f32ReinterpretI32: 0xbe, f32Add: 0x92,
  f64Eq: 0x61, f64Ne: 0x62, f64Le: 0x65, f64Ge: 0x66,
  i32Add: 0x6a, i32Sub: 0x6b, i32Mul: 0x6c, i32And: 0x71, i32Or: 0x72, i32Shl: 0x74,
  f32Sub: 0x93, f32Mul: 0x94,
  f64Add: 0xa0, f64Mul: 0xa2, f32DemoteF64: 0xb6, f64PromoteF32: 0xbb,
  call: 0x10, select: 0x1b, else: 0x05, f64Block: 0x7c, return: 0x0f,
  i32Eq: 0x46, i32LtS: 0x48, i32GtS: 0x4a, i32LeS: 0x4c, i32GeS: 0x4e, i32ShrU: 0x76, i32Ctz: 0x68,
  f64Gt: 0x64, f64Lt: 0x63, f64Abs: 0x99, f64Sub: 0xa1, f64Store: 0x39, f64ConvertI32S: 0xb7, i32Load16S: 0x2e,
  i32TruncSatF64S0: 0xfc, i32TruncSatF64S1: 0x02, f64Div: 0xa3, f64Sqrt: 0x9f, f32Lt: 0x5d,
  f32Gt: 0x5e, f32Div: 0x95, f32Sqrt: 0x91, f32Max: 0x97, f32Abs: 0x8b,
  i64Const: 0x42, i64Shl: 0x86, i64ExtendI32S: 0xac, f64ReinterpretI64: 0xbf,
} as const;

/**
 * The SIMD opcodes (after the 0xfd prefix, LEB128-encoded: simd() writes both). Lane-wise: a
 * comparison gives all-ones or all-zeros per lane; f32x4 arithmetic is IEEE float32 per lane,
 * round to nearest, ties to even.
 */
export const SIMD = {
  load: 0x00, load32Zero: 0x5c, store: 0x0b, const: 0x0c,
  i32x4Splat: 0x11, f32x4Splat: 0x13,
  i32x4Eq: 0x37, i32x4Ne: 0x38,
  f32x4Eq: 0x41, f32x4Ne: 0x42, f32x4Lt: 0x43, f32x4Gt: 0x44, f32x4Le: 0x45,
  not: 0x4d, and: 0x4e, andNot: 0x4f, or: 0x50, bitselect: 0x52, anyTrue: 0x53,
  i16x8ExtendLowI8x16U: 0x89, i32x4AllTrue: 0xa3, i32x4Bitmask: 0xa4, i32x4ExtendLowI16x8U: 0xa9,
  f32x4Abs: 0xe0, f32x4Add: 0xe4, f32x4Sub: 0xe5, f32x4Mul: 0xe6, f32x4Max: 0xe9, f32x4ExtractLane: 0x1f,
} as const;

export function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}

export function sleb(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0)) { out.push(b); return out; }
    out.push(b | 0x80);
  }
}

export const vec = (items: number[][]): number[] => [...uleb(items.length), ...items.flat()];
export const section = (id: number, bytes: number[]): number[] => [id, ...uleb(bytes.length), ...bytes];
export const name = (s: string): number[] => vec([...new TextEncoder().encode(s)].map((b) => [b]));

export const get = (l: number) => [OP.localGet, ...uleb(l)];
export const set = (l: number) => [OP.localSet, ...uleb(l)];
export const tee = (l: number) => [OP.localTee, ...uleb(l)];
export const i32 = (v: number) => [OP.i32Const, ...sleb(v)];
/** base + (index << shift): a byte address. */
export const addr = (base: number, index: number, shift: number) => [...get(base), ...get(index), ...i32(shift), OP.i32Shl, OP.i32Add];
export const f64c = (v: number) => { const b = new Uint8Array(8); new DataView(b.buffer).setFloat64(0, v, true); return [OP.f64Const, ...b]; };
/** A memory access with its alignment (log2) and offset. */
export const mem = (op: number, align: number, offset = 0) => [op, align, ...uleb(offset)];
/** A loop `while (local < limit) { body }` (unsigned compare); the body must not branch past it. */
export const whileLess = (local: number, limit: number[], body: number[]) => [
  OP.block, OP.void, OP.loop, OP.void,
  ...get(local), ...limit, OP.i32GeU, OP.brIf, 1,
  ...body,
  OP.br, 0,
  OP.end, OP.end,
];
/**
 * The exponent of the lowest set bit of the finite non-zero float32 whose bits are in local b
 * (delta.ts lowbit32), using local e: the value on the stack.
 */
export const lowbitOf = (b: number, e: number) => [
  ...get(b), ...i32(23), OP.i32ShrU, ...i32(0xff), OP.i32And, ...set(e),
  ...i32(-149), ...get(e), ...i32(150), OP.i32Sub, ...get(e), OP.i32Eqz, OP.select,
  ...get(b), ...i32(0x7fffff), OP.i32And, ...i32(0), ...i32(0x800000), ...get(e), OP.i32Eqz, OP.select, OP.i32Or,
  OP.i32Ctz, OP.i32Add,
];
/**
 * bf(x) of the float32 x on the stack, using int32 local `tmp` (numeric.ts roundBf16, dtype.ts
 * f32BitsToBf16): with x's bits b, a NaN gives (b | 0x00400000) & 0xffff0000 (quiet, its sign and
 * top payload bits kept), any other value (b + 0x7fff + ((b >> 16) & 1)) & 0xffff0000 (round to
 * nearest, ties to even; the largest finite values round to ±∞). The float32 result is on the stack.
 */
export const bf16Of = (tmp: number) => [
  OP.i32ReinterpretF32, ...set(tmp),
  ...get(tmp), ...i32(0x00400000), OP.i32Or,
  ...get(tmp), ...get(tmp), ...i32(16), OP.i32ShrU, ...i32(1), OP.i32And, ...i32(0x7fff), OP.i32Add, OP.i32Add,
  ...get(tmp), ...i32(0x7fffffff), OP.i32And, ...i32(0x7f800000), OP.i32GtU, OP.select,
  ...i32(0xffff0000 | 0), OP.i32And, OP.f32ReinterpretI32,
];
/** local ← local + by (int32). */
export const inc = (local: number, by: number) => [...get(local), ...i32(by), OP.i32Add, ...set(local)];
/** base + (index << 2), both locals: the byte address of a 4-byte array's entry, on the stack. */
export const at4 = (base: number, index: number) => [...get(base), ...get(index), ...i32(2), OP.i32Shl, OP.i32Add];
/** Appends value `v` (code pushing an i32) to the int32 list at `list`, count in local `cnt`. */
export const push = (list: number, cnt: number, v: number[]) => [...at4(list, cnt), ...v, ...mem(OP.i32Store, 2), ...inc(cnt, 1)];

/** A SIMD instruction (0xfd, then the opcode as LEB128). */
export const simd = (op: number) => [0xfd, ...uleb(op)];
/** A SIMD memory access (align log2 2: the kernels' arrays are 4-byte aligned) with its offset. */
export const vmem = (op: number, offset = 0) => [...simd(op), 2, ...uleb(offset)];
/** v128.const of four int32 lanes. */
export const v128i32 = (lanes: readonly [number, number, number, number]) => {
  const b = new Uint8Array(16);
  const dv = new DataView(b.buffer);
  lanes.forEach((x, i) => dv.setInt32(4 * i, x, true));
  return [...simd(SIMD.const), ...b];
};
/** v128.const with every int32 lane x. */
export const splatConst = (x: number) => v128i32([x, x, x, x]);

export const fnType = (params: number[], results: number[]) => [0x60, ...vec(params.map((p) => [p])), ...vec(results.map((r) => [r]))];
export const fnCode = (locals: number[][], body: number[]) => { const f = [...vec(locals), ...body]; return [...uleb(f.length), ...f]; };

/** A kernel function: the name it is exported under, its parameter and result types, its locals beyond the parameters ([count, type] runs) and its body (ending with `end`). */
export interface KernelFn { name: string; params: number[]; results: number[]; locals: number[][]; body: number[] }

/**
 * The bytes of a kernel module: it imports env.memory (at least one page) and env.siluFormula,
 * (f64, i32) → f64, as function 0, and defines `fns` as functions 1, 2, …, each exported under its
 * name (so a body calls silu32's formula with `call 0`).
 */
export function kernelModuleOf(fns: KernelFn[]): Uint8Array {
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    // types: 0 the formula's, then one per function
    ...section(1, vec([fnType([F64, I32], [F64]), ...fns.map((f) => fnType(f.params, f.results))])),
    ...section(2, vec([
      [...name('env'), ...name('memory'), 0x02, 0x00, ...uleb(1)],
      [...name('env'), ...name('siluFormula'), 0x00, 0],
    ])),
    ...section(3, vec(fns.map((_, i) => uleb(i + 1)))),
    ...section(7, vec(fns.map((f, i) => [...name(f.name), 0x00, ...uleb(i + 1)]))),
    ...section(10, vec(fns.map((f) => fnCode(f.locals, f.body)))),
    // the name section's function names (profiles and stack traces name the kernels, not wasm-function[i])
    ...section(0, [...name('name'), 1, ...(() => {
      const names = vec([[...uleb(0), ...name('siluFormula')], ...fns.map((f, i) => [...uleb(i + 1), ...name(f.name)])]);
      return [...uleb(names.length), ...names];
    })()]),
  ]);
}
