/**
 * ISA tests of the golden RV32IM + Zba emulator (riscv/cpu.ts) and its encoder (riscv/asm.ts).
 * Expected values come from an independent BigInt model of the unprivileged spec written here
 * (or from hand-derived / objdump-printed encodings), never from running the emulator.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  Cpu, Memory, assemble, decode, disassemble, encode, loadElf, cpuForProgram, assembleElf, CONSOLE_ADDR,
  type RunResult, type TraceEvent,
} from '../riscv/index.ts';
import { ChipcError } from '../src/util/errors.ts';

const BASE = 0x80000000;

function run(src: string, maxInstructions = 1_000_000): { cpu: Cpu; r: RunResult; labels: Map<string, number> } {
  const { elf, program } = assembleElf(src, { bss: 0x10000 });
  const cpu = cpuForProgram(loadElf(elf));
  const r = cpu.run({ maxInstructions });
  return { cpu, r, labels: program.labels };
}
const EXIT = 'li a7, 93\nli a0, 0\necall\n';

// ---- independent BigInt reference model --------------------------------------------------
const S = (x: number | bigint) => BigInt.asIntN(32, BigInt(x));
const U = (x: number | bigint) => BigInt.asUintN(32, BigInt(x));
const out = (x: bigint) => Number(BigInt.asUintN(32, x));
const INT_MIN = -(2 ** 31);
const REF: Record<string, (a: number, b: number) => number> = {
  add: (a, b) => out(S(a) + S(b)),
  sub: (a, b) => out(S(a) - S(b)),
  sll: (a, b) => out(U(a) << (U(b) % 32n)),
  srl: (a, b) => out(U(a) >> (U(b) % 32n)),
  sra: (a, b) => out(S(a) >> (U(b) % 32n)),
  slt: (a, b) => (S(a) < S(b) ? 1 : 0),
  sltu: (a, b) => (U(a) < U(b) ? 1 : 0),
  xor: (a, b) => out(U(a) ^ U(b)),
  or: (a, b) => out(U(a) | U(b)),
  and: (a, b) => out(U(a) & U(b)),
  mul: (a, b) => out(S(a) * S(b)),
  mulh: (a, b) => out((S(a) * S(b)) >> 32n),
  mulhsu: (a, b) => out((S(a) * U(b)) >> 32n),
  mulhu: (a, b) => out((U(a) * U(b)) >> 32n),
  // Spec table: x/0 = −1 (all ones), INT_MIN/−1 = INT_MIN; x%0 = x, INT_MIN%−1 = 0. BigInt / and % truncate.
  div: (a, b) => (S(b) === 0n ? 0xffffffff : S(a) === S(INT_MIN) && S(b) === -1n ? out(S(INT_MIN)) : out(S(a) / S(b))),
  divu: (a, b) => (U(b) === 0n ? 0xffffffff : out(U(a) / U(b))),
  rem: (a, b) => (S(b) === 0n ? out(S(a)) : S(a) === S(INT_MIN) && S(b) === -1n ? 0 : out(S(a) % S(b))),
  remu: (a, b) => (U(b) === 0n ? out(U(a)) : out(U(a) % U(b))),
  sh1add: (a, b) => out((U(a) << 1n) + U(b)),
  sh2add: (a, b) => out((U(a) << 2n) + U(b)),
  sh3add: (a, b) => out((U(a) << 3n) + U(b)),
};

const EDGE = [
  0, 1, -1, 2, -2, 3, -3, 7, -7, 31, 32, 33, 63, 0x7fffffff, INT_MIN, INT_MIN + 1, 0x12345678, 0xdeadbeef | 0,
  0x55555555, 0xaaaaaaaa | 0, 0xffff, 0x10000, 0x20000000, 0x40000000, -0x10000,
];

describe('encoder', () => {
  it('matches encodings printed by objdump and derived by hand from the spec', () => {
    const cases: [number, string, number[]][] = [
      [0x20a5a5b3, 'sh1add', [11, 11, 10]], [0x20a5c5b3, 'sh2add', [11, 11, 10]], [0x20b56533, 'sh3add', [10, 10, 11]],
      [0x02b54733, 'div', [14, 10, 11]], [0x02b567b3, 'rem', [15, 10, 11]], [0x02b50533, 'mul', [10, 10, 11]],
      [0x02b53533, 'mulhu', [10, 10, 11]], [0x00059503, 'lh', [10, 11, 0]], [0x00008067, 'jalr', [0, 1, 0]],
      [0x00000013, 'addi', [0, 0, 0]], [0x00000073, 'ecall', []], [0x00100073, 'ebreak', []], [0x0000100f, 'fence.i', []],
      [0x12345537, 'lui', [10, 0x12345]], [0x008000ef, 'jal', [1, 8]], [0x00b50463, 'beq', [10, 11, 8]],
      [0xfeb12e23, 'sw', [11, 2, -4]], [0x40b50533, 'sub', [10, 10, 11]], [0x4015d513, 'srai', [10, 11, 1]],
      [0xfff00513, 'addi', [10, 0, -1]], [0xfe000ee3, 'beq', [0, 0, -4]], [0xffdff06f, 'jal', [0, -4]],
    ];
    for (const [word, name, ops] of cases) expect([name, encode(name, ops).toString(16)]).toEqual([name, word.toString(16)]);
  });

  it('decode inverts encode for every instruction (fast-check)', () => {
    const specs = ['add', 'sub', 'sll', 'slt', 'sltu', 'xor', 'srl', 'sra', 'or', 'and', 'mul', 'mulh', 'mulhsu', 'mulhu',
      'div', 'divu', 'rem', 'remu', 'sh1add', 'sh2add', 'sh3add'];
    fc.assert(fc.property(fc.constantFrom(...specs), fc.nat(31), fc.nat(31), fc.nat(31), (n, rd, a, b) => {
      const d = decode(encode(n, [rd, a, b]))!;
      expect([d.spec.name, d.rd, d.rs1, d.rs2]).toEqual([n, rd, a, b]);
    }));
    fc.assert(fc.property(fc.constantFrom('addi', 'slti', 'sltiu', 'xori', 'ori', 'andi', 'lb', 'lh', 'lw', 'lbu', 'lhu', 'jalr'),
      fc.nat(31), fc.nat(31), fc.integer({ min: -2048, max: 2047 }), (n, rd, a, imm) => {
        const d = decode(encode(n, [rd, a, imm]))!;
        expect([d.spec.name, d.rd, d.rs1, d.imm]).toEqual([n, rd, a, imm]);
      }));
    fc.assert(fc.property(fc.constantFrom('sb', 'sh', 'sw'), fc.nat(31), fc.nat(31), fc.integer({ min: -2048, max: 2047 }), (n, b, a, imm) => {
      const d = decode(encode(n, [b, a, imm]))!;
      expect([d.spec.name, d.rs2, d.rs1, d.imm]).toEqual([n, b, a, imm]);
    }));
    fc.assert(fc.property(fc.constantFrom('beq', 'bne', 'blt', 'bge', 'bltu', 'bgeu'), fc.nat(31), fc.nat(31),
      fc.integer({ min: -2048, max: 2047 }), (n, a, b, half) => {
        const d = decode(encode(n, [a, b, half * 2]))!;
        expect([d.spec.name, d.rs1, d.rs2, d.imm]).toEqual([n, a, b, half * 2]);
      }));
    fc.assert(fc.property(fc.nat(31), fc.integer({ min: -(1 << 19), max: (1 << 19) - 1 }), fc.nat(0xfffff), (rd, half, u) => {
      const j = decode(encode('jal', [rd, half * 2]))!;
      expect([j.rd, j.imm]).toEqual([rd, half * 2]);
      const l = decode(encode('lui', [rd, u]))!;
      expect([l.rd, l.imm >>> 12]).toEqual([rd, u]);
    }));
  });

  it('range-checks immediates and registers with a ChipcError', () => {
    const bad: [string, number[]][] = [
      ['addi', [1, 1, 2048]], ['addi', [1, 1, -2049]], ['sw', [1, 1, 4096]], ['beq', [1, 1, 3]], ['beq', [1, 1, 4096]],
      ['jal', [1, 1 << 20]], ['jal', [1, 5]], ['lui', [1, 0x100000]], ['lui', [1, -1]], ['slli', [1, 1, 32]], ['add', [32, 0, 0]],
    ];
    for (const [n, ops] of bad) expect(() => encode(n, ops), `${n} ${ops}`).toThrow(ChipcError);
    expect(() => assemble('addi a0, a0, 5000')).toThrow(/line 1.*out of range/);
    expect(() => assemble('j nowhere')).toThrow(/undefined label "nowhere"/);
    expect(() => assemble('frob a0')).toThrow(/unknown instruction "frob"/);
  });

  it('disassembles with ABI names and absolute targets', () => {
    expect(disassemble(0x20a5a5b3)).toBe('sh1add a1, a1, a0');
    expect(disassemble(0xfeb12e23)).toBe('sw a1, -4(sp)');
    expect(disassemble(0x00b50463, 0x80000010)).toBe('beq a0, a1, 0x80000018');
    expect(disassemble(0xffffffff)).toBe('.word 0xffffffff');
  });
});

describe('legality: the CPU and decode() agree on which words are instructions', () => {
  it('random words (fast-check, biased to real opcodes)', () => {
    const opcodes = [0x03, 0x0f, 0x13, 0x17, 0x23, 0x33, 0x37, 0x63, 0x67, 0x6f, 0x73, 0x7f, 0x0b, 0x2f, 0x53];
    const mem = new Memory({ size: 4096 });
    fc.assert(fc.property(fc.constantFrom(...opcodes), fc.nat(0x1ffffff), fc.integer(), fc.boolean(), (op, hi, raw, useRaw) => {
      const w = useRaw ? raw | 0 : (hi << 7) | op;
      mem.bytes.fill(0);
      mem.write32(BASE, w);
      const r = new Cpu(mem, { pc: BASE }).run({ maxInstructions: 1 });
      expect(r.reason === 'illegal', `word 0x${(w >>> 0).toString(16)}: ${r.message}`).toBe(decode(w) === null);
      if (r.reason === 'illegal') {
        expect(r.word).toBe(w >>> 0);
        expect(r.pc).toBe(BASE);
        expect(r.instret).toBe(0);
      }
    }), { numRuns: 3000 });
  });
  it('specific illegal encodings: RV64 shamt, Zbb andn, CSR, compressed, zero word', () => {
    for (const w of [0x02051513 /* slli a0,a0,32 */, 0x40b57533 /* andn */, 0x30002573 /* csrr */, 0x00004501, 0, 0x0000300f, 0x00003503 /* ld */]) {
      expect(decode(w)).toBeNull();
      const { r } = run(`.word 0x${(w >>> 0).toString(16)}`);
      expect([r.reason, r.word, r.pc]).toEqual(['illegal', w >>> 0, BASE]);
      expect(r.message).toMatch(/illegal instruction 0x[0-9a-f]{8} at pc 0x80000000/);
    }
  });
});

