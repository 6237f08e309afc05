/**
 * ELF32 little-endian RISC-V executable loader: validates the header, the PT_LOAD segments and
 * the symbol table, copies segments into a Memory (zero-filling .bss), and finds `tohost`.
 * Every malformed input is a ChipcError with an `elf.*` code naming the problem.
 */
import { ChipcError } from '../src/util/errors.ts';
import { Memory, hex, type MemoryOptions } from './memory.ts';
import { Cpu, type CpuOptions } from './cpu.ts';

export const EM_RISCV = 243;
export const ET_EXEC = 2;
export const PT_LOAD = 1;
export const SHT_SYMTAB = 2;
const EHDR_SIZE = 52;
const PHDR_SIZE = 32;
const SHDR_SIZE = 40;
const SYM_SIZE = 16;

export interface ElfSegment {
  vaddr: number;
  memsz: number;
  filesz: number;
  /** PF_X = 1, PF_W = 2, PF_R = 4. */
  flags: number;
  /** The file bytes of the segment (length filesz). */
  data: Uint8Array;
}

export interface ElfSymbol {
  name: string;
  value: number;
  size: number;
  /** STT_* (low 4 bits of st_info). */
  type: number;
  /** STB_* (high 4 bits of st_info). */
  bind: number;
  shndx: number;
}

export interface ElfImage {
  entry: number;
  flags: number;
  segments: ElfSegment[];
  symbols: ElfSymbol[];
}

function fail(code: string, msg: string): never {
  throw new ChipcError(code, `ELF: ${msg}`);
}

/** Parse and validate an ELF32 RISC-V executable (no memory map checks: see loadElf). */
export function parseElf(file: Uint8Array): ElfImage {
  const n = file.length;
  if (n < EHDR_SIZE) fail('elf.truncated', `file is ${n} bytes, shorter than the 52-byte ELF32 header`);
  const dv = new DataView(file.buffer, file.byteOffset, file.byteLength);
  if (file[0] !== 0x7f || file[1] !== 0x45 || file[2] !== 0x4c || file[3] !== 0x46) {
    fail('elf.magic', 'bad magic (not an ELF file)');
  }
  if (file[4] !== 1) fail('elf.class', `EI_CLASS is ${file[4]}, expected 1 (ELF32); a 64-bit ELF is not an RV32 program`);
  if (file[5] !== 1) fail('elf.endian', `EI_DATA is ${file[5]}, expected 1 (little-endian)`);
  if (file[6] !== 1) fail('elf.version', `EI_VERSION is ${file[6]}, expected 1`);
  const u16 = (o: number) => dv.getUint16(o, true);
  const u32 = (o: number) => dv.getUint32(o, true);
  const type = u16(16);
  const machine = u16(18);
  if (machine !== EM_RISCV) fail('elf.machine', `e_machine is ${machine}, expected ${EM_RISCV} (RISC-V)`);
  if (type !== ET_EXEC) fail('elf.type', `e_type is ${type}, expected ${ET_EXEC} (ET_EXEC, a static executable)`);
  if (u32(20) !== 1) fail('elf.version', `e_version is ${u32(20)}, expected 1`);
  const entry = u32(24);
  const phoff = u32(28);
  const shoff = u32(32);
  const flags = u32(36);
  const phentsize = u16(42);
  const phnum = u16(44);
  const shentsize = u16(46);
  const shnum = u16(48);
  const shstrndx = u16(50);

  if (phnum === 0) fail('elf.phdr', 'no program headers (nothing to load)');
  if (phentsize !== PHDR_SIZE) fail('elf.phdr', `e_phentsize is ${phentsize}, expected ${PHDR_SIZE}`);
  if (phoff + phnum * PHDR_SIZE > n) {
    fail('elf.truncated', `program header table [${phoff}, +${phnum * PHDR_SIZE}) runs past the end of the ${n}-byte file`);
  }
  const segments: ElfSegment[] = [];
  for (let i = 0; i < phnum; i++) {
    const p = phoff + i * PHDR_SIZE;
    if (u32(p) !== PT_LOAD) continue;
    const offset = u32(p + 4);
    const vaddr = u32(p + 8);
    const filesz = u32(p + 16);
    const memsz = u32(p + 20);
    const pflags = u32(p + 24);
    if (filesz > memsz) fail('elf.segment', `PT_LOAD #${i}: p_filesz ${filesz} exceeds p_memsz ${memsz}`);
    if (offset + filesz > n) {
      fail('elf.truncated', `PT_LOAD #${i}: file range [${offset}, +${filesz}) runs past the end of the ${n}-byte file`);
    }
    if (vaddr + memsz > 2 ** 32) fail('elf.segment', `PT_LOAD #${i}: [0x${hex(vaddr)}, +${memsz}) wraps past the 32-bit address space`);
    if (memsz === 0) continue;
    segments.push({ vaddr, memsz, filesz, flags: pflags, data: file.subarray(offset, offset + filesz) });
  }
  if (segments.length === 0) fail('elf.phdr', 'no non-empty PT_LOAD segment');
  const sorted = [...segments].sort((a, b) => a.vaddr - b.vaddr);
  for (let i = 1; i < sorted.length; i++) {
    const a = sorted[i - 1], b = sorted[i];
    if (a.vaddr + a.memsz > b.vaddr) {
      fail('elf.overlap', `PT_LOAD segments [0x${hex(a.vaddr)}, +${a.memsz}) and [0x${hex(b.vaddr)}, +${b.memsz}) overlap`);
    }
  }
  if (!segments.some((s) => entry >= s.vaddr && entry < s.vaddr + s.memsz)) {
    fail('elf.entry', `entry point 0x${hex(entry)} is not inside any PT_LOAD segment`);
  }
  if (entry % 4 !== 0) fail('elf.entry', `entry point 0x${hex(entry)} is not 4-aligned`);

  const symbols = shoff === 0 ? [] : parseSymbols(file, dv, shoff, shentsize, shnum, shstrndx);
  return { entry, flags, segments, symbols };
}

