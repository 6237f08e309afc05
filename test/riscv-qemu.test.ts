/**
 * Differential test of the golden emulator against QEMU user mode (`qemu-riscv32`, Debian
 * package qemu-user) with the strict RV32IM + Zba core. Random straight-line programs (ALU, M,
 * Zba, loads/stores on a data area, forward branches) are built into ELFs with our own writer,
 * run under both, and must print the same bytes (the data area and the registers, through the
 * Linux write syscall) and exit with the same status. A second property checks that both agree
 * on which random OP / OP-IMM / MISC-MEM / LOAD / STORE words are illegal.
 * Skipped when qemu-riscv32 is not on PATH.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { assembleElf, cpuForProgram, decode, loadElf } from '../riscv/index.ts';

const QEMU = 'qemu-riscv32';
const CPU = 'rv32,zba=true,zbb=false,zbc=false,zbs=false,a=false,f=false,d=false,c=false';
const haveQemu = spawnSync(QEMU, ['--version']).status === 0;

const POOL = ['t0', 't1', 't2', 's0', 's1', 'a0', 'a1', 'a2', 'a3', 'a4', 'a5'];
const R_OPS = ['add', 'sub', 'sll', 'slt', 'sltu', 'xor', 'srl', 'sra', 'or', 'and', 'mul', 'mulh', 'mulhsu', 'mulhu',
  'div', 'divu', 'rem', 'remu', 'sh1add', 'sh2add', 'sh3add'];
const I_OPS = ['addi', 'slti', 'sltiu', 'xori', 'ori', 'andi'];
const SHIFTS = ['slli', 'srli', 'srai'];
const LOADS = ['lb', 'lh', 'lw', 'lbu', 'lhu'];
const STORES = ['sb', 'sh', 'sw'];
const BRANCHES = ['beq', 'bne', 'blt', 'bge', 'bltu', 'bgeu'];
const DATA_BYTES = 256;

const int32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
/** Mostly pool registers, sometimes x0. */
const src = fc.oneof({ weight: 10, arbitrary: fc.constantFrom(...POOL) }, { weight: 1, arbitrary: fc.constant('zero') });
const dst = src;
const interesting = fc.oneof(int32, fc.constantFrom(0, 1, -1, 2 ** 31 - 1, -(2 ** 31), 31, 32, 0xffff));

const instr: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(fc.constantFrom(...R_OPS), dst, src, src).map(([o, d, a, b]) => `${o} ${d}, ${a}, ${b}`) },
  { weight: 3, arbitrary: fc.tuple(fc.constantFrom(...I_OPS), dst, src, fc.integer({ min: -2048, max: 2047 })).map(([o, d, a, i]) => `${o} ${d}, ${a}, ${i}`) },
  { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...SHIFTS), dst, src, fc.nat(31)).map(([o, d, a, i]) => `${o} ${d}, ${a}, ${i}`) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('lui', 'auipc'), dst, fc.nat(0xfffff)).map(([o, d, i]) => `${o} ${d}, ${i}`) },
  { weight: 1, arbitrary: fc.tuple(dst, interesting).map(([d, v]) => `li ${d}, ${v}`) },
  { weight: 3, arbitrary: fc.tuple(fc.constantFrom(...LOADS), dst, fc.nat(DATA_BYTES - 4)).map(([o, d, off]) => `${o} ${d}, ${off}(s11)`) },
  { weight: 3, arbitrary: fc.tuple(fc.constantFrom(...STORES), src, fc.nat(DATA_BYTES - 4)).map(([o, s, off]) => `${o} ${s}, ${off}(s11)`) },
  // Forward branch over the next 1..3 instructions (a bare number is a byte offset).
  { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...BRANCHES), src, src, fc.integer({ min: 1, max: 3 })).map(([o, a, b, k]) => `${o} ${a}, ${b}, ${4 * (k + 1)}`) },
);

const programArb = fc.record({
  init: fc.array(interesting, { minLength: POOL.length, maxLength: POOL.length }),
  data: fc.array(int32, { minLength: DATA_BYTES / 4, maxLength: DATA_BYTES / 4 }),
  body: fc.array(instr, { minLength: 5, maxLength: 60 }),
});

