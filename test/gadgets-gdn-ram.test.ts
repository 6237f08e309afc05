/**
 * The RAM gadget on pinned GDN heads (src/gadgets/gdn-ram.ts) through the real layer math of the
 * reference executor: random op streams (fast-check) compared bit for bit, at every position,
 * with a JS Map model of the RAM — read values, bits, valid flags — and the GDN state rows with
 * the one-hot digit layout derived here independently (word bits packed LSB first, fields in
 * order, 2 bits per 4-column group, hot value T = 64 for dk = 16 (16·√16) and
 * T = 181.01934814453125 for dk = 128 (docs/gadgets-gdn.md "Hot value T"), bf16(T) in the bf16 profile).
 * Also: write-only prompts through the chunked kernel, orders, profiles, costs, errors, and the
 * hazards (key scale 32, dt_bias −20) that break exactness.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Executor } from '../src/exec/executor.ts';
import type { ExecOptions } from '../src/exec/types.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { gdnDims } from '../src/model/naming.ts';
import type { ModelConfig } from '../src/model/config.ts';
import type { GdnWeights, Matrix } from '../src/model/weights.ts';
import type { RamDecl } from '../src/ir/types.ts';
import type { VDim } from '../src/lower/forms.ts';
import { buildHarness, type Harness } from './helpers/layer-harness.ts';
import { bf16ToF32, f32ToBf16 } from '../src/safetensors/dtype.ts';
import { ChipcError } from '../src/util/errors.ts';
import {
  findHotValue, formExactInAnyOrder, lowerRamToGdn, type GdnRamIo, type GdnRamLowering,
} from '../src/gadgets/gdn-ram.ts';
import { bitDiff } from './helpers/assert.ts';

const f32 = Math.fround;
const bf16 = (x: number) => bf16ToF32(f32ToBf16(x));
const tiny = resolveTarget('tiny').config;

function target(over: Partial<ModelConfig>): ModelConfig {
  return { ...tiny, vocabSize: 64, ...over };
}


const widthOf = (hi: number) => (hi <= 0 ? 0 : Math.ceil(Math.log2(hi + 1)));
const bitsOfRows = (rows: number) => Math.ceil(Math.log2(rows));

// ---- a RAM case: declaration, vdims, harness ------------------------------------------------

interface RamCase {
  target: ModelConfig;
  rows: number;
  fields: number[];
  ports: number;
  writeEnable: boolean;
  readEnable: boolean;
  keyScale?: number;
  /** Address bits given as one-hot digits (RamAddrDigit) on both ports; the other bits stay bits. */
  digits?: { lo: number; width: number }[];
}

interface Op {
  /** Write (applied when wen = 1 or the RAM has no write enable). */
  wen: 0 | 1;
  waddr: number;
  wvals: number[];
  reads: { en: 0 | 1; addr: number }[];
}

interface Built {
  c: RamCase;
  io: GdnRamIo;
  lowering: GdnRamLowering;
  numDims: number;
  encode: (op: Op) => { dim: VDim; value: number }[];
}

/** The IR declaration of a case's RAM. */
function ramDeclOf(c: RamCase): RamDecl {
  const loc = { file: 'test', line: 1, col: 1 };
  return {
    id: 0, name: 'mem', rows: c.rows, fields: c.fields.map((hi) => ({ lo: 0, hi })),
    write: { addr: 0, values: c.fields.map(() => 0), enable: c.writeEnable ? 0 : null, loc },
    reads: Array.from({ length: c.ports }, () => ({ addr: 0, enable: c.readEnable ? 0 : null, results: [], loc })),
    loc,
  };
}

