/**
 * RV32IM + Zba instruction set description (plus the chip's bignum unit, `bn.mac` / `bn.mac1` on
 * custom-0): one table of every supported instruction (format, opcode, funct3, funct7), the
 * immediate extractors of the unprivileged spec, a decoder that returns null for every encoding
 * outside the supported set, and the disassembler used by traces.
 *
 * The CPU (cpu.ts) has its own hand-written switch for speed; tests check that both agree on
 * which words are legal.
 */

export type Format = 'R' | 'I' | 'S' | 'B' | 'U' | 'J' | 'SHIFT' | 'FIXED';

export interface InstrSpec {
  name: string;
  format: Format;
  opcode: number;
  funct3: number;
  /** R-type funct7, or imm[11:5] for shifts; −1 when unused. */
  funct7: number;
  /** For FIXED: the whole word. */
  word?: number;
}

export const OPC = {
  LOAD: 0x03, MISC_MEM: 0x0f, OP_IMM: 0x13, AUIPC: 0x17, STORE: 0x23, OP: 0x33, LUI: 0x37,
  BRANCH: 0x63, JALR: 0x67, JAL: 0x6f, SYSTEM: 0x73,
  /** custom-0: the chip's bignum unit (bn.mac, docs/bignum-unit.md). */
  CUSTOM0: 0x0b,
} as const;

const R = (name: string, funct3: number, funct7: number): InstrSpec => ({ name, format: 'R', opcode: OPC.OP, funct3, funct7 });
const I = (name: string, opcode: number, funct3: number): InstrSpec => ({ name, format: 'I', opcode, funct3, funct7: -1 });

/** Every supported instruction. FENCE is matched on opcode+funct3 only (its other fields are ignored). */
export const INSTRUCTIONS: readonly InstrSpec[] = [
  { name: 'lui', format: 'U', opcode: OPC.LUI, funct3: -1, funct7: -1 },
  { name: 'auipc', format: 'U', opcode: OPC.AUIPC, funct3: -1, funct7: -1 },
  { name: 'jal', format: 'J', opcode: OPC.JAL, funct3: -1, funct7: -1 },
  I('jalr', OPC.JALR, 0),
  { name: 'beq', format: 'B', opcode: OPC.BRANCH, funct3: 0, funct7: -1 },
  { name: 'bne', format: 'B', opcode: OPC.BRANCH, funct3: 1, funct7: -1 },
  { name: 'blt', format: 'B', opcode: OPC.BRANCH, funct3: 4, funct7: -1 },
  { name: 'bge', format: 'B', opcode: OPC.BRANCH, funct3: 5, funct7: -1 },
  { name: 'bltu', format: 'B', opcode: OPC.BRANCH, funct3: 6, funct7: -1 },
  { name: 'bgeu', format: 'B', opcode: OPC.BRANCH, funct3: 7, funct7: -1 },
  I('lb', OPC.LOAD, 0), I('lh', OPC.LOAD, 1), I('lw', OPC.LOAD, 2), I('lbu', OPC.LOAD, 4), I('lhu', OPC.LOAD, 5),
  { name: 'sb', format: 'S', opcode: OPC.STORE, funct3: 0, funct7: -1 },
  { name: 'sh', format: 'S', opcode: OPC.STORE, funct3: 1, funct7: -1 },
  { name: 'sw', format: 'S', opcode: OPC.STORE, funct3: 2, funct7: -1 },
  I('addi', OPC.OP_IMM, 0), I('slti', OPC.OP_IMM, 2), I('sltiu', OPC.OP_IMM, 3), I('xori', OPC.OP_IMM, 4),
  I('ori', OPC.OP_IMM, 6), I('andi', OPC.OP_IMM, 7),
  { name: 'slli', format: 'SHIFT', opcode: OPC.OP_IMM, funct3: 1, funct7: 0x00 },
  { name: 'srli', format: 'SHIFT', opcode: OPC.OP_IMM, funct3: 5, funct7: 0x00 },
  { name: 'srai', format: 'SHIFT', opcode: OPC.OP_IMM, funct3: 5, funct7: 0x20 },
  R('add', 0, 0x00), R('sub', 0, 0x20), R('sll', 1, 0x00), R('slt', 2, 0x00), R('sltu', 3, 0x00),
  R('xor', 4, 0x00), R('srl', 5, 0x00), R('sra', 5, 0x20), R('or', 6, 0x00), R('and', 7, 0x00),
  R('mul', 0, 0x01), R('mulh', 1, 0x01), R('mulhsu', 2, 0x01), R('mulhu', 3, 0x01),
  R('div', 4, 0x01), R('divu', 5, 0x01), R('rem', 6, 0x01), R('remu', 7, 0x01),
  R('sh1add', 2, 0x10), R('sh2add', 4, 0x10), R('sh3add', 6, 0x10),
  // The chip's bignum unit (custom-0): rd ← lo(rs1·rs2 + rd + C), C ← hi(…), with carry C0 (bn.mac)
  // or C1 (bn.mac1) (docs/bignum-unit.md).
  { name: 'bn.mac', format: 'R', opcode: OPC.CUSTOM0, funct3: 0, funct7: 0x00 },
  { name: 'bn.mac1', format: 'R', opcode: OPC.CUSTOM0, funct3: 0, funct7: 0x01 },
  I('fence', OPC.MISC_MEM, 0),
  { name: 'fence.i', format: 'I', opcode: OPC.MISC_MEM, funct3: 1, funct7: -1 },
  { name: 'ecall', format: 'FIXED', opcode: OPC.SYSTEM, funct3: 0, funct7: -1, word: 0x00000073 },
  { name: 'ebreak', format: 'FIXED', opcode: OPC.SYSTEM, funct3: 0, funct7: -1, word: 0x00100073 },
];

