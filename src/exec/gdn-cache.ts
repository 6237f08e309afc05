/**
 * The per-layer state of the GDN mixer and the types the layer's files share: its dimensions
 * (gdnDimsOf), the cache (GdnCache: the conv state, one S per value head with what the decode
 * steps know of it, and the memos of the fast paths), the scratch of single-token calls
 * (GdnBuffers), the tracked decode step's record (GdnTrack — its logic is gdn-tracked.ts; it is
 * declared here beside the cache that holds it, so that the layer's files import this one and not
 * each other) and the mixer's result (GdnRunResult).
 *
 * Single-token calls reuse per-layer buffers (GdnCache.buffers): a decode step allocates nothing
 * but the hook copies.
 */
import { ChipcError } from '../util/errors.ts';
import type { ModelConfig } from '../model/config.ts';
import type { CsrMatrix, GdnWeights, Matrix } from '../model/weights.ts';
import { gdnDims, type GdnDims } from '../model/naming.ts';
import type { DeltaSite, OutputSource } from './delta.ts';
import type { StackSite } from './stack-rows.ts';
import { newSparseStepScratch, STATE_ZERO, type KvMemo, type SparseStepScratch } from './gdn-sparse-step.ts';
import { ViewAt, type WasmHeap } from './wasm-heap.ts';
import { CONV_CTL, CONV_CTL_WORDS, NORM_CTL, NORM_CTL_WORDS } from './wasm-layout.ts';

/** model/naming.ts gdnDims, refusing a layer without value heads (r = 0) before the executor sizes buffers by it. */
export function gdnDimsOf(cfg: ModelConfig): GdnDims {
  const d = gdnDims(cfg);
  if (d.r < 1) throw new ChipcError('exec.bad-config', `linear_num_value_heads (${d.hv}) must be a multiple of linear_num_key_heads (${d.hk})`);
  return d;
}

/**
 * An idle step's output for one cache: `out` (shared between caches, never written), `buf` the
 * cache's copy handed out by each idle step, `source` naming it as a vector that never changes
 * (delta.ts OutputSource).
 */
export interface IdleOut { weights: GdnWeights; out: Float32Array; buf: Float32Array; source: OutputSource }

/** Per-layer GDN cache: conv state (channel c at c·K + j, j = K−1 newest) and one state per value head. */
export interface GdnCache {
  conv: Float32Array;
  /** S[i,j] at i·dv + j, per value head. */
  S: Float32Array[];
  /**
   * Per value head, the STATE_* kind of S as the decode steps left it. Trusted only while the live
   * array has not been handed out (see `exposed`); prefill resets it to STATE_ANY.
   */
  kind: Uint8Array;
  /** Per value head: 1 once the live S was handed out (Executor.gdnState): its kind is re-derived every step. */
  exposed: Uint8Array;
  /** Per value head, per row i of S: 0 only if row i is known to be all +0 (kept with `kind`). */
  rowNonZero: Uint8Array[];
  /**
   * Per value head, an upper bound of |S_ij| over every entry, kept with `kind` (meaningful while
   * the kind is not STATE_ANY; Infinity when unknown): what recurrentStepSparse's β = ±0 shortcut
   * needs to know that no δ_j can overflow.
   */
  sMax: Float64Array;
  /**
   * Per value head, memos of the byte addresses of S and its row marks in the wasm heap
   * (wasm-heap.ts ViewAt, passed to recurrentStepSparse): the heads of a layer step one after
   * another, so one memo per head keeps its answer from token to token.
   */
  headAt: { s: ViewAt[]; rnz: ViewAt[] };
  /** Buffers of single-token calls (decode), reused so a step allocates nothing; created on first use. */
  buffers?: GdnBuffers;
  /** What gdnDecodeTracked knows about the last decode step; undefined = nothing (rebuilt by a full step). */
  track?: GdnTrack;
  /**
   * 1 when every conv state entry is known to be +0 (bit pattern 0); 0 = unknown. See gdn-idle.ts.
   * A new cache starts at 1 (its state is a fresh +0 array); prepareToken keeps it at 1 while its
   * steps find every channel cold, and the tracked step sets it to 0.
   */
  convZero?: number;
  /**
   * The stacked in_proj (stack-rows.ts; the same Matrix object while its parts keep their storage)
   * through which every conv step since the cache was made got its input: then a channel whose qkv
   * row is empty there has had only +0 inputs, and its state is all +0 (it started so). undefined
   * before the first step, null when unknown (a step ran without it, or with another stack).
   */
  convInputs?: Matrix | null;
  /**
   * The mixer output of an idle step (gdn-idle.ts), once one has run; valid for these weights
   * only.
   */
  idleOut?: IdleOut;
  /**
   * What idlePreconditions learnt of the last input it checked: the stamp (DeltaShare) of an input
   * found all finite (−1: none), and the index of an entry with a clear sign bit in the last input.
   */
  idleInput?: { finiteStamp: number; clearAt: number };
  /** The layer's dimensions (gdnDimsOf), kept with the cache. */
  dims?: GdnDims;
  /** The result object of single-token decode steps (singleResult), made on first use. */
  single?: GdnRunResult;
  /**
   * The tracked step's memos of what it looks up at every step: the in_proj stack (StackSite), the
   * in- and out-projections' delta states (DeltaSite); made on first use.
   */
  sites?: { stack: StackSite; inProj: DeltaSite; outProj: DeltaSite };
  /** The weights `idle` was found for (gdn-idle.ts isIdleLayer, remembered per cache). */
  idleOf?: GdnWeights;
  idle?: boolean;
}

