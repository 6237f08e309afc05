/**
 * The generic chip from the chip cache (src/chip/cache.ts): opened when the cache holds one for
 * this compiler, compiled and written into it otherwise. The compile side (build.ts) is imported
 * only on a miss, so that a run of a cached chip loads no part of the compiler.
 */
import crypto from 'node:crypto';
import type { CompileResult } from '../compile.ts';
import type { SaveModelOptions } from '../model/save-weights.ts';
import { getOrBuildChip, type ChipCacheResult } from './cache.ts';
import { genericShape, type GenericChipSpec } from './generic.ts';

/**
 * The cached generic chip of a spec, in bf16 (every chip weight is bf16-exact, so the file holds
 * the compiled values exactly): on a miss `onCompile` is told, the chip compiled and written into
 * the cache, and the CompileResult handed back (`compiled`) so the caller runs it without reading
 * the file again. The cache key: the target's name and a hash of its config, the two sizes.
 */
export async function cachedGenericChip(
  spec: GenericChipSpec,
  opts: { noCache?: boolean; log?: (line: string) => void; onCompile?: () => void; onProgress?: SaveModelOptions['onProgress'] } = {},
): Promise<ChipCacheResult & { compiled: CompileResult | null; compileSeconds: number }> {
  const shape = genericShape(spec);
  const configHash = crypto.createHash('sha256').update(JSON.stringify(spec.target)).digest('hex').slice(0, 16);
  let compiled: CompileResult | null = null;
  let compileSeconds = 0;
  const r = await getOrBuildChip(
    { circuit: 'rv32im', target: spec.targetName, options: { codeBytes: spec.codeBytes, memBytes: spec.memBytes, config: configHash, ...(spec.attentionLayer === true ? { attentionLayer: 1 } : {}), ...(spec.hidden !== undefined ? { hidden: spec.hidden } : {}) }, dtype: 'bf16' },
    async (tmpPath) => {
      opts.onCompile?.();
      const t0 = performance.now();
      const { compileGenericChip, emitChip } = await import('./build.ts');
      compiled = compileGenericChip(spec);
      compileSeconds = (performance.now() - t0) / 1000;
      emitChip(tmpPath, compiled, shape, spec.targetName, { dtype: 'BF16', overwrite: true, onProgress: opts.onProgress });
    },
    { noCache: opts.noCache, log: opts.log },
  );
  return { ...r, compiled, compileSeconds };
}
