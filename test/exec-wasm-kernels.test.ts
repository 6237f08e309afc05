/**
 * The wasm kernels (src/exec/wasm-kernels.ts) against plain re-statements of their contracts, bit
 * for bit:
 *  - the column walk: y's float32 bits after y_r += w·Δx in double (values and Δx drawn so that
 *    products and sums round), the marks, the reached-row list and its length, and the tracked
 *    rows' exact updates (their records' float64 bits, y, the refold list and count), over random
 *    walk lists whose rows carry every kind of mark (bounded or tracked, this call's epoch or
 *    another, to be refolded or not) and records that pass and fail each of the update's checks;
 *  - the SwiGLU: h = float32(silu32(g)·u) (numeric.ts silu32, both forms) and the changed-unit
 *    list, over gates at ±0, both saturated ends and their edges, the formula's range, ±∞ and NaN,
 *    with gate and up rows listed in any order and repeated.
 * And the heap: it is made (WebAssembly is there in Node 20), its arrays are zero-filled, 8-byte
 * aligned, and a request past its end is refused.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { WasmHeap } from '../src/exec/wasm-heap.ts';
import { TRACK, TRACK_WORDS } from '../src/exec/wasm-layout.ts';
import { kernelModuleBytes } from '../src/exec/wasm-kernels.ts';
import { at4, bf16Of, get, I32, i32, inc, kernelModuleOf, mem, OP, set, whileLess } from '../src/exec/wasm-emit.ts';
import { f32BitsToBf16 } from '../src/safetensors/dtype.ts';
import { GDN_KERNEL_MODULE_BASE64, KERNEL_MODULE_BASE64 } from '../src/exec/wasm-kernel-bytes.ts';
import { gdnKernelModuleBytes } from '../src/exec/wasm-gdn-kernels.ts';
import { roundBf16, silu32, siluFormula } from '../src/exec/numeric.ts';
import { turn } from './helpers/turn.ts';

/** WebAssembly.Module's constructor and statics used here (the project's TypeScript libs do not declare them). */
interface WasmModuleApi {
  new (bytes: Uint8Array): object;
  customSections(mod: object, name: string): ArrayBuffer[];
  exports(mod: object): { name: string; kind: string }[];
}
const WasmModule = (globalThis as unknown as { WebAssembly: { Module: WasmModuleApi } }).WebAssembly.Module;

const bitsOf = (a: Float32Array): number[] => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));

function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => { s = (Math.imul(s, 1103515245) + 12345) >>> 0; return s / 4294967296; };
}

interface Walk { k0: number; k1: number; dx: number; xn: number; xo: number; lx: number }

/**
 * A tracked row's exact update (the contract: delta.ts trackedUpdate's double operations, restated):
 * the record e[s4 … s4+3] = exact sum, absolute sum, T, lowest bit; true when the row is to be refolded.
 */
function trackedRef(e: Float64Array, s4: number, y: Float32Array, r: number, w: number, xn: number, xo: number, low: number, lx: number): boolean {
  const T = e[s4 + 2]!;
  const pn = w * xn;
  const po = w * xo;
  const v = (e[s4] = e[s4]! + (pn - po));
  const sAbs = (e[s4 + 1] = e[s4 + 1]! + (Math.abs(pn) - Math.abs(po)));
  y[r] = v + 0;
  return T === 0 || (pn !== 0 && (low + lx < e[s4 + 3]! || Math.abs(pn) >= T)) || !(sAbs + Math.abs(v) < T + T);
}

/** A float32's lowest set bit's exponent (0 for ±0): delta.ts weightLows, restated. */
function lowOf(w: number): number {
  if (w === 0) return 0;
  let e = 0;
  while (Number.isInteger(w * 2 ** -(e + 1))) e++; // (w = odd · 2^e)
  while (!Number.isInteger(w * 2 ** -e)) e--;
  return e;
}

/** The contract (wasm-kernels.ts module comment), on plain arrays. */
function reference(
  walks: Walk[], rowIdx: Uint16Array, values: Float32Array, mark: Uint16Array, y: Float32Array, rows: Int32Array,
  slot: Int32Array, e: Float64Array, refold: number[], cur: number, nr: number,
): { nr: number; updates: number; tracked: number } {
  let updates = 0;
  let tracked = 0;
  for (const { k0, k1, dx, xn, xo, lx } of walks) {
    for (let k = k0; k < k1; k++) {
      const r = rowIdx[k]!;
      const f = mark[r]!;
      if ((f & 1) === 0) {
        if (f !== cur) { mark[r] = cur; rows[nr++] = r; }
        y[r] = Math.fround(y[r]! + values[k]! * dx);
        updates++;
        continue;
      }
      if ((f & ~3) !== cur) { mark[r] = cur | 1; rows[nr++] = r; } else if ((f & 2) !== 0) continue;
      tracked++;
      if (trackedRef(e, 4 * slot[r]!, y, r, values[k]!, xn, xo, lowOf(values[k]!), lx)) { mark[r] = cur | 3; refold.push(r); }
    }
  }
  return { nr, updates, tracked };
}

