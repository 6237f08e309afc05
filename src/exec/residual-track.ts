/**
 * The incremental residual stream of single-token decode steps (sparse path, sequential order):
 * the residual adds and the RMSNorms recomputed only where their inputs changed, bit for bit
 * equal to the plain loops of executor.ts / norms.ts.
 *
 * A compiled circuit changes a few dozen of its ~1,000 residual dims per token, and its anchors
 * keep every RMSNorm factor constant. Each vector of the stream (the layer inputs, the mid-layer
 * sums, the normalised vectors) is kept per site across steps with the list of indices the last
 * step changed, so a step costs O(changed dims) instead of O(width) per site:
 *
 * - **Add** `out_i = act(fl(a_i + b_i))` is a pure function of (a_i, b_i): it is recomputed at the
 *   indices where a or b may have changed, and out's list holds those whose bits changed. When
 *   either input's changes are unknown, every index is recomputed and compared (the list is still
 *   exact).
 * - **RMSNorm** `r = rsqrt(fl(mean(P_{n−1}) + fl(eps)))`, `out_i = act(fl(fl(x_i·r)·fl(1 + w_i)))`,
 *   where P_i = fl(P_{i−1} + fl(x_i²)) from P_{−1} = −0 is the sequential sum of squares. The site
 *   keeps every prefix P_i. A step re-folds from the lowest changed index j, starting at the kept
 *   P_{j−1} (the prefix before j is unchanged), and stops as soon as the fold reaches an index at
 *   or past every changed index it has walked with a value equal to the kept P_i: from there the
 *   inputs are the ones the kept prefixes were computed from, up to the next changed index, where
 *   it resumes. On the chip the anchor's square comes first and absorbs every later square, so
 *   each changed index costs one step. If r keeps its bits, only the changed indices' outputs are
 *   recomputed (out_i is a pure function of x_i, r and w_i); otherwise all of them are.
 *   The walk compares with ===: no P_i is −0 (a sum of fl(x²) ≥ +0 from −0 is +0 after one term),
 *   and a NaN never compares equal, so the fold then runs to the end.
 *
 * The normalised vector gets a fresh stamp (delta.ts `DeltaShare`) every step, and its change list
 * is handed to the matmuls that read it as `since` candidates: a matmul whose previous input was
 * the previous step's vector walks only those columns.
 */
import type { ExecNumericContext } from './numeric.ts';
import { rsqrt32 } from './numeric.ts';
import { meanOf, onePlusWeights } from './norms.ts';
import { ViewAt, type WasmHeap } from './wasm-heap.ts';
import type { ExecPlans } from './plans.ts';
import { nextInputStamp, type InputChanges, type OutputSource } from './delta.ts';
import { newIdleSkip, type IdleSkip } from './gdn-idle.ts';

const f32 = Math.fround;

/** A vector kept across decode steps, with the indices the last step may have changed. */
export class TrackedVector {
  readonly v: Float32Array;
  readonly bits: Uint32Array;
  /** changed[0..n): the indices whose bits the last step changed (when !all). */
  readonly changed: Int32Array;
  n = 0;
  /** True when the last step's changes are unknown (any index may have changed). */
  all = true;

  /** The heap v and changed were carved from (null: they were not), and their byte addresses there. */
  readonly heap: WasmHeap | null;
  readonly vAt: number;
  readonly changedAt: number;
  /**
   * Memos of the addresses of the arrays addTracked adds into this vector (wasm-heap.ts ViewAt: a
   * view's `buffer` and `byteOffset` are builtin calls; a site adds the same sublayer output at
   * every step).
   */
  readonly addAt = { b: new ViewAt(), rows: new ViewAt() };

  /** `heap`: the context's wasm memory, where v and changed are carved when they fit (wasm-kernels.ts). */
  constructor(width: number, heap: WasmHeap | null = null) {
    const a = heap?.carve({ v: [Float32Array, width], changed: [Int32Array, width] }) ?? null;
    this.v = a !== null ? a.v : new Float32Array(width);
    this.bits = new Uint32Array(this.v.buffer, this.v.byteOffset, width);
    this.changed = a !== null ? a.changed : new Int32Array(width);
    this.heap = a !== null ? heap : null;
    this.vAt = a !== null ? a.v.byteOffset : -1;
    this.changedAt = a !== null ? a.changed.byteOffset : -1;
  }
}