function buildCase(c: RamCase): Built {
  let next = 0;
  const take = (n: number) => Array.from({ length: n }, () => next++);
  const nb = bitsOfRows(c.rows);
  const widths = c.fields.map(widthOf);
  const waddr = take(nb);
  // one-hot digit dims, allocated beside the bits (the bits a digit covers are ignored)
  const digitDims = () => (c.digits ?? []).map((d) => ({ ...d, oneHot: take(2 ** d.width) }));
  const wdigits = digitDims();
  const wen = c.writeEnable ? take(1)[0]! : null;
  const wbits = widths.map((w) => take(w));
  const reads = Array.from({ length: c.ports }, () => ({
    addrBits: take(nb), addrDigits: digitDims(), enable: c.readEnable ? take(1)[0]! : null,
  }));
  const outs = reads.map(() => ({
    values: c.fields.map(() => take(1)[0]!), bits: widths.map((w) => take(w)), valid: take(1)[0]!,
  }));
  const io: GdnRamIo = {
    write: { addrBits: waddr, addrDigits: wdigits, enable: wen, fieldBits: wbits },
    reads: reads.map((addr, p) => ({ addr, out: outs[p]! })),
  };
  const ram = ramDeclOf(c);
  const lowering = lowerRamToGdn(ram, io, gdnDims(c.target), { keyScale: c.keyScale });
  const encode = (op: Op) => {
    const e: { dim: VDim; value: number }[] = [];
    const put = (dim: VDim, v: number) => { if (v !== 0) e.push({ dim, value: v }); };
    // a digit's bits are left 0 in the bit dims (the decode must not read them)
    const inDigit = (b: number) => (c.digits ?? []).some((d) => b >= d.lo && b < d.lo + d.width);
    const putAddr = (bits: VDim[], digits: { lo: number; width: number; oneHot: VDim[] }[], a: number) => {
      bits.forEach((d, b) => { if (!inDigit(b)) put(d, (a >> b) & 1); });
      for (const dg of digits) put(dg.oneHot[(a >> dg.lo) & (2 ** dg.width - 1)]!, 1);
    };
    putAddr(waddr, wdigits, op.waddr);
    if (wen !== null) put(wen, op.wen);
    wbits.forEach((ds, f) => ds.forEach((d, j) => put(d, (op.wvals[f]! >> j) & 1)));
    reads.forEach((rp, p) => {
      putAddr(rp.addrBits, rp.addrDigits, op.reads[p]!.addr);
      if (rp.enable !== null) put(rp.enable, op.reads[p]!.en);
    });
    return e;
  };
  return { c, io, lowering, numDims: next, encode };
}

function harnessFor(b: Built, ops: Op[]): Harness {
  if (ops.length > b.c.target.vocabSize) throw new Error('test: more ops than vocabulary');
  return buildHarness({
    target: b.c.target,
    numDims: b.numDims,
    embedding: (t) => (t < ops.length ? b.encode(ops[t]!) : []),
    layers: [{ mixer: { kind: 'linear_attention', heads: b.lowering.heads }, ffn: [] }],
  });
}

interface Trace {
  out: Float32Array[];
  states: (Float32Array[] | undefined)[];
  ex: Executor;
}

/** Runs tokens 0..n−1 (token t = op t): the first `prefill` as one prompt, the rest as decode steps. */
function run(h: Harness, n: number, opts: ExecOptions & { prefill?: number } = {}): Trace {
  const ex = new Executor(h.weights, opts);
  const out: Float32Array[] = [];
  const states: (Float32Array[] | undefined)[] = [];
  ex.addHook((ev) => { out[ev.position] = ev.residualOut; states[ev.position] = ev.gdnState; });
  const tokens = Array.from({ length: n }, (_, i) => i);
  const pre = Math.max(1, Math.min(n, opts.prefill ?? 1));
  ex.prefill(tokens.slice(0, pre));
  for (let i = pre; i < n; i++) ex.decode(tokens[i]!);
  return { out, states, ex };
}

// ---- the independent model -------------------------------------------------------------------

/** The hot value derived by hand: o_hot = 16 = fl(T·fl(1/√dk)). */
function handHot(dk: number, profile: 'f32' | 'bf16'): number {
  const T = dk === 16 ? 64 : dk === 128 ? 181.01934814453125 : NaN;
  return profile === 'f32' ? T : bf16(T);
}