describe('register-register ALU, M and Zba', () => {
  for (const op of Object.keys(REF)) {
    it(`${op} on all pairs of ${EDGE.length} edge values`, () => {
      const pairs = EDGE.flatMap((a) => EDGE.map((b) => [a, b] as const));
      const src = `
        la s0, table
        la s1, results
        li s2, ${pairs.length}
      loop:
        lw a1, 0(s0)
        lw a2, 4(s0)
        ${op} a3, a1, a2
        sw a3, 0(s1)
        addi s0, s0, 8
        addi s1, s1, 4
        addi s2, s2, -1
        bnez s2, loop
        ${EXIT}
      table: .word ${pairs.map(([a, b]) => `${a}, ${b}`).join(', ')}
      results:`;
      const { cpu, r, labels } = run(src);
      expect(r.reason).toBe('exit');
      const res = labels.get('results')!;
      const got = pairs.map((_, i) => cpu.memory.read32(res + 4 * i));
      const want = pairs.map(([a, b]) => REF[op](a, b) >>> 0);
      expect(got).toEqual(want);
    });
  }

  it('hand-derived spec values: division by zero, overflow, mulh extremes, sh*add wraparound', () => {
    const cases: [string, number, number, number][] = [
      ['div', 7, 0, 0xffffffff], ['divu', 7, 0, 0xffffffff], ['rem', 7, 0, 7], ['remu', 7, 0, 7],
      ['div', INT_MIN, 0, 0xffffffff], ['rem', -5, 0, 0xfffffffb], ['remu', -5, 0, 0xfffffffb],
      ['div', INT_MIN, -1, 0x80000000], ['rem', INT_MIN, -1, 0], ['divu', INT_MIN, -1, 0], ['remu', INT_MIN, -1, 0x80000000],
      ['div', -7, 2, 0xfffffffd], ['rem', -7, 2, 0xffffffff], ['div', 7, -2, 0xfffffffd], ['rem', 7, -2, 1],
      ['mulh', INT_MIN, INT_MIN, 0x40000000], ['mulhu', -1, -1, 0xfffffffe], ['mulh', -1, -1, 0],
      ['mulhsu', -1, -1, 0xffffffff], ['mulhsu', INT_MIN, -1, 0x80000000], ['mulhsu', 0x7fffffff, -1, 0x7ffffffe],
      ['mulh', INT_MIN, 0x7fffffff, 0xc0000000], ['mul', 0x10000, 0x10000, 0], ['mul', -1, -1, 1],
      ['sh3add', 0x20000000, 1, 1], ['sh1add', INT_MIN, INT_MIN, 0x80000000], ['sh2add', -1, 4, 0], ['sh1add', 3, 4, 10],
      ['sll', 1, 32, 1], ['sll', 1, 33, 2], ['srl', INT_MIN, 63, 1], ['sra', INT_MIN, -1, 0xffffffff], ['sra', INT_MIN, 32, 0x80000000],
    ];
    const src = cases.map(([op, a, b], i) => `li a1, ${a}\nli a2, ${b}\n${op} a3, a1, a2\nsw a3, ${4 * i}(s0)`).join('\n');
    const { cpu, r, labels } = run(`la s0, data\n${src}\n${EXIT}data:`);
    expect(r.reason).toBe('exit');
    const d = labels.get('data')!;
    for (let i = 0; i < cases.length; i++) expect([...cases[i].slice(0, 3), cpu.memory.read32(d + 4 * i)]).toEqual(cases[i]);
  });
});

