/**
 * Deterministic random model weights with Hugging Face-like initialisation (docs/host-architecture.md §3.10), for
 * tests and fixtures, plus helpers that add the missing form (CSR or dense) to a Matrix.
 *
 * Every tensor draws from its own stream, seeded from (seed, tensor name), so a tensor's values do
 * not depend on the order of generation or on the other tensors of the config.
 */
import { ChipcError } from '../util/errors.ts';
import type { ModelConfig } from './config.ts';
import { isMoeLayer } from './config.ts';
import { validateModelConfig } from './hf-config.ts';
import { gdnDims } from './naming.ts';
import type {
  AttentionWeights, DenseMlpWeights, GdnWeights, LayerWeights, Matrix, ModelWeights,
  MoeMlpWeights,
} from './weights.ts';

/**
 * 32-bit FNV-1a hash of a string's UTF-16 code units mixed with a seed; used only to derive
 * per-tensor PRNG seeds.
 */
function streamSeed(seed: number, name: string): number {
  let h = (0x811c9dc5 ^ (seed >>> 0)) >>> 0;
  h = Math.imul(h ^ ((seed / 0x100000000) >>> 0), 0x01000193) >>> 0;
  for (let i = 0; i < name.length; i++) {
    h = Math.imul(h ^ name.charCodeAt(i), 0x01000193) >>> 0;
  }
  return h;
}

/**
 * A seeded PRNG (mulberry32: 32-bit state, +0x6D2B79F5 per step, xorshift-multiply output).
 * `uniform()` returns k / 2^24 for a 24-bit integer k ∈ [1, 2^24], i.e. a float32-exact value in
 * (0, 1] (never 0, so log() is finite).
 */
export class Prng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  nextU32(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }
  uniform(): number {
    return ((this.nextU32() >>> 8) + 1) / 16777216;
  }
  /**
   * Standard normal by Box–Muller: z = fround(√(−2 ln u1) · cos(2π u2)), u1, u2 from uniform().
   * Computed in float64 and rounded once to float32.
   */
  normal(): number {
    const u1 = this.uniform();
    const u2 = this.uniform();
    return Math.fround(Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2));
  }
}

export interface RandomWeightsOptions {
  /** Multiplies the std of every Linear / embedding / conv weight (default 1 → std 0.02). */
  scale?: number;
  /**
   * Non-trivial norm weights: zero-centred norms become fround(0.1·N(0,1)) instead of zeros, the
   * gated norm fround(1 + 0.1·N(0,1)) instead of ones.
   */
  normWeightNoise?: boolean;
}

/**
 * Random weights for `cfg`, dense matrices only. Linear and embedding weights and conv taps are
 * fround(std·N(0,1)) with std = fround(0.02·scale); dt_bias = 1; A_log = fround(log(16·u)),
 * u ∈ (0, 1] (so A ∈ (0, 16], never log 0); zero-centred norms 0; gated norm 1.
 * Tied configs get lmHead === embedTokens.
 */