/** Per-layer scratch of a single-token GDN call (every array is fully rewritten before it is read). */
export interface GdnBuffers {
  mixed: Float32Array; z: Float32Array; b: Float32Array; a: Float32Array; conved: Float32Array;
  q: Float32Array; k: Float32Array; beta: Float32Array; g: Float32Array;
  core: Float32Array; normed: Float32Array; out: Float32Array; step: SparseStepScratch;
  /**
   * Per value head: the (core, z) bit patterns `normed` was last computed from (2·dv words per
   * head), valid where normMemoValid is 1. `normed` is written only by that computation.
   */
  normMemo: Uint32Array; normMemoValid: Uint8Array;
  /** Bit views of conved, normed and core (made once: a view costs an allocation). */
  convedBits: Uint32Array; normedBits: Uint32Array; coreBits: Uint32Array;
  /** gdnDecodeTracked's result (rewritten by each call). */
  tracked: { out: Float32Array; source: OutputSource | null };
  /** The kv array of every track's memo on this layer (GdnTrack.kvMemo; a new track starts with nothing valid in it). */
  memoKv: Float32Array;
  /** The conv kernels' arrays in the wasm memory (null: the conv step runs in JavaScript). */
  convKernel: ConvKernel | null;
  /** The gated norm kernel's arrays in the wasm memory (null: the tracked gated norm runs in JavaScript). */
  normKernel: NormKernel | null;
  /** The byte addresses of conved, q and k in the wasm memory the step scratch's kernels run on (−1 each where not carved). */
  convedAt: number; qAt: number; kAt: number;
}

/**
 * What the tracked conv step's wasm kernels (wasm-gdn-kernels.ts convActivate, convChannels) read
 * and write besides the cache's conv state, the projections' output and `conved`: their control
 * block (CONV_CTL: the addresses of these arrays and the layer's dimensions written once, the rest
 * at each call) and the track's channel records, lists and dirty marks (every track of the layer
 * takes these arrays, cleared), and copies of the layer's conv weights and single-tap positions
 * (`cwSrc`, `tapSrc`: the arrays they were copied from).
 */
export interface ConvKernel {
  heap: WasmHeap;
  ctl: Int32Array;
  chan: Int32Array; active: Int32Array; lazyList: Int32Array;
  qDirty: Uint8Array; kDirty: Uint8Array; vDirty: Uint8Array; vBeyond: Int32Array;
  tapAt: Uint8Array; cw: Float32Array;
  cwSrc: Float32Array | null; tapSrc: Uint8Array | null;
  /** ctl's byte address, and memos of the addresses of the arrays a step passes (wasm-heap.ts ViewAt). */
  ctlAt: number;
  views: { conv: ViewAt; mixed: ViewAt; conved: ViewAt; rows: ViewAt };
}

/**
 * What the tracked gated norm's wasm kernel (wasm-gdn-kernels.ts gatedNorm) reads and writes
 * besides core, z (the projections' output) and `normed`: its control block (NORM_CTL: the
 * addresses of these arrays and the layer's dimensions written once, the rest at each call, then
 * its scratch), the track's per-head records and marks and per-entry input bits (GdnTrack's
 * normIn … coreChanged; every track of the layer takes these arrays, cleared) and a copy of the
 * layer's norm weight (`nwSrc`: the array it was copied from).
 */
