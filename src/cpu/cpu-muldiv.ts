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
  /** The ALU class and funct3 (decode). */
  clsAlu: Sig;
  funct3: Sig;
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
  const { A, B, b, clsAlu, funct3, isStart, isQ, isD, isH, fedC, qStep, qDigit, cvW, dLo, prevDLo, prevIsQ, ppQ, remTransfer } = io;
  // ── M extension: division by radix-16 steps, one per position (docs/token-protocol.md "v2 changes")
  //    Latches written from tokens: the step s (Q), the digits q_s (Q), the partial remainder
  //    R (the step's H, with the D latch); the digits and R are cleared at every instruction's
  //    start (read only inside a division; a reset from the fed token alone lets their RAMs sit
  //    layers sooner than one from the decoded division, and their inputs leave the residual).
  const isDivOp = c.table('isDivOp', [clsAlu, funct3], (k, f3) => (k === 6 && f3 >= 4 ? 1 : 0), [0, 1]);
  const signedDiv = c.table('signedDiv', [clsAlu, funct3], (k, f3) => (k === 6 && (f3 === 4 || f3 === 6) ? 1 : 0), [0, 1]);
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
  // Its last field (v9) is 1 from every start until a step's D: the positions where a division's
  // first step runs before its remainder reaches a latch (below).
  const rsRam = c.ram('divRs', { rows: 1, fields: [...Array.from({ length: 16 }, () => 2), 2] });
  rsRam.write(c.constant(0), [...dLo.map((x) => c.and(isD, x)), isStart], c.or(stepD, isStart));
  const rsRead = rsRam.readWithGroups(c.constant(0), undefined, NIBBLE_GROUPS.slice(0, 4));
  const shortNib = rsRead.groups;
  const inFirst = rsRead.fields[16]!;
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
  // The step this position runs: at the start s0, after a step's H s + 1, else s. s0 (v9) is
  // the number of the quotient's leading digits known to be 0, at most 7: lz(A) + nibbles(B) − 1
  // = lz(A) + 7 − lz(B) for a short divisor (lz: leading zero nibbles of the raw operand), lz(A)
  // for any other (v8's start: a divisor's bits 16… count as no zero nibble, lz(B) = 7 then), 0
  // for a negative signed dividend or a zero divisor. Every step from s0 on runs as before.
  //   lz(A) = Σ_{a=1…8} [A's top a nibbles are 0] (a nibble sum is 0 only when every nibble is);
  //   lz(B) = Σ_{a=1…7} [B's top 4a bits are 0, or bits 16… are not] (from B's bits: its nibbles
  //   would hold the register read-out into the chip's widest sublayer); s0 ≥ k is one compare
  //   on lz(A) − lz(B), one sum of the compares.
  const lzDiff = c.linear([
    ...Array.from({ length: 8 }, (_, m) => [c.linear(nA.slice(7 - m).map((x) => [x, 1] as [Sig, number])).le(0).named(`divZA${m + 1}`), 1] as [Sig, number]),
    ...Array.from({ length: 7 }, (_, m) => [c.linear(b.map((x, i) =>
      [x, (i >= 28 - 4 * m ? 1 : 0) - (i >= 16 ? 13 : 0)] as [Sig, number]).filter(([, k]) => k !== 0)).le(0).named(`divZB${m + 1}`), -1] as [Sig, number]),
  ]).named('divLzDiff');
  // A division's first step runs at several positions — the start (its Q), the Q (its D), and
  // the D for a long divisor or step 7 (its H) — before its remainder reaches a latch. The short
  // latch's flag (set at a start, cleared at a step's D) marks them (`phase`; a long divisor's
  // start reads no dividend nibbles, s0 = lz(A), so its first step's D may end the phase): there
  // the start's compares, on the same operands, select the step and its remainder; afterwards the
  // latched step and the latches do.
  const phase = c.table('divPhase', [inFirst, isDivOp], (f, dv) => (f && dv ? 1 : 0), [0, 1]);
  const startGe = [phase, ...Array.from({ length: 7 }, (_, m) => {
    const k = m + 1;
    const form = c.linear([[lzDiff, 1], [negA, -16], [bZero, -16], [phase, 64]], 7 - 64);
    return form.ge(k).named(`divS0ge${k}`);
  }), c.constant(0)];
  // The first step k (one-hot in the phase, all 0 elsewhere) reads the dividend's top k nibbles as
  // its partial remainder: below the divisor, since they are fewer than the divisor's nibbles.
  const startSel = Array.from({ length: 8 }, (_, k) => c.linear([[startGe[k]!, 1], [startGe[k + 1]!, -1]], 0, [0, 1]));
  // fed a step's H, or (short divisor) the D of a step before the last: the next step
  const stepSel = Array.from({ length: 8 }, (_, k) => {
    const later = c.table(`divStep${k}`, [fedC, sLatch!, prevIsQ, divShort, inFirst], (f, sl, pq, sh, fi) =>
      (!fi && f !== 0 && (f === 2 || (f === 1 && pq && sh && sl < 7) ? sl + 1 : sl) === k ? 1 : 0), [0, 1]);
    return c.linear([[startGe[k]!, 1], [startGe[k + 1]!, -1], [later, 1]], 0, [0, 1]).named(`divSel${k}`);
  });
  const nib = c.choose(stepSel.map((sel, k) => [sel, magA[7 - k]!] as [Sig, Sig]), [0, 15]).named('divNib');
  // The partial remainder the step reads: in the phase, the first step k's nibble j is the
  // dividend's nibble j + 8 − k (the latches hold 0 there); after it, the short latch for a short
  // divisor, else the full one (nibbles 4… of the full one alone: with a short divisor it holds 0
  // until the last H). One choice per nibble, its cases exclusive (the latches' cases are off in the phase):
  // the step's digit forms keep one dim per remainder nibble (a sum of two would put each of its
  // 105 normalised digits in a slot of its own).
  const latchShort = c.linear([...b.slice(16).map((x) => [x, 16] as [Sig, number]), ...b.slice(0, 16).map((x) => [x, -1] as [Sig, number]), [phase, 17]]).lt(0).named('divLatchShort');
  const latchLong = c.linear([[phase, -1], [latchShort, -1]], 1, [0, 1]);
  const latchOn = c.linear([[phase, -1]], 1, [0, 1]);
  const remIn = wordFromNibbles(c, wordNibbles(c, remLatch).map((x, j) => {
    const startCases = Array.from({ length: Math.max(0, 7 - j) }, (_, m) => { const k = j + 1 + m; return [startSel[k]!, nA[j + 8 - k]!] as [Sig, Sig]; });
    if (j < 4) return c.choose([[latchShort, shortNib[j]!], [latchLong, x], ...startCases], [0, 15]).named(`divRem${j}`);
    if (j < 7) return c.choose([[latchOn, x], ...startCases], [0, 15]).named(`divRem${j}`);
    return x;
  }));
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
