/**
 * The reference executor: a float32 (or bf16-profile) forward pass of a Qwen3.5 / Qwen3-Next hybrid
 * model from in-memory ModelWeights, with a cache for decoding (docs/executor.md, "Forward pass"):
 *   h₀ = act(embed[id]) (no scaling);  per layer:
 *   h = act(fl(x + Mixer(RMSNorm₁₊w(x)))),  y = act(fl(h + FFN(RMSNorm₁₊w(h))));
 *   logits = act(RMSNorm₁₊w(y; norm) · W_lmᵀ).
 * The first forward on an empty cache (prefill) runs GDN layers through the chunked kernel; each
 * later single token (decode) through the recurrent rule — also the first one when
 * ExecOptions.firstToken is 'recurrent'. Layers run layer-major in prefill (all positions of layer
 * i before layer i+1), which is what a batched forward computes.
 */
import { ChipcError } from '../util/errors.ts';
import type { ModelConfig } from '../model/config.ts';
import { sparseOnly, type ModelWeights } from '../model/weights.ts';
import { attentionStep, KvCache, ropeInvFreq } from './attention.ts';
import { gdnForward } from './gdn.ts';
import { allMatrices, validateWeights } from './validate-weights.ts';
import { gdnDimsOf, newGdnCache, type GdnCache, type IdleOut } from './gdn-cache.ts';
import { idleSkipHolds } from './gdn-idle.ts';
import { classifyState, STATE_ZERO } from './gdn-sparse-step.ts';
import { gdnConvSnapshot, noteGdnStateWritten } from './gdn-tracked.ts';
import { linear, matrixRow, matrixRowInto, newMatmulStats, type MatmulPath, type MatmulStats } from './matmul.ts';
import { linearArgmax } from './matmul-argmax.ts';
import { moeForward, swiglu, type SwigluIo } from './mlp.ts';
import { newTrackedFfn, trackedFfn, type TrackedFfn } from './ffn-memo.ts';
import { makeNumericContext, type ExecNumericContext } from './numeric.ts';
import { plansOf } from './plans.ts';
import { rmsNorm1p } from './norms.ts';
import type { ExecOptions, HookOptions, LayerHook, LayerHookEvent } from './types.ts';
import { addHalfWork, markHalfWork, phaseEnd, phaseStart, setActiveTimes, setLayerPrefix, type LayerDetail, type PhaseTimes } from './profile.ts';
import { addTracked, ResidualTrack, rowEntriesOf, type RowEntries } from './residual-track.ts';
import { wasmHeapOf, type DeltaShare } from './delta.ts';

const f32 = Math.fround;

/** Executor.cacheSnapshot: what the cache carries into the next forward, as copies. */
export interface CacheSnapshot {
  position: number;
  layers: ({ kind: 'gdn'; conv: Float32Array; states: Float32Array[] } | { kind: 'attention'; k: Float32Array; v: Float32Array })[];
}

/**
 * The first difference between two cache snapshots, compared as bit patterns (−0 ≠ +0, NaN
 * payloads count), or null when they are identical; `count` is how many entries differ in all.
 */
export function compareCaches(a: CacheSnapshot, b: CacheSnapshot): { where: string; count: number } | null {
  if (a.position !== b.position) return { where: `positions ${a.position} and ${b.position}`, count: 1 };
  let first: string | null = null;
  let count = 0;
  const cmp = (x: Float32Array, y: Float32Array, what: string) => {
    const ux = new Uint32Array(x.buffer, x.byteOffset, x.length);
    const uy = new Uint32Array(y.buffer, y.byteOffset, y.length);
    if (ux.length !== uy.length) { count++; first ??= `${what}: ${ux.length} vs ${uy.length} entries`; return; }
    for (let i = 0; i < ux.length; i++) {
      if (ux[i] !== uy[i]) {
        count++;
        first ??= `${what}[${i}]: ${x[i]} vs ${y[i]}`;
      }
    }
  };
  a.layers.forEach((la, li) => {
    const lb = b.layers[li]!;
    if (la.kind === 'gdn' && lb.kind === 'gdn') {
      cmp(la.conv, lb.conv, `layer ${li} conv window`);
      la.states.forEach((s, h) => cmp(s, lb.states[h]!, `layer ${li} value head ${h} state`));
    } else if (la.kind === 'attention' && lb.kind === 'attention') {
      cmp(la.k, lb.k, `layer ${li} keys`);
      cmp(la.v, lb.v, `layer ${li} values`);
    } else {
      count++;
      first ??= `layer ${li}: different kinds`;
    }
  });
  return first === null ? null : { where: first, count };
}

