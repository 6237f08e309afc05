/**
 * The bignum unit of the RV32 chip (docs/bignum-unit.md): one custom-0 instruction,
 *
 *     bn.mac rd, rs1, rs2        t = rs1·rs2 + rd + C      rd ← t mod 2^32,  C ← ⌊t / 2^32⌋
 *
 * over unsigned 32-bit values, with C a 32-bit carry register of the unit (0 at reset). It is the
 * inner step of every limb loop of big-integer arithmetic (multiply-accumulate with carry, and,
 * with the divisor's limbs complemented, multiply-subtract; firmware/lib/bignum.c).
 *
 * Exact math in the chip: t < 2^64 always ((2^32 − 1)² + 2·(2^32 − 1) = 2^64 − 1), and t is the
 * multiplier's own 64-bit product (circuits/rv32im/mul.ts) with rd and C added as two more nibble
 * terms in each of its eight low columns: column k gains at most 2·15, so the largest low column
 * sum is 8·15 + 7·14 + 30 = 248 ≤ 255, inside the column gadget's exact range — no adder, no extra
 * layer. Both extra addends read as 0 for every other instruction (a disabled RAM read gives 0), so
 * MUL and MULH* are unchanged.
 *
 * State: rd comes from a third read port of the register file (the instruction's rd field). C is
 * double-buffered, so every position of the instruction recomputes the same t: the new carry comes
 * back through the tokens first (D, H) and is latched as *pending* at that H; the low word follows
 * (D, H, committed to rd like any wide result), and at its H the pending carry moves into C. Both
 * latches are one-row GDN RAMs written from token fields (exact: pinned rows, docs/gadgets-gdn.md).
 */
import type { CircuitBuilder, Ram, Sig } from '../../src/dsl/index.ts';

/** custom-0: the unit's opcode (funct3 = 0, funct7 = 0: bn.mac; every other custom-0 word is illegal). */
export const BN_OPCODE = 0x0b;

export interface MacUnitInputs {
  /** The register file (32 rows of 32 bits) and the instruction's rd field (its third read port's row). */
  regs: Ram;
  rd: Sig;
  /** 1 when the instruction is bn.mac (decoded from the opcode). */
  isMac: Sig;
  /** The 32-bit word a D, H pair brings back at a position fed H (bits, LSB first). */
  tokenWord: Sig[];
  /** 1 at the H of the new carry (two positions after the instruction's start). */
  carryIn: Sig;
  /** 1 at the H of the low word (two positions after the carry's H). */
  carryMove: Sig;
}

export interface MacUnit {
  /** rd's value (bits) for bn.mac, else 0. */
  acc: Sig[];
  /** C (bits) for bn.mac, else 0. */
  carry: Sig[];
  /**
   * The multiplier's extra column terms (mul.ts `columnExtra`): bit m of rd and of C enter nibble
   * column ⌊m / 4⌋ with weight 2^(m mod 4).
   */
  columns: (cols: [Sig | number, number][][]) => void;
}

/** Build the unit's read port and carry latches. */
export function macUnit(c: CircuitBuilder, io: MacUnitInputs): MacUnit {
  const acc = io.regs.read(io.rd, io.isMac);
  const bits32 = Array.from({ length: 32 }, () => 2);
  const pending = c.ram('bnPending', { rows: 1, fields: bits32 });
  pending.write(c.constant(0), io.tokenWord, io.carryIn);
  const carryRam = c.ram('bnCarry', { rows: 1, fields: bits32 });
  carryRam.write(c.constant(0), pending.read(c.constant(0)), io.carryMove);
  const carry = carryRam.read(c.constant(0), io.isMac);
  const columns = (cols: [Sig | number, number][][]): void => {
    for (let m = 0; m < 32; m++) cols[m >> 2]!.push([acc[m]!, 2 ** (m & 3)], [carry[m]!, 2 ** (m & 3)]);
  };
  return { acc, carry, columns };
}