class RamModel {
  readonly mem = new Map<number, number[]>();
  constructor(readonly c: RamCase) {}
  apply(op: Op): void {
    if (!this.c.writeEnable || op.wen === 1) this.mem.set(op.waddr, op.wvals.slice());
  }
  /** Expected raw output dims of port p after this op (values, bits, valid). */
  read(op: Op, p: number): { values: number[]; bits: number[][]; valid: number } {
    const rp = op.reads[p]!;
    const en = !this.c.readEnable || rp.en === 1;
    const word = en ? this.mem.get(rp.addr) : undefined;
    const values = this.c.fields.map((_, f) => (word ? word[f]! : 0));
    return {
      values,
      bits: this.c.fields.map((hi, f) => Array.from({ length: widthOf(hi) }, (_, j) => (values[f]! >> j) & 1)),
      valid: word ? 1 : 0,
    };
  }
  /** The packed word bits (LSB first, fields in order). */
  wordBits(word: number[]): number[] {
    const out: number[] = [];
    this.c.fields.forEach((hi, f) => { for (let j = 0; j < widthOf(hi); j++) out.push((word[f]! >> j) & 1); });
    return out;
  }
  /**
   * The expected state of every value head of the layer (Hv heads × dk × dv): key head h is the
   * lowering's head h; its value head j holds word value head vi = part·r + j of rows
   * block·R … block·R + R − 1 (R = min(dk, 2^addrBits)); row layout: dv/4 groups, group g
   * (global g = vi·dv/4 + local) one-hot at column 4·local + digit, digit = bits 2g, 2g+1 of the word.
   */
  state(b: Built, hot: number): Float32Array[] {
    const { hk: Hk, hv: Hv, dk, dv } = gdnDims(this.c.target);
    const r = Hv / Hk;
    const R = Math.min(dk, 2 ** bitsOfRows(this.c.rows));
    const G = dv / 4;
    // packed rows (docs/gadgets-gdn.md): value heads 0 and 1 hold the whole word of the rows whose
    // select bit is j; without packing value head j holds word part part·r + j of rows block·R + i
    const packed = (b.lowering.layout.wordsPerRow ?? 1) === 2;
    // packed: the row number block·R + i with the select bit j inserted at bit selectBit
    const insert = (x: number, j: number) => { const sb = b.lowering.layout.selectBit!; const low = x % 2 ** sb; return (x - low) * 2 + j * 2 ** sb + low; };
    const states = Array.from({ length: Hv }, () => new Float32Array(dk * dv));
    b.lowering.roles.forEach((role, h) => {
      for (let j = 0; j < r; j++) {
        const vi = packed ? (j < 2 ? 0 : Infinity) : role.part * r + j;
        const first = packed ? insert(role.block * R, j < 2 ? j : 0) : role.block * R;
        const st = states[h * r + j]!;
        for (let i = 0; i < dk; i++) {
          const word = this.mem.get(first + i);
          if (!word || i >= R) continue;
          const bits = this.wordBits(word);
          const groups = Math.max(1, Math.ceil(bits.length / 2));
          if (vi * G >= groups) continue; // a value head the word does not use
          for (let gl = 0; gl < G; gl++) {
            const g = vi * G + gl;
            const digit = (bits[2 * g] ?? 0) + 2 * (bits[2 * g + 1] ?? 0);
            st[i * dv + gl * 4 + digit] = hot;
          }
        }
      }
    });
    return states;
  }
}

/** Reads of a written row seen by `mismatches` (so a test can show its streams exercise the RAM). */
const seen = { hits: 0 };

/** Mismatches of the output dims at one position against the model's reads. */
function outMismatch(b: Built, h: Harness, residual: Float32Array, model: RamModel, op: Op): number {
  let bad = 0;
  b.io.reads.forEach((rp, p) => {
    const want = model.read(op, p);
    seen.hits += want.valid;
    const o = rp.out;
    const got = (d: VDim) => residual[h.slotOf(d)]!;
    const dims: VDim[] = [...o.values!.map((d) => d!), ...o.bits!.flatMap((bs) => bs!), o.valid!];
    const exp = [...want.values, ...want.bits.flat(), want.valid];
    bad += bitDiff(Float32Array.from(dims.map(got)), Float32Array.from(exp));
  });
  return bad;
}

function stateMismatch(states: Float32Array[], want: Float32Array[]): number {
  let bad = 0;
  want.forEach((w, i) => { bad += bitDiff(states[i]!, w); });
  return bad;
}

/**
 * Runs the ops (token t = op t) and compares every decode position's outputs and state with the
 * model; prompt positions (the first `prefill`, writes only) are compared by their final state.
 */
function mismatches(b: Built, ops: Op[], opts: ExecOptions & { prefill?: number } = {}): number {
  const h = harnessFor(b, ops);
  const profile = opts.profile ?? 'f32';
  const hot = handHot(b.c.target.linearKeyHeadDim, profile);
  const tr = run(h, ops.length, opts);
  const model = new RamModel(b.c);
  const pre = Math.max(1, opts.prefill ?? 1);
  let bad = 0;
  ops.forEach((op, t) => {
    model.apply(op);
    if (t >= pre) bad += outMismatch(b, h, tr.out[t]!, model, op);
    if (t >= pre - 1) {
      const st = tr.states[t];
      if (!st) throw new Error(`test: no state at position ${t}`);
      bad += stateMismatch(st, model.state(b, hot));
    }
  });
  return bad;
}

// ---- op generators -----------------------------------------------------------------------------

function opArb(c: RamCase): fc.Arbitrary<Op> {
  const addr = fc.oneof(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: c.rows - 1 }), fc.integer({ min: c.rows - 3, max: c.rows - 1 }));
  return fc.record({
    wen: fc.constantFrom<0 | 1>(0, 1),
    waddr: addr,
    wvals: fc.tuple(...c.fields.map((hi) => fc.integer({ min: 0, max: hi }))),
    reads: fc.tuple(...Array.from({ length: c.ports }, () => fc.record({ en: fc.constantFrom<0 | 1>(0, 1, 1), addr }))),
  }).map((o) => ({ ...o, wvals: [...o.wvals], reads: [...o.reads] }));
}

const noop = (c: RamCase): Op => ({
  wen: 0, waddr: 0, wvals: c.fields.map(() => 0), reads: Array.from({ length: c.ports }, () => ({ en: 0 as const, addr: 0 })),
});

