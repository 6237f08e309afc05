/**
 * ISA test group `alu`: RV32I register-register and register-immediate arithmetic, logic,
 * comparisons and shifts, LUI/AUIPC, writes to x0, and register aliasing.
 */
import type { Check, TestGroup } from './program.ts';
import { REF, REF_IMM, hx, u32 } from './ref.ts';

const INT_MIN = 0x80000000n;
const INT_MAX = 0x7fffffffn;
const ALL1 = 0xffffffffn;

/** Operand pairs for the non-shift ops: zero, carries, signed/unsigned order flips, mixed bits. */
const PAIRS: [bigint, bigint][] = [
  [0n, 0n],
  [1n, 1n],
  [INT_MAX, 1n],
  [INT_MIN, ALL1],
  [ALL1, ALL1],
  [0x12345678n, 0x0f0f0f0fn],
  [INT_MIN, INT_MAX],
  [0xfffff800n, 0x800n],
];
/** Shift amounts in rs2: 0, 1, 31, then ≥ 32 and negative, which the hardware masks to 5 bits. */
const SHIFT_AMOUNTS = [0n, 1n, 31n, 32n, 33n, 0xffffffe1n, ALL1];
const SHIFT_SOURCES = [0x80000001n, 0x87654321n];

/** rd ← op(rs1 = a, rs2 = b). */
function rCheck(op: string, a: bigint, b: bigint): Check {
  return {
    desc: `${op} ${hx(a)}, ${hx(b)}`,
    asm: () => [`li a1, ${hx(a)}`, `li a2, ${hx(b)}`, `${op} a3, a1, a2`],
    expected: REF[op](a, b),
  };
}

function iCheck(op: string, a: bigint, imm: number): Check {
  return {
    desc: `${op} ${hx(a)}, ${imm}`,
    asm: () => [`li a1, ${hx(a)}`, `${op} a3, a1, ${imm}`],
    expected: REF_IMM[op](a, imm),
  };
}

function checks(): Check[] {
  const out: Check[] = [];
  for (const op of ['add', 'sub', 'and', 'or', 'xor', 'slt', 'sltu']) {
    for (const [a, b] of PAIRS) out.push(rCheck(op, a, b));
  }
  for (const op of ['sll', 'srl', 'sra']) {
    SHIFT_AMOUNTS.forEach((b, i) => out.push(rCheck(op, SHIFT_SOURCES[i % 2], b)));
  }
  const immSources = [0n, 0x7ffff800n, ALL1, INT_MIN];
  const imms = [0, 1, -1, 2047, -2048];
  for (const op of ['addi', 'slti', 'sltiu', 'xori', 'ori', 'andi']) {
    immSources.forEach((a, i) => out.push(iCheck(op, a, imms[(i + op.length) % imms.length])));
  }
  // sltiu with imm −1 compares against 0xffffffff (the immediate is sign-extended first).
  out.push(iCheck('sltiu', 0xfffffffen, -1), iCheck('sltiu', ALL1, -1), iCheck('slti', 0n, -2048));
  for (const op of ['slli', 'srli', 'srai']) {
    for (const sh of [0, 1, 17, 31]) out.push(iCheck(op, 0x80000081n, sh));
  }
  for (const imm of [0, 1, 0x80000, 0xfffff]) {
    out.push({
      desc: `lui ${hx(BigInt(imm))}`,
      asm: () => [`li a3, -1`, `lui a3, ${imm}`],
      expected: u32(BigInt(imm) << 12n),
    });
  }
  // AUIPC adds to its own address: 0x80000 at 0x8000xxxx wraps past 2^32.
  for (const imm of [0, 1, 0x80000, 0xfffff]) {
    out.push({
      desc: `auipc ${hx(BigInt(imm))} (pc-relative)`,
      asm: (p) => [`${p}auipc: auipc a3, ${imm}`],
      expected: (addr, p) => u32(BigInt(addr(`${p}auipc`)) + (BigInt(imm) << 12n)),
    });
  }
  // Writes to x0 are ignored, from every kind of instruction that writes a register.
  out.push(
    { desc: 'addi x0 ignored', asm: () => ['addi zero, zero, 5', 'add a3, zero, zero'], expected: 0n },
    { desc: 'lui x0 ignored', asm: () => ['lui zero, 0x12345', 'addi a3, zero, 0'], expected: 0n },
    { desc: 'add x0 ignored', asm: () => ['li a1, 7', 'add zero, a1, a1', 'or a3, zero, zero'], expected: 0n },
    { desc: 'auipc x0 ignored', asm: () => ['auipc zero, 1', 'sub a3, zero, zero'], expected: 0n },
    { desc: 'x0 reads 0 as a source', asm: () => ['li a1, 9', 'sub a3, zero, a1'], expected: u32(-9n) },
  );
  // Register aliasing: rd = rs1 = rs2.
  out.push(
    { desc: 'add a3, a3, a3', asm: () => ['li a3, 0x40000001', 'add a3, a3, a3'], expected: REF.add(0x40000001n, 0x40000001n) },
    { desc: 'sub a3, a3, a3', asm: () => ['li a3, 0x12345678', 'sub a3, a3, a3'], expected: 0n },
    { desc: 'sra a3, a3, a3', asm: () => ['li a3, 0x80000004', 'sra a3, a3, a3'], expected: REF.sra(0x80000004n, 0x80000004n) },
  );
  return out;
}

export const aluGroup: TestGroup = {
  name: 'alu',
  summary: 'add/sub/and/or/xor/sll/srl/sra/slt/sltu, the immediate forms, lui/auipc, x0 writes, shift-amount masking',
  covers: ['add', 'sub', 'and', 'or', 'xor', 'sll', 'srl', 'sra', 'slt', 'sltu',
    'addi', 'slti', 'sltiu', 'xori', 'ori', 'andi', 'slli', 'srli', 'srai', 'lui', 'auipc'],
  checks: checks(),
};
