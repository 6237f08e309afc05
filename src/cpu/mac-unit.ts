/**
 * The bignum unit of the RV32 chip (docs/bignum-unit.md): one custom-0 instruction in two banks,
 *
 *     bn.mac  rd, rs1, rs2       t = rs1·rs2 + rd + C0     rd ← t mod 2^32,  C0 ← ⌊t / 2^32⌋
 *     bn.mac1 rd, rs1, rs2       the same with C1 (funct7 = 1)
 *
 * over unsigned 32-bit values, with C0, C1 the unit's 32-bit carry registers (0 at reset). It is
 * the inner step of every limb loop of big-integer arithmetic (multiply-accumulate with carry —
 * two rows at a time with the two carries — and, with the divisor's limbs complemented,
 * multiply-subtract; firmware/lib/bignum.c).
 *
 * Exact math in the chip: t < 2^64 always ((2^32 − 1)² + 2·(2^32 − 1) = 2^64 − 1), and t is the
 * multiplier's own 64-bit product (src/cpu/mul.ts) with rd and C added as two more nibble
 * terms in each of its eight low columns: column k gains at most 2·15, so the largest low column
 * sum is 8·15 + 7·14 + 30 = 248 ≤ 255, inside the column gadget's exact range — no adder, no extra
 * layer. Both extra addends read as 0 for every other instruction (a disabled RAM read gives 0), so
 * MUL and MULH* are unchanged.
 *
 * State: rd comes from a third read port of the register file (the instruction's rd field). The
 * carries are double-buffered, so every position of the instruction recomputes the same t: the new
 * carry comes back through the tokens first (D, H) and is latched as *pending* at that H; the low
 * word follows (D, H, committed to rd like any wide result), and at its H the pending carry moves
 * into the instruction's bank. All latches are one-row GDN RAMs written from token fields (exact:
 * pinned rows, docs/gadgets-gdn.md). The banks' reads are enabled one at a time (only the
 * instruction's bank), so their bit sums stay 0/1 and the column bound above holds.
 */
import type { CircuitBuilder, Ram, Sig } from '../dsl/index.ts';
import { NIBBLE_GROUPS } from './cpu-words.ts';

/** custom-0: the unit's opcode (funct3 = 0; funct7 = 0: bn.mac, 1: bn.mac1; every other custom-0 word is illegal). */
export const BN_OPCODE = 0x0b;
/** Carry banks: funct7 selects one. */
export const BN_BANKS = 2;

export interface MacUnitInputs {
  /** The register file (32 rows of 32 bits) and the instruction's rd field (its third read port's row). */
  regs: Ram;
  rd: Sig;
  /** 1 when the instruction is bn.mac or bn.mac1 (decoded from the opcode). */
  isMac: Sig;
  /** Per carry bank: 1 when the instruction uses it (decoded), and 1 at the low word's H of an instruction that used it. */
  bankRead: Sig[];
  bankMove: Sig[];
  /** The 32-bit word a D, H pair brings back at a position fed H (bits, LSB first). */
  tokenWord: Sig[];
  /**
   * 1 at every H two positions after an instruction's start: bn.mac's new carry there; another
   * instruction's word, which nothing reads (only bn.mac's low word's H, two positions later,
   * moves the pending word, and the H before it is always bn.mac's own carry).
   */
  carryIn: Sig;
}

export interface MacUnit {
  /** rd's value (bits) for bn.mac, else 0. */
  acc: Sig[];
  /** The instruction's carry (bits) for bn.mac / bn.mac1, else 0. */
  carry: Sig[];
  /**
   * The multiplier's extra column terms (mul.ts `columnExtra`): bit m of rd and of C enter nibble
   * column ⌊m / 4⌋ with weight 2^(m mod 4).
   */
  columns: (cols: [Sig | number, number][][]) => void;
}

/** Build the unit's read port and carry latches. */
export function macUnit(c: CircuitBuilder, io: MacUnitInputs): MacUnit {
  // rd and the carry enter the columns as nibbles, read as groups (their bits are then unread)
  const accRead = io.regs.readWithGroups(io.rd, io.isMac, NIBBLE_GROUPS);
  const acc = accRead.fields;
  const bits32 = Array.from({ length: 32 }, () => 2);
  const pending = c.ram('bnPending', { rows: 1, fields: bits32 });
  pending.write(c.constant(0), io.tokenWord, io.carryIn);
  const pend = pending.read(c.constant(0));
  const reads = io.bankRead.map((en, b) => {
    const bank = c.ram(b === 0 ? 'bnCarry' : `bnCarry${b}`, { rows: 1, fields: bits32 });
    bank.write(c.constant(0), pend, io.bankMove[b]!);
    return bank.readWithGroups(c.constant(0), en, NIBBLE_GROUPS);
  });
  // At most one bank is read (the others read 0): each bit of the sum is 0 or 1, each nibble a nibble.
  const carry = Array.from({ length: 32 }, (_, m) => c.linear(reads.map((r) => [r.fields[m]!, 1] as [Sig, number]), 0, [0, 1]));
  const carryNibbles = Array.from({ length: 8 }, (_, n) => c.linear(reads.map((r) => [r.groups[n]!, 1] as [Sig, number]), 0, [0, 15]));
  const columns = (cols: [Sig | number, number][][]): void => {
    for (let n = 0; n < 8; n++) cols[n]!.push([accRead.groups[n]!, 1], [carryNibbles[n]!, 1]);
  };
  return { acc, carry, columns };
}
