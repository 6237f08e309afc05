/**
 * Console input (docs/token-protocol.md "Console input"): the words that put bytes into a
 * program's input area, the loader tokens that feed them, the golden emulator reading them, and
 * the chip circuit (IR) reading the same bytes from a prompt, by state and by loader prompt.
 * The weights run of the same program is in test/rv32-generic.test.ts (it shares that file's chip).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { applyWrites, inputAreaOf, inputWrites, loaderAddressToken, startPrompt, writeTokens } from '../riscv/console-input.ts';
import { goldenTokens } from '../riscv/golden-trace.ts';
import { BOS_ID, CODE_BASE, decodeToken, encodeToken } from '../riscv/protocol.ts';
import { Memory } from '../riscv/memory.ts';
import { loadElf } from '../riscv/elf.ts';
import { programOf } from '../src/chip/run.ts';
import { runOnInterpreter } from '../src/chip/build.ts';
import { inputEchoElf } from './helpers/input-echo.ts';
import { chipError, expectChipcError } from './helpers/assert.ts';

/** `f` throws a ChipcError with this code and a message matching `message`. */
function expectError(f: () => unknown, code: string, message: RegExp): void {
  const e = chipError(f);
  expect(e.code).toBe(code);
  expect(e.message).toMatch(message);
}
import { cli } from './helpers/cli.ts';

const utf8 = (s: string) => new TextEncoder().encode(s);

describe('inputWrites', () => {
  const area = { address: 0x80002000, capacity: 16 };

  it('writes the count, then the bytes little-endian, every covered word (zero words too)', () => {
    const w = inputWrites(area, Uint8Array.from([1, 2, 3, 4, 0, 0, 0, 0, 0xff]));
    expect(w).toEqual([[0x80002000, 9], [0x80002004, 0x04030201], [0x80002008, 0], [0x8000200c, 0xff]]);
    expect(inputWrites(area, new Uint8Array(0))).toEqual([[0x80002000, 0]]);
  });

  it('round-trips any bytes through memory as getchar reads them', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 16 }), (bytes) => {
      const mem = new Memory({ base: CODE_BASE, size: 0x4000 });
      applyWrites(mem, inputWrites(area, bytes));
      const n = mem.read32(area.address);
      const back = Array.from({ length: n }, (_, i) => (mem.read32(area.address + 4 + (i & ~3)) >>> (8 * (i & 3))) & 0xff);
      expect(back).toEqual([...bytes]);
    }), { seed: 31, numRuns: 200 });
  });

  it('refuses input the program cannot take', () => {
    expectError(() => inputWrites(area, new Uint8Array(17), 'p.elf'), 'input.too-long', /p\.elf: the input is 17 bytes; its input area holds 16/);
    expectError(() => inputWrites(null, utf8('x'), 'p.elf'), 'input.none', /p\.elf has no console input area/);
    expect(inputWrites(null, new Uint8Array(0))).toEqual([]);
    expectError(() => inputWrites({ address: 0x80002002, capacity: 8 }, utf8('x')), 'input.area', /not 4-aligned/);
  });

  it('reads the area from the symbols', () => {
    expect(inputAreaOf(new Map([['__input_area', 0x80004400], ['__input_size', 1024]]))).toEqual({ address: 0x80004400, capacity: 1020 });
    expect(inputAreaOf(new Map([['__input_area', 0x80004400]]))).toBeNull();
  });
});

describe('the input prompt', () => {
  it('is BOS, an E D H triple per word, J(entry)', () => {
    const p = startPrompt([[0x80001000, 5], [0x80001004, 0xdeadbeef]], 0x80000010, 65536);
    expect(p.map((t) => decodeToken(t))).toEqual([
      { kind: 'BOS' },
      { kind: 'E', j: 0, v: 0x400 }, { kind: 'D', v: 5 }, { kind: 'H', v: 0 },
      { kind: 'E', j: 0, v: 0x401 }, { kind: 'D', v: 0xbeef }, { kind: 'H', v: 0xdead },
      { kind: 'J', w: 4 },
    ]);
    expect(p[0]).toBe(BOS_ID);
  });

  it('names a word from 0x4000 with K (protocol v8): a 128 KiB data RAM\'s upper half', () => {
    const p = startPrompt([[0x80010008, 0x12abbeef], [0x8001fffc, 7]], 0x80000000, 128 * 1024);
    expect(p.slice(1, -1).map((t) => decodeToken(t))).toEqual([
      { kind: 'K', v: 2 }, { kind: 'D', v: 0xbeef }, { kind: 'H', v: 0x12ab },
      { kind: 'K', v: -1 }, { kind: 'D', v: 7 }, { kind: 'H', v: 0 },
    ]);
  });

  it('loaderAddressToken: E(0, p) below 0x4000, K(p − 0x4000) below 0x8000, OUT(0, p − 0x8000) above; no start in another slot', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 0x80ff }), (p) => {
      const t = decodeToken(loaderAddressToken(p));
      // p as the chip reads it back (cpu-input.ts loadP), from the decoded token alone
      const back = t.kind === 'E' ? 0x4000 * t.j + (t.v & 0x3fff) : t.kind === 'K' ? 0x4000 + (t.v & 0x3fff) : t.kind === 'OUT' && t.j === 0 ? 0x8000 + t.b : -1;
      expect(back).toBe(p);
      if (t.kind === 'E') expect(t.j).toBe(0);
    }), { numRuns: 500, seed: 20261205 });
    for (const p of [-1, 0x8100, 1.5]) expectChipcError(() => loaderAddressToken(p), 'input.address');
  });

  it('refuses words outside the data RAM', () => {
    expectError(() => writeTokens([[0x80010000, 1]], 65536), 'input.address', /not a 4-aligned address in the chip's data RAM/);
    expectChipcError(() => writeTokens([[0x80000002, 1]], 65536), 'input.address');
  });
});

