/**
 * Register file: first the commit — the value the fed token carries (narrow E/K, {H or E/K, D
 * latch} after a D, the link at a J after JAL/JALR, the loader's register words) written into the
 * rd decoded at the previous position (a delay line of the decode) — then the reads of the
 * instruction's operands: rs1 / rs2 (A, B), the multiplier's copies (Am, Bm: x0 unless it
 * multiplies) and the effective address's base (aE: x0 unless it loads or stores).
 *
 * The commit decides from delays of the decode and of the fed token's kind, so this stage also
 * builds those delay lines (start / H / Q one and two positions back) and the PC's words (link =
 * PC + 4, pcWord) that the later stages reuse, and the bignum unit's carry enables (which H
 * latches or moves its carry). Reads the token fields, the PC's link word, loader state and decode.
 */
import type { CircuitBuilder, Ram, Sig } from '../dsl/index.ts';
import { BN_BANKS, BN_OPCODE } from './mac-unit.ts';
import type { Word } from './alu.ts';
import { Kind, protocolField, tokenKind } from './cpu-tokens.ts';
import { bitsWord, readWord } from './cpu-words.ts';

export interface RegisterFileInputs {
  /** Token fields (cpu-input.ts). */
  isD: Sig;
  isH: Sig;
  isJ: Sig;
  isQ: Sig;
  isStart: Sig;
  cvN: Sig[];
  cvW: Sig[];
  dLoPrev: Sig[];
  /** The instruction's word index, the index + 1 (16 bits: the link's) and the loader's state (pcControl). */
  w: Sig[];
  seq16: Sig[];
  loading: Sig;
  loadAddr: Sig[];
  loadReg: Sig;
  /** The instruction's bits (fetch) and its decode. */
  ins: Sig[];
  opcode: Sig;
  rd: Sig;
  clsAlu: Sig;
  isBn: Sig;
  isJump: Sig;
  isSys73: Sig;
  writesRd: Sig;
}

export interface RegisterFile {
  /** The register file itself (bignumUnit adds a read port of rd). */
  regs: Ram;
  /** rs1 / rs2 as bits (a, b) and words (A, B); the multiplier's operands; the effective address's base (bits). */
  a: Sig[];
  b: Sig[];
  A: Word;
  B: Word;
  am: Sig[];
  bm: Sig[];
  Am: Word;
  Bm: Word;
  aE: Sig[];
  /** The effective address's base as a word (its nibbles from the read-out). */
  AE: Word;
  /** 1 when the instruction has a destination the emit plan must fill (rd ≠ x0, or SYSTEM's a0). */
  hasRd: Sig;
  /** The link PC + 4 and the PC, as words. */
  link: Word;
  pcWord: Word;
  /** Delays of the fed token's kind: Q one and two positions back, start and H one and two back. */
  prevIsQ: Sig;
  ppQ: Sig;
  prevWasStart: Sig;
  prevWasH: Sig;
  ppStart: Sig;
  ppH: Sig;
  /** 1 at a division step's H (brings back the partial remainder, commits nothing). */
  remTransfer: Sig;
  /** bn.mac: 1 at its carry's H (latch the carry as pending), and per bank at its low word's H (move it). */
  bnCarryIn: Sig;
  bnCarryMoves: Sig[];
}