function buildSource(p: { init: number[]; data: number[]; body: string[] }): string {
  // Every body entry must be a fixed size so branch offsets are known: expand li to lui+addi
  // ourselves, then re-express each branch's "skip k entries" as a byte offset.
  const body = p.body.map((s) => {
    const m = /^li (\w+), (-?\d+)$/.exec(s);
    if (!m) return s;
    const v = Number(m[2]) | 0;
    const lo = (v << 20) >> 20;
    return `lui ${m[1]}, ${((v - lo) >>> 12) & 0xfffff}\naddi ${m[1]}, ${m[1]}, ${lo}`;
  });
  const sizes = body.map((s) => s.split('\n').length * 4);
  const fixed = body.map((s, i) => {
    const m = /^(b\w+) (\w+), (\w+), (\d+)$/.exec(s);
    if (!m) return s;
    const k = Number(m[4]) / 4 - 1;
    let bytes = 4;
    for (let j = i + 1; j <= i + k && j < body.length; j++) bytes += sizes[j];
    return `${m[1]} ${m[2]}, ${m[3]}, ${bytes}`;
  });
  return [
    '_start:',
    '  la s11, data',
    ...POOL.map((r, i) => `  li ${r}, ${p.init[i]}`),
    ...fixed,
    'end:',
    ...POOL.map((r, i) => `  sw ${r}, ${DATA_BYTES + 4 * i}(s11)`),
    '  li s10, 0',
    ...POOL.map((r) => `  xor s10, s10, ${r}`),
    '  li a0, 1',
    '  mv a1, s11',
    `  li a2, ${DATA_BYTES + 4 * POOL.length}`,
    '  li a7, 64',
    '  ecall',
    '  mv a0, s10',
    '  li a7, 93',
    '  ecall',
    '.align 2',
    `data: .word ${p.data.join(', ')}`,
    `  .zero ${4 * POOL.length}`,
  ].join('\n');
}

interface Outcome { status: number | null; signal: string | null; stdout: string }

function runQemu(dir: string, elf: Uint8Array): Outcome {
  const file = path.join(dir, 'p.elf');
  fs.writeFileSync(file, elf, { mode: 0o755 });
  const r = spawnSync(QEMU, ['-cpu', CPU, file], { timeout: 10_000 });
  return { status: r.status, signal: r.signal, stdout: r.stdout.toString('hex') };
}

function runOurs(elf: Uint8Array): { reason: string; status: number | null; stdout: string } {
  const r = cpuForProgram(loadElf(elf)).run({ maxInstructions: 100_000 });
  return { reason: r.reason, status: r.exitCode === null ? null : r.exitCode & 0xff, stdout: Buffer.from(r.consoleBytes).toString('hex') };
}

describe.skipIf(!haveQemu)('differential vs qemu-riscv32 (strict RV32IM+Zba core)', () => {
  it('random ALU / M / Zba / load / store / branch programs print and exit identically', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-rv-'));
    try {
      fc.assert(fc.property(programArb, (p) => {
        const { elf } = assembleElf(buildSource(p));
        const q = runQemu(dir, elf);
        const o = runOurs(elf);
        expect(q.signal).toBeNull();
        expect(o.reason).toBe('exit');
        expect(o.stdout).toBe(q.stdout);
        expect(o.status).toBe(q.status);
      }), { numRuns: 80 });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('both reject the same random OP / OP-IMM / MISC-MEM / LOAD / STORE words', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-rv-'));
    const reg = fc.constantFrom(5, 6, 7, 10, 11, 12);
    // funct7 biased to the values real extensions use (base, M, Zba, Zbb/Zbs/Zbkb neighbours).
    const f7arb = fc.oneof(fc.nat(127), fc.constantFrom(0x00, 0x01, 0x04, 0x05, 0x10, 0x14, 0x20, 0x24, 0x30, 0x34));
    const word = fc.oneof(
      fc.tuple(f7arb, reg, reg, fc.nat(7), reg).map(([f7, rs2, rs1, f3, rd]) => (f7 << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | 0x33),
      fc.tuple(f7arb, fc.nat(31), reg, fc.nat(7), reg).map(([f7, sh, rs1, f3, rd]) => (f7 << 25) | (sh << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | 0x13),
      fc.tuple(fc.nat(0xfff), fc.nat(31), fc.nat(7), fc.nat(31)).map(([imm, rs1, f3, rd]) => (imm << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | 0x0f),
      fc.tuple(fc.nat(200), fc.nat(7), reg).map(([imm, f3, rd]) => (imm << 20) | (27 << 15) | (f3 << 12) | (rd << 7) | 0x03),
      fc.tuple(fc.nat(6), reg, fc.nat(7), fc.nat(31)).map(([hi, rs2, f3, lo]) => (hi << 25) | (rs2 << 20) | (27 << 15) | (f3 << 12) | (lo << 7) | 0x23),
    );
    try {
      fc.assert(fc.property(word, (w) => {
        const { elf } = assembleElf(`la s11, data\n.word ${w | 0}\nli a0, 0\nli a7, 93\necall\ndata: .zero 512`);
        const q = runQemu(dir, elf);
        const o = runOurs(elf);
        const qIllegal = q.signal === 'SIGILL';
        expect({ w: (w >>> 0).toString(16), illegal: o.reason === 'illegal' }).toEqual({ w: (w >>> 0).toString(16), illegal: qIllegal });
        expect(decode(w) === null).toBe(qIllegal);
        if (!qIllegal) expect([q.status, o.status]).toEqual([0, 0]);
      }), { numRuns: 120 });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