/** What a consumer remembers of a producer's output (OutputSource) between steps. */
export class SourceSeen {
  private src: OutputSource | null = null;
  private version = -1;
  /** advance()'s answer (reused: valid until the next call). */
  private readonly answer: { rows: Int32Array; n: number } = { rows: new Int32Array(0), n: 0 };

  /**
   * The indices where `src`'s current output may differ from the one seen last time — rows when
   * one version passed, none when the same version is seen again, null when unknown — and
   * remembers the current version. The answer object is reused: read it before the next call.
   */
  advance(src: OutputSource | null): { rows: Int32Array; n: number } | null {
    const prev = this.src;
    const pv = this.version;
    this.src = src;
    this.version = src === null ? -1 : src.version;
    if (src === null || prev !== src) return null;
    const a = this.answer;
    a.rows = src.rows;
    if (src.version === pv) a.n = 0;
    else if (src.version === pv + 1 && !src.full) a.n = src.nRows;
    else return null;
    return a;
  }

  forget(): void {
    this.src = null;
    this.version = -1;
  }
}

/**
 * out = act(fl(a + b)) elementwise (act = identity in f32). `fresh`: out holds nothing from the
 * previous step (every index is recomputed and out.all is set). Otherwise the indices in a's
 * change list and in bChanges (null: unknown, every index) are recomputed, and out's list gets
 * those whose bits changed.
 */
export function addTracked(
  ctx: ExecNumericContext, a: TrackedVector, b: Float32Array, bChanges: { rows: Int32Array; n: number } | null,
  out: TrackedVector, fresh: boolean,
): void {
  const f32Profile = ctx.profile === 'f32';
  const H = out.v.length;
  const x = a.v;
  const o = out.v;
  const ob = out.bits;
  if (fresh) {
    addAll(ctx, x, b, o, H, f32Profile);
    out.all = true;
    out.n = 0;
    return;
  }
  const ch = out.changed;
  let n = 0;
  if (a.all || bChanges === null) {
    for (let i = 0; i < H; i++) {
      const old = ob[i];
      o[i] = f32Profile ? f32(x[i] + b[i]) : ctx.act(f32(x[i] + b[i]));
      if (ob[i] !== old) ch[n++] = i;
    }
  } else {
    const heap = ctx.memos.wasmHeap;
    // (the addresses kept with the vectors: TrackedVector.addAt)
    const bAt = heap != null ? out.addAt.b.of(heap, b) : -1;
    const rowsAt = heap != null ? out.addAt.rows.of(heap, bChanges.rows) : -1;
    if (heap != null && a.heap === heap && out.heap === heap && bAt >= 0 && rowsAt >= 0) {
      // the same loop in wasm (wasm-residual-kernels.ts addLists; addListsBf16 with bf16's cast)
      const done = heap.addListsAt(a.vAt, bAt, out.vAt, a.changedAt, a.n, rowsAt, bChanges.n, out.changedAt, !f32Profile) === 0;
      n = heap.appended;
      if (done) {
        out.all = false;
        out.n = n;
        return;
      }
      // a NaN sum, not stored: the loop below, whose NaN bits are the reference's, from the count
      // so far (the entries the kernel did keep their bits and are not listed again)
    }
    for (let pass = 0; pass < 2; pass++) {
      const list = pass === 0 ? a.changed : bChanges.rows;
      const m = pass === 0 ? a.n : bChanges.n;
      for (let t = 0; t < m; t++) {
        const i = list[t];
        const old = ob[i];
        o[i] = f32Profile ? f32(x[i] + b[i]) : ctx.act(f32(x[i] + b[i]));
        if (ob[i] !== old) ch[n++] = i; // a repeated index is unchanged the second time
      }
    }
  }
  out.all = false;
  out.n = n;
}

/**
 * True when, for every listed index j, fl(P_{j−1} + fl(x_j²)) equals the kept P_j, P being the
 * kept prefixes. Then the new prefixes equal the kept ones: by induction over the listed indices
 * in ascending order, the prefix before the lowest one is unchanged, each listed step reproduces
 * its kept prefix from the unchanged one before it, and unlisted steps repeat their kept inputs.
 * The order of the list does not matter, so no sort is needed (the chip's case: the anchor's
 * square absorbs every changed square).
 */
function absorbedEach(xv: Float32Array, P: Float32Array, list: Int32Array, n: number): boolean {
  for (let t = 0; t < n; t++) {
    const j = list[t];
    const v = xv[j];
    if (f32((j === 0 ? -0 : P[j - 1]) + f32(v * v)) !== P[j]) return false;
  }
  return true;
}

