/**
 * Pass (of the report) — count non-zeros: the non-zero elements of a compiled layer's tensors, as
 * `chipc inspect` counts them (the per-layer report's `nonZeros`; bench/emit-full.ts).
 */
import type { ModelWeights } from '../model/weights.ts';

function nnz(m: { csr?: { values: Float32Array }; dense?: Float32Array }): number {
  if (m.csr) return m.csr.values.length;
  let c = 0;
  for (const v of m.dense ?? []) if (v !== 0) c++;
  return c;
}

function nnzVec(v: Float32Array): number {
  let c = 0;
  for (const x of v) if (x !== 0) c++;
  return c;
}

/** Non-zero elements of every tensor of layer i (as `chipc inspect` counts them). */
export function layerNonZeros(w: ModelWeights, i: number): number {
  const l = w.layers[i]!;
  let n = nnzVec(l.inputLayernorm) + nnzVec(l.postAttentionLayernorm);
  if (l.mixer.kind === 'linear_attention') {
    const g = l.mixer;
    n += nnz(g.inProjQkv) + nnz(g.inProjZ) + nnz(g.inProjB) + nnz(g.inProjA) + nnz(g.outProj);
    n += nnzVec(g.conv1d) + nnzVec(g.aLog) + nnzVec(g.dtBias) + nnzVec(g.norm);
  } else {
    const a = l.mixer;
    n += nnz(a.qProj) + nnz(a.kProj) + nnz(a.vProj) + nnz(a.oProj) + nnzVec(a.qNorm) + nnzVec(a.kNorm);
  }
  if (l.mlp.kind === 'dense') n += nnz(l.mlp.gateProj) + nnz(l.mlp.upProj) + nnz(l.mlp.downProj);
  return n;
}
