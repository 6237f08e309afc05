/**
 * Hugging Face `config.json` ↔ ModelConfig.
 *
 * Reads the three config shapes of the two families (docs/host-architecture.md §1): `qwen3_5_text`, the `qwen3_5`
 * composite (its `text_config`), and `qwen3_next` (with MoE fields); fills missing fields with the
 * transformers class defaults (docs/host-architecture.md §1.1) and validates the result. Writes a config.json that
 * transformers accepts for the family (always with explicit `layer_types`, `rope_parameters`,
 * `dtype` and legacy `torch_dtype`, keys sorted so output is deterministic).
 */
import { ChipcError } from '../util/errors.ts';
import type { Family, LayerType, ModelConfig, MoeConfig } from './config.ts';

type Json = Record<string, unknown>;

/** transformers class defaults (docs/host-architecture.md §1.1), per family. */
interface FamilyDefaults {
  vocabSize: number;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numAttentionHeads: number;
  numKeyValueHeads: number;
}

const DEFAULTS: Record<Family, FamilyDefaults> = {
  qwen3_next: {
    vocabSize: 151936, hiddenSize: 2048, intermediateSize: 5632, numLayers: 48,
    numAttentionHeads: 16, numKeyValueHeads: 2,
  },
  qwen3_5_text: {
    vocabSize: 248320, hiddenSize: 4096, intermediateSize: 12288, numLayers: 32,
    numAttentionHeads: 16, numKeyValueHeads: 4,
  },
};

/** Shared defaults of both config classes. */
const COMMON_DEFAULTS = {
  headDim: 256,
  linearNumKeyHeads: 16,
  linearNumValueHeads: 32,
  linearKeyHeadDim: 128,
  linearValueHeadDim: 128,
  linearConvKernelDim: 4,
  rmsNormEps: 1e-6,
  partialRotaryFactor: 0.25,
  /** PreTrainedConfig's default RoPE base when neither rope_parameters nor rope_theta say. */
  ropeTheta: 10000,
  fullAttentionInterval: 4,
  maxPositionEmbeddings: 32768,
};

/** Qwen3NextConfig MoE defaults (docs/host-architecture.md §1.1). */
const MOE_DEFAULTS: MoeConfig = {
  numExperts: 512,
  numExpertsPerTok: 10,
  moeIntermediateSize: 512,
  sharedExpertIntermediateSize: 512,
  normTopkProb: true,
  decoderSparseStep: 1,
  mlpOnlyLayers: [],
};

const LAYER_TYPES: readonly LayerType[] = ['linear_attention', 'full_attention'];

function bad(field: string, msg: string): never {
  throw new ChipcError('target.config', `config.json: field "${field}" ${msg}`);
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function posInt(obj: Json, key: string, def: number, field = key): number {
  const v = obj[key];
  if (v === undefined || v === null) return def;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0) {
    bad(field, `must be a positive integer, got ${JSON.stringify(v)}`);
  }
  return v;
}

function nonNegInt(obj: Json, key: string, def: number, field = key): number {
  const v = obj[key];
  if (v === undefined || v === null) return def;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    bad(field, `must be a non-negative integer, got ${JSON.stringify(v)}`);
  }
  return v;
}

function posNumber(obj: Json, key: string, def: number, field = key): number {
  const v = obj[key];
  if (v === undefined || v === null) return def;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
    bad(field, `must be a positive finite number, got ${JSON.stringify(v)}`);
  }
  return v;
}

function bool(obj: Json, key: string, def: boolean, field = key): boolean {
  const v = obj[key];
  if (v === undefined || v === null) return def;
  if (typeof v !== 'boolean') bad(field, `must be true or false, got ${JSON.stringify(v)}`);
  return v;
}

function tokenId(obj: Json, key: string): number | null {
  let v = obj[key];
  // transformers allows a list of ids; one id is the only form ModelConfig can hold.
  if (Array.isArray(v)) {
    if (v.length !== 1) bad(key, `holds ${v.length} token ids; chipc supports exactly one`);
    v = v[0];
  }
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    bad(key, `must be a non-negative integer or null, got ${JSON.stringify(v)}`);
  }
  return v;
}

