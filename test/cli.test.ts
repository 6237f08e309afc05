import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { cli } from './helpers/cli.ts';
import { buildProgram } from '../src/cli/main.ts';
import { COMMAND_TABLE } from '../src/cli/support/command-table.ts';
import { denseSource, writeSafetensors } from '../src/safetensors/writer.ts';
import { openCheckpoint } from '../src/safetensors/checkpoint.ts';
import { loadModel } from '../src/model/load-weights.ts';
import { Executor } from '../src/exec/executor.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-cli-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

function writeF32(file: string, tensors: Record<string, number[]>): void {
  writeSafetensors(file, Object.entries(tensors).map(([n, v]) => denseSource(n, 'F32', [v.length], new Float32Array(v))));
}

describe('chipc diff', () => {
  const a = path.join(tmp, 'a.safetensors');
  const b = path.join(tmp, 'b.safetensors');
  const c = path.join(tmp, 'c.safetensors');
  writeF32(a, { x: [1, 2, 3, 4], y: [0, -0] });
  writeF32(b, { x: [1, 2, 3, 4], y: [0, -0] });
  writeF32(c, { x: [1, 2.5, 3, 5], y: [0, 0] });

  it('exits 0 on identical files', async () => {
    const r = await cli('diff', a, b);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/identical/);
  });

  it('exits 1 and reports the first differing element and the count (−0 vs +0 differs)', async () => {
    const r = await cli('diff', a, c, '--json');
    expect(r.code).toBe(1);
    const d = JSON.parse(r.out);
    const x = d.tensors.find((t: { name: string }) => t.name === 'x');
    expect(x).toMatchObject({ status: 'different', firstIndex: 1, count: 2 });
    expect(x.firstA).toContain('0x40000000');
    expect(x.firstB).toContain('0x40200000');
    const y = d.tensors.find((t: { name: string }) => t.name === 'y');
    expect(y).toMatchObject({ status: 'different', firstIndex: 1, count: 1 });
  });

  it('exits 2 with a named error on a corrupt file', async () => {
    const bad = path.join(tmp, 'bad.safetensors');
    fs.writeFileSync(bad, Buffer.from([1, 2, 3]));
    const r = await cli('diff', a, bad);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/bad\.safetensors/);
  });

  it('reports tensors present on one side only', async () => {
    const d = path.join(tmp, 'd.safetensors');
    writeF32(d, { x: [1, 2, 3, 4] });
    const r = await cli('diff', a, d, '--json');
    expect(r.code).toBe(1);
    expect(JSON.parse(r.out).onlyInA).toEqual(['y']);
  });
});

