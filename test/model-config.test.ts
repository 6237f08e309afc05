/** config.json parsing/emission for both families, and the built-in targets. */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ChipcError } from '../src/util/errors.ts';
import { hfConfigJson, parseHfConfig, toHfConfig } from '../src/model/hf-config.ts';
import { describeTarget, formatTargetSummary, listTargets, resolveTarget } from '../src/model/targets.ts';
import type { ModelConfig } from '../src/model/config.ts';

function expectChipcError(fn: () => unknown, re: RegExp): void {
  let err: unknown;
  try { fn(); } catch (e) { err = e; }
  expect(err).toBeInstanceOf(ChipcError);
  expect((err as Error).message).toMatch(re);
}

const interval4 = (n: number) => Array.from({ length: n }, (_, i) => ((i + 1) % 4 === 0 ? 'full_attention' : 'linear_attention'));

describe('built-in targets', () => {
  it('lists the built-ins', () => {
    expect(listTargets()).toEqual(['chip-test', 'qwen3-coder-next', 'qwen3-next-80b', 'qwen3.5-4b', 'tiny']);
  });

  it('qwen3.5-4b has the published values (docs/host-architecture.md §1.2)', () => {
    const t = resolveTarget('qwen3.5-4b');
    expect(t.source).toBe('builtin:qwen3.5-4b');
    const c = t.config;
    expect(c).toMatchObject({
      family: 'qwen3_5_text', hiddenSize: 2560, numLayers: 32, numAttentionHeads: 16, numKeyValueHeads: 4,
      headDim: 256, partialRotaryFactor: 0.25, ropeTheta: 10_000_000, linearNumKeyHeads: 16,
      linearNumValueHeads: 32, linearKeyHeadDim: 128, linearValueHeadDim: 128, linearConvKernelDim: 4,
      intermediateSize: 9216, rmsNormEps: 1e-6, vocabSize: 248320, tieWordEmbeddings: true,
      maxPositionEmbeddings: 262144, dtype: 'bfloat16', bosTokenId: null, eosTokenId: 248044, moe: null,
    });
    expect(c.layerTypes).toEqual(interval4(32));
  });

  it('qwen3-next-80b / coder-next have the published values (docs/host-architecture.md §1.2)', () => {
    for (const name of ['qwen3-next-80b', 'qwen3-coder-next']) {
      const c = resolveTarget(name).config;
      expect(c).toMatchObject({
        family: 'qwen3_next', hiddenSize: 2048, numLayers: 48, numAttentionHeads: 16, numKeyValueHeads: 2,
        headDim: 256, ropeTheta: 5_000_000, intermediateSize: 5120, vocabSize: 151936,
        tieWordEmbeddings: false, bosTokenId: 151643, eosTokenId: 151645, dtype: 'bfloat16',
        moe: {
          numExperts: 512, numExpertsPerTok: 10, moeIntermediateSize: 512, sharedExpertIntermediateSize: 512,
          normTopkProb: true, decoderSparseStep: 1, mlpOnlyLayers: [],
        },
      });
      expect(c.layerTypes).toEqual(interval4(48));
    }
  });

  it('tiny is a small valid qwen3_5_text', () => {
    const c = resolveTarget('tiny').config;
    expect(c).toMatchObject({
      family: 'qwen3_5_text', hiddenSize: 64, numLayers: 4, vocabSize: 512, intermediateSize: 256,
      numAttentionHeads: 4, numKeyValueHeads: 2, headDim: 32, linearNumKeyHeads: 2, linearNumValueHeads: 4,
      linearKeyHeadDim: 16, linearValueHeadDim: 16, linearConvKernelDim: 4, dtype: 'float32',
    });
    expect(c.layerTypes).toEqual(['linear_attention', 'linear_attention', 'linear_attention', 'full_attention']);
  });

  it('resolves a config.json path or directory, and lists known names for unknown targets', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-model-cfg-'));
    try {
      fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ model_type: 'qwen3_next', num_hidden_layers: 8 }));
      expect(resolveTarget(dir).config.numLayers).toBe(8);
      expect(resolveTarget(path.join(dir, 'config.json')).source).toBe(path.join(dir, 'config.json'));
      fs.writeFileSync(path.join(dir, 'bad.json'), '{"model_type": "llama"}');
      expectChipcError(() => resolveTarget(path.join(dir, 'bad.json')), /bad\.json.*model_type/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    expectChipcError(() => resolveTarget('qwen9-nope'), /qwen9-nope.*qwen3-coder-next, qwen3-next-80b, qwen3\.5-4b, tiny/);
  });

  it('describeTarget summarises layers, FFN and parameters', () => {
    const s4 = describeTarget(resolveTarget('qwen3.5-4b').config);
    expect(s4).toMatchObject({ linearAttentionLayers: 24, fullAttentionLayers: 8, ffn: 'dense 9216', parameters: 4_205_751_296 });
    const s80 = describeTarget(resolveTarget('qwen3-next-80b').config);
    expect(s80.parameters).toBe(79_674_391_296);
    expect(s80.ffn).toMatch(/^MoE 512 experts × 512, top-10, shared 512 \(48 MoE layers, 0 dense/);
    expect(formatTargetSummary(s80)).toMatch(/79,674,391,296 parameters/);
  });
});