export interface NormKernel {
  heap: WasmHeap;
  /** The control block, and a float32 view of its words (invN, eps). */
  ctl: Int32Array; ctlF: Float32Array;
  normIn: Uint32Array; normZ: Uint32Array; normAcc: Float32Array; normR: Float32Array; normKept: Uint8Array;
  coreChanged: Uint8Array; normedChanged: Int32Array;
  nw: Float32Array; nwSrc: Float32Array | null;
  /** ctl's byte address, and a memo of the projections' output's address (wasm-heap.ts ViewAt). */
  ctlAt: number;
  zView: ViewAt;
}

/**
 * A layer's single-token buffers. With a wasm memory (f32 contexts) the arrays the recurrent step's
 * kernels read and write — conved (v), q, k, core (o) and the step's scratch — are carved from it
 * when they fit (wasm-gdn-kernels.ts); otherwise, and for the rest, JavaScript arrays.
 */
export function gdnBuffers(d: GdnDims, H: number, heap: WasmHeap | null = null): GdnBuffers {
  const carved = heap !== null && heap.hasGdnKernels
    ? heap.carve({
      conved: [Float32Array, d.convDim], q: [Float32Array, d.keyDim], k: [Float32Array, d.keyDim], core: [Float32Array, d.valueDim],
      memoKv: [Float32Array, d.hv * d.dv], normed: [Float32Array, d.valueDim],
    })
    : null;
  const conved = carved?.conved ?? new Float32Array(d.convDim);
  const normed = carved?.normed ?? new Float32Array(d.valueDim);
  const core = carved?.core ?? new Float32Array(d.valueDim);
  return {
    convedBits: bitsOf(conved), normedBits: bitsOf(normed), coreBits: bitsOf(core), tracked: { out: conved, source: null }, mixed: new Float32Array(d.convDim), z: new Float32Array(d.valueDim), b: new Float32Array(d.hv), a: new Float32Array(d.hv),
    conved, q: carved?.q ?? new Float32Array(d.keyDim), k: carved?.k ?? new Float32Array(d.keyDim),
    beta: new Float32Array(d.hv), g: new Float32Array(d.hv), core,
    normed, out: new Float32Array(H), step: newSparseStepScratch(d.dk, d.dv, heap),
    normMemo: new Uint32Array(2 * d.valueDim), normMemoValid: new Uint8Array(d.hv),
    memoKv: carved?.memoKv ?? new Float32Array(d.hv * d.dv),
    convKernel: carved !== null && heap !== null ? convKernelOf(d, heap) : null,
    normKernel: carved !== null && heap !== null && d.dv % 4 === 0 ? gatedNormKernelOf(d, heap, carved.core, carved.normed) : null,
    convedAt: carved?.conved.byteOffset ?? -1, qAt: carved?.q.byteOffset ?? -1, kAt: carved?.k.byteOffset ?? -1,
  };
}

function gatedNormKernelOf(d: GdnDims, heap: WasmHeap, core: Float32Array, normed: Float32Array): NormKernel | null {
  const c = heap.carve({
    ctl: [Int32Array, NORM_CTL_WORDS + 2 * d.dv], normIn: [Uint32Array, d.valueDim], normZ: [Uint32Array, d.valueDim],
    normAcc: [Float32Array, d.hv], normR: [Float32Array, d.hv], normKept: [Uint8Array, d.hv], coreChanged: [Uint8Array, d.hv],
    normedChanged: [Int32Array, d.valueDim], nw: [Float32Array, d.dv],
  });
  if (c === null) return null;
  // the words that stay for the layer's life (gdn-gated-norm.ts gatedNormWasm writes the rest at each call)
  const w = c.ctl;
  w[NORM_CTL.coreAt] = core.byteOffset;
  w[NORM_CTL.normInAt] = c.normIn.byteOffset;
  w[NORM_CTL.normZAt] = c.normZ.byteOffset;
  w[NORM_CTL.nwAt] = c.nw.byteOffset;
  w[NORM_CTL.normedAt] = normed.byteOffset;
  w[NORM_CTL.changedAt] = c.normedChanged.byteOffset;
  w[NORM_CTL.accAt] = c.normAcc.byteOffset;
  w[NORM_CTL.rAt] = c.normR.byteOffset;
  w[NORM_CTL.keptAt] = c.normKept.byteOffset;
  w[NORM_CTL.coreChangedAt] = c.coreChanged.byteOffset;
  w[NORM_CTL.hv] = d.hv;
  w[NORM_CTL.dv] = d.dv;
  return { heap, ...c, ctlF: new Float32Array(w.buffer, w.byteOffset, NORM_CTL_WORDS), nwSrc: null, ctlAt: w.byteOffset, zView: new ViewAt() };
}

