/**
 * A small driver that assembles hand-written layer specs into a model for a given target shape
 * and runs it in the reference executor, returning the raw value of every virtual dim after
 * every layer at every position. Used by the gadget unit tests and by the compile tests to read
 * decoded signals out of the residual stream.
 *
 * Virtual dims map to slots one-to-one here (slot = frame.firstSlot + vdim): no packing.
 * (A test helper: above the passes it runs, used only by the gadget tests.)
 */
import type { ModelConfig, LayerType } from '../../src/model/config.ts';
import type { ModelWeights } from '../../src/model/weights.ts';
import { Executor } from '../../src/exec/executor.ts';
import type { ExecOptions } from '../../src/exec/types.ts';
import { chooseHidden, makeFrame, type ResidualFrame } from '../../src/lower/frame.ts';
import type { LayerSpec, VDim } from '../../src/lower/forms.ts';
import { assembleModel } from '../../src/passes/assemble-model.ts';

export interface HarnessSpec {
  /** Target shape (heads, dims, FFN width, vocab); hidden and layers are replaced. */
  target: ModelConfig;
  /** Number of virtual dims used (0 … numDims−1). */
  numDims: number;
  embedding: (token: number) => { dim: VDim; value: number }[];
  layers: LayerSpec[];
  lmHead?: (token: number) => { dim: VDim; weight: number }[];
  /** Hidden size to use (default: the smallest usable one that fits, at least the target's). */
  hidden?: number;
}

export interface Harness {
  weights: ModelWeights;
  frame: ResidualFrame;
  config: ModelConfig;
  slotOf: (v: VDim) => number;
}

export function buildHarness(spec: HarnessSpec): Harness {
  const hidden = spec.hidden ?? chooseHidden(Math.max(spec.target.hiddenSize, spec.numDims + 8));
  const frame = makeFrame(hidden, spec.numDims);
  const slotOf = (v: VDim) => {
    if (!Number.isInteger(v) || v < 0 || v >= spec.numDims) throw new Error(`internal: virtual dim ${v} outside [0, ${spec.numDims})`);
    return frame.firstSlot + v;
  };
  const layerTypes: LayerType[] = spec.layers.map((l) => l.mixer.kind);
  const config: ModelConfig = {
    ...spec.target,
    hiddenSize: hidden,
    numLayers: spec.layers.length,
    layerTypes,
    tieWordEmbeddings: false,
    moe: null,
    family: 'qwen3_5_text',
  };
  const rowOf = (row: (token: number) => { dim: VDim; value?: number; weight?: number }[]) => (t: number, put: (dim: VDim, x: number) => void) => {
    for (const e of row(t)) put(e.dim, e.value ?? e.weight!);
  };
  const weights = assembleModel({
    config, frame, slotOf, embedding: rowOf(spec.embedding), layers: spec.layers, lmHead: rowOf(spec.lmHead ?? (() => [])),
  });
  return { weights, frame, config, slotOf };
}

export interface RunResult {
  /** values[position][layer][vdim]: raw residual value of each virtual dim after each layer. */
  values: Float32Array[][];
  /** residual[position][layer]: the whole residual after each layer. */
  residual: Float32Array[][];
  logits: Float32Array[];
}

/**
 * Run tokens through the harness model: the first `prefill` tokens as one prompt (chunked GDN),
 * the rest as decode steps (recurrent GDN). Default: only the first token is a prompt.
 */
export function runHarness(h: Harness, tokens: number[], opts: ExecOptions & { prefill?: number } = {}): RunResult {
  const ex = new Executor(h.weights, opts);
  const n = tokens.length;
  const L = h.config.numLayers;
  const residual: Float32Array[][] = Array.from({ length: n }, () => new Array(L));
  ex.addHook((ev) => {
    residual[ev.position]![ev.layer] = ev.residualOut.slice();
  });
  const prefillN = Math.max(1, Math.min(n, opts.prefill ?? 1));
  const logits = ex.prefill(tokens.slice(0, prefillN), { allLogits: true });
  for (let i = prefillN; i < n; i++) logits.push(ex.decode(tokens[i]!));
  const numDims = h.frame.hidden - h.frame.firstSlot;
  const values = residual.map((perLayer) =>
    perLayer.map((r) => r.slice(h.frame.firstSlot, h.frame.firstSlot + numDims)),
  );
  return { values, residual, logits };
}
