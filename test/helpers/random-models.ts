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