/** Residual-stream buffers of a single-token forward (see forward). */
interface ForwardBuffers {
  x: [Float32Array, Float32Array];
  normed: Float32Array;
  mid: Float32Array;
  n2: Float32Array;
  ff: Float32Array;
}

function newForwardBuffers(H: number): ForwardBuffers {
  return {
    x: [new Float32Array(H), new Float32Array(H)], normed: new Float32Array(H), mid: new Float32Array(H),
    n2: new Float32Array(H), ff: new Float32Array(H),
  };
}

/** Index of the largest logit; the lowest id wins ties; NaN never wins. */
export function argmax(logits: Float32Array): number {
  let best = -1;
  let bv = -Infinity;
  for (let i = 0; i < logits.length; i++) {
    const v = logits[i];
    if (v > bv || (best < 0 && v === -Infinity)) { bv = v; best = i; }
  }
  if (best < 0) throw new ChipcError('exec.nan-logits', 'argmax: every logit is NaN (or there are none)');
  return best;
}

export class Executor {
  readonly config: ModelConfig;
  readonly ctx: ExecNumericContext;
  readonly path: MatmulPath;
  /** How the matmuls ran so far (sparse vs dense path). */
  readonly stats: MatmulStats = newMatmulStats();
  private readonly weights: ModelWeights;
  /** The numeric context of the GDN chunked kernel (ExecOptions.kernelOrder; else ctx). */
  private readonly kernelCtx: ExecNumericContext;
  private readonly rope: { R: number; invFreq: Float32Array };
  /** ExecOptions.firstToken: whether decode() may run on an empty cache (the recurrent rule from position 0). */
  private readonly firstToken: 'chunked' | 'recurrent';
  private gdn: (GdnCache | null)[] = [];
  private kv: (KvCache | null)[] = [];
  private pos = 0;
  private hooks: LayerHook[] = [];
  private stateHooks = 0; // the registered hooks that take GDN states (not added with gdnStates: false)
  private buffers: ForwardBuffers | null = null;
  private phaseTimes: PhaseTimes | null = null;
  private layerDetail: LayerDetail | null = null;
  /** decodeArgmax's logits buffer when the LM head cannot run in scatter form (created on first use). */
  private logitsBuffer: Float32Array | null = null;
  /**
   * The incremental residual stream of decode steps (residual-track.ts; sparse path, sequential
   * order), or null when it does not apply.
   */
  private readonly track: ResidualTrack | null;
  /** The final-norm output of the last forward when the tracked step ran it, else null. */
  private trackedNormed: Float32Array | null = null;
  /** decodeArgmax's account of trackedNormed for the LM head (reused). */
  private readonly argmaxShare: DeltaShare = { stamp: -1, since: null };
  private embedRow: Float32Array | null = null;
  /** Token embedding rows as their entries, by token id (the tracked step's; ExecTuning.embedRowsKept at most). */
  private readonly embedEntries = new Map<number, RowEntries>();
  private embedStorage: unknown = null;
  /** forwardTracked's exchange objects (SwiGLU's, the mixer's share, the mixer's input list), made on first use. */
  private trackedIo: { ff: SwigluIo & { share: DeltaShare }; mix: DeltaShare; normed: Float32Array[] } | null = null;
  /** Per layer, the tracked step's memos of its SwiGLU's lookups and its FFN memo (ffn-memo.ts). */
  private ffnLayers: TrackedFfn[] | null = null;
  /** The per-layer phase names of forwardTracked and their prefixes (made once). */
  private layerPhases: (readonly [string, string, string])[] | null = null;

  constructor(weights: ModelWeights, opts: ExecOptions = {}) {
    validateWeights(weights);
    this.weights = weights;
    this.config = weights.config;
    // the weight plans are shared by every executor on these weights (plans.ts); memos are this executor's
    const plans = plansOf(weights);
    this.ctx = makeNumericContext(opts, plans);
    this.kernelCtx = opts.kernelOrder === undefined ? this.ctx : makeNumericContext({ ...opts, order: opts.kernelOrder }, plans);
    if (opts.path !== undefined && opts.path !== 'dense' && opts.path !== 'sparse') {
      throw new ChipcError('exec.bad-option', `unknown matmul path '${String(opts.path)}' (expected dense or sparse)`);
    }
    this.path = opts.path ?? (allMatrices(weights).every(sparseOnly) ? 'sparse' : 'dense');
    if (opts.firstToken !== undefined && opts.firstToken !== 'chunked' && opts.firstToken !== 'recurrent') {
      throw new ChipcError('exec.bad-option', `unknown first-token mode '${String(opts.firstToken)}' (expected chunked or recurrent)`);
    }
    this.firstToken = opts.firstToken ?? 'chunked';
    this.rope = ropeInvFreq(this.config);
    const c = this.config;
    this.track = this.path === 'sparse' && this.ctx.order.kind === 'sequential'
      ? new ResidualTrack(plans, c.hiddenSize, weights.layers.map((l) => ({ input: l.inputLayernorm, post: l.postAttentionLayernorm })), weights.norm, c.rmsNormEps,
        wasmHeapOf(this.ctx))
      : null;
    this.reset();
  }

