/**
 * The normalized model configuration every stage of chipc works with. It is family-neutral:
 * parsing a Hugging Face `config.json` of either family (`qwen3_5_text`, `qwen3_5` composite,
 * `qwen3_next`) produces one of these, and emission writes it back in the family's own form
 * (see `targets.ts` / `hf-config.ts`).
 */
export type Family = 'qwen3_5_text' | 'qwen3_next';
export type LayerType = 'linear_attention' | 'full_attention';

export interface MoeConfig {
  numExperts: number;
  numExpertsPerTok: number;
  moeIntermediateSize: number;
  sharedExpertIntermediateSize: number;
  normTopkProb: boolean;
  decoderSparseStep: number;
  /** Layers that use a dense MLP (`mlp.gate_proj` …) instead of MoE. */
  mlpOnlyLayers: number[];
}

export interface ModelConfig {
  family: Family;
  vocabSize: number;
  hiddenSize: number;
  numLayers: number;
  /** One entry per layer; config.json `layer_types` wins over `full_attention_interval`. */
  layerTypes: LayerType[];
  /** Dense MLP width (Qwen3.5 layers, Qwen3-Next `mlp_only_layers`). */
  intermediateSize: number;
  numAttentionHeads: number;
  numKeyValueHeads: number;
  headDim: number;
  partialRotaryFactor: number;
  ropeTheta: number;
  linearNumKeyHeads: number;
  linearNumValueHeads: number;
  linearKeyHeadDim: number;
  linearValueHeadDim: number;
  linearConvKernelDim: number;
  rmsNormEps: number;
  tieWordEmbeddings: boolean;
  /** null for dense models (every Qwen3.5 text model). */
  moe: MoeConfig | null;
  bosTokenId: number | null;
  eosTokenId: number | null;
  maxPositionEmbeddings: number;
  /** torch dtype the checkpoint is meant to be loaded in (`config.json` "dtype"). */
  dtype: 'float32' | 'bfloat16';
}

/** True when layer `i` uses an MoE feed-forward (Qwen3-Next rule, docs/host-architecture.md §2.6). */
export function isMoeLayer(cfg: ModelConfig, i: number): boolean {
  const m = cfg.moe;
  if (m === null || m.numExperts <= 0) return false;
  if (m.mlpOnlyLayers.includes(i)) return false;
  return (i + 1) % m.decoderSparseStep === 0;
}
