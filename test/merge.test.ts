/**
 * `chipc merge`: synthetic random hosts of both families (tied and untied, dense and MoE) merged
 * with a small compiled circuit. Checked bit for bit in the reference executor: the host's logits
 * on text, the chip's residual dims, logits and greedy tokens on the circuit's tokens (ids offset);
 * plus every error case leaving no partial output, and the CLI.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCircuitFile } from '../src/dsl/load.ts';
import { compileCircuit, type CompileResult } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import type { ModelConfig } from '../src/model/config.ts';
import { isMoeLayer } from '../src/model/config.ts';
import { randomModelWeights } from '../src/model/random-weights.ts';
import { saveModel } from '../src/model/save-weights.ts';
import { loadModel } from '../src/model/load-weights.ts';
import { buildManifest, MANIFEST_FILE } from '../src/emit/manifest.ts';
import { Executor } from '../src/exec/executor.ts';
import type { ExecOptions, LayerHookEvent } from '../src/exec/types.ts';
import { mergeCheckpoints, MERGE_INFO_FILE } from '../src/merge/merge.ts';
import { mergedHidden } from '../src/merge/plan.ts';
import { Prng } from '../src/model/random-weights.ts';
import { ChipcError } from '../src/util/errors.ts';
import { bitDiff } from './helpers/assert.ts';
import { compactCheckpoint } from '../src/chipfile/compact.ts';
import { cli } from './helpers/cli.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-merge-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const tiny = resolveTarget('tiny').config;

/** A small Qwen3-Next host: 4 layers, MoE on layers 1 and 3 (decoder_sparse_step 2), untied. */
const nextHost: ModelConfig = {
  ...tiny,
  family: 'qwen3_next',
  tieWordEmbeddings: false,
  rmsNormEps: 1e-5,
  moe: { numExperts: 4, numExpertsPerTok: 2, moeIntermediateSize: 32, sharedExpertIntermediateSize: 32, normTopkProb: true, decoderSparseStep: 2, mlpOnlyLayers: [] },
};

interface Case {
  label: string;
  host: ModelConfig;
  /** The chip is compiled against this config (the host's shape; eps may differ). */
  chipTarget: ModelConfig;
  circuit: string;
  chipDtype: 'F32' | 'BF16';
  shard?: number;
}

const CASES: Case[] = [
  { label: 'qwen3_5_text, tied, dense + counter', host: tiny, chipTarget: tiny, circuit: 'counter', chipDtype: 'BF16' },
  { label: 'qwen3_5_text, untied + regfile (sharded host)', host: { ...tiny, tieWordEmbeddings: false }, chipTarget: tiny, circuit: 'regfile', chipDtype: 'F32', shard: 40_000 },
  { label: 'qwen3_next, untied, MoE + counter (chip eps 1e-6, host eps 1e-5)', host: nextHost, chipTarget: { ...nextHost, rmsNormEps: 1e-6 }, circuit: 'counter', chipDtype: 'BF16' },
  { label: 'qwen3_next, tied, dense (num_experts 0) + regfile', host: { ...nextHost, moe: null, tieWordEmbeddings: true }, chipTarget: { ...nextHost, moe: null }, circuit: 'regfile', chipDtype: 'BF16' },
];

const compiled = new Map<string, CompileResult>();
async function compileFor(c: Case): Promise<CompileResult> {
  const key = `${c.circuit}/${JSON.stringify(c.chipTarget)}`;
  let r = compiled.get(key);
  if (!r) {
    r = compileCircuit(await loadCircuitFile(`circuits/examples/${c.circuit}.ts`), c.chipTarget);
    compiled.set(key, r);
  }
  return r;
}

/** Numeric modes the exactness argument covers (power-of-two scaling commutes with every rounding). */
const MODES: { label: string; opts: ExecOptions }[] = [
  { label: 'f32', opts: {} },
  { label: 'bf16 profile', opts: { profile: 'bf16' } },
  { label: 'mean as sum·fl(1/N), fma order', opts: { meanMode: 'mulrecip', order: { kind: 'fma' } } },
];

let dirCount = 0;
function freshDir(name: string): string {
  return path.join(tmp, `${name}-${dirCount++}`);
}

