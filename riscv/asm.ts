/**
 * RV32IM + Zba encoder and a small two-pass text assembler.
 *
 * Encoders range-check every field and throw ChipcError('asm.*') naming the bad value.
 * Assembler syntax (one statement per line, `#` or `//` comments):
 *   labels `name:`; every instruction of decode.ts's table in objdump operand order
 *   (`lw rd, imm(rs1)`, `sw rs2, imm(rs1)`, `beq rs1, rs2, target`, `jal rd, target`,
 *   `jalr rd, imm(rs1)` or `jalr rd, rs1, imm`, `lui rd, imm20`);
 *   pseudo-instructions nop, li, la, mv, not, neg, j, jr, ret, call, beqz, bnez, and the
 *   one-operand forms `jal target` / `jalr rs1`;
 *   directives .word, .half, .byte (comma lists of expressions), .zero N, .align N (2^N bytes),
 *   .balign N; .globl/.text/.data/.section are accepted and ignored.
 * Expressions: a number (decimal, 0x hex, 0b binary, optionally negative), a label, label±number,
 * %hi(expr) / %lo(expr). Branch and jump targets that are labels are absolute addresses; a bare
 * number there is a byte offset from the instruction.
 */
import { ChipcError } from '../src/util/errors.ts';
import { ABI_NAMES, OPC, SPEC_BY_NAME, type InstrSpec } from './decode.ts';
import { DEFAULT_MEM_BASE } from './memory.ts';
import { writeElf } from './elf-write.ts';

function range(what: string, v: number, lo: number, hi: number): void {
  if (!Number.isInteger(v) || v < lo || v > hi) {
    throw new ChipcError('asm.range', `${what} ${v} is out of range [${lo}, ${hi}]`);
  }
}
function reg(what: string, r: number): number {
  range(`register ${what}`, r, 0, 31);
  return r;
}

/** R-type: funct7 | rs2 | rs1 | funct3 | rd | opcode. */
export function encodeR(opcode: number, rd: number, funct3: number, rs1: number, rs2: number, funct7: number): number {
  return ((funct7 << 25) | (reg('rs2', rs2) << 20) | (reg('rs1', rs1) << 15) | (funct3 << 12) | (reg('rd', rd) << 7) | opcode) >>> 0;
}
/** I-type: imm[11:0] | rs1 | funct3 | rd | opcode; imm ∈ [−2048, 2047]. */
export function encodeI(opcode: number, rd: number, funct3: number, rs1: number, imm: number): number {
  range('I-type immediate', imm, -2048, 2047);
  return (((imm & 0xfff) << 20) | (reg('rs1', rs1) << 15) | (funct3 << 12) | (reg('rd', rd) << 7) | opcode) >>> 0;
}
/** S-type: imm[11:5] | rs2 | rs1 | funct3 | imm[4:0] | opcode; imm ∈ [−2048, 2047]. */
export function encodeS(opcode: number, funct3: number, rs1: number, rs2: number, imm: number): number {
  range('S-type immediate', imm, -2048, 2047);
  return ((((imm >> 5) & 0x7f) << 25) | (reg('rs2', rs2) << 20) | (reg('rs1', rs1) << 15) | (funct3 << 12) |
    ((imm & 0x1f) << 7) | opcode) >>> 0;
}
/** B-type: imm[12|10:5] | rs2 | rs1 | funct3 | imm[4:1|11] | opcode; even imm ∈ [−4096, 4094]. */
export function encodeB(opcode: number, funct3: number, rs1: number, rs2: number, imm: number): number {
  range('branch offset', imm, -4096, 4094);
  if (imm % 2 !== 0) throw new ChipcError('asm.range', `branch offset ${imm} is odd`);
  return ((((imm >> 12) & 1) << 31) | (((imm >> 5) & 0x3f) << 25) | (reg('rs2', rs2) << 20) | (reg('rs1', rs1) << 15) |
    (funct3 << 12) | (((imm >> 1) & 0xf) << 8) | (((imm >> 11) & 1) << 7) | opcode) >>> 0;
}
/** U-type: imm20 | rd | opcode; imm20 ∈ [0, 0xfffff] (the value placed in bits 31:12). */
export function encodeU(opcode: number, rd: number, imm20: number): number {
  range('U-type immediate', imm20, 0, 0xfffff);
  return ((imm20 << 12) | (reg('rd', rd) << 7) | opcode) >>> 0;
}
/** J-type: imm[20|10:1|11|19:12] | rd | opcode; even imm ∈ [−2^20, 2^20 − 2]. */
export function encodeJ(opcode: number, rd: number, imm: number): number {
  range('jump offset', imm, -(1 << 20), (1 << 20) - 2);
  if (imm % 2 !== 0) throw new ChipcError('asm.range', `jump offset ${imm} is odd`);
  return ((((imm >> 20) & 1) << 31) | (((imm >> 1) & 0x3ff) << 21) | (((imm >> 11) & 1) << 20) | (imm & 0xff000) |
    (reg('rd', rd) << 7) | opcode) >>> 0;
}

