/**
 * Golden hashes of emitted checkpoints: the sha256 of every tensor's bytes exactly as the writer
 * streams them (dtype, layout and values), plus config.json and the manifest — computed from the
 * tensor sources without writing a file. The record and its file format are inspect/golden.ts
 * EmitGolden (the same tensor entries `chipc diff --golden` checks). fixtures/golden/ holds them
 * for the example circuits; `npx tsx tools/refresh-golden.ts` rewrites them on purpose (review the
 * diff before committing).
 */
import type { CompileResult } from '../compile.ts';
import { hfConfigJson } from '../model/hf-config.ts';
import { modelWeightsToSources, type EmitDType } from '../model/save-weights.ts';
import { compareCodePoints } from '../safetensors/reader.ts';
import { sha256Hex, sha256OfChunks, type EmitGolden, type GoldenTensor } from '../inspect/golden.ts';
import { buildManifest } from './manifest.ts';

export function goldenHashes(res: CompileResult, target: string, dtype: EmitDType = 'BF16'): EmitGolden {
  const tensors: Record<string, GoldenTensor> = {};
  const sources = modelWeightsToSources(res.weights, dtype).slice().sort((a, b) => compareCodePoints(a.name, b.name));
  for (const s of sources) tensors[s.name] = { dtype: s.dtype, shape: s.shape, sha256: sha256OfChunks(s.chunks()) };
  const cfg = { ...res.weights.config, dtype: dtype === 'BF16' ? ('bfloat16' as const) : ('float32' as const) };
  return {
    circuit: res.ir.name,
    target,
    dtype,
    tensors,
    configSha256: sha256Hex(hfConfigJson(cfg)),
    manifestSha256: sha256Hex(JSON.stringify(buildManifest(res, target))),
  };
}
