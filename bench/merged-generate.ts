/**
 * Arithmetic typed into the prompt of a merged model, run by plain `generate()` in Hugging Face
 * transformers (docs/hf-check.md "A merged model"):
 *  1. a synthetic host checkpoint: random weights, qwen3_5_text, the chip-test layer shape (GDN
 *     heads, MLP width), hidden --host-hidden (320), --host-layers (2: linear attention, then full
 *     attention, so that transformers' cache can report a length), --host-vocab ids (4,096);
 *  2. the generic chip (`chipc cpu`) compiled for the host, at the host's hidden size times the
 *     smallest power of four that holds it (docs/merge.md);
 *  3. `chipc merge`: one dense checkpoint directory, chip layers first, chip ids after the host's;
 *  4. per problem of bench/bignum-problems.ts (seed --seed, the problems --problems, e.g.
 *     `mul:0,div:0`; `mul:min` is the one of the 40 with the shortest line, the default
 *     `mul:min,div:min`; `all` is the REPL bench's 80): `chipc trace` of the bundled interpreter with the problem's line as console
 *     input, on the merged model (the ids offset by the host's vocabulary), and the golden console
 *     compared with BigInt;
 *  5. with --python PY: `tools/hf_check.py MERGED --trace T --sparse-linear --dtype D` for each trace
 *     and dtype (--dtypes float32,bfloat16): the loader prompt and the line in one generate() call,
 *     every generated token compared with the golden stream to HALT.
 *
 *   npx tsx bench/merged-generate.ts [--problems mul:min,div:min|all] [--seed 31] [--python PY] [--dtypes float32]
 *                                    [--work DIR] [--host-hidden 320] [--host-layers 2] [--host-vocab 4096]
 *
 * Prints one JSON line per step and per check. --work keeps the files there (and reuses a host,
 * chip and merged model already written there); without it they go to a temporary directory that
 * is removed at the end. Exit 1 when an answer or a generated token is wrong.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultChipSizes, genericShape, type GenericChipSpec } from '../src/chip/generic.ts';
import { compileGenericChip, emitChip } from '../src/chip/build.ts';
import { mergeCheckpoints } from '../src/merge/merge.ts';
import type { ModelConfig } from '../src/model/config.ts';
import { randomModelWeights } from '../src/model/random-weights.ts';
import { saveModel } from '../src/model/save-weights.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { roundBf16 } from '../src/exec/numeric.ts';
import { decodeToken } from '../riscv/protocol.ts';
import { bignumProblems } from './bignum-problems.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const INTERP = path.join(ROOT, 'fixtures', 'firmware', 'interp.elf');

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1]! : dflt;
}

const seed = Number(arg('--seed', '31'));
const problemsArg = arg('--problems', 'mul:min,div:min');
const picks = (problemsArg === 'all' ? Array.from({ length: 80 }, (_, i) => (i < 40 ? `mul:${i}` : `div:${i - 40}`)) : problemsArg.split(',')).map((s) => {
  const [kind, i] = s.split(':');
  if ((kind !== 'mul' && kind !== 'div') || !/^(\d+|min)$/.test(i ?? '')) throw new Error(`--problems: "${s}" is not mul:N, div:N, mul:min or div:min`);
  return { kind, index: i === 'min' ? -1 : Number(i) } as const;
});
const python = process.argv.includes('--python') ? arg('--python', 'python3') : null;
const dtypes = arg('--dtypes', 'float32').split(',');
const hostHidden = Number(arg('--host-hidden', '320'));
const hostLayers = Number(arg('--host-layers', '2'));
const hostVocab = Number(arg('--host-vocab', '4096'));
const keep = process.argv.includes('--work');
const work = keep ? path.resolve(arg('--work', '')) : fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-merged-generate-'));
fs.mkdirSync(work, { recursive: true });
const secs = (t0: number) => Number(((performance.now() - t0) / 1000).toFixed(1));
const log = (o: object) => console.log(JSON.stringify(o));

function chipc(...args: string[]): string {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'chipc.js'), ...args], { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`chipc ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}

/** Rounds every float32 array reachable from `o` to bf16 in place. */
function roundToBf16(o: unknown, seen = new Set<unknown>()): void {
  if (o === null || typeof o !== 'object' || seen.has(o)) return;
  seen.add(o);
  if (o instanceof Float32Array) {
    for (let i = 0; i < o.length; i++) o[i] = roundBf16(o[i]!);
    return;
  }
  if (ArrayBuffer.isView(o)) return;
  for (const v of Object.values(o)) roundToBf16(v, seen);
}

