/**
 * Numeric option values (src/cli/support/options.ts): one parser for every command, so "1e3", "0x10",
 * " 12", "1.0", "" and "abc" are refused with the flag's code instead of read by Number() (which
 * takes the first four and turns the last into NaN that a seed quietly read as 0).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { integerOption, memSizeOption, parseSize } from '../src/cli/support/options.ts';
import { ChipcError } from '../src/util/errors.ts';
import { cli } from './helpers/cli.ts';

const codeOf = (f: () => unknown): string | undefined => {
  try {
    f();
  } catch (e) {
    if (e instanceof ChipcError) return e.code;
    throw e;
  }
  return undefined;
};

describe('integerOption', () => {
  it('reads back every integer in its bounds written in decimal', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 40 }), (n) => integerOption(String(n), '--n', 'cli.n', { min: 0 }) === n));
    fc.assert(fc.property(fc.integer({ min: -1000, max: 1000 }), (n) => integerOption(String(n), '--n', 'cli.n', { min: -1000, max: 1000 }) === n));
  });

  it('refuses other spellings and values out of bounds, naming the flag, the value and the range', () => {
    for (const bad of ['', ' 12', '12 ', '1e3', '0x10', '1.0', '1.5', '+3', 'abc', '-5', '9007199254740993']) {
      expect(codeOf(() => integerOption(bad, '--top', 'cli.top', { min: 0 })), JSON.stringify(bad)).toBe('cli.top');
    }
    expect(codeOf(() => integerOption('7', '--hidden', 'cli.hidden', { min: 8 }))).toBe('cli.hidden');
    expect(codeOf(() => integerOption('4294967296', '--seed', 'cli.seed', { min: 0, max: 0xffffffff }))).toBe('cli.seed');
    expect(() => integerOption('0', '--top', 'cli.top', { min: 1 })).toThrow('--top must be a positive integer, not "0"');
    expect(() => integerOption('x', '--hidden', 'cli.hidden', { min: 8 })).toThrow('--hidden must be an integer ≥ 8, not "x"');
    expect(() => integerOption('-1', '--seed', 'cli.seed', { min: 0, max: 0xffffffff })).toThrow('--seed must be an integer in [0, 4294967295], not "-1"');
  });
});

describe('sizes', () => {
  it('parseSize: decimal, 0x hex, k / m suffixes', () => {
    expect([parseSize('96k', 'x'), parseSize('0x40', 'x'), parseSize('1M', 'x'), parseSize('100', 'x')]).toEqual([98304, 64, 1 << 20, 100]);
    for (const bad of ['', '1e3', '1.5k', 'k', '0x', '-4']) expect(codeOf(() => parseSize(bad, 'x')), bad).toBe('cli.number');
  });

  it('--mem-size: a multiple of 4 bytes ≥ 64, in any size spelling', () => {
    expect([memSizeOption('64'), memSizeOption('4k'), memSizeOption('0x100')]).toEqual([64, 4096, 256]);
    for (const bad of ['60', '66', '1e3']) expect(codeOf(() => memSizeOption(bad)), bad).toMatch(/^cli\.(mem-size|number)$/);
  });
});

describe('on the command line', () => {
  it('check --seed abc is refused (it used to run with seed 0)', async () => {
    const r = await cli('check', 'circuits/examples/regfile.ts', '--random', '4', '--seed', 'abc');
    expect(r.code).toBe(2);
    expect(r.err).toContain('[cli.seed]');
  });

  it('trace --mem-size takes the size spellings of emu; a bad count is refused without a file', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-options-'));
    try {
      const a = path.join(dir, 'a.json');
      const b = path.join(dir, 'b.json');
      expect((await cli('trace', 'fixtures/isa/zba.elf', '-o', a, '--mem-size', '64k')).code).toBe(0);
      expect((await cli('trace', 'fixtures/isa/zba.elf', '-o', b, '--mem-size', '65536')).code).toBe(0);
      expect(fs.readFileSync(a).equals(fs.readFileSync(b))).toBe(true);
      const bad = path.join(dir, 'bad.json');
      const r = await cli('trace', 'fixtures/isa/zba.elf', '-o', bad, '--max-instructions', '1e6');
      expect(r.code).toBe(2);
      expect(r.err).toContain('[cli.max-instructions]');
      expect(fs.existsSync(bad)).toBe(false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('--tokens', () => {
  it('takes comma-separated decimal ids; an id past 2^53 or in another spelling is refused', async () => {
    const { parseTokenList } = await import('../src/cli/commands/exec.ts');
    expect(parseTokenList('1, 2,30')).toEqual([1, 2, 30]);
    for (const bad of ['1,2e3', '0x10', '-1', '9007199254740993', '']) expect(codeOf(() => parseTokenList(bad)), bad).toBe('cli.tokens');
  });
});

describe('docs/cli.md documents every option', () => {
  it('each long option of each command appears (as --long or its short form) in that command\'s section', async () => {
    const { buildProgram } = await import('../src/cli/main.ts');
    const doc = fs.readFileSync('docs/cli.md', 'utf8');
    const sections = doc.split(/\n(?=### )/).filter((s) => s.startsWith('### '));
    const program = await buildProgram({ code: 0 }, ['node', 'chipc', 'help']); // every command module
    const missing: string[] = [];
    type Cmd = { name(): string; commands: readonly Cmd[]; options: readonly { long?: string; short?: string; negate: boolean }[] };
    const walk = (cmd: Cmd, parent: string | null): void => {
      for (const c of cmd.commands) {
        const name = c.name();
        // a section is the command's when its heading names it: `chipc NAME …`, or for a
        // subcommand `chipc PARENT NAME …` or one of the `NAME FILE …` forms after it
        const heading = (s: string) => s.split('\n')[0]!;
        const mine = sections.filter((s) => parent === null
          ? heading(s).includes(`\`chipc ${name} `) || heading(s).includes(`\`chipc ${name}\``)
          : heading(s).includes(`\`chipc ${parent} `) && (heading(s).includes(`chipc ${parent} ${name} `) || heading(s).includes(`\`${name} FILE`)));
        const text = mine.join('\n');
        const label = parent === null ? name : `${parent} ${name}`;
        if (mine.length === 0) missing.push(`${label}: no section`);
        for (const o of c.options) {
          const long = o.negate ? o.long!.replace(/^--no-/, '--') : o.long!;
          const forms = [long, o.long!, `--[no-]${long.slice(2)}`, ...(o.short ? [`${o.short} `, `${o.short}\``] : [])];
          if (!forms.some((f) => text.includes(f))) missing.push(`${label}: ${o.long}`);
        }
        if (c.commands.length > 0) walk(c, name);
      }
    };
    walk(program as unknown as Cmd, null);
    expect(missing).toEqual([]);
  });
});