function streamArb(c: RamCase, len: number): fc.Arbitrary<Op[]> {
  return fc.array(opArb(c), { minLength: len - 8, maxLength: len - 1 }).map((ops) => [noop(c), ...ops]);
}

// ---- cases -------------------------------------------------------------------------------------

/** dk = dv = 16 with 8 key heads: 32 rows (2 blocks), 18-bit word (3 value heads, 2 key-head parts), 2 ports. */
const WIDE16: RamCase = {
  target: target({ linearNumKeyHeads: 8, linearNumValueHeads: 16 }),
  rows: 32, fields: [255, 3, 1, 127], ports: 2, writeEnable: true, readEnable: true,
};
/** tiny itself: 16 rows, one 7-bit word in one value head, 2 ports, no enables (every token writes and reads). */
const TINY: RamCase = {
  target: target({}), rows: 16, fields: [15, 7], ports: 2, writeEnable: false, readEnable: false,
};
/** dk = dv = 128: 256 rows (2 key heads), 72-bit word (2 value heads of one key head), 1 port. */
const WIDE128: RamCase = {
  target: target({ linearKeyHeadDim: 128, linearValueHeadDim: 128, vocabSize: 96 }),
  rows: 256, fields: [255, 255, 255, 255, 255, 255, 255, 255, 255], ports: 1, writeEnable: true, readEnable: true,
};
/** dk = dv = 128: 100 rows, 2 ports, a 9-bit field (256 = 100000000b) and a flag. */
const PORTS128: RamCase = {
  target: target({ linearKeyHeadDim: 128, linearValueHeadDim: 128 }),
  rows: 100, fields: [256, 1], ports: 2, writeEnable: true, readEnable: true,
};

describe('hot value T: fl(T·fl(1/√dk)) is a power of two o_hot ≥ 16, in f32 and after bf16 rounding', () => {
  it('dk = 16 → 64 (16·4), dk = 128 → 181.01934814453125 (docs/gadgets-gdn.md "Hot value T"); many dk satisfy the property', () => {
    expect(findHotValue(16).T).toBe(64);
    expect(findHotValue(128).T).toBe(181.01934814453125);
    for (const dk of [4, 8, 16, 32, 48, 64, 96, 128, 256, 512, 1024]) {
      const { T, oHot } = findHotValue(dk);
      const s = f32(1 / Math.sqrt(dk));
      expect(f32(T)).toBe(T);
      expect(T).toBeGreaterThan(17);
      expect(Number.isInteger(Math.log2(oHot)) && oHot >= 16).toBe(true);
      expect(f32(T * s)).toBe(oHot);
      expect(bf16(f32(bf16(T) * s))).toBe(oHot);
    }
  });
});

describe('layout and cost', () => {
  it('WIDE16: 8 key heads (2 ports × 2 row blocks × 2 word parts), 12 value heads; nnz = the assembled weights', () => {
    const b = buildCase(WIDE16);
    expect(b.lowering.roles).toEqual([
      { port: 0, block: 0, part: 0 }, { port: 0, block: 0, part: 1 }, { port: 0, block: 1, part: 0 }, { port: 0, block: 1, part: 1 },
      { port: 1, block: 0, part: 0 }, { port: 1, block: 0, part: 1 }, { port: 1, block: 1, part: 0 }, { port: 1, block: 1, part: 1 },
    ]);
    expect(b.lowering.cost.keyHeads).toBe(8);
    expect(b.lowering.cost.valueHeads).toBe(12);
    // field 0 (8 bits) spans 4 groups; field 3 (7 bits at offset 11) spans groups 5..8.
    expect(b.lowering.cost.maxProductsPerOutput).toBe(4);
    const h = harnessFor(b, [noop(WIDE16)]);
    const g = h.weights.layers[0]!.mixer as GdnWeights;
    const nnz = (m: Matrix) => m.csr!.values.length;
    expect(nnz(g.inProjQkv) + nnz(g.inProjZ) + nnz(g.inProjB) + nnz(g.outProj)).toBe(b.lowering.cost.nonZeros);
  });
});

const ORDERS: [string, ExecOptions['order']][] = [
  ['sequential', { kind: 'sequential' }], ['shuffled', { kind: 'shuffled', seed: 11 }], ['fma', { kind: 'fma' }],
];

