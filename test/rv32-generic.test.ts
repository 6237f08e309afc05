/**
 * The generic RV32IM+Zba chip (issue: one chip, any program): ONE compiled chip runs programs with
 * different code ends, tohost addresses and entries through its weights, each matching the golden
 * emulator token for token; and no false pass — where the emulator stops on an illegal
 * instruction, an ebreak or a fault, the chip emits the same TRAP(cause) at the same position
 * (weights and IR), and `chipc run --check` fails naming the cause and the pc.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assembleElf, encodeJ } from '../riscv/index.ts';
import { goldenTokens, type GoldenTrace } from '../riscv/golden-trace.ts';
import { TRAP_CAUSE_NAMES, formatToken } from '../riscv/protocol.ts';
import { programOf, runOnChip, type ChipProgram } from '../src/chip/run.ts';
import { compileGenericChip, runOnInterpreter } from '../src/chip/build.ts';
import type { ChipModel } from '../src/chip/loaded.ts';
import { sharedChip } from './helpers/shared-chips.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { cli } from './helpers/cli.ts';
import { expectChipcError } from './helpers/assert.ts';
import { inputEchoElf } from './helpers/input-echo.ts';

const target = resolveTarget('chip-test');
const hex = (x: number) => `0x${(x >>> 0).toString(16)}`;

/** The golden stream of `elf` on a chip with these RAMs, and the run options that check against it. */
function golden(elf: Uint8Array, prog: ChipProgram, maxTokens = 20_000): { g: GoldenTrace; opts: Parameters<typeof runOnInterpreter>[1] } {
  const g = goldenTokens(elf, { mem: { size: prog.memBytes }, codeBytes: prog.codeBytes, maxInstructions: maxTokens });
  return { g, opts: { maxTokens, golden: g.tokens, goldenPc: g.tokenPc, goldenEnd: { reason: g.halt.reason, message: g.halt.message } } };
}

