/**
 * The M extension and the bignum unit.
 *
 *  - bignumUnit (right after the register file): bn.mac / bn.mac1's extra read port of rd and
 *    its carry banks (src/cpu/mac-unit.ts); its addends enter the multiplier's columns.
 *  - multiply: one unsigned 32×32 → 64 multiplier (mul.ts) over the multiplier's operand ports;
 *    MULH / MULHSU's sign corrections and bn.mac's rd + carry enter its own column sums, so the
 *    high word is read straight off the product.
 *  - divide: DIV / DIVU / REM / REMU as radix-16 steps, one per position, their state in latches
 *    written from tokens — the step s and digits q_s (Q tokens), the partial remainder (the
 *    step's H with the D latch) — and the step's Q / D / H payloads for the emit plan.
 *
 * Reads the operands and the register file, decode (class, funct3), the fed token's fields and
 * their delays; produces the product, the division's results and the emit plan's step signals.
 */
import type { CircuitBuilder, Ram, Sig } from '../dsl/index.ts';
import { Q_DIGITS } from '../../riscv/protocol.ts';
import { BN_BANKS, BN_OPCODE, macUnit, type MacUnit } from './mac-unit.ts';
import { wordFromNibbles, wordNibbles, type Word } from './alu.ts';
import { divStep, negWord, signedResult } from './div.ts';
import { mulBytes } from './mul.ts';
import { Kind, protocolField, tokenKind } from './cpu-tokens.ts';
import { NIBBLE_GROUPS, readWord } from './cpu-words.ts';

export interface BignumInputs {
  /** The register file and the bank enables (register file); the instruction (fetch, decode). */
  regs: Ram;
  bnCarryMoves: Sig[];
  bnCarryIn: Sig;
  ins: Sig[];
  opcode: Sig;
  rd: Sig;
  isBn: Sig;
  /** Token fields: the D latch and the upper half (the token word {H, D latch}). */
  dLoPrev: Sig[];
  cvW: Sig[];
}

/** The bignum unit (its `columns` adds rd and the carry to the multiplier's column sums). */
export function bignumUnit(c: CircuitBuilder, io: BignumInputs): MacUnit {
  const { regs, bnCarryMoves, bnCarryIn, ins, opcode, rd, isBn, dLoPrev, cvW } = io;
  // The bignum unit (src/cpu/mac-unit.ts): rd through a third read port, the carry banks
  // (funct7 bit 0 picks one; the other custom-0 encodings are illegal and never decoded here).
  const bnBankRead = Array.from({ length: BN_BANKS }, (_, b) =>
    c.table(`isBnMac${b}`, [opcode, ins[25]!], (op, b25) => (op === BN_OPCODE && b25 === b ? 1 : 0), [0, 1]));
  const mac = macUnit(c, { regs, rd, isMac: isBn, bankRead: bnBankRead, bankMove: bnCarryMoves, tokenWord: [...dLoPrev, ...cvW], carryIn: bnCarryIn });
  return mac;
}

export interface MultiplyInputs {
  /** The multiplier's operands as bits and words (register file). */
  am: Sig[];
  bm: Sig[];
  Am: Word;
  Bm: Word;
  /** The ALU class and funct3 (decode): which high word's corrections apply. */
  clsAlu: Sig;
  funct3: Sig;
  mac: MacUnit;
}

export interface Product {
  /** The 64-bit product (8 bytes, with bn.mac's addends and MULH*'s corrections) and its high word. */
  product: Word;
  mulHigh: Word;
}