function writeChip(res: CompileResult, dtype: 'F32' | 'BF16'): string {
  const dir = freshDir('chip');
  saveModel(dir, res.weights, { dtype, extraFiles: { [MANIFEST_FILE]: JSON.stringify(buildManifest(res, 'test')) } });
  return dir;
}

function writeHost(cfg: ModelConfig, seed: number, shard?: number): string {
  const dir = freshDir('host');
  saveModel(dir, randomModelWeights(cfg, seed, { normWeightNoise: true, scale: 4 }), { dtype: 'F32', maxShardSize: shard });
  return dir;
}

/** Softmax in float64 of float32 logits. */
function softmax(l: Float32Array): Float64Array {
  let m = -Infinity;
  for (const v of l) m = Math.max(m, v);
  const p = new Float64Array(l.length);
  let z = 0;
  for (let i = 0; i < l.length; i++) { p[i] = Math.exp(l[i] - m); z += p[i]; }
  for (let i = 0; i < l.length; i++) p[i] /= z;
  return p;
}

/** Residual snapshots per (position, layer) from an executor hook. */
function recordResiduals(ex: Executor): LayerHookEvent[] {
  const evs: LayerHookEvent[] = [];
  ex.addHook((e) => evs.push(e));
  return evs;
}

describe.each(CASES)('merge: $label', (c) => {
  let res: CompileResult;
  let hostDir: string;
  let chipDir: string;
  let outDir: string;
  let merged: ReturnType<typeof mergeCheckpoints>;
  beforeAll(async () => {
    res = await compileFor(c);
    hostDir = writeHost(c.host, 11, c.shard);
    chipDir = writeChip(res, c.chipDtype);
    outDir = freshDir('merged');
    merged = mergeCheckpoints(hostDir, chipDir, outDir, { maxShardSize: c.shard });
  });

  it('writes the planned config: hidden 4^k multiple, chip layers first, vocab offset, MoE layers renumbered', () => {
    const p = merged.plan;
    const cfg = JSON.parse(fs.readFileSync(path.join(outDir, 'config.json'), 'utf8'));
    const Hc = res.weights.config.hiddenSize;
    expect(p.hidden).toBe(cfg.hidden_size);
    // H' / H_host and H' / H_chip are powers of four and both blocks fit.
    expect(Number.isInteger(Math.log(p.hidden / c.host.hiddenSize) / Math.log(4))).toBe(true);
    expect(p.hidden).toBeGreaterThanOrEqual(c.host.hiddenSize + Hc);
    expect(cfg.vocab_size).toBe(c.host.vocabSize + Math.ceil(res.ir.vocab / 256) * 256);
    expect(cfg.layer_types).toEqual([...res.weights.config.layerTypes, ...c.host.layerTypes]);
    expect(cfg.tie_word_embeddings).toBe(false);
    const info = JSON.parse(fs.readFileSync(path.join(outDir, MERGE_INFO_FILE), 'utf8'));
    expect(info.vocab.chipIdOffset).toBe(c.host.vocabSize);
    const m = loadModel(outDir, { mode: 'dense' }).config;
    const L = res.weights.config.numLayers;
    for (let i = 0; i < c.host.numLayers; i++) expect(isMoeLayer(m, L + i)).toBe(isMoeLayer(c.host, i));
    for (let i = 0; i < L; i++) expect(isMoeLayer(m, i)).toBe(false);
    if (c.shard !== undefined) expect(merged.write.files).toContain('model.safetensors.index.json');
  });

  it('a .chip file gives the same merged bytes as the chip directory', () => {
    const chipFile = path.join(tmp, `chip-${dirCount++}.chip`);
    compactCheckpoint(chipDir, chipFile);
    const out2 = freshDir('merged-chipfile');
    mergeCheckpoints(hostDir, chipFile, out2, { maxShardSize: c.shard });
    expect(fs.readdirSync(out2).sort()).toEqual(fs.readdirSync(outDir).sort());
    for (const f of fs.readdirSync(outDir)) expect(fs.readFileSync(path.join(out2, f)).equals(fs.readFileSync(path.join(outDir, f)))).toBe(true);
  });

  it('an output path ending in .chip writes the compact form of the same merged checkpoint', () => {
    const mergedChip = path.join(tmp, `merged-${dirCount++}.chip`);
    const r = mergeCheckpoints(hostDir, chipDir, mergedChip, { maxShardSize: c.shard });
    expect(r.chipFile?.chipBytes).toBe(fs.statSync(mergedChip).size);
    expect(r.write.totalParameters).toBe(merged.write.totalParameters);
    expect(r.write.totalSize).toBe(merged.write.totalSize);
    // the same bytes as compacting the dense merged directory
    const viaDir = path.join(tmp, `merged-${dirCount++}.chip`);
    compactCheckpoint(outDir, viaDir);
    expect(fs.readFileSync(mergedChip).equals(fs.readFileSync(viaDir))).toBe(true);
    // an existing .chip output is refused without overwrite, and replaced with it
    expect(() => mergeCheckpoints(hostDir, chipDir, mergedChip, { maxShardSize: c.shard })).toThrow(/exists/);
    mergeCheckpoints(hostDir, chipDir, mergedChip, { maxShardSize: c.shard, overwrite: true });
    expect(fs.readFileSync(mergedChip).equals(fs.readFileSync(viaDir))).toBe(true);
  });

  it.each(MODES)('host logits on random text are bit-identical (prefill and decode); chip rows are exactly 0 ($label)', ({ opts }) => {
    const hostEx = new Executor(loadModel(hostDir, { mode: 'dense' }), opts);
    const mergedEx = new Executor(loadModel(outDir, { mode: 'dense' }), opts);
    const V = c.host.vocabSize;
    const rng = new Prng(5);
    const ids = Array.from({ length: 8 }, () => rng.nextU32() % V);
    const a = hostEx.prefill(ids.slice(0, 5), { allLogits: true });
    const b = mergedEx.prefill(ids.slice(0, 5), { allLogits: true });
    for (const id of ids.slice(5)) { a.push(hostEx.decode(id)); b.push(mergedEx.decode(id)); }
    const n = merged.plan.merged.vocabSize - V;
    for (let p = 0; p < a.length; p++) {
      expect(b[p].length).toBe(merged.plan.merged.vocabSize);
      expect(bitDiff(a[p], b[p].slice(0, V))).toBe(0);
      for (let i = V; i < b[p].length; i++) expect(Object.is(b[p][i], 0) || Object.is(b[p][i], -0)).toBe(true);
      // KL(host ‖ merged) over the merged vocabulary; by hand: the merged distribution is the
      // host's times Z/(Z + n) (n extra logits of exactly 0), so KL = log(1 + n/Z), Z = Σ e^{a_i}.
      const ph = softmax(a[p]);
      const pm = softmax(b[p]);
      let kl = 0;
      for (let i = 0; i < V; i++) kl += ph[i] * Math.log(ph[i] / pm[i]);
      let z = 0;
      for (const v of a[p]) z += Math.exp(v);
      const want = Math.log1p(n / z);
      expect(Math.abs(kl - want)).toBeLessThan(1e-9 * want);
    }
  });

  it('the chip runs in the merged model exactly: chip dims = scale × chip residual, logits and greedy tokens equal', () => {
    const chipModel = loadModel(chipDir, { mode: 'dense' });
    const chipEx = new Executor(chipModel);
    const mergedEx = new Executor(loadModel(outDir, { mode: 'dense' }));
    const ce = recordResiduals(chipEx);
    const me = recordResiduals(mergedEx);
    const off = merged.plan.chipIdOffset;
    const Hh = merged.plan.hostHidden;
    const Hc = merged.plan.chipHidden;
    const s = merged.plan.chipScale;
    const A = res.ir.vocab;
    const bos = res.ir.bos!;
    // Greedy generation from BOS, argmax over the whole merged vocabulary (item 4).
    let tc = argmaxOf(chipEx.prefill([bos])[0].slice(0, A));
    const mLog0 = mergedEx.prefill([off + bos])[0];
    let tm = argmaxOf(mLog0);
    const gen: [number, number][] = [[tc, tm]];
    // regfile: teacher-forced writes then reads (greedy from BOS only reads zeros); counter: greedy.
    const forced = c.circuit === 'regfile' ? [0x15, 0x27, 0x3f, 0x12, 128 + 1, 128 + 2, 128 + 3, 128 + 4] : [];
    for (let k = 0; k < 12; k++) {
      if (k < forced.length) { tc = forced[k]; tm = off + forced[k]; }
      const lc = chipEx.decode(tc);
      const lm = mergedEx.decode(tm);
      // chip logits (its alphabet) are bit-identical at the offset ids; host ids are exactly 0.
      expect(bitDiff(lc.slice(0, A), lm.slice(off, off + A))).toBe(0);
      for (let i = 0; i < off; i++) if (lm[i] !== 0) throw new Error(`host logit ${i} = ${lm[i]} at a chip position`);
      tc = argmaxOf(lc.slice(0, A));
      tm = argmaxOf(lm);
      gen.push([tc, tm]);
    }
    for (const [x, y] of gen) expect(y).toBe(off + x);
    if (c.circuit === 'regfile') expect(gen.slice(5, 9).map(([x]) => x)).toEqual([2, 7, 15, 0]); // reg1 was rewritten to 2; reg4 never written
    // Residual dims, layer by layer: chip layers L < Lc, then every host layer keeps the chip dims.
    const L = merged.plan.chipLayers;
    const positions = gen.length;
    expect(me.length).toBe(positions * merged.plan.merged.numLayers);
    for (let p = 0; p < positions; p++) {
      for (let l = 0; l < merged.plan.merged.numLayers; l++) {
        const m = me[p * merged.plan.merged.numLayers + l];
        const ch = ce[p * L + Math.min(l, L - 1)];
        expect(m.layer).toBe(l);
        const want = l < L ? ch.residualOut : ce[p * L + L - 1].residualOut;
        const scaled = new Float32Array(Hc);
        for (let d = 0; d < Hc; d++) scaled[d] = want[d] * s;
        expect(bitDiff(m.residualOut.slice(Hh, Hh + Hc), scaled)).toBe(0);
        for (let d = 0; d < Hh; d++) if (m.residualOut[d] !== 0) throw new Error(`host dim ${d} = ${m.residualOut[d]} at layer ${l}`);
        for (let d = Hh + Hc; d < merged.plan.hidden; d++) if (m.residualOut[d] !== 0) throw new Error(`pad dim ${d} nonzero`);
      }
    }
  });
});

