/**
 * The FFN memo (src/exec/ffn-memo.ts): a decode step's SwiGLU taken from an earlier computed step
 * whose input had the same bits on the columns the FFN reads. Every step's output must be the
 * dense SwiGLU's bit for bit, and the indices the memo lists as moved must cover every index whose
 * bits moved; the lookups must happen where they may (repeated keys) and not where the
 * incremental form's precondition fails (a non-finite entry off the key, too many sign-bit-set
 * entries), and keys that share a hash must be told apart. On the chip, runs with the memo and
 * without it must agree in every residual and GDN state.
 */
import { describe, expect, it } from 'vitest';
import { nextInputStamp, wasmHeapOf, type InputChanges } from '../src/exec/delta.ts';
import { FfnMemo, newTrackedFfn, trackedFfn, type TrackedFfn } from '../src/exec/ffn-memo.ts';
import { newMatmulStats, type MatmulStats } from '../src/exec/matmul.ts';
import { nonEmptyRowsOf } from '../src/exec/matmul-plans.ts';
import { swiglu, type SwigluIo } from '../src/exec/mlp.ts';
import { makeNumericContext } from '../src/exec/numeric.ts';
import type { ExecNumericContext } from '../src/exec/numeric.ts';
import type { OutputSource, DeltaShare } from '../src/exec/delta.ts';
import type { ExecTuning } from '../src/exec/types.ts';
import type { DenseMlpWeights, Matrix } from '../src/model/weights.ts';
import { sparsifyMatrix } from '../src/model/random-weights.ts';
import { fewPerRow, lcg, SPECIAL } from './helpers/random-models.ts';
import { lockstepChipRun, lockstepProgram } from './helpers/chip-lockstep.ts';

const bits = (a: Float32Array): number[] => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));

/** An FFN of H inputs and n units whose gate and up rows read only columns below `readCols` (dense and CSR-only forms). */
function ffnOf(seed: number, H: number, n: number, readCols: number): { sparse: DenseMlpWeights; dense: DenseMlpWeights } {
  const rnd = lcg(seed);
  const widen = (m: { dense: Matrix }, cols: number): { dense: Matrix; csr: Matrix } => {
    const d = new Float32Array(m.dense.rows * cols);
    for (let r = 0; r < m.dense.rows; r++) for (let c = 0; c < m.dense.cols; c++) d[r * cols + c] = m.dense.dense![r * m.dense.cols + c]!;
    const dense = { rows: m.dense.rows, cols, dense: d };
    return { dense, csr: { rows: dense.rows, cols, csr: sparsifyMatrix(dense).csr } };
  };
  const gate = widen(fewPerRow(rnd, n, readCols, 3), H);
  const up = widen(fewPerRow(rnd, n, readCols, 3), H);
  const down = fewPerRow(rnd, H, n, 4);
  return {
    sparse: { kind: 'dense', gateProj: gate.csr, upProj: up.csr, downProj: down.csr },
    dense: { kind: 'dense', gateProj: gate.dense, upProj: up.dense, downProj: down.dense },
  };
}

/** Runs the memo's steps over the inputs as the executor does (stamps, change lists), checking each against the dense SwiGLU. */
class Driver {
  readonly layer: TrackedFfn = newTrackedFfn();
  readonly stats: MatmulStats = newMatmulStats();
  private readonly io: SwigluIo & { share: DeltaShare } = { outSource: null, share: { stamp: -1, since: null } };
  private prev: Float32Array | null = null;
  private prevStamp = -1;
  private prevOut: number[] | null = null;
  private seen: { src: OutputSource; version: number } | null = null;
  readonly x: Float32Array;
  private readonly changed: Int32Array;

  constructor(readonly ctx: ExecNumericContext, readonly f: { sparse: DenseMlpWeights; dense: DenseMlpWeights }) {
    this.x = new Float32Array(f.sparse.gateProj.cols);
    this.changed = new Int32Array(this.x.length);
  }