export function multiply(c: CircuitBuilder, io: MultiplyInputs): Product {
  const { am, bm, Am, Bm, clsAlu, funct3, mac } = io;
  // ── M extension: one unsigned 32×32 → 64 multiplier (mul.ts); the signed high words by
  //    MULH = MULHU − [a < 0]·b − [b < 0]·a and MULHSU = MULHU − [a < 0]·b (mod 2^32), the
  //    correction summed beside the multiplier and subtracted after it ────────────────────
  // The corrections enter the multiplier's own column sums: −[a < 0]·b·2^32 ≡ [a < 0]·(~b + 1)·2^32
  // (mod 2^64), so the nibbles of ~b (gated) go into columns 8…15 and the +1 into column 8,
  // likewise for a; the high word is then read straight off the product (no subtractor after it).
  const aNeg = am[31]!;
  const bNeg = bm[31]!;
  // MULH (funct3 1) and MULHSU (2) from the ALU class and funct3 (not through aluOp: a layer sooner).
  const corrBSel = c.table('mulCorrBSel', [clsAlu, funct3], (k, f3) => (k === 6 && (f3 === 1 || f3 === 2) ? 1 : 0), [0, 1]);
  const corrASel = c.table('mulCorrASel', [clsAlu, funct3], (k, f3) => (k === 6 && f3 === 1 ? 1 : 0), [0, 1]);
  const corrBOn = c.table('mulCorrB', [aNeg, corrBSel], (n, s) => n & s, [0, 1]);
  const corrAOn = c.table('mulCorrA', [bNeg, corrASel], (n, s) => n & s, [0, 1]);
  const product = mulBytes(c, Am, Bm, false, false, 8, 'mul', (na, nb) => {
    const cols: [Sig | number, number][][] = Array.from({ length: 16 }, () => []);
    for (let j = 0; j < 8; j++) {
      // The nibble is the fastest input: the values are then 0, then one straight run (3 ramps).
      cols[8 + j]!.push([c.table(`mulNotB${j}`, [aNeg, corrBSel, nb[j]!], (n, s, x) => (n && s ? 15 - x : 0), [0, 15]), 1]);
      cols[8 + j]!.push([c.table(`mulNotA${j}`, [bNeg, corrASel, na[j]!], (n, s, x) => (n && s ? 15 - x : 0), [0, 15]), 1]);
    }
    cols[8]!.push([corrBOn, 1], [corrAOn, 1]);
    mac.columns(cols); // bn.mac: + rd + C in the low columns (both 0 for every other instruction)
    return cols;
  });
  const mulHigh = product.slice(4);
  return { product, mulHigh };
}

export interface DivideInputs {
  /** Operands: rs1 / rs2 as words, rs2's bits (register file). */
  A: Word;
  B: Word;
  b: Sig[];
  /** The ALU class and funct3 (decode), loader mode (pcControl). */
  clsAlu: Sig;
  funct3: Sig;
  loading: Sig;
  /** Token fields (cpu-input.ts) and the delays of Q (register file). */
  isStart: Sig;
  isQ: Sig;
  isD: Sig;
  isH: Sig;
  fedC: Sig;
  qStep: Sig;
  qDigit: Sig;
  cvW: Sig[];
  /** The fed D's payload (a short step's remainder) and the previous position's (the D latch). */
  dLo: Sig[];
  prevDLo: Sig[];
  prevIsQ: Sig;
  ppQ: Sig;
  /** 1 at a step's H: the partial remainder comes back (register file). */
  remTransfer: Sig;
}

export interface Division {
  /** The quotient digits' word, the partial remainder latch, and the signed quotient / remainder. */
  Qword: Word;
  remLatch: Word;
  quot: Word;
  rem: Word;
  /** This position emits a step's token; which (stepKind: 0 Q, 1 D, 2 H); its step's new remainder; Q's payload. */
  stepping: Sig;
  stepKind: Sig;
  stepRem: Word;
  divQPay: Sig;
}