describe('random op streams (decode steps) equal the Map model bit for bit: reads, bits, valid, state', () => {
  for (const profile of ['f32', 'bf16'] as const) {
    for (const [oname, order] of ORDERS) {
      it(`dk = 16, 2 ports, 2 row blocks, word over 3 value heads / 2 key heads — ${profile}, ${oname}`, () => {
        const b = buildCase(WIDE16);
        seen.hits = 0;
        fc.assert(fc.property(streamArb(WIDE16, 50), (ops) => mismatches(b, ops, { profile, order }) === 0),
          { numRuns: 3, seed: 100 + (profile === 'f32' ? 0 : 1) });
        expect(seen.hits).toBeGreaterThan(20);
      });
    }
  }
  it('tiny target, no enables (every token writes and reads), f32 and bf16', () => {
    const b = buildCase(TINY);
    for (const profile of ['f32', 'bf16'] as const) {
      fc.assert(fc.property(fc.array(opArb(TINY), { minLength: 40, maxLength: 50 }),
        (ops) => mismatches(b, ops, { profile }) === 0), { numRuns: 3, seed: 5 });
    }
  });
  it('dense path gives the same bits as the sparse path', () => {
    const b = buildCase(WIDE16);
    fc.assert(fc.property(streamArb(WIDE16, 30), (ops) => mismatches(b, ops, { path: 'dense' }) === 0), { numRuns: 2, seed: 9 });
  });
  for (const profile of ['f32', 'bf16'] as const) {
    it(`dk = dv = 128: 256 rows over 2 key heads, 72-bit word over 2 value heads — ${profile}`, () => {
      const b = buildCase(WIDE128);
      expect(b.lowering.cost.keyHeads).toBe(2);
      expect(b.lowering.cost.valueHeads).toBe(4);
      seen.hits = 0;
      fc.assert(fc.property(streamArb(WIDE128, 40), (ops) => mismatches(b, ops, { profile }) === 0), { numRuns: 2, seed: 21 });
      expect(seen.hits).toBeGreaterThan(5);
    });
  }
  for (const profile of ['f32', 'bf16'] as const) {
    it(`address digits: bits 0–2 and 4–5 as one-hot digits, bit 3 a bit, 2 ports over 2 row blocks — ${profile}`, () => {
      const c: RamCase = { ...WIDE16, rows: 48, fields: [15, 1], target: target({ linearNumKeyHeads: 8, linearNumValueHeads: 8 }), digits: [{ lo: 0, width: 3 }, { lo: 4, width: 2 }] };
      const b = buildCase(c);
      // a q/k row reads one dim per digit where it read each of the digit's bits: 5 bits → 2 dims
      const qkv = (bc: Built) => (harnessFor(bc, [noop(bc.c)]).weights.layers[0]!.mixer as GdnWeights).inProjQkv;
      const rowNnz = (m: Matrix, r: number) => m.csr!.rowPtr[r + 1]! - m.csr!.rowPtr[r]!;
      const plain = qkv(buildCase({ ...c, digits: undefined }));
      const withDigits = qkv(b);
      expect(rowNnz(plain, 0) - rowNnz(withDigits, 0)).toBe(3);
      seen.hits = 0;
      fc.assert(fc.property(streamArb(c, 50), (ops) => mismatches(b, ops, { profile }) === 0), { numRuns: 3, seed: 40 });
      expect(seen.hits).toBeGreaterThan(20);
    });
  }
  // Packed rows: two words per key-head row, one per value head (docs/gadgets-gdn.md "Packed rows").
  const PACKED16: RamCase = {
    target: target({ linearNumKeyHeads: 8, linearNumValueHeads: 16 }), rows: 64, fields: [15, 7], ports: 2, writeEnable: true, readEnable: true,
  };
  it('packed rows: 64 rows of a 7-bit word in 2 key heads per port (value head j holds the rows with bit 5 = j); unpacked it takes 4', () => {
    const b = buildCase(PACKED16);
    expect(b.lowering.layout.wordsPerRow).toBe(2);
    expect(b.lowering.layout.selectBit).toBe(5); // bits 4 and 5 cost the same: the highest
    // the bit whose select forms read the fewest dims: with bits 5–6 in a digit, the plain bit 4
    expect(buildCase({ ...PACKED16, rows: 128, digits: [{ lo: 5, width: 2 }] }).lowering.layout.selectBit).toBe(4);
    expect(b.lowering.cost.keyHeads).toBe(2 * 2);
    expect(b.lowering.cost.valueHeads).toBe(2 * 2 * 2);
    const plain = lowerRamToGdn({ ...ramDeclOf(PACKED16) }, b.io, gdnDims(PACKED16.target), { packRows: false });
    expect(plain.layout.wordsPerRow).toBe(1);
    expect(plain.cost.keyHeads).toBe(2 * 4);
    // a RAM whose rows are not a power of two is not packed (an address past the rows must write nothing)
    expect(buildCase({ ...PACKED16, rows: 48 }).lowering.layout.wordsPerRow).toBe(1);
    expect(buildCase({ ...PACKED16, rows: 96, ports: 1 }).lowering.layout.wordsPerRow).toBe(1);
    // nor a word that needs two value heads
    expect(buildCase({ ...PACKED16, fields: [255, 255] }).lowering.layout.wordsPerRow).toBe(1);
  });
  for (const profile of ['f32', 'bf16'] as const) {
    for (const [oname, order] of profile === 'f32' ? ORDERS : ORDERS.slice(0, 1)) {
      it(`packed rows, 2 ports with enables — ${profile}, ${oname}`, () => {
        const b = buildCase(PACKED16);
        seen.hits = 0;
        fc.assert(fc.property(streamArb(PACKED16, 50), (ops) => mismatches(b, ops, { profile, order }) === 0), { numRuns: 3, seed: 60 });
        expect(seen.hits).toBeGreaterThan(20);
      });
    }
    it(`packed rows, the select bit inside a one-hot digit (bits 3–5), no enables — ${profile}`, () => {
      const c: RamCase = { ...PACKED16, ports: 1, writeEnable: false, readEnable: false, digits: [{ lo: 0, width: 3 }, { lo: 3, width: 3 }] };
      const b = buildCase(c);
      expect(b.lowering.layout.wordsPerRow).toBe(2);
      fc.assert(fc.property(fc.array(opArb(c), { minLength: 40, maxLength: 50 }), (ops) => mismatches(b, ops, { profile }) === 0), { numRuns: 3, seed: 61 });
    });
  }
  it('address digits are checked: overlapping spans and a one-hot of the wrong size are errors', () => {
    const c: RamCase = { ...WIDE16, digits: [{ lo: 0, width: 3 }] };
    const b = buildCase(c);
    const wr = b.io.write!;
    const bad = (digits: { lo: number; width: number; oneHot: (VDim | null)[] }[]) => () => lowerRamToGdn(
      { id: 0, name: 'mem', rows: 32, fields: WIDE16.fields.map((hi) => ({ lo: 0, hi })), write: { addr: 0, values: WIDE16.fields.map(() => 0), enable: 0, loc: { file: 't', line: 1, col: 1 } },
        reads: b.io.reads.map(() => ({ addr: 0, enable: 0, results: [], loc: { file: 't', line: 1, col: 1 } })), loc: { file: 't', line: 1, col: 1 } },
      { ...b.io, write: { ...wr, addrDigits: digits } }, gdnDims(WIDE16.target));
    expect(bad([{ lo: 0, width: 3, oneHot: [0, 1, 2, 3, 4, 5, 6, 7] }, { lo: 2, width: 2, oneHot: [0, 1, 2, 3] }])).toThrow(/overlap at bit 2/);
    expect(bad([{ lo: 0, width: 3, oneHot: [0, 1, 2, 3] }])).toThrow(/4 one-hot dims; it needs 8/);
    expect(bad([{ lo: 4, width: 3, oneHot: [0, 1, 2, 3, 4, 5, 6, 7] }])).toThrow(/outside the 5 address bits/);
  });
  it('dk = dv = 128: 2 read ports, 100 rows, a 9-bit field — shuffled (bf16) and fma (f32)', () => {
    const b = buildCase(PORTS128);
    fc.assert(fc.property(streamArb(PORTS128, 30), (ops) => mismatches(b, ops, { profile: 'bf16', order: { kind: 'shuffled', seed: 3 } }) === 0), { numRuns: 1, seed: 4 });
    fc.assert(fc.property(streamArb(PORTS128, 30), (ops) => mismatches(b, ops, { order: { kind: 'fma' } }) === 0), { numRuns: 1, seed: 5 });
  });
});

