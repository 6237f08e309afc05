/**
 * Emission is byte-for-byte deterministic: every example circuit compiled for the tiny target
 * emits tensors whose sha256 equal the recorded golden values (fixtures/golden/). After an
 * intended change, refresh them with `npx tsx tools/refresh-golden.ts` and review the diff.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadCircuitFile } from '../src/dsl/load.ts';
import { compileCircuit } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import type { ChipcError } from '../src/util/errors.ts';
import { goldenHashes } from '../src/emit/golden.ts';
import { checkGolden, emitGoldenAsCheckpoint, parseEmitGolden, serializeEmitGolden } from '../src/inspect/golden.ts';

const examples = fs.readdirSync('circuits/examples').filter((f) => f.endsWith('.ts')).sort();

describe('golden emission hashes', () => {
  it.each(examples)('%s compiles to the recorded bytes', async (file) => {
    const ir = await loadCircuitFile(path.join('circuits/examples', file));
    const golden = path.join('fixtures/golden', `${ir.name}.tiny.json`);
    expect(fs.existsSync(golden), `${golden} is missing: run npx tsx tools/refresh-golden.ts`).toBe(true);
    const text = fs.readFileSync(golden, 'utf8');
    const want = parseEmitGolden(text, golden);
    // the one writer reproduces the fixture byte for byte
    expect(serializeEmitGolden(want)).toBe(text);
    const target = resolveTarget('tiny');
    const got = goldenHashes(compileCircuit(ir, target.config), target.name);
    expect(got).toEqual(want);
    // And a second compilation in the same process gives the same bytes.
    expect(goldenHashes(compileCircuit(ir, target.config), target.name)).toEqual(got);
  });
});

describe('emission goldens and checkpoint goldens are one format', () => {
  it('a fixture checks the checkpoint saveModel emits (chipc diff --golden)', async () => {
    const os = await import('node:os');
    const { saveModel } = await import('../src/model/save-weights.ts');
    const target = resolveTarget('tiny');
    const res = compileCircuit(await loadCircuitFile('circuits/examples/adder.ts'), target.config);
    const fixture = parseEmitGolden(fs.readFileSync('fixtures/golden/adder.tiny.json', 'utf8'), 'adder.tiny.json');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-golden-'));
    try {
      saveModel(path.join(dir, 'ckpt'), res.weights, { dtype: 'BF16' });
      const check = checkGolden(path.join(dir, 'ckpt'), emitGoldenAsCheckpoint(fixture));
      expect(check.config.status).toBe('identical');
      expect(check.tensors.filter((t) => t.status !== 'identical')).toEqual([]);
      expect(check.identical).toBe(true);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rejects a malformed emission golden with golden.format', () => {
    const text = fs.readFileSync('fixtures/golden/adder.tiny.json', 'utf8');
    const err = (t: string) => { try { parseEmitGolden(t, 'x.json'); return null; } catch (e) { return e as ChipcError; } };
    expect(err(text.replace('"circuit"', '"circuits"'))?.code).toBe('golden.format');
    expect(err(text.replace('"dtype": "BF16"', '"dtype": "F16"'))?.message).toMatch(/"dtype" must be "BF16" or "F32"/);
    expect(err(text.replace(/"sha256": "[0-9a-f]/, '"sha256": "X'))?.message).toMatch(/must be 64 lower-case hex digits/);
  });
});

describe('emitted checkpoints run exactly after a round trip through safetensors', () => {
  it.each(['qwen3_5_text', 'qwen3_next'] as const)('regfile emitted in the %s family layout (bf16) loads and runs bit-exactly', async (family) => {
    const os = await import('node:os');
    const { saveModel } = await import('../src/model/save-weights.ts');
    const { loadModel } = await import('../src/model/load-weights.ts');
    const { checkCompiled } = await import('../src/verify/check.ts');
    const tiny = resolveTarget('tiny').config;
    const target = family === 'qwen3_5_text' ? tiny : {
      ...tiny, family, tieWordEmbeddings: false,
      moe: { numExperts: 4, numExpertsPerTok: 2, moeIntermediateSize: 8, sharedExpertIntermediateSize: 8, normTopkProb: true, decoderSparseStep: 1, mlpOnlyLayers: [] },
    };
    const res = compileCircuit(await loadCircuitFile('circuits/examples/regfile.ts'), target);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-emit-'));
    try {
      saveModel(path.join(dir, 'ckpt'), res.weights, { dtype: 'BF16' });
      const loaded = loadModel(path.join(dir, 'ckpt'), { mode: 'sparse' });
      expect(loaded.config.family).toBe(family);
      const tokens = [136, 0x15, 0x27, 129, 130, 0x2f, 130, 135, 0x71, 135];
      const r = checkCompiled({ ...res, weights: loaded }, tokens, { profile: 'bf16' });
      expect(r.mismatches).toEqual([]);
      expect(r.emitted.slice(1)).toEqual([5, 7, 5, 7, 15, 15, 0, 1, 1]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