  /** One step at input v (`whole`: no change list, as after a fresh step); returns whether the memo answered it. */
  step(v: Float32Array, whole = false): boolean {
    this.x.set(v);
    let changes: InputChanges | null = null;
    if (this.prev !== null && !whole) {
      let n = 0;
      const a = bits(this.prev);
      const b = bits(this.x);
      for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) this.changed[n++] = i;
      changes = { prevStamp: this.prevStamp, changed: this.changed, nChanged: n };
    }
    const stamp = nextInputStamp();
    const hits = this.stats.ffnMemoHits;
    const y = trackedFfn(this.ctx, this.layer, this.f.sparse, this.x, stamp, changes, 'sparse', this.stats, new Float32Array(this.x.length), this.io);
    const got = bits(y);
    expect(got).toEqual(bits(swiglu(makeNumericContext({ profile: this.ctx.profile }), this.f.dense, v, 'dense')));
    // the moved indices the reader is told of cover every index whose bits moved
    const src = this.io.outSource;
    if (src !== null && this.seen !== null && this.seen.src === src && src.version === this.seen.version + 1 && !src.full && this.prevOut !== null) {
      const listed = new Set(Array.from(src.rows.subarray(0, src.nRows)));
      for (let i = 0; i < got.length; i++) if (got[i] !== this.prevOut[i]) expect(listed.has(i), `index ${i} moved unlisted`).toBe(true);
    }
    this.seen = src === null ? null : { src, version: src.version };
    this.prevOut = got;
    this.prev = this.x.slice();
    this.prevStamp = stamp;
    return this.stats.ffnMemoHits > hits;
  }
}

/** A random input over H columns: ±0, signs, specials. */
function randomInput(rnd: () => number, H: number): Float32Array {
  const x = new Float32Array(H);
  for (let c = 0; c < H; c++) x[c] = rnd() < 0.4 ? (rnd() < 0.5 ? -0 : 0) : SPECIAL[Math.floor(rnd() * SPECIAL.length)]!;
  return x;
}

const TUNING: ExecTuning = { scatterMinNnz: 0, ffnMemoFrom: 0 };

