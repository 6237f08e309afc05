/**
 * chipc as a package: `npm pack` the project, install the tarball into a fresh project, and there
 * build, compile and check a circuit that imports `chipc` — as .ts, .mts and .js, in an ES module
 * project and in a CommonJS one — and use the library API from plain node (import and require).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repo = path.resolve('.');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-package-'));
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

const COUNTER = (importFrom: string) => `import { defineCircuit } from '${importFrom}';

export default defineCircuit({ name: 'counter', vocab: 17, bos: 16 }, (c) => {
  const value = c.tokenField('value', (t) => (t === 16 ? 0 : t), [0, 15]);
  const next = c.table('next', [value], (v) => (v + 1) % 16, [0, 15]).named('next');
  c.emit([next]);
});
`;

const LIBRARY_USE = `const def = defineCircuit({ name: 'counter', vocab: 17, bos: 16 }, (c) => {
  const value = c.tokenField('value', (t) => (t === 16 ? 0 : t), [0, 15]);
  c.emit([c.table('next', [value], (v) => (v + 1) % 16, [0, 15])]);
});
const res = compileCircuit(buildCircuit(def), resolveTarget('tiny').config);
console.log(JSON.stringify({ layers: res.layers.length, generated: new Executor(res.weights).generate([16], 5) }));
`;

let chipcBin = '';

beforeAll(() => {
  const out = execFileSync('npm', ['pack', '--pack-destination', work, '--silent'], { cwd: repo, encoding: 'utf8' });
  const tarball = path.join(work, out.trim().split('\n').pop()!);
  expect(fs.existsSync(tarball)).toBe(true);
  fs.writeFileSync(path.join(work, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
  execFileSync('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', tarball], { cwd: work, encoding: 'utf8' });
  chipcBin = path.join(work, 'node_modules', 'chipc', 'bin', 'chipc.js');
  for (const [dir, pkg] of [['esm', { type: 'module' }], ['cjs', {}]] as const) {
    fs.mkdirSync(path.join(work, dir));
    fs.writeFileSync(path.join(work, dir, 'package.json'), JSON.stringify(pkg));
    for (const ext of ['ts', 'mts', 'js']) fs.writeFileSync(path.join(work, dir, `counter.${ext}`), COUNTER(ext === 'js' ? 'chipc/dsl' : 'chipc'));
  }
  fs.writeFileSync(path.join(work, 'esm', 'lib.mjs'), `import { defineCircuit, buildCircuit, compileCircuit, resolveTarget, Executor } from 'chipc';\n${LIBRARY_USE}`);
  fs.writeFileSync(path.join(work, 'cjs', 'lib.cjs'), `const { defineCircuit, buildCircuit, compileCircuit, resolveTarget, Executor } = require('chipc');\n${LIBRARY_USE}`);
}, 300_000);

function chipc(...args: string[]) {
  return spawnSync(process.execPath, [chipcBin, ...args], { cwd: work, encoding: 'utf8' });
}

describe('a circuit in a project that installed the packed tarball', () => {
  for (const dir of ['esm', 'cjs']) {
    for (const ext of ['ts', 'mts', 'js']) {
      it(`${dir} project, counter.${ext}: chipc check compiles it and the weights agree with the interpreter`, () => {
        const r = chipc('check', path.join(dir, `counter.${ext}`), '--target', 'tiny');
        expect(r.status, r.stderr).toBe(0);
        expect(r.stdout).toMatch(/counter: \d+ positions, \d+ signal values compared, 0 mismatches/);
      }, 120_000);
    }
  }

  it('chipc build and compile write their outputs there', () => {
    const b = chipc('build', path.join('cjs', 'counter.ts'), '-o', 'counter.chip-ir');
    expect(b.status, b.stderr).toBe(0);
    const c = chipc('compile', 'counter.chip-ir', '--target', 'tiny', '--chip', 'counter.chip', '--no-progress');
    expect(c.status, c.stderr).toBe(0);
    expect(fs.statSync(path.join(work, 'counter.chip')).size).toBeGreaterThan(0);
  }, 120_000);
});

describe('the library API from plain node (no tsx)', () => {
  for (const [label, file] of [['import', path.join('esm', 'lib.mjs')], ['require', path.join('cjs', 'lib.cjs')]]) {
    it(`${label}: compile the counter and generate from its weights`, () => {
      const r = spawnSync(process.execPath, [file], { cwd: work, encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      const doc = JSON.parse(r.stdout) as { layers: number; generated: number[] };
      expect(doc.layers).toBeGreaterThan(0);
      // the counter counts upward from BOS (value 0)
      expect(doc.generated).toEqual([1, 2, 3, 4, 5]);
    }, 60_000);
  }
});
