/**
 * Decode: the fields and classes of the fetched instruction that the other stages branch on —
 * opcode, funct3, rd, the instruction class and the ALU's view of it (clsAlu, aluOp: which result
 * candidate), loads / stores (never in loader mode), bn.mac, jumps, whether it writes rd — and
 * its legality: the traps known right after fetch (illegal encoding, ebreak, a fetch past the
 * code RAM) and ecall. Reads the instruction bits, fetchOut and loader mode; everything here is
 * tables over instruction bits, a layer or two after fetch.
 */
import type { CircuitBuilder, Sig } from '../dsl/index.ts';
import { BN_OPCODE } from './mac-unit.ts';

/** aluOp's codes of the shifts (sll, srl, sra; the result list of the aluOp table below). */
export const ALU_SHIFT_OPS: readonly number[] = [2, 6, 7];

export interface DecodeInputs {
  /** The instruction's bits and fetchOut (fetch), loader mode (pcControl). */
  ins: Sig[];
  fetchOut: Sig;
  loading: Sig;
}

export interface Decoded {
  /** Raw fields. */
  opcode: Sig;
  funct3: Sig;
  rd: Sig;
  /** Class tests (OP, JAL, JALR, BRANCH; loads and stores only outside loader mode; bn.mac / bn.mac1). */
  isOp: Sig;
  isJal: Sig;
  isJalr: Sig;
  isBranch: Sig;
  isStore: Sig;
  isLoad: Sig;
  isBn: Sig;
  /** The ALU's class: 0 OP-IMM, 1 OP, 2 LUI, 3 AUIPC, 4 JAL, 5 JALR, 6 M extension / bn.mac, 7 other. */
  clsAlu: Sig;
  /** Early traps: any (0/1) and the TRAP cause (0 illegal, 1 ebreak, 2 fetch). */
  earlyAny: Sig;
  earlyCause: Sig;
  /** 1 for ecall exactly (never at a trapping fetch). */
  isSystem: Sig;
  /** The result candidate (execute's selectResult): 0…25, 16 none. */
  aluOp: Sig;
  /** From the opcode: writes rd; the SYSTEM opcode; JAL / JALR. */
  writesRd: Sig;
  isSys73: Sig;
  isJump: Sig;
}