function argmaxOf(l: Float32Array): number {
  let best = 0;
  for (let i = 1; i < l.length; i++) if (l[i] > l[best]) best = i;
  return best;
}

describe('merge plan', () => {
  it('chooses the smallest power-of-four width and refuses other ratios', () => {
    expect(mergedHidden(64, 64)).toBe(256);
    expect(mergedHidden(64, 16)).toBe(256);
    expect(mergedHidden(64, 256)).toBe(1024);
    expect(mergedHidden(2048, 2048)).toBe(8192);
    expect(mergedHidden(64, 128)).toBeNull();
    expect(mergedHidden(2048, 3968)).toBeNull();
  });
});

/** Runs f, expects a ChipcError with `code`, and checks that `out` and no temp sibling exist. */
function expectRefused(f: () => unknown, code: string, out: string, msg?: RegExp): void {
  const before = fs.readdirSync(path.dirname(out)).length;
  let err: unknown;
  try { f(); } catch (e) { err = e; }
  expect(err).toBeInstanceOf(ChipcError);
  expect((err as ChipcError).code).toBe(code);
  if (msg) expect((err as ChipcError).message).toMatch(msg);
  expect(fs.existsSync(out)).toBe(false);
  expect(fs.readdirSync(path.dirname(out)).length).toBe(before);
}