  /** Tokens consumed so far. */
  get position(): number {
    return this.pos;
  }

  /**
   * The numeric context's wasm memory (wasm-kernels.ts WasmHeap): its size and the bytes carved
   * from it so far, by this executor and any other on the same context; null where the context has
   * none (`wasmHeapMiB: 0`, no WebAssembly), in either profile. Carved address space costs resident
   * memory only where its pages were written.
   */
  wasmMemoryUse(): { sizeBytes: number; carvedBytes: number } | null {
    const heap = this.ctx.memos.wasmHeap ?? null; // (read, not made)
    if (heap === null) return null;
    const sizeBytes = heap.buffer.byteLength;
    return { sizeBytes, carvedBytes: sizeBytes - heap.free };
  }

  /**
   * Empties every cache (GDN conv and recurrent states to +0, KV caches) and sets the position to 0.
   * GDN arrays carved from the context's wasm memory pass to the new caches, cleared, unless a
   * state was handed out (gdnState): a cache read through gdnCacheOf does not outlive a reset.
   */
  reset(): void {
    const c = this.config;
    const heap = wasmHeapOf(this.ctx);
    const previous = this.gdn as (GdnCache | null)[] | undefined;
    this.gdn = c.layerTypes.map((t, l) => (t === 'linear_attention' ? newGdnCache(gdnDimsOf(c), heap, previous?.[l] ?? null) : null));
    this.kv = c.layerTypes.map((t) => (t === 'full_attention' ? new KvCache(c.numKeyValueHeads * c.headDim) : null));
    this.pos = 0;
    this.track?.invalidate();
  }

  /** Calls `h` after each layer at each position; `gdnStates: false` spares the state copies (and a decode its idle skips). */
  addHook(h: LayerHook, opts: HookOptions = {}): () => void {
    const states = opts.gdnStates !== false;
    this.hooks.push(h);
    if (states) this.stateHooks++;
    let removed = false;
    return () => {
      const i = this.hooks.indexOf(h);
      if (removed || i < 0) return;
      this.hooks.splice(i, 1);
      removed = true;
      if (states) this.stateHooks--;
    };
  }

  /** The live recurrent state of (layer, value head), S[i,j] at i·dv + j; writes change the executor's state. */
  gdnState(layer: number, valueHead: number): Float32Array {
    const s = this.liveGdnState(layer, valueHead);
    // The caller may write S at any time from now on: the decode step stops trusting its tracked kind.
    this.gdn[layer]!.exposed[valueHead] = 1;
    return s;
  }

  /**
   * The GDN cache of a linear_attention layer as it stands — conv window, states, and the decode
   * steps' bookkeeping (which heads were handed out, tracked state kinds) — for inspection by tests
   * and tools. Read it only: writing it bypasses the bookkeeping that gdnState keeps.
   */
  gdnCacheOf(layer: number): Readonly<GdnCache> {
    const c = this.gdn[layer];
    if (!c) {
      throw new ChipcError('exec.bad-layer', `layer ${layer} is not a linear_attention layer (0..${this.config.numLayers - 1})`);
    }
    return c;
  }

  /**
   * A copy of the recurrent state of (layer, value head), S[i,j] at i·dv + j. Unlike gdnState it
   * hands nothing out, so the decode steps keep their shortcuts for the head (a reader's path:
   * capturing a RAM's contents between service calls).
   */
  gdnStateCopy(layer: number, valueHead: number): Float32Array {
    return this.liveGdnState(layer, valueHead).slice();
  }

  private liveGdnState(layer: number, valueHead: number): Float32Array {
    const c = this.gdn[layer];
    if (!c) {
      throw new ChipcError('exec.bad-layer', `layer ${layer} is not a linear_attention layer (0..${this.config.numLayers - 1})`);
    }
    const s = c.S[valueHead];
    if (!s) throw new ChipcError('exec.bad-head', `value head ${valueHead} out of range [0, ${c.S.length})`);
    return s;
  }