describe('FFN memo on random FFNs', () => {
  it.each(['f32', 'bf16'] as const)('%s: inputs that come back are looked up, every step the dense SwiGLU bit for bit', (profile) => {
    const H = 32;
    const f = ffnOf(3, H, 80, 24);
    const rnd = lcg(11);
    // six inputs the steps come back to (with changes off the read columns now and then), and fresh ones
    const bases = Array.from({ length: 6 }, () => randomInput(rnd, H));
    const d = new Driver(makeNumericContext({ profile, tuning: TUNING }), f);
    let hits = 0;
    for (let step = 0; step < 400; step++) {
      const x = rnd() < 0.15 ? randomInput(rnd, H) : bases[Math.floor(rnd() * bases.length)]!.slice();
      if (rnd() < 0.3) x[24 + Math.floor(rnd() * 8)] = SPECIAL[Math.floor(rnd() * SPECIAL.length)]!; // off the key
      if (d.step(x)) hits++;
    }
    expect(hits).toBeGreaterThan(150);
    expect(d.layer.memo?.size).toBeGreaterThan(0);
    // the output lies in the context's wasm memory in either profile, where the residual add's kernel reads it
    const heap = wasmHeapOf(d.ctx);
    expect(heap).not.toBeNull();
    expect(d.layer.memo?.out.buffer === heap?.buffer).toBe(true);
  });

  it('a matrix given new storage is a new FFN: its old outputs are not taken', () => {
    const H = 32;
    const f = ffnOf(6, H, 80, 24);
    const other = ffnOf(8, H, 80, 24);
    const d = new Driver(makeNumericContext({ tuning: TUNING }), f);
    const rnd = lcg(29);
    const bases = Array.from({ length: 2 }, () => randomInput(rnd, H));
    let hits = 0;
    for (let step = 0; step < 12; step++) if (d.step(bases[step % 2]!.slice())) hits++;
    expect(hits).toBe(8);
    // the same matrix objects, the up projection's storage replaced (as a reload may)
    f.sparse.upProj.csr = other.sparse.upProj.csr;
    f.dense.upProj.dense = other.dense.upProj.dense;
    expect(d.step(bases[0]!.slice())).toBe(false);
    expect(d.step(bases[1]!.slice())).toBe(false);
  });

  it('looks nothing up before the layer has taken ffnMemoFrom steps', () => {
    const H = 32;
    const d = new Driver(makeNumericContext({ tuning: { ...TUNING, ffnMemoFrom: 60 } }), ffnOf(4, H, 80, 24));
    const rnd = lcg(23);
    const bases = Array.from({ length: 3 }, () => randomInput(rnd, H));
    const hitAt: number[] = [];
    for (let step = 0; step < 120; step++) if (d.step(bases[step % 3]!.slice())) hitAt.push(step);
    expect(hitAt[0]).toBe(66); // (made at step 60; each key remembered at its second computed step)
    expect(hitAt.length).toBe(54);
  });

  it('a key that comes back with a non-finite entry off it, or with too many sign-bit-set entries on it, is computed', () => {
    const H = 32;
    const f = ffnOf(5, H, 80, 24);
    const rnd = lcg(13);
    const a = randomInput(rnd, H);
    const b = randomInput(rnd, H);
    for (let c = 0; c < H; c++) a[c] = Math.abs(a[c]!); // (a's key has no sign-bit-set entry)
    const d = new Driver(makeNumericContext({ tuning: TUNING }), f);
    // remembered at its second computed step, found at the third
    for (const x of [a, b, a, b]) expect(d.step(x)).toBe(false);
    expect(d.step(a)).toBe(true);
    d.step(b);
    for (const bad of [Infinity, -Infinity, NaN]) {
      const x = a.slice();
      x[30] = bad; // off the key: the dense SwiGLU's products there are NaN
      expect(d.step(x), `x[30] = ${bad}`).toBe(false);
      expect(d.step(x, true), `x[30] = ${bad}, the input taken whole`).toBe(false);
    }
    expect(d.step(a)).toBe(true);
    // the same key bits with every key entry's sign bit set: the entry for it is never taken
    const neg = a.slice();
    for (let c = 0; c < 24; c++) neg[c] = -neg[c]!;
    for (const x of [neg, b, neg, b]) d.step(x);
    expect(d.step(neg)).toBe(false);
    expect(d.layer.memo?.size).toBeGreaterThan(1);
  });

  it('keys that share their hash are told apart by the whole key', () => {
    const H = 32;
    const f = ffnOf(7, H, 80, 24);
    const rnd = lcg(17);
    const ctx = makeNumericContext({ tuning: { ...TUNING, ffnMemoEntries: 8 } });
    const d = new Driver(ctx, f);
    // a memo whose hash is always 0: every key lands in one set with one hash
    d.layer.memo = new FfnMemo(ctx.memos, ctx.siluForm, f.sparse, nonEmptyRowsOf(ctx.plans, f.sparse.downProj), 8, null, 0);
    const xs = Array.from({ length: 4 }, () => randomInput(rnd, H));
    let hits = 0;
    for (let step = 0; step < 120; step++) if (d.step(xs[step % 2 === 0 ? 0 : 1 + (step >> 1) % 3]!.slice())) hits++;
    expect(hits).toBeGreaterThan(20);
    // a key kept as its few entries other than +0, and a key with one entry more: not the same key
    const few = new Float32Array(H);
    few[2] = 1;
    few[5] = -2.5;
    const more = few.slice();
    more[9] = 20;
    for (const x of [few, few, few]) d.step(x);
    expect(d.step(few.slice())).toBe(true);
    expect(d.step(more)).toBe(false);
  });

  it('a small memo evicts, a memo whose lookups fail rests and looks up again, every step exact', () => {
    const H = 32;
    const f = ffnOf(9, H, 80, 24);
    const rnd = lcg(19);
    const d = new Driver(makeNumericContext({ tuning: { ...TUNING, ffnMemoEntries: 4 } }), f);
    const bases = Array.from({ length: 12 }, () => randomInput(rnd, H));
    // each key five steps in a row (remembered at the second, found at the next three), twelve
    // keys in turn for four entries: each is evicted before it comes back
    let early = 0;
    for (let step = 0; step < 360; step++) if (d.step(bases[Math.floor(step / 5) % 12]!.slice())) early++;
    expect(early).toBe(216);
    // 300 fresh inputs: the window of lookups 257–512 finds too few (under half of 256), so the
    // next 512 steps are computed without a lookup; then the memo looks up again
    for (let step = 0; step < 300; step++) d.step(randomInput(rnd, H));
    const late: number[] = [];
    for (let step = 0; step < 700; step++) if (d.step(bases[Math.floor(step / 3) % 2]!.slice())) late.push(step);
    expect(late.filter((s) => s < 360)).toEqual([]);
    expect(late.length).toBeGreaterThan(250);
  });
});

describe('FFN memo on the chip (chip-test)', () => {
  it.each(['hello', 'crc32'])('%s: the same residuals, GDN states and tokens with and without the memo, most steps of some layers looked up', async (name) => {
    const { model, prog } = await lockstepProgram(name);
    const r = await lockstepChipRun(model, prog, { ffnMemoFrom: 0 }, { ffnMemoEntries: 0 }, 400);
    expect(r.mismatch).toBeNull();
    expect(r.b.ex.stats.ffnMemoHits).toBe(0);
    expect(r.a.ex.stats.ffnMemoHits).toBeGreaterThan(400);
    expect(r.events).toBeGreaterThan(4000);
    expect(r.states).toBeGreaterThan(100_000);
    expect(r.a.ids).toEqual(r.b.ids);
  }, 120_000);
});
