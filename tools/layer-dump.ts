/**
 * Dumps what chipc's reference executor computes for a program's trace, layer by layer, so that
 * another engine can be compared with it bit for bit (tools/hf_layers.py; docs/hf-check.md):
 *
 *   npx tsx tools/layer-dump.ts CKPT --trace TRACE.json [--steps N] -o DIR
 *
 * CKPT is a checkpoint directory or .chip of the chip compiled for the program, TRACE the
 * program's `chipc trace`. The loader prompt is fed one token per forward (a prefill of its first
 * token, then decode steps: `feedLoaderPrompt`, as `chipc run --model` does), then the first N expected tokens
 * (default 64) as decode steps. Writes, atomically (a temporary directory renamed):
 *   - layers.f32: the residual stream after each layer, float32 little-endian,
 *     [layer][position][hidden], positions counting the prompt from 0;
 *   - states.f32: the GDN state of every value head after the last prompt token,
 *     [layer][value head][dk][dv] (S[i][j]: key index i, value index j) — linear_attention layers only;
 *   - meta.json: the shapes, the token ids fed, and the checkpoint and trace paths.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import type { TraceFile } from '../src/cli/commands/trace.ts';
import { feedLoaderPrompt } from '../src/chip/run.ts';
import { Executor } from '../src/exec/executor.ts';
import { loadModel } from '../src/model/load-weights.ts';
import { ChipcError } from '../src/util/errors.ts';

const opts = new Command()
  .argument('<ckpt>', 'checkpoint directory or .chip (the chip compiled for the program)')
  .requiredOption('--trace <file>', 'the program\'s trace (chipc trace)')
  .option('--steps <n>', 'expected tokens to feed after the prompt', '64')
  .requiredOption('-o, --output <dir>', 'the dump directory (must not exist)')
  .parse();
const ckpt = opts.args[0]!;
const { trace: tracePath, steps: stepsText, output } = opts.opts<{ trace: string; steps: string; output: string }>();

function fail(msg: string): never {
  console.error(`layer-dump: error: ${msg}`);
  process.exit(2);
}

const steps = Number(stepsText);
if (!Number.isSafeInteger(steps) || steps < 0) fail(`--steps must be a non-negative integer, not ${stepsText}`);
if (fs.existsSync(output)) fail(`${output} exists; choose a new directory`);
let trace: Partial<TraceFile>;
try {
  trace = JSON.parse(fs.readFileSync(tracePath, 'utf8'));
} catch (e) {
  fail(`cannot read trace ${tracePath}: ${(e as Error).message}`);
}
if (trace.format !== 'chipc-trace' || !Array.isArray(trace.prompt) || !Array.isArray(trace.expected) || trace.prompt.length === 0) {
  fail(`${tracePath} is not a chipc trace (make one with \`chipc trace\`)`);
}
const prompt = trace.prompt;
const fed = [...prompt, ...trace.expected.slice(0, steps)];

let weights;
try {
  weights = loadModel(ckpt, { mode: 'sparse' });
} catch (e) {
  fail(e instanceof ChipcError ? e.message : `cannot load ${ckpt}: ${(e as Error).message}`);
}
const cfg = weights.config;
const L = weights.layers.length;
const H = cfg.hiddenSize;
if (Math.max(...fed) >= cfg.vocabSize) fail(`the trace uses token id ${Math.max(...fed)}; the checkpoint's vocabulary has ${cfg.vocabSize}`);
const gdnLayers = cfg.layerTypes.map((t, i) => (t === 'linear_attention' ? i : -1)).filter((i) => i >= 0);
const stateSize = cfg.linearNumValueHeads * cfg.linearKeyHeadDim * cfg.linearValueHeadDim;

const layers = new Float32Array(L * fed.length * H);
const states = new Float32Array(gdnLayers.length * stateSize);
const ex = new Executor(weights, { profile: 'f32', order: { kind: 'sequential' }, path: 'sparse' });
ex.addHook((ev) => {
  layers.set(ev.residualOut, (ev.layer * fed.length + ev.position) * H);
  if (ev.position === prompt.length - 1 && ev.gdnState) {
    const base = gdnLayers.indexOf(ev.layer) * stateSize;
    ev.gdnState.forEach((s, h) => states.set(s, base + h * s.length));
  }
});
feedLoaderPrompt(ex, prompt);
for (const t of fed.slice(prompt.length)) ex.decode(t);

const tmp = `${output}.tmp-${process.pid}`;
fs.mkdirSync(tmp, { recursive: true });
const le = (a: Float32Array) => {
  // float32 little-endian on any host
  const b = Buffer.alloc(a.length * 4);
  for (let i = 0; i < a.length; i++) b.writeFloatLE(a[i]!, i * 4);
  return b;
};
fs.writeFileSync(path.join(tmp, 'layers.f32'), le(layers));
fs.writeFileSync(path.join(tmp, 'states.f32'), le(states));
fs.writeFileSync(path.join(tmp, 'meta.json'), JSON.stringify({
  format: 'chipc-layer-dump', version: 1, checkpoint: ckpt, trace: tracePath,
  layers: L, positions: fed.length, hidden: H, promptTokens: prompt.length, steps: fed.length - prompt.length,
  gdnLayers, stateShape: [cfg.linearNumValueHeads, cfg.linearKeyHeadDim, cfg.linearValueHeadDim], tokens: fed,
}) + '\n');
fs.renameSync(tmp, output);
console.log(`${output}: ${L} layers × ${fed.length} positions × ${H} (prompt ${prompt.length}, steps ${fed.length - prompt.length}), GDN states of ${gdnLayers.length} layers after the prompt`);
