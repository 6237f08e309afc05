/**
 * The merge plan (docs/merge.md): how a compiled chip and a host model of the same family share one
 * checkpoint. Pure functions of the two configs; no I/O.
 *
 * Layout of the merged residual stream (hidden H'): host dims [0, H_host), chip dims
 * [H_host, H_host + H_chip), zero dims after. H' is the smallest H' = 4^a·H_host = 4^b·H_chip
 * (b ≥ 1) with H_host + H_chip ≤ H'. Each block's residual is scaled by s = √(H'/H_block), a power
 * of two: its embedding rows and the matrices that write the residual (o_proj, out_proj,
 * down_proj) are multiplied by s, the matrices that read a normalised residual (every input
 * projection, the router, the LM head) by 1/s. Then Σx'² = s²·Σx² and H' = s²·H_block, so every
 * whole-vector RMSNorm sees exactly the same mean (and the same eps) as in the block alone, its
 * output is exactly s times the original, and every reader's products are bit-identical.
 */
import { ChipcError } from '../util/errors.ts';
import { isMoeLayer, type ModelConfig } from '../model/config.ts';
import { validateModelConfig } from '../model/hf-config.ts';

export interface MergePlan {
  host: ModelConfig;
  chip: ModelConfig;
  merged: ModelConfig;
  /** H_host, H_chip, H'. */
  hostHidden: number;
  chipHidden: number;
  hidden: number;
  /** Residual scale of each block: √(H'/H_block), a power of two. */
  hostScale: number;
  chipScale: number;
  /** Chip token t is merged id chipIdOffset + t (= the host's vocab_size). */
  chipIdOffset: number;
  /** The chip's token alphabet (ids 0 … chipAlphabet−1 of the chip), copied into the merged vocabulary. */
  chipAlphabet: number;
  /** Rows appended to the vocabulary: chipAlphabet rounded up to a multiple of 256. */
  chipVocabRows: number;
  /** Chip layers come first: merged layer l < chipLayers is chip layer l, else host layer l − chipLayers. */
  chipLayers: number;
  /** Notes for the report (e.g. a different eps). */
  notes: string[];
}

/**
 * Written beside the merged checkpoint: the plan's numbers (id offset, scales, layer split). Here,
 * not in merge.ts, so that a reader of checkpoints (chip/run.ts) needs no part of the merger.
 */
export const MERGE_INFO_FILE = 'chipc-merge.json';

/** Config fields both blocks must agree on (they share one config.json). */
const SHARED_FIELDS: [keyof ModelConfig, string][] = [
  ['intermediateSize', 'intermediate_size'],
  ['numAttentionHeads', 'num_attention_heads'],
  ['numKeyValueHeads', 'num_key_value_heads'],
  ['headDim', 'head_dim'],
  ['partialRotaryFactor', 'partial_rotary_factor'],
  ['ropeTheta', 'rope_theta'],
  ['linearNumKeyHeads', 'linear_num_key_heads'],
  ['linearNumValueHeads', 'linear_num_value_heads'],
  ['linearKeyHeadDim', 'linear_key_head_dim'],
  ['linearValueHeadDim', 'linear_value_head_dim'],
  ['linearConvKernelDim', 'linear_conv_kernel_dim'],
];

/** True when n is 4^k for an integer k ≥ 0. */
function isPowerOfFour(n: number): boolean {
  if (!Number.isSafeInteger(n) || n < 1) return false;
  while (n % 4 === 0) n /= 4;
  return n === 1;
}

/**
 * The smallest H' with H'/H_host and H'/H_chip powers of four, H'/H_chip ≥ 4 and
 * H_host + H_chip ≤ H'; null when H_chip/H_host is not a power of four (either way round).
 */
export function mergedHidden(hostHidden: number, chipHidden: number): number | null {
  const big = Math.max(hostHidden, chipHidden);
  const small = Math.min(hostHidden, chipHidden);
  if (big % small !== 0 || !isPowerOfFour(big / small)) return null;
  let h = Math.max(hostHidden, 4 * chipHidden);
  while (h < hostHidden + chipHidden) h *= 4;
  return h;
}

