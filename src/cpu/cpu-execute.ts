/**
 * Execute: the ALU's result candidates for the instruction — add / sub over the second operand
 * (rs2 for OP, the I or S immediate otherwise), shifts, comparisons, bitwise ops, Zba's shNadd,
 * LUI's and AUIPC's words — every one computed at every position (a circuit has no branches);
 * then, once memory and the M unit have added theirs, selectResult picks the one aluOp names
 * into the result word. Reads the operands (register file), the instruction bits, the decode
 * and the PC word.
 */
import type { CircuitBuilder, Sig, SigLike } from '../dsl/index.ts';
import { add32, shAdd, sll32, slt, sltu, sra32, srl32, sub32, type ShiftAmount, type Word } from './alu.ts';
import { bitsWord, immSpec, muxWord, wordFromSpec } from './cpu-words.ts';
import { ALU_SHIFT_OPS } from './cpu-decode.ts';

export interface ExecuteInputs {
  /** rs1 / rs2 as bits and words (register file), the PC as a word. */
  a: Sig[];
  b: Sig[];
  A: Word;
  B: Word;
  pcWord: Word;
  /** The instruction's bits (fetch) and its OP / STORE classes (decode). */
  ins: Sig[];
  isOp: Sig;
  isStore: Sig;
  /** The result candidate (decode): which instructions shift. */
  aluOp: Sig;
}

/** The ALU's candidates (each a word, bytes LSB first; lt / ltu single bits). */
export interface Executed {
  /** The I immediate (also JALR's target offset). */
  immI: Word;
  sum: Word;
  diff: Word;
  sll: Word;
  srl: Word;
  sra: Word;
  xorW: Word;
  orW: Word;
  andW: Word;
  lt: Sig;
  ltu: Sig;
  immU: Word;
  auipc: Word;
  /** sh1add, sh2add, sh3add. */
  shadd: Word[];
  /** The constant 0 (the comparisons' upper bytes). */
  zero: Sig;
}

export function execute(c: CircuitBuilder, io: ExecuteInputs): Executed {
  const { a, b, A, B, pcWord, ins, isOp, isStore, aluOp } = io;
  const immI = wordFromSpec(c, ins, immSpec('I'));
  // Stores add their S-immediate (the data RAM's address has an adder of its own, cpu-memory.ts
  // memoryAddress, over ports that move only for loads and stores).
  const immIS = muxWord(c, isStore, wordFromSpec(c, ins, immSpec('S')), immI);
  const opB = muxWord(c, isOp, B, immIS);
  const sum = add32(c, A, opB, 0, 'sum').sum;
  const diff = sub32(c, A, opB, 'diff').diff;
  // The shifter is off unless the instruction shifts (SLL, SRL, SRA and their immediate forms):
  // its amount's tables and its nibble tables read the gate as their slowest input, so while it
  // is 0 no unit of theirs is active and none moves with rs1, rs2 or the immediate (incremental
  // decode skips them). The gate is one more input of tables the shifter had: no layer.
  const isShift = c.table('isShift', [aluOp], (op) => (ALU_SHIFT_OPS.includes(op) ? 1 : 0), [0, 1]);
  const shRaw = c.linear([0, 1, 2, 3, 4].map((k) => [c.select(isOp, b[k]!, ins[20 + k]!), 2 ** k] as [Sig, number])).named('shamt');
  const shamt: ShiftAmount = {
    m: c.table('shamt.m', [shRaw, isShift], (v, sh) => (sh ? v & 3 : 0), [0, 3]),
    onehot: Array.from({ length: 8 }, (_, n) => c.table(`shamt.is${n}`, [shRaw, isShift], (v, sh) => (sh && v >> 2 === n ? 1 : 0), [0, 1])),
  };
  const sll = sll32(c, A, shamt, 'sll', isShift);
  const srl = srl32(c, A, shamt, 'srl', isShift);
  const sra = sra32(c, A, shamt, 'sra', isShift);
  const bBits = Array.from({ length: 32 }, (_, k) => c.select(isOp, b[k]!, k < 11 ? ins[20 + k]! : ins[31]!));
  const bitOp = (name: string, f: (s: number) => number) => bitsWord(c, a.map((x, k) => c.table(`${name}${k}`, [c.add(x, bBits[k]!)], f, [0, 1])));
  const xorW = bitOp('xor', (s) => (s === 1 ? 1 : 0));
  const orW = bitOp('or', (s) => (s >= 1 ? 1 : 0));
  const andW = bitOp('and', (s) => (s === 2 ? 1 : 0));
  const lt = slt(c, A, opB);
  const ltu = sltu(c, A, opB);
  const immU = wordFromSpec(c, ins, immSpec('U'));
  const auipc = add32(c, pcWord, immU, 0, 'auipc').sum;
  const shadd = [1, 2, 3].map((k) => shAdd(c, A, B, k as 1 | 2 | 3, `sh${k}`));
  const zero = c.constant(0);
  return { immI, sum, diff, sll, srl, sra, xorW, orW, andW, lt, ltu, immU, auipc, shadd, zero };
}