/**
 * addTracked's fresh step, o = x + b over all H entries: a function of its own, so that a fresh
 * process's first step (which runs it for every layer) does not make addTracked hot on this path
 * alone: compiled then, its optimised code had no feedback for the incremental path and was thrown
 * away at the next step. NormSite.run's loops over every entry are kept apart for the same reason.
 */
function addAll(ctx: ExecNumericContext, x: Float32Array, b: Float32Array, o: Float32Array, H: number, f32Profile: boolean): void {
  if (f32Profile) for (let i = 0; i < H; i++) o[i] = f32(x[i] + b[i]);
  else for (let i = 0; i < H; i++) o[i] = ctx.act(f32(x[i] + b[i]));
}

/** NormSite.run's prefix sums of squares over all H entries: P[i] = the fold of v² up to i. */
function allPrefixSquares(xv: Float32Array, P: Float32Array, H: number): void {
  let acc = -0;
  for (let i = 0; i < H; i++) { const v = xv[i]; acc = f32(acc + f32(v * v)); P[i] = acc; }
}

/** NormSite.run's fresh output over all H entries: fl(fl(x·r)·w1) (act of it in bf16). */
function normAll(ctx: ExecNumericContext, xv: Float32Array, r: number, w1: Float32Array, ov: Float32Array, H: number, f32Profile: boolean): void {
  for (let i = 0; i < H; i++) ov[i] = f32Profile ? f32(f32(xv[i] * r) * w1[i]) : ctx.act(f32(f32(xv[i] * r) * w1[i]));
}

/** A zero-centred RMSNorm site kept across steps (module comment). */
export class NormSite {
  readonly out: TrackedVector;
  /** P_i: the sequential sum of squares of x[0..i]. */
  readonly prefix: Float32Array;
  /** fl(1 + w_i). */
  readonly w1: Float32Array;
  /** The wasm memory the site's list loop runs in (wasm-residual-kernels.ts normListed), or null. */
  private readonly heap: WasmHeap | null;
  /** The byte addresses of the prefixes and of w1's copy in that memory (−1 without it). */
  private readonly prefixAt: number;
  private readonly w1At: number;
  readonly eps: number;
  private r = Number.NaN;
  private readonly sorted: Int32Array;
  /** The stamp of out's current content and of the previous step's (DeltaShare). */
  stamp = -1;
  prevStamp = -1;
  /** Fold steps taken by the last run (a statistic: H on a full fold). */
  walked = 0;
  /** Set by passOver: a step went by without this site; its next run recomputes everything. */
  private behind = false;
  private readonly since: InputChanges;

  /**
   * `heap`: the context's wasm memory, where out is carved when it fits, so that the matmuls that
   * read it make their whole pass in wasm (delta.ts, wasm-kernels.ts delta).
   */
  constructor(plans: ExecPlans, w: Float32Array, eps: number, heap: WasmHeap | null = null) {
    const H = w.length;
    this.out = new TrackedVector(H, heap);
    this.w1 = onePlusWeights(plans, w);
    this.eps = eps;
    this.sorted = new Int32Array(H);
    this.since = { prevStamp: -1, changed: this.out.changed, nChanged: 0 };
    // the wasm list loop's arrays: the prefixes, and a copy of w1 where every entry is finite
    // (its precondition: no output is then NaN)
    let w1Finite = true;
    for (let i = 0; i < H; i++) if (this.w1[i] - this.w1[i] !== 0) w1Finite = false;
    const a = heap !== null && this.out.v.buffer === heap.buffer && w1Finite
      ? heap.carve({ prefix: [Float32Array, H], w1: [Float32Array, H] }) : null;
    this.prefix = a !== null ? a.prefix : new Float32Array(H);
    a?.w1.set(this.w1);
    this.heap = a !== null ? heap : null;
    this.prefixAt = a !== null ? a.prefix.byteOffset : -1;
    this.w1At = a !== null ? a.w1.byteOffset : -1;
  }

  /**
   * A step went by without normalising its input (its reader passed over it: gdn-idle.ts
   * idleSkipHolds): out no longer follows the input, so the next run recomputes everything.
   */
  passOver(): void {
    this.behind = true;
  }

  /** How out changed since the previous step's vector (DeltaShare `since`), or null when unknown. */
  changes(): InputChanges | null {
    if (this.out.all || this.prevStamp === -1) return null;
    this.since.prevStamp = this.prevStamp;
    this.since.nChanged = this.out.n;
    return this.since;
  }