  /**
   * Overwrite the recurrent state of (layer, value head) with a copy of `state` (dk·dv entries,
   * S[i,j] at i·dv + j) without handing the live array out: the decode step keeps trusting the
   * state's tracked kind, re-derived here, so the sparse shortcuts stay on (a loader's path).
   */
  setGdnState(layer: number, valueHead: number, state: Float32Array): void {
    const c = this.gdn[layer];
    if (!c) {
      throw new ChipcError('exec.bad-layer', `layer ${layer} is not a linear_attention layer (0..${this.config.numLayers - 1})`);
    }
    const s = c.S[valueHead];
    if (!s) throw new ChipcError('exec.bad-head', `value head ${valueHead} out of range [0, ${c.S.length})`);
    if (state.length !== s.length) throw new ChipcError('exec.bad-state', `state of ${state.length} entries for a head of ${s.length}`);
    s.set(state);
    c.kind[valueHead] = classifyState(s, c.rowNonZero[valueHead], c.sMax, valueHead);
    noteGdnStateWritten(c, valueHead);
  }

  /**
   * setGdnState for the state that is +0 everywhere but S[index[t]] = fl(value) for t < count
   * (positions i·dv + j, each in range): the same state, kind, all-+0 rows and bound as setGdnState
   * of that dense array gives, without one. It clears the head unless it is known to be all +0
   * (its tracked kind, and not handed out: the decode steps' own premise), writes those entries
   * and derives the kind from them alone (classifyState over those entries: the ones left out are
   * +0, which its scan passes over). (A RAM load: a chip's RAMs are 160 value heads at
   * qwen3.5-4b, 10 MB of mostly +0 state, whose untouched pages a fresh executor then never maps.)
   */
  setGdnStateEntries(layer: number, valueHead: number, index: ArrayLike<number>, count: number, value: number): void {
    const s = this.liveGdnState(layer, valueHead);
    const c = this.gdn[layer]!;
    if (!Number.isInteger(count) || count < 0 || count > index.length) throw new ChipcError('exec.bad-state', `${count} entries asked of an index list of ${index.length}`);
    for (let t = 0; t < count; t++) {
      const at = index[t]!;
      if (!Number.isInteger(at) || at < 0 || at >= s.length) throw new ChipcError('exec.bad-state', `state entry ${at} outside a head of ${s.length}`);
    }
    if (c.kind[valueHead] !== STATE_ZERO || c.exposed[valueHead] === 1) s.fill(0);
    for (let t = 0; t < count; t++) s[index[t]!] = value;
    c.kind[valueHead] = classifyState(s, c.rowNonZero[valueHead], c.sMax, valueHead, index, count);
    noteGdnStateWritten(c, valueHead);
  }

  /**
   * A copy of everything the cache carries into the next forward: per GDN layer the conv window
   * and every value head's recurrent state, per attention layer the cached keys and values. Two
   * executors that will compute the same next step have bit-identical snapshots (compareCaches).
   */
  cacheSnapshot(): CacheSnapshot {
    const K = this.config.linearConvKernelDim;
    return {
      position: this.pos,
      layers: this.config.layerTypes.map((_, li) => {
        const g = this.gdn[li];
        // the conv window as the plain step holds it, the cache untouched: catching the lazy
        // channels up in place (materializeLazyConv) would leave a live track whose caught-up
        // channels are neither lazy nor settled, and later steps would not shift them
        if (g) return { kind: 'gdn' as const, conv: gdnConvSnapshot(g, K), states: g.S.map((x) => x.slice()) };
        const kv = this.kv[li]!;
        const n = kv.length * kv.width;
        return { kind: 'attention' as const, k: kv.k.slice(0, n), v: kv.v.slice(0, n) };
      }),
    };
  }

  /**
   * Accumulate wall-clock milliseconds per phase of every later forward call into `t` (null: off,
   * the default; off costs one null test per probe). Phase names: docs/executor.md. With `detail`
   * (and `t`), the tracked decode step also accumulates each phase under its layer's prefix
   * (`L3 gdn.conv`) and appends each step's time in every layer half to detail.tokenMs; with
   * detail.work it also sums each layer half's work counters there (profile.ts HalfWork).
   */
  setPhaseTimes(t: PhaseTimes | null, detail: LayerDetail | null = null): void {
    this.phaseTimes = t;
    this.layerDetail = t === null ? null : detail;
  }

  /** First forward on an empty cache. Returns logits per position if allLogits, else only the last. */
  prefill(idsIn: ArrayLike<number>, opts: { allLogits?: boolean } = {}): Float32Array[] {
    // A typed array's map() would keep its element type: work on a plain array of ids.
    const ids = Array.from(idsIn);
    if (this.pos !== 0) {
      throw new ChipcError('exec.not-empty', `prefill needs an empty cache, but ${this.pos} tokens were consumed (call reset())`);
    }
    if (ids.length === 0) throw new ChipcError('exec.empty-prompt', 'prefill needs at least one token');
    return this.timedForward(ids, 'prefill', opts.allLogits === true);
  }

