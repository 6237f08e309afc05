/**
 * Tensor names, shapes and row layouts of both families (docs/host-architecture.md §2).
 *
 * `expectedTensors` lists every parameter a text-only checkpoint of `cfg` holds, in a fixed order
 * (model order: embeddings, layers 0…N−1, final norm, LM head). The row-layout maps convert the
 * Qwen3-Next fused, per-key-head-interleaved `in_proj_qkvz` / `in_proj_ba` rows to and from the
 * family-neutral split layout of weights.ts (docs/host-architecture.md §2.4).
 */
import { ChipcError } from '../util/errors.ts';
import { isMoeLayer, type ModelConfig } from './config.ts';

export interface TensorSpec {
  name: string;
  shape: number[];
}

/**
 * The Gated DeltaNet layer's dimensions, derived from a config (notation of
 * docs/host-architecture.md §2). The one definition: the loader, the executor (exec/gdn-cache.ts gdnDimsOf) and
 * the RAM gadget (gadgets/gdn-ram.ts) all use it.
 */
export interface GdnDims {
  /** Key heads Hk, value heads Hv, key and value head dims. */
  hk: number; hv: number; dk: number; dv: number;
  /** r = Hv / Hk. */
  r: number;
  keyDim: number; valueDim: number;
  /** 2·key_dim + value_dim. */
  convDim: number;
  /** Rows of one key-head group of in_proj_qkvz: 2·dk + 2·r·dv. */
  groupRows: number;
  /** The causal conv's kernel size (linear_conv_kernel_dim). */
  K: number;
  /** The query scale fl(dk^−0.5) (HF: query.shape[-1] ** -0.5, used as a float32 scalar). */
  qScale: number;
}

export function gdnDims(cfg: ModelConfig): GdnDims {
  const hk = cfg.linearNumKeyHeads;
  const hv = cfg.linearNumValueHeads;
  const dk = cfg.linearKeyHeadDim;
  const dv = cfg.linearValueHeadDim;
  const r = hv / hk;
  if (!Number.isInteger(r)) {
    throw new ChipcError('target.config', `linear_num_value_heads (${hv}) must be a multiple of linear_num_key_heads (${hk})`);
  }
  const keyDim = hk * dk;
  const valueDim = hv * dv;
  return {
    hk, hv, dk, dv, r, keyDim, valueDim, convDim: 2 * keyDim + valueDim, groupRows: 2 * dk + 2 * r * dv,
    K: cfg.linearConvKernelDim, qScale: Math.fround(Math.pow(dk, -0.5)),
  };
}

/** Text-model name prefix used when writing (and first tried when reading). */
export const MODEL_PREFIX = 'model.';
/** Qwen3.5 hub (composite) checkpoints put the text model here; accepted on read. */
export const HUB_TEXT_PREFIX = 'model.language_model.';

/**
 * True for tensors a text-only reader skips: the multi-token-prediction head (`mtp.*`) of both
 * families and, for Qwen3.5 hub checkpoints, the vision tower (`model.visual.*`).
 */
export function isIgnoredTensor(cfg: ModelConfig, name: string): boolean {
  if (name.startsWith('mtp.')) return true;
  return cfg.family === 'qwen3_5_text' && name.startsWith('model.visual.');
}