describe('the golden emulator and the chip circuit read the same input', () => {
  const elf = inputEchoElf();

  it('goldenTokens: the program echoes the input; the stream starts with the input prompt', () => {
    const input = utf8('héllo, chip');
    const g = goldenTokens(elf, { input, mem: { size: 65536 } });
    expect([...g.console]).toEqual([...input]);
    expect(g.halt.exitCode).toBe(input.length);
    const prompt = startPrompt(inputWrites(inputAreaOf(loadElf(elf).symbols), input), CODE_BASE, 65536);
    expect([...g.tokens.subarray(0, prompt.length)]).toEqual(prompt);
    // Without input nothing is echoed,
    const empty = goldenTokens(elf, { mem: { size: 65536 } });
    expect(empty.console.length).toBe(0);
    // and no input writes nothing: a fresh RAM's count word reads 0, the prompt is [BOS, J(entry)].
    expect([...empty.tokens.subarray(0, 2)]).toEqual([BOS_ID, encodeToken({ kind: 'J', w: 0 })]);
  });

  it('the chip circuit generates the golden stream for the input, by state and by loader prompt', () => {
    const input = utf8('0123456789 abc\n\u0000\u00ff!');
    const prog = programOf(elf, { codeBytes: 256, memBytes: 8192, input });
    expect(prog.start.length).toBe(2 + 3 * (1 + Math.ceil(input.length / 4)));
    expect(prog.loader.slice(-prog.start.length + 1)).toEqual(prog.start.slice(1));
    const g = goldenTokens(elf, { input, mem: { size: prog.memBytes }, codeBytes: prog.codeBytes });
    for (const load of ['state', 'prompt'] as const) {
      const r = runOnInterpreter(prog, { maxTokens: 5000, golden: g.tokens, goldenPc: g.tokenPc, load });
      expect(r.divergence).toBeNull();
      expect(r.halted).toBe(true);
      expect(r.exitCode).toBe(input.length);
      expect(r.tokens.slice(r.promptLength)).toEqual([...g.tokens.subarray(prog.start.length)]);
    }
  }, 60_000);

  it('chipc emu / run --engine ir take --input and --input-file; a too-long input is refused', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-input-'));
    try {
      const file = path.join(dir, 'echo.elf');
      fs.writeFileSync(file, elf);
      const emu = await cli('emu', file, '--input', 'abc', '--json');
      expect(JSON.parse(emu.out)).toMatchObject({ console: 'abc', exitCode: 3 });
      expect(emu.code).toBe(3);
      fs.writeFileSync(path.join(dir, 'in.txt'), 'from a file');
      const run = await cli('run', file, '--engine', 'ir', '--check', '--input-file', path.join(dir, 'in.txt'), '--code-size', '256', '--mem-size', '8192');
      expect(run.out).toContain('from a file');
      expect(run.out).toContain('0 divergences');
      expect(run.code).toBe(11);
      const long = await cli('emu', file, '--input', 'x'.repeat(61));
      expect(long.code).toBe(2);
      expect(long.err).toMatch(/input\.too-long/);
      const both = await cli('run', file, '--input', 'a', '--input-file', path.join(dir, 'in.txt'));
      expect(both.code).toBe(2);
      expect(both.err).toMatch(/--input and --input-file exclude each other/);
      const missing = await cli('emu', file, '--input-file', path.join(dir, 'nope.txt'));
      expect(missing.code).toBe(2);
      expect(missing.err).toMatch(/cannot read --input-file .*nope\.txt: no such file/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