describe('immediate ALU', () => {
  const IMMS = [0, 1, -1, 2, 5, 31, 2047, -2048, 0x555, -0x556, 0x7f0];
  const IREF: Record<string, (a: number, i: number) => number> = {
    addi: (a, i) => out(S(a) + S(i)), slti: (a, i) => (S(a) < S(i) ? 1 : 0), sltiu: (a, i) => (U(a) < U(i) ? 1 : 0),
    xori: (a, i) => out(U(a) ^ U(i)), ori: (a, i) => out(U(a) | U(i)), andi: (a, i) => out(U(a) & U(i)),
  };
  for (const op of Object.keys(IREF)) {
    it(`${op}: sign-extended 12-bit immediates`, () => {
      const cases = EDGE.flatMap((a) => IMMS.map((i) => [a, i] as const));
      const src = cases.map(([a, i], k) => `li a1, ${a}\n${op} a3, a1, ${i}\nsw a3, 0(s0)\naddi s0, s0, 4`).join('\n');
      const { cpu, labels } = run(`la s0, data\n${src}\n${EXIT}data:`);
      const d = labels.get('data')!;
      expect(cases.map((_, k) => cpu.memory.read32(d + 4 * k))).toEqual(cases.map(([a, i]) => IREF[op](a, i)));
    });
  }
  it('slli / srli / srai for every shift amount 0..31', () => {
    const vals = [1, -1, INT_MIN, 0x12345678, 0x7fffffff];
    const ops: [string, string][] = [['slli', 'sll'], ['srli', 'srl'], ['srai', 'sra']];
    const cases = ops.flatMap(([op, rop]) => vals.flatMap((a) => Array.from({ length: 32 }, (_, s) => [op, rop, a, s] as const)));
    const src = cases.map(([op, , a, s]) => `li a1, ${a}\n${op} a3, a1, ${s}\nsw a3, 0(s0)\naddi s0, s0, 4`).join('\n');
    const { cpu, labels } = run(`la s0, data\n${src}\n${EXIT}data:`);
    const d = labels.get('data')!;
    expect(cases.map((_, k) => cpu.memory.read32(d + 4 * k))).toEqual(cases.map(([, rop, a, s]) => REF[rop](a, s)));
  });
  it('lui and auipc', () => {
    const { cpu } = run(`lui a1, 0xfffff\nlui a2, 0x80000\nlui a3, 1\nauipc a4, 0\nauipc a5, 0xfffff\nauipc a6, 1\n${EXIT}`);
    expect([...cpu.regs.slice(11, 17)].map((v) => v >>> 0)).toEqual([
      0xfffff000, 0x80000000, 0x1000, BASE + 12, (BASE + 16 - 4096) >>> 0, BASE + 20 + 4096,
    ]);
  });
  it('writes to x0 are ignored and x0 reads 0', () => {
    const { cpu, r } = run(`
      addi x0, x0, 5
      lui x0, 0x12345
      auipc x0, 1
      la t0, d
      lw x0, 0(t0)
      mul x0, t0, t0
      sh1add zero, t0, t0
      jal x0, next
    next:
      add a0, x0, x0
      addi a1, x0, 0
      li a7, 93
      ecall
    d: .word 0x7777`);
    expect(r.reason).toBe('exit');
    expect([cpu.regs[0], cpu.regs[10], cpu.regs[11]]).toEqual([0, 0, 0]);
  });
});