describe('parseHfConfig', () => {
  it('applies the Qwen3NextConfig defaults (docs/host-architecture.md §1.1)', () => {
    const c = parseHfConfig({ model_type: 'qwen3_next' });
    expect(c).toMatchObject({
      vocabSize: 151936, hiddenSize: 2048, intermediateSize: 5632, numLayers: 48, numAttentionHeads: 16,
      numKeyValueHeads: 2, headDim: 256, rmsNormEps: 1e-6, tieWordEmbeddings: false, linearConvKernelDim: 4,
      linearKeyHeadDim: 128, linearValueHeadDim: 128, linearNumKeyHeads: 16, linearNumValueHeads: 32,
      partialRotaryFactor: 0.25, dtype: 'float32',
      moe: { decoderSparseStep: 1, moeIntermediateSize: 512, sharedExpertIntermediateSize: 512,
        numExpertsPerTok: 10, numExperts: 512, normTopkProb: true, mlpOnlyLayers: [] },
    });
    expect(c.layerTypes).toEqual(interval4(48));
  });

  it('applies the Qwen3_5TextConfig defaults (docs/host-architecture.md §1.1)', () => {
    const c = parseHfConfig({ model_type: 'qwen3_5_text' });
    expect(c).toMatchObject({
      vocabSize: 248320, hiddenSize: 4096, intermediateSize: 12288, numLayers: 32, numAttentionHeads: 16,
      numKeyValueHeads: 4, headDim: 256, linearNumKeyHeads: 16, linearNumValueHeads: 32, moe: null,
    });
  });

  it('full_attention_interval builds layer_types; explicit layer_types wins', () => {
    expect(parseHfConfig({ model_type: 'qwen3_next', num_hidden_layers: 6, full_attention_interval: 2 }).layerTypes)
      .toEqual(['linear_attention', 'full_attention', 'linear_attention', 'full_attention', 'linear_attention', 'full_attention']);
    const lt = ['full_attention', 'linear_attention', 'linear_attention'];
    expect(parseHfConfig({ model_type: 'qwen3_next', num_hidden_layers: 3, full_attention_interval: 2, layer_types: lt }).layerTypes)
      .toEqual(lt);
  });

  it('reads a qwen3_5 composite through text_config, tie flag falling back to the composite', () => {
    const text = { model_type: 'qwen3_5_text', hidden_size: 256, num_hidden_layers: 4 };
    const a = parseHfConfig({ model_type: 'qwen3_5', tie_word_embeddings: true, text_config: text, vision_config: {} });
    expect(a.family).toBe('qwen3_5_text');
    expect(a.hiddenSize).toBe(256);
    expect(a.tieWordEmbeddings).toBe(true);
    const b = parseHfConfig({ model_type: 'qwen3_5', tie_word_embeddings: true, text_config: { ...text, tie_word_embeddings: false } });
    expect(b.tieWordEmbeddings).toBe(false);
    expect(parseHfConfig({ model_type: 'qwen3_5', text_config: text }).tieWordEmbeddings).toBe(false);
    expect(parseHfConfig({ model_type: 'qwen3_5', dtype: 'bfloat16', text_config: text }).dtype).toBe('bfloat16');
    expect(parseHfConfig({ model_type: 'qwen3_5', dtype: 'bfloat16', text_config: { ...text, dtype: 'float32' } }).dtype).toBe('float32');
    expectChipcError(() => parseHfConfig({ model_type: 'qwen3_5' }), /text_config/);
  });

  it('reads RoPE from rope_parameters, else legacy top-level fields', () => {
    const legacy = parseHfConfig({ model_type: 'qwen3_next', rope_theta: 123456, partial_rotary_factor: 0.5 });
    expect([legacy.ropeTheta, legacy.partialRotaryFactor]).toEqual([123456, 0.5]);
    const modern = parseHfConfig({
      model_type: 'qwen3_next', rope_theta: 1,
      rope_parameters: { rope_type: 'default', rope_theta: 5e6, partial_rotary_factor: 0.25 },
    });
    expect([modern.ropeTheta, modern.partialRotaryFactor]).toEqual([5e6, 0.25]);
    expectChipcError(() => parseHfConfig({ model_type: 'qwen3_next', rope_parameters: { rope_type: 'yarn' } }), /rope_type/);
  });

  it('num_experts 0 gives a dense qwen3_next; MoE fields are read', () => {
    expect(parseHfConfig({ model_type: 'qwen3_next', num_experts: 0 }).moe).toBeNull();
    const c = parseHfConfig({ model_type: 'qwen3_next', num_hidden_layers: 4, num_experts: 8, num_experts_per_tok: 2,
      mlp_only_layers: [3, 1], decoder_sparse_step: 2, norm_topk_prob: false });
    expect(c.moe).toEqual({ numExperts: 8, numExpertsPerTok: 2, moeIntermediateSize: 512, sharedExpertIntermediateSize: 512,
      normTopkProb: false, decoderSparseStep: 2, mlpOnlyLayers: [1, 3] });
  });

  it('rejects invalid configs with a ChipcError naming the field', () => {
    const base = { model_type: 'qwen3_5_text' };
    expectChipcError(() => parseHfConfig({ ...base, linear_num_key_heads: 3, linear_num_value_heads: 4 }), /linear_num_value_heads.*r = Hv\/Hk/);
    expectChipcError(() => parseHfConfig({ ...base, num_hidden_layers: 3, layer_types: ['linear_attention'] }), /layer_types.*1 entries.*3/);
    expectChipcError(() => parseHfConfig({ ...base, num_hidden_layers: 1, layer_types: ['attention'] }), /layer_types\[0\]/);
    expectChipcError(() => parseHfConfig({ ...base, hidden_size: -4 }), /hidden_size.*positive integer/);
    expectChipcError(() => parseHfConfig({ ...base, head_dim: 2.5 }), /head_dim/);
    expectChipcError(() => parseHfConfig({ ...base, num_attention_heads: 6, num_key_value_heads: 4 }), /num_attention_heads/);
    expectChipcError(() => parseHfConfig({ ...base, dtype: 'float16' }), /dtype/);
    expectChipcError(() => parseHfConfig({ ...base, tie_word_embeddings: 'yes' }), /tie_word_embeddings/);
    expectChipcError(() => parseHfConfig({ model_type: 'llama' }), /model_type/);
    expectChipcError(() => parseHfConfig([1]), /JSON object/);
    expectChipcError(() => parseHfConfig({ model_type: 'qwen3_next', num_hidden_layers: 4, mlp_only_layers: [4] }), /mlp_only_layers\[0\]/);
    expectChipcError(() => parseHfConfig({ model_type: 'qwen3_next', num_experts: 4, num_experts_per_tok: 5 }), /num_experts_per_tok/);
    expectChipcError(() => parseHfConfig({ ...base, eos_token_id: [1, 2] }), /eos_token_id/);
  });
});