function readDtype(obj: Json): 'float32' | 'bfloat16' {
  const v = obj['dtype'] ?? obj['torch_dtype'];
  if (v === undefined || v === null) return 'float32';
  if (v === 'float32' || v === 'bfloat16') return v;
  return bad(obj['dtype'] !== undefined ? 'dtype' : 'torch_dtype',
    `must be "float32" or "bfloat16", got ${JSON.stringify(v)}`);
}

function readLayerTypes(obj: Json, numLayers: number): LayerType[] {
  const lt = obj['layer_types'];
  if (lt !== undefined && lt !== null) {
    if (!Array.isArray(lt)) bad('layer_types', 'must be a list of strings');
    if (lt.length !== numLayers) {
      bad('layer_types', `has ${lt.length} entries but num_hidden_layers is ${numLayers}`);
    }
    return lt.map((t, i) => {
      if (!LAYER_TYPES.includes(t as LayerType)) {
        bad(`layer_types[${i}]`, `must be "linear_attention" or "full_attention", got ${JSON.stringify(t)}`);
      }
      return t as LayerType;
    });
  }
  const interval = posInt(obj, 'full_attention_interval', COMMON_DEFAULTS.fullAttentionInterval);
  return Array.from({ length: numLayers }, (_, i) =>
    (i + 1) % interval === 0 ? 'full_attention' : 'linear_attention');
}

function readRope(obj: Json): { ropeTheta: number; partialRotaryFactor: number } {
  const rp = obj['rope_parameters'];
  let params: Json = {};
  if (rp !== undefined && rp !== null) {
    if (!isObject(rp)) bad('rope_parameters', 'must be an object');
    params = rp;
  }
  const ropeType = params['rope_type'] ?? params['type'];
  if (ropeType !== undefined && ropeType !== 'default') {
    bad('rope_parameters.rope_type', `must be "default" (the only RoPE the Qwen hybrids use), got ${JSON.stringify(ropeType)}`);
  }
  // rope_parameters wins; legacy top-level fields are what older config.json files carry.
  const ropeTheta = params['rope_theta'] !== undefined
    ? posNumber(params, 'rope_theta', COMMON_DEFAULTS.ropeTheta, 'rope_parameters.rope_theta')
    : posNumber(obj, 'rope_theta', COMMON_DEFAULTS.ropeTheta);
  const partialRotaryFactor = params['partial_rotary_factor'] !== undefined
    ? posNumber(params, 'partial_rotary_factor', COMMON_DEFAULTS.partialRotaryFactor,
      'rope_parameters.partial_rotary_factor')
    : posNumber(obj, 'partial_rotary_factor', COMMON_DEFAULTS.partialRotaryFactor);
  return { ropeTheta, partialRotaryFactor };
}

function readMoe(obj: Json, numLayers: number): MoeConfig | null {
  const numExperts = nonNegInt(obj, 'num_experts', MOE_DEFAULTS.numExperts);
  // num_experts 0 makes every layer dense (docs/host-architecture.md §2.6): no MoE block at all.
  if (numExperts === 0) return null;
  const mol = obj['mlp_only_layers'];
  let mlpOnlyLayers: number[] = [];
  if (mol !== undefined && mol !== null) {
    if (!Array.isArray(mol)) bad('mlp_only_layers', 'must be a list of layer indices');
    mlpOnlyLayers = mol.map((v, i) => {
      if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0 || v >= numLayers) {
        bad(`mlp_only_layers[${i}]`, `must be a layer index in [0, ${numLayers}), got ${JSON.stringify(v)}`);
      }
      return v;
    });
    if (new Set(mlpOnlyLayers).size !== mlpOnlyLayers.length) bad('mlp_only_layers', 'has duplicates');
    mlpOnlyLayers.sort((a, b) => a - b);
  }
  return {
    numExperts,
    numExpertsPerTok: posInt(obj, 'num_experts_per_tok', MOE_DEFAULTS.numExpertsPerTok),
    moeIntermediateSize: posInt(obj, 'moe_intermediate_size', MOE_DEFAULTS.moeIntermediateSize),
    sharedExpertIntermediateSize: posInt(obj, 'shared_expert_intermediate_size',
      MOE_DEFAULTS.sharedExpertIntermediateSize),
    normTopkProb: bool(obj, 'norm_topk_prob', MOE_DEFAULTS.normTopkProb),
    decoderSparseStep: posInt(obj, 'decoder_sparse_step', MOE_DEFAULTS.decoderSparseStep),
    mlpOnlyLayers,
  };
}