let failures = 0;
try {
  // 1. the host
  const base = resolveTarget('chip-test').config;
  const layerTypes = Array.from({ length: hostLayers }, (_, i) => (i === hostLayers - 1 ? 'full_attention' : 'linear_attention')) as ModelConfig['layerTypes'];
  const hostCfg: ModelConfig = { ...base, hiddenSize: hostHidden, vocabSize: hostVocab, numLayers: hostLayers, layerTypes };
  const hostDir = path.join(work, 'host');
  let t0 = performance.now();
  if (!fs.existsSync(path.join(hostDir, 'config.json'))) {
    // bf16 values (a merged checkpoint takes the host's dtype, and the chip's weights are bf16)
    const host = randomModelWeights(hostCfg, 7);
    roundToBf16(host);
    saveModel(hostDir, host, { dtype: 'BF16' });
  }
  log({ step: 'host', layers: hostLayers, hidden: hostHidden, vocab: hostVocab, seconds: secs(t0) });

  // 2. the generic chip for the host, widened by a power of four
  const chipPath = path.join(work, 'chip.chip');
  t0 = performance.now();
  if (!fs.existsSync(chipPath)) {
    const spec: GenericChipSpec = { targetName: 'host', target: hostCfg, ...defaultChipSizes(hostCfg) };
    let res = compileGenericChip(spec);
    let hidden = hostHidden;
    while (hidden < res.weights.config.hiddenSize) hidden *= 4;
    if (hidden !== res.weights.config.hiddenSize) res = compileGenericChip({ ...spec, hidden });
    emitChip(chipPath, res, genericShape(spec), 'host', { dtype: 'BF16' });
    log({ step: 'chip', layers: res.weights.config.numLayers, hidden: res.weights.config.hiddenSize, seconds: secs(t0) });
  }

  // 3. the merged checkpoint
  const merged = path.join(work, 'merged');
  t0 = performance.now();
  if (!fs.existsSync(path.join(merged, 'config.json'))) {
    const m = mergeCheckpoints(hostDir, chipPath, merged);
    log({
      step: 'merge', layers: m.plan.merged.numLayers, hidden: m.plan.hidden, vocab: m.plan.merged.vocabSize,
      chipIdOffset: m.plan.chipIdOffset, gigabytes: Number((m.write.totalSize / 1e9).toFixed(2)), seconds: secs(t0),
    });
  }

  // 4. a trace per problem, its golden console against BigInt
  const all = bignumProblems(seed, 40, 40);
  for (const pick of picks) {
    const ofKind = all.filter((q) => q.kind === pick.kind);
    const index = pick.index >= 0 ? pick.index : ofKind.reduce((m, q, i) => (q.line.length < ofKind[m]!.line.length ? i : m), 0);
    const p = ofKind[index];
    if (p === undefined) throw new Error(`--problems: there are 40 ${pick.kind} problems (0…39)`);
    const name = `${pick.kind}${index}`;
    const trace = path.join(work, `${name}.trace.json`);
    chipc('trace', INTERP, '--model', merged, '--input', p.line, '-o', trace, '--overwrite');
    const doc = JSON.parse(fs.readFileSync(trace, 'utf8')) as { prompt: number[]; expected: number[]; idOffset: number };
    // the answer is the console the golden stream prints: its OUT tokens (as model ids, shifted by idOffset)
    const bytes = doc.expected.map((id) => decodeToken(id - doc.idOffset)).flatMap((t) => (t.kind === 'OUT' ? [t.b] : []));
    const answer = new TextDecoder().decode(Uint8Array.from(bytes)).trim();
    const right = answer === p.want;
    if (!right) failures++;
    log({ step: 'trace', problem: name, line: p.line, want: p.want, golden: answer, right, promptTokens: doc.prompt.length, expectedTokens: doc.expected.length, idOffset: doc.idOffset });

    // 5. transformers' generate()
    if (python !== null) {
      for (const dtype of dtypes) {
        t0 = performance.now();
        const r = spawnSync(python, [path.join(ROOT, 'tools', 'hf_check.py'), merged, '--trace', trace, '--sparse-linear', '--dtype', dtype, '--json'],
          { encoding: 'utf8', maxBuffer: 1 << 26, env: { ...process.env, OMP_NUM_THREADS: process.env['OMP_NUM_THREADS'] ?? '1' } });
        const report = r.stdout.trim().split('\n').pop() ?? '';
        let parsed: { complete?: boolean; divergence?: unknown } | null = null;
        try { parsed = JSON.parse(report); } catch { parsed = null; }
        if (r.status !== 0 || parsed === null || parsed.complete !== true) failures++;
        log({ step: 'generate', problem: name, dtype, exit: r.status, seconds: secs(t0), report: parsed ?? report, ...(parsed === null ? { stderr: r.stderr.slice(-2000) } : {}) });
      }
    }
  }
} finally {
  if (!keep) fs.rmSync(work, { recursive: true, force: true });
}
process.exitCode = failures > 0 ? 1 : 0;