describe('loads and stores', () => {
  it('sign and zero extension of lb / lh / lbu / lhu, and lw', () => {
    const { cpu } = run(`
      la s0, d
      lb a1, 0(s0)
      lbu a2, 0(s0)
      lh a3, 0(s0)
      lhu a4, 0(s0)
      lb a5, 2(s0)
      lh a6, 2(s0)
      lw a7, 0(s0)
      lb s2, -4(s1)
      ${EXIT}
      .word 0
    d: .byte 0x80, 0xff, 0x7f, 0x01`);
    // bytes 80 ff 7f 01: lb 0x80 → −128; lh 0xff80 → −128; lh at +2 0x017f; lw 0x017fff80.
    expect([...cpu.regs.slice(11, 17)]).toEqual([-128, 0x80, -128, 0xff80, 0x7f, 0x017f]);
    expect(cpu.regs[17] >>> 0).toBe(0x017fff80);
  });
  it('misaligned loads and stores work, little-endian', () => {
    const { cpu, labels } = run(`
      la s0, d
      li t0, 0x11223344
      sw t0, 1(s0)
      li t1, 0xaabb
      sh t1, 7(s0)
      li t2, 0xcc
      sb t2, 9(s0)
      lw a1, 1(s0)
      lw a2, 2(s0)
      lh a3, 7(s0)
      lhu a4, 7(s0)
      lw a5, 3(s0)
      lw a6, 6(s0)
      ${EXIT}
    d: .zero 16`);
    const d = labels.get('d')!;
    // memory from d: 00 44 33 22 11 00 00 bb aa cc 00 ...
    const bytes = [...cpu.memory.readBytes(d, 12)];
    expect(bytes).toEqual([0x00, 0x44, 0x33, 0x22, 0x11, 0x00, 0x00, 0xbb, 0xaa, 0xcc, 0x00, 0x00]);
    expect([...cpu.regs.slice(11, 17)].map((v) => v >>> 0)).toEqual([0x11223344, 0x00112233, 0xffffaabb, 0xaabb, 0x00001122, 0xccaabb00]);
  });
});