describe('merge errors leave no output', () => {
  let res: CompileResult;
  let chipDir: string;
  beforeAll(async () => {
    res = await compileFor(CASES[0]);
    chipDir = writeChip(res, 'BF16');
  });

  it('a missing shard', () => {
    const host = writeHost(tiny, 3, 40_000);
    const shard = fs.readdirSync(host).find((f) => f.startsWith('model-00002'))!;
    fs.rmSync(path.join(host, shard));
    expectRefused(() => mergeCheckpoints(host, chipDir, freshDir('out')), 'checkpoint.index-shard-missing', freshDir('out'), /host/);
  });

  it('a tensor of the wrong shape', () => {
    const host = writeHost(tiny, 3);
    const cfg = JSON.parse(fs.readFileSync(path.join(host, 'config.json'), 'utf8'));
    cfg.intermediate_size = 128;
    fs.writeFileSync(path.join(host, 'config.json'), JSON.stringify(cfg));
    const out = freshDir('out');
    expectRefused(() => mergeCheckpoints(host, chipDir, out), 'weights.mismatch', out, /mis-shaped/);
  });

  it('an unknown model_type', () => {
    const host = writeHost(tiny, 3);
    const cfg = JSON.parse(fs.readFileSync(path.join(host, 'config.json'), 'utf8'));
    cfg.model_type = 'llama';
    fs.writeFileSync(path.join(host, 'config.json'), JSON.stringify(cfg));
    const out = freshDir('out');
    expectRefused(() => mergeCheckpoints(host, chipDir, out), 'target.config', out, /model_type/);
  });

  it('a chip of another family', () => {
    const host = writeHost(nextHost, 3);
    const out = freshDir('out');
    expectRefused(() => mergeCheckpoints(host, chipDir, out), 'merge.family', out, /qwen3_5_text.*qwen3_next/);
  });

  it('a chip whose layer shapes differ from the host', () => {
    const host = writeHost({ ...tiny, intermediateSize: 512 }, 3);
    const out = freshDir('out');
    expectRefused(() => mergeCheckpoints(host, chipDir, out), 'merge.shape', out, /intermediate_size/);
  });

  it('a chip whose hidden size is not a power-of-four ratio of the host', async () => {
    const wide = compileCircuit(await loadCircuitFile('circuits/examples/counter.ts'), tiny, { hidden: 128 });
    expect(wide.weights.config.hiddenSize).toBe(128);
    const chip = writeChip(wide, 'BF16');
    const host = writeHost(tiny, 3);
    const out = freshDir('out');
    expectRefused(() => mergeCheckpoints(host, chip, out), 'merge.fit', out, /--hidden/);
  });

  it('an existing output without overwrite; with overwrite it is replaced', () => {
    const host = writeHost(tiny, 3);
    const out = freshDir('out');
    fs.mkdirSync(out);
    fs.writeFileSync(path.join(out, 'keep.txt'), 'x');
    let err: unknown;
    try { mergeCheckpoints(host, chipDir, out); } catch (e) { err = e; }
    expect((err as ChipcError).code).toBe('checkpoint.target-exists');
    expect(fs.readdirSync(out)).toEqual(['keep.txt']);
    mergeCheckpoints(host, chipDir, out, { overwrite: true });
    expect(fs.existsSync(path.join(out, 'keep.txt'))).toBe(false);
    expect(fs.existsSync(path.join(out, 'model.safetensors'))).toBe(true);
  });
});

