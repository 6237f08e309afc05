/**
 * Writes the bundled tiny checkpoint `fixtures/tiny/` (config.json + model.safetensors, float32):
 * randomModelWeights(tiny target, seed 1). Deterministic; re-running rewrites identical bytes.
 * Usage: npx tsx tools/make-tiny-fixture.ts [outDir]
 */
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveTarget } from '../src/model/targets.ts';
import { randomModelWeights } from '../src/model/random-weights.ts';
import { saveModel } from '../src/model/save-weights.ts';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const outDir = process.argv[2] ?? path.join(repoRoot, 'fixtures', 'tiny');
const { config } = resolveTarget('tiny');
const weights = randomModelWeights(config, 1);
const res = saveModel(outDir, weights, { dtype: 'F32', overwrite: true });
console.log(`wrote ${res.files.join(', ')} to ${path.relative(process.cwd(), outDir) || '.'} (${res.totalParameters} parameters, ${res.totalSize} bytes of tensor data)`);
