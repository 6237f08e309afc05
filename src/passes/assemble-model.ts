/**
 * Pass — assemble: lowered layer specs (forms over virtual dims) + a slot map → family-neutral
 * ModelWeights held as CSR matrices (compiled models are > 99 % zero). The executor runs the
 * result directly; emission writes it in the target family's tensor names and layouts.
 *
 * Fixed parts of every compiled layer:
 * - zero-centred norms have w = 0 (scale 1): sublayer inputs are raw·normScale (frame.ts);
 * - GDN: in_proj_a = 0, dt_bias = −128, A_log = 0, so g = −exp(0)·softplus(−128) = −0 and
 *   exp(g) = 1 exactly on every token; conv taps (0, …, 0, 1): the current token only (both on
 *   used heads only: an unused head sees q = k = v = 0 and its state stays 0 whatever its gates);
 * - the embedding row of every token carries the frame constants (anchors, constant ones).
 */
import type { ModelConfig } from '../model/config.ts';
import type {
  AttentionWeights, DenseMlpWeights, GdnWeights, LayerWeights, Matrix, ModelWeights,
} from '../model/weights.ts';
import { ChipcError } from '../util/errors.ts';
import { frameConstants, type ResidualFrame } from '../lower/frame.ts';
import type { FfnUnit, LayerSpec } from '../lower/forms.ts';
import type { TokenRow } from '../lower/lowered.ts';
import { CsrBuilder, csrFromRows, formRow, type SlotMap } from './assemble/rows.ts';

/** dt_bias of every pinned GDN head: softplus(−128) = 0 exactly, so g = −0. */
export const PINNED_DT_BIAS = -128;

export interface ModelSpec {
  /** Target shape: hidden = frame.hidden, numLayers/layerTypes = the specs, vocabulary, heads. */
  config: ModelConfig;
  frame: ResidualFrame;
  slotOf: SlotMap;
  /** Raw residual values of token t's embedding row (besides the frame constants). */
  embedding: TokenRow;
  layers: LayerSpec[];
  /** LM head row of token t: logit = Σ weight·raw(dim) (raw units; scaled like forms). */
  lmHead: TokenRow;
}

function zeros(n: number): Float32Array {
  return new Float32Array(n);
}

function emptyMatrix(rows: number, cols: number): Matrix {
  return new CsrBuilder(rows, cols).build('empty');
}

export function assembleFfn(units: FfnUnit[], cfg: ModelConfig, frame: ResidualFrame, slotOf: SlotMap, layer: number): DenseMlpWeights {
  const I = cfg.intermediateSize;
  const H = cfg.hiddenSize;
  if (units.length > I) {
    throw new ChipcError('fit.units', `layer ${layer} needs ${units.length} FFN units; the target has ${I} per layer`);
  }
  const gate = new CsrBuilder(I, H);
  const up = new CsrBuilder(I, H);
  const down = new CsrBuilder(H, I);
  units.forEach((u, i) => {
    gate.setRow(i, formRow(u.gate, frame, slotOf, `layer ${layer} gate_proj`));
    up.setRow(i, formRow(u.up, frame, slotOf, `layer ${layer} up_proj`));
    for (const o of u.down) down.add(slotOf(o.dim), i, o.weight);
  });
  return {
    kind: 'dense',
    gateProj: gate.build(`layer ${layer} gate_proj`),
    upProj: up.build(`layer ${layer} up_proj`),
    downProj: down.build(`layer ${layer} down_proj`),
  };
}

