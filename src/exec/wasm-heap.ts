/**
 * The per-context wasm memory the executor's kernels run on (WasmHeap), and those kernels' two
 * modules compiled from their stored bytes (wasm-kernel-bytes.ts, made by their emitters:
 * wasm-kernels.ts, wasm-gdn-kernels.ts, wasm-residual-kernels.ts, wasm-fold-kernel.ts — whose
 * module comments state each kernel's contract). The emitters are not loaded at run time: building
 * the modules' bytes cost a fresh process about 27 ms, most of it before its first step.
 */
import { GDN_KERNEL_MODULE_BASE64, KERNEL_MODULE_BASE64 } from './wasm-kernel-bytes.ts';

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
type FoldColumnsFn = (colEnd: number, recAt: number, rowIdxAt: number, valuesAt: number, yAt: number, boundAt: number, gapAt: number,
  markAt: number, listAt: number, refoldAt: number) => number;
type FoldInputsFn = (cols: number, colEnd: number, xAt: number, recAt: number, colPtrAt: number) => number;
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
/** The bytes of a base64 string. */
function fromBase64(s: string): Uint8Array {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}
/** The scalar kernels' module (wasm-kernels.ts), from its stored bytes. */
const kernelModule = compiledOnce(() => fromBase64(KERNEL_MODULE_BASE64));
/** The GDN kernels' module (wasm-gdn-kernels.ts; SIMD), from its stored bytes. */
const gdnKernelModule = compiledOnce(() => fromBase64(GDN_KERNEL_MODULE_BASE64));

/** The arrays of a state's kernels that `delta` reads besides the state's own (plans.ts DeltaKernel). */
export interface DeltaArrays { rowIdx: Uint16Array; values: Float32Array; track: Int32Array; io: Int32Array }

/**
 * Byte addresses in a WasmHeap's memory of the arrays an incremental matmul's kernels read and
 * write (plans.ts DeltaKernel.at; made with the kernel: the state's arrays and the kernel's never
 * move). A typed array's `byteOffset` and `buffer` are builtin calls in V8 that its optimising
 * compiler does not inline (about 9 and 25 ns on dev-2c: bench/view-getters.ts), and the decode
 * read about 1,240 offsets and 540 buffers a token for its kernels before the addresses were kept
 * (docs/benchmarks.md "The executor's round 36").
 */
export interface DeltaAt {
  colBits: number; rowIdx: number; values: number; mark: number; y: number; rows: number; track: number; changed: number; io: number;
  walkList: number;
}

/** The DeltaAt of the given arrays (each must lie in the heap's memory). */
export function deltaAtOf(v: { [K in keyof DeltaAt]: ArrayBufferView }): DeltaAt {
  return {
    colBits: v.colBits.byteOffset, rowIdx: v.rowIdx.byteOffset, values: v.values.byteOffset, mark: v.mark.byteOffset, y: v.y.byteOffset,
    rows: v.rows.byteOffset, track: v.track.byteOffset, changed: v.changed.byteOffset, io: v.io.byteOffset, walkList: v.walkList.byteOffset,
  };
}

/** v's byte address in heap's memory, or −1 where it lies elsewhere (or there is no heap). */
export function addressIn(heap: WasmHeap | null, v: ArrayBufferView): number {
  return heap !== null && v.buffer === heap.buffer ? v.byteOffset : -1;
}

/**
 * addressIn remembered for the view and heap last asked about: a call site of the kernels passes
 * the same few views at every decode step, and a view's buffer and offset never change (nor does
 * a heap's memory: it never grows), so one identity test replaces two builtin calls (DeltaAt).
 * The memo holds its last view until asked about another.
 */
export class ViewAt {
  private view: ArrayBufferView | null = null;
  private heap: WasmHeap | null = null;
  private at = -1;

  of(heap: WasmHeap | null, view: ArrayBufferView): number {
    if (view !== this.view || heap !== this.heap) {
      this.view = view;
      this.heap = heap;
      this.at = addressIn(heap, view);
    }
    return this.at;
  }
}

