/**
 * The chip v0 (circuits/rv32im/cpu.ts): RV32I + Zba without memory, on token protocol v1.
 * - The IR interpreter, fed the prompt [BOS, J(entry)] and then its own emitted tokens, generates
 *   exactly the golden token trace that riscv/golden-trace.ts derives from the golden emulator,
 *   for chipc's own self-checking ISA programs (alu, branch, zba — exit variants) and a hand
 *   program; the run ends in HALT(0) (the programs' self-checks passed).
 * - The compiled weights follow the interpreter bit for bit (every placed signal at every
 *   sublayer, every emitted token) on a hand program, in f32 and bf16; the code RAM is loaded
 *   directly into the GDN state (state-file path) on the weights side.
 */
import fs from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildCircuit } from '../src/dsl/load.ts';
import { Interpreter } from '../src/ir/interpret.ts';
import { compileCircuit, type CompileResult } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { checkCompiled } from '../src/verify/check.ts';
import { applyRamContents } from '../src/load/ram-state.ts';
import { cpuCircuit, CODE_BASE } from '../circuits/rv32im/cpu.ts';
import { loadElf } from '../riscv/elf.ts';
import { assembleElf } from '../riscv/asm.ts';
import { goldenTokens } from '../riscv/golden-trace.ts';
import { decodeToken, encodeToken, formatToken, type TokenKind } from '../riscv/protocol.ts';
import type { CircuitIR } from '../src/ir/types.ts';
import { cli } from './helpers/cli.ts';

function codeContents(elf: Uint8Array, words: number): Map<number, number[]> {
  const prog = loadElf(elf, { size: 65536 });
  const m = new Map<number, number[]>();
  for (let i = 0; i < words; i++) {
    const wd = prog.memory.read32(CODE_BASE + 4 * i) >>> 0;
    m.set(i, Array.from({ length: 32 }, (_, k) => (wd >>> k) & 1));
  }
  return m;
}

/** Feed the golden prompt, then the interpreter's own tokens; compare with the golden stream. */
function generateAgainstGolden(ir: CircuitIR, elf: Uint8Array, words: number): { tokens: number; firstMismatch: string | null } {
  const golden = goldenTokens(elf, { maxInstructions: 20_000 }).tokens;
  const interp = new Interpreter(ir);
  const code = ir.rams.findIndex((r) => r.name === 'code');
  for (const [row, v] of codeContents(elf, words)) interp.setRamRow(code, row, v);
  interp.step(golden[0]!);
  let next = interp.step(golden[1]!).emitted!;
  for (let i = 2; i < golden.length; i++) {
    if (next !== golden[i]) return { tokens: i, firstMismatch: `token ${i}: want ${formatToken(golden[i]!)}, got ${formatToken(next)}` };
    next = interp.step(next).emitted!;
  }
  return { tokens: golden.length, firstMismatch: null };
}

const HAND = `
  addi x1, x0, 5
  addi x2, x1, -7
  add x3, x1, x2
  lui x4, 0x12345
  addi x4, x4, 0x678
  slli x5, x1, 3
  sub x6, x0, x4
  beq x1, x1, skip
  addi x7, x0, 99
skip:
  sh2add x8, x1, x2
  jal x9, next
next:
  addi x10, x0, 42
  addi x17, x0, 93
  ecall
`;