export function divide(c: CircuitBuilder, io: DivideInputs): Division {
  const { A, B, b, clsAlu, funct3, loading, isStart, isQ, isD, isH, fedC, qStep, qDigit, cvW, dLo, prevDLo, prevIsQ, ppQ, remTransfer } = io;
  // ── M extension: division by radix-16 steps, one per position (docs/token-protocol.md "v2 changes")
  //    Latches written from tokens: the step s (Q), the digits q_s (Q), the partial remainder
  //    R (the step's H, with the D latch); the digits and R are cleared at every instruction's
  //    start (read only inside a division; a reset from the fed token alone lets their RAMs sit
  //    layers sooner than one from the decoded division, and their inputs leave the residual).
  const isDivOp = c.table('isDivOp', [clsAlu, funct3], (k, f3) => (k === 6 && f3 >= 4 ? 1 : 0), [0, 1]);
  const signedDiv = c.table('signedDiv', [clsAlu, funct3], (k, f3) => (k === 6 && (f3 === 4 || f3 === 6) ? 1 : 0), [0, 1]);
  const divStart = c.table('divStart', [isStart, isDivOp, loading], (st, dv, ld) => (st && dv && !ld ? 1 : 0), [0, 1]);
  const sRam = c.ram('divS', { rows: 1, fields: [8] });
  sRam.write(c.constant(0), [qStep], isQ);
  const [sLatch] = sRam.read(c.constant(0));
  const digits = Array.from({ length: 8 }, (_, i) => {
    const d = c.ram(`divQ${i}`, { rows: 1, fields: [16] });
    d.write(c.constant(0), [qDigit], c.table(`divQ${i}en`, [isQ, qStep, isStart], (q, st, s) => ((q && st === i) || s ? 1 : 0), [0, 1]));
    return d.read(c.constant(0))[0]!;
  });
  const rRam = c.ram('divR', { rows: 1, fields: Array.from({ length: 32 }, () => 2) });
  const rIn = Array.from({ length: 32 }, (_, k) => c.and(isH, k < 16 ? prevDLo[k]! : cvW[k - 16]!));
  rRam.write(c.constant(0), rIn, c.or(remTransfer, isStart));
  const remLatch = readWord(c, rRam, c.constant(0)).word;
  // v7: with a divisor in [1, 2^16) every partial remainder fits 16 bits, so a step before the
  // last sends Q, D only: the D of steps 0…6 writes {0, D} into a second latch, the short
  // remainder (cleared at the start like the other), and the next step runs at that D.
  const stepD = c.table('divStepD', [isD, prevIsQ, sLatch!], (d, pq, sl) => (d && pq && sl < 7 ? 1 : 0), [0, 1]);
  const rsRam = c.ram('divRs', { rows: 1, fields: Array.from({ length: 16 }, () => 2) });
  rsRam.write(c.constant(0), dLo.map((x) => c.and(isD, x)), c.or(stepD, isStart));
  const shortNib = rsRam.readWithGroups(c.constant(0), undefined, NIBBLE_GROUPS.slice(0, 4)).groups;
  // The divisor as an unsigned value is in [1, 2^16): its bits 16… are 0 and one below is 1.
  const divShort = c.linear([...b.slice(16).map((x) => [x, 16] as [Sig, number]), ...b.slice(0, 16).map((x) => [x, -1] as [Sig, number])]).lt(0).named('divShort');
  // Operands: magnitudes for DIV / REM, the values for DIVU / REMU.
  const nA = wordNibbles(c, A);
  const nB = wordNibbles(c, B);
  // The signs and magnitudes are 0 unless the instruction divides: the step's tables (15
  // multiples of the divisor, their digit signs and compares: most of the divider's units) then
  // see constant inputs across runs of other instructions, which incremental decode skips. (Every
  // reader of negA / negB is gated by the division already: the signed result's selects and s0.)
  const negA = c.table('divNegA', [nA[7]!, signedDiv, isDivOp], (n, sg, dv) => (dv && sg && n >= 8 ? 1 : 0), [0, 1]);
  const negB = c.table('divNegB', [nB[7]!, signedDiv, isDivOp], (n, sg, dv) => (dv && sg && n >= 8 ? 1 : 0), [0, 1]);
  const magOf = (n: Sig[], neg: Sig, w: Word, tag: string) => {
    const nn = wordNibbles(c, negWord(c, w, tag));
    const pos = c.linear([[isDivOp, 1], [neg, -1]], 0, [0, 1]).named(`${tag}Pos`); // a division, operand ≥ 0
    return n.map((x, j) => c.choose([[neg, nn[j]!], [pos, x]], [0, 15]).named(`${tag}${j}`));
  };
  const magA = magOf(nA, negA, A, 'divMagA');
  const magB = wordFromNibbles(c, magOf(nB, negB, B, 'divMagB'));
  const bZero = c.linear(b.map((x) => [x, 1] as [Sig, number])).eq(0).named('divBZero');
  // The step this position runs: at the start s0 (the leading zero nibbles of a non-negative
  // dividend, at most 7; 0 for a negative one or a zero divisor), after a step's H s + 1, else s.
  const zeroNib = nA.map((x, i) => x.eq(0).named(`divZ${i}`));
  const startGe = [divStart, ...Array.from({ length: 7 }, (_, m) => {
    const k = m + 1;
    const form = c.linear([...zeroNib.slice(8 - k).map((z) => [z, 1] as [Sig, number]), [negA, -8], [bZero, -8], [divStart, -32]], 32);
    return form.eq(k).named(`divS0ge${k}`);
  }), c.constant(0)];
  // fed a step's H, or (short divisor) the D of a step before the last: the next step
  const stepSel = Array.from({ length: 8 }, (_, k) => {
    const later = c.table(`divStep${k}`, [fedC, sLatch!, prevIsQ, divShort], (f, sl, pq, sh) =>
      (f !== 0 && (f === 2 || (f === 1 && pq && sh && sl < 7) ? sl + 1 : sl) === k ? 1 : 0), [0, 1]);
    return c.linear([[startGe[k]!, 1], [startGe[k + 1]!, -1], [later, 1]], 0, [0, 1]).named(`divSel${k}`);
  });
  const nib = c.choose(stepSel.map((sel, k) => [sel, magA[7 - k]!] as [Sig, Sig]), [0, 15]).named('divNib');
  // The partial remainder the step reads: the short latch for a short divisor, else the full one.
  // Nibbles 4… need no choice: with a short divisor the full latch holds 0 until the last H.
  const notShort = c.not(divShort);
  const remIn = wordFromNibbles(c, wordNibbles(c, remLatch).map((x, j) =>
    (j < 4 ? c.choose([[divShort, shortNib[j]!], [notShort, x]], [0, 15]).named(`divRem${j}`) : x)));
  const step = divStep(c, remIn, nib, magB, 'div');
  const sUse = c.linear(stepSel.map((sel, k) => [sel, k] as [Sig, number]), 0, [0, 7]);
  const Qword = wordFromNibbles(c, Array.from({ length: 8 }, (_, j) => digits[7 - j]!));
  const divRes = signedResult(c, Qword, remLatch, negA, negB, bZero, 'sdiv');
  // Stepping: this position emits Q(s, q) (at the start, after a step's H, and with a short
  // divisor after the D of a step before the last), D(R lo) (fed Q) or H(R hi) (fed the step's
  // D); the result follows the last step's H like any result.
  const stepping = c.table('stepping', [isDivOp, fedC, prevIsQ, ppQ, sLatch!], (dv, f, pq, ppq, sl) =>
    (dv && (f === 0 || f === 4 || (f === 1 && pq) || (f === 2 && ppq && sl < 7)) ? 1 : 0), [0, 1]);
  const fedKind = protocolField(c, 'divStepKind', (t) => {
    const k = tokenKind(t).kind;
    return k === Kind.Q ? 1 : k === Kind.D ? 2 : 0; // emits: 0 Q (at the start, after H), 1 D (fed Q), 2 H (fed D)
  }, [0, 2]);
  const stepKind = c.table('divStepNext', [fedKind, divShort, sLatch!], (fk, sh, sl) => (fk === 2 && sh && sl < 7 ? 0 : fk), [0, 2]);
  // A step's payloads are cases of the emit plan (mode 7 / 8 / 9 from stepKind): Q(s, q) carries
  // 16·s + q, D the remainder's low half, H its high half.
  const divQPay = c.linear([[sUse, Q_DIGITS], [step.q, 1]], 0, [0, 255]).named('divQPay');
  return { Qword, remLatch, quot: divRes.quot, rem: divRes.rem, stepping, stepKind, stepRem: step.rem, divQPay };
}
