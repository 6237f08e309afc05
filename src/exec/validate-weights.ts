/**
 * The checks the executor makes of in-memory weights before it runs them: every tensor shape the
 * forward pass touches against the config, so a bad checkpoint fails with the tensor's name
 * instead of deep inside a matmul; and the list of every matrix, whose storage picks the default
 * matmul path.
 */
import { ChipcError } from '../util/errors.ts';
import { isMoeLayer } from '../model/config.ts';
import type { Matrix, ModelWeights } from '../model/weights.ts';
import { gdnDimsOf } from './gdn-cache.ts';

/** Every matrix of the model, the embedding and LM head first. */
export function allMatrices(w: ModelWeights): Matrix[] {
  const out: Matrix[] = [w.embedTokens, w.lmHead];
  for (const l of w.layers) {
    const m = l.mixer;
    if (m.kind === 'linear_attention') out.push(m.inProjQkv, m.inProjZ, m.inProjB, m.inProjA, m.outProj);
    else out.push(m.qProj, m.kProj, m.vProj, m.oProj);
    const f = l.mlp;
    if (f.kind === 'dense') out.push(f.gateProj, f.upProj, f.downProj);
    else {
      out.push(f.gate, f.sharedExpertGate, f.sharedExpert.gateProj, f.sharedExpert.upProj, f.sharedExpert.downProj);
      for (const e of f.experts) out.push(e.gateProj, e.upProj, e.downProj);
    }
  }
  return out;
}

function checkMatrix(name: string, m: Matrix, rows: number, cols: number): void {
  if (m.rows !== rows || m.cols !== cols) {
    throw new ChipcError('exec.bad-weights', `${name} is ${m.rows}×${m.cols}, expected ${rows}×${cols}`);
  }
  if (!m.dense && !m.readRow && !m.csr) throw new ChipcError('exec.bad-weights', `${name} has neither dense nor CSR data`);
}

function checkVec(name: string, v: Float32Array, n: number): void {
  if (!(v instanceof Float32Array) || v.length !== n) {
    throw new ChipcError('exec.bad-weights', `${name} has length ${v?.length}, expected ${n}`);
  }
}

/** Validates every tensor shape the forward pass touches against the config. */
export function validateWeights(w: ModelWeights): void {
  const c = w.config;
  const H = c.hiddenSize;
  if (w.layers.length !== c.numLayers || c.layerTypes.length !== c.numLayers) {
    throw new ChipcError('exec.bad-weights', `weights have ${w.layers.length} layers, config ${c.numLayers} (layer_types ${c.layerTypes.length})`);
  }
  checkMatrix('embed_tokens', w.embedTokens, c.vocabSize, H);
  checkMatrix('lm_head', w.lmHead, c.vocabSize, H);
  checkVec('norm', w.norm, H);
  if (c.numAttentionHeads % c.numKeyValueHeads !== 0) {
    throw new ChipcError('exec.bad-config', `num_attention_heads (${c.numAttentionHeads}) must be a multiple of num_key_value_heads (${c.numKeyValueHeads})`);
  }
  for (let i = 0; i < c.numLayers; i++) {
    const l = w.layers[i];
    const p = `layer ${i}`;
    checkVec(`${p} input_layernorm`, l.inputLayernorm, H);
    checkVec(`${p} post_attention_layernorm`, l.postAttentionLayernorm, H);
    const m = l.mixer;
    if (m.kind !== c.layerTypes[i]) {
      throw new ChipcError('exec.bad-weights', `${p} has a ${m.kind} mixer but layer_types says ${c.layerTypes[i]}`);
    }
    if (m.kind === 'linear_attention') {
      const d = gdnDimsOf(c);
      checkMatrix(`${p} in_proj_qkv`, m.inProjQkv, d.convDim, H);
      checkMatrix(`${p} in_proj_z`, m.inProjZ, d.valueDim, H);
      checkMatrix(`${p} in_proj_b`, m.inProjB, d.hv, H);
      checkMatrix(`${p} in_proj_a`, m.inProjA, d.hv, H);
      checkMatrix(`${p} out_proj`, m.outProj, H, d.valueDim);
      checkVec(`${p} conv1d`, m.conv1d, d.convDim * d.K);
      checkVec(`${p} A_log`, m.aLog, d.hv);
      checkVec(`${p} dt_bias`, m.dtBias, d.hv);
      checkVec(`${p} linear_attn.norm`, m.norm, d.dv);
    } else {
      const D = c.headDim;
      checkMatrix(`${p} q_proj`, m.qProj, c.numAttentionHeads * 2 * D, H);
      checkMatrix(`${p} k_proj`, m.kProj, c.numKeyValueHeads * D, H);
      checkMatrix(`${p} v_proj`, m.vProj, c.numKeyValueHeads * D, H);
      checkMatrix(`${p} o_proj`, m.oProj, H, c.numAttentionHeads * D);
      checkVec(`${p} q_norm`, m.qNorm, D);
      checkVec(`${p} k_norm`, m.kNorm, D);
    }
    const f = l.mlp;
    if (f.kind === 'dense') {
      checkMatrix(`${p} gate_proj`, f.gateProj, c.intermediateSize, H);
      checkMatrix(`${p} up_proj`, f.upProj, c.intermediateSize, H);
      checkMatrix(`${p} down_proj`, f.downProj, H, c.intermediateSize);
    } else {
      const moe = c.moe;
      if (!moe) throw new ChipcError('exec.bad-weights', `${p} has an MoE block but the config has no MoE settings`);
      checkMatrix(`${p} router`, f.gate, moe.numExperts, H);
      if (f.experts.length !== moe.numExperts) {
        throw new ChipcError('exec.bad-weights', `${p} has ${f.experts.length} experts, config ${moe.numExperts}`);
      }
      checkMatrix(`${p} shared_expert_gate`, f.sharedExpertGate, 1, H);
    }
    if ((f.kind === 'moe') !== isMoeLayer(c, i)) {
      throw new ChipcError('exec.bad-weights', `${p} has a ${f.kind} MLP but the config says ${isMoeLayer(c, i) ? 'moe' : 'dense'}`);
    }
  }
}
