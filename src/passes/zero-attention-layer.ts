/**
 * Pass — the zero attention layer (CompileOptions.attentionLayer): in a circuit without a
 * full-attention layer, the last linear-attention layer whose mixer is empty becomes a
 * full-attention layer with no heads, so all-zero weights (q = k = v = 0: its output is 0 in any
 * engine and order). Engines whose cache takes its length from an attention layer (transformers'
 * `generate()`) then run the model. Changes the schedule's layer type and the layer's spec in
 * place; a circuit without an empty mixer is a `fit.attention-layer` error.
 */
import type { LayerSpec } from '../lower/forms.ts';
import { ChipcError } from '../util/errors.ts';
import type { Schedule } from './schedule.ts';

export function addZeroAttentionLayer(sched: Schedule, layers: LayerSpec[]): void {
  if (sched.layerTypes.includes('full_attention')) return;
  const L = sched.numLayers;
  let empty = -1;
  for (let i = L - 1; i >= 0 && empty < 0; i--) {
    const mixer = layers[i]!.mixer;
    if (sched.layerTypes[i] === 'linear_attention' && mixer.heads.every((h) => h === null)) empty = i;
  }
  if (empty < 0) {
    throw new ChipcError('fit.attention-layer', `no layer of the compiled circuit has an empty mixer to hold the zero attention layer (${L} layers, every mixer used)`);
  }
  sched.layerTypes[empty] = 'full_attention';
  layers[empty] = { mixer: { kind: 'full_attention', heads: [], qNormWeight: undefined, kNormWeight: undefined }, ffn: layers[empty]!.ffn };
}
