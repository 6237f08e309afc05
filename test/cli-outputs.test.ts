/**
 * Outputs are never inputs: every command that writes refuses an output that is one of its inputs
 * (the same path, a link to it), lies inside an input directory or contains an input — exit 2,
 * `cli.output-is-input`, the input untouched — refuses an existing output without --overwrite,
 * creates the missing directories above an output (and refuses one below a file, `cli.output-dir`),
 * and removes the temporaries a killed earlier write of the same output left behind.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from './helpers/cli.ts';
import { removeStaleTemps, tempSibling } from '../src/util/temp-files.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-outputs-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));
const at = (...p: string[]) => path.join(tmp, ...p);

/** sha256 of a file, or of a directory's files (name + bytes), to show an input untouched. */
function digest(p: string): string {
  const h = crypto.createHash('sha256');
  if (fs.statSync(p).isDirectory()) {
    for (const n of fs.readdirSync(p).sort()) h.update(n).update(fs.readFileSync(path.join(p, n)));
  } else {
    h.update(fs.readFileSync(p));
  }
  return h.digest('hex');
}

const circuit = at('counter.mts');
const elf = at('hello.elf');
const ckptDir = at('ckpt');
const chipFile = at('counter.chip');
const storeFile = at('s.store');

beforeAll(async () => {
  fs.writeFileSync(circuit, fs.readFileSync('circuits/examples/counter.ts', 'utf8').replace("'../../src/dsl/index.ts'", JSON.stringify(path.resolve('src/dsl/index.ts'))));
  fs.copyFileSync('fixtures/firmware/hello.elf', elf);
  expect((await cli('compile', circuit, '-o', ckptDir, '--chip', chipFile, '--no-progress')).code).toBe(0);
  expect((await cli('store', 'init', storeFile, '--max-files', '4', '--content-max', '64')).code).toBe(0);
}, 120_000);

// [command line, the input it must not destroy]
const cases: [string, string[], string][] = [
  ['build -o the circuit', ['build', circuit, '-o', circuit], circuit],
  ['trace -o the ELF', ['trace', elf, '-o', elf], elf],
  ['diff --write-golden the checkpoint file', ['diff', path.join(ckptDir, 'model.safetensors'), '--write-golden', path.join(ckptDir, 'model.safetensors')], path.join(ckptDir, 'model.safetensors')],
  ['diff --write-golden inside the checkpoint', ['diff', ckptDir, '--write-golden', path.join(ckptDir, 'model.safetensors')], ckptDir],
  ['compile -o the circuit', ['compile', circuit, '-o', circuit], circuit],
  ['compile --chip the circuit', ['compile', circuit, '--chip', circuit], circuit],
  ['compile --svg the circuit', ['compile', circuit, '--svg', circuit], circuit],
  ['compile -o a folder holding the circuit', ['compile', circuit, '-o', tmp], circuit],
  ['compact -o inside the checkpoint', ['compact', ckptDir, '-o', path.join(ckptDir, 'x.chip')], ckptDir],
  ['expand -o the .chip file', ['expand', chipFile, '-o', chipFile], chipFile],
  ['merge -o the chip', ['merge', '--host', ckptDir, '--chip', chipFile, '-o', chipFile], chipFile],
  ['run --emit the ELF', ['run', elf, '--emit', elf], elf],
  ['store chip -o the store', ['store', 'chip', storeFile, '-o', storeFile], storeFile],
  ['store export -o the store', ['store', 'export', storeFile, '-o', storeFile], storeFile],
  ['store import -o the store', ['store', 'import', storeFile, '-o', storeFile], storeFile],
];

describe('an output that is an input is refused', () => {
  for (const [label, args, input] of cases) {
    it(label, async () => {
      const before = digest(input);
      const r = await cli(...args);
      expect(r.code, r.err).toBe(2);
      expect(r.err).toMatch(/cli\.output-is-input/);
      expect(digest(input)).toBe(before);
    });
  }

  it('a symbolic link to the input counts as the input', async () => {
    const link = at('link-to-hello.elf');
    fs.symlinkSync(elf, link);
    const before = digest(elf);
    const r = await cli('trace', elf, '-o', link);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/-o .*link-to-hello\.elf is the input/);
    expect(digest(elf)).toBe(before);
  });
});