function convKernelOf(d: GdnDims, heap: WasmHeap): ConvKernel | null {
  const c = heap.carve({
    ctl: [Int32Array, CONV_CTL_WORDS + d.K], chan: [Int32Array, 4 * d.convDim], active: [Int32Array, d.convDim],
    lazyList: [Int32Array, d.convDim], qDirty: [Uint8Array, d.hk], kDirty: [Uint8Array, d.hk], vDirty: [Uint8Array, d.hv],
    vBeyond: [Int32Array, d.hv], tapAt: [Uint8Array, d.convDim], cw: [Float32Array, d.convDim * d.K],
  });
  if (c === null) return null;
  // the words that stay for the layer's life: its own arrays' addresses and the dimensions
  // (gdn-tracked.ts convStepWasm writes the rest at each call)
  const w = c.ctl;
  w[CONV_CTL.chanAt] = c.chan.byteOffset;
  w[CONV_CTL.activeAt] = c.active.byteOffset;
  w[CONV_CTL.lazyAt] = c.lazyList.byteOffset;
  w[CONV_CTL.tapAtAt] = c.tapAt.byteOffset;
  w[CONV_CTL.cwAt] = c.cw.byteOffset;
  w[CONV_CTL.qDirtyAt] = c.qDirty.byteOffset;
  w[CONV_CTL.kDirtyAt] = c.kDirty.byteOffset;
  w[CONV_CTL.vDirtyAt] = c.vDirty.byteOffset;
  w[CONV_CTL.vBeyondAt] = c.vBeyond.byteOffset;
  w[CONV_CTL.convDim] = d.convDim;
  w[CONV_CTL.keyDim] = d.keyDim;
  w[CONV_CTL.dk] = d.dk;
  w[CONV_CTL.dv] = d.dv;
  w[CONV_CTL.K] = d.K;
  return {
    heap, ...c, cwSrc: null, tapSrc: null, ctlAt: w.byteOffset,
    views: { conv: new ViewAt(), mixed: new ViewAt(), conved: new ViewAt(), rows: new ViewAt() },
  };
}

/** A Uint32Array view of exactly a's elements (a may be a view into a larger buffer, such as the wasm memory). */
function bitsOf(a: Float32Array): Uint32Array {
  return new Uint32Array(a.buffer, a.byteOffset, a.length);
}

/**
 * An empty cache (every state +0, kind STATE_ZERO). With a wasm memory (f32 contexts) the states
 * and their all-+0 row marks are carved from it when they fit, for the recurrent step's kernels
 * (wasm-gdn-kernels.ts); its untouched pages, like a fresh array's, are never mapped. `previous`
 * (the cache this one replaces, Executor.reset) lends its carved arrays when none of its states
 * was handed out: the heads not known to be all +0 are cleared, so a reset neither carves again
 * nor touches the pages of heads that stayed +0.
 */