/** Names (without the `model.` prefix) and shapes of layer i's tensors. */
function layerTensors(cfg: ModelConfig, i: number): TensorSpec[] {
  const H = cfg.hiddenSize;
  const p = `layers.${i}.`;
  const out: TensorSpec[] = [
    { name: `${p}input_layernorm.weight`, shape: [H] },
    { name: `${p}post_attention_layernorm.weight`, shape: [H] },
  ];
  if (cfg.layerTypes[i] === 'linear_attention') {
    const g = gdnDims(cfg);
    const la = `${p}linear_attn.`;
    if (cfg.family === 'qwen3_next') {
      out.push({ name: `${la}in_proj_qkvz.weight`, shape: [2 * g.keyDim + 2 * g.valueDim, H] });
      out.push({ name: `${la}in_proj_ba.weight`, shape: [2 * g.hv, H] });
    } else {
      out.push({ name: `${la}in_proj_qkv.weight`, shape: [g.convDim, H] });
      out.push({ name: `${la}in_proj_z.weight`, shape: [g.valueDim, H] });
      out.push({ name: `${la}in_proj_b.weight`, shape: [g.hv, H] });
      out.push({ name: `${la}in_proj_a.weight`, shape: [g.hv, H] });
    }
    out.push({ name: `${la}conv1d.weight`, shape: [g.convDim, 1, cfg.linearConvKernelDim] });
    out.push({ name: `${la}A_log`, shape: [g.hv] });
    out.push({ name: `${la}dt_bias`, shape: [g.hv] });
    out.push({ name: `${la}norm.weight`, shape: [g.dv] });
    out.push({ name: `${la}out_proj.weight`, shape: [H, g.valueDim] });
  } else {
    const D = cfg.headDim;
    const sa = `${p}self_attn.`;
    out.push({ name: `${sa}q_proj.weight`, shape: [cfg.numAttentionHeads * D * 2, H] });
    out.push({ name: `${sa}k_proj.weight`, shape: [cfg.numKeyValueHeads * D, H] });
    out.push({ name: `${sa}v_proj.weight`, shape: [cfg.numKeyValueHeads * D, H] });
    out.push({ name: `${sa}o_proj.weight`, shape: [H, cfg.numAttentionHeads * D] });
    out.push({ name: `${sa}q_norm.weight`, shape: [D] });
    out.push({ name: `${sa}k_norm.weight`, shape: [D] });
  }
  const mlp = `${p}mlp.`;
  if (isMoeLayer(cfg, i)) {
    const m = cfg.moe!;
    out.push({ name: `${mlp}gate.weight`, shape: [m.numExperts, H] });
    for (let e = 0; e < m.numExperts; e++) {
      const ex = `${mlp}experts.${e}.`;
      out.push({ name: `${ex}gate_proj.weight`, shape: [m.moeIntermediateSize, H] });
      out.push({ name: `${ex}up_proj.weight`, shape: [m.moeIntermediateSize, H] });
      out.push({ name: `${ex}down_proj.weight`, shape: [H, m.moeIntermediateSize] });
    }
    const se = `${mlp}shared_expert.`;
    out.push({ name: `${se}gate_proj.weight`, shape: [m.sharedExpertIntermediateSize, H] });
    out.push({ name: `${se}up_proj.weight`, shape: [m.sharedExpertIntermediateSize, H] });
    out.push({ name: `${se}down_proj.weight`, shape: [H, m.sharedExpertIntermediateSize] });
    out.push({ name: `${mlp}shared_expert_gate.weight`, shape: [1, H] });
  } else {
    const I = cfg.intermediateSize;
    out.push({ name: `${mlp}gate_proj.weight`, shape: [I, H] });
    out.push({ name: `${mlp}up_proj.weight`, shape: [I, H] });
    out.push({ name: `${mlp}down_proj.weight`, shape: [H, I] });
  }
  return out.map((t) => ({ name: MODEL_PREFIX + t.name, shape: t.shape }));
}

export interface ExpectedTensorsOptions {
  /** Text-model prefix instead of `model.` (e.g. HUB_TEXT_PREFIX); `lm_head.weight` keeps its name. */
  prefix?: string;
}

/**
 * Every tensor of a text-only checkpoint of `cfg`, in model order. `lm_head.weight` is listed only
 * when embeddings are untied (a tied checkpoint omits it; readers fall back to embed_tokens).
 */
export function expectedTensors(cfg: ModelConfig, opts: ExpectedTensorsOptions = {}): TensorSpec[] {
  const H = cfg.hiddenSize;
  const out: TensorSpec[] = [{ name: `${MODEL_PREFIX}embed_tokens.weight`, shape: [cfg.vocabSize, H] }];
  for (let i = 0; i < cfg.numLayers; i++) out.push(...layerTensors(cfg, i));
  out.push({ name: `${MODEL_PREFIX}norm.weight`, shape: [H] });
  if (!cfg.tieWordEmbeddings) out.push({ name: 'lm_head.weight', shape: [cfg.vocabSize, H] });
  const prefix = opts.prefix;
  if (prefix !== undefined && prefix !== MODEL_PREFIX) {
    return out.map((t) => t.name.startsWith(MODEL_PREFIX)
      ? { name: prefix + t.name.slice(MODEL_PREFIX.length), shape: t.shape } : t);
  }
  return out;
}

/** Σ over expectedTensors of the product of the shape (exact while below 2^53). */
export function parameterCount(cfg: ModelConfig): number {
  let n = 0;
  for (const t of expectedTensors(cfg)) n += t.shape.reduce((a, b) => a * b, 1);
  return n;
}

// ---------------------------------------------------------------------------------------------
// Row layouts (docs/host-architecture.md §2.4)

export type QkvzPart = 'q' | 'k' | 'v' | 'z';

/** A row of the fused Qwen3-Next projection, named by part and flat head-major index. */
export interface QkvzRow {
  part: QkvzPart;
  /** q/k: key head g·dk + i; v/z: value head h·dv + i. */
  index: number;
}

function checkRow(row: number, n: number, what: string): void {
  if (!Number.isSafeInteger(row) || row < 0 || row >= n) {
    throw new ChipcError('weights.row', `${what} row ${row} out of range [0, ${n})`);
  }
}