describe('toHfConfig', () => {
  const variants = (): [string, ModelConfig][] => {
    const next = resolveTarget('qwen3-next-80b').config;
    return [
      ...listTargets().map((n) => [n, resolveTarget(n).config] as [string, ModelConfig]),
      ['next-mlp-only', { ...next, numLayers: 4, layerTypes: ['full_attention', 'linear_attention', 'linear_attention', 'full_attention'],
        moe: { ...next.moe!, mlpOnlyLayers: [0, 2], decoderSparseStep: 1, normTopkProb: false }, tieWordEmbeddings: true, dtype: 'float32' }],
      ['next-dense', { ...next, moe: null, bosTokenId: null, eosTokenId: null, rmsNormEps: 1e-5, partialRotaryFactor: 0.5 }],
    ];
  };

  it('parse(toHf(c)) == c for every built-in and variants', () => {
    for (const [name, c] of variants()) {
      expect(parseHfConfig(toHfConfig(c)), name).toEqual(c);
      expect(parseHfConfig(JSON.parse(hfConfigJson(c))), name).toEqual(c);
    }
  });

  it('emits the family architecture, explicit layer_types, rope_parameters, dtype and sorted keys', () => {
    const c4 = resolveTarget('qwen3.5-4b').config;
    const j = toHfConfig(c4);
    expect(j['architectures']).toEqual(['Qwen3_5ForCausalLM']);
    expect(j['model_type']).toBe('qwen3_5_text');
    expect(j['layer_types']).toEqual(interval4(32));
    expect(j['rope_parameters']).toEqual({ mrope_interleaved: true, mrope_section: [11, 11, 10], partial_rotary_factor: 0.25, rope_theta: 10_000_000, rope_type: 'default' });
    expect([j['dtype'], j['torch_dtype']]).toEqual(['bfloat16', 'bfloat16']);
    expect(Object.keys(j)).toEqual([...Object.keys(j)].sort());
    expect(j['num_experts']).toBeUndefined();
    const jn = toHfConfig(resolveTarget('qwen3-next-80b').config);
    expect(jn['architectures']).toEqual(['Qwen3NextForCausalLM']);
    expect(jn['rope_parameters']).toEqual({ partial_rotary_factor: 0.25, rope_theta: 5_000_000, rope_type: 'default' });
    expect([jn['num_experts'], jn['mlp_only_layers'], jn['decoder_sparse_step']]).toEqual([512, [], 1]);
    expect(hfConfigJson(c4)).toBe(hfConfigJson({ ...c4 }));
  });
});