export function newGdnCache(d: GdnDims, heap: WasmHeap | null = null, previous: GdnCache | null = null): GdnCache {
  // One buffer per layer, each head's state a view of it: an allocation per head (64 per layer at
  // chip-test) cost far more than the zeroing, in a process whose heap holds a loaded chip.
  const n = d.dk * d.dv;
  let states: Float32Array | null = null;
  let rows: Uint8Array | null = null;
  let conv: Float32Array | null = null;
  const p = previous;
  if (heap !== null && p !== null && p.S.length === d.hv && p.S[0]!.length === n && p.S[0]!.buffer === heap.buffer
    && p.conv.length === d.convDim * d.K && p.conv.buffer === heap.buffer && p.exposed.every((e) => e === 0)) {
    // (the states are views of one array: S[0] starts it, rowNonZero[0] starts the marks)
    states = new Float32Array(heap.buffer, p.S[0]!.byteOffset, d.hv * n);
    rows = new Uint8Array(heap.buffer, p.rowNonZero[0]!.byteOffset, d.hv * d.dk);
    for (let h = 0; h < d.hv; h++) if (p.kind[h] !== STATE_ZERO) p.S[h]!.fill(0);
    rows.fill(0);
    conv = p.conv.fill(0);
  } else if (heap !== null && heap.hasGdnKernels) {
    const carved = heap.carve({ states: [Float32Array, d.hv * n], rows: [Uint8Array, d.hv * d.dk], conv: [Float32Array, d.convDim * d.K] });
    if (carved !== null) ({ states, rows, conv } = carved);
  }
  states ??= new Float32Array(d.hv * n);
  rows ??= new Uint8Array(d.hv * d.dk);
  const S: Float32Array[] = [];
  const rowNonZero: Uint8Array[] = [];
  for (let h = 0; h < d.hv; h++) {
    S.push(states.subarray(h * n, (h + 1) * n));
    rowNonZero.push(rows.subarray(h * d.dk, (h + 1) * d.dk));
  }
  return {
    conv: conv ?? new Float32Array(d.convDim * d.K), S, kind: new Uint8Array(d.hv).fill(STATE_ZERO), exposed: new Uint8Array(d.hv),
    rowNonZero, sMax: new Float64Array(d.hv), dims: d,
    headAt: { s: Array.from({ length: d.hv }, () => new ViewAt()), rnz: Array.from({ length: d.hv }, () => new ViewAt()) },
    // every optional field from the start: one object shape for the JIT (fields added later had
    // each cache change shape, deoptimizing the decode's code when a new executor's caches came)
    buffers: undefined, track: undefined, convZero: 1, convInputs: undefined, idleOut: undefined, idleInput: undefined,
    single: undefined,
  };
}

export interface GdnRunResult {
  /** Mixer output per token, [H] each. */
  out: Float32Array[];
  /** Per token: states after that token (copies), or null where not available. Only filled when wantStates. */
  states: (Float32Array[] | null)[];
  /**
   * Single-token decode: the versioned vector out[0] equals (delta.ts OutputSource), so a consumer
   * can tell which entries changed since the previous step; null when the step cannot tell.
   */
  outSource?: OutputSource | null;
}

/**
 * What the last tracked decode step of a layer left behind (gdnDecodeTracked). Invariants between
 * tracked steps of one cache:
 *  - a conv channel not active (CH_ACTIVE) is settled — its K state taps are bit-identical and
 *    `conved[c]` (the layer buffer) is the conv + SiLU (in `siluForm`) of that state — or lazy
 *    (listed in `lazyList`: its output stays while its input does, its state behind by the shifts
 *    it skipped); an aliased channel keeps CH_ACTIVE off the active list and follows its
 *    representative (conv-alias.ts);
 *  - buf.q / buf.k hold the l2-normalised queries / keys of buf.conved, buf.beta / buf.g the gates
 *    of the last step, buf.core each value head's last output, buf.normed its gated norm with
 *    the last z, and `headModified[h]` says whether the last step may have changed S of head h.
 */
/**
 * What a track aliases (GdnTrack.alias): the blocks checked when it set its aliases up, listed with their
 * representatives, and `src`: per block (the 2·hk key blocks, then the hv value blocks) the block
 * whose outputs its heads read — its representative, or itself. `complete`: every block of the
 * layer's ConvAlias is aliased; then `walk` is the stacked in_proj without their rows
 * (conv-alias.ts reducedStackOf) that the track's later steps walk while the layer's stack is
 * `stack`, the one it was made from (else null).
 */
export interface TrackAlias {
  keyBlocks: Int32Array; keyReps: Int32Array; valueBlocks: Int32Array; valueReps: Int32Array; src: Int32Array;
  dims: GdnDims; complete: boolean; stack: Matrix; walk: Matrix | null;
}

/** GdnTrack.chan flags (`chan[4c+1]`): in the active list; in the lazy list. */
export const CH_ACTIVE = 1;
export const CH_LISTED = 2;