export function assembleGdn(
  mixer: Extract<LayerSpec['mixer'], { kind: 'linear_attention' }>,
  cfg: ModelConfig, frame: ResidualFrame, slotOf: SlotMap, layer: number,
): GdnWeights {
  const H = cfg.hiddenSize;
  const Hk = cfg.linearNumKeyHeads;
  const Hv = cfg.linearNumValueHeads;
  const dk = cfg.linearKeyHeadDim;
  const dv = cfg.linearValueHeadDim;
  const r = Hv / Hk;
  const K = cfg.linearConvKernelDim;
  const keyDim = Hk * dk;
  const convDim = 2 * keyDim + Hv * dv;
  if (mixer.heads.length > Hk) {
    throw new ChipcError('fit.heads', `layer ${layer} needs ${mixer.heads.length} GDN key heads; the target has ${Hk}`);
  }
  const what = `layer ${layer} linear_attn`;
  const qkv = new CsrBuilder(convDim, H);
  const z = new CsrBuilder(Hv * dv, H);
  const b = new CsrBuilder(Hv, H);
  const out = new CsrBuilder(H, Hv * dv);
  const conv = zeros(convDim * K);
  const dtBias = zeros(Hv);
  // Only channels of used heads get the current-token tap, and only used value heads are pinned:
  // an unused head has q = k = v = 0, so its state stays exactly 0 whatever its gates are.
  const tap = (c: number, offset: number) => {
    conv[c * K + K - 1 - offset] = 1;
  };
  mixer.heads.forEach((kh, h) => {
    if (!kh) return;
    const qkOffset = kh.qkTapOffset ?? 0;
    if (!Number.isInteger(qkOffset) || qkOffset < 0 || qkOffset >= K) throw new Error(`internal: q/k tap offset ${qkOffset} outside the conv kernel (${K})`);
    for (let i = 0; i < dk; i++) {
      tap(h * dk + i, qkOffset);
      tap(keyDim + h * dk + i, qkOffset);
    }
    if (kh.q.length !== dk || kh.k.length !== dk || kh.values.length !== r) {
      throw new Error(`internal: GDN key head spec shape (q ${kh.q.length}, k ${kh.k.length}, values ${kh.values.length}) ≠ (${dk}, ${dk}, ${r})`);
    }
    for (let i = 0; i < dk; i++) {
      qkv.setRow(h * dk + i, formRow(kh.q[i]!, frame, slotOf, `${what} q`));
      qkv.setRow(keyDim + h * dk + i, formRow(kh.k[i]!, frame, slotOf, `${what} k`));
    }
    kh.values.forEach((vh, j) => {
      if (!vh) return;
      const head = h * r + j;
      if (vh.v.length !== dv || vh.z.length !== dv) throw new Error('internal: GDN value head spec shape');
      dtBias[head] = PINNED_DT_BIAS;
      const offset = vh.vTapOffset ?? 0;
      if (!Number.isInteger(offset) || offset < 0 || offset >= K) throw new Error(`internal: v tap offset ${offset} outside the conv kernel (${K})`);
      for (let c = 0; c < dv; c++) conv[(2 * keyDim + head * dv + c) * K + K - 1 - offset] = 1;
      for (let c = 0; c < dv; c++) {
        qkv.setRow(2 * keyDim + head * dv + c, formRow(vh.v[c]!, frame, slotOf, `${what} v`));
        z.setRow(head * dv + c, formRow(vh.z[c]!, frame, slotOf, `${what} z`));
      }
      b.setRow(head, formRow(vh.b, frame, slotOf, `${what} b`));
      for (const o of vh.out) out.add(slotOf(o.dim), head * dv + o.col, o.weight);
    });
  });
  const norm = new Float32Array(dv).fill(1);
  if (mixer.normWeight) {
    if (mixer.normWeight.length !== dv) throw new Error('internal: GDN norm weight length');
    norm.set(mixer.normWeight);
  }
  return {
    kind: 'linear_attention',
    inProjQkv: qkv.build(`${what}.in_proj_qkv`),
    inProjZ: z.build(`${what}.in_proj_z`),
    inProjB: b.build(`${what}.in_proj_b`),
    inProjA: emptyMatrix(Hv, H),
    conv1d: conv,
    aLog: zeros(Hv),
    dtBias,
    norm,
    outProj: out.build(`${what}.out_proj`),
  };
}

