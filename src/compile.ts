/**
 * The compiler driver: calls the passes in order (docs/passes.md says what each adds).
 *   validate (at build) → lower (arith / RAM / lookups / encodings / I/O) → schedule →
 *   pack-slots → frame → assemble.
 * Returns the weights (CSR, family-neutral), a manifest that maps signals to slots, layers and
 * token ids, and the per-layer report.
 */
import type { CircuitIR } from './ir/types.ts';
import type { LayerType, ModelConfig } from './model/config.ts';
import type { ModelWeights } from './model/weights.ts';
import { ChipcError } from './util/errors.ts';
import { clear } from './gadgets/ffn.ts';
import { chooseHidden, CONST_ONES, makeFrame, anchorPlan, type ResidualFrame } from './lower/frame.ts';
import type { AttnKvHeadSpec, FfnUnit, GdnKeyHeadSpec, LayerSpec } from './lower/forms.ts';
import type { LoweredCircuit } from './lower/lowered.ts';
import { fuseTables } from './passes/fuse-tables.ts';
import type { GdnRamLowering } from './gadgets/gdn-ram.ts';
import { lower } from './passes/lower.ts';
import { schedule, type Schedule } from './passes/schedule.ts';
import { packSlots, type Packing } from './passes/pack-slots.ts';
import { assembleModel } from './passes/assemble-model.ts';
import { analyzeOrderInvariance, type InvarianceReport } from './passes/order-invariance.ts';

export interface CompileOptions {
  /** Hidden size to use (default: the target's, widened only as far as the circuit needs). */
  hidden?: number;
  /**
   * Vocabulary size to emit (default: the target's, widened to the next multiple of 256 when the
   * circuit's token ids do not fit, as a merge extends the host's vocabulary). A given size
   * smaller than the circuit's alphabet is a `fit.vocab` error.
   */
  vocab?: number;
  /**
   * Give the model a full-attention layer that adds exactly 0: the last layer whose mixer is empty
   * becomes a full-attention layer with all-zero weights (q = k = v = 0, so its output is 0 in any
   * engine and order). Engines whose cache takes its length from an attention layer
   * (transformers' `generate()`) then run a model that is otherwise all linear attention. Costs no
   * layer; each token then reads an attention cache over all positions. A circuit without a layer
   * whose mixer is empty is a `fit.attention-layer` error.
   */
  attentionLayer?: boolean;
}

/** The vocabulary a compile emits for `ir` at `target` (see CompileOptions.vocab). */
export function vocabFor(ir: CircuitIR, target: ModelConfig, vocab?: number): number {
  if (vocab !== undefined) {
    if (!Number.isInteger(vocab) || vocab < 1) throw new ChipcError('fit.vocab', `vocabulary size ${vocab} is not a positive integer`);
    if (vocab < ir.vocab) throw new ChipcError('fit.vocab', `the circuit uses ${ir.vocab} token ids; the requested vocabulary has ${vocab}`);
    return vocab;
  }
  return target.vocabSize >= ir.vocab ? target.vocabSize : Math.ceil(ir.vocab / 256) * 256;
}

export interface SignalPlacement {
  name: string;
  node: number;
  encoding: string;
  index: number;
  /** bits: the dim holds bit `index` of (value − base). */
  base?: number;
  /** Delay encodings: the conv tap d (the dim holds position t − d's value, 0 before d). */
  tap?: number;
  slot: number;
  /** Sublayer that writes it (−1 = embedding) and the sublayer whose FFN clears it (or 2·layers = never). */
  birth: number;
  end: number;
  cleared: boolean;
  lo: number;
  hi: number;
}

export interface LayerReport {
  layer: number;
  type: LayerType;
  heads: number;
  units: number;
  clearUnits: number;
  liveIn: number;
  nonZeros: number;
}

/** Where a RAM's key heads sit in the compiled model (for state files and loaders). */
export interface RamPlacement {
  ram: number;
  name: string;
  layer: number;
  /** Model key-head index of each of the lowering's heads (same order as lowering.heads / roles). */
  keyHeads: number[];
  lowering: GdnRamLowering;
}

export interface CompileResult {
  ir: CircuitIR;
  weights: ModelWeights;
  frame: ResidualFrame;
  lowered: LoweredCircuit;
  schedule: Schedule;
  packing: Packing;
  signals: SignalPlacement[];
  layers: LayerReport[];
  /** Every lowered RAM's layer and key heads. */
  rams: RamPlacement[];
  /** Which emitted matmuls are exact in any summation order (passes/order-invariance.ts). */
  invariance: InvarianceReport;
  /** Slot index → residual dim. */
  slotDim: (slot: number) => number;
}

