/**
 * Decode speed of the reference executor on a compiled chip checkpoint (sparse path, sequential
 * order): prefill of the prompt [BOS, J(0)] = [247044, 131072], then N decode steps with greedy
 * feedback (each step's argmax is the next input), timed per token with a per-phase breakdown
 * (Executor.setPhaseTimes; the un-profiled run is timed separately so the probes do not inflate it).
 *
 *   npx chipc compile circuits/rv32im/cpu.ts --target chip-test -o DIR    # makes a checkpoint dir
 *   npx tsx bench/chip-speed.ts DIR [--tokens N] [--profile f32|bf16] [--no-phases] [--json]
 *
 * With an empty code RAM the chip executes all-zero instructions, which is fine for timing.
 * Prints ms/token and tokens/s of the decode steps (prefill excluded) and the phase table.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Executor, argmax } from '../src/exec/executor.ts';
import type { PhaseTimes } from '../src/exec/profile.ts';
import { loadModel } from '../src/model/load-weights.ts';

const PROMPT = [247044, 131072];

function usage(msg: string): never {
  console.error(`chip-speed: ${msg}\nusage: npx tsx bench/chip-speed.ts DIR [--tokens N] [--profile f32|bf16] [--no-phases] [--json]`);
  process.exit(2);
}

const argv = process.argv.slice(2);
let dir: string | undefined;
let tokens = 300;
let profile: 'f32' | 'bf16' = 'f32';
let phases = true;
let json = false;
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--tokens') tokens = Number(argv[++i]);
  else if (a === '--profile') profile = argv[++i] as 'f32' | 'bf16';
  else if (a === '--no-phases') phases = false;
  else if (a === '--json') json = true;
  else if (a.startsWith('--')) usage(`unknown option ${a}`);
  else if (dir === undefined) dir = a;
  else usage(`unexpected argument ${a}`);
}
if (dir === undefined) usage('missing checkpoint directory');
if (!Number.isInteger(tokens) || tokens < 1) usage('--tokens must be a positive integer');
if (profile !== 'f32' && profile !== 'bf16') usage('--profile must be f32 or bf16');
if (!fs.existsSync(path.join(dir, 'config.json'))) usage(`${dir} has no config.json (compile a checkpoint first)`);

const t0 = performance.now();
const weights = loadModel(dir, { mode: 'sparse' });
const loadMs = performance.now() - t0;

/** Prefill + `n` greedy decode steps; returns the decode ms, the prefill ms and the emitted ids. */
function run(n: number, times: PhaseTimes | null): { decodeMs: number; prefillMs: number; ids: number[] } {
  const ex = new Executor(weights, { profile, order: { kind: 'sequential' }, path: 'sparse' });
  const p0 = performance.now();
  let last = argmax(ex.prefill(PROMPT)[0]);
  const prefillMs = performance.now() - p0;
  ex.setPhaseTimes(times);
  const ids = [last];
  const d0 = performance.now();
  for (let i = 0; i < n; i++) {
    const logits = ex.decode(last);
    const a0 = times ? performance.now() : 0;
    last = argmax(logits);
    if (times) times.argmax = (times.argmax ?? 0) + (performance.now() - a0);
    ids.push(last);
  }
  return { decodeMs: performance.now() - d0, prefillMs, ids };
}

run(Math.min(tokens, 20), null); // JIT warm-up
const plain = run(tokens, null);
const msPerToken = plain.decodeMs / tokens;
let times: PhaseTimes | null = null;
let profiledMs = 0;
if (phases) {
  times = {};
  const r = run(tokens, times);
  profiledMs = r.decodeMs;
  if (r.ids.join(',') !== plain.ids.join(',')) throw new Error('profiled run emitted different tokens');
}
const c = weights.config;
const distinct = new Set(plain.ids).size;
if (json) {
  console.log(JSON.stringify({
    dir: path.basename(path.resolve(dir)), profile, tokens, loadMs, prefillMs: plain.prefillMs, msPerToken,
    tokensPerSecond: 1000 / msPerToken, phasesMsPerToken: times && Object.fromEntries(Object.entries(times).map(([k, v]) => [k, v / tokens])),
  }));
} else {
  console.log(`checkpoint: ${c.numLayers} layers, hidden ${c.hiddenSize}, vocab ${c.vocabSize}, FFN ${c.intermediateSize} (loaded in ${Math.round(loadMs)} ms)`);
  console.log(`profile ${profile}, sequential, sparse; prompt [${PROMPT.join(', ')}] prefill ${plain.prefillMs.toFixed(1)} ms; ${tokens} decode steps (${distinct} distinct ids)`);
  console.log(`decode: ${msPerToken.toFixed(3)} ms/token, ${(1000 / msPerToken).toFixed(1)} tokens/s`);
  if (times) {
    console.log(`phases (profiled run: ${(profiledMs / tokens).toFixed(3)} ms/token):`);
    const rows = Object.entries(times).sort((a, b) => b[1] - a[1]);
    for (const [k, v] of rows) {
      console.log(`  ${k.padEnd(16)} ${(v / tokens).toFixed(4).padStart(9)} ms/token  ${(100 * v / profiledMs).toFixed(1).padStart(5)} %`);
    }
  }
}