export const SPEC_BY_NAME: ReadonlyMap<string, InstrSpec> = new Map(INSTRUCTIONS.map((s) => [s.name, s]));

/** I-type immediate: sign-extended word[31:20]. */
export const immI = (w: number): number => w >> 20;
/** S-type immediate: sign-extended {word[31:25], word[11:7]}. */
export const immS = (w: number): number => ((w >> 20) & ~0x1f) | ((w >>> 7) & 0x1f);
/** B-type immediate: sign-extended {word[31], word[7], word[30:25], word[11:8], 0}. */
export const immB = (w: number): number =>
  ((w >> 19) & ~0xfff) | ((w << 4) & 0x800) | ((w >>> 20) & 0x7e0) | ((w >>> 7) & 0x1e);
/** U-type immediate: word[31:12] << 12, as a signed 32-bit value. */
export const immU = (w: number): number => w & 0xfffff000;
/** J-type immediate: sign-extended {word[31], word[19:12], word[20], word[30:21], 0}. */
export const immJ = (w: number): number =>
  ((w >> 11) & ~0xfffff) | (w & 0xff000) | ((w >>> 9) & 0x800) | ((w >>> 20) & 0x7fe);

export interface Decoded {
  spec: InstrSpec;
  rd: number;
  rs1: number;
  rs2: number;
  /** Sign-extended immediate (shift amount for shifts; the full upper value for U-type). */
  imm: number;
}

/** Decode one 32-bit instruction word; null when it is not an RV32IM+Zba instruction. */
export function decode(word: number): Decoded | null {
  const w = word | 0;
  const opcode = w & 0x7f;
  const rd = (w >>> 7) & 31;
  const funct3 = (w >>> 12) & 7;
  const rs1 = (w >>> 15) & 31;
  const rs2 = (w >>> 20) & 31;
  const funct7 = w >>> 25;
  for (const s of INSTRUCTIONS) {
    if (s.opcode !== opcode) continue;
    switch (s.format) {
      case 'U': return { spec: s, rd, rs1: 0, rs2: 0, imm: immU(w) };
      case 'J': return { spec: s, rd, rs1: 0, rs2: 0, imm: immJ(w) };
      case 'B': if (s.funct3 === funct3) return { spec: s, rd: 0, rs1, rs2, imm: immB(w) }; break;
      case 'S': if (s.funct3 === funct3) return { spec: s, rd: 0, rs1, rs2, imm: immS(w) }; break;
      case 'I': if (s.funct3 === funct3) return { spec: s, rd, rs1, rs2: 0, imm: immI(w) }; break;
      case 'SHIFT': if (s.funct3 === funct3 && s.funct7 === funct7) return { spec: s, rd, rs1, rs2: 0, imm: rs2 }; break;
      case 'R': if (s.funct3 === funct3 && s.funct7 === funct7) return { spec: s, rd, rs1, rs2, imm: 0 }; break;
      case 'FIXED': if ((s.word! | 0) === w) return { spec: s, rd: 0, rs1: 0, rs2: 0, imm: 0 }; break;
    }
  }
  return null;
}

/** ABI register names, index = register number. */
export const ABI_NAMES: readonly string[] = [
  'zero', 'ra', 'sp', 'gp', 'tp', 't0', 't1', 't2', 's0', 's1', 'a0', 'a1', 'a2', 'a3', 'a4', 'a5',
  'a6', 'a7', 's2', 's3', 's4', 's5', 's6', 's7', 's8', 's9', 's10', 's11', 't3', 't4', 't5', 't6',
];

/**
 * Disassemble one word in objdump-like syntax with ABI register names; branch and jump targets
 * are printed as absolute addresses computed from `pc`. Illegal words give `.word 0x…`.
 */
export function disassemble(word: number, pc = 0): string {
  const d = decode(word);
  if (d === null) return `.word 0x${(word >>> 0).toString(16).padStart(8, '0')}`;
  const { spec: s, rd, rs1, rs2, imm } = d;
  const r = (i: number) => ABI_NAMES[i];
  const target = (off: number) => `0x${((pc + off) >>> 0).toString(16)}`;
  switch (s.format) {
    case 'U': return `${s.name} ${r(rd)}, 0x${(imm >>> 12).toString(16)}`;
    case 'J': return `${s.name} ${r(rd)}, ${target(imm)}`;
    case 'B': return `${s.name} ${r(rs1)}, ${r(rs2)}, ${target(imm)}`;
    case 'S': return `${s.name} ${r(rs2)}, ${imm}(${r(rs1)})`;
    case 'R': return `${s.name} ${r(rd)}, ${r(rs1)}, ${r(rs2)}`;
    case 'SHIFT': return `${s.name} ${r(rd)}, ${r(rs1)}, ${imm}`;
    case 'FIXED': return s.name;
    case 'I':
      if (s.opcode === OPC.LOAD || s.opcode === OPC.JALR) return `${s.name} ${r(rd)}, ${imm}(${r(rs1)})`;
      if (s.opcode === OPC.MISC_MEM) return s.name;
      return `${s.name} ${r(rd)}, ${r(rs1)}, ${imm}`;
  }
}
