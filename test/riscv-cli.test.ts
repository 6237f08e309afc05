/** Tests of `chipc emu` (src/cli/commands/emu.ts) through a commander program of its own. */
import { afterAll, describe, expect, it, vi } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Command } from 'commander';
import { registerEmu, exitStatus } from '../src/cli/commands/emu.ts';
import { parseSize } from '../src/cli/support/options.ts';
import { assembleElf } from '../riscv/index.ts';
import { ChipcError } from '../src/util/errors.ts';

async function emu(args: string[]): Promise<{ code: number; stdout: string; error?: unknown }> {
  const sink = { code: -1 };
  const program = new Command().exitOverride();
  registerEmu(program, (fn) => async () => { sink.code = await fn(); });
  let stdout = '';
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
    return true;
  });
  try {
    await program.parseAsync(['node', 'chipc', 'emu', ...args]);
    return { code: sink.code, stdout };
  } catch (error) {
    return { code: -1, stdout, error };
  } finally {
    spy.mockRestore();
  }
}

describe('chipc emu', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-emu-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, src: string) => {
    const f = path.join(dir, name);
    fs.writeFileSync(f, assembleElf(src).elf);
    return f;
  };
  const hello = write('hello.elf', 'li a0, 1\nla a1, m\nli a2, 3\nli a7, 64\necall\nli a0, 4\nli a7, 93\necall\nm: .byte 104, 105, 10');

  it('prints the console and exits with the program exit code', async () => {
    const r = await emu([hello]);
    expect(r.code).toBe(4);
    expect(r.stdout).toMatch(/^hi\n/);
    expect(r.stdout).toMatch(/exit: exit\(4\).* 9 instructions/);
  });
  it('--json and --trace', async () => {
    const r = await emu([hello, '--json', '--trace']);
    const doc = JSON.parse(r.stdout);
    expect([doc.reason, doc.exitCode, doc.instret, doc.console, doc.trace.length]).toEqual(['exit', 4, 9, 'hi\n', 9]);
    expect(doc.trace[0]).toEqual({ pc: '0x80000000', word: '0x00100513', disasm: 'addi a0, zero, 1', rd: 'a0', value: 1 });
  });
  it('limit, illegal and bad ELF', async () => {
    const loop = write('loop.elf', 'l: j l');
    const r = await emu([loop, '--max-instructions', '100', '--json']);
    expect([r.code, JSON.parse(r.stdout).reason, JSON.parse(r.stdout).instret]).toEqual([1, 'limit', 100]);
    const ill = write('ill.elf', '.word 0');
    expect((await emu([ill])).code).toBe(1);
    const bad = path.join(dir, 'bad.elf');
    fs.writeFileSync(bad, 'not an elf at all, definitely not one of those, no sir');
    expect((await emu([bad])).error).toBeInstanceOf(ChipcError);
    expect(() => parseSize('12q', '--mem-size')).toThrow(ChipcError);
    expect([parseSize('64k', 'x'), parseSize('0x100', 'x'), parseSize('2m', 'x')]).toEqual([65536, 256, 2097152]);
    expect([exitStatus(0), exitStatus(255), exitStatus(256), exitStatus(-1)]).toEqual([0, 255, 255, 255]);
  });
});