describe('control flow', () => {
  const BREF: Record<string, (a: number, b: number) => boolean> = {
    beq: (a, b) => S(a) === S(b), bne: (a, b) => S(a) !== S(b), blt: (a, b) => S(a) < S(b), bge: (a, b) => S(a) >= S(b),
    bltu: (a, b) => U(a) < U(b), bgeu: (a, b) => U(a) >= U(b),
  };
  const VALS = [0, 1, -1, INT_MIN, 0x7fffffff, 5];
  for (const op of Object.keys(BREF)) {
    it(`${op} forward and backward`, () => {
      const cases = VALS.flatMap((a) => VALS.map((b) => [a, b] as const));
      // Forward: fall through stores 0, taken path stores 1. Backward: jump over a target that precedes the branch.
      const src = cases.map(([a, b], k) => `
        li a1, ${a}
        li a2, ${b}
        li a3, 0
        ${op} a1, a2, f${k}
        j g${k}
      f${k}: li a3, 1
      g${k}: sw a3, 0(s0)
        li a4, 0
        j c${k}
      b${k}: li a4, 1
        j e${k}
      c${k}: ${op} a1, a2, b${k}
      e${k}: sw a4, 4(s0)
        addi s0, s0, 8`).join('\n');
      const { cpu, labels } = run(`la s0, data\n${src}\n${EXIT}data:`);
      const d = labels.get('data')!;
      const got = cases.map((_, k) => [cpu.memory.read32(d + 8 * k), cpu.memory.read32(d + 8 * k + 4)]);
      expect(got).toEqual(cases.map(([a, b]) => (BREF[op](a, b) ? [1, 1] : [0, 0])));
    });
  }
  it('jal links pc+4; jalr clears bit 0 and reads rs1 before writing rd', () => {
    const { cpu, r, labels } = run(`
      jal ra, f1
    back:
      la t0, f2
      addi t0, t0, 1
      jalr t0, 0(t0)
    after:
      ${EXIT}
    f1:
      mv s1, ra
      jalr x0, 0(ra)
    f2:
      mv s2, t0
      li a7, 93
      li a0, 3
      ecall`);
    expect(r.reason).toBe('exit');
    expect(r.exitCode).toBe(3);
    expect(cpu.regs[9] >>> 0).toBe(labels.get('back'));
    expect(cpu.regs[18] >>> 0).toBe(labels.get('after'));
  });
  it('self-modifying code is visible after FENCE.I', () => {
    const newWord = encode('addi', [10, 0, 42]);
    const { r, cpu } = run(`
      la t0, slot
      li t1, ${newWord}
      sw t1, 0(t0)
      fence.i
    slot:
      addi a0, zero, 1
      li a7, 93
      ecall`);
    expect([r.reason, r.exitCode, cpu.regs[10]]).toEqual(['exit', 42, 42]);
  });
  it('fence is a no-op', () => {
    const { r } = run(`fence\nfence rw, rw\n${EXIT}`);
    expect([r.reason, r.exitCode, r.instret]).toEqual(['exit', 0, 5]);
  });
});

