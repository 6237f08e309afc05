/** Tensor names/shapes of all four targets, parameter counts, and the Qwen3-Next row layouts. */
import { describe, expect, it } from 'vitest';
import { resolveTarget } from '../src/model/targets.ts';
import {
  baDiskToNeutral, baPartToRow, baRowToPart, expectedTensors, invertPermutation, parameterCount,
  qkvzDiskToNeutral, qkvzPartToRow, qkvzRowToPart, type QkvzPart,
} from '../src/model/naming.ts';
import type { ModelConfig } from '../src/model/config.ts';

const cfg4b = resolveTarget('qwen3.5-4b').config;
const cfg80b = resolveTarget('qwen3-next-80b').config;
const cfgCoder = resolveTarget('qwen3-coder-next').config;
const cfgTiny = resolveTarget('tiny').config;

const shapeMaps = new Map<ModelConfig, Map<string, number[]>>();
function shapeOf(cfg: ModelConfig, name: string): number[] | undefined {
  let m = shapeMaps.get(cfg);
  if (!m) { m = new Map(expectedTensors(cfg).map((t) => [t.name, t.shape])); shapeMaps.set(cfg, m); }
  return m.get(name);
}

describe('expectedTensors', () => {
  it('Qwen3.5-4B: count and hand-checked shapes from docs/host-architecture.md §2', () => {
    const list = expectedTensors(cfg4b);
    // embed + 32×2 layer norms + 24 GDN×9 + 8 attention×6 + 32 dense MLP×3 + final norm; tied: no lm_head
    expect(list.length).toBe(1 + 64 + 24 * 9 + 8 * 6 + 32 * 3 + 1);
    expect(new Set(list.map((t) => t.name)).size).toBe(list.length);
    const s = (n: string) => shapeOf(cfg4b, n);
    expect(s('model.embed_tokens.weight')).toEqual([248320, 2560]);
    expect(s('model.layers.0.linear_attn.in_proj_qkv.weight')).toEqual([8192, 2560]);
    expect(s('model.layers.0.linear_attn.in_proj_z.weight')).toEqual([4096, 2560]);
    expect(s('model.layers.0.linear_attn.in_proj_b.weight')).toEqual([32, 2560]);
    expect(s('model.layers.0.linear_attn.in_proj_a.weight')).toEqual([32, 2560]);
    expect(s('model.layers.0.linear_attn.conv1d.weight')).toEqual([8192, 1, 4]);
    expect(s('model.layers.0.linear_attn.A_log')).toEqual([32]);
    expect(s('model.layers.0.linear_attn.norm.weight')).toEqual([128]);
    expect(s('model.layers.0.linear_attn.out_proj.weight')).toEqual([2560, 4096]);
    expect(s('model.layers.3.self_attn.q_proj.weight')).toEqual([8192, 2560]);
    expect(s('model.layers.3.self_attn.k_proj.weight')).toEqual([1024, 2560]);
    expect(s('model.layers.31.self_attn.o_proj.weight')).toEqual([2560, 4096]);
    expect(s('model.layers.31.self_attn.q_norm.weight')).toEqual([256]);
    expect(s('model.layers.5.mlp.gate_proj.weight')).toEqual([9216, 2560]);
    expect(s('model.layers.5.mlp.down_proj.weight')).toEqual([2560, 9216]);
    expect(s('model.layers.3.linear_attn.in_proj_qkv.weight')).toBeUndefined();
    expect(s('lm_head.weight')).toBeUndefined();
    expect(s('model.layers.0.linear_attn.in_proj_qkvz.weight')).toBeUndefined();
  });

  it('Qwen3-Next-80B and Coder-Next: count and hand-checked shapes', () => {
    for (const cfg of [cfg80b, cfgCoder]) {
      const list = expectedTensors(cfg);
      // embed + 48×2 norms + 36 GDN×7 + 12 attn×6 + 48 MoE×(router + 512×3 + shared 3 + shared gate) + norm + lm_head
      expect(list.length).toBe(1 + 96 + 36 * 7 + 12 * 6 + 48 * (1 + 512 * 3 + 3 + 1) + 1 + 1);
      const s = (n: string) => shapeOf(cfg, n);
      expect(s('model.layers.0.linear_attn.in_proj_qkvz.weight')).toEqual([12288, 2048]);
      expect(s('model.layers.0.linear_attn.in_proj_ba.weight')).toEqual([64, 2048]);
      expect(s('model.layers.0.linear_attn.conv1d.weight')).toEqual([8192, 1, 4]);
      expect(s('model.layers.0.linear_attn.out_proj.weight')).toEqual([2048, 4096]);
      expect(s('model.layers.47.self_attn.q_proj.weight')).toEqual([8192, 2048]);
      expect(s('model.layers.47.self_attn.k_proj.weight')).toEqual([512, 2048]);
      expect(s('model.layers.1.mlp.gate.weight')).toEqual([512, 2048]);
      expect(s('model.layers.1.mlp.experts.511.down_proj.weight')).toEqual([2048, 512]);
      expect(s('model.layers.1.mlp.experts.0.gate_proj.weight')).toEqual([512, 2048]);
      expect(s('model.layers.1.mlp.shared_expert.up_proj.weight')).toEqual([512, 2048]);
      expect(s('model.layers.1.mlp.shared_expert_gate.weight')).toEqual([1, 2048]);
      expect(s('lm_head.weight')).toEqual([151936, 2048]);
      expect(s('model.layers.1.mlp.gate_proj.weight')).toBeUndefined();
    }
  });

  it('qwen3_next mlp_only_layers get dense mlp.* tensors; decoder_sparse_step skips layers', () => {
    const cfg: ModelConfig = { ...cfg80b, moe: { ...cfg80b.moe!, mlpOnlyLayers: [0, 5], decoderSparseStep: 2 } };
    const names = new Set(expectedTensors(cfg).map((t) => t.name));
    expect(names.has('model.layers.0.mlp.gate_proj.weight')).toBe(true); // mlp_only
    expect(names.has('model.layers.0.mlp.gate.weight')).toBe(false);
    expect(names.has('model.layers.1.mlp.gate.weight')).toBe(true); // (1+1) % 2 == 0
    expect(names.has('model.layers.2.mlp.gate_proj.weight')).toBe(true); // (2+1) % 2 != 0 → dense
    expect(names.has('model.layers.5.mlp.up_proj.weight')).toBe(true); // mlp_only although (5+1)%2==0
    expect(names.has('model.layers.5.mlp.experts.0.up_proj.weight')).toBe(false);
  });

  it('hub prefix option renames model.* but not lm_head', () => {
    const l = expectedTensors({ ...cfgTiny, tieWordEmbeddings: false }, { prefix: 'model.language_model.' });
    expect(l[0].name).toBe('model.language_model.embed_tokens.weight');
    expect(l[l.length - 1].name).toBe('lm_head.weight');
  });

  it('parameter counts match docs/host-architecture.md §1.2', () => {
    expect(parameterCount(cfg4b)).toBe(4_205_751_296);
    expect(parameterCount({ ...cfg4b, tieWordEmbeddings: false })).toBe(4_841_450_496);
    expect(parameterCount(cfg80b)).toBe(79_674_391_296);
  });
});

