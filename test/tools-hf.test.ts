/**
 * The transformers cross-check tools (docs/hf-check.md) on this machine, without PyTorch:
 * tools/layer-dump.ts's files against the executor it dumps (layout, positions, GDN state order,
 * little-endian float32), its refusals, and the Python tools' argument checks, which run before
 * they import torch (skipped where python3 is absent).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Executor } from '../src/exec/executor.ts';
import { loadModel } from '../src/model/load-weights.ts';
import { bitDiff } from './helpers/assert.ts';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const TINY = path.join(repoRoot, 'fixtures', 'tiny');
const hasPython = spawnSync('python3', ['--version']).status === 0;

function layerDump(...args: string[]) {
  return spawnSync('npx', ['tsx', path.join(repoRoot, 'tools', 'layer-dump.ts'), ...args], { cwd: repoRoot, encoding: 'utf8' });
}

function readF32LE(file: string): Float32Array {
  const b = fs.readFileSync(file);
  const out = new Float32Array(b.length / 4);
  for (let i = 0; i < out.length; i++) out[i] = b.readFloatLE(i * 4);
  return out;
}

describe('tools/layer-dump.ts', () => {
  it('writes every layer output at every position and the GDN states after the prompt, as the executor computes them', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-dump-'));
    try {
      const prompt = [1, 17, 300, 42, 5];
      const expected = [9, 77, 511, 0];
      const tracePath = path.join(dir, 't.json');
      fs.writeFileSync(tracePath, JSON.stringify({ format: 'chipc-trace', version: 1, prompt, expected }));
      const out = path.join(dir, 'dump');
      const r = layerDump(TINY, '--trace', tracePath, '--steps', '3', '-o', out);
      expect(r.status, r.stderr).toBe(0);
      const meta = JSON.parse(fs.readFileSync(path.join(out, 'meta.json'), 'utf8'));
      const w = loadModel(TINY, { mode: 'sparse' });
      const { hiddenSize: H, linearNumValueHeads: nv, linearKeyHeadDim: dk, linearValueHeadDim: dv } = w.config;
      const fed = [...prompt, ...expected.slice(0, 3)];
      expect(meta).toMatchObject({
        format: 'chipc-layer-dump', version: 1, layers: w.layers.length, positions: fed.length, hidden: H,
        promptTokens: prompt.length, steps: 3, gdnLayers: [0, 1, 2], stateShape: [nv, dk, dv], tokens: fed,
      });
      // The oracle: the executor run one token per forward, read through its hooks and its live state.
      const ex = new Executor(w, { profile: 'f32', order: { kind: 'sequential' }, path: 'sparse' });
      const want = new Map<string, Float32Array>();
      ex.addHook((ev) => { want.set(`${ev.layer}:${ev.position}`, Float32Array.from(ev.residualOut)); });
      const layers = readF32LE(path.join(out, 'layers.f32'));
      const states = readF32LE(path.join(out, 'states.f32'));
      expect(layers.length).toBe(w.layers.length * fed.length * H);
      ex.prefill([fed[0]!]);
      fed.slice(1, prompt.length).forEach((t) => ex.decode(t));
      let stateDiff = 0;
      meta.gdnLayers.forEach((l: number, k: number) => {
        for (let h = 0; h < nv; h++) {
          const s = ex.gdnState(l, h);
          stateDiff += bitDiff(states.subarray((k * nv + h) * dk * dv, (k * nv + h + 1) * dk * dv), s);
        }
      });
      expect(stateDiff).toBe(0);
      expect(states.some((x) => x !== 0)).toBe(true);
      fed.slice(prompt.length).forEach((t) => ex.decode(t));
      let diff = 0;
      for (let l = 0; l < w.layers.length; l++) {
        for (let p = 0; p < fed.length; p++) {
          diff += bitDiff(layers.subarray((l * fed.length + p) * H, (l * fed.length + p + 1) * H), want.get(`${l}:${p}`)!);
        }
      }
      expect(diff).toBe(0);
      // An existing output is refused; so is a file that is not a trace, and nothing is left behind.
      const again = layerDump(TINY, '--trace', tracePath, '-o', out);
      expect(again.status).toBe(2);
      expect(again.stderr).toMatch(/exists/);
      fs.writeFileSync(path.join(dir, 'bad.json'), '{"format":"other"}');
      const bad = layerDump(TINY, '--trace', path.join(dir, 'bad.json'), '-o', path.join(dir, 'd2'));
      expect(bad.status).toBe(2);
      expect(bad.stderr).toMatch(/not a chipc trace/);
      expect(fs.readdirSync(dir).sort()).toEqual(['bad.json', 'dump', 't.json']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe.skipIf(!hasPython)('tools/hf_check.py and tools/hf_layers.py refuse bad input before needing torch', () => {
  it('hf_check.py: not a trace, no trace at all (exit 2, a message naming the problem)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-hf-'));
    try {
      fs.writeFileSync(path.join(dir, 'x.json'), '{"format":"chipc-trace","version":1,"prompt":[],"expected":[1]}');
      const run = (...a: string[]) => spawnSync('python3', [path.join(repoRoot, 'tools', 'hf_check.py'), ...a], { encoding: 'utf8' });
      const empty = run(dir, '--trace', path.join(dir, 'x.json'));
      expect(empty.status).toBe(2);
      expect(empty.stderr).toMatch(/'prompt' must be a non-empty list/);
      const neither = run(dir);
      expect(neither.status).toBe(2);
      expect(neither.stderr).toMatch(/exactly one of --trace FILE or --tokens IDS/);
      const help = run('--help');
      expect(help.status).toBe(0);
      expect(help.stdout).toMatch(/stepwise/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
  it('hf_layers.py: a directory that is not a layer dump (exit 2)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-hf-'));
    try {
      fs.writeFileSync(path.join(dir, 'meta.json'), '{"format":"chipc-trace"}');
      const r = spawnSync('python3', [path.join(repoRoot, 'tools', 'hf_layers.py'), dir, '--dump', dir], { encoding: 'utf8' });
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(/not a chipc layer dump/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