function nnz(m: { csr?: { values: Float32Array }; dense?: Float32Array }): number {
  if (m.csr) return m.csr.values.length;
  let c = 0;
  for (const v of m.dense ?? []) if (v !== 0) c++;
  return c;
}

function nnzVec(v: Float32Array): number {
  let c = 0;
  for (const x of v) if (x !== 0) c++;
  return c;
}

/** Non-zero elements of every tensor of layer i (as `chipc inspect` counts them). */
export function layerNonZeros(w: ModelWeights, i: number): number {
  const l = w.layers[i]!;
  let n = nnzVec(l.inputLayernorm) + nnzVec(l.postAttentionLayernorm);
  if (l.mixer.kind === 'linear_attention') {
    const g = l.mixer;
    n += nnz(g.inProjQkv) + nnz(g.inProjZ) + nnz(g.inProjB) + nnz(g.inProjA) + nnz(g.outProj);
    n += nnzVec(g.conv1d) + nnzVec(g.aLog) + nnzVec(g.dtBias) + nnzVec(g.norm);
  } else {
    const a = l.mixer;
    n += nnz(a.qProj) + nnz(a.kProj) + nnz(a.vProj) + nnz(a.oProj) + nnzVec(a.qNorm) + nnzVec(a.kNorm);
  }
  if (l.mlp.kind === 'dense') n += nnz(l.mlp.gateProj) + nnz(l.mlp.upProj) + nnz(l.mlp.downProj);
  return n;
}