/**
 * Independent construction of the fused qkvz layout, following HF's
 * `fix_query_key_value_ordering`: view the output as [Hk, G], split each group into
 * [dk, dk, r·dv, r·dv], then flatten each part over groups in order (q,k: [Hk·dk]; v,z: [Hk, r·dv]
 * reshaped to [Hv, dv], i.e. concatenated in group order).
 */
function bruteForceQkvz(cfg: ModelConfig): Record<QkvzPart, number[]> {
  const hk = cfg.linearNumKeyHeads, dk = cfg.linearKeyHeadDim, dv = cfg.linearValueHeadDim;
  const r = cfg.linearNumValueHeads / hk;
  const G = 2 * dk + 2 * r * dv;
  const rowsOfGroup = (g: number) => Array.from({ length: G }, (_, u) => g * G + u);
  const parts: Record<QkvzPart, number[]> = { q: [], k: [], v: [], z: [] };
  for (let g = 0; g < hk; g++) {
    const rows = rowsOfGroup(g);
    parts.q.push(...rows.slice(0, dk));
    parts.k.push(...rows.slice(dk, 2 * dk));
    parts.v.push(...rows.slice(2 * dk, 2 * dk + r * dv));
    parts.z.push(...rows.slice(2 * dk + r * dv, G));
  }
  return parts;
}

function bruteForceBa(cfg: ModelConfig): { b: number[]; a: number[] } {
  const hk = cfg.linearNumKeyHeads, r = cfg.linearNumValueHeads / hk;
  const b: number[] = [], a: number[] = [];
  for (let g = 0; g < hk; g++) {
    for (let u = 0; u < r; u++) b.push(g * 2 * r + u);
    for (let u = 0; u < r; u++) a.push(g * 2 * r + r + u);
  }
  return { b, a };
}

