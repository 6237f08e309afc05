/**
 * `chipc repl` and InterpreterOnChip (src/chip/repl.ts): evaluations are service calls whose
 * request is the source as console input. Checked here with a program that echoes its input
 * (test/helpers/input-echo.ts), on the chip circuit (IR) and through the weights, every token
 * against the golden emulator; the bundled interpreter's own tests are test/interp.test.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InterpreterOnChip, openInterpreter } from '../src/chip/repl.ts';
import { opensBlock } from '../src/cli/commands/repl.ts';
import { programOf } from '../src/chip/run.ts';
import { chipIr } from '../src/chip/build.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { formatToken } from '../riscv/protocol.ts';
import { inputEchoElf } from './helpers/input-echo.ts';
import { cli } from './helpers/cli.ts';
import { sharedChip, SHARED_CHIPS } from './helpers/shared-chips.ts';

const text = (b: Uint8Array) => new TextDecoder().decode(b);
const SHAPE = { codeBytes: 256, memBytes: 8192 };

describe('opensBlock', () => {
  it('counts braces outside strings and comments', () => {
    expect(opensBlock('fn f(x) {')).toBe(true);
    expect(opensBlock('fn f(x) { return x }')).toBe(false);
    expect(opensBlock('print("{")')).toBe(false);
    expect(opensBlock('print("\\"{")')).toBe(false);
    expect(opensBlock('x = 1 # {')).toBe(false);
    expect(opensBlock('while 1 {\n  if x {\n  }')).toBe(true);
    expect(opensBlock('}')).toBe(false);
  });
});

describe('InterpreterOnChip', () => {
  const elf = inputEchoElf();
  const prog = programOf(elf, SHAPE);

  it('runs evaluations one after another on the chip circuit, each checked against the golden emulator', () => {
    const interp = new InterpreterOnChip(prog, elf, null, { engine: 'ir', ir: chipIr(prog.chip), check: true });
    const bytes: number[] = [];
    const a = interp.evaluate('first line', { onByte: (b) => bytes.push(b) });
    expect(a).toMatchObject({ exitCode: 10, trap: null, divergence: null, generatedTokens: expect.any(Number) });
    expect(text(a.console)).toBe('first line');
    expect(bytes).toEqual([...a.console]);
    // The second call starts with the first one's HALT (re-entry) and reads its own, shorter input.
    const b = interp.evaluate('2nd');
    expect(b.exitCode).toBe(3);
    expect(text(b.console)).toBe('2nd');
    expect(b.promptTokens).toBe(2 + 3 * 2);
    expect(interp.evaluations).toBe(2);
    expect(() => interp.evaluate('x'.repeat(61))).toThrow(/input is 61 bytes; its input area holds 60/);
  }, 60_000);

  it('through the weights: the same answers, 0 divergences', async () => {
    // the test run's shared generic chip (4 KiB of code, 32 KiB of data), from its chip cache
    const spec = SHARED_CHIPS[0]!;
    const target = resolveTarget(spec.target);
    const p = programOf(elf, { codeBytes: spec.codeBytes, memBytes: spec.memBytes }, target.config);
    const chip = await sharedChip(spec);
    const interp = new InterpreterOnChip(p, elf, chip, { check: true });
    for (const s of ['weights', '', 'again, longer than before']) {
      const e = interp.evaluate(s);
      expect(e.divergence).toBeNull();
      expect(e.exitCode).toBe(s.length);
      expect(text(e.console)).toBe(s);
    }
  }, 240_000);

  it('a program without an input area is refused', () => {
    const plain = fs.readFileSync('fixtures/isa/zba.elf');
    expect(() => new InterpreterOnChip(programOf(plain, { memBytes: 65536 }), plain, null)).toThrow(/has no console input area/);
  });

  it('describes why a chip stopped', () => {
    const base = { exitCode: null, console: new Uint8Array(0), promptTokens: 3, generatedTokens: 7, instructions: null, seconds: 0 };
    expect(InterpreterOnChip.describeStop({ ...base, trap: 2, divergence: null })).toBe('the chip trapped: TRAP(fetch)');
    expect(InterpreterOnChip.describeStop({ ...base, trap: null, divergence: null })).toBe('no HALT within 7 tokens');
    expect(InterpreterOnChip.describeStop({ ...base, trap: null, divergence: { index: 4, expected: formatToken(1), got: formatToken(2) } }))
      .toMatch(/token 4 .* differs from the golden stream's/);
  });
});

describe('the bundled interpreter on the chip circuit', () => {
  it('evaluates big-integer arithmetic exactly and keeps definitions between evaluations, every token checked', async () => {
    const { interp } = await openInterpreter({ engine: 'ir', check: true });
    const a = 123456789123456789123456789n, b = 987654321987654321n;
    const e1 = interp.evaluate(`${a} * ${b}`);
    expect(e1.divergence).toBeNull();
    expect(e1.exitCode).toBe(0);
    expect(text(e1.console)).toBe(`${a * b}\n`);
    // A function and a global defined in one evaluation, used in the next.
    expect(interp.evaluate('fn sq(x) { return x * x }; big = 2 ** 70').exitCode).toBe(0);
    const e3 = interp.evaluate('sq(big) / 3');
    expect(e3.divergence).toBeNull();
    expect(text(e3.console)).toBe(`${(2n ** 70n) ** 2n / 3n}\n`);
    // An error is a message and exit code 1; the interpreter stays usable.
    const e4 = interp.evaluate('1 / 0');
    expect(e4.exitCode).toBe(1);
    expect(text(e4.console)).toMatch(/^error: line 1: division by zero/);
    expect(text(interp.evaluate('big - 1').console)).toBe(`${2n ** 70n - 1n}\n`);
  }, 120_000);
});

describe('chipc repl', () => {
  let dir: string;
  let file: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-repl-'));
    file = path.join(dir, 'echo.elf');
    fs.writeFileSync(file, inputEchoElf());
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('-e evaluates once; the exit status is the program\'s', async () => {
    const r = await cli('repl', '--program', file, '--engine', 'ir', '--code-size', '256', '--mem-size', '8192', '--check', '-e', 'hello', '--json');
    expect(r.code).toBe(5);
    expect(JSON.parse(r.out)).toMatchObject({ source: 'hello', console: 'hello', exitCode: 5, divergence: null });
  }, 60_000);

  it('refuses what it cannot run', async () => {
    const missing = await cli('repl', '--program', path.join(dir, 'none.elf'), '-e', '1');
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/none\.elf does not exist/);
    const both = await cli('repl', '--model', dir, '--engine', 'ir', '-e', '1');
    expect(both.code).toBe(2);
    expect(both.err).toMatch(/--model runs the given checkpoint/);
  });

  it('openInterpreter names a missing bundled image', async () => {
    await expect(openInterpreter({ elfPath: path.join(dir, 'nope.elf'), engine: 'ir' })).rejects.toThrow(/nope\.elf does not exist/);
  });
});