export function compileCircuit(ir: CircuitIR, host: ModelConfig, opts: CompileOptions = {}): CompileResult {
  if (ir.emit === null) {
    // Nothing would reach the LM head: every logit 0, token 0 generated at every position.
    throw new ChipcError('circuit.no-emit', `circuit "${ir.name}" emits nothing (it never calls c.emit or c.emitRows), so its model would generate token 0 at every position; add an emit`);
  }
  const vocabSize = vocabFor(ir, host, opts.vocab);
  const target: ModelConfig = vocabSize === host.vocabSize ? host : { ...host, vocabSize };
  const lowered = fuseTables(lower(ir, target));
  // Schedule and pack; when the slot clears packing adds overflow a layer's FFN, reserve that
  // many units there and schedule again (a fixpoint: reservations only grow).
  const reserve: number[] = [];
  let sched: Schedule;
  let packing: Packing;
  for (let round = 0; ; round++) {
    sched = schedule(lowered, {
      ffnUnits: target.intermediateSize,
      gdnKeyHeads: target.linearNumKeyHeads,
      attnKvHeads: target.numKeyValueHeads,
      ffnReserve: reserve,
    });
    packing = packSlots(lowered, sched);
    const clears = new Array<number>(sched.numLayers).fill(0);
    for (const c of packing.clears) clears[Math.floor(c.sublayer / 2)]!++;
    let over = false;
    sched.usage.forEach((u, L) => {
      const excess = u.units + clears[L]! - target.intermediateSize;
      if (excess > 0) {
        reserve[L] = (reserve[L] ?? 0) + excess;
        over = true;
      }
    });
    if (!over) break;
    if (round >= 50) throw new ChipcError('fit.units', 'slot clears keep overflowing the FFN budget; the circuit is too wide for this target');
  }

  // Frame: the target's hidden size unless the circuit needs more.
  const overheadFor = (H: number) => (anchorPlan(H)?.ns.length ?? 4) + CONST_ONES;
  let hidden = opts.hidden ?? target.hiddenSize;
  if (opts.hidden !== undefined && packing.slotsUsed + overheadFor(hidden) > hidden) {
    throw new ChipcError('fit.width', `the circuit needs ${packing.slotsUsed} slots plus ${overheadFor(hidden)} frame dims; --hidden ${hidden} is too small`);
  }
  if (packing.slotsUsed + overheadFor(hidden) > hidden || anchorPlan(hidden) === null) {
    hidden = chooseHidden(Math.max(hidden, packing.slotsUsed + 6));
    while (packing.slotsUsed + overheadFor(hidden) > hidden) hidden = chooseHidden(hidden + 1);
  }
  const frame = makeFrame(hidden, packing.slotsUsed);
  const slotDim = (s: number) => frame.firstSlot + s;
  const slotOf = (v: number) => {
    const s = packing.slot[v]!;
    if (s < 0) throw new Error(`internal: vdim ${lowered.dims[v]?.name} has no slot`);
    return slotDim(s);
  };

  // Per-layer specs.
  const L = sched.numLayers;
  const ffn: FfnUnit[][] = Array.from({ length: L }, () => []);
  const gdnHeads: GdnKeyHeadSpec[][] = Array.from({ length: L }, () => []);
  const attnHeads: AttnKvHeadSpec[][] = Array.from({ length: L }, () => []);
  const gdnNorm: (number | undefined)[] = new Array(L).fill(undefined);
  const attnNorms: ({ q?: number[]; k?: number[] } | undefined)[] = new Array(L).fill(undefined);
  const rams: RamPlacement[] = [];
  for (const op of lowered.ops) {
    const s = sched.sublayer[op.id]!;
    const layer = Math.floor(s / 2);
    if (op.kind === 'ffn') ffn[layer]!.push(...op.units);
    else if (op.kind === 'gdn') {
      if (op.ram) {
        const first = gdnHeads[layer]!.length;
        rams.push({
          ram: op.ram.id, name: ir.rams[op.ram.id]!.name, layer,
          keyHeads: op.heads.map((_, i) => first + i), lowering: op.ram.lowering,
        });
      }
      gdnHeads[layer]!.push(...op.heads);
      if (op.normWeight !== undefined) {
        if (gdnNorm[layer] !== undefined && gdnNorm[layer] !== op.normWeight) {
          throw new Error(`internal: GDN ops in layer ${layer} need different gated-norm weights`);
        }
        gdnNorm[layer] = op.normWeight;
      }
    } else {
      attnHeads[layer]!.push(...op.heads);
      const cur = attnNorms[layer];
      const want = { q: op.qNormWeight, k: op.kNormWeight };
      if (cur && JSON.stringify(cur) !== JSON.stringify(want)) {
        throw new Error(`internal: attention ops in layer ${layer} need different q/k norm weights`);
      }
      attnNorms[layer] = want;
    }
  }
  const clearCount = new Array<number>(L).fill(0);
  for (const c of packing.clears) {
    const d = lowered.dims[c.dim]!;
    const layer = Math.floor(c.sublayer / 2);
    ffn[layer]!.push(...clear(c.dim, d));
    clearCount[layer]!++;
  }
  const dv = target.linearValueHeadDim;
  if (opts.attentionLayer === true && !sched.layerTypes.includes('full_attention')) {
    let empty = -1;
    for (let i = L - 1; i >= 0 && empty < 0; i--) {
      if (sched.layerTypes[i] === 'linear_attention' && gdnHeads[i]!.every((h) => h === null)) empty = i;
    }
    if (empty < 0) {
      throw new ChipcError('fit.attention-layer', `no layer of the compiled circuit has an empty mixer to hold the zero attention layer (${L} layers, every mixer used)`);
    }
    sched.layerTypes[empty] = 'full_attention';
    attnHeads[empty] = [];
  }
  const layers: LayerSpec[] = sched.layerTypes.map((t, i) => ({
    mixer: t === 'linear_attention'
      ? { kind: 'linear_attention', heads: gdnHeads[i]!, normWeight: gdnNorm[i] === undefined ? undefined : new Array(dv).fill(gdnNorm[i]) }
      : { kind: 'full_attention', heads: attnHeads[i]!, qNormWeight: attnNorms[i]?.q, kNormWeight: attnNorms[i]?.k },
    ffn: ffn[i]!,
  }));

  const config: ModelConfig = {
    ...target,
    hiddenSize: hidden,
    numLayers: L,
    layerTypes: sched.layerTypes,
    tieWordEmbeddings: false,
    moe: target.moe === null ? null : { ...target.moe, mlpOnlyLayers: Array.from({ length: L }, (_, i) => i) },
  };
  const weights = assembleModel({
    config, frame, slotOf, embedding: lowered.embedding, layers, lmHead: lowered.lmHead,
  });

  const END = 2 * L;
  const clearedSet = new Set(packing.clears.map((c) => c.dim));
  const signals: SignalPlacement[] = lowered.dims
    .filter((d) => packing.slot[d.id]! >= 0)
    .map((d) => ({
      name: d.name, node: d.node, encoding: d.encoding, index: d.index, base: d.base, tap: d.tap, slot: packing.slot[d.id]!,
      birth: packing.birth[d.id]!, end: packing.end[d.id]! >= END ? END : packing.end[d.id]!,
      cleared: clearedSet.has(d.id), lo: d.lo, hi: d.hi,
    }));
  const layerReports: LayerReport[] = sched.layerTypes.map((t, i) => ({
    layer: i,
    type: t,
    heads: t === 'linear_attention' ? gdnHeads[i]!.length : attnHeads[i]!.length,
    units: ffn[i]!.length,
    clearUnits: clearCount[i]!,
    liveIn: packing.liveAt[2 * i] ?? 0,
    nonZeros: layerNonZeros(weights, i),
  }));
  const invariance = analyzeOrderInvariance(layers, lowered.dims);
  return { ir, weights, frame, lowered, schedule: sched, packing, signals, layers: layerReports, rams, invariance, slotDim };
}