const VALUES = [1, -1, 3, 0.1, -2.5, 1e-20, 7.25, 2 ** 100, -0.3333, 1e30, 0];

describe('wasm kernels', () => {
  it('the stored module bytes the runtime compiles are the emitters\' (else: npx tsx tools/wasm-kernel-bytes.ts --write)', () => {
    const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64');
    expect(KERNEL_MODULE_BASE64, 'src/exec/wasm-kernel-bytes.ts is stale: npx tsx tools/wasm-kernel-bytes.ts --write').toBe(b64(kernelModuleBytes()));
    expect(GDN_KERNEL_MODULE_BASE64, 'src/exec/wasm-kernel-bytes.ts is stale: npx tsx tools/wasm-kernel-bytes.ts --write').toBe(b64(gdnKernelModuleBytes()));
  });

  it('the module compiles and a heap is made (Node 20 has WebAssembly; create gives null when it does not compile)', () => {
    expect(kernelModuleBytes().subarray(0, 4)).toEqual(Uint8Array.from([0, 0x61, 0x73, 0x6d]));
    expect(WasmHeap.create(1, siluFormula)).not.toBeNull();
    expect(WasmHeap.create(0, siluFormula)).toBeNull(); // 0: walks in JavaScript
  });

  it('both modules name their functions (the name section profiles read), in the order they are exported', () => {
    // the function names subsection of a module's `name` custom section, decoded
    const namesOf = (bytes: Uint8Array): string[] => {
      const mod = new WasmModule(bytes);
      const [sec] = WasmModule.customSections(mod, 'name');
      expect(sec).toBeDefined();
      const b = new Uint8Array(sec!);
      let at = 0;
      const uleb = (): number => { let n = 0, shift = 0, x; do { x = b[at++]!; n |= (x & 0x7f) << shift; shift += 7; } while (x & 0x80); return n; };
      const text = (): string => { const len = uleb(); const t = new TextDecoder().decode(b.subarray(at, at + len)); at += len; return t; };
      expect(b[at++]).toBe(1); // the function names subsection
      uleb(); // its size
      const names: string[] = [];
      for (let n = uleb(), i = 0; i < n; i++) { expect(uleb()).toBe(i); names.push(text()); }
      const exported = WasmModule.exports(mod).filter((e) => e.kind === 'function').map((e) => e.name);
      expect(names).toEqual(['siluFormula', ...exported]);
      return names;
    };
    expect(namesOf(kernelModuleBytes())).toEqual(['siluFormula', 'trackedUpdate', 'walk', 'swiglu', 'delta', 'addLists', 'normListed', 'foldColumns', 'foldInputs',
      'swigluBf16', 'addListsBf16', 'normListedBf16', 'castRowsBf16']);
    expect(namesOf(gdnKernelModuleBytes())).toEqual(['siluFormula', 'dots', 'delta', 'convActivate', 'convChannels', 'gatedNorm', 'keyRows', 'l2norm', 'convChannels4',
      'convChannelsBf16', 'convChannels4Bf16', 'gatedNormBf16']);
  });

  it('heap: zero-filled, 8-byte aligned arrays; a request past the end gets null, and nothing is taken (carve: all of a spec or none)', () => {
    const heap = WasmHeap.create(1, siluFormula)!;
    const a = heap.take(Uint16Array, 3)!;
    const b = heap.take(Float64Array, 5)!;
    expect(a.buffer).toBe(heap.buffer);
    expect(b.byteOffset % 8).toBe(0);
    expect(b.byteOffset).toBeGreaterThanOrEqual(a.byteOffset + 6);
    expect(Array.from(b)).toEqual([0, 0, 0, 0, 0]);
    const free = heap.free;
    expect(heap.take(Uint8Array, free + 1)).toBeNull();
    expect(heap.free).toBe(free);
    expect(heap.take(Uint8Array, free)).not.toBeNull();
    // carve: all of a spec or nothing
    const h2 = WasmHeap.create(1, siluFormula)!;
    const room = h2.free;
    // a: 3 float32s, 16 bytes once aligned; b: the rest in float64s (room is a multiple of 8)
    expect(h2.carve({ a: [Float32Array, 3], b: [Float64Array, (room - 16) / 8 + 1] })).toBeNull(); // 8 bytes short
    expect(h2.free).toBe(room);
    const got = h2.carve({ a: [Float32Array, 3], b: [Float64Array, (room - 16) / 8] })!;
    expect([got.a.length, got.b.byteOffset - got.a.byteOffset, Array.from(got.b.subarray(0, 2)), h2.free]).toEqual([3, 16, [0, 0], 0]);
  });

  it('property: the kernel gives the contract\'s y bits, marks, reached rows, tracked rows\' records and refold list', async () => {
    let bounded = 0;
    let trackedSeen = 0;
    let refolds = 0;
    const bits64 = (a: Float64Array): number[] => Array.from(new Uint32Array(a.buffer, a.byteOffset, 2 * a.length));
    // (a wasm memory a run: in a loaded worker V8 collects to free their address space, so each
    // run begins with a turn of the event loop for the test runner's messages)
    await fc.assert(fc.asyncProperty(fc.integer({ min: 0, max: 2 ** 31 - 1 }), async (seed) => {
      await turn();
      const rnd = lcg(seed);
      const nRows = 1 + Math.floor(rnd() * (rnd() < 0.2 ? 65536 : 300));
      const nnz = 1 + Math.floor(rnd() * 400);
      const heap = WasmHeap.create(4, siluFormula)!;
      const rowIdx = heap.take(Uint16Array, nnz)!;
      const values = heap.take(Float32Array, nnz)!;
      const mark = heap.take(Uint16Array, nRows)!;
      const y = heap.take(Float32Array, nRows)!;
      const rows = heap.take(Int32Array, nRows + nnz)!;
      const slot = heap.take(Int32Array, nRows)!;
      const refold = heap.take(Int32Array, nRows + nnz + 3)!;
      const nWalk = Math.floor(rnd() * 30);
      const walkList = heap.take(Int32Array, 4 * Math.max(1, nWalk))!;
      const walkDx = new Float64Array(walkList.buffer, walkList.byteOffset, 2 * Math.max(1, nWalk));
      const walkX = heap.take(Float64Array, 2 * Math.max(1, nWalk))!;
      const walkLow = heap.take(Int32Array, Math.max(1, nWalk))!;
      const track = heap.take(Int32Array, TRACK_WORDS)!;
      for (let k = 0; k < nnz; k++) {
        rowIdx[k] = Math.floor(rnd() * nRows);
        values[k] = rnd() < 0.5 ? VALUES[Math.floor(rnd() * VALUES.length)]! : Math.fround((rnd() - 0.5) * 1000);
      }
      const epoch = 1 + Math.floor(rnd() * 16382);
      const cur = epoch << 2;
      const other = ((epoch % 16383) + 1) << 2;
      let nSlots = 0;
      for (let r = 0; r < nRows; r++) {
        const u = rnd();
        mark[r] = u < 0.4 ? 0 : u < 0.55 ? cur : u < 0.65 ? other : (rnd() < 0.5 ? cur : other) | [1, 3, 1][Math.floor(rnd() * 3)]!;
        y[r] = rnd() < 0.5 ? Math.floor(rnd() * 100) : Math.fround((rnd() - 0.5) * 1e6);
        if ((mark[r]! & 1) !== 0) slot[r] = ++nSlots; // (slots in the order rows were met, not the rows')
      }
      // the records: exact sums, absolute sums at or above them, T = 0 (not exact) or a power of two, lowest bits
      const e = heap.take(Float64Array, 4 * (nSlots + 1))!;
      for (let s4 = 4; s4 < e.length; s4 += 4) {
        const v = rnd() < 0.7 ? Math.floor((rnd() - 0.5) * 2000) : (rnd() - 0.5) * 1e6;
        e[s4] = v;
        e[s4 + 1] = Math.abs(v) + Math.floor(rnd() * 3000);
        e[s4 + 2] = rnd() < 0.15 ? 0 : 2 ** Math.floor(rnd() * 40);
        e[s4 + 3] = Math.floor(rnd() * 61) - 30;
      }
      const walks: Walk[] = [];
      const xs = [0, -0, 1, -2, 3, 0.5, -0.75, 1024, 1e-7, -3e5];
      const pickX = (): number => (rnd() < 0.6 ? xs[Math.floor(rnd() * xs.length)]! : Math.fround((rnd() - 0.5) * 1e4));
      for (let j = 0; j < nWalk; j++) {
        const k0 = Math.floor(rnd() * nnz);
        const k1 = Math.min(nnz, k0 + Math.floor(rnd() * 12)); // empty walks too
        const dx = rnd() < 0.5 ? Math.floor(rnd() * 9) - 4 : (rnd() - 0.5) * 1e5 * rnd(); // doubles of all kinds
        const xn = pickX(), xo = pickX();
        const lx = Math.floor(rnd() * 21) - 10;
        walks.push({ k0, k1, dx, xn, xo, lx });
        walkList[4 * j] = k0;
        walkList[4 * j + 1] = k1;
        walkDx[2 * j + 1] = dx;
        walkX[2 * j] = xn;
        walkX[2 * j + 1] = xo;
        walkLow[j] = lx;
      }
      const nr0 = Math.floor(rnd() * 3);
      const nf0 = Math.floor(rnd() * 3);
      const wantMark = mark.slice();
      const wantY = y.slice();
      const wantRows = rows.slice();
      const wantE = e.slice();
      const wantRefold = Array.from(refold.subarray(0, nf0));
      const want = reference(walks, rowIdx, values, wantMark, wantY, wantRows, slot, wantE, wantRefold, cur, nr0);
      track.set([slot.byteOffset, e.byteOffset, refold.byteOffset, nf0, walkX.byteOffset, walkLow.byteOffset]);
      const nr = heap.walk(nWalk, walkList, mark, y, rows, rowIdx, values, track, cur, nr0);
      expect(nr).toBe(want.nr);
      expect(bitsOf(y)).toEqual(bitsOf(wantY));
      expect(Array.from(mark)).toEqual(Array.from(wantMark));
      expect(Array.from(rows.subarray(0, nr))).toEqual(Array.from(wantRows.subarray(0, nr)));
      expect(bits64(e)).toEqual(bits64(wantE));
      expect(track[TRACK.nf]).toBe(wantRefold.length);
      expect(Array.from(refold.subarray(0, track[TRACK.nf]))).toEqual(wantRefold);
      bounded += want.updates;
      trackedSeen += want.tracked;
      refolds += wantRefold.length - nf0;
    }), { numRuns: 300 });
    expect(bounded).toBeGreaterThan(1000);
    expect(trackedSeen).toBeGreaterThan(500);
    expect(refolds).toBeGreaterThan(100); // updates that failed a check
    expect(trackedSeen - refolds).toBeGreaterThan(100); // and updates that passed them
  });

  it('a tracked row\'s update at each check\'s boundary: |w·x_new| = T, S + |Σ| = 2T, the low bits\' sum = the record\'s lowest bit', () => {
    // one tracked row (slot 1), one entry w = 2 (its lowest set bit 2^1), x_old = 0; T = 16; each case a record, x_new and lowbit32(x_new)
    const cases: { e: [number, number, number, number]; xn: number; lx: number; refold: boolean }[] = [
      { e: [0, -100, 16, -100], xn: 8, lx: 0, refold: true }, // |pn| = 16 = T (the sums pass)
      { e: [0, -100, 16, -100], xn: 7.5, lx: 0, refold: false }, // |pn| = 15 < T
      { e: [0, 4, 16, -100], xn: 7, lx: 0, refold: true }, // S + |Σ| = 18 + 14 = 32 = 2T
      { e: [0, 3, 16, -100], xn: 7, lx: 0, refold: false }, // 31 < 2T
      { e: [0, 0, 16, 3], xn: 1, lx: 1, refold: true }, // 1 + 1 = 2 < 3
      { e: [0, 0, 16, 2], xn: 1, lx: 1, refold: false }, // 2 = 2: not below
      { e: [0, 0, 0, -100], xn: 1, lx: 0, refold: true }, // T = 0: not exact
    ];
    for (const c of cases) {
      const heap = WasmHeap.create(1, siluFormula)!;
      const f32s = (v: number[]): Float32Array => { const a = heap.take(Float32Array, v.length)!; a.set(v); return a; };
      const i32s = (v: number[]): Int32Array => { const a = heap.take(Int32Array, v.length)!; a.set(v); return a; };
      const rowIdx = heap.take(Uint16Array, 1)!;
      const mark = heap.take(Uint16Array, 1)!;
      mark[0] = (1 << 2) | 1; // tracked, another call's epoch
      const y = f32s([0]);
      const rows = i32s([0]);
      const walkList = i32s([0, 1, 0, 0]);
      new Float64Array(walkList.buffer, walkList.byteOffset, 2)[1] = c.xn; // Δx (unused by a tracked row)
      const walkX = heap.take(Float64Array, 2)!;
      walkX.set([c.xn, 0]);
      const walkLow = i32s([c.lx]);
      const slot = i32s([1]);
      const e = heap.take(Float64Array, 8)!;
      e.set(c.e, 4);
      const refold = i32s([0]);
      const track = i32s([slot.byteOffset, e.byteOffset, refold.byteOffset, 0, walkX.byteOffset, walkLow.byteOffset, 0, 0]);
      const cur = 2 << 2;
      expect(heap.walk(1, walkList, mark, y, rows, rowIdx, f32s([2]), track, cur, 0)).toBe(1);
      expect([track[TRACK.nf], mark[0]]).toEqual(c.refold ? [1, cur | 3] : [0, cur | 1]);
      expect([e[4], y[0]]).toEqual([2 * c.xn, 2 * c.xn]);
    }
  });

  it('bf16Of (wasm-emit.ts) gives f32BitsToBf16\'s bits for every kind of float32: ties, carries into the exponent, overflow, subnormals, NaN payloads', () => {
    // a module whose one function casts n float32 values in place: at + 4i ← bf16Of(at + 4i)
    const [AT, N, I, B] = [0, 1, 2, 3];
    const bytes = kernelModuleOf([{
      name: 'cast', params: [I32, I32], results: [], locals: [[2, I32]],
      body: [
        ...i32(0), ...set(I),
        ...whileLess(I, get(N), [...at4(AT, I), ...at4(AT, I), ...mem(OP.f32Load, 2), ...bf16Of(B), ...mem(OP.f32Store, 2), ...inc(I, 1)]),
        OP.end,
      ],
    }]);
    const WA = (globalThis as unknown as { WebAssembly: { Memory: new (d: { initial: number }) => { buffer: ArrayBuffer };
      Instance: new (m: unknown, i: unknown) => { exports: { cast: (at: number, n: number) => void } } } }).WebAssembly;
    const memory = new WA.Memory({ initial: 1 });
    const cast = new WA.Instance(new WasmModule(bytes), { env: { memory, siluFormula: () => 0 } }).exports.cast;
    const special = [0, 0x80000000, 0x3f800000, 0x3f808000, 0x3f818000, 0x3f807fff, 0x3f808001, 0x3fff8000, 0x7f7f8000, 0x7f7fffff,
      0xff7fffff, 0x7f800000, 0xff800000, 0x7f800001, 0x7f80ffff, 0x7fc00000, 0xffc00000, 0x7fffffff, 0xffffffff, 0x7fbfffff, 0x00008000,
      0x00018000, 0x0000ffff, 0x807fffff, 0x00000001];
    const rnd = lcg(20261207);
    const words = new Uint32Array(16_000);
    words.set(special);
    for (let i = special.length; i < words.length; i++) {
      const r = Math.floor(rnd() * 2 ** 32);
      // a third with a tie or near-tie in the low half, a sixth NaN
      words[i] = i % 3 === 0 ? (r & 0xffff0000) | [0x8000, 0x7fff, 0x8001][i % 9 / 3 | 0]! : i % 6 === 1 ? (r | 0x7f800001) >>> 0 : r;
    }
    new Uint32Array(memory.buffer, 0, words.length).set(words);
    cast(0, words.length);
    const got = new Uint32Array(memory.buffer, 0, words.length);
    let rounded = 0;
    for (let i = 0; i < words.length; i++) {
      const want = (f32BitsToBf16(words[i]!) << 16) >>> 0;
      if (got[i] !== want) expect([i, words[i]!.toString(16), got[i]!.toString(16)]).toEqual([i, words[i]!.toString(16), want.toString(16)]);
      if (want !== ((words[i]! & 0xffff0000) >>> 0)) rounded++;
    }
    expect(rounded).toBeGreaterThan(4000); // (the rounding up is exercised, not just the truncation)
  });

  it('castRowsBf16: y_r = bf(acc_r) at the listed rows, bit for bit (f32BitsToBf16), every other y_r untouched', () => {
    const heap = WasmHeap.create(1, siluFormula)!;
    const n = 3000;
    const acc = heap.take(Float32Array, n)!;
    const y = heap.take(Float32Array, n)!;
    const rows = heap.take(Int32Array, n)!;
    const accBits = new Uint32Array(acc.buffer, acc.byteOffset, n);
    const yBits = new Uint32Array(y.buffer, y.byteOffset, n);
    const rnd = lcg(7);
    for (let r = 0; r < n; r++) {
      const w = Math.floor(rnd() * 2 ** 32);
      accBits[r] = r % 4 === 0 ? (w & 0xffff0000) | 0x8000 : r % 17 === 0 ? (w | 0x7f800001) >>> 0 : w; // ties and NaNs among them
      yBits[r] = 0x12345678;
    }
    let nr = 0;
    for (let r = 0; r < n; r++) if (rnd() < 0.6) rows[nr++] = r;
    heap.castRowsBf16At(nr, rows.byteOffset, acc.byteOffset, y.byteOffset);
    const listed = new Set(rows.subarray(0, nr));
    for (let r = 0; r < n; r++) {
      const want = listed.has(r) ? (f32BitsToBf16(accBits[r]!) << 16) >>> 0 : 0x12345678;
      if (yBits[r] !== want) expect([r, yBits[r]!.toString(16)]).toEqual([r, want.toString(16)]);
    }
    expect(nr).toBeGreaterThan(1500);
  });

  it('property: swiglu gives h = float32(silu32(g)·u) bit for bit and lists the units whose bits moved (bf16: bf(fl(bf(silu32(g))·u)))', async () => {
    const G = [0, -0, 17, 16.999998, -89, -88.99999, -89.00001, 1, -1, 3.5, -20, 100, -1e30, 1e30, Infinity, -Infinity, NaN, 1e-40, -1e-40];
    const U = [1, -1, 0, -0, 2.5, 1e30, -3, Infinity, 7];
    let changedSeen = 0;
    let formulaSeen = 0;
    let castsSeen = 0;
    await fc.assert(fc.asyncProperty(fc.integer({ min: 0, max: 2 ** 31 - 1 }), fc.boolean(), fc.boolean(), async (seed, mul, bf16) => {
      await turn(); // (a wasm memory a run, as above)
      const rnd = lcg(seed);
      const form = mul ? 'mul' : 'div';
      const n = 1 + Math.floor(rnd() * 200);
      const heap = WasmHeap.create(1, siluFormula)!;
      const go = heap.take(Float32Array, 2 * n)!;
      const h = heap.take(Float32Array, n)!;
      const changed = heap.take(Int32Array, 4 * n)!;
      const nr = Math.floor(rnd() * 3 * n);
      const rows = heap.take(Int32Array, Math.max(1, nr))!;
      const draw = (vals: number[]) => (rnd() < 0.6 ? vals[Math.floor(rnd() * vals.length)]! : Math.fround((rnd() - 0.5) * 60));
      for (let i = 0; i < n; i++) { go[i] = draw(G); go[n + i] = draw(U); h[i] = rnd() < 0.5 ? draw(U) : 0; }
      for (let t = 0; t < nr; t++) rows[t] = Math.floor(rnd() * 2 * n);
      const wantH = h.slice();
      const wantBits = new Uint32Array(wantH.buffer);
      const want: number[] = [];
      for (let t = 0; t < nr; t++) {
        const r = rows[t]!;
        const i = r < n ? r : r - n;
        const g = go[i]!;
        const old = wantBits[i];
        if (g !== 0 && g < 17 && !(g <= -89 && g !== -Infinity)) formulaSeen++;
        const f32h = Math.fround((g === 0 ? g : silu32(g, form)) * go[n + i]!);
        // (bf16: mlp.ts's casts written out: the activation's output, then the product)
        wantH[i] = bf16 ? roundBf16(Math.fround((g === 0 ? g : roundBf16(silu32(g, form))) * go[n + i]!)) : f32h;
        if (bf16 && !Object.is(wantH[i], f32h)) castsSeen++;
        if (wantBits[i] !== old) want.push(i);
      }
      const nch = heap.swiglu(nr, rows, n, go, h, changed, form, bf16);
      expect(bitsOf(h)).toEqual(bitsOf(wantH));
      expect(Array.from(changed.subarray(0, nch))).toEqual(want);
      changedSeen += nch;
    }), { numRuns: 300 });
    expect(changedSeen).toBeGreaterThan(2000);
    expect(formulaSeen).toBeGreaterThan(2000);
    expect(castsSeen).toBeGreaterThan(1000);
  });
});