describe('Qwen3-Next row layouts (docs/host-architecture.md §2.4)', () => {
  it('80B worked example: G = 768, q rows g·768+[0,128), k +[128,256), v +[256,512), z +[512,768)', () => {
    expect(qkvzRowToPart(cfg80b, 0)).toEqual({ part: 'q', index: 0 });
    expect(qkvzRowToPart(cfg80b, 127)).toEqual({ part: 'q', index: 127 });
    expect(qkvzRowToPart(cfg80b, 128)).toEqual({ part: 'k', index: 0 });
    expect(qkvzRowToPart(cfg80b, 255)).toEqual({ part: 'k', index: 127 });
    expect(qkvzRowToPart(cfg80b, 256)).toEqual({ part: 'v', index: 0 }); // value head 0
    expect(qkvzRowToPart(cfg80b, 384)).toEqual({ part: 'v', index: 128 }); // value head 1, dim 0
    expect(qkvzRowToPart(cfg80b, 512)).toEqual({ part: 'z', index: 0 });
    expect(qkvzRowToPart(cfg80b, 767)).toEqual({ part: 'z', index: 255 }); // head 1 dim 127
    expect(qkvzRowToPart(cfg80b, 768)).toEqual({ part: 'q', index: 128 }); // key head 1
    expect(qkvzRowToPart(cfg80b, 768 + 256)).toEqual({ part: 'v', index: 256 }); // value head 2 = 1·r + 0
    expect(qkvzRowToPart(cfg80b, 15 * 768 + 767)).toEqual({ part: 'z', index: 4095 });
    expect(() => qkvzRowToPart(cfg80b, 12288)).toThrow(/out of range/);
  });

  it('qkvz maps agree with the brute-force construction (80B and a r=3 config)', () => {
    const odd: ModelConfig = { ...cfgTiny, linearNumKeyHeads: 2, linearNumValueHeads: 6, linearKeyHeadDim: 3, linearValueHeadDim: 5 };
    for (const cfg of [cfg80b, odd]) {
      const parts = bruteForceQkvz(cfg);
      const perm = qkvzDiskToNeutral(cfg);
      const keyDim = cfg.linearNumKeyHeads * cfg.linearKeyHeadDim;
      const valueDim = cfg.linearNumValueHeads * cfg.linearValueHeadDim;
      const offsets: Record<QkvzPart, number> = { q: 0, k: keyDim, v: 2 * keyDim, z: 2 * keyDim + valueDim };
      expect(perm.length).toBe(2 * keyDim + 2 * valueDim);
      for (const part of ['q', 'k', 'v', 'z'] as QkvzPart[]) {
        expect(parts[part].length).toBe(part === 'q' || part === 'k' ? keyDim : valueDim);
        parts[part].forEach((row, index) => {
          expect(qkvzRowToPart(cfg, row)).toEqual({ part, index });
          expect(qkvzPartToRow(cfg, part, index)).toBe(row);
          expect(perm[row]).toBe(offsets[part] + index);
        });
      }
      const inv = invertPermutation(perm);
      expect(new Set(perm).size).toBe(perm.length);
      for (let o = 0; o < perm.length; o++) expect(inv[perm[o]]).toBe(o);
    }
  });

  it('ba maps: 80B rows 0,1 → b0,b1; 2,3 → a0,a1; 4 → b2; brute force agrees', () => {
    expect(baRowToPart(cfg80b, 0)).toEqual({ part: 'b', head: 0 });
    expect(baRowToPart(cfg80b, 1)).toEqual({ part: 'b', head: 1 });
    expect(baRowToPart(cfg80b, 2)).toEqual({ part: 'a', head: 0 });
    expect(baRowToPart(cfg80b, 3)).toEqual({ part: 'a', head: 1 });
    expect(baRowToPart(cfg80b, 4)).toEqual({ part: 'b', head: 2 });
    expect(baRowToPart(cfg80b, 63)).toEqual({ part: 'a', head: 31 });
    const { b, a } = bruteForceBa(cfg80b);
    const perm = baDiskToNeutral(cfg80b);
    b.forEach((row, h) => {
      expect(baRowToPart(cfg80b, row)).toEqual({ part: 'b', head: h });
      expect(baPartToRow(cfg80b, 'b', h)).toBe(row);
      expect(perm[row]).toBe(h);
    });
    a.forEach((row, h) => {
      expect(baPartToRow(cfg80b, 'a', h)).toBe(row);
      expect(perm[row]).toBe(32 + h);
    });
  });
});