describe('chipc inspect / targets / exec', () => {
  it('inspect counts non-zeros (−0 is zero) and hashes raw bytes', async () => {
    const f = path.join(tmp, 'i.safetensors');
    writeF32(f, { w: [0, -0, 1.5, 0, -2] });
    const r = await cli('inspect', f, '--json');
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.out);
    expect(doc.tensors[0]).toMatchObject({ name: 'w', nonZeros: 2, numel: 5 });
    const bytes = openCheckpoint(f).readBytes('w');
    const expected = (await import('node:crypto')).createHash('sha256').update(bytes).digest('hex');
    expect(doc.tensors[0].sha256).toBe(expected);
  });

  it('inspect groups the bundled tiny checkpoint per layer with layer types', async () => {
    const r = await cli('inspect', 'fixtures/tiny', '--json', '--summary');
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.out);
    expect(doc.layers.map((l: { type: string }) => l.type)).toEqual(['linear_attention', 'linear_attention', 'linear_attention', 'full_attention']);
  });

  it('targets lists the built-in targets', async () => {
    const r = await cli('targets', '--json');
    expect(r.code).toBe(0);
    const names = JSON.parse(r.out).targets.map((t: { name: string }) => t.name);
    expect(names).toEqual(['chip-test', 'qwen3-coder-next', 'qwen3-next-80b', 'qwen3.5-4b', 'tiny']);
    const bad = await cli('targets', 'no-such-target');
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/unknown target/);
  });

  it('exec prints the same greedy tokens the executor API computes', async () => {
    const r = await cli('exec', 'fixtures/tiny', '--tokens', '1,2,3', '--generate', '4', '--json');
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.out);
    const ex = new Executor(loadModel('fixtures/tiny', { mode: 'dense' }), { path: 'dense' });
    expect(doc.generated).toEqual(ex.generate([1, 2, 3], 4));
  });

  it('exec --silu: div (the default) and mul run the executor with that SiLU formula', async () => {
    const w = loadModel('fixtures/tiny', { mode: 'dense' });
    const tops: unknown[] = [];
    for (const silu of ['div', 'mul'] as const) {
      const r = await cli('exec', 'fixtures/tiny', '--tokens', '1,2,3', '--path', 'dense', '--silu', silu, '--json');
      expect(r.code, r.err).toBe(0);
      const doc = JSON.parse(r.out) as { silu: string; top: { token: number; bits: string }[] };
      expect(doc.silu).toBe(silu);
      const logits = new Executor(w, { path: 'dense', siluForm: silu }).prefill([1, 2, 3])[0]!;
      const u = new Uint32Array(logits.buffer, logits.byteOffset, logits.length);
      for (const t of doc.top) expect(t.bits).toBe('0x' + u[t.token]!.toString(16).padStart(8, '0'));
      tops.push(doc.top);
    }
    expect(tops[1]).not.toEqual(tops[0]); // the random-weight fixture tells the two formulas apart
    const def = JSON.parse((await cli('exec', 'fixtures/tiny', '--tokens', '1,2,3', '--path', 'dense', '--json')).out) as { silu: string; top: unknown };
    expect(def.silu).toBe('div');
    expect(def.top).toEqual(tops[0]);
  });

  it('exec --all-positions gives every position\'s argmax and logits sha256, prompt and generated', async () => {
    const r = await cli('exec', 'fixtures/tiny', '--tokens', '1,2,3', '--generate', '4', '--path', 'dense', '--all-positions', '--json');
    expect(r.code, r.err).toBe(0);
    const doc = JSON.parse(r.out) as { generated: number[]; positions: { position: number; token: number; argmax: number; sha256: string }[] };
    // the reference: the executor API, hashed here from the raw float32 bytes
    const ex = new Executor(loadModel('fixtures/tiny', { mode: 'dense' }), { path: 'dense' });
    const logits = ex.prefill([1, 2, 3], { allLogits: true });
    const fed = [1, 2, 3];
    for (const t of doc.generated.slice(0, -1)) { logits.push(ex.decode(t)); fed.push(t); }
    expect(doc.positions.map((p) => p.position)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(doc.positions.map((p) => p.token)).toEqual(fed);
    logits.forEach((l, i) => {
      const bytes = Buffer.from(l.buffer, l.byteOffset, l.byteLength);
      expect(doc.positions[i]!.sha256).toBe(crypto.createHash('sha256').update(bytes).digest('hex'));
      let best = 0;
      for (let j = 1; j < l.length; j++) if (l[j]! > l[best]!) best = j;
      expect(doc.positions[i]!.argmax).toBe(best);
    });
    // position k's argmax is the k-th generated token from the prompt's last position on
    expect(doc.positions.slice(2).map((p) => p.argmax)).toEqual(doc.generated);
    const text = await cli('exec', 'fixtures/tiny', '--tokens', '1,2,3', '--path', 'dense', '--all-positions');
    expect(text.out).toContain(doc.positions[1]!.sha256);
  });

  it('loads only the module of the command that runs (none for --version, all for help)', async () => {
    const names = async (...args: string[]) => (await buildProgram({ code: 0 }, ['node', 'chipc', ...args])).commands.map((c) => c.name());
    expect(await names('--version')).toEqual([]);
    expect(await names('run', 'x.elf', '--check')).toEqual(['run']);
    expect(await names('expand', 'x.chip', '-o', 'd')).toEqual(['compact', 'expand']);
    const all = await names('--help');
    expect(all).toEqual(expect.arrayContaining(['inspect', 'diff', 'targets', 'exec', 'emu', 'build', 'compile', 'check', 'cpu', 'run', 'repl', 'compact', 'expand', 'merge', 'trace', 'store', 'cache']));
    expect(all).toHaveLength(17);
    expect(await names('nosuch')).toHaveLength(17);
  });

  it('the bare listing (from the command table) is the one the loaded command modules give', async () => {
    const listing = await cli('--help');
    const loaded = await cli('help'); // `help` loads every module
    expect(listing.code).toBe(0);
    expect(listing.out).toContain('Commands:');
    expect(listing.out).toBe(loaded.out);
    const real = (await buildProgram({ code: 0 }, ['node', 'chipc', 'nosuch'])).commands;
    expect(COMMAND_TABLE.map((c) => [c.name, c.args.join(' '), c.summary])).toEqual(
      real.map((c) => [c.name(), c.registeredArguments.map((a) => (a.required ? `<${a.name()}>` : `[${a.name()}]`)).join(' '), c.description()]));
  });

  it('exec rejects token ids outside the vocabulary and bad options with exit 2', async () => {
    expect((await cli('exec', 'fixtures/tiny', '--tokens', '999999')).code).toBe(2);
    expect((await cli('exec', 'fixtures/tiny', '--tokens', '1', '--order', 'random')).code).toBe(2);
    expect((await cli('exec', 'fixtures/tiny', '--tokens', 'x')).code).toBe(2);
  });

  it('the bin launcher runs end to end (the README command)', () => {
    const r = spawnSync(process.execPath, ['bin/chipc.js', 'exec', 'fixtures/tiny', '--tokens', '1,2,3', '--generate', '2'], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/generated: \d+,\d+/);
  });
});