export interface ResultInputs {
  /** The ALU's candidates (execute). */
  alu: Executed;
  /** The link PC + 4 (register file). */
  link: Word;
  /** A load's value and the word a sub-word store leaves (memory): 0 outside loads / stores. */
  loaded: Word;
  merged: Word;
  /** The multiplier's 64-bit product (8 bytes) and its high word (multiply). */
  product: Word;
  mulHigh: Word;
  /** Division: the signed results, the quotient digits' word and the partial remainder (divide). */
  quot: Word;
  rem: Word;
  Qword: Word;
  remLatch: Word;
  /** The candidate index (decode) and the SYSTEM opcode (its result is −38). */
  aluOp: Sig;
  isSys73: Sig;
}

/**
 * The instruction's result word (bytes r0…r3): the candidate aluOp names, or ENOSYS for SYSTEM;
 * and `others`, the same sum without a load's value and a store's merged word (r = others +
 * loaded + merged, at most one of them not 0), so that a table of a result byte can be read as a
 * table of each (emit: the words a load or store reads come last).
 */
export function selectResult(c: CircuitBuilder, io: ResultInputs): { result: Word; others: Word } {
  const { link, loaded, merged, product, mulHigh, Qword, remLatch, aluOp, isSys73 } = io;
  const { sum, diff, sll, lt, ltu, xorW, srl, sra, orW, andW, shadd, immU, auipc, zero } = io.alu;
  const divRes = { quot: io.quot, rem: io.rem };
  const candidates: Word[] = [
    sum, diff, sll, [lt, zero, zero, zero], [ltu, zero, zero, zero], xorW, srl, sra, orW, andW,
    shadd[0]!, shadd[1]!, shadd[2]!, immU, auipc, link, loaded, merged,
    product.slice(0, 4), mulHigh, mulHigh, mulHigh, divRes.quot, Qword, divRes.rem, remLatch,
  ];
  // loaded (16) and merged (17) are already 0 outside loads / stores (their lane tables are gated).
  const sel = candidates.map((_, k) => aluOp.eq(k));
  // A SYSTEM instruction's result (aluOp 16, no candidate) is −38 = 0xffffffda: its bytes enter the sum.
  const enosys = [0xda, 0xff, 0xff, 0xff];
  // (SYSTEM's aluOp has no candidate, so isSys73 excludes every other case: one choice per byte,
  // whose value is one dim: passes/lower-encodings.ts choiceDim)
  const others: Word = [0, 1, 2, 3].map((byte) => c.choose([
    ...candidates.flatMap((cw, k) => (k === 16 || k === 17 ? [] : [[sel[k]!, cw[byte]!] as [Sig, SigLike]])),
    [isSys73, enosys[byte]!] as [Sig, SigLike],
  ], [0, 255]).named(`r${byte}Others`));
  const result: Word = others.map((o, byte) => c.linear([[o, 1], [loaded[byte]!, 1], [merged[byte]!, 1]], 0, [0, 255]).named(`r${byte}`));
  return { result, others };
}
