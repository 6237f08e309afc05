/**
 * Firmware on a merged model by plain greedy decoding (issue 6, items 3 and 4, end to end):
 *  1. a synthetic host checkpoint (random weights, Qwen3.5 family, the chip-test GDN shape, a
 *     small hidden size and vocabulary) is written;
 *  2. the RV32 chip is compiled for the program at the host's shape (hidden widened by a power of
 *     four, as `chipc merge` needs) and written as a `.chip` (`chipc run FILE --emit`);
 *  3. `chipc merge` writes the merged checkpoint as a `.chip` (no dense form);
 *  4. the merged model is loaded from it and the program runs from its loader prompt by greedy
 *     decoding alone (chip ids offset by the host's vocabulary), every token compared with the
 *     golden emulator's trace (`chipc run FILE --model MERGED.chip --check` does the same).
 *
 *   npx tsx bench/merged-run.ts [--elf fixtures/firmware/hello.elf] [--host-hidden 256]
 *                               [--host-vocab 1024] [--host-layers 4]
 * Prints the sizes, the merge and run times and the divergence count. Temporary files are removed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { programOf, readChipCheckpoint, runOnModel } from '../src/chip/run.ts';
import { compileChip, emitChip } from '../src/chip/build.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { randomModelWeights } from '../src/model/random-weights.ts';
import { saveModel } from '../src/model/save-weights.ts';
import { loadModel } from '../src/model/load-weights.ts';
import { mergeCheckpoints } from '../src/merge/merge.ts';
import { goldenTokens } from '../riscv/golden-trace.ts';
import type { ModelConfig } from '../src/model/config.ts';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1]! : dflt;
}

const elfPath = arg('--elf', 'fixtures/firmware/hello.elf');
const hostHidden = Number(arg('--host-hidden', '256'));
const hostVocab = Number(arg('--host-vocab', '1024'));
const hostLayers = Number(arg('--host-layers', '4'));

const base = resolveTarget('chip-test').config;
const layerTypes = Array.from({ length: hostLayers }, (_, i) => (i % 4 === 3 ? 'full_attention' : 'linear_attention')) as ModelConfig['layerTypes'];
const hostCfg: ModelConfig = { ...base, hiddenSize: hostHidden, vocabSize: hostVocab, numLayers: hostLayers, layerTypes };
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-merged-run-'));
const secs = (t0: number) => ((performance.now() - t0) / 1000).toFixed(1);
try {
  let t0 = performance.now();
  const hostDir = path.join(tmp, 'host');
  saveModel(hostDir, randomModelWeights(hostCfg, 7), { dtype: 'F32' });
  console.log(`host: ${hostLayers} layers, hidden ${hostHidden}, vocabulary ${hostVocab}, written in ${secs(t0)} s`);

  const elf = fs.readFileSync(elfPath);
  const prog = programOf(elf);
  // the chip's hidden size: the host's times the smallest power of four that holds the chip
  let chipHidden = hostHidden;
  t0 = performance.now();
  let res = compileChip(prog.chip, hostCfg);
  while (chipHidden < res.weights.config.hiddenSize) chipHidden *= 4;
  if (chipHidden !== res.weights.config.hiddenSize) res = compileChip(prog.chip, { ...hostCfg, hiddenSize: chipHidden });
  const chipPath = path.join(tmp, 'chip.chip');
  emitChip(chipPath, res, prog.chip, 'host', { dtype: 'F32' });
  console.log(`chip: ${res.weights.config.numLayers} layers, hidden ${res.weights.config.hiddenSize}, compiled and written in ${secs(t0)} s ` +
    `(${(fs.statSync(chipPath).size / 1e6).toFixed(1)} MB .chip)`);

  t0 = performance.now();
  const mergedPath = path.join(tmp, 'merged.chip');
  const m = mergeCheckpoints(hostDir, chipPath, mergedPath);
  console.log(`merged: ${m.plan.merged.numLayers} layers, hidden ${m.plan.hidden}, vocabulary ${m.plan.merged.vocabSize} ` +
    `(chip ids from ${m.plan.chipIdOffset}), ${(m.write.totalSize / 1e9).toFixed(2)} GB dense as ${(fs.statSync(mergedPath).size / 1e6).toFixed(1)} MB .chip, in ${secs(t0)} s`);

  t0 = performance.now();
  const ck = readChipCheckpoint(mergedPath);
  const weights = loadModel(mergedPath, { mode: 'sparse' });
  console.log(`loaded the merged .chip in ${secs(t0)} s (chip id offset ${ck.idOffset})`);
  const trace = goldenTokens(elf, { mem: { size: prog.memBytes } });
  const r = runOnModel(weights, prog, {
    idOffset: ck.idOffset, maxTokens: trace.tokens.length, golden: trace.tokens, goldenPc: trace.tokenPc,
  });
  const generated = r.tokens.length - r.promptLength;
  console.log(JSON.stringify({
    elf: path.basename(elfPath), promptTokens: r.promptLength, generated, halted: r.halted, exitCode: r.exitCode,
    divergences: r.divergence ? 1 : 0, divergence: r.divergence, seconds: Math.round(r.seconds), tokensPerSecond: Math.round(r.tokens.length / r.seconds),
  }));
  process.exitCode = r.divergence || !r.halted ? 1 : 0;
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
