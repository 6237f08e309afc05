/**
 * The chip's bignum unit, bn.mac (docs/bignum-unit.md; src/cpu/mac-unit.ts):
 * - the golden emulator's bn.mac against a BigInt model written here (random and extreme operands,
 *   the carry chained across instructions), and every other custom-0 word illegal;
 * - its token sequence (protocol v4): D, H of the new carry, D, H of the low word, then N — or J at
 *   the window end — also for rd = x0, with values from the BigInt model;
 * - the firmware: chip images use the unit, the Linux images (qemu-user) do not;
 * - circuits/bignum/chip.ts compiles and reports the unit's interface.
 * The chip itself runs bn.mac through the IR and the weights in test/rv32-cpu.test.ts (ISA group
 * `bn`, the hand program in f32 and bf16, random programs) and test/bignum-chip.test.ts.
 */
import fs from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Cpu, Memory, decode, disassemble } from '../riscv/index.ts';
import { assemble, assembleElf } from '../riscv/asm.ts';
import { goldenTokens } from '../riscv/golden-trace.ts';
import { decodeToken, encodeToken } from '../riscv/protocol.ts';
import { mZbaCounts } from '../firmware/expected.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import bignumChip from '../circuits/bignum/chip.ts';

const BASE = 0x80000000;
const M32 = 1n << 32n;
const u32 = fc.oneof(fc.constantFrom(0, 1, 2, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff), fc.nat({ max: 0xffffffff }));

/** Run assembly on a fresh CPU with the given registers and carry; returns the CPU. */
function runAsm(src: string, regs: Record<number, number>, carry = 0): Cpu {
  const bytes = assemble(src).bytes;
  const mem = new Memory({ base: BASE, size: 4096 });
  mem.bytes.set(bytes);
  mem.write32(BASE + bytes.length, 0x00100073); // ebreak
  const cpu = new Cpu(mem, { pc: BASE });
  for (const [r, v] of Object.entries(regs)) cpu.regs[Number(r)] = v | 0;
  cpu.bnCarry[0] = carry;
  const r = cpu.run({ maxInstructions: 100 });
  expect(r.reason).toBe('ebreak');
  return cpu;
}

describe('bn.mac on the golden emulator = the BigInt model', () => {
  it('one instruction: rd = (a·b + rd + C) mod 2^32, C = ⌊…/ 2^32⌋ (random and extreme operands)', () => {
    fc.assert(fc.property(u32, u32, u32, u32, (a, b, acc, carry) => {
      const cpu = runAsm('bn.mac a3, a1, a2', { 11: a, 12: b, 13: acc }, carry);
      const t = BigInt(a) * BigInt(b) + BigInt(acc) + BigInt(carry);
      expect(BigInt(cpu.regs[13]! >>> 0)).toBe(t % M32);
      expect(BigInt(cpu.bnCarry[0]!)).toBe(t / M32);
    }), { numRuns: 2000, seed: 20261130 });
  });

  it('a carry chain: r += a·m over four limbs equals the BigInt sum', () => {
    fc.assert(fc.property(fc.array(u32, { minLength: 4, maxLength: 4 }), fc.array(u32, { minLength: 4, maxLength: 4 }), u32, (a, r, m) => {
      const src = ['bn.mac zero, zero, zero', ...[0, 1, 2, 3].map((i) => `bn.mac s${2 + i}, a${i}, a7`), 'li a6, 0', 'bn.mac a6, zero, zero'].join('\n');
      const regs: Record<number, number> = { 17: m };
      a.forEach((v, i) => { regs[10 + i] = v; regs[18 + i] = r[i]!; });
      const cpu = runAsm(src, regs, 0x12345678);
      const val = (xs: number[]) => xs.reduceRight((s, x) => s * M32 + BigInt(x >>> 0), 0n);
      const want = val(r) + val(a) * BigInt(m);
      const got = val([18, 19, 20, 21, 16].map((k) => cpu.regs[k]!));
      expect(got).toBe(want);
      expect(cpu.bnCarry[0]).toBe(0); // the last bn.mac read the carry out and cleared it
    }), { numRuns: 300, seed: 7 });
  });

  it('rd = x0 changes only the carry; x0 reads as 0 in every operand', () => {
    const cpu = runAsm('bn.mac zero, a1, a2', { 11: 0xffffffff, 12: 0xffffffff }, 5);
    expect(cpu.regs[0]).toBe(0);
    expect(BigInt(cpu.bnCarry[0]!)).toBe((0xffffffffn * 0xffffffffn + 5n) / M32);
  });

  it('bn.mac1 uses the second carry bank; the banks do not disturb each other', () => {
    fc.assert(fc.property(u32, u32, u32, u32, u32, (a, b, acc, c0, c1) => {
      const mem = new Memory({ base: BASE, size: 4096 });
      mem.bytes.set(assemble('bn.mac1 a3, a1, a2\nebreak').bytes);
      const cpu = new Cpu(mem, { pc: BASE });
      cpu.regs[11] = a | 0; cpu.regs[12] = b | 0; cpu.regs[13] = acc | 0;
      cpu.bnCarry[0] = c0; cpu.bnCarry[1] = c1;
      expect(cpu.run({ maxInstructions: 10 }).reason).toBe('ebreak');
      const t = BigInt(a) * BigInt(b) + BigInt(acc) + BigInt(c1);
      expect(BigInt(cpu.regs[13]! >>> 0)).toBe(t % M32);
      expect(BigInt(cpu.bnCarry[1]!)).toBe(t / M32);
      expect(cpu.bnCarry[0]).toBe(c0);
    }), { numRuns: 500, seed: 11 });
  });

  it('every other custom-0 encoding is illegal (funct3 ≠ 0 or funct7 > 1), in the CPU and in decode()', () => {
    const mac = new DataView(assemble('bn.mac a3, a1, a2').bytes.buffer).getUint32(0, true);
    expect(decode(mac)?.spec.name).toBe('bn.mac');
    expect(disassemble(mac)).toBe('bn.mac a3, a1, a2');
    expect(disassemble(mac | (1 << 25))).toBe('bn.mac1 a3, a1, a2');
    for (const w of [mac | (1 << 12), mac | (7 << 12), mac | (2 << 25), mac | (0x40 << 25), mac | (1 << 25) | (1 << 12)]) {
      expect(decode(w)).toBeNull();
      const mem = new Memory({ base: BASE, size: 4096 });
      mem.write32(BASE, w);
      const r = new Cpu(mem, { pc: BASE }).run({ maxInstructions: 1 });
      expect([r.reason, r.word]).toEqual(['illegal', w >>> 0]);
    }
  });
});