/** Build and check the plan; every incompatibility is a ChipcError naming the fields. */
export function planMerge(host: ModelConfig, chip: ModelConfig, chipAlphabet: number): MergePlan {
  validateModelConfig(host);
  validateModelConfig(chip);
  if (host.family !== chip.family) {
    throw new ChipcError('merge.family',
      `the chip is a ${chip.family} checkpoint but the host is ${host.family}: compile the chip for the host's shape (chipc compile CIRCUIT --target HOST_DIR/config.json)`);
  }
  const diffs = SHARED_FIELDS.filter(([k]) => host[k] !== chip[k])
    .map(([k, name]) => `${name} (host ${String(host[k])}, chip ${String(chip[k])})`);
  if (diffs.length > 0) {
    throw new ChipcError('merge.shape',
      `the chip's layer shapes differ from the host's: ${diffs.join(', ')}; compile the chip with --target HOST_DIR/config.json`);
  }
  for (let i = 0; i < chip.numLayers; i++) {
    if (isMoeLayer(chip, i)) throw new ChipcError('merge.shape', `chip layer ${i} is an MoE layer; compiled layers must be dense (mlp_only_layers)`);
  }
  if (!Number.isSafeInteger(chipAlphabet) || chipAlphabet < 1 || chipAlphabet > chip.vocabSize) {
    throw new ChipcError('merge.vocab', `the chip's alphabet (${chipAlphabet} tokens) must be between 1 and its vocab_size ${chip.vocabSize}`);
  }
  const hidden = mergedHidden(host.hiddenSize, chip.hiddenSize);
  if (hidden === null) {
    const sizes: number[] = [];
    for (let h = host.hiddenSize; h >= 8 && sizes.length < 3; h /= 4) if (Number.isInteger(h)) sizes.push(h);
    throw new ChipcError('merge.fit',
      `the chip's hidden size ${chip.hiddenSize} does not fit the host's ${host.hiddenSize}: the ratio must be a power of four ` +
      `(so that RMSNorm means stay exact); compile the chip with --hidden ${[...sizes, host.hiddenSize * 4].join(' or ')}`);
  }
  const hostScale = Math.sqrt(hidden / host.hiddenSize);
  const chipScale = Math.sqrt(hidden / chip.hiddenSize);
  const chipVocabRows = Math.ceil(chipAlphabet / 256) * 256;
  const L = chip.numLayers;
  const notes: string[] = [];
  if (chip.rmsNormEps !== host.rmsNormEps) {
    notes.push(`the chip was compiled with rms_norm_eps ${chip.rmsNormEps}; the merged model uses the host's ${host.rmsNormEps}`);
  }
  let moe = host.moe;
  if (moe !== null) {
    // decoder_sparse_step cannot express a shifted pattern; step 1 plus an explicit list can.
    const dense: number[] = [];
    for (let i = 0; i < L; i++) dense.push(i);
    for (let i = 0; i < host.numLayers; i++) if (!isMoeLayer(host, i)) dense.push(L + i);
    moe = { ...moe, decoderSparseStep: 1, mlpOnlyLayers: dense };
  }
  const merged: ModelConfig = {
    ...host,
    vocabSize: host.vocabSize + chipVocabRows,
    hiddenSize: hidden,
    numLayers: L + host.numLayers,
    layerTypes: [...chip.layerTypes, ...host.layerTypes],
    tieWordEmbeddings: false,
    moe,
  };
  validateModelConfig(merged);
  return {
    host, chip, merged, hostHidden: host.hiddenSize, chipHidden: chip.hiddenSize, hidden,
    hostScale, chipScale, chipIdOffset: host.vocabSize, chipAlphabet, chipVocabRows, chipLayers: L, notes,
  };
}
