/**
 * The compiler driver: calls the passes in order (docs/passes.md says what each adds).
 *   validate (at build) → fit-vocab → lower (arith / RAM / lookups / encodings / I/O) →
 *   fuse-tables → schedule-and-pack → size-frame → gather-layers (→ zero-attention-layer) →
 *   assemble → order-invariance → report.
 * Returns the weights (CSR, family-neutral), a manifest that maps signals to slots, layers and
 * token ids, and the per-layer report.
 */
import type { CircuitIR } from './ir/types.ts';
import type { ModelConfig } from './model/config.ts';
import type { ModelWeights } from './model/weights.ts';
import { ChipcError } from './util/errors.ts';
import type { ResidualFrame } from './lower/frame.ts';
import type { LoweredCircuit } from './lower/lowered.ts';
import { fitVocab } from './passes/fit-vocab.ts';
import { lower } from './passes/lower.ts';
import { fuseTables } from './passes/fuse-tables.ts';
import { scheduleAndPack } from './passes/schedule-and-pack.ts';
import type { Schedule } from './passes/schedule.ts';
import type { Packing } from './passes/pack-slots.ts';
import { sizeFrame } from './passes/size-frame.ts';
import { gatherLayers, type RamPlacement } from './passes/gather-layers.ts';
import { addZeroAttentionLayer } from './passes/zero-attention-layer.ts';
import { assembleModel } from './passes/assemble-model.ts';
import { analyzeOrderInvariance, type InvarianceReport } from './passes/order-invariance.ts';
import { layerReports, placeSignals, type LayerReport, type SignalPlacement } from './passes/report.ts';

// (The result's parts are defined by the passes that make them; their importers find them here.)
export type { RamPlacement } from './passes/gather-layers.ts';
export type { LayerReport, SignalPlacement } from './passes/report.ts';
export { layerNonZeros } from './passes/count-non-zeros.ts';
export { vocabFor } from './passes/fit-vocab.ts';

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
  /**
   * Move FFN ops later, toward their readers, where that shortens what is alive (passes/sink-ops.ts;
   * default true). The layers and values are the same either way; false keeps every op as early as
   * its inputs allow (for comparisons).
   */
  sinkOps?: boolean;
  /**
   * When slot clears overflow a layer's FFN, defer them to the next layer before reserving units,
   * and boost the ops that resources delayed when a schedule comes out longer than an earlier
   * round's (passes/schedule-and-pack.ts; default true). False: reservations only (for comparisons).
   */
  repairSchedule?: boolean;
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

export function compileCircuit(ir: CircuitIR, host: ModelConfig, opts: CompileOptions = {}): CompileResult {
  if (ir.emit === null) {
    // Nothing would reach the LM head: every logit 0, token 0 generated at every position.
    throw new ChipcError('circuit.no-emit', `circuit "${ir.name}" emits nothing (it never calls c.emit or c.emitRows), so its model would generate token 0 at every position; add an emit`);
  }
  const target = fitVocab(ir, host, opts.vocab);
  const lowered = fuseTables(lower(ir, target));
  const { schedule: sched, packing } = scheduleAndPack(lowered, target, { sinkOps: opts.sinkOps ?? true, repair: opts.repairSchedule ?? true });
  const frame = sizeFrame(packing.slotsUsed, target.hiddenSize, opts.hidden);
  const slotDim = (s: number) => frame.firstSlot + s;
  const slotOf = (v: number) => {
    const s = packing.slot[v]!;
    if (s < 0) throw new Error(`internal: vdim ${lowered.dims[v]?.name} has no slot`);
    return slotDim(s);
  };
  const { layers, rams, clearUnits } = gatherLayers(ir, lowered, sched, packing, target.linearValueHeadDim);
  if (opts.attentionLayer === true) addZeroAttentionLayer(sched, layers);

  const L = sched.numLayers;
  const config: ModelConfig = {
    ...target,
    hiddenSize: frame.hidden,
    numLayers: L,
    layerTypes: sched.layerTypes,
    tieWordEmbeddings: false,
    moe: target.moe === null ? null : { ...target.moe, mlpOnlyLayers: Array.from({ length: L }, (_, i) => i) },
  };
  const weights = assembleModel({ config, frame, slotOf, embedding: lowered.embedding, layers, lmHead: lowered.lmHead });
  const invariance = analyzeOrderInvariance(layers, lowered.dims);
  return {
    ir, weights, frame, lowered, schedule: sched, packing,
    signals: placeSignals(lowered, sched, packing),
    layers: layerReports(sched, packing, layers, clearUnits, weights),
    rams, invariance, slotDim,
  };
}