  /**
   * Normalises x into out. `fresh`: nothing is kept from the previous step (everything is
   * recomputed and out.all is set); otherwise x's change list must be a superset of the indices
   * where x differs from the previous step's x (or x.all).
   */
  run(ctx: ExecNumericContext, x: TrackedVector, fresh: boolean): void {
    if (this.behind) { fresh = true; this.behind = false; }
    const H = this.prefix.length;
    const xv = x.v;
    const P = this.prefix;
    const heap = this.heap;
    if (!fresh && !x.all && x.n > 0 && heap !== null && x.heap === heap) {
      // every changed square absorbed and r the kept one: the list loop in wasm (normListed;
      // normListedBf16 with bf16's cast), which returns −1 (nothing written) when some square is
      // not absorbed; the path below then runs.
      // (r is the kept one whenever the site's previous run was complete: Object.is is a guard.)
      const r = rsqrt32(f32(meanOf(ctx, P[H - 1], H) + f32(this.eps)));
      if (Object.is(r, this.r) && r - r === 0) {
        const o = this.out;
        const m = heap.normListedAt(x.vAt, this.prefixAt, x.changedAt, x.n, this.w1At, o.vAt, o.changedAt, r, ctx.profile === 'bf16');
        if (m >= 0) {
          this.walked = x.n;
          this.prevStamp = this.stamp;
          this.stamp = nextInputStamp();
          o.all = false;
          o.n = m;
          return;
        }
      }
    }
    let walked = 0;
    if (fresh || x.all) {
      allPrefixSquares(xv, P, H);
      walked = H;
    } else if (x.n > 0 && absorbedEach(xv, P, x.changed, x.n)) {
      walked = x.n; // every prefix keeps its value: nothing to write
    } else if (x.n > 0) {
      const m = x.n;
      const cs = this.sorted;
      for (let t = 0; t < m; t++) cs[t] = x.changed[t];
      cs.subarray(0, m).sort();
      let t = 0;
      while (t < m) {
        let j = cs[t];
        let acc = j === 0 ? -0 : P[j - 1];
        for (;;) {
          const v = xv[j];
          acc = f32(acc + f32(v * v));
          const same = acc === P[j];
          P[j] = acc;
          j++;
          walked++;
          while (t < m && cs[t] < j) t++;
          if (same || j === H) break;
        }
      }
    }
    this.walked = walked;
    const r = rsqrt32(f32(meanOf(ctx, P[H - 1], H) + f32(this.eps)));
    const o = this.out;
    const ov = o.v;
    const ob = o.bits;
    const w1 = this.w1;
    const f32Profile = ctx.profile === 'f32';
    this.prevStamp = fresh ? -1 : this.stamp;
    this.stamp = nextInputStamp();
    if (fresh) {
      normAll(ctx, xv, r, w1, ov, H, f32Profile);
      o.all = true;
      o.n = 0;
      this.r = r;
      return;
    }
    const ch = o.changed;
    let n = 0;
    if (x.all || !Object.is(r, this.r) || r - r !== 0) {
      for (let i = 0; i < H; i++) {
        const old = ob[i];
        ov[i] = f32Profile ? f32(f32(xv[i] * r) * w1[i]) : ctx.act(f32(f32(xv[i] * r) * w1[i]));
        if (ob[i] !== old) ch[n++] = i;
      }
    } else {
      const xc = x.changed;
      for (let t = 0; t < x.n; t++) {
        const i = xc[t];
        const old = ob[i];
        ov[i] = f32Profile ? f32(f32(xv[i] * r) * w1[i]) : ctx.act(f32(f32(xv[i] * r) * w1[i]));
        if (ob[i] !== old) ch[n++] = i;
      }
    }
    o.all = false;
    o.n = n;
    this.r = r;
  }
}

/** The tracked vectors of one decoder layer. */
export interface LayerTrack {
  /** Normalised layer input (mixer input). */
  n1: NormSite;
  /** x + mixer output. */
  mid: TrackedVector;
  /** Normalised mid (FFN input). */
  n2: NormSite;
  /** The layer output (the next layer's input). */
  y: TrackedVector;
  mixSeen: SourceSeen;
  ffSeen: SourceSeen;
  /** Whether the layer's idle GDN mixer may be passed over (gdn-idle.ts idleSkipHolds). */
  idleSkip: IdleSkip;
}

