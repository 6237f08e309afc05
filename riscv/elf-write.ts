/**
 * Minimal ELF32 RISC-V executable writer for tests and tools: PT_LOAD segments (one is usual),
 * a .symtab/.strtab with global absolute symbols (e.g. `tohost`) and a .shstrtab. Each segment's
 * file offset is congruent to its vaddr modulo 4 KiB so qemu-user can mmap it.
 */
import { ChipcError } from '../src/util/errors.ts';
import { EM_RISCV, ET_EXEC, PT_LOAD, SHT_SYMTAB } from './elf.ts';

export interface ElfWriteSegment {
  vaddr: number;
  data: Uint8Array;
  /** ≥ data.length; the rest is zero-filled (.bss). Default data.length. */
  memsz?: number;
  /** PF_* flags; default 7 (RWX). */
  flags?: number;
}

export interface ElfWriteSymbol {
  name: string;
  value: number;
  size?: number;
}

export interface ElfWriteOptions {
  entry: number;
  segments: ElfWriteSegment[];
  symbols?: ElfWriteSymbol[];
}

const PAGE = 0x1000;
const SHT_STRTAB = 3;
const SHN_ABS = 0xfff1;
const STB_GLOBAL = 1;
const STT_NOTYPE = 0;

export function writeElf(opts: ElfWriteOptions): Uint8Array {
  const { segments } = opts;
  const symbols = opts.symbols ?? [];
  if (segments.length === 0) throw new ChipcError('elf-write.input', 'an ELF needs at least one segment');
  const enc = new TextEncoder();
  // String tables.
  const strtabParts: number[] = [0];
  const symNameOff: number[] = [];
  for (const s of symbols) {
    symNameOff.push(strtabParts.length);
    strtabParts.push(...enc.encode(s.name), 0);
  }
  const strtab = Uint8Array.from(strtabParts);
  const shnames = ['', '.symtab', '.strtab', '.shstrtab'];
  const shnameOff: number[] = [];
  const shstrParts: number[] = [];
  for (const s of shnames) {
    shnameOff.push(shstrParts.length);
    shstrParts.push(...enc.encode(s), 0);
  }
  const shstrtab = Uint8Array.from(shstrParts);

  // Layout: ehdr, phdrs, then each segment at an offset ≡ vaddr (mod PAGE), then tables.
  let off = 52 + 32 * segments.length;
  const segOff: number[] = [];
  for (const s of segments) {
    const want = s.vaddr % PAGE;
    off = off % PAGE <= want ? off - (off % PAGE) + want : off - (off % PAGE) + PAGE + want;
    segOff.push(off);
    off += s.data.length;
  }
  off = align(off, 4);
  const symtabOff = off;
  const symtabSize = 16 * (symbols.length + 1);
  off += symtabSize;
  const strtabOff = off;
  off += strtab.length;
  const shstrOff = off;
  off = align(off + shstrtab.length, 4);
  const shoff = off;
  const total = shoff + 40 * shnames.length;

  const out = new Uint8Array(total);
  const dv = new DataView(out.buffer);
  out.set([0x7f, 0x45, 0x4c, 0x46, 1, 1, 1, 0]);
  dv.setUint16(16, ET_EXEC, true);
  dv.setUint16(18, EM_RISCV, true);
  dv.setUint32(20, 1, true);
  dv.setUint32(24, opts.entry >>> 0, true);
  dv.setUint32(28, 52, true);
  dv.setUint32(32, shoff, true);
  dv.setUint32(36, 0, true); // e_flags: soft-float ABI, no RVC
  dv.setUint16(40, 52, true);
  dv.setUint16(42, 32, true);
  dv.setUint16(44, segments.length, true);
  dv.setUint16(46, 40, true);
  dv.setUint16(48, shnames.length, true);
  dv.setUint16(50, 3, true);
  segments.forEach((s, i) => {
    const memsz = s.memsz ?? s.data.length;
    if (memsz < s.data.length) throw new ChipcError('elf-write.input', `segment ${i}: memsz ${memsz} < data length ${s.data.length}`);
    const p = 52 + 32 * i;
    dv.setUint32(p, PT_LOAD, true);
    dv.setUint32(p + 4, segOff[i], true);
    dv.setUint32(p + 8, s.vaddr >>> 0, true);
    dv.setUint32(p + 12, s.vaddr >>> 0, true);
    dv.setUint32(p + 16, s.data.length, true);
    dv.setUint32(p + 20, memsz, true);
    dv.setUint32(p + 24, s.flags ?? 7, true);
    dv.setUint32(p + 28, PAGE, true);
    out.set(s.data, segOff[i]);
  });
  symbols.forEach((s, i) => {
    const p = symtabOff + 16 * (i + 1);
    dv.setUint32(p, symNameOff[i], true);
    dv.setUint32(p + 4, s.value >>> 0, true);
    dv.setUint32(p + 8, s.size ?? 0, true);
    out[p + 12] = (STB_GLOBAL << 4) | STT_NOTYPE;
    dv.setUint16(p + 14, SHN_ABS, true);
  });
  out.set(strtab, strtabOff);
  out.set(shstrtab, shstrOff);
  const sh = (i: number, type: number, offset: number, size: number, link: number, info: number, entsize: number) => {
    const p = shoff + 40 * i;
    dv.setUint32(p, shnameOff[i], true);
    dv.setUint32(p + 4, type, true);
    dv.setUint32(p + 16, offset, true);
    dv.setUint32(p + 20, size, true);
    dv.setUint32(p + 24, link, true);
    dv.setUint32(p + 28, info, true);
    dv.setUint32(p + 32, type === SHT_SYMTAB ? 4 : 1, true);
    dv.setUint32(p + 36, entsize, true);
  };
  sh(1, SHT_SYMTAB, symtabOff, symtabSize, 2, 1, 16);
  sh(2, SHT_STRTAB, strtabOff, strtab.length, 0, 0, 0);
  sh(3, SHT_STRTAB, shstrOff, shstrtab.length, 0, 0, 0);
  return out;
}

function align(v: number, a: number): number {
  return Math.ceil(v / a) * a;
}
