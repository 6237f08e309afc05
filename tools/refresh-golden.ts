/**
 * Rewrites fixtures/golden/<example>.tiny.json: the sha256 of every emitted tensor of each example
 * circuit compiled for the tiny target (bf16). Run on purpose after an intended change to the
 * compiler's output, and review the diff: `npx tsx tools/refresh-golden.ts`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadCircuitFile } from '../src/dsl/load.ts';
import { compileCircuit } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { goldenHashes } from '../src/emit/golden.ts';
import { serializeEmitGolden } from '../src/inspect/golden.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
process.chdir(root);
const dir = path.join('fixtures', 'golden');
fs.mkdirSync(dir, { recursive: true });
const examples = fs.readdirSync(path.join('circuits', 'examples')).filter((f) => f.endsWith('.ts')).sort();
const target = resolveTarget('tiny');
for (const f of examples) {
  const ir = await loadCircuitFile(path.join('circuits', 'examples', f));
  const g = goldenHashes(compileCircuit(ir, target.config), target.name);
  const out = path.join(dir, `${ir.name}.tiny.json`);
  fs.writeFileSync(out, serializeEmitGolden(g));
  console.log(`wrote ${out} (${Object.keys(g.tensors).length} tensors)`);
}