/** A write-only prompt (every op writes, reads disabled) followed by decode reads of random rows. */
function promptThenReads(c: RamCase, nWrites: number, nReads: number, seed: number): Op[] {
  const r = fc.sample(fc.tuple(
    fc.array(opArb(c), { minLength: nWrites, maxLength: nWrites }),
    fc.array(opArb(c), { minLength: nReads, maxLength: nReads }),
  ), { seed, numRuns: 1 })[0]!;
  const writes = r[0].map((o, i) => ({ ...o, wen: (i % 7 === 3 ? 0 : 1) as 0 | 1, waddr: i % 3 === 0 ? 2 : o.waddr, reads: o.reads.map((x) => ({ ...x, en: 0 as const })) }));
  const reads = r[1].map((o) => ({ ...o, wen: 0 as const }));
  return [...writes, ...reads];
}

describe('write-only prompts (chunked kernel) give the decode state bit for bit; decode reads follow exactly', () => {
  for (const profile of ['f32', 'bf16'] as const) {
    for (const [oname, order] of ORDERS) {
      it(`dk = 16, 54-token prompt (row 2 rewritten 18×, masked writes) — ${profile}, ${oname}`, () => {
        const b = buildCase(WIDE16);
        const ops = promptThenReads(WIDE16, 54, 8, 31);
        expect(mismatches(b, ops, { profile, order, prefill: 54 })).toBe(0);
        // Same state as running every token as a decode step.
        const h = harnessFor(b, ops);
        const a = run(h, 54, { profile, order, prefill: 54 }).states[53]!;
        const d = run(h, 54, { profile, order }).states[53]!;
        expect(a.reduce((n, s, i) => n + bitDiff(s, d[i]!), 0)).toBe(0);
        expect(a.some((s) => s.some((x) => x !== 0))).toBe(true);
      });
    }
  }
  it('dk = 128, 70-token prompt (2 chunks), f32 and bf16', () => {
    const b = buildCase(WIDE128);
    for (const profile of ['f32', 'bf16'] as const) {
      const ops = promptThenReads(WIDE128, 70, 6, 41);
      ops.push({ ...ops[70]!, reads: [{ en: 1, addr: 2 }] }); // row 2 was rewritten in the prompt
      seen.hits = 0;
      expect(mismatches(b, ops, { profile, prefill: 70 })).toBe(0);
      expect(seen.hits).toBeGreaterThan(0);
    }
  });
  it('packed rows at the qwen3.5-4b head shape (dk = dv = 128, 2 value heads per key head): 512 rows of a 32-bit word in 2 key heads, 70-token prompt, f32 and bf16 × every order', () => {
    const c: RamCase = {
      target: target({ linearNumKeyHeads: 2, linearNumValueHeads: 4, linearKeyHeadDim: 128, linearValueHeadDim: 128, vocabSize: 96 }),
      rows: 512, fields: [255, 255, 255, 255], ports: 1, writeEnable: true, readEnable: true,
    };
    const b = buildCase(c);
    expect(b.lowering.layout.wordsPerRow).toBe(2);
    expect(b.lowering.layout.selectBit).toBe(8);
    expect(b.lowering.cost.keyHeads).toBe(2);
    for (const profile of ['f32', 'bf16'] as const) {
      for (const [, order] of ORDERS) {
        const ops = promptThenReads(c, 70, 6, 43);
        // rows 2 and 258 share state row 2 of block 0 (select bit 8: value heads 0 and 1)
        ops.push({ ...ops[70]!, reads: [{ en: 1, addr: 2 }] }, { ...ops[70]!, reads: [{ en: 1, addr: 2 + 256 }] });
        seen.hits = 0;
        expect(mismatches(b, ops, { profile, order, prefill: 70 })).toBe(0);
        expect(seen.hits).toBeGreaterThan(0);
      }
    }
  });
});