describe('chip v0 in the IR interpreter = the golden token trace', () => {
  let ir: CircuitIR;
  beforeAll(() => {
    ir = buildCircuit(cpuCircuit({ codeWords: 4096 }), 'cpu');
  }, 120_000);

  it.each(['alu', 'branch', 'zba'])('ISA program %s: every token, ending in HALT(0)', (name) => {
    const elf = fs.readFileSync(`fixtures/isa/${name}.exit.elf`);
    const r = generateAgainstGolden(ir, elf, 4096);
    expect(r.firstMismatch).toBeNull();
    const golden = goldenTokens(elf, { maxInstructions: 20_000 }).tokens;
    expect(golden[golden.length - 1]).toBe(encodeToken({ kind: 'HALT', code: 0 }));
  });

  it('a hand program with narrow, 30-bit and full 32-bit results, a taken branch, sh2add and jal', () => {
    const { elf } = assembleElf(HAND);
    const r = generateAgainstGolden(ir, elf, 4096);
    expect(r.firstMismatch).toBeNull();
    // The stream really contains each token kind the v1 table uses.
    const kinds = new Set(Array.from(goldenTokens(elf, {}).tokens, (t) => decodeToken(t).kind));
    for (const k of ['E', 'D', 'J', 'HALT'] as TokenKind[]) expect(kinds.has(k as TokenKind)).toBe(true);
    expect(kinds.has('K') || kinds.has('H')).toBe(true);
  });

  it('catches a wrong instruction: a changed ISA program diverges from the unchanged golden trace', () => {
    const elf = fs.readFileSync('fixtures/isa/zba.exit.elf');
    const golden = goldenTokens(elf, { maxInstructions: 20_000 }).tokens;
    const bad = new Uint8Array(elf);
    // Flip an immediate bit of the program's first addi-like word in the code segment.
    const view = new DataView(bad.buffer);
    const codeOff = [...Array(bad.length).keys()].find((o) => o % 4 === 0 && o + 4 <= bad.length && (view.getUint32(o, true) & 0x7f) === 0x13 && view.getUint32(o, true) >>> 20 !== 0)!;
    view.setUint32(codeOff, view.getUint32(codeOff, true) ^ (1 << 21), true);
    const interp = new Interpreter(ir);
    const code = ir.rams.findIndex((r) => r.name === 'code');
    for (const [row, v] of codeContents(bad, 4096)) interp.setRamRow(code, row, v);
    interp.step(golden[0]!);
    let next = interp.step(golden[1]!).emitted!;
    let diverged = false;
    for (let i = 2; i < golden.length && !diverged; i++) {
      diverged = next !== golden[i];
      next = interp.step(next).emitted!;
    }
    expect(diverged).toBe(true);
  });
});

describe('chip v0 through the compiled weights = the interpreter, bit for bit', () => {
  let res: CompileResult;
  const tiny = resolveTarget('tiny').config;
  const target = {
    ...tiny, vocabSize: 247_045, intermediateSize: 16_384,
    linearNumKeyHeads: 8, linearNumValueHeads: 16, linearKeyHeadDim: 64, linearValueHeadDim: 64,
  };
  beforeAll(() => {
    res = compileCircuit(buildCircuit(cpuCircuit({ codeWords: 64 }), 'cpu'), target);
  }, 120_000);

  it.each(['f32', 'bf16'] as const)('hand program, plain generation after [BOS, J(entry)], %s', (profile) => {
    const { elf } = assembleElf(HAND);
    const golden = goldenTokens(elf, {}).tokens;
    const contents = codeContents(elf, 64);
    const code = res.ir.rams.findIndex((r) => r.name === 'code');
    const placement = res.rams.find((r) => r.name === 'code')!;
    const r = checkCompiled(res, golden.slice(0, 2), {
      profile, mode: 'generate', prompt: 2, length: golden.length, prefill: 2,
      setup: (ex, interp) => {
        applyRamContents(ex, res, placement, contents);
        for (const [row, v] of contents) interp.setRamRow(code, row, v);
      },
    });
    expect(r.mismatches).toEqual([]);
    expect(r.emitted.slice(1, -1)).toEqual(Array.from(golden.slice(2)));
  }, 120_000);
});

describe('chipc run', () => {
  it('runs a program through the compiled chip with --check and exits with its exit code', async () => {
    const os = await import('node:os');
    const path = await import('node:path');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-run-'));
    try {
      const file = path.join(dir, 'prog.elf');
      // x10 = 6·7 − 35 = 7 through adds and shifts; exit(7).
      fs.writeFileSync(file, assembleElf(`
        addi x5, x0, 6
        slli x6, x5, 3
        sub x6, x6, x5
        addi x10, x6, -35
        addi x17, x0, 93
        ecall
      `).elf);
      const { code, out } = await cli('run', file, '--check', '--json');
      const doc = JSON.parse(out);
      expect(doc.divergence).toBeNull();
      expect(doc.exitCode).toBe(7);
      expect(code).toBe(7);
      expect(doc.instructions).toBe(6);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('--engine ir runs the chip circuit in the interpreter against the golden trace', async () => {
    const { code, out } = await cli('run', 'fixtures/isa/zba.exit.elf', '--check', '--engine', 'ir', '--json');
    const doc = JSON.parse(out);
    expect(doc.divergence).toBeNull();
    expect(doc.engine).toBe('ir');
    expect(doc.tokens.length).toBe(goldenTokens(fs.readFileSync('fixtures/isa/zba.exit.elf'), {}).tokens.length);
    expect(code).toBe(0);
  }, 120_000);
});