/**
 * Encode one instruction by mnemonic with numeric operands in assembly order:
 * R rd,rs1,rs2 · I rd,rs1,imm (loads and jalr too) · S rs2,rs1,imm · B rs1,rs2,offset ·
 * U rd,imm20 · J rd,offset · shifts rd,rs1,shamt · fence / fence.i / ecall / ebreak: none.
 */
export function encode(name: string, ops: readonly number[] = []): number {
  const s = SPEC_BY_NAME.get(name);
  if (s === undefined) throw new ChipcError('asm.mnemonic', `unknown instruction "${name}"`);
  const want = operandCount(s);
  if (ops.length !== want) throw new ChipcError('asm.operands', `${name} takes ${want} operand(s), got ${ops.length}`);
  const [a = 0, b = 0, c = 0] = ops;
  switch (s.format) {
    case 'R': return encodeR(s.opcode, a, s.funct3, b, c, s.funct7);
    case 'I':
      if (s.name === 'fence') return 0x0ff0000f; // fence iorw, iorw
      if (s.name === 'fence.i') return 0x0000100f;
      return encodeI(s.opcode, a, s.funct3, b, c);
    case 'SHIFT': range('shift amount', c, 0, 31); return encodeI(s.opcode, a, s.funct3, b, c | (s.funct7 << 5));
    case 'S': return encodeS(s.opcode, s.funct3, b, a, c);
    case 'B': return encodeB(s.opcode, s.funct3, a, b, c);
    case 'U': return encodeU(s.opcode, a, b);
    case 'J': return encodeJ(s.opcode, a, b);
    case 'FIXED': return s.word!;
  }
}

function operandCount(s: InstrSpec): number {
  switch (s.format) {
    case 'U': case 'J': return 2;
    case 'FIXED': return 0;
    case 'I': return s.opcode === OPC.MISC_MEM ? 0 : 3;
    default: return 3;
  }
}

/** Convenience encoders by mnemonic: `enc.add(rd, rs1, rs2)`, `enc.lw(rd, rs1, imm)`, `enc.sw(rs2, rs1, imm)`, … */
export const enc: Readonly<Record<string, (...ops: number[]) => number>> = Object.fromEntries(
  [...SPEC_BY_NAME.keys()].map((n) => [n, (...ops: number[]) => encode(n, ops)]),
);

// ---------------------------------------------------------------------------------------------
// Text assembler

const REG_NUM = new Map<string, number>();
for (let i = 0; i < 32; i++) {
  REG_NUM.set(`x${i}`, i);
  REG_NUM.set(ABI_NAMES[i], i);
}
REG_NUM.set('fp', 8);

export interface AssembleOptions {
  /** Address of the first byte. Default 0x80000000. */
  origin?: number;
}

export interface Assembled {
  origin: number;
  bytes: Uint8Array;
  labels: Map<string, number>;
}