describe('hazards: violated preconditions break exactness', () => {
  it('key scale 32: silu(−32) ≠ −0, keys leak into other rows (state and reads differ); 128 is exact', () => {
    const ops: Op[] = [noop(WIDE16)];
    for (let i = 0; i < 12; i++) {
      ops.push({ wen: 1, waddr: (5 * i) % 32, wvals: [(37 * i) % 256, i % 4, i % 2, (11 * i) % 128], reads: [{ en: 1, addr: (5 * i + 5) % 32 }, { en: 1, addr: 0 }] });
    }
    expect(mismatches(buildCase({ ...WIDE16, keyScale: 32 }), ops)).toBeGreaterThan(0);
    expect(mismatches(buildCase(WIDE16), ops)).toBe(0);
  });
  it('a row rewritten and then read inside one chunk: fused products read a residue there (reads stay in decode steps)', () => {
    // The chunked kernel reads the row as q·S_prev + Σ_j attn·v_new_j, where the rewrite's v_new
    // holds −T at the old hot column: fl(c·T) + fl(c·(−T)) = 0, but an FMA sum adds the exact
    // product c·(−T) to the rounded fl(c·T) = 16 and leaves a residue (−8.01e−7 at dk = 128, the
    // value transformers' torch chunked kernel gives on CPU and CUDA; docs/hf-check.md).
    const b = buildCase(WIDE128);
    const vals = (x: number) => Array.from({ length: 9 }, (_, f) => (x * (f + 3)) % 256);
    const idle = [{ en: 0 as const, addr: 0 }];
    const ops: Op[] = [
      { wen: 1, waddr: 5, wvals: vals(1), reads: idle },
      { wen: 1, waddr: 5, wvals: vals(2), reads: idle },
      { wen: 0, waddr: 0, wvals: vals(0), reads: [{ en: 1, addr: 5 }] },
    ];
    const h = harnessFor(b, ops);
    const model = new RamModel(b.c);
    ops.forEach((op) => model.apply(op));
    const readMismatch = (opts: ExecOptions & { prefill?: number }) => outMismatch(b, h, run(h, ops.length, opts).out[2]!, model, ops[2]!);
    expect(readMismatch({ order: { kind: 'sequential' }, prefill: 3 })).toBe(0);
    expect(readMismatch({ order: { kind: 'fma' }, prefill: 3 })).toBeGreaterThan(0);
    expect(readMismatch({ order: { kind: 'fma' } })).toBe(0); // decode steps: one product per read
  });
  it('dt_bias −20 (g ≈ −2e−9, not −0): a 64-token write prompt decays the state; −128 is exact', () => {
    const b = buildCase(WIDE16);
    const ops = promptThenReads(WIDE16, 64, 0, 51);
    const h = harnessFor(b, ops);
    const model = new RamModel(WIDE16);
    for (const op of ops) model.apply(op);
    const want = model.state(b, 64);
    expect(stateMismatch(run(h, 64, { prefill: 64 }).states[63]!, want)).toBe(0);
    (h.weights.layers[0]!.mixer as GdnWeights).dtBias.fill(-20);
    expect(stateMismatch(run(h, 64, { prefill: 64 }).states[63]!, want)).toBeGreaterThan(0);
  });
});