/**
 * Parse a config.json object of either family into a validated ModelConfig.
 * `qwen3_5` composites are read through `text_config`; the tie flag comes from `text_config`,
 * falling back to the composite's own `tie_word_embeddings`.
 */
export function parseHfConfig(json: unknown): ModelConfig {
  if (!isObject(json)) throw new ChipcError('target.config', 'config.json: must be a JSON object');
  const modelType = json['model_type'];
  let family: Family;
  let obj: Json;
  let tieFallback = false;
  let dtypeFallback: Json = {};
  if (modelType === 'qwen3_5') {
    const tc = json['text_config'];
    if (!isObject(tc)) bad('text_config', 'must be an object in a "qwen3_5" composite config');
    if (tc['model_type'] !== undefined && tc['model_type'] !== 'qwen3_5_text') {
      bad('text_config.model_type', `must be "qwen3_5_text", got ${JSON.stringify(tc['model_type'])}`);
    }
    family = 'qwen3_5_text';
    obj = tc;
    tieFallback = bool(json, 'tie_word_embeddings', false);
    dtypeFallback = json;
  } else if (modelType === 'qwen3_5_text' || modelType === 'qwen3_next') {
    family = modelType;
    obj = json;
  } else {
    return bad('model_type', `must be "qwen3_5_text", "qwen3_5" or "qwen3_next", got ${JSON.stringify(modelType)}`);
  }

  const d = DEFAULTS[family];
  const numLayers = posInt(obj, 'num_hidden_layers', d.numLayers);
  const layerTypes = readLayerTypes(obj, numLayers);
  const { ropeTheta, partialRotaryFactor } = readRope(obj);
  const hiddenAct = obj['hidden_act'];
  if (hiddenAct !== undefined && hiddenAct !== 'silu') {
    bad('hidden_act', `must be "silu", got ${JSON.stringify(hiddenAct)}`);
  }
  if (obj['attention_bias'] === true) bad('attention_bias', 'must be false (the Qwen hybrids have no biases)');

  const cfg: ModelConfig = {
    family,
    vocabSize: posInt(obj, 'vocab_size', d.vocabSize),
    hiddenSize: posInt(obj, 'hidden_size', d.hiddenSize),
    numLayers,
    layerTypes,
    intermediateSize: posInt(obj, 'intermediate_size', d.intermediateSize),
    numAttentionHeads: posInt(obj, 'num_attention_heads', d.numAttentionHeads),
    numKeyValueHeads: posInt(obj, 'num_key_value_heads', d.numKeyValueHeads),
    headDim: posInt(obj, 'head_dim', COMMON_DEFAULTS.headDim),
    partialRotaryFactor,
    ropeTheta,
    linearNumKeyHeads: posInt(obj, 'linear_num_key_heads', COMMON_DEFAULTS.linearNumKeyHeads),
    linearNumValueHeads: posInt(obj, 'linear_num_value_heads', COMMON_DEFAULTS.linearNumValueHeads),
    linearKeyHeadDim: posInt(obj, 'linear_key_head_dim', COMMON_DEFAULTS.linearKeyHeadDim),
    linearValueHeadDim: posInt(obj, 'linear_value_head_dim', COMMON_DEFAULTS.linearValueHeadDim),
    linearConvKernelDim: posInt(obj, 'linear_conv_kernel_dim', COMMON_DEFAULTS.linearConvKernelDim),
    rmsNormEps: posNumber(obj, 'rms_norm_eps', COMMON_DEFAULTS.rmsNormEps),
    tieWordEmbeddings: bool(obj, 'tie_word_embeddings', tieFallback),
    moe: family === 'qwen3_next' ? readMoe(obj, numLayers) : null,
    bosTokenId: tokenId(obj, 'bos_token_id'),
    eosTokenId: tokenId(obj, 'eos_token_id'),
    maxPositionEmbeddings: posInt(obj, 'max_position_embeddings', COMMON_DEFAULTS.maxPositionEmbeddings),
    dtype: readDtype(obj['dtype'] !== undefined || obj['torch_dtype'] !== undefined ? obj : dtypeFallback),
  };
  validateModelConfig(cfg);
  return cfg;
}

/**
 * Check the structural invariants every stage relies on; throws ChipcError naming the field.
 * (Value head h pairs with key head h // r, so r = Hv/Hk must be an integer; GQA likewise.)
 */