describe('one generic chip runs different programs (weights and IR)', () => {
  // 4 KiB of code, 32 KiB of data: every program below fits; their code ends, tohost and entries differ.
  const SHAPE = { codeBytes: 4096, memBytes: 32 * 1024 };
  let chip: ChipModel;
  beforeAll(async () => {
    chip = await sharedChip({ target: 'chip-test', ...SHAPE });
  }, 240_000);

  const programs = [
    ['fixtures/firmware/hello.elf', 'exit'],
    ['fixtures/isa/zba.elf', 'tohost'], // halts by a store to its tohost word
    ['fixtures/isa/fence.elf', 'tohost'], // self-modifying code: stores into its code (A tokens)
    ['fixtures/isa/bn.exit.elf', 'exit'],
  ] as const;
  for (const [file, how] of programs) {
    it(`${path.basename(file)} (${how}) runs to HALT with the golden stream, in the state and by its loader prompt`, () => {
      const elf = fs.readFileSync(file);
      const prog = programOf(elf, SHAPE, target.config);
      const { g, opts } = golden(elf, prog);
      expect(g.halt.reason).toBe(how);
      for (const load of ['state', 'prompt'] as const) {
        const r = runOnChip(chip, prog, { ...opts, load });
        expect(r.divergence).toBeNull();
        expect(r.halted).toBe(true);
        expect(r.exitCode).toBe(g.halt.exitCode === null ? null : Math.min(255, g.halt.exitCode >>> 0));
        expect(r.tokens.slice(r.promptLength)).toEqual([...g.tokens.subarray(2)]);
      }
    }, 120_000);
  }

  // (a hidden size too small is fit.width: test/compile-errors.test.ts)
  it('an explicit hidden size (a chip to merge: the host\'s times a power of four) is emitted as given and runs the same', () => {
    const natural = chip.weights.config.hiddenSize;
    const spec = { targetName: 'chip-test', target: target.config, ...SHAPE };
    const wide = compileGenericChip({ ...spec, hidden: 4 * natural });
    expect(wide.weights.config.hiddenSize).toBe(4 * natural);
    expect(wide.weights.config.layerTypes).toEqual(chip.weights.config.layerTypes);
    // a short program through the 4× wider weights (a store, a byte load, a multiply, console output)
    const { elf } = assembleElf(`
      li t0, 0x12345678
      sw t0, -8(sp)
      lbu a0, -7(sp)
      li t1, 3
      mul a0, a0, t1
      li t2, 0x10000000
      sb a0, 0(t2)
      li a7, 93
      ecall
    `);
    const prog = programOf(elf, SHAPE, target.config);
    const { g, opts } = golden(elf, prog);
    expect(g.halt.exitCode).toBe((0x56 * 3) >>> 0);
    const r = runOnChip(wide, prog, { ...opts, load: 'prompt' });
    expect(r.divergence).toBeNull();
    expect(r.tokens.slice(r.promptLength)).toEqual([...g.tokens.subarray(2)]);
  }, 240_000);

  it('console input fed after the program reaches it through the weights, by state and by loader prompt', () => {
    const elf = inputEchoElf();
    for (const text of ['', 'weights read this', 'a\u0000b\u00ff\n']) {
      const input = new TextEncoder().encode(text);
      const prog = programOf(elf, { ...SHAPE, input }, target.config);
      const g = goldenTokens(elf, { input, mem: { size: prog.memBytes }, codeBytes: prog.codeBytes });
      expect([...g.console]).toEqual([...input]);
      for (const load of ['state', 'prompt'] as const) {
        const r = runOnChip(chip, prog, { maxTokens: 5000, golden: g.tokens, goldenPc: g.tokenPc, load });
        expect(r.divergence).toBeNull();
        expect(r.exitCode).toBe(input.length);
        expect(r.tokens.slice(r.promptLength)).toEqual([...g.tokens.subarray(prog.start.length)]);
      }
    }
  }, 120_000);

  it('protocol v6 result forms at their edges (narrow, wide, pointer, full), at every window position: the golden stream, and the values committed', () => {
    // Each value is built by li (lui, addi: both results are emitted) and folded into t0 by xor and
    // into t2 by add, so a wrongly committed value changes later results and the exit code.
    const values = [
      0x80000000, 0x8fffffff, 0x8001fffc, 0x90000000, 0xe0000000, 0xefffffff, 0xf0000000, 0xdfffffff, 0x1fffffff, 0x20000000,
      -4096, -4097, -8192, -8193, 8191, 8192, -1,
    ];
    const body = values.map((v) => `li t1, ${v | 0}\nxor t0, t0, t1\nadd t2, t2, t1\n`).join('');
    const exit = 'xor t0, t0, t2\nsrli t1, t0, 16\nxor t0, t0, t1\nsrli t1, t0, 8\nxor t0, t0, t1\nandi a0, t0, 255\nli a7, 93\necall';
    let pointerForms = 0;
    let fullE = 0;
    for (let pad = 0; pad < 4; pad++) {
      const { elf } = assembleElf(`${'addi zero, zero, 0\n'.repeat(pad)}${body}${exit}`);
      const prog = programOf(elf, SHAPE, target.config);
      const { g, opts } = golden(elf, prog);
      expect(g.halt.reason).toBe('exit');
      const toks = [...g.tokens].map(formatToken);
      for (let i = 1; i < toks.length; i++) {
        // after a D: E or K with a payload in [−8192, −4096) (quadrant 10) is a pointer's high half
        const m = /^(?:E\(\d, |K\()(-?\d+)\)$/.exec(toks[i]!);
        if (toks[i - 1]!.startsWith('D(') && m && Number(m[1]) < -4096) pointerForms++;
        if (toks[i - 1]!.startsWith('D(') && /^H\(0xe/.test(toks[i]!)) fullE++;
      }
      const r = runOnChip(chip, prog, opts);
      expect(r.divergence).toBeNull();
      expect(r.exitCode).toBe(g.halt.exitCode);
      expect(r.tokens.slice(r.promptLength)).toEqual([...g.tokens.subarray(2)]);
    }
    expect(pointerForms).toBeGreaterThanOrEqual(4 * 3); // the three pointers at every pad
    expect(fullE).toBeGreaterThanOrEqual(4 * 2); // 0xe0000000 and 0xefffffff take D, H

    // A divergence on the E of a pointer names the words each stream's D, E pair carries.
    const { elf } = assembleElf(`${body}${exit}`);
    const prog = programOf(elf, SHAPE, target.config);
    const { g, opts } = golden(elf, prog);
    const at = [...g.tokens].findIndex((t, i) => i > 0 && formatToken(g.tokens[i - 1]!).startsWith('D(') && formatToken(t) === 'E(2, -8192)');
    expect(at).toBeGreaterThan(1); // li t1, 0x80000000 at slot 1: D(0), E(2, -8192)
    const wrong = Int32Array.from(g.tokens);
    wrong[at] = g.tokens[at]! + 1; // E(2, -8191): the pointer 0x80010000
    const r = runOnChip(chip, prog, { ...opts, golden: wrong });
    expect(r.divergence).toMatchObject({ position: at, expected: 'E(2, -8191) = 0x80010000', got: 'E(2, -8192) = 0x80000000' });
  }, 120_000);

  it('a non-exit ecall leaves −38 (ENOSYS) in a0 at every window position, as the emulator', () => {
    for (let pad = 0; pad < 4; pad++) {
      const src = `${'addi zero, zero, 0\n'.repeat(pad)}li a7, 63\necall\nmv a1, a0\nli a7, 93\naddi a0, a1, 43\necall`;
      const { elf } = assembleElf(src);
      const prog = programOf(elf, SHAPE, target.config);
      const { g, opts } = golden(elf, prog);
      expect(g.halt.exitCode).toBe(5); // −38 + 43, computed by the emulator from a0 after the ecall
      const r = runOnChip(chip, prog, opts);
      expect(r.divergence).toBeNull();
      expect(r.exitCode).toBe(5);
      // the ecall is the instruction after the padding and `li a7, 63`; the exit's ecall is not listed
      expect(r.systemCalls).toEqual([{ pc: 0x80000000 + 4 * (pad + 1), count: 1 }]);
    }
  }, 60_000);

  it('the system calls other than exit are counted by the pc of their ecall (weights and IR); a program without any lists none', () => {
    // three passes of a loop over a write (a7 = 64) and one other call (a7 = 17), then exit: the
    // ecalls are words 2 and 4 of the image
    const src = 'li t0, 3\nloop:\nli a7, 64\necall\nli a7, 17\necall\naddi t0, t0, -1\nbnez t0, loop\nli a7, 93\nli a0, 0\necall';
    const { elf } = assembleElf(src);
    const prog = programOf(elf, SHAPE, target.config);
    const want = [{ pc: 0x80000008, count: 3 }, { pc: 0x80000010, count: 3 }];
    for (const r of [runOnChip(chip, prog, { maxTokens: 500 }), runOnInterpreter(prog, { maxTokens: 500 })]) {
      expect(r.exitCode).toBe(0);
      expect(r.systemCalls).toEqual(want);
    }
    const hello = programOf(fs.readFileSync('fixtures/firmware/hello.elf'), SHAPE, target.config);
    expect(runOnInterpreter(hello, { maxTokens: 5000 }).systemCalls).toEqual([]);
  }, 60_000);

  it('the configuration words differ between the programs (code end, tohost), and the chip has no program constant', () => {
    const a = programOf(fs.readFileSync('fixtures/firmware/hello.elf'), SHAPE, target.config);
    const b = programOf(fs.readFileSync('fixtures/isa/fence.elf'), SHAPE, target.config);
    expect(a.config.codeEnd).not.toBe(b.config.codeEnd);
    expect(a.config.tohost === null || a.config.tohost !== b.config.tohost || a.config.codeEnd !== b.config.codeEnd).toBe(true);
    expect(a.chip).toEqual(b.chip);
  });
});

describe('no false pass: TRAP where the golden emulator stops', () => {
  // the shared test chip: 4 KiB of code, 32 KiB of data (the code RAM is the data RAM's first part)
  const SHAPE = { codeBytes: 4096, memBytes: 32 * 1024 };
  const CODE_END = 0x80000000 + SHAPE.codeBytes;
  const DATA_END = 0x80000000 + SHAPE.memBytes;
  let chip: ChipModel;
  beforeAll(async () => {
    chip = await sharedChip({ target: 'chip-test', ...SHAPE });
  }, 240_000);

  const exit = 'li a7, 93\necall';
  /** [name, source, the cause the emulator's stop means (by the rules, not by running the chip), the pc it stops at] */
  const cases: [string, string, (typeof TRAP_CAUSE_NAMES)[number], number][] = [
    ['csrr t0, mhartid as the first instruction', `.word 0xf14022f3\n${exit}`, 'illegal', 0x80000000],
    ['a compressed instruction (low bits 01)', `li a0, 1\naddi a0, a0, 2\n.word 0x00004501\n${exit}`, 'illegal', 0x80000008],
    ['an OP with an unknown funct7', `li a0, 1\n.word ${0x40000033 | (1 << 25)}\n${exit}`, 'illegal', 0x80000004],
    ['fence with funct3 2', `.word 0x0000200f\n${exit}`, 'illegal', 0x80000000],
    ['ebreak after some work', `li a0, 5\naddi a0, a0, 1\naddi a0, a0, 1\naddi a0, a0, 1\nebreak\n${exit}`, 'ebreak', 0x80000010],
    ['a load from address 0', `li a0, 3\nlw a1, 0(zero)\n${exit}`, 'load', 0x80000004],
    ['a load crossing the end of the data RAM', `li t0, ${hex(DATA_END - 2)}\nlw a0, 0(t0)\n${exit}`, 'load', 0x80000008],
    ['a store just past the data RAM', `li t0, ${hex(DATA_END)}\nsw t0, 0(t0)\n${exit}`, 'store', 0x80000008],
    ['a byte store into the console word but not at its address', `li t0, 0x10000001\nsb t0, 0(t0)\n${exit}`, 'store', 0x80000008],
    ['jalr to 0 (a null function pointer)', `li a0, 1\njalr ra, 0(zero)\n${exit}`, 'fetch', 0x80000004],
    ['a jump past the code RAM (into data)', `li t0, ${hex(CODE_END)}\njalr zero, 0(t0)\n${exit}`, 'fetch', 0x80000008],
    ['jal to a misaligned target', `li a0, 1\n.word ${encodeJ(0x6f, 1, 6)}\n${exit}`, 'fetch', 0x80000004],
    // the code fills the code RAM; a jump to its last instruction, which runs on past the end
    ['running off the end of the code RAM', `j last\n.zero ${SHAPE.codeBytes - 8}\nlast:\naddi zero, zero, 0`, 'fetch', CODE_END],
  ];
  for (const [name, src, cause, pc] of cases) {
    it(`${name}: TRAP(${cause}) at ${hex(pc)}, weights and IR`, () => {
      const { elf } = assembleElf(src);
      const prog = programOf(elf, SHAPE, target.config);
      const { g, opts } = golden(elf, prog);
      // the golden side first: the emulator stops here for this reason
      expect(g.halt.trap).toBe(cause);
      const last = g.tokens[g.tokens.length - 1]!;
      expect(formatToken(last)).toBe(`TRAP(${cause})`);
      expect(g.tokenPc[g.tokens.length - 1]).toBe(pc);
      for (const r of [runOnChip(chip, prog, opts), runOnInterpreter(prog, opts)]) {
        expect(r.divergence).toBeNull();
        expect(r.halted).toBe(false);
        expect(r.trap).toEqual({ cause: TRAP_CAUSE_NAMES.indexOf(cause), name: cause, pc });
        expect(r.tokens).toEqual([...g.tokens]);
      }
    }, 60_000);
  }

  it('a token past the end of the golden stream is a divergence (a chip that runs on where the emulator stopped)', () => {
    const { elf } = assembleElf(`li a0, 1\naddi a0, a0, 1\naddi a0, a0, 1\n${exit}`);
    const prog = programOf(elf, SHAPE, target.config);
    const { g, opts } = golden(elf, prog);
    // the same stream cut after its first generated token, as if the emulator had stopped there
    const cut = g.tokens.subarray(0, 3);
    const r = runOnInterpreter(prog, { ...opts, golden: cut, goldenEnd: { reason: 'illegal', message: 'stopped here' } });
    expect(r.divergence).not.toBeNull();
    expect(r.divergence!.position).toBe(3);
    expect(r.divergence!.expected).toMatch(/end of the stream.*stopped here/);
    // a stream cut by the instruction budget ends the run without a divergence
    const lim = runOnInterpreter(prog, { ...opts, golden: cut, goldenEnd: { reason: 'limit', message: 'budget' } });
    expect(lim.divergence).toBeNull();
    expect(lim.goldenEnded).toBe(true);
  });
});

describe('chipc run: refusals and --check on traps', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-generic-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, src: string) => {
    const f = path.join(dir, name);
    fs.writeFileSync(f, assembleElf(src).elf);
    return f;
  };

  it('csrr t0, mhartid under --check: exit 1, the trap named with its pc, never "exit 0"', async () => {
    const f = write('csrr.elf', '.word 0xf14022f3\nli a7, 93\necall');
    // the shared chip's shape: its circuit is built once per worker (the TRAP cases above run it)
    const r = await cli('run', f, '--check', '--engine', 'ir', '--code-size', '4096', '--mem-size', '32768');
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/TRAP\(illegal\) at pc 0x80000000/);
    expect(r.out).toMatch(/illegal instruction 0xf14022f3 at pc 0x80000000/);
    expect(r.out).not.toMatch(/^exit 0$/m);
  });

  it('a write through ecall prints nothing on the chip: `chipc run` says so, naming the ecall\'s pc, and keeps the exit code', async () => {
    const f = write('write.elf', 'li a0, 1\nli a7, 64\necall\nli a7, 93\nli a0, 7\necall');
    const r = await cli('run', f, '--engine', 'ir', '--code-size', '4096', '--mem-size', '32768');
    expect(r.code).toBe(7);
    expect(r.out).toMatch(/1 system call other than exit \(ecall at pc 0x80000008\): the chip answers each with -38 \(ENOSYS\)/);
    expect(r.out).toMatch(/a write \(a7 = 64\) prints nothing here/);
    const j = await cli('run', f, '--engine', 'ir', '--code-size', '4096', '--mem-size', '32768', '--json');
    expect(JSON.parse(j.out).systemCalls).toEqual([{ pc: 0x80000008, count: 1 }]);
  });

  it('a program whose code does not fit the code RAM is refused before decoding, naming the size and the flag', async () => {
    const f = write('big.elf', `${Array.from({ length: 300 }, () => 'addi a0, a0, 1').join('\n')}\nli a7, 93\necall`);
    const r = await cli('run', f, '--engine', 'ir', '--code-size', '1024', '--mem-size', '4096');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/chip\.code/);
    expect(r.err).toMatch(/--code-size 2048/);
    expectChipcError(() => programOf(fs.readFileSync(f), { codeBytes: 1024, memBytes: 4096 }), 'chip.code');
  });

  it('a program whose image does not fit the data RAM is refused, naming --mem-size', async () => {
    const r = await cli('run', 'fixtures/firmware/hello.elf', '--engine', 'ir', '--code-size', '1024', '--mem-size', '8192');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/chip\.mem/);
    expect(r.err).toMatch(/--mem-size \d+/);
  });
});