describe('formExactInAnyOrder: every subset sum of the products and constant parts is a float32', () => {
  it('the dk = 128 value forms with P = 512 are exact; a form reaching 2^24 + 1 is not', () => {
    const T = 181.01934814453125;
    expect(formExactInAnyOrder({ terms: [{ dim: 0, coef: 512 }, { dim: 1, coef: 512 }], constant: T - 1024 })).toBe(true);
    expect(formExactInAnyOrder({ terms: [{ dim: 0, coef: -512 }, { dim: 1, coef: -512 }], constant: T })).toBe(true);
    expect(formExactInAnyOrder({ terms: [{ dim: 0, coef: 2 ** 24 }], constant: 1 })).toBe(false);
    // T's finest bit is 2^−14: with three +512 terms the partial sum (T's low part 2^−14) + 1536 needs 2^−13 ulps.
    expect(formExactInAnyOrder({ terms: [0, 1, 2].map((dim) => ({ dim, coef: 512 })), constant: T })).toBe(false);
    expect(formExactInAnyOrder({ terms: [], constant: T - 1536 })).toBe(false); // not a float32 at all
  });
});

describe('errors', () => {
  const loc = { file: 't', line: 1, col: 1 };
  const ram = (rows: number, fields: number[], ports = 1): RamDecl => ({
    id: 0, name: 'big', rows, fields: fields.map((hi) => ({ lo: 0, hi })),
    write: { addr: 0, values: [], enable: null, loc },
    reads: Array.from({ length: ports }, () => ({ addr: 0, enable: null, results: [], loc })), loc,
  });
  const io = (rows: number, fields: number[], ports = 1): GdnRamIo => {
    let d = 0;
    const nb = bitsOfRows(rows);
    return {
      write: { addrBits: Array.from({ length: nb }, () => d++), enable: null, fieldBits: fields.map((hi) => Array.from({ length: widthOf(hi) }, () => d++)) },
      reads: Array.from({ length: ports }, () => ({ addr: { addrBits: Array.from({ length: nb }, () => d++), enable: null }, out: { values: fields.map(() => d++) } })),
    };
  };
  const err = (fn: () => unknown): ChipcError => {
    try { fn(); } catch (e) { if (e instanceof ChipcError) return e; throw e; }
    throw new Error('expected a ChipcError');
  };
  it('a RAM that does not fit one layer names rows, width and heads', () => {
    const e = err(() => lowerRamToGdn(ram(64, [255, 255]), io(64, [255, 255]), gdnDims(tiny)));
    expect(e.code).toBe('fit.ram');
    expect(e.message).toMatch(/64 rows × 16-bit word/);
    expect(e.message).toMatch(/needs 4 GDN key heads/);
    expect(e.message).toMatch(/2 available/);
    expect(() => lowerRamToGdn(ram(32, [255, 255]), io(32, [255, 255]), gdnDims(tiny))).not.toThrow();
  });
  it('bad shapes and inputs', () => {
    expect(err(() => lowerRamToGdn(ram(16, [15]), io(16, [15]), { ...gdnDims(tiny), dv: 18 })).code).toBe('ram.dims');
    expect(err(() => lowerRamToGdn(ram(16, [300]), io(16, [300]), gdnDims(tiny))).code).toBe('ram.field');
    const wrongBits = io(16, [15]);
    wrongBits.reads[0]!.addr.addrBits.pop();
    expect(err(() => lowerRamToGdn(ram(16, [15]), wrongBits, gdnDims(tiny))).message).toMatch(/3 address bits; 16 rows need 4/);
    expect(err(() => lowerRamToGdn(ram(16, [15], 2), io(16, [15], 1), gdnDims(tiny))).code).toBe('ram.io');
  });
});