/**
 * In_proj_qkvz row o → (part, flat index). With G = 2dk + 2r·dv, g = o // G, u = o % G:
 * u < dk → q[g·dk+u]; u < 2dk → k[g·dk+u−dk]; u < 2dk+r·dv → v[g·r·dv + (u−2dk)]
 * (= h·dv+i with h = g·r + (u−2dk)//dv); else z[g·r·dv + (u−2dk−r·dv)].
 */
export function qkvzRowToPart(cfg: ModelConfig, row: number): QkvzRow {
  const d = gdnDims(cfg);
  checkRow(row, d.hk * d.groupRows, 'in_proj_qkvz');
  const g = Math.floor(row / d.groupRows);
  const u = row % d.groupRows;
  const rdv = d.r * d.dv;
  if (u < d.dk) return { part: 'q', index: g * d.dk + u };
  if (u < 2 * d.dk) return { part: 'k', index: g * d.dk + (u - d.dk) };
  if (u < 2 * d.dk + rdv) return { part: 'v', index: g * rdv + (u - 2 * d.dk) };
  return { part: 'z', index: g * rdv + (u - 2 * d.dk - rdv) };
}

/** Inverse of qkvzRowToPart. */
export function qkvzPartToRow(cfg: ModelConfig, part: QkvzPart, index: number): number {
  const d = gdnDims(cfg);
  const rdv = d.r * d.dv;
  if (part === 'q' || part === 'k') {
    checkRow(index, d.keyDim, `in_proj_qkvz ${part}`);
    const g = Math.floor(index / d.dk);
    return g * d.groupRows + (part === 'k' ? d.dk : 0) + (index % d.dk);
  }
  checkRow(index, d.valueDim, `in_proj_qkvz ${part}`);
  const g = Math.floor(index / rdv);
  return g * d.groupRows + 2 * d.dk + (part === 'z' ? rdv : 0) + (index % rdv);
}

export type BaPart = 'b' | 'a';

/** In_proj_ba row o → (b|a, value head): g = o // 2r, u = o % 2r; u < r → b[g·r+u], else a[g·r+u−r]. */
export function baRowToPart(cfg: ModelConfig, row: number): { part: BaPart; head: number } {
  const d = gdnDims(cfg);
  checkRow(row, 2 * d.hv, 'in_proj_ba');
  const g = Math.floor(row / (2 * d.r));
  const u = row % (2 * d.r);
  return u < d.r ? { part: 'b', head: g * d.r + u } : { part: 'a', head: g * d.r + (u - d.r) };
}

/** Inverse of baRowToPart. */
export function baPartToRow(cfg: ModelConfig, part: BaPart, head: number): number {
  const d = gdnDims(cfg);
  checkRow(head, d.hv, `in_proj_ba ${part}`);
  const g = Math.floor(head / d.r);
  return g * 2 * d.r + (part === 'a' ? d.r : 0) + (head % d.r);
}

/**
 * Whole-matrix map for in_proj_qkvz: entry o is the row of the neutral concatenation
 * [q | k | v | z] (= inProjQkv rows, then inProjZ rows offset by conv_dim) that fused row o holds.
 * A permutation of [0, 2·key_dim + 2·value_dim).
 */
export function qkvzDiskToNeutral(cfg: ModelConfig): Uint32Array {
  const d = gdnDims(cfg);
  const n = d.hk * d.groupRows;
  const out = new Uint32Array(n);
  const rdv = d.r * d.dv;
  let o = 0;
  for (let g = 0; g < d.hk; g++) {
    for (let u = 0; u < d.dk; u++) out[o++] = g * d.dk + u;
    for (let u = 0; u < d.dk; u++) out[o++] = d.keyDim + g * d.dk + u;
    for (let u = 0; u < rdv; u++) out[o++] = 2 * d.keyDim + g * rdv + u;
    for (let u = 0; u < rdv; u++) out[o++] = d.convDim + g * rdv + u;
  }
  return out;
}

/**
 * Whole-matrix map for in_proj_ba: entry o is the row of the neutral concatenation [b | a]
 * (b head h at h, a head h at Hv + h) that fused row o holds.
 */
export function baDiskToNeutral(cfg: ModelConfig): Uint32Array {
  const d = gdnDims(cfg);
  const out = new Uint32Array(2 * d.hv);
  let o = 0;
  for (let g = 0; g < d.hk; g++) {
    for (let u = 0; u < d.r; u++) out[o++] = g * d.r + u;
    for (let u = 0; u < d.r; u++) out[o++] = d.hv + g * d.r + u;
  }
  return out;
}

/** Inverse of a row permutation: inv[perm[o]] = o. */
export function invertPermutation(perm: Uint32Array): Uint32Array {
  const inv = new Uint32Array(perm.length);
  for (let o = 0; o < perm.length; o++) inv[perm[o]] = o;
  return inv;
}
