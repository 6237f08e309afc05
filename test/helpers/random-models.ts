/** Random models the executor tests share. */
import { densifyMatrix, randomModelWeights, sparsifyMatrix } from '../../src/model/random-weights.ts';
import { resolveTarget } from '../../src/model/targets.ts';
import type { Matrix, ModelWeights } from '../../src/model/weights.ts';

/** The tiny target's random model with about a third of every matrix's entries kept, CSR only. */
export function sparseRandomModel(seed: number): ModelWeights {
  const w = randomModelWeights(resolveTarget('tiny').config, seed, { normWeightNoise: true });
  let state = seed * 2654435761 >>> 0;
  const keep = (): boolean => { state = (Math.imul(state, 1664525) + 1013904223) >>> 0; return state % 3 === 0; };
  const thin = (m: Matrix): Matrix => {
    const d = densifyMatrix(m);
    for (let i = 0; i < d.dense!.length; i++) if (!keep()) d.dense![i] = 0;
    return { rows: d.rows, cols: d.cols, csr: sparsifyMatrix(d).csr };
  };
  for (const l of w.layers) {
    const m = l.mixer;
    if (m.kind === 'linear_attention') {
      Object.assign(m, {
        inProjQkv: thin(m.inProjQkv), inProjZ: thin(m.inProjZ), inProjB: thin(m.inProjB), inProjA: thin(m.inProjA), outProj: thin(m.outProj),
      });
    } else Object.assign(m, { qProj: thin(m.qProj), kProj: thin(m.kProj), vProj: thin(m.vProj), oProj: thin(m.oProj) });
    const f = l.mlp;
    if (f.kind === 'dense') Object.assign(f, { gateProj: thin(f.gateProj), upProj: thin(f.upProj), downProj: thin(f.downProj) });
  }
  const lm = thin(w.lmHead);
  return { ...w, embedTokens: thin(w.embedTokens), lmHead: lm };
}

/** Deterministic LCG in [0, 1). */
export function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => { s = (Math.imul(s, 1103515245) + 12345) >>> 0; return s / 4294967296; };
}

/** Values the SwiGLU tests draw from: ±0, signs, tiny and large magnitudes, saturated gates. */
export const SPECIAL = [0, -0, 1, -1, 1e-30, -1e-30, 3e3, -2.5, 0.1, 1e-20, 20, -90];

/** A rows×cols matrix with at most `perRow` entries per row (some rows empty), dense and CSR-only forms. */
export function fewPerRow(rnd: () => number, rows: number, cols: number, perRow: number): { dense: Matrix; csr: Matrix } {
  const d = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    if (rnd() < 0.3) continue;
    const k = 1 + Math.floor(rnd() * perRow);
    for (let t = 0; t < k; t++) d[r * cols + Math.floor(rnd() * cols)] = SPECIAL[Math.floor(rnd() * SPECIAL.length)] || 0.75;
  }
  return { dense: { rows, cols, dense: d }, csr: { rows, cols, csr: sparsifyMatrix({ rows, cols, dense: d }).csr } };
}