export function randomModelWeights(cfg: ModelConfig, seed: number, opts: RandomWeightsOptions = {}): ModelWeights {
  validateModelConfig(cfg);
  if (!Number.isSafeInteger(seed) || seed < 0) {
    throw new ChipcError('weights.argument', `random weights seed must be a non-negative integer, got ${seed}`);
  }
  const scale = opts.scale ?? 1;
  if (!(Number.isFinite(scale) && scale > 0)) {
    throw new ChipcError('weights.argument', `random weights scale must be positive, got ${scale}`);
  }
  const std = Math.fround(0.02 * scale);
  const noise = opts.normWeightNoise === true;
  const H = cfg.hiddenSize;

  const normal = (name: string, n: number, sd: number, mean = 0): Float32Array => {
    const rng = new Prng(streamSeed(seed, name));
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = Math.fround(mean + sd * rng.normal());
    return out;
  };
  const linear = (name: string, rows: number, cols: number): Matrix =>
    ({ rows, cols, dense: normal(name, rows * cols, std) });
  const zeroCentredNorm = (name: string, n: number): Float32Array =>
    noise ? normal(name, n, 0.1) : new Float32Array(n);
  const gatedNorm = (name: string, n: number): Float32Array =>
    noise ? normal(name, n, 0.1, 1) : new Float32Array(n).fill(1);

  const layers: LayerWeights[] = [];
  for (let i = 0; i < cfg.numLayers; i++) {
    const p = `model.layers.${i}.`;
    let mixer: GdnWeights | AttentionWeights;
    if (cfg.layerTypes[i] === 'linear_attention') {
      const d = gdnDims(cfg);
      const la = `${p}linear_attn.`;
      const rng = new Prng(streamSeed(seed, `${la}A_log`));
      const aLog = new Float32Array(d.hv);
      for (let h = 0; h < d.hv; h++) aLog[h] = Math.fround(Math.log(16 * rng.uniform()));
      mixer = {
        kind: 'linear_attention',
        inProjQkv: linear(`${la}in_proj_qkv.weight`, d.convDim, H),
        inProjZ: linear(`${la}in_proj_z.weight`, d.valueDim, H),
        inProjB: linear(`${la}in_proj_b.weight`, d.hv, H),
        inProjA: linear(`${la}in_proj_a.weight`, d.hv, H),
        conv1d: normal(`${la}conv1d.weight`, d.convDim * cfg.linearConvKernelDim, std),
        aLog,
        dtBias: new Float32Array(d.hv).fill(1),
        norm: gatedNorm(`${la}norm.weight`, d.dv),
        outProj: linear(`${la}out_proj.weight`, H, d.valueDim),
      };
    } else {
      const D = cfg.headDim;
      const sa = `${p}self_attn.`;
      mixer = {
        kind: 'full_attention',
        qProj: linear(`${sa}q_proj.weight`, cfg.numAttentionHeads * D * 2, H),
        kProj: linear(`${sa}k_proj.weight`, cfg.numKeyValueHeads * D, H),
        vProj: linear(`${sa}v_proj.weight`, cfg.numKeyValueHeads * D, H),
        oProj: linear(`${sa}o_proj.weight`, H, cfg.numAttentionHeads * D),
        qNorm: zeroCentredNorm(`${sa}q_norm.weight`, D),
        kNorm: zeroCentredNorm(`${sa}k_norm.weight`, D),
      };
    }
    let mlp: DenseMlpWeights | MoeMlpWeights;
    const mp = `${p}mlp.`;
    if (isMoeLayer(cfg, i)) {
      const m = cfg.moe!;
      const ffn = (pre: string, inner: number) => ({
        gateProj: linear(`${pre}gate_proj.weight`, inner, H),
        upProj: linear(`${pre}up_proj.weight`, inner, H),
        downProj: linear(`${pre}down_proj.weight`, H, inner),
      });
      mlp = {
        kind: 'moe',
        gate: linear(`${mp}gate.weight`, m.numExperts, H),
        experts: Array.from({ length: m.numExperts }, (_, e) => ffn(`${mp}experts.${e}.`, m.moeIntermediateSize)),
        sharedExpert: ffn(`${mp}shared_expert.`, m.sharedExpertIntermediateSize),
        sharedExpertGate: linear(`${mp}shared_expert_gate.weight`, 1, H),
      };
    } else {
      mlp = {
        kind: 'dense',
        gateProj: linear(`${mp}gate_proj.weight`, cfg.intermediateSize, H),
        upProj: linear(`${mp}up_proj.weight`, cfg.intermediateSize, H),
        downProj: linear(`${mp}down_proj.weight`, H, cfg.intermediateSize),
      };
    }
    layers.push({
      inputLayernorm: zeroCentredNorm(`${p}input_layernorm.weight`, H),
      postAttentionLayernorm: zeroCentredNorm(`${p}post_attention_layernorm.weight`, H),
      mixer,
      mlp,
    });
  }
  const embedTokens = linear('model.embed_tokens.weight', cfg.vocabSize, H);
  return {
    config: cfg,
    embedTokens,
    layers,
    norm: zeroCentredNorm('model.norm.weight', H),
    lmHead: cfg.tieWordEmbeddings ? embedTokens : linear('lm_head.weight', cfg.vocabSize, H),
  };
}

// Matrix form conversions live in csr.ts; re-exported for existing callers.
export { csrToDense, denseToCsr, densifyMatrix, sparsifyMatrix } from './csr.ts';
