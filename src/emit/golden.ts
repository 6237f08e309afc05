/**
 * Golden hashes of emitted checkpoints: the sha256 of every tensor's bytes exactly as the writer
 * streams them (dtype, layout and values), plus config.json and the manifest — computed from the
 * tensor sources without writing a file. fixtures/golden/ holds them for the example circuits;
 * `npx tsx tools/refresh-golden.ts` rewrites them on purpose (review the diff before committing).
 */
import { createHash } from 'node:crypto';
import type { CompileResult } from '../compile.ts';
import { hfConfigJson } from '../model/hf-config.ts';
import { modelWeightsToSources, type EmitDType } from '../model/save-weights.ts';
import { buildManifest } from './manifest.ts';

export interface GoldenHashes {
  circuit: string;
  target: string;
  dtype: EmitDType;
  tensors: Record<string, { dtype: string; shape: number[]; sha256: string }>;
  configSha256: string;
  manifestSha256: string;
}

const sha = (b: Uint8Array | string) => createHash('sha256').update(b).digest('hex');

export function goldenHashes(res: CompileResult, target: string, dtype: EmitDType = 'BF16'): GoldenHashes {
  const tensors: GoldenHashes['tensors'] = {};
  const sources = modelWeightsToSources(res.weights, dtype).slice().sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const s of sources) {
    const h = createHash('sha256');
    for (const c of s.chunks()) h.update(c);
    tensors[s.name] = { dtype: s.dtype, shape: s.shape, sha256: h.digest('hex') };
  }
  const cfg = { ...res.weights.config, dtype: dtype === 'BF16' ? ('bfloat16' as const) : ('float32' as const) };
  return {
    circuit: res.ir.name,
    target,
    dtype,
    tensors,
    configSha256: sha(hfConfigJson(cfg)),
    manifestSha256: sha(JSON.stringify(buildManifest(res, target))),
  };
}