export function decode(c: CircuitBuilder, io: DecodeInputs): Decoded {
  const { ins, fetchOut, loading } = io;
  const field = (lo: number, n: number, name: string) =>
    c.linear(ins.slice(lo, lo + n).map((b, k) => [b, 2 ** k] as [Sig, number])).named(name);
  const opcode = field(0, 7, 'opcode');
  const funct3 = field(12, 3, 'funct3');
  const rd = field(7, 5, 'rd');
  // Classes: 0 OP-IMM, 1 OP, 2 LUI, 3 AUIPC, 4 JAL, 5 JALR, 6 BRANCH, 7 SYSTEM/FENCE/other, 8 LOAD, 9 STORE.
  const CLASS: Record<number, number> = { 0x13: 0, 0x33: 1, 0x37: 2, 0x17: 3, 0x6f: 4, 0x67: 5, 0x63: 6, 0x03: 8, 0x23: 9 };
  const cls = c.table('class', [opcode], (op) => CLASS[op] ?? 7, [0, 9]);
  const isClass = (k: number, name: string) => cls.eq(k).named(name);
  const isOp = isClass(1, 'isOp');
  const isJal = isClass(4, 'isJal');
  const isJalr = isClass(5, 'isJalr');
  const isBranch = isClass(6, 'isBranch');
  // Loads and stores only outside loader mode: while the loader writes, the word at the pc is not
  // an instruction, and the effective address must stay 0 (the data RAM's write row reads the
  // loader's address through the same digits, cpu-memory.ts).
  const isStore = c.table('isStore', [opcode, loading], (op, ld) => (!ld && op === 0x23 ? 1 : 0), [0, 1]);
  const isLoad = c.table('isLoad', [opcode, loading], (op, ld) => (!ld && op === 0x03 ? 1 : 0), [0, 1]);
  // The bignum unit's multiply-accumulate (custom-0, docs/bignum-unit.md): MUL with two more addends.
  const isBn = c.table('isBnMac', [opcode], (op) => (op === BN_OPCODE ? 1 : 0), [0, 1]);
  // The ALU's view of the class (loads, stores and the rest as 7) keeps aluOp's table within one index.
  // 6 is the M extension (OP with funct7 = 1; bit 25 set), which the full class table has no room for.
  // bn.mac (custom-0, funct3 0) is MUL's class too: its low word is the MUL candidate.
  const clsAlu = c.table('classAlu', [opcode, ins[25]!], (op, b25) =>
    ((op === 0x33 && b25 === 1) || op === BN_OPCODE ? 6 : Math.min(7, CLASS[op] === 6 ? 7 : CLASS[op] ?? 7)), [0, 7]);
  // ── legality (protocol v5 traps): exactly the emulator's RV32IM + Zba + bn.mac encodings.
  //    Classes by opcode: 0 always legal (LUI, AUIPC, JAL), 1 JALR, 2 BRANCH, 3 LOAD, 4 STORE,
  //    5 OP-IMM, 6 OP, 7 custom-0 (bn.mac), 8 MISC-MEM, 9 SYSTEM, 10 illegal (also every
  //    compressed encoding: its low two bits are not 11). funct7 as 0 0x00, 1 0x20, 2 0x01,
  //    3 0x10, 4 other. SYSTEM is legal only as ecall (0x00000073) or ebreak (0x00100073).
  const LEGAL_CLASS: Record<number, number> = { 0x37: 0, 0x17: 0, 0x6f: 0, 0x67: 1, 0x63: 2, 0x03: 3, 0x23: 4, 0x13: 5, 0x33: 6, [BN_OPCODE]: 7, 0x0f: 8, 0x73: 9 };
  const legalClass = c.table('legalClass', [opcode], (op) => LEGAL_CLASS[op] ?? 10, [0, 10]);
  const f7 = field(25, 7, 'funct7');
  const f7Class = c.table('funct7Class', [f7], (v) => (v === 0 ? 0 : v === 0x20 ? 1 : v === 0x01 ? 2 : v === 0x10 ? 3 : 4), [0, 4]);
  // By class and funct3: 0 illegal, 1 legal, 2 SYSTEM (decided by the other bits below), or the
  // funct7 classes that make it legal: 3 {0x00}, 4 {0x00, 0x20}, 5 {0x00, 0x20, 0x01},
  // 6 {0x00, 0x01, 0x10}, 7 {0x00, 0x01}. Two small tables (one over 440 cases has no exact ramp form).
  const F7_SETS = [[], [], [], [0], [0, 1], [0, 1, 2], [0, 2, 3], [0, 2]];
  const legalByF3 = c.table('legalByFunct3', [legalClass, funct3], (k, f3) => {
    switch (k) {
      case 0: return 1;
      case 1: return f3 === 0 ? 1 : 0;
      case 2: return f3 === 2 || f3 === 3 ? 0 : 1;
      case 3: return f3 === 3 || f3 >= 6 ? 0 : 1;
      case 4: return f3 <= 2 ? 1 : 0;
      case 5: return f3 === 1 ? 3 : f3 === 5 ? 4 : 1;
      case 6: return f3 === 0 || f3 === 5 ? 5 : f3 === 2 || f3 === 4 || f3 === 6 ? 6 : 7;
      case 7: return f3 === 0 ? 7 : 0;
      case 8: return f3 <= 1 ? 1 : 0;
      case 9: return 2;
      default: return 0;
    }
  }, [0, 7]);
  const legalBase = c.table('legal', [legalByF3, f7Class], (l, f7c) => (l <= 2 ? l : F7_SETS[l]!.includes(f7c) ? 1 : 0), [0, 2]);
  // SYSTEM: every bit but 20 (and the opcode) must be 0.
  const sysRest = c.linear([...ins.slice(7, 20), ...ins.slice(21, 32)].map((x) => [x, 1] as [Sig, number])).eq(0).named('systemRestZero');
  // 0 none, 1 illegal, 2 ebreak, 3 fetch fault — the traps known right after fetch.
  const early = (fo: number, lg: number, rz: number, b20: number) => (fo ? 3 : lg === 0 ? 1 : lg === 2 ? (!rz ? 1 : b20 ? 2 : 0) : 0);
  const earlyAny = c.table('earlyTrapAny', [fetchOut, legalBase, sysRest, ins[20]!], (...v) => (early(v[0]!, v[1]!, v[2]!, v[3]!) ? 1 : 0), [0, 1]);
  // Its TRAP cause: illegal 0, ebreak 1, fetch 2 (0 also when none: trapAny says whether).
  const earlyCause = c.table('earlyTrapCause', [fetchOut, legalBase, sysRest, ins[20]!], (...v) => [0, 0, 1, 2][early(v[0]!, v[1]!, v[2]!, v[3]!)]!, [0, 2]);
  // ecall exactly (the only SYSTEM word besides ebreak that is legal), never at a trapping fetch.
  const isSystem = c.table('isEcall', [fetchOut, legalBase, sysRest, ins[20]!], (fo, lg, rz, b20) => (!fo && lg === 2 && rz && !b20 ? 1 : 0), [0, 1]);
  // Result: 0 add 1 sub 2 sll 3 slt 4 sltu 5 xor 6 srl 7 sra 8 or 9 and 10 sh1add 11 sh2add 12 sh3add 13 lui 14 auipc 15 link
  // 16 none (the results 16 loaded value and 17 the word a sub-word store leaves are chosen by isLoad / isStore)
  // 18 mul 19 mulh 20 mulhsu 21 mulhu 22 div 23 divu 24 rem 25 remu
  const aluOp = c.table('aluOp', [clsAlu, funct3, ins[30]!, ins[29]!], (k, f3, b30, b29) => {
    if (k === 7) return 16;
    if (k === 6) return 18 + f3;
    if (k === 2) return 13;
    if (k === 3) return 14;
    if (k === 4 || k === 5) return 15;
    if (k === 1 && b29 === 1 && b30 === 0) return f3 === 2 ? 10 : f3 === 4 ? 11 : f3 === 6 ? 12 : 0;
    if (k === 0 || k === 1) {
      if (f3 === 0) return k === 1 && b30 ? 1 : 0;
      if (f3 === 5) return b30 ? 7 : 6;
      return [0, 2, 3, 4, 5, 6, 8, 9][f3]!;
    }
    return 0;
  }, [0, 25]);
  // Straight from the opcode (not through the class): these start the register commit's path.
  // A non-exit ecall leaves −38 (ENOSYS) in a0, as the emulator: SYSTEM writes x10 (an exit ecall
  // halts first, and every other SYSTEM word traps, so only that ecall's write is ever committed).
  const writesRd = c.table('writesRd', [opcode], (op) => { const k = CLASS[op] ?? 7; return k <= 5 || k === 8 || op === BN_OPCODE || op === 0x73 ? 1 : 0; }, [0, 1]);
  const isSys73 = c.table('isSystemOpcode', [opcode], (op) => (op === 0x73 ? 1 : 0), [0, 1]);
  const isJump = c.table('isJump', [opcode], (op) => (op === 0x6f || op === 0x67 ? 1 : 0), [0, 1]);
  return {
    opcode, funct3, rd, isOp, isJal, isJalr, isBranch, isStore, isLoad, isBn, clsAlu, earlyAny, earlyCause, isSystem, aluOp,
    writesRd, isSys73, isJump,
  };
}
