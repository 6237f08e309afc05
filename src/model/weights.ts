/**
 * In-memory model weights in one family-neutral layout (the Qwen3.5 split layout: q|k|v rows of
 * the GDN input projection de-interleaved, head-major). Loading converts each family's on-disk
 * tensors into this; saving converts back. The executor only ever sees this layout.
 *
 * A matrix is PyTorch `[out, in]` row-major (y = x·Wᵀ). It may be held dense, sparse (CSR), or
 * both: at real model widths compiled checkpoints are > 99.9 % zero and are loaded sparse-only.
 */
import type { ModelConfig } from './config.ts';

export interface CsrMatrix {
  /** rowPtr[r]..rowPtr[r+1] index colIdx/values; length rows + 1. */
  rowPtr: Uint32Array;
  colIdx: Uint32Array;
  values: Float32Array;
}

export interface Matrix {
  rows: number;
  cols: number;
  /** rows × cols, row-major. Absent for matrices loaded sparse-only. */
  dense?: Float32Array;
  /** Non-zero entries only (a stored −0 counts as zero; see exec/matmul.ts for sign handling). */
  csr?: CsrMatrix;
  /**
   * Row r into `out` (cols entries: the row's values, +0 where it stores ±0 or nothing — what
   * expanding its CSR row gives), for a matrix whose rows are read on demand (model/lazy-rows.ts):
   * its `csr` is then a getter that builds the whole CSR on first access, so a reader that needs
   * single rows (an embedding lookup) reads them here and never touches `csr`.
   */
  readRow?: (r: number, out: Float32Array) => void;
}

/** Whether m is held sparse only: a CSR (built or on demand) and no dense form; reads no lazy CSR. */
export function sparseOnly(m: Matrix): boolean {
  return m.dense === undefined && (m.readRow !== undefined || m.csr !== undefined);
}

export interface GdnWeights {
  kind: 'linear_attention';
  /** [2·key_dim + value_dim, H], rows [q | k | v] head-major. */
  inProjQkv: Matrix;
  /** [value_dim, H], value-head-major. */
  inProjZ: Matrix;
  /** [Hv, H]. */
  inProjB: Matrix;
  /** [Hv, H]. */
  inProjA: Matrix;
  /** conv_dim × K, `conv1d.weight[c, 0, j]` at c·K + j; tap K−1 multiplies the current token. */
  conv1d: Float32Array;
  /** [Hv]. */
  aLog: Float32Array;
  /** [Hv]. */
  dtBias: Float32Array;
  /** [dv], plain weight (not 1 + w). */
  norm: Float32Array;
  /** [H, value_dim]. */
  outProj: Matrix;
}

export interface AttentionWeights {
  kind: 'full_attention';
  /** [Hq·2D, H], head-interleaved query/gate rows exactly as on disk (docs/host-architecture.md §2.5). */
  qProj: Matrix;
  kProj: Matrix;
  vProj: Matrix;
  oProj: Matrix;
  /** [D], zero-centred (1 + w). */
  qNorm: Float32Array;
  kNorm: Float32Array;
}

export interface DenseMlpWeights {
  kind: 'dense';
  gateProj: Matrix;
  upProj: Matrix;
  downProj: Matrix;
}

export interface MoeMlpWeights {
  kind: 'moe';
  /** Router, [E, H]. */
  gate: Matrix;
  experts: { gateProj: Matrix; upProj: Matrix; downProj: Matrix }[];
  sharedExpert: { gateProj: Matrix; upProj: Matrix; downProj: Matrix };
  /** [1, H]. */
  sharedExpertGate: Matrix;
}

export interface LayerWeights {
  /** [H], zero-centred (1 + w). */
  inputLayernorm: Float32Array;
  postAttentionLayernorm: Float32Array;
  mixer: GdnWeights | AttentionWeights;
  mlp: DenseMlpWeights | MoeMlpWeights;
}

export interface ModelWeights {
  config: ModelConfig;
  /** [vocab, H]. */
  embedTokens: Matrix;
  layers: LayerWeights[];
  /** [H], zero-centred. */
  norm: Float32Array;
  /** [vocab, H]; the same object as embedTokens when embeddings are tied. */
  lmHead: Matrix;
}