interface Stmt {
  line: number;
  addr: number;
  size: number;
  op: string;
  args: string[];
}

/** Assemble source text; errors name the line. */
export function assemble(source: string, opts: AssembleOptions = {}): Assembled {
  const origin = (opts.origin ?? DEFAULT_MEM_BASE) >>> 0;
  const labels = new Map<string, number>();
  const stmts: Stmt[] = [];
  let addr = origin;
  const lines = source.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1;
    let text = lines[i].replace(/(#|\/\/).*$/, '').trim();
    try {
      for (let m = /^([A-Za-z_.$][\w.$]*)\s*:/.exec(text); m; m = /^([A-Za-z_.$][\w.$]*)\s*:/.exec(text)) {
        if (labels.has(m[1])) throw new ChipcError('asm.label', `label "${m[1]}" is defined twice`);
        if (REG_NUM.has(m[1])) throw new ChipcError('asm.label', `label "${m[1]}" is a register name`);
        labels.set(m[1], addr);
        text = text.slice(m[0].length).trim();
      }
      if (text === '') continue;
      const sp = text.search(/\s/);
      const op = (sp < 0 ? text : text.slice(0, sp)).toLowerCase();
      const rest = sp < 0 ? '' : text.slice(sp).trim();
      const args = rest === '' ? [] : splitArgs(rest);
      const size = statementSize(op, args, addr);
      stmts.push({ line: lineNo, addr, size, op, args });
      addr += size;
      if (addr > 2 ** 32) throw new ChipcError('asm.range', 'program runs past the 32-bit address space');
    } catch (e) {
      throw atLine(e, lineNo, lines[i]);
    }
  }
  const out = new Uint8Array(addr - origin);
  const dv = new DataView(out.buffer);
  for (const st of stmts) {
    try {
      emit(st, labels, dv, st.addr - origin);
    } catch (e) {
      throw atLine(e, st.line, lines[st.line - 1]);
    }
  }
  return { origin, bytes: out, labels };
}

function atLine(e: unknown, line: number, text: string): unknown {
  if (e instanceof ChipcError) return new ChipcError(e.code, `asm line ${line} ("${text.trim()}"): ${e.message}`);
  return e;
}

function splitArgs(s: string): string[] {
  return s.split(',').map((a) => a.trim());
}

function statementSize(op: string, args: string[], addr: number): number {
  switch (op) {
    case '.word': return 4 * args.length;
    case '.half': return 2 * args.length;
    case '.byte': return args.length;
    case '.zero': return constExpr(args[0] ?? '', 'size');
    case '.align': case '.p2align': { const a = 2 ** constExpr(args[0] ?? '', 'alignment'); return (a - (addr % a)) % a; }
    case '.balign': { const a = constExpr(args[0] ?? '', 'alignment'); return (a - (addr % a)) % a; }
    case '.globl': case '.global': case '.text': case '.data': case '.section': return 0;
    case 'la': return 8;
    case 'li': {
      if (args.length !== 2) throw new ChipcError('asm.operands', 'li takes 2 operands');
      const v = constExpr(args[1], 'li value (use la for a label)');
      return fitsI(toSigned(v)) ? 4 : 8;
    }
  }
  if (op.startsWith('.')) throw new ChipcError('asm.directive', `unknown directive "${op}"`);
  return 4;
}

const fitsI = (v: number) => v >= -2048 && v <= 2047;
function toSigned(v: number): number {
  if (v < -(2 ** 31) || v > 0xffffffff) throw new ChipcError('asm.range', `value ${v} does not fit in 32 bits`);
  return v | 0;
}

function constExpr(s: string, what: string): number {
  const v = parseNumber(s);
  if (v === null) throw new ChipcError('asm.operands', `${what} must be a number, not "${s}"`);
  return v;
}

function parseNumber(s: string): number | null {
  const m = /^([+-]?)(0x[0-9a-f_]+|0b[01_]+|\d+)$/i.exec(s.trim());
  if (!m) return null;
  const body = m[2].replace(/_/g, '');
  const v = /^0b/i.test(body) ? parseInt(body.slice(2), 2) : Number(body);
  return m[1] === '-' ? -v : v;
}

/** Evaluate an expression; `isLabel` reports whether a label was involved. */
function evalExpr(s: string, labels: Map<string, number>): { value: number; isLabel: boolean } {
  const t = s.trim();
  const hl = /^%(hi|lo)\((.*)\)$/i.exec(t);
  if (hl) {
    const v = evalExpr(hl[2], labels).value >>> 0;
    const lo = (v << 20) >> 20;
    return { value: hl[1].toLowerCase() === 'hi' ? ((v - lo) >>> 12) & 0xfffff : lo, isLabel: false };
  }
  const n = parseNumber(t);
  if (n !== null) return { value: n, isLabel: false };
  const m = /^([A-Za-z_.$][\w.$]*)\s*(?:([+-])\s*(\S+))?$/.exec(t);
  if (m) {
    const base = labels.get(m[1]);
    if (base === undefined) throw new ChipcError('asm.label', `undefined label "${m[1]}"`);
    let v = base;
    if (m[2] !== undefined) v += (m[2] === '-' ? -1 : 1) * constExpr(m[3], 'label offset');
    return { value: v, isLabel: true };
  }
  throw new ChipcError('asm.operands', `cannot parse expression "${s}"`);
}

function parseReg(s: string): number {
  const r = REG_NUM.get(s.trim().toLowerCase());
  if (r === undefined) throw new ChipcError('asm.register', `"${s}" is not a register`);
  return r;
}

/** `imm(reg)` or `(reg)`. */
function parseMem(s: string, labels: Map<string, number>): { imm: number; base: number } {
  const m = /^(.*)\(\s*([\w$]+)\s*\)$/.exec(s.trim());
  if (!m) throw new ChipcError('asm.operands', `"${s}" is not a memory operand imm(reg)`);
  return { imm: m[1].trim() === '' ? 0 : evalExpr(m[1], labels).value, base: parseReg(m[2]) };
}

function emit(st: Stmt, labels: Map<string, number>, dv: DataView, off: number): void {
  const { op, args, addr } = st;
  const put = (w: number, at = off) => dv.setUint32(at, w >>> 0, true);
  const need = (n: number) => {
    if (args.length !== n) throw new ChipcError('asm.operands', `${op} takes ${n} operand(s), got ${args.length}`);
  };
  const val = (s: string) => evalExpr(s, labels).value;
  /** Branch/jump target operand → offset from `at`. */
  const rel = (s: string, at = addr) => {
    const e = evalExpr(s, labels);
    return e.isLabel ? e.value - at : e.value;
  };
  switch (op) {
    case '.word': args.forEach((a, i) => put(toSigned(val(a)), off + 4 * i)); return;
    case '.half': args.forEach((a, i) => { const v = val(a); range('.half value', v, -32768, 65535); dv.setUint16(off + 2 * i, v & 0xffff, true); }); return;
    case '.byte': args.forEach((a, i) => { const v = val(a); range('.byte value', v, -128, 255); dv.setUint8(off + i, v & 0xff); }); return;
    case '.zero': case '.align': case '.p2align': case '.balign': case '.globl': case '.global': case '.text': case '.data': case '.section':
      return; // bytes stay zero
    case 'nop': need(0); put(encode('addi', [0, 0, 0])); return;
    case 'mv': need(2); put(encode('addi', [parseReg(args[0]), parseReg(args[1]), 0])); return;
    case 'not': need(2); put(encode('xori', [parseReg(args[0]), parseReg(args[1]), -1])); return;
    case 'neg': need(2); put(encode('sub', [parseReg(args[0]), 0, parseReg(args[1])])); return;
    case 'j': need(1); put(encode('jal', [0, rel(args[0])])); return;
    case 'call': need(1); put(encode('jal', [1, rel(args[0])])); return;
    case 'jr': need(1); put(encode('jalr', [0, parseReg(args[0]), 0])); return;
    case 'ret': need(0); put(encode('jalr', [0, 1, 0])); return;
    case 'beqz': need(2); put(encode('beq', [parseReg(args[0]), 0, rel(args[1])])); return;
    case 'bnez': need(2); put(encode('bne', [parseReg(args[0]), 0, rel(args[1])])); return;
    case 'li': {
      const rd = parseReg(args[0]);
      const v = toSigned(val(args[1]));
      if (st.size === 4) { put(encode('addi', [rd, 0, v])); return; }
      const lo = (v << 20) >> 20;
      put(encode('lui', [rd, ((v - lo) >>> 12) & 0xfffff]));
      put(encode('addi', [rd, rd, lo]), off + 4);
      return;
    }
    case 'la': {
      need(2);
      const rd = parseReg(args[0]);
      const delta = (val(args[1]) - addr) | 0;
      const lo = (delta << 20) >> 20;
      put(encode('auipc', [rd, ((delta - lo) >>> 12) & 0xfffff]));
      put(encode('addi', [rd, rd, lo]), off + 4);
      return;
    }
  }
  const s = SPEC_BY_NAME.get(op);
  if (s === undefined) throw new ChipcError('asm.mnemonic', `unknown instruction "${op}"`);
  switch (s.format) {
    case 'R': need(3); put(encode(op, args.map(parseReg))); return;
    case 'SHIFT': need(3); put(encode(op, [parseReg(args[0]), parseReg(args[1]), val(args[2])])); return;
    case 'U': need(2); put(encode(op, [parseReg(args[0]), val(args[1])])); return;
    case 'J':
      if (args.length === 1) put(encode(op, [1, rel(args[0])]));
      else { need(2); put(encode(op, [parseReg(args[0]), rel(args[1])])); }
      return;
    case 'B': need(3); put(encode(op, [parseReg(args[0]), parseReg(args[1]), rel(args[2])])); return;
    case 'S': { need(2); const m = parseMem(args[1], labels); put(encode(op, [parseReg(args[0]), m.base, m.imm])); return; }
    case 'FIXED': need(0); put(s.word!); return;
    case 'I':
      if (s.opcode === OPC.MISC_MEM) { put(encode(op, [])); return; } // fence operands are ignored
      if (s.opcode === OPC.LOAD || (s.opcode === OPC.JALR && args.length === 2 && args[1].includes('('))) {
        need(2);
        const m = parseMem(args[1], labels);
        put(encode(op, [parseReg(args[0]), m.base, m.imm]));
        return;
      }
      if (s.opcode === OPC.JALR && args.length === 1) { put(encode(op, [1, parseReg(args[0]), 0])); return; }
      need(3);
      put(encode(op, [parseReg(args[0]), parseReg(args[1]), val(args[2])]));
      return;
  }
}

export interface AsmElfOptions extends AssembleOptions {
  /** Extra zero-filled bytes after the program in the same segment (.bss). Default 0. */
  bss?: number;
  /** Entry symbol; default `_start` when defined, else the origin. */
  entry?: string;
}

/** Assemble `source` into an ELF executable with one RWX PT_LOAD and every label as a symbol. */
export function assembleElf(source: string, opts: AsmElfOptions = {}): { elf: Uint8Array; program: Assembled } {
  const program = assemble(source, opts);
  const entryName = opts.entry ?? '_start';
  const entry = program.labels.get(entryName);
  if (opts.entry !== undefined && entry === undefined) throw new ChipcError('asm.label', `entry label "${opts.entry}" is not defined`);
  const elf = writeElf({
    entry: entry ?? program.origin,
    segments: [{ vaddr: program.origin, data: program.bytes, memsz: program.bytes.length + (opts.bss ?? 0) }],
    symbols: [...program.labels].map(([name, value]) => ({ name, value })),
  });
  return { elf, program };
}