export function registerFile(c: CircuitBuilder, io: RegisterFileInputs): RegisterFile {
  const { isD, isH, isJ, isQ, isStart, cvN, cvW, dLoPrev, w, seq16, loading, loadAddr, loadReg, ins, opcode, rd, clsAlu, isBn, isJump, isSys73, writesRd } = io;
  // One delay for everything the commit needs from the previous position's decode (all ready
  // right after fetch); the commit enable and each committed bit are then one table each.
  // The destination is not x0: rd ≠ 0, or SYSTEM (a0).
  const rdNZ = rd.ne(0).named('rdNonZero');
  const hasRd = c.table('hasRd', [writesRd, rdNZ, isSys73], (wr, nz, sys) => (wr && (nz || sys) ? 1 : 0), [0, 1]); // for the emit plan (the commit uses its parts)
  const [prevRd0, prevRd1, prevRd2, prevRd3, prevRd4, prevWasD, prevWritesRd, prevRdFieldNZ, prevIsJump, prevIsBn, prevBnBank, prevIsSys] =
    c.previousAll([...ins.slice(7, 12), isD, writesRd, rdNZ, isJump, isBn, ins[25]!, isSys73]);
  // ≥ 1 when the previous instruction's destination is not x0 (a sum of two delayed bits: no layer of its own)
  const prevRdNZ = c.linear([[prevRdFieldNZ!, 1], [prevIsSys!, 1]], 0, [0, 2]);
  // The link (PC + 4) from the word index + 1 over 16 bits (a carry out of bit 14 lands in bit 17).
  const linkBits = [c.constant(0), c.constant(0), ...seq16, ...Array.from({ length: 13 }, () => c.constant(0)), c.constant(1)];
  const link = bitsWord(c, linkBits);
  const pcWord = bitsWord(c, [c.constant(0), c.constant(0), ...w, ...Array.from({ length: 14 }, () => c.constant(0)), c.constant(1)].slice(0, 32));
  const prevLink = c.previousAll(linkBits.slice(2, 18));
  const prevDLo = dLoPrev;
  const commitValue = protocolField(c, 'commitsValue', (t) => { const k = tokenKind(t).kind; return k === Kind.E || k === Kind.K || k === Kind.H ? 1 : 0; }, [0, 1]);
  // Division steps (v2): the H of a step brings back the partial remainder and commits nothing. It
  // is the H two positions after a Q.
  const prevIsQ = c.previous(isQ).named('prevIsQ');
  const ppQ = c.previous(prevIsQ).named('prevPrevIsQ');
  const remTransfer = c.and(isH, ppQ).named('remTransfer');
  // bn.mac emits its new carry first (D, H) and its low word after (D, H, N): the carry's H — fed
  // two positions after the start — commits nothing and latches the carry as pending; the low
  // word's H (two after that H) commits rd and moves the pending carry into the instruction's
  // carry bank, so every position of the instruction recomputes the same t = rs1·rs2 + rd + carry.
  // Every H two positions after a start latches its word as pending, whatever the instruction:
  // only bn.mac's low word's H reads it, and the H before it is always bn.mac's own carry. So the
  // latch waits for no decode: its RAM sits in layer 1 and the banks in layer 4 (layers 4 and 5
  // when it waited), and its 32 bits leave the residual before the multiplier's widest layer.
  const [prevWasStart, prevWasH] = c.previousAll([isStart, isH]);
  const [ppStart, ppH] = c.previousAll([prevWasStart!, prevWasH!]);
  const bnCarryIn = c.table('bnCarryIn', [isH, ppStart!, loading], (h, ps, ld) => (h && ps && !ld ? 1 : 0), [0, 1]);
  // The carry bank (funct7 bit 0) of the instruction whose low word's H this is.
  const bnCarryMoves = Array.from({ length: BN_BANKS }, (_, b) => c.table(`bnCarryMove${b}`, [isH, ppH!, prevIsBn!, loading, prevBnBank!],
    (h, ph, pb, ld, bk) => (h && ph && pb && !ld && bk === b ? 1 : 0), [0, 1]));
  // What the fed token may commit: 0 nothing (also a division step's H, two after a Q), 1 a value
  // (E, K, H), 2 the link (J), 3 a value unless the pending instruction is bn.mac (an H two after
  // a start: bn.mac's carry). From token fields and their delays only (no layer of its own).
  const commitTok = c.table('commitTok', [commitValue, isJ, isH, ppQ, ppStart!], (v, jj, h, q, ps) =>
    (jj ? 2 : !v || (h && q) ? 0 : h && ps ? 3 : 1), [0, 3]);
  // Loader mode: 0 off, 1 on, 2 on and this H writes a register (loadReg implies loading).
  const loaderCase = c.linear([[loading, 1], [loadReg, 1]], 0, [0, 2]).named('loaderCase');
  // In loader mode only the loader's register words are written (their bits are {H, D latch}, as a D + H commit).
  const commitEn = c.table('commitEn', [commitTok, prevIsJump!, prevIsBn!, prevWritesRd!, prevRdNZ!, loaderCase], (ct, pj, pb, wr, nz, lc) => {
    if (lc !== 0) return lc === 2 ? 1 : 0;
    const commits = ct === 1 || (ct === 3 && !pb) || (ct === 2 && pj);
    return commits && wr && nz ? 1 : 0;
  }, [0, 1]);
  // Each committed bit is the link (a J), the wide value (after a D) or the narrow value. A J
  // commits the link only after a jump (commitEn reads prevIsJump); after any other instruction
  // the bits a J selects are not written, so the bits need not read prevIsJump. And each bit is a
  // sum of one AND table per source, not one table over all five inputs: a table is ramps over
  // its mixed-radix index, so every change of isJ or prevWasD (each at about four tokens in ten
  // on crc32) walked all of a five-input table's units (up to 15), and walks the few units of the
  // ANDs that read it instead (docs/cpu-plan.md "The register commit at rest"). Bit 31, whose
  // link bit is the constant 1, stays one table (its link term would be isJ itself).
  const commitBits = Array.from({ length: 32 }, (_, k) => {
    const linkBit = k >= 2 && k < 18 ? prevLink[k - 2]! : c.constant(k === 31 ? 1 : 0);
    const wide = k < 16 ? prevDLo[k]! : cvW[k - 16]!;
    if (k === 31) return c.table(`commit${k}`, [isJ, linkBit, prevWasD!, wide, cvN[k]!], (jj, l, wd, x, n) => (jj ? l : wd ? x : n), [0, 1]);
    const terms: [Sig, number][] = [
      [c.table(`commitW${k}`, [isJ, prevWasD!, wide], (jj, wd, x) => (!jj && wd && x ? 1 : 0), [0, 1]), 1],
      [c.table(`commitN${k}`, [isJ, prevWasD!, cvN[k]!], (jj, wd, n) => (!jj && !wd && n ? 1 : 0), [0, 1]), 1],
    ];
    if (k >= 2 && k < 18) terms.push([c.table(`commitL${k}`, [isJ, linkBit], (jj, l) => (jj && l ? 1 : 0), [0, 1]), 1]);
    return c.linear(terms, 0, [0, 1]).named(`commit${k}`);
  });
  const regs = c.ram('regs', { rows: 32, fields: Array.from({ length: 32 }, () => 2) });
  const prevRd = [prevRd0!, prevRd1!, prevRd2!, prevRd3!, prevRd4!];
  // (a SYSTEM instruction's destination is a0, x10.) After an instruction that writes no register
  // (a store, a branch: its bits 7…11 are immediate bits) nothing commits, and the row rests at x0
  // instead of following those bits: the regs RAM's write key moves less (fewer conv channels and
  // value-head steps per token).
  const commitRow = c.linear(prevRd.map((x, k) => [c.table(`commitRow${k}`, [loading, loadAddr[k]!, x, prevIsSys!, prevWritesRd!],
    (ld, la, r, sys, wr) => (ld ? la : !wr ? 0 : sys ? (10 >> k) & 1 : r), [0, 1]), 2 ** k] as [Sig, number]));
  regs.write(commitRow, commitBits, commitEn);
  // ecall reads a7 (x17) and a0 (x10) instead of rs1 / rs2.
  // Each address bit is one table over (opcode, the instruction's bit): straight after fetch.
  // An instruction without an rs2 field (its bits 20… are immediate bits) reads x0 there: B is
  // then 0 rather than an unrelated register, so the tables over B's bits (the multiplier's
  // nibble products, the comparators) see no change across runs of such instructions, which
  // incremental decode skips (the value is unused: B feeds only OP, STORE, BRANCH and bn.mac).
  const usesRs2 = (op: number) => op === 0x33 || op === 0x23 || op === 0x63 || op === BN_OPCODE;
  // (`off`: x0 while it is 1 — the effective address's port reads x0 in loader mode)
  const regAddr = (from: number, sys: number, name: string, used: (op: number) => boolean, off?: Sig) => c.linear(Array.from({ length: 5 }, (_, k) =>
    [off === undefined
      ? c.table(`${name}b${k}`, [opcode, ins[from + k]!], (op, x) => (op === 0x73 ? (sys >> k) & 1 : used(op) ? x : 0), [0, 1])
      : c.table(`${name}b${k}`, [opcode, ins[from + k]!, off], (op, x, o) => (o ? 0 : op === 0x73 ? (sys >> k) & 1 : used(op) ? x : 0), [0, 1]),
    2 ** k] as [Sig, number])).named(name);
  const rs1 = regAddr(15, 17, 'rs1', () => true);
  const rs2 = regAddr(20, 10, 'rs2', usesRs2);
  const { bits: a, word: A } = readWord(c, regs, rs1);
  const { bits: b, word: B } = readWord(c, regs, rs2);
  // The multiplier's operands through two more read ports that read x0 unless the instruction
  // multiplies (MUL…MULHU, bn.mac): its 64 digit-pair tables and everything after them then
  // see constant operands across runs of other instructions (incremental decode skips them).
  // (ALU class 6 is the M extension and bn.mac; funct3 < 4 the multiplies among them.)
  const mulAddr = (from: number, name: string) => c.linear(Array.from({ length: 5 }, (_, k) =>
    [c.table(`${name}b${k}`, [clsAlu, ins[14]!, ins[from + k]!], (cls, f3hi, x) => (cls === 6 && f3hi === 0 ? x : 0), [0, 1]), 2 ** k] as [Sig, number])).named(name);
  const { bits: am, word: Am } = readWord(c, regs, mulAddr(15, 'rs1m'));
  const { bits: bm, word: Bm } = readWord(c, regs, mulAddr(20, 'rs2m'));
  // The effective address's base through one more read port that reads x0 unless the instruction
  // loads or stores: with its immediate gated the same way (cpu-memory.ts), the address and every table
  // over it stay constant across runs of other instructions (incremental decode skips them).
  const usesEa = (op: number) => op === 0x03 || op === 0x23;
  const { bits: aE, word: AE } = readWord(c, regs, regAddr(15, 0, 'rs1e', usesEa, loading));
  return {
    regs, a, b, A, B, am, bm, Am, Bm, aE, AE, hasRd, link, pcWord, prevIsQ, ppQ, prevWasStart: prevWasStart!, prevWasH: prevWasH!,
    ppStart: ppStart!, ppH: ppH!, remTransfer, bnCarryIn, bnCarryMoves,
  };
}