/** The whole stream of one executor: the embedding row, every layer, the final norm. */
export class ResidualTrack {
  readonly x0: TrackedVector;
  readonly layers: LayerTrack[];
  readonly finalNorm: NormSite;
  /** True when every vector holds the previous decode step's values. */
  valid = false;
  /** The entries of the row x0 was last set from (null: not given). */
  private rowEntries: RowEntries | null = null;

  /**
   * `plans`: where the norms' fl(1 + w) vectors are kept (the executor's ctx.plans); `heap`: the
   * context's wasm memory, for the layers' norm outputs (NormSite).
   */
  constructor(
    plans: ExecPlans, H: number, layerNorms: { input: Float32Array; post: Float32Array }[], finalNorm: Float32Array, eps: number,
    heap: WasmHeap | null = null,
  ) {
    this.x0 = new TrackedVector(H, heap);
    this.layers = layerNorms.map((w) => ({
      n1: new NormSite(plans, w.input, eps, heap), mid: new TrackedVector(H, heap), n2: new NormSite(plans, w.post, eps, heap),
      y: new TrackedVector(H, heap), mixSeen: new SourceSeen(), ffSeen: new SourceSeen(), idleSkip: newIdleSkip(),
    }));
    this.finalNorm = new NormSite(plans, finalNorm, eps, heap);
  }

  /** Drops what the vectors hold (the next step recomputes everything). */
  invalidate(): void {
    this.valid = false;
    for (const l of this.layers) { l.mixSeen.forget(); l.ffSeen.forget(); l.idleSkip.last = null; }
  }

  /**
   * x0 = act(row) with its change list against the previous step's row (exact, by bits).
   * `entries`, when given, are row's (RowEntries), for the next step's setEmbeddingEntries.
   */
  setEmbedding(ctx: ExecNumericContext, row: Float32Array, fresh: boolean, entries: RowEntries | null = null): void {
    const x = this.x0;
    const H = x.v.length;
    let n = 0;
    for (let i = 0; i < H; i++) {
      const old = x.bits[i];
      x.v[i] = ctx.act(row[i]);
      if (!fresh && x.bits[i] !== old) x.changed[n++] = i;
    }
    x.all = fresh;
    x.n = n;
    this.rowEntries = entries;
  }

  /**
   * The same, not fresh, for a row given by its entries: `entries.idx` (ascending) lists every
   * index whose bits are not +0, `entries.val` their values; every other entry is +0. Applies
   * when the previous step's row came with its entries (setEmbedding's or this method's); returns
   * false, changing nothing, when it did not. Only the previous row's entries and this row's can
   * differ (everywhere else both rows are +0 and x0 holds act(+0)), so only those are visited, in
   * ascending order, each once: the values and the change list are setEmbedding's.
   */
  setEmbeddingEntries(ctx: ExecNumericContext, entries: RowEntries): boolean {
    const prev = this.rowEntries;
    if (prev === null) return false;
    const x = this.x0;
    const H = x.v.length;
    const zero = ctx.act(0);
    const { idx, val } = entries;
    const pi = prev.idx;
    let a = 0;
    let b = 0;
    let n = 0;
    while (a < pi.length || b < idx.length) {
      const ia = a < pi.length ? pi[a] : H;
      const ib = b < idx.length ? idx[b] : H;
      let i: number;
      let v: number;
      if (ib <= ia) {
        i = ib;
        v = ctx.act(val[b++]);
        if (ia === ib) a++;
      } else {
        i = ia;
        v = zero;
        a++;
      }
      const old = x.bits[i];
      x.v[i] = v;
      if (x.bits[i] !== old) x.changed[n++] = i;
    }
    x.all = false;
    x.n = n;
    this.rowEntries = entries;
    return true;
  }
}

/** A vector's entries whose bits are not +0: ascending indices and their values. */
export interface RowEntries {
  idx: Int32Array;
  val: Float32Array;
}

/** The entries of `row` whose bits are not +0 (RowEntries). */
export function rowEntriesOf(row: Float32Array): RowEntries {
  const bits = new Uint32Array(row.buffer, row.byteOffset, row.length);
  let n = 0;
  for (let i = 0; i < row.length; i++) if (bits[i] !== 0) n++;
  const idx = new Int32Array(n);
  const val = new Float32Array(n);
  n = 0;
  for (let i = 0; i < row.length; i++) if (bits[i] !== 0) { idx[n] = i; val[n++] = row[i]; }
  return { idx, val };
}