export function assembleAttention(
  mixer: Extract<LayerSpec['mixer'], { kind: 'full_attention' }>,
  cfg: ModelConfig, frame: ResidualFrame, slotOf: SlotMap, layer: number,
): AttentionWeights {
  const H = cfg.hiddenSize;
  const Hq = cfg.numAttentionHeads;
  const Hkv = cfg.numKeyValueHeads;
  const D = cfg.headDim;
  const g = Hq / Hkv;
  if (mixer.heads.length > Hkv) {
    throw new ChipcError('fit.heads', `layer ${layer} needs ${mixer.heads.length} attention key/value heads; the target has ${Hkv}`);
  }
  const what = `layer ${layer} self_attn`;
  const qp = new CsrBuilder(Hq * 2 * D, H);
  const kp = new CsrBuilder(Hkv * D, H);
  const vp = new CsrBuilder(Hkv * D, H);
  const op = new CsrBuilder(H, Hq * D);
  mixer.heads.forEach((kv, hk) => {
    if (!kv) return;
    if (kv.k.length !== D || kv.v.length !== D || kv.queries.length !== g) throw new Error('internal: attention kv head spec shape');
    for (let i = 0; i < D; i++) {
      kp.setRow(hk * D + i, formRow(kv.k[i]!, frame, slotOf, `${what} k`));
      vp.setRow(hk * D + i, formRow(kv.v[i]!, frame, slotOf, `${what} v`));
    }
    kv.queries.forEach((qh, j) => {
      if (!qh) return;
      const h = hk * g + j;
      if (qh.q.length !== D || qh.gate.length !== D) throw new Error('internal: attention query head spec shape');
      for (let i = 0; i < D; i++) {
        qp.setRow(h * 2 * D + i, formRow(qh.q[i]!, frame, slotOf, `${what} q`));
        qp.setRow(h * 2 * D + D + i, formRow(qh.gate[i]!, frame, slotOf, `${what} gate`));
      }
      for (const o of qh.out) op.add(slotOf(o.dim), h * D + o.col, o.weight);
    });
  });
  const qNorm = zeros(D);
  const kNorm = zeros(D);
  if (mixer.qNormWeight) qNorm.set(mixer.qNormWeight);
  if (mixer.kNormWeight) kNorm.set(mixer.kNormWeight);
  return {
    kind: 'full_attention',
    qProj: qp.build(`${what}.q_proj`),
    kProj: kp.build(`${what}.k_proj`),
    vProj: vp.build(`${what}.v_proj`),
    oProj: op.build(`${what}.o_proj`),
    qNorm,
    kNorm,
  };
}

/** Build the whole model. `spec.config` must already have the compiled layer count and types. */
export function assembleModel(spec: ModelSpec): ModelWeights {
  const { config: cfg, frame, slotOf } = spec;
  const H = cfg.hiddenSize;
  if (H !== frame.hidden) throw new Error('internal: config hidden size ≠ frame hidden size');
  if (cfg.numLayers !== spec.layers.length) throw new Error('internal: config layer count ≠ layer specs');
  const layers: LayerWeights[] = spec.layers.map((ls, i) => {
    if (cfg.layerTypes[i] !== ls.mixer.kind) throw new Error(`internal: layer ${i} type mismatch`);
    const mixer = ls.mixer.kind === 'linear_attention'
      ? assembleGdn(ls.mixer, cfg, frame, slotOf, i)
      : assembleAttention(ls.mixer, cfg, frame, slotOf, i);
    return {
      inputLayernorm: zeros(H),
      postAttentionLayernorm: zeros(H),
      mixer,
      mlp: assembleFfn(ls.ffn, cfg, frame, slotOf, i),
    };
  });
  const consts = [...frameConstants(frame)];
  const inv = 1 / frame.normScale;
  const embedTokens = csrFromRows(cfg.vocabSize, H, 'embed_tokens', (t, emit) => {
    for (const [d, v] of consts) emit(d, v);
    spec.embedding(t, (d, v) => emit(slotOf(d), v));
  });
  const lmHead = csrFromRows(cfg.vocabSize, H, 'lm_head', (t, emit) => {
    spec.lmHead(t, (d, w) => emit(slotOf(d), w * inv));
  });
  return { config: cfg, embedTokens, layers, norm: zeros(H), lmHead };
}
