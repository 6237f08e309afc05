/**
 * Errors where the user is: what a circuit's own code throws is a circuit error (exit 2, the
 * circuit's file:line), problems with defineCircuit's meta data point at the defineCircuit call,
 * a circuit that emits nothing is refused at compile, and errors about an ELF name the file.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defineCircuit } from '../src/dsl/index.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import { compileCircuit } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { ChipcError } from '../src/util/errors.ts';
import { cli } from './helpers/cli.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-user-errors-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));
const DSL = path.resolve('src/dsl/index.ts');

/** Writes a circuit file whose lines are `body` (after the import line); returns its path. */
function circuitFile(name: string, body: string[]): string {
  const f = path.join(tmp, name);
  fs.writeFileSync(f, [`import { defineCircuit } from ${JSON.stringify(DSL)};`, ...body, ''].join('\n'));
  return f;
}

describe('a circuit\'s own exceptions are circuit errors', () => {
  // [file, the line that fails (line 4 of the file: the import is line 1), the command, what the message says]
  const cases: [string, string, string, RegExp][] = [
    ['throws.mts', "  throw new Error('my own failure');", 'build', /throws\.mts:4:\d+: the circuit's build function threw Error: my own failure/],
    ['refers.mts', '  c.emit([notDefinedAnywhere]);', 'compile', /refers\.mts:4:\d+: the circuit's build function threw ReferenceError: notDefinedAnywhere is not defined/],
  ];
  for (const [name, failing, command, message] of cases) {
    it(`${name}: exits 2 with circuit.build at the failing line (chipc ${command}), writes nothing`, async () => {
      const f = circuitFile(name, [
        "export default defineCircuit({ name: 'boom', vocab: 16 }, (c) => {",
        "  c.tokenField('x', (t) => t);",
        failing,
        '});',
      ]);
      const out = path.join(tmp, `${name}.out`);
      const r = await cli(command, f, '-o', out);
      expect(r.code).toBe(2);
      expect(r.err).toMatch(/\[circuit\.build\]/);
      expect(r.err).toMatch(message);
      expect(r.err).not.toMatch(/internal error/);
      expect(fs.existsSync(out)).toBe(false);
    });
  }

  it('in-process: buildCircuit wraps a user throw; ChipcErrors of the DSL pass through unchanged', () => {
    let e: unknown;
    try {
      buildCircuit(defineCircuit({ name: 'x', vocab: 4 }, () => { throw new TypeError('bad thing'); }));
    } catch (err) { e = err; }
    expect(e).toBeInstanceOf(ChipcError);
    expect((e as ChipcError).code).toBe('circuit.build');
    expect((e as ChipcError).message).toMatch(/circuit-user-errors\.test\.ts:\d+:\d+: the circuit's build function threw TypeError: bad thing/);
    const own = new ChipcError('my.code', 'mine');
    let e2: unknown;
    try {
      buildCircuit(defineCircuit({ name: 'x', vocab: 4 }, () => { throw own; }));
    } catch (err) { e2 = err; }
    expect(e2).toBe(own);
  });
});

describe('meta data problems point at defineCircuit', () => {
  it('vocab: 0 names the circuit file and line', async () => {
    const f = circuitFile('vocab0.mts', [
      '',
      "export default defineCircuit({ name: 'v0', vocab: 0 }, (c) => {",
      '});',
    ]);
    const r = await cli('build', f, '-o', path.join(tmp, 'v0.chip-ir'));
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/vocab0\.mts:3:\d+: error\[circuit\.vocab\]/);
    expect(r.err).not.toMatch(/chipc\.js/);
  });
});

describe('a circuit that emits nothing', () => {
  it('is refused at compile with circuit.no-emit', () => {
    const ir = buildCircuit(defineCircuit({ name: 'quiet', vocab: 8 }, (c) => { c.tokenField('x', (t) => t); }));
    let e: unknown;
    try { compileCircuit(ir, resolveTarget('tiny').config); } catch (err) { e = err; }
    expect(e).toBeInstanceOf(ChipcError);
    expect((e as ChipcError).code).toBe('circuit.no-emit');
    expect((e as ChipcError).message).toMatch(/"quiet" emits nothing/);
  });
});

describe('ELF errors name the file', () => {
  const notElf = path.join(tmp, 'not-an-elf.elf');
  fs.writeFileSync(notElf, 'hello, world\n');
  for (const args of [['run', notElf], ['trace', notElf, '-o', path.join(tmp, 't.json')], ['emu', notElf]]) {
    it(`chipc ${args[0]}`, async () => {
      const r = await cli(...args);
      expect(r.code).toBe(2);
      expect(r.err).toContain(`${notElf}: ELF: `);
    });
  }
});