/** addLists' io word: the heap's first 4 bytes. */
const ADD_IO_AT = 0;

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
  private readonly swigluBf16Fn: SwigluFn;
  private readonly deltaFn: DeltaFn;
  private readonly addListsFn: AddListsFn;
  private readonly normListedFn: NormListedFn;
  private readonly addListsBf16Fn: AddListsFn;
  private readonly normListedBf16Fn: NormListedFn;
  private readonly castRowsBf16Fn: (nr: number, rowsAt: number, accAt: number, yAt: number) => void;
  private readonly gdnDotsFn: GdnDotsFn;
  private readonly gdnDeltaFn: GdnDeltaFn;
  private readonly convActivateFn: (ctlAt: number) => number;
  private readonly convChannelsFn: (ctlAt: number) => number;
  private readonly convChannels4Fn: (ctlAt: number) => number;
  private readonly gatedNormFn: (ctlAt: number) => number;
  private readonly convChannelsBf16Fn: (ctlAt: number) => number;
  private readonly convChannels4Bf16Fn: (ctlAt: number) => number;
  private readonly gatedNormBf16Fn: (ctlAt: number) => number;
  private readonly keyRowsFn: KeyRowsFn;
  private readonly l2normFn: L2normFn;
  private readonly foldColumnsFn: FoldColumnsFn;
  private readonly foldInputsFn: FoldInputsFn;
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
    this.swigluBf16Fn = instance.exports.swigluBf16 as SwigluFn;
    this.addListsBf16Fn = instance.exports.addListsBf16 as AddListsFn;
    this.normListedBf16Fn = instance.exports.normListedBf16 as NormListedFn;
    this.castRowsBf16Fn = instance.exports.castRowsBf16 as (nr: number, rowsAt: number, accAt: number, yAt: number) => void;
    this.foldColumnsFn = instance.exports.foldColumns as FoldColumnsFn;
    this.foldInputsFn = instance.exports.foldInputs as FoldInputsFn;
    this.hasGdnKernels = gdn !== null;
    const missing = (): number => { throw new Error('the GDN kernels are not available (hasGdnKernels)'); };
    this.gdnDotsFn = gdn === null ? missing : gdn.exports.dots as GdnDotsFn;
    this.gdnDeltaFn = gdn === null ? missing : gdn.exports.delta as GdnDeltaFn;
    this.convActivateFn = gdn === null ? missing : gdn.exports.convActivate as (ctlAt: number) => number;
    this.convChannelsFn = gdn === null ? missing : gdn.exports.convChannels as (ctlAt: number) => number;
    this.convChannels4Fn = gdn === null ? missing : gdn.exports.convChannels4 as (ctlAt: number) => number;
    this.gatedNormFn = gdn === null ? missing : gdn.exports.gatedNorm as (ctlAt: number) => number;
    this.convChannelsBf16Fn = gdn === null ? missing : gdn.exports.convChannelsBf16 as (ctlAt: number) => number;
    this.convChannels4Bf16Fn = gdn === null ? missing : gdn.exports.convChannels4Bf16 as (ctlAt: number) => number;
    this.gatedNormBf16Fn = gdn === null ? missing : gdn.exports.gatedNormBf16 as (ctlAt: number) => number;
    this.keyRowsFn = gdn === null ? missing : gdn.exports.keyRows as KeyRowsFn;
    this.l2normFn = gdn === null ? missing : gdn.exports.l2norm as L2normFn;
    this.addIo = new Int32Array(this.buffer, ADD_IO_AT, 1);
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
   * count returned; every array must be a view of this heap. `bf16`: with the bf16 profile's casts
   * (swigluBf16).
   */
  swiglu(nr: number, rows: Int32Array, n: number, go: Float32Array, h: Float32Array, changed: Int32Array, form: 'mul' | 'div',
    bf16 = false): number {
    return this.swigluAt(nr, rows.byteOffset, n, go.byteOffset, h.byteOffset, changed.byteOffset, form, bf16);
  }

  /** swiglu with each array given by its byte address in this heap. */
  swigluAt(nr: number, rowsAt: number, n: number, goAt: number, hAt: number, changedAt: number, form: 'mul' | 'div', bf16: boolean): number {
    return (bf16 ? this.swigluBf16Fn : this.swigluFn)(nr, rowsAt, n, goAt, hAt, changedAt, form === 'mul' ? 0 : 1);
  }

  /**
   * wasm-kernels.ts castRowsBf16: y_r = bf(acc_r) for the rows r of rows[0..nr), each array given by
   * its byte address in this heap (float32 acc and y, int32 rows).
   */
  castRowsBf16At(nr: number, rowsAt: number, accAt: number, yAt: number): void {
    this.castRowsBf16Fn(nr, rowsAt, accAt, yAt);
  }

  /**
   * delta.ts deltaLinearIn's pass over candidates [t0, n) in wasm (module comment, delta): the
   * candidates at byte address candAt (−1: every column t is a candidate) and x at xAt, and the
   * state's arrays at their addresses `at` (DeltaAt: its column records, marks, y, reached rows and
   * changed columns, its kernel's plan copy, track block — TRACK: the tracked rows' arrays, the
   * refold count in and out — and in/out block io: [0] nr and [1] nc in and out, [6] 1 when every
   * row is bounded; out [2] the sign count's change, [3] entries walked, [5] where it stopped), all
   * in this heap. Returns 0 when the candidates are done, 1 at a column that widens its bounds, 2
   * at one that is not finite (that column untouched: the caller takes it).
   */
  delta(n: number, candAt: number, xAt: number, at: DeltaAt, cur: number, t0: number): number {
    return this.deltaFn(n, candAt, xAt, at.colBits, at.rowIdx, at.values, at.mark, at.y, at.rows, at.track, at.changed, cur, t0, at.io);
  }

  /** walk (module comment) over a state's walk list at its addresses `at` (DeltaAt), as `walk`. */
  walkAt(nWalk: number, at: DeltaAt, cur: number, nr: number): number {
    return this.walkFn(nWalk, at.walkList, at.mark, at.y, at.rows, at.rowIdx, at.values, at.track, cur, nr);
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
    return this.gdnDotsAt(S.byteOffset, x.byteOffset + 4 * xOff, rowNonZero.byteOffset, dk, dv, kindPos,
      out.byteOffset + 4 * outOff, idx.byteOffset, scr.byteOffset);
  }

  /** gdnDots with each array given by its byte address in this heap (x and out at their entries xOff and outOff). */
  gdnDotsAt(sAt: number, xAt: number, rnzAt: number, dk: number, dv: number, kindPos: boolean, outAt: number, idxAt: number,
    scrAt: number): number {
    return this.gdnDotsFn(sAt, xAt, rnzAt, dk, dv, kindPos ? 1 : 0, outAt, idxAt, scrAt);
  }

  /**
   * wasm-gdn-kernels.ts delta: δ_j = fl(fl(v_j − kv_j)·β) for j < dv into delta; bit 0 of the
   * result set when every δ_j is finite, bit 1 when every δ_j is ±0. β must be a float32 value.
   */
  gdnDelta(v: Float32Array, vOff: number, kv: Float32Array, kvOff: number, beta: number, delta: Float32Array, dv: number): number {
    return this.gdnDeltaAt(v.byteOffset + 4 * vOff, kv.byteOffset + 4 * kvOff, beta, delta.byteOffset, dv);
  }

  /** gdnDelta with each array given by its byte address in this heap (v and kv at their entries vOff and kvOff). */
  gdnDeltaAt(vAt: number, kvAt: number, beta: number, deltaAt: number, dv: number): number {
    return this.gdnDeltaFn(vAt, kvAt, beta, deltaAt, dv);
  }

  /**
   * wasm-gdn-kernels.ts keyRows: S_ij ← fl(S_ij + fl(k_i·δ_j)) over the rows i = idx[t], t < kn
   * (k from kOff), when every new entry is finite and not −0: then rowNonZero[i] = 1, io[0] the
   * greatest |S_ij| written, and 1 | 2 (some entry written ≠ 0) | 4 (some < 0) returned; otherwise
   * 0, nothing written. Every array must be a view of this heap, dv a multiple of 4.
   */
  gdnKeyRows(S: Float32Array, k: Float32Array, kOff: number, idx: Int32Array, kn: number, delta: Float32Array, dv: number,
    rowNonZero: Uint8Array, io: Float32Array): number {
    return this.gdnKeyRowsAt(S.byteOffset, k.byteOffset + 4 * kOff, idx.byteOffset, kn, delta.byteOffset, dv, rowNonZero.byteOffset, io.byteOffset);
  }

  /** gdnKeyRows with each array given by its byte address in this heap (k at its entry kOff). */
  gdnKeyRowsAt(sAt: number, kAt: number, idxAt: number, kn: number, deltaAt: number, dv: number, rnzAt: number, ioAt: number): number {
    return this.keyRowsFn(sAt, kAt, idxAt, kn, deltaAt, dv, rnzAt, ioAt);
  }

  /**
   * wasm-gdn-kernels.ts l2norm: out[outOff…] ← gdn-token.ts l2normSeq of x[xOff…] (n entries, a
   * multiple of 4) scaled by s (a float32 value), with `nz` (n int32) as scratch; 0 when done, 1
   * when r is not finite and positive (out then holds x; the caller runs its JavaScript). Every
   * array must be a view of this heap.
   */
  gdnL2norm(x: Float32Array, xOff: number, n: number, out: Float32Array, outOff: number, s: number, nz: Int32Array): number {
    return this.gdnL2normAt(x.byteOffset + 4 * xOff, n, out.byteOffset + 4 * outOff, s, nz.byteOffset);
  }

  /** gdnL2norm with each array given by its byte address in this heap (x and out at their first entries). */
  gdnL2normAt(xAt: number, n: number, outAt: number, s: number, nzAt: number): number {
    return this.l2normFn(xAt, n, outAt, s, nzAt);
  }

  /**
   * wasm-gdn-kernels.ts convActivate over the control block at byte address ctlAt (CONV_CTL): the channels of the
   * listed rows (or every channel) whose input moved join the active list; returns their count.
   */
  convActivateAt(ctlAt: number): number {
    return this.convActivateFn(ctlAt);
  }

  /**
   * wasm-gdn-kernels.ts convChannels over the control block at ctlAt: the active channels from its resume index on;
   * 0 when done, 1 at a channel left to the caller (non-finite taps or fold; ctl says where). K, the
   * block's kernel size, picks the function: convChannels4 (its taps unrolled) for 4, else convChannels;
   * `bf16`: their bf16 forms, whose outputs are bf(silu32(bf(y))) (convChannelsBf16, convChannels4Bf16).
   */
  convChannelsAt(ctlAt: number, K: number, bf16: boolean): number {
    if (bf16) return K === 4 ? this.convChannels4Bf16Fn(ctlAt) : this.convChannelsBf16Fn(ctlAt);
    return K === 4 ? this.convChannels4Fn(ctlAt) : this.convChannelsFn(ctlAt);
  }

  /**
   * wasm-gdn-kernels.ts gatedNorm over the control block at ctlAt (NORM_CTL): the heads from its resume index on;
   * 0 when done, 1 at a head left to the caller (a NaN output; ctl says which, and the changed count).
   * `bf16`: gatedNormBf16, whose entries make the bf16 profile's casts.
   */
  gatedNormAt(ctlAt: number, bf16: boolean): number {
    return (bf16 ? this.gatedNormBf16Fn : this.gatedNormFn)(ctlAt);
  }

  /**
   * wasm-residual-kernels.ts addLists: o_i = fl(x_i + b_i) for the indices of list a (aN), then of
   * list b (bN), the ones whose bits moved appended to `changed`; every array must be a view of
   * this heap. Returns 0 when done, 1 at a NaN sum (not stored); `appended` is the appended count
   * either way. `bf16`: o_i = bf(fl(x_i + b_i)) (addListsBf16).
   */
  addLists(x: Float32Array, b: Float32Array, o: Float32Array, a: Int32Array, aN: number, bList: Int32Array, bN: number,
    changed: Int32Array, bf16 = false): number {
    return this.addListsAt(x.byteOffset, b.byteOffset, o.byteOffset, a.byteOffset, aN, bList.byteOffset, bN, changed.byteOffset, bf16);
  }

  /** addLists with each array given by its byte address in this heap. */
  addListsAt(xAt: number, bAt: number, oAt: number, aAt: number, aN: number, bListAt: number, bN: number, changedAt: number,
    bf16: boolean): number {
    return (bf16 ? this.addListsBf16Fn : this.addListsFn)(xAt, bAt, oAt, aAt, aN, bListAt, bN, changedAt, ADD_IO_AT);
  }

  /**
   * wasm-residual-kernels.ts normListed: when every listed x_j is finite and its square absorbed in
   * the prefixes P (NormSite), ov_i = fl(fl(x_i·r)·w1_i) at the listed indices, the ones whose bits
   * moved appended to `changed`, and their count returned; otherwise −1, nothing written. r and
   * every w1_i must be finite (r a float32 value), every array a view of this heap. `bf16`: ov_i =
   * bf(fl(fl(x_i·r)·w1_i)) (normListedBf16).
   */
  normListed(x: Float32Array, P: Float32Array, list: Int32Array, n: number, w1: Float32Array, ov: Float32Array,
    changed: Int32Array, r: number, bf16 = false): number {
    return this.normListedAt(x.byteOffset, P.byteOffset, list.byteOffset, n, w1.byteOffset, ov.byteOffset, changed.byteOffset, r, bf16);
  }

  /** normListed with each array given by its byte address in this heap. */
  normListedAt(xAt: number, pAt: number, listAt: number, n: number, w1At: number, ovAt: number, changedAt: number, r: number,
    bf16: boolean): number {
    return (bf16 ? this.normListedBf16Fn : this.normListedFn)(xAt, pAt, listAt, n, w1At, ovAt, changedAt, r);
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

  /**
   * wasm-fold-kernel.ts foldInputs: an incremental matmul's first pass over its input x (from xOff,
   * cols entries) and its column records (the bits of columns below colEnd and of the non-zero
   * inputs past it, the walks' starts from colPtr up to colEnd): the count of sign-bit-set inputs,
   * or −1 at one that is not finite. Every array must be a view of this heap.
   */
  foldInputs(cols: number, colEnd: number, x: Float32Array, xOff: number, colBits: Uint32Array, colPtr: Uint32Array): number {
    return this.foldInputsFn(cols, colEnd, x.byteOffset + 4 * xOff, colBits.byteOffset, colPtr.byteOffset);
  }

  /** The number of indices the last addLists appended. */
  get appended(): number {
    return this.addIo[0]!;
  }

}