describe('chipc merge (CLI)', () => {
  it('merges, is deterministic, and reports errors with exit 2', async () => {
    const res = await compileFor(CASES[0]);
    const chip = writeChip(res, 'BF16');
    const host = writeHost(tiny, 9);
    const a = freshDir('cli');
    const b = freshDir('cli');
    const r = await cli('merge', '--host', host, '--chip', chip, '-o', a, '--json', '--no-progress');
    expect(r.code).toBe(0);
    const j = JSON.parse(r.out);
    expect(j.hidden).toBe(256);
    expect(j.chipIdOffset).toBe(512);
    expect((await cli('merge', '--host', host, '--chip', chip, '-o', b, '--no-progress')).code).toBe(0);
    for (const f of fs.readdirSync(a)) expect(fs.readFileSync(path.join(b, f)).equals(fs.readFileSync(path.join(a, f)))).toBe(true);
    const again = await cli('merge', '--host', host, '--chip', chip, '-o', a, '--no-progress');
    expect(again.code).toBe(2);
    expect(again.err).toMatch(/checkpoint.target-exists/);
    // --max-shard-size takes decimal digits only, as in compile (Number() alone would take 1e3 and 0x10)
    for (const bad of ['0', '-5', '1.5', '1e3', '0x10', 'x']) {
      const out = path.join(freshDir('cli'), 'never');
      const r = await cli('merge', '--host', host, '--chip', chip, '-o', out, '--max-shard-size', bad, '--no-progress');
      expect(r.code, bad).toBe(2);
      expect(r.err, bad).toContain('[cli.max-shard-size]');
      expect(fs.existsSync(out), bad).toBe(false);
    }
  });
});