export interface GdnTrack {
  weights: GdnWeights;
  /** The conv blocks this track runs through their representatives (conv-alias.ts; set at its step ExecTuning.aliasConvBlocks), or null. */
  alias: TrackAlias | null;
  /** The silu form the track's conv outputs (buf.conved) were computed in (the context's; another form starts a fresh track). */
  siluForm: 'mul' | 'div';
  /** Whether the track's outputs are the bf16 profile's (conv outputs, β, the core and gated norm rounded); another profile starts a fresh track. */
  bf16: boolean;
  active: Int32Array;
  nActive: number;
  /**
   * One record per conv channel c, at 4c … 4c+3, so a step reads one cache line per channel
   * (these were three arrays and the single-tap weights a fourth): `chan[4c]` lazySince (below),
   * `chan[4c+1]` flags (CH_ACTIVE: in `active`; CH_LISTED: in lazyList), `chanF[4c+2]` the
   * channel's single-tap weight (singleTapOf: the weight of its one tap that weighs; NaN when more
   * taps weigh), `chan[4c+3]` the bit pattern of the channel's newest state tap (only the tracked
   * step writes the conv state while a track lives). `chanF` is `chan` as floats.
   */
  chan: Int32Array;
  chanF: Float32Array;
  /** Per conv channel: the tap its single-tap weight weighs (SingleTaps.at; K − 1 the newest). */
  tapAt: Uint8Array;
  /** Per key head: its q inputs (conved) changed this step. */
  qDirty: Uint8Array;
  /** Per key head: its k inputs changed this step. */
  kDirty: Uint8Array;
  /** Per value head: its v inputs changed this step (or its β or g). */
  vDirty: Uint8Array;
  /** Per value head: S may have changed in the last step; core output changed this step. */
  headModified: Uint8Array;
  /** Per value head: S was written from outside since the head's last step (noteGdnStateWritten). */
  writtenOutside: Uint8Array;
  /** Per value head, this step: 1 its output may have moved (its step ran), | 2 a z row of it was recomputed (gdn-tracked.ts O_MAY_MOVE, Z_MAY_MOVE). */
  coreChanged: Uint8Array;
  /** Normed entries that changed this step. */
  normedChanged: Int32Array;
  /**
   * The gated norm's record (its f32 form's parts: norms.ts gatedNormSquares, gatedNormFactor,
   * gatedNormEntry): per value head, the sum of squares and factor its normed entries were last
   * computed with (normAcc, normR; normKept 1 once they are set), and per entry the bit patterns
   * of the o and z it was computed from (normIn, normZ).
   */
  normIn: Uint32Array;
  normZ: Uint32Array;
  normAcc: Float32Array;
  normR: Float32Array;
  normKept: Uint8Array;
  /** Tracked steps completed on this track (the conv step index of the next one). */
  step: number;
  /**
   * lazySince (in `chan`), per conv channel: −1, or the step at which the channel went *lazy*: its
   * output is fixed while its input stays, and its state lags behind by the shifts of that input
   * since (`catchUpChannel`, `materializeLazyConv`). The lazy channels, lazyList[0..nLazy) (may
   * hold channels that have since caught up: lazySince tells).
   */
  lazyList: Int32Array;
  nLazy: number;
  /** The value heads' kv from their last step (recurrentStepSparse's memo). */
  kvMemo: KvMemo;
  /** The version of the stacked input projections (delta.ts) that β and g were last computed from. */
  projVer: number;
  /** The stacked in_proj rows of every head's b (convDim + valueDim + h), the gates' row list when all are recomputed. */
  readonly bRows: Int32Array;
  /**
   * When the last step's out_proj ran through linear() into buf.out (its delta form did not apply):
   * the matrix storage it used; null otherwise.
   */
  outLinearCsr: CsrMatrix | undefined | null;
  outLinearDense: Float32Array | undefined | null;
  /**
   * The source of buf.out while it holds linear()'s output (the delta form did not apply): its
   * version moves (full) when linear() recomputes and stays when the output is kept, so the
   * residual add after the layer recomputes nothing for it then.
   */
  linearOut: { version: number; full: boolean; rows: Int32Array; nRows: number };
  /**
   * Bit views of the stacked projections' output and of the conv state, and the arrays they view
   * (remade when those change; the arrays compared, not their `buffer` and `byteOffset`, which are
   * builtin calls: wasm-heap.ts ViewAt).
   */
  projBits: Uint32Array;
  convBits: Uint32Array;
  projSrc: Float32Array | null;
  convSrc: Float32Array | null;
  /** Scratch: the entries of a value head that the gated norm recomputes. */
  normMoved: Int32Array;
  /**
   * Per value head: how many of its v entries (conv outputs) lie beyond 2^126 in magnitude or are
   * not numbers (gdn-sparse-step.ts beyondVBound), kept by every conv step; per key head: Σ|k_i| of
   * its k as last normalised (absSum), NaN until the β = ±0 test first needs it. That test of the
   * tracked step reads both.
   */
  vBeyond: Int32Array;
  kAbs: Float64Array;
}