describe('bn.mac tokens (protocol v4)', () => {
  const a = 0xfedcba98n, b = 0x89abcdefn, acc = 0xffffffffn;
  const t1 = a * b + acc; // first mac, C = 0
  const t2 = a * b + (t1 % M32) + t1 / M32; // second mac into the same register, C from the first
  const wide = (v: bigint) => [encodeToken({ kind: 'D', v: Number(v & 0xffffn) }), encodeToken({ kind: 'H', v: Number((v >> 16n) & 0xffffn) })];

  it('carry first (D, H), then the low word (D, H), then N; J at the window end; rd = x0 alike', () => {
    const { elf } = assembleElf(`
_start:
  li a1, ${a}
  li a2, ${b}
  li a3, -1
  bn.mac a3, a1, a2
  bn.mac a3, a1, a2
  bn.mac zero, a1, a2
  li a0, 0
  li a7, 93
  ecall`);
    const t = goldenTokens(elf, { mem: { size: 4096 } });
    const ids = Array.from(t.tokens);
    // li a1 (lui + addi), li a2 (lui + addi), li a3 (addi): the first bn.mac is instruction 5, at j = 1.
    const of = (k: number) => ids.filter((_, p) => t.tokenInstr[p] === k);
    expect(of(5)).toEqual([...wide(t1 / M32), ...wide(t1 % M32), encodeToken({ kind: 'N', j: 2 })]);
    expect(of(6)).toEqual([...wide(t2 / M32), ...wide(t2 % M32), encodeToken({ kind: 'N', j: 3 })]);
    // The third is at the window end (j = 3): its low word (with rd = x0 it is still emitted), then J.
    const t3 = a * b + t2 / M32;
    expect(of(7)).toEqual([...wide(t3 / M32), ...wide(t3 % M32), encodeToken({ kind: 'J', w: 8 })]);
    expect(t.summary.byClass.bignum).toEqual({ instructions: 3, tokens: 15, tokensPerInstruction: 5 });
    expect(decodeToken(ids[ids.length - 1]!)).toEqual({ kind: 'HALT', code: 0 });
  });
});

describe('firmware and the bignum circuit', () => {
  it('the chip images run their limb loops on the unit; the Linux images (qemu-user) have none', () => {
    const chip = mZbaCounts(new Uint8Array(fs.readFileSync('fixtures/firmware/bigfact.elf')));
    const linux = mZbaCounts(new Uint8Array(fs.readFileSync('fixtures/firmware/bigfact.linux.elf')));
    expect(chip['bn.mac']).toBeGreaterThan(4);
    expect(linux['bn.mac']).toBeUndefined();
    expect(mZbaCounts(new Uint8Array(fs.readFileSync('fixtures/firmware/bignum.elf')))['bn.mac']).toBeGreaterThan(4);
  });

  it('circuits/bignum/chip.ts builds and names the unit and the service limits in its notes', () => {
    const ir = buildCircuit(bignumChip, 'circuits/bignum/chip.ts');
    expect(ir.name).toBe('bignum');
    const notes = (ir.notes ?? []).join('\n');
    expect(notes).toContain('bn.mac rd, rs1, rs2');
    expect(notes).toContain('8,192 bits');
    expect(ir.rams.map((r) => r.name)).toEqual(expect.arrayContaining(['bnPending', 'bnCarry', 'regs', 'mem']));
  });
});
