/**
 * Flat little-endian RAM for the golden RV32 emulator: `size` bytes starting at `base`
 * (default 0x80000000, 1 MiB). Accesses are byte-granular, so misaligned loads and stores just
 * work. Out-of-range access is reported by the CPU as a `fault` run result; the helpers here
 * (used by loaders, syscalls and tests) throw a ChipcError instead.
 *
 * The console device is not RAM: a store of any width to CONSOLE_ADDR appends its low byte to
 * the console output; a load from it reads 0 (see docs/riscv-emulator.md).
 */
import { ChipcError } from '../src/util/errors.ts';

export const DEFAULT_MEM_BASE = 0x80000000;
export const DEFAULT_MEM_SIZE = 1 << 20;
/** MMIO console byte register (one 4-byte-wide slot, outside RAM). */
export const CONSOLE_ADDR = 0x10000000;

export interface MemoryOptions {
  /** First RAM address (must be 4-aligned). Default 0x80000000. */
  base?: number;
  /** RAM size in bytes (a multiple of 4, ≥ 4, base + size ≤ 2^32). Default 1 MiB. */
  size?: number;
}

export class Memory {
  readonly base: number;
  readonly size: number;
  readonly bytes: Uint8Array;
  readonly view: DataView;

  constructor(opts: MemoryOptions = {}) {
    const base = opts.base ?? DEFAULT_MEM_BASE;
    const size = opts.size ?? DEFAULT_MEM_SIZE;
    if (!Number.isInteger(base) || base < 0 || base > 0xffffffff || base % 4 !== 0) {
      throw new ChipcError('riscv.mem-config', `memory base ${base} must be a 4-aligned 32-bit address`);
    }
    if (!Number.isInteger(size) || size < 4 || size % 4 !== 0 || size > 2 ** 31) {
      throw new ChipcError('riscv.mem-config', `memory size ${size} must be a multiple of 4 between 4 bytes and 2 GiB`);
    }
    if (base + size > 2 ** 32) {
      throw new ChipcError('riscv.mem-config', `memory [0x${hex(base)}, +${size}) runs past the 32-bit address space`);
    }
    if (CONSOLE_ADDR + 4 > base && CONSOLE_ADDR < base + size) {
      throw new ChipcError('riscv.mem-config', `memory [0x${hex(base)}, +${size}) overlaps the console device at 0x${hex(CONSOLE_ADDR)}`);
    }
    this.base = base;
    this.size = size;
    this.bytes = new Uint8Array(size);
    this.view = new DataView(this.bytes.buffer);
  }

  /** True when [addr, addr+n) lies inside RAM (addr taken as unsigned 32-bit). */
  contains(addr: number, n: number): boolean {
    const off = (addr - this.base) >>> 0;
    return n >= 0 && n <= this.size && off <= this.size - n;
  }

  private offset(addr: number, n: number): number {
    if (!this.contains(addr, n)) {
      throw new ChipcError('riscv.mem-range', `access of ${n} byte(s) at 0x${hex(addr >>> 0)} is outside RAM [0x${hex(this.base)}, 0x${hex(this.base + this.size)})`);
    }
    return (addr - this.base) >>> 0;
  }

  read8(addr: number): number {
    return this.bytes[this.offset(addr, 1)];
  }
  /** Unsigned little-endian 32-bit read. */
  read32(addr: number): number {
    return this.view.getUint32(this.offset(addr, 4), true);
  }
  write8(addr: number, v: number): void {
    this.bytes[this.offset(addr, 1)] = v & 0xff;
  }
  write32(addr: number, v: number): void {
    this.view.setUint32(this.offset(addr, 4), v >>> 0, true);
  }
  /** Copy `data` to RAM at `addr`. */
  writeBytes(addr: number, data: Uint8Array): void {
    this.bytes.set(data, this.offset(addr, data.length));
  }
  /** A copy of RAM [addr, addr+n). */
  readBytes(addr: number, n: number): Uint8Array {
    const off = this.offset(addr, n);
    return this.bytes.slice(off, off + n);
  }
}

export function hex(v: number, width = 8): string {
  return (v >>> 0).toString(16).padStart(width, '0');
}