export function validateModelConfig(cfg: ModelConfig): void {
  const ints: [string, number][] = [
    ['vocab_size', cfg.vocabSize], ['hidden_size', cfg.hiddenSize],
    ['num_hidden_layers', cfg.numLayers], ['intermediate_size', cfg.intermediateSize],
    ['num_attention_heads', cfg.numAttentionHeads], ['num_key_value_heads', cfg.numKeyValueHeads],
    ['head_dim', cfg.headDim], ['linear_num_key_heads', cfg.linearNumKeyHeads],
    ['linear_num_value_heads', cfg.linearNumValueHeads], ['linear_key_head_dim', cfg.linearKeyHeadDim],
    ['linear_value_head_dim', cfg.linearValueHeadDim], ['linear_conv_kernel_dim', cfg.linearConvKernelDim],
    ['max_position_embeddings', cfg.maxPositionEmbeddings],
  ];
  for (const [f, v] of ints) {
    if (!Number.isSafeInteger(v) || v <= 0) bad(f, `must be a positive integer, got ${v}`);
  }
  if (cfg.family !== 'qwen3_5_text' && cfg.family !== 'qwen3_next') {
    bad('model_type', `unknown family ${JSON.stringify(cfg.family)}`);
  }
  if (cfg.linearNumValueHeads % cfg.linearNumKeyHeads !== 0) {
    bad('linear_num_value_heads', `(${cfg.linearNumValueHeads}) must be a multiple of linear_num_key_heads (${cfg.linearNumKeyHeads}): r = Hv/Hk must be an integer`);
  }
  if (cfg.numAttentionHeads % cfg.numKeyValueHeads !== 0) {
    bad('num_attention_heads', `(${cfg.numAttentionHeads}) must be a multiple of num_key_value_heads (${cfg.numKeyValueHeads})`);
  }
  if (cfg.layerTypes.length !== cfg.numLayers) {
    bad('layer_types', `has ${cfg.layerTypes.length} entries but num_hidden_layers is ${cfg.numLayers}`);
  }
  cfg.layerTypes.forEach((t, i) => {
    if (!LAYER_TYPES.includes(t)) bad(`layer_types[${i}]`, `must be "linear_attention" or "full_attention", got ${JSON.stringify(t)}`);
  });
  if (!(cfg.partialRotaryFactor > 0 && cfg.partialRotaryFactor <= 1)) {
    bad('partial_rotary_factor', `must be in (0, 1], got ${cfg.partialRotaryFactor}`);
  }
  const rotary = Math.trunc(cfg.headDim * cfg.partialRotaryFactor);
  if (rotary % 2 !== 0 || rotary === 0) {
    bad('partial_rotary_factor', `gives int(head_dim·factor) = ${rotary} rotary dims; it must be even and positive`);
  }
  if (!(Number.isFinite(cfg.ropeTheta) && cfg.ropeTheta > 0)) bad('rope_theta', `must be positive, got ${cfg.ropeTheta}`);
  if (!(Number.isFinite(cfg.rmsNormEps) && cfg.rmsNormEps > 0)) bad('rms_norm_eps', `must be positive, got ${cfg.rmsNormEps}`);
  if (cfg.dtype !== 'float32' && cfg.dtype !== 'bfloat16') bad('dtype', `must be "float32" or "bfloat16", got ${JSON.stringify(cfg.dtype)}`);
  for (const [f, v] of [['bos_token_id', cfg.bosTokenId], ['eos_token_id', cfg.eosTokenId]] as const) {
    if (v !== null && (!Number.isSafeInteger(v) || v < 0)) bad(f, `must be a non-negative integer or null, got ${v}`);
  }
  const m = cfg.moe;
  if (m !== null) {
    if (cfg.family !== 'qwen3_next') bad('num_experts', `MoE is only supported for qwen3_next, not ${cfg.family}`);
    const mi: [string, number][] = [
      ['num_experts', m.numExperts], ['num_experts_per_tok', m.numExpertsPerTok],
      ['moe_intermediate_size', m.moeIntermediateSize],
      ['shared_expert_intermediate_size', m.sharedExpertIntermediateSize],
      ['decoder_sparse_step', m.decoderSparseStep],
    ];
    for (const [f, v] of mi) if (!Number.isSafeInteger(v) || v <= 0) bad(f, `must be a positive integer, got ${v}`);
    if (m.numExpertsPerTok > m.numExperts) {
      bad('num_experts_per_tok', `(${m.numExpertsPerTok}) exceeds num_experts (${m.numExperts})`);
    }
    m.mlpOnlyLayers.forEach((l, i) => {
      if (!Number.isSafeInteger(l) || l < 0 || l >= cfg.numLayers) {
        bad(`mlp_only_layers[${i}]`, `must be a layer index in [0, ${cfg.numLayers}), got ${l}`);
      }
    });
  }
}