  /**
   * Feeds `ids` one at a time through the decode path (the recurrent rule, the incremental
   * matmuls), on an empty cache too, without computing their logits: a prompt whose next-token
   * distributions are not wanted, before `decodeArgmax` of its last token. The chunked kernel of
   * prefill() pays for whole chunks of C positions in every value head whatever the prompt's
   * length (≈ 0.5 s for the chip's two-token prompt at chip-test); a stock engine that feeds
   * a prompt token by token does what this does. The chip leaves the same cache either way
   * (test/executor-prime.test.ts); for a general model the two agree in exact arithmetic only.
   */
  prime(idsIn: ArrayLike<number>): void {
    const ids = Array.from(idsIn);
    this.timed(() => {
      for (const id of ids) this.forward([id], 'decode');
    });
  }

  /**
   * One forward of the tokens `ids` on whatever the cache holds: what an engine does for each
   * piece of a prompt it prefills in chunks (transformers with a cache, vLLM's chunked prefill).
   * On an empty cache this is prefill() (a single token there is a decode step when
   * ExecOptions.firstToken is 'recurrent'); a single token on a non-empty cache is a decode step
   * (the recurrent rule, as transformers does for one new token); several tokens run the GDN
   * layers through the chunked kernel starting from the cached state and conv window.
   */
  extend(idsIn: ArrayLike<number>, opts: { allLogits?: boolean } = {}): Float32Array[] {
    const ids = Array.from(idsIn);
    if (ids.length === 0) throw new ChipcError('exec.empty-prompt', 'extend needs at least one token');
    if (this.pos === 0 && !(ids.length === 1 && this.firstToken === 'recurrent')) return this.prefill(ids, opts);
    return this.timedForward(ids, ids.length === 1 ? 'decode' : 'prefill', opts.allLogits === true);
  }

  /**
   * One cached single-token decode step (recurrent GDN). On an empty cache only with
   * ExecOptions.firstToken 'recurrent': then the step starts from the zero conv window and the zero
   * (or written, `setGdnState`) states at position 0; otherwise exec.empty-cache.
   */
  decode(id: number): Float32Array {
    this.checkDecodable();
    return this.timedForward([id], 'decode', false)[0];
  }

  /** decode()'s precondition: a token consumed before, or firstToken 'recurrent'. */
  private checkDecodable(): void {
    if (this.pos === 0 && this.firstToken !== 'recurrent') {
      throw new ChipcError('exec.empty-cache', "decode needs a prefill first (the first forward uses the chunked kernel; ExecOptions.firstToken 'recurrent' runs it as a decode step)");
    }
  }

  /**
   * One decode step returning only the greedy next token: exactly argmax(decode(id)) (lowest id
   * among the maximal logits, NaN never wins, exec.nan-logits when all are NaN), with the same
   * state changes, stats and hooks, but without materialising a fresh logits array. On the sparse
   * path in sequential order the LM head runs in scatter form into a reused sparse buffer
   * (matmul-argmax.ts `linearArgmax`): rows no column reaches are exactly +0 and only the lowest
   * such row competes for the maximum; otherwise the logits go to a reused buffer and argmax scans it.
   */
  decodeArgmax(id: number): number {
    this.checkDecodable();
    return this.timed(() => {
      const hs = this.forward([id], 'decode');
      const c = this.config;
      const H = c.hiddenSize;
      let t0 = phaseStart();
      let n = this.trackedNormed;
      let share: DeltaShare | undefined;
      if (n === null) {
        n = (this.buffers as ForwardBuffers).normed;
        rmsNorm1p(this.ctx, hs[0], 0, H, this.weights.norm, c.rmsNormEps, n, 0);
      } else {
        // the final norm's stamp and change list: the LM head's scan of n reads only those columns
        const site = (this.track as ResidualTrack).finalNorm;
        share = this.argmaxShare;
        share.stamp = site.stamp;
        share.since = site.changes();
      }
      t0 = phaseEnd('finalNorm', t0);
      const best = linearArgmax(
        this.ctx, this.weights.lmHead, n, this.path, (this.logitsBuffer ??= new Float32Array(c.vocabSize)), this.stats, share,
      );
      phaseEnd('lmHead', t0);
      return best;
    });
  }

  /** Greedy decoding: prefill(prompt) then n−1 decode steps; returns the n generated ids. */
  generate(prompt: number[], n: number): number[] {
    if (!Number.isInteger(n) || n < 0) throw new ChipcError('exec.bad-argument', `generate: n must be a non-negative integer, got ${n}`);
    if (n === 0) return [];
    const out: number[] = [];
    let last = argmax(this.prefill(prompt)[0]);
    out.push(last);
    for (let i = 1; i < n; i++) {
      last = argmax(this.decode(last));
      out.push(last);
    }
    return out;
  }