function parseSymbols(file: Uint8Array, dv: DataView, shoff: number, shentsize: number, shnum: number, shstrndx: number): ElfSymbol[] {
  const n = file.length;
  if (shnum === 0) fail('elf.shdr', 'e_shoff is set but e_shnum is 0 (extended section numbering is not supported)');
  if (shentsize !== SHDR_SIZE) fail('elf.shdr', `e_shentsize is ${shentsize}, expected ${SHDR_SIZE}`);
  if (shoff + shnum * SHDR_SIZE > n) {
    fail('elf.truncated', `section header table [${shoff}, +${shnum * SHDR_SIZE}) runs past the end of the ${n}-byte file`);
  }
  if (shstrndx !== 0 && shstrndx >= shnum) fail('elf.shdr', `e_shstrndx ${shstrndx} is not below e_shnum ${shnum}`);
  const u32 = (o: number) => dv.getUint32(o, true);
  const sh = (i: number) => {
    const p = shoff + i * SHDR_SIZE;
    return { type: u32(p + 4), offset: u32(p + 16), size: u32(p + 20), link: u32(p + 24), entsize: u32(p + 36) };
  };
  const symbols: ElfSymbol[] = [];
  for (let i = 0; i < shnum; i++) {
    const s = sh(i);
    if (s.type !== SHT_SYMTAB) continue;
    if (s.entsize !== SYM_SIZE) fail('elf.symtab', `symbol table section ${i}: sh_entsize ${s.entsize}, expected ${SYM_SIZE}`);
    if (s.size % SYM_SIZE !== 0) fail('elf.symtab', `symbol table section ${i}: size ${s.size} is not a multiple of ${SYM_SIZE}`);
    if (s.offset + s.size > n) fail('elf.truncated', `symbol table section ${i}: [${s.offset}, +${s.size}) runs past the end of the file`);
    if (s.link >= shnum) fail('elf.symtab', `symbol table section ${i}: string table index ${s.link} is not below e_shnum ${shnum}`);
    const str = sh(s.link);
    if (str.offset + str.size > n) fail('elf.truncated', `string table section ${s.link}: [${str.offset}, +${str.size}) runs past the end of the file`);
    for (let k = 0; k < s.size / SYM_SIZE; k++) {
      const p = s.offset + k * SYM_SIZE;
      const nameOff = u32(p);
      if (nameOff >= str.size && !(nameOff === 0 && str.size === 0)) {
        fail('elf.symtab', `symbol ${k} of section ${i}: name offset ${nameOff} is outside its ${str.size}-byte string table`);
      }
      let end = str.offset + nameOff;
      const limit = str.offset + str.size;
      while (end < limit && file[end] !== 0) end++;
      if (str.size > 0 && end >= limit) fail('elf.symtab', `symbol ${k} of section ${i}: name is not NUL-terminated inside its string table`);
      const name = new TextDecoder('latin1').decode(file.subarray(str.offset + nameOff, end));
      const info = file[p + 12];
      symbols.push({ name, value: u32(p + 4), size: u32(p + 8), type: info & 15, bind: info >>> 4, shndx: dv.getUint16(p + 14, true) });
    }
  }
  return symbols;
}

export interface LoadedProgram {
  image: ElfImage;
  memory: Memory;
  entry: number;
  /** Address of the `tohost` symbol, or null when the program has none. */
  tohost: number | null;
  /** The first symbol of each name (empty names are skipped). */
  symbols: Map<string, number>;
}

/** Parse `file` and copy its segments into a fresh Memory (segments must lie inside RAM). */
export function loadElf(file: Uint8Array, memOpts: MemoryOptions = {}, label?: string): LoadedProgram {
  if (label !== undefined) {
    // the same refusals, naming the file they are about
    try {
      return loadElf(file, memOpts);
    } catch (e) {
      if (e instanceof ChipcError && e.code.startsWith('elf.')) throw new ChipcError(e.code, `${label}: ${e.message}`, { cause: e });
      throw e;
    }
  }
  const image = parseElf(file);
  const memory = new Memory(memOpts);
  for (const s of image.segments) {
    if (!memory.contains(s.vaddr, s.memsz)) {
      fail('elf.range', `PT_LOAD [0x${hex(s.vaddr)}, +${s.memsz}) is outside RAM [0x${hex(memory.base)}, 0x${hex(memory.base + memory.size)}); ` +
        'change the memory base/size (--mem-size)');
    }
    memory.writeBytes(s.vaddr, s.data);
    memory.bytes.fill(0, s.vaddr - memory.base + s.filesz, s.vaddr - memory.base + s.memsz);
  }
  const symbols = new Map<string, number>();
  for (const sym of image.symbols) if (sym.name !== '' && !symbols.has(sym.name)) symbols.set(sym.name, sym.value);
  const tohost = symbols.get('tohost') ?? null;
  return { image, memory, entry: image.entry, tohost, symbols };
}

/** A CPU reset to the program's entry, with its tohost symbol wired up. */
export function cpuForProgram(p: LoadedProgram, opts: Omit<CpuOptions, 'pc' | 'tohost'> = {}): Cpu {
  return new Cpu(p.memory, { ...opts, pc: p.entry, tohost: p.tohost });
}