describe('an existing output needs --overwrite', () => {
  for (const [label, args] of [
    ['build', ['build', circuit, '-o']],
    ['trace', ['trace', elf, '-o']],
    ['diff --write-golden', ['diff', ckptDir, '--write-golden']],
    ['compile --svg', ['compile', circuit, '--svg']],
  ] as const) {
    it(label, async () => {
      const out = at(`existing-${label.replace(/\W+/g, '-')}`);
      fs.writeFileSync(out, 'keep me');
      const r = await cli(...args, out);
      expect(r.code).toBe(2);
      expect(r.err).toMatch(/cli\.exists/);
      expect(fs.readFileSync(out, 'utf8')).toBe('keep me');
      const again = await cli(...args, out, '--overwrite');
      expect(again.code, again.err).toBe(0);
      expect(fs.readFileSync(out, 'utf8')).not.toBe('keep me');
    });
  }
});

describe('an output in directories that do not exist yet', () => {
  // every kind of writer: IR, JSON trace, golden file, store file, compact checkpoint
  for (const [label, args, name] of [
    ['build', ['build', circuit, '-o'], 'c.chip-ir'],
    ['trace', ['trace', elf, '-o'], 't.json'],
    ['diff --write-golden', ['diff', ckptDir, '--write-golden'], 'g.json'],
    ['store init', ['store', 'init'], 's.store'],
    ['compact', ['compact', ckptDir, '-o'], 'c.chip'],
  ] as const) {
    it(`${label}: the missing directories are created; below a file it is refused before anything is written`, async () => {
      const out = at(`new-${label.replace(/\W+/g, '-')}`, 'a', 'b', name);
      const r = await cli(...args, out);
      expect(r.code, r.err).toBe(0);
      expect(fs.statSync(out).size).toBeGreaterThan(0);
      const blocked = at(`blocked-${label.replace(/\W+/g, '-')}`);
      fs.writeFileSync(blocked, 'a file');
      const below = path.join(blocked, 'sub', name);
      const bad = await cli(...args, below);
      expect(bad.code).toBe(2);
      expect(bad.err).toMatch(/cli\.output-dir/);
      expect(bad.err).toContain(`${blocked} is a file, not a directory`);
      expect(fs.readFileSync(blocked, 'utf8')).toBe('a file');
    });
  }
});

describe('temporaries of a killed write', () => {
  it('are removed by the next write of the same output; a live process\'s are kept', async () => {
    const out = at('again.chip-ir');
    // a pid no process has (above Linux's pid_max), and this process's own
    const dead = path.join(tmp, `.again.chip-ir.tmp.2147483646.0123456789ab.tmp`);
    const live = tempSibling(out);
    const other = path.join(tmp, `.other.chip-ir.tmp.2147483646.0123456789ab.tmp`);
    for (const f of [dead, live, other]) fs.writeFileSync(f, 'partial');
    const r = await cli('build', circuit, '-o', out);
    expect(r.code, r.err).toBe(0);
    expect(fs.existsSync(dead)).toBe(false);
    expect(fs.existsSync(live)).toBe(true);
    expect(fs.existsSync(other)).toBe(true);
    expect(removeStaleTemps(path.join(tmp, 'other.chip-ir'))).toEqual([other]);
    fs.rmSync(live);
  });
});

describe('store init: the chunk pool', () => {
  const limitsOf = async (...args: string[]) => {
    const f = at(`pool-${args.join('_').replace(/\W+/g, '')}.cst`);
    const r = await cli('store', 'init', f, ...args, '--json');
    expect(r.code, r.err).toBe(0);
    return (JSON.parse(r.out) as { limits: { chunkPool: number; maxFiles: number } }).limits;
  };
  it('is 2 per file and at least one maximum-size file\'s, as --help says', async () => {
    expect((await limitsOf()).chunkPool).toBe(1024);
    expect((await limitsOf('--max-files', '4', '--content-max', '200')).chunkPool).toBe(Math.ceil((32 + 200) / 16));
    expect((await limitsOf('--max-files', '40', '--content-max', '20')).chunkPool).toBe(80);
    expect((await limitsOf('--content-max', '3000')).chunkPool).toBe(1024);
    expect((await limitsOf('--max-files', '4', '--chunk-pool', '99')).chunkPool).toBe(99);
  });
  it('an explicit pool too small for one file is refused naming the option', async () => {
    const r = await cli('store', 'init', at('small-pool.cst'), '--chunk-pool', '3');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/store\.params.*chunkPool/);
  });
  it('a killed save\'s temporary is removed by the next save of the store file', async () => {
    const f = at('saved.cst');
    const dead = path.join(tmp, '.saved.cst.tmp.2147483646.0123456789ab.tmp');
    fs.writeFileSync(dead, 'partial');
    expect((await cli('store', 'init', f, '--max-files', '4', '--content-max', '64')).code).toBe(0);
    expect(fs.existsSync(dead)).toBe(false);
  });
});