  private timedForward(ids: number[], mode: 'prefill' | 'decode', allLogits: boolean): Float32Array[] {
    return this.timed(() => {
      const hs = this.forward(ids, mode);
      return this.logitsOf(hs, allLogits ? hs.map((_, i) => i) : [hs.length - 1]);
    });
  }

  /** Runs f with this executor's phase accounting installed (if any). */
  private timed<T>(f: () => T): T {
    if (this.phaseTimes === null) return f();
    setActiveTimes(this.phaseTimes);
    try {
      return f();
    } finally {
      setActiveTimes(null);
      setLayerPrefix(null);
    }
  }

  /** The residual stream after the last layer, per position (advances the position). */
  private forward(ids: number[], mode: 'prefill' | 'decode'): Float32Array[] {
    const c = this.config;
    const ctx = this.ctx;
    const H = c.hiddenSize;
    const path = this.path;
    const stats = this.stats;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      if (!Number.isInteger(id) || id < 0 || id >= c.vocabSize) {
        throw new ChipcError('exec.bad-token', `token id ${id} out of range [0, ${c.vocabSize})`);
      }
    }
    const L = ids.length;
    this.trackedNormed = null;
    if (L === 1 && mode === 'decode' && this.track !== null) return [this.forwardTracked(ids[0])];
    this.track?.invalidate();
    const f32Profile = ctx.profile === 'f32'; // act is the identity
    const pos0 = this.pos;
    const hooked = this.hooks.length > 0;
    const wantStates = this.stateHooks > 0;
    // A single-token call keeps its residual vectors in the executor's buffers (no allocation);
    // hooks get copies and the logits are always a fresh array.
    const buf = L === 1 ? (this.buffers ??= newForwardBuffers(H)) : null;
    let t0 = phaseStart();
    let hs = ids.map((id) => {
      const row = buf ? matrixRowInto(this.weights.embedTokens, id, buf.x[0]) : matrixRow(this.weights.embedTokens, id);
      for (let i = 0; i < H; i++) row[i] = ctx.act(row[i]);
      return row;
    });
    t0 = phaseEnd('embed', t0);
    for (let li = 0; li < c.numLayers; li++) {
      const lw = this.weights.layers[li];
      const normed = hs.map((x) => {
        const o = buf ? buf.normed : new Float32Array(H);
        rmsNorm1p(ctx, x, 0, H, lw.inputLayernorm, c.rmsNormEps, o, 0);
        return o;
      });
      t0 = phaseEnd('norm', t0);
      let mix: Float32Array[];
      let gdnStates: (Float32Array[] | null)[] | null = null;
      let probs: (Float32Array[] | undefined)[] | null = null;
      const m = lw.mixer;
      if (m.kind === 'linear_attention') {
        const r = gdnForward(ctx, c, m, this.gdn[li] as GdnCache, normed, mode, path, wantStates, stats, undefined, this.kernelCtx);
        mix = r.out;
        gdnStates = r.states;
        t0 = phaseStart();
      } else {
        const kv = this.kv[li] as KvCache;
        mix = [];
        probs = [];
        for (let t = 0; t < L; t++) {
          const r = attentionStep(ctx, c, m, kv, normed[t], pos0 + t, this.rope, path, hooked, stats, buf !== null);
          mix.push(r.out);
          probs.push(r.probs);
        }
        t0 = phaseEnd('attention', t0);
      }
      const next: Float32Array[] = [];
      for (let t = 0; t < L; t++) {
        const x = hs[t];
        const mid = buf ? buf.mid : new Float32Array(H);
        const mx = mix[t];
        if (f32Profile) for (let i = 0; i < H; i++) mid[i] = f32(x[i] + mx[i]);
        else for (let i = 0; i < H; i++) mid[i] = ctx.act(f32(x[i] + mx[i]));
        t0 = phaseEnd('residual', t0);
        const n2 = buf ? buf.n2 : new Float32Array(H);
        rmsNorm1p(ctx, mid, 0, H, lw.postAttentionLayernorm, c.rmsNormEps, n2, 0);
        t0 = phaseEnd('norm', t0);
        const f = lw.mlp;
        const ff = f.kind === 'dense'
          ? swiglu(ctx, f, n2, path, stats, buf ? buf.ff : undefined)
          : moeForward(ctx, f, n2, (c.moe ?? { numExpertsPerTok: 0 }).numExpertsPerTok, c.moe?.normTopkProb ?? false, H, path, stats);
        // ping-pong: layer li reads x[li & 1] and writes x[(li + 1) & 1]
        const y = buf ? buf.x[(li + 1) & 1] : new Float32Array(H);
        t0 = phaseStart();
        if (f32Profile) for (let i = 0; i < H; i++) y[i] = f32(mid[i] + ff[i]);
        else for (let i = 0; i < H; i++) y[i] = ctx.act(f32(mid[i] + ff[i]));
        t0 = phaseEnd('residual', t0);
        next.push(y);
        if (hooked) {
          const ev: LayerHookEvent = {
            layer: li, position: pos0 + t, residualIn: x.slice(), residualMid: mid.slice(), residualOut: y.slice(),
          };
          const st = gdnStates?.[t];
          if (st) ev.gdnState = st;
          const pr = probs?.[t];
          if (pr) ev.attentionProbs = pr;
          for (const h of [...this.hooks]) h(ev);
          t0 = phaseStart();
        }
      }
      hs = next;
    }
    this.pos += L;
    return hs;
  }

  /**
   * One decode step through the incremental residual stream (residual-track.ts): the same values
   * as forward()'s loop, recomputed where they changed. Runs the final norm too (trackedNormed).
   * Returns the last layer's output.
   */
  private forwardTracked(id: number): Float32Array {
    const c = this.config;
    const ctx = this.ctx;
    const H = c.hiddenSize;
    const path = this.path;
    const stats = this.stats;
    const tr = this.track as ResidualTrack;
    const fresh = !tr.valid;
    tr.valid = false; // until the step completes
    const pos = this.pos;
    const hooked = this.hooks.length > 0;
    const wantStates = this.stateHooks > 0;
    const buf = (this.buffers ??= newForwardBuffers(H));
    let t0 = phaseStart();
    const emb = this.weights.embedTokens;
    // (kept while the embedding's storage is the same, as the weight plans are: plans.ts)
    const storage = emb.readRow ?? emb.dense ?? emb.csr ?? null;
    if (storage !== this.embedStorage) { this.embedEntries.clear(); this.embedStorage = storage; }
    const rowBuf = (this.embedRow ??= new Float32Array(H));
    let row: Float32Array | null = null; // the whole row, when read
    let entries = this.embedEntries.get(id);
    if (entries === undefined) {
      row = matrixRowInto(emb, id, rowBuf);
      entries = rowEntriesOf(row);
      if (this.embedEntries.size >= ctx.tuning.embedRowsKept) this.embedEntries.clear(); // (ExecTuning)
      this.embedEntries.set(id, entries);
    }
    // only the entries of the previous row and this one can differ (residual-track.ts)
    if (fresh || !tr.setEmbeddingEntries(ctx, entries)) tr.setEmbedding(ctx, row ?? matrixRowInto(emb, id, rowBuf), fresh, entries);
    t0 = phaseEnd('embed', t0);
    let x = tr.x0;
    // the step's exchange objects, kept on the executor (a step allocates none)
    const io = this.trackedIo ??= {
      ff: { outSource: null, share: { stamp: -1, since: null } }, mix: { stamp: -1, since: null }, normed: [],
    };
    const ffIo = io.ff;
    const mixShare = io.mix;
    // (per-layer totals beside the phases, with profiling on: `layer N mixer` and `layer N ffn`)
    const layerPhases = this.layerPhases ??= Array.from({ length: c.numLayers }, (_, li) => [`layer ${li} mixer`, `layer ${li} ffn`, `L${li} `] as const);
    const detail = this.layerDetail;
    if (detail !== null) {
      while (detail.tokenMs.length < 2 * c.numLayers) detail.tokenMs.push([]);
      if (detail.work !== undefined) markHalfWork(stats); // (each half's add marks the next half's start)
    }
    for (let li = 0; li < c.numLayers; li++) {
      const lw = this.weights.layers[li];
      const lt = tr.layers[li];
      let tl = phaseStart();
      if (detail !== null) setLayerPrefix(layerPhases[li]![2]);
      const m = lw.mixer;
      const gc = this.gdn[li];
      // an idle mixer whose input keeps it idle: its norm and step passed over (gdn-idle.ts idleSkipHolds;
      // a step that does not ask leaves its input unchecked)
      let skip = false;
      if (m.kind === 'linear_attention' && gc !== null) {
        if (!fresh && !wantStates && path === 'sparse' && ctx.order.kind === 'sequential') skip = idleSkipHolds(lt.idleSkip, gc, m, x, lt.n1.w1, lt.n1.eps);
        else lt.idleSkip.checked = false;
      }
      if (skip) lt.n1.passOver();
      else lt.n1.run(ctx, x, fresh);
      t0 = phaseEnd('norm', t0);
      const normed = lt.n1.out.v;
      let mix: Float32Array;
      let mixChanges: { rows: Int32Array; n: number } | null = null;
      let gdnStates: Float32Array[] | null = null;
      let probs: Float32Array[] | undefined;
      if (skip) {
        const io = (gc as GdnCache).idleOut as IdleOut;
        mix = io.buf;
        mixChanges = lt.mixSeen.advance(io.source);
        if (stats) { stats.sparse += 5; stats.gdnIdlePassedOver++; } // (sparse: as the idle step counts)
        t0 = phaseEnd('gdn.idle', t0);
      } else if (m.kind === 'linear_attention') {
        mixShare.stamp = lt.n1.stamp;
        mixShare.since = lt.n1.changes();
        io.normed[0] = normed;
        const r = gdnForward(ctx, c, m, gc as GdnCache, io.normed, 'decode', path, wantStates, stats, mixShare);
        const idleOut = (gc as GdnCache).idleOut;
        lt.idleSkip.last = !wantStates && idleOut !== undefined && r.outSource === idleOut.source ? idleOut : null;
        mix = r.out[0];
        gdnStates = r.states[0];
        mixChanges = lt.mixSeen.advance(r.outSource ?? null);
        t0 = phaseStart();
      } else {
        const r = attentionStep(ctx, c, m, this.kv[li] as KvCache, normed, pos, this.rope, path, hooked, stats, true);
        mix = r.out;
        probs = r.probs;
        mixChanges = lt.mixSeen.advance(null);
        t0 = phaseEnd('attention', t0);
      }
      addTracked(ctx, x, mix, mixChanges, lt.mid, fresh);
      t0 = phaseEnd('residual', t0);
      const tm = tl;
      tl = phaseEnd(layerPhases[li]![0], tl);
      if (detail !== null) {
        detail.tokenMs[2 * li]!.push(tl - tm);
        if (detail.work !== undefined) addHalfWork(detail.work, 2 * li, stats);
      }
      lt.n2.run(ctx, lt.mid, fresh);
      t0 = phaseEnd('norm', t0);
      const f = lw.mlp;
      let ff: Float32Array;
      let ffChanges: { rows: Int32Array; n: number } | null = null;
      if (f.kind === 'dense') {
        const layer = (this.ffnLayers ??= Array.from({ length: c.numLayers }, newTrackedFfn))[li];
        ff = trackedFfn(ctx, layer, f, lt.n2.out.v, lt.n2.stamp, lt.n2.changes(), path, stats, buf.ff, ffIo);
        t0 = phaseStart();
        ffChanges = lt.ffSeen.advance(ffIo.outSource);
      } else {
        ff = moeForward(ctx, f, lt.n2.out.v, (c.moe ?? { numExpertsPerTok: 0 }).numExpertsPerTok, c.moe?.normTopkProb ?? false, H, path, stats);
        t0 = phaseStart();
        lt.ffSeen.advance(null);
      }
      addTracked(ctx, lt.mid, ff, ffChanges, lt.y, fresh);
      t0 = phaseEnd('residual', t0);
      const te = phaseEnd(layerPhases[li]![1], tl);
      if (detail !== null) {
        detail.tokenMs[2 * li + 1]!.push(te - tl);
        if (detail.work !== undefined) addHalfWork(detail.work, 2 * li + 1, stats);
      }
      if (hooked) {
        const ev: LayerHookEvent = {
          layer: li, position: pos, residualIn: x.v.slice(), residualMid: lt.mid.v.slice(), residualOut: lt.y.v.slice(),
        };
        if (gdnStates) ev.gdnState = gdnStates;
        if (probs) ev.attentionProbs = probs;
        for (const h of [...this.hooks]) h(ev);
        t0 = phaseStart();
      }
      x = lt.y;
    }
    if (detail !== null) setLayerPrefix(null);
    tr.finalNorm.run(ctx, x, fresh);
    this.trackedNormed = tr.finalNorm.out.v;
    phaseEnd('finalNorm', t0);
    tr.valid = true;
    this.pos += 1;
    return x.v;
  }

  /** Final norm + LM head of hidden states hs at the positions `outIdx` (fresh logits arrays). */
  private logitsOf(hs: Float32Array[], outIdx: number[]): Float32Array[] {
    const c = this.config;
    const H = c.hiddenSize;
    const buf = hs.length === 1 ? this.buffers : null;
    return outIdx.map((t) => {
      let t0 = phaseStart();
      let n = hs.length === 1 ? this.trackedNormed : null;
      if (n === null) {
        n = buf ? buf.normed : new Float32Array(H);
        rmsNorm1p(this.ctx, hs[t], 0, H, this.weights.norm, c.rmsNormEps, n, 0);
      }
      t0 = phaseEnd('finalNorm', t0);
      const logits = linear(this.ctx, this.weights.lmHead, n, this.path, { stats: this.stats });
      phaseEnd('lmHead', t0);
      return logits;
    });
  }
}