describe('halting, devices, faults', () => {
  it('ecall 93 exits with a0 (signed) and counts the ecall', () => {
    const { r } = run('li a0, -5\nli a7, 93\necall');
    expect([r.reason, r.exitCode, r.instret, r.pc]).toEqual(['exit', -5, 3, BASE + 8]);
  });
  it('tohost: 1 = pass, odd v = case v>>1 failed; a zero store does not halt', () => {
    const prog = (v: number) => `la t0, tohost\nsw zero, 0(t0)\nli t1, ${v}\nsw t1, 0(t0)\nebreak\n.align 3\ntohost: .word 0, 0`;
    const pass = run(prog(1)).r;
    expect([pass.reason, pass.exitCode, pass.instret]).toEqual(['tohost', 0, 5]);
    const fail = run(prog((7 << 1) | 1)).r;
    expect([fail.reason, fail.exitCode]).toEqual(['tohost', 7]);
    expect(fail.message).toMatch(/test case 7 failed/);
  });
  it('ebreak halts', () => {
    const { r } = run('nop\nebreak');
    expect([r.reason, r.pc, r.instret]).toEqual(['ebreak', BASE + 4, 2]);
  });
  it('console MMIO byte stores and the write syscall', () => {
    const { r } = run(`
      li t0, ${CONSOLE_ADDR}
      li t1, 72
      sb t1, 0(t0)
      li t1, 0x169
      sw t1, 0(t0)
      lw t2, 0(t0)
      li a0, 1
      la a1, msg
      li a2, 3
      li a7, 64
      ecall
      mv s1, a0
      li a0, 5
      li a7, 64
      ecall
      mv s2, a0
      li a7, 999
      ecall
      mv s3, a0
      li a7, 93
      mv a0, s1
      ecall
    msg: .byte 33, 10, 0`);
    expect(r.console).toBe('Hi!\n\0');
    expect(r.exitCode).toBe(3);
  });
  it('unknown syscall returns -ENOSYS, bad fd returns -EBADF', () => {
    const { cpu } = run(`li a0, 5\nli a7, 64\necall\nmv s1, a0\nli a7, 999\necall\nmv s2, a0\nebreak`);
    expect([cpu.regs[9], cpu.regs[18]]).toEqual([-9, -38]);
  });
  it('faults name pc, address and kind: load, store, fetch, misaligned jump (a fetch fault at the jump)', () => {
    let { r } = run('li t0, 0x1000\nlw a0, 0(t0)');
    expect([r.reason, r.fault, r.pc, r.addr, r.instret]).toEqual(['fault', 'load', BASE + 8, 0x1000, 2]);
    expect(r.message).toMatch(/pc 0x80000008.*0x00001000/);
    ({ r } = run('li t0, 0x80100000\nsb a0, -1(t0)\nsb a0, 0(t0)'));
    expect([r.reason, r.fault, r.pc, r.addr]).toEqual(['fault', 'store', BASE + 12, 0x80100000]);
    ({ r } = run('li t0, 0x80100000\njr t0'));
    expect([r.reason, r.fault, r.pc, r.addr]).toEqual(['fault', 'fetch', 0x80100000, 0x80100000]);
    ({ r } = run('li t0, 0x80000002\njr t0'));
    expect([r.reason, r.fault, r.pc, r.addr]).toEqual(['fault', 'fetch', BASE + 8, 0x80000002]);
    ({ r } = run('nop\nnop'));
    expect([r.reason, r.fault]).toEqual(['illegal', undefined]);
  });
  it('instruction limit stops and resumes', () => {
    const { elf } = assembleElf('li a0, 0\nloop: addi a0, a0, 1\nli t0, 10\nblt a0, t0, loop\nli a7, 93\necall');
    const cpu = cpuForProgram(loadElf(elf));
    const r1 = cpu.run({ maxInstructions: 7 });
    expect([r1.reason, r1.instret, r1.pc]).toEqual(['limit', 7, BASE + 4]);
    const r2 = cpu.run();
    expect([r2.reason, r2.exitCode, r2.instret]).toEqual(['exit', 10, 1 + 30 + 2]);
    expect(cpu.run()).toBe(r2);
  });
  it('trace reports pc, word, disassembly and the rd write', () => {
    const events: TraceEvent[] = [];
    const { elf } = assembleElf('li a0, -1\nsw a0, 0(sp)\nadd x0, a0, a0\nli a7, 93\necall');
    const cpu = cpuForProgram(loadElf(elf), { sp: BASE + 0x1000 });
    cpu.run({ trace: (e) => events.push(e) });
    expect(events.map((e) => [e.pc - BASE, e.word, e.disasm, e.rd, e.rdValue])).toEqual([
      [0, 0xfff00513, 'addi a0, zero, -1', 10, 0xffffffff],
      [4, encode('sw', [10, 2, 0]), 'sw a0, 0(sp)', null, null],
      [8, encode('add', [0, 10, 10]), 'add zero, a0, a0', null, null],
      [12, encode('addi', [17, 0, 93]), 'addi a7, zero, 93', 17, 93],
      [16, 0x73, 'ecall', null, null],
    ]);
  });
});