/** Recursively sort object keys so JSON.stringify output is deterministic. */
function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (isObject(v)) {
    const out: Json = {};
    for (const k of Object.keys(v).sort()) out[k] = sortKeys(v[k]);
    return out;
  }
  return v;
}

/**
 * A config.json object transformers loads for the family: `qwen3_5_text` →
 * `Qwen3_5ForCausalLM`, `qwen3_next` → `Qwen3NextForCausalLM`. Keys are sorted.
 */
export function toHfConfig(cfg: ModelConfig): Record<string, unknown> {
  validateModelConfig(cfg);
  const rope: Json = {
    rope_type: 'default',
    rope_theta: cfg.ropeTheta,
    partial_rotary_factor: cfg.partialRotaryFactor,
  };
  if (cfg.family === 'qwen3_5_text') {
    // Qwen3.5's text rotary embedding is M-RoPE; for text-only positions it equals plain RoPE.
    rope['mrope_interleaved'] = true;
    rope['mrope_section'] = [11, 11, 10];
  }
  const out: Json = {
    architectures: [cfg.family === 'qwen3_5_text' ? 'Qwen3_5ForCausalLM' : 'Qwen3NextForCausalLM'],
    model_type: cfg.family,
    vocab_size: cfg.vocabSize,
    hidden_size: cfg.hiddenSize,
    intermediate_size: cfg.intermediateSize,
    num_hidden_layers: cfg.numLayers,
    layer_types: [...cfg.layerTypes],
    num_attention_heads: cfg.numAttentionHeads,
    num_key_value_heads: cfg.numKeyValueHeads,
    head_dim: cfg.headDim,
    hidden_act: 'silu',
    attention_bias: false,
    attention_dropout: 0.0,
    linear_num_key_heads: cfg.linearNumKeyHeads,
    linear_num_value_heads: cfg.linearNumValueHeads,
    linear_key_head_dim: cfg.linearKeyHeadDim,
    linear_value_head_dim: cfg.linearValueHeadDim,
    linear_conv_kernel_dim: cfg.linearConvKernelDim,
    rms_norm_eps: cfg.rmsNormEps,
    rope_parameters: rope,
    tie_word_embeddings: cfg.tieWordEmbeddings,
    max_position_embeddings: cfg.maxPositionEmbeddings,
    bos_token_id: cfg.bosTokenId,
    eos_token_id: cfg.eosTokenId,
    initializer_range: 0.02,
    use_cache: true,
    dtype: cfg.dtype,
    torch_dtype: cfg.dtype,
  };
  if (cfg.family === 'qwen3_next') {
    const m = cfg.moe;
    // A dense qwen3_next is written as num_experts 0 (every layer then uses the dense MLP).
    out['num_experts'] = m === null ? 0 : m.numExperts;
    out['num_experts_per_tok'] = m === null ? 1 : m.numExpertsPerTok;
    out['moe_intermediate_size'] = m === null ? MOE_DEFAULTS.moeIntermediateSize : m.moeIntermediateSize;
    out['shared_expert_intermediate_size'] = m === null
      ? MOE_DEFAULTS.sharedExpertIntermediateSize : m.sharedExpertIntermediateSize;
    out['norm_topk_prob'] = m === null ? true : m.normTopkProb;
    out['decoder_sparse_step'] = m === null ? 1 : m.decoderSparseStep;
    out['mlp_only_layers'] = m === null ? [] : [...m.mlpOnlyLayers];
    out['output_router_logits'] = false;
    out['router_aux_loss_coef'] = 0.001;
  }
  return sortKeys(out) as Record<string, unknown>;
}

/** config.json text for `cfg`: sorted keys, 2-space indent, trailing newline. */
export function hfConfigJson(cfg: ModelConfig): string {
  return JSON.stringify(toHfConfig(cfg), null, 2) + '\n';
}
