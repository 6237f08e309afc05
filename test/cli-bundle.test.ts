/**
 * The CLI bundle (tools/bundle-cli.mjs) and the launcher's test of it (bin/fresh-bundle.js): a
 * bundle counts as these sources only while every file it was built from, and the bundle itself,
 * has the size and mtime its record holds; the bundle runs the built-in commands alone and loads
 * circuit files through the checkout's tsx.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freshBundle as fresh } from '../bin/fresh-bundle.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-bundle-'));
const outRel = `build/cli-test-${process.pid}`;
afterAll(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.rmSync(outRel, { recursive: true, force: true });
});

/** A fake checkout under tmp: two input files, a bundle and the record of all three. */
function fakeCheckout(name: string): { root: string; record: () => void } {
  const root = path.join(tmp, name);
  fs.mkdirSync(path.join(root, 'src'), { recursive: true });
  fs.mkdirSync(path.join(root, 'build', 'cli'), { recursive: true });
  fs.writeFileSync(path.join(root, 'src', 'a.ts'), 'export const a = 1;\n');
  fs.writeFileSync(path.join(root, 'src', 'b.ts'), 'export const b = 2;\n');
  fs.writeFileSync(path.join(root, 'build', 'cli', 'chipc.mjs'), 'export const launch = () => {};\n');
  const entry = (p: string) => {
    const s = fs.statSync(path.join(root, p));
    return [p, s.size, s.mtimeMs];
  };
  const record = () => fs.writeFileSync(path.join(root, 'build', 'cli', 'chipc.inputs.json'),
    JSON.stringify({ version: 1, bundle: entry('build/cli/chipc.mjs'), inputs: [entry('src/a.ts'), entry('src/b.ts')] }));
  record();
  return { root, record };
}

describe('freshBundle', () => {
  it('gives the bundle while every recorded file is unchanged, and null after any change to one', () => {
    const { root, record } = fakeCheckout('changes');
    const url = fresh(root);
    expect(url).toBe(new URL(`file://${path.join(root, 'build', 'cli', 'chipc.mjs')}`).href);
    const a = path.join(root, 'src', 'a.ts');
    // the same size, another mtime (an edit that keeps the length, a checkout)
    const t = fs.statSync(a).mtime;
    fs.utimesSync(a, t, new Date(t.getTime() + 2000));
    expect(fresh(root)).toBeNull();
    record();
    expect(fresh(root)).toBe(url);
    // another size, the mtime put back
    const m = fs.statSync(a).mtime;
    fs.writeFileSync(a, 'export const a = 10;\n');
    fs.utimesSync(a, m, m);
    expect(fresh(root)).toBeNull();
    record();
    expect(fresh(root)).toBe(url);
    // a removed input, then the bundle rebuilt without its record
    fs.rmSync(path.join(root, 'src', 'b.ts'));
    expect(fresh(root)).toBeNull();
    fs.writeFileSync(path.join(root, 'src', 'b.ts'), 'export const b = 2;\n');
    record();
    expect(fresh(root)).toBe(url);
    fs.appendFileSync(path.join(root, 'build', 'cli', 'chipc.mjs'), '// rebuilt\n');
    expect(fresh(root)).toBeNull();
  });

  it('is null without a record, with a malformed one or one of another version', () => {
    const { root } = fakeCheckout('records');
    const rec = path.join(root, 'build', 'cli', 'chipc.inputs.json');
    const good = JSON.parse(fs.readFileSync(rec, 'utf8')) as Record<string, unknown>;
    for (const text of ['', '{', 'null', '[]', JSON.stringify({ ...good, version: 2 }), JSON.stringify({ ...good, inputs: [] }),
      JSON.stringify({ ...good, inputs: [[1, 2, 3]] }), JSON.stringify({ ...good, bundle: 'build/cli/chipc.mjs' })]) {
      fs.writeFileSync(rec, text);
      expect(fresh(root), text).toBeNull();
    }
    fs.rmSync(rec);
    expect(fresh(root)).toBeNull();
  });
});

describe('tools/bundle-cli.mjs', () => {
  it('bundles the CLI with a record that holds, and the bundle runs a built-in command and a circuit file', () => {
    const b = spawnSync(process.execPath, ['tools/bundle-cli.mjs', '--out', outRel], { encoding: 'utf8' });
    expect(b.status, b.stderr).toBe(0);
    expect(fresh(process.cwd(), outRel)).toBe(new URL(`file://${path.resolve(outRel, 'chipc.mjs')}`).href);
    const record = JSON.parse(fs.readFileSync(path.join(outRel, 'chipc.inputs.json'), 'utf8')) as { inputs: [string][] };
    const inputs = record.inputs.map((e) => e[0]);
    expect(inputs).toContain('src/cli/launch.ts');
    expect(inputs).toContain('src/exec/executor.ts');
    expect(inputs).toContain('package-lock.json');
    expect(inputs.some((p) => p.startsWith('node_modules/tsx/'))).toBe(false); // tsx stays outside
    const bundle = path.join(outRel, 'chipc.mjs');
    const emu = spawnSync(process.execPath, [bundle, 'emu', 'fixtures/firmware/hello.elf'], { encoding: 'utf8' });
    expect(emu.status, emu.stderr).toBe(0);
    expect(emu.stdout).toContain('Hello from chipc');
    const check = spawnSync(process.execPath, [bundle, 'check', 'circuits/examples/regfile.ts', '--random', '5'], { encoding: 'utf8' });
    expect(check.status, check.stderr).toBe(0);
    expect(check.stdout).toMatch(/0 mismatches/);
  });

  it('refuses an output directory that is not two levels below the root', () => {
    for (const out of ['build', 'build/a/b', '../build/x', '/tmp/x/y']) {
      const r = spawnSync(process.execPath, ['tools/bundle-cli.mjs', '--out', out], { encoding: 'utf8' });
      expect(r.status, out).toBe(2);
      expect(r.stderr).toMatch(/two levels below the repository root/);
    }
  });
});
