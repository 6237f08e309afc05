/** The golden RV32IM + Zba emulator: public API (see docs/riscv-emulator.md). */
export { Memory, CONSOLE_ADDR, DEFAULT_MEM_BASE, DEFAULT_MEM_SIZE, type MemoryOptions } from './memory.ts';
export {
  Cpu, DEFAULT_MAX_INSTRUCTIONS, mulh32, mulhsu32, mulhu32,
  type CpuOptions, type FaultKind, type HaltReason, type RunOptions, type RunResult, type TraceEvent,
} from './cpu.ts';
export { decode, disassemble, INSTRUCTIONS, ABI_NAMES, type Decoded, type InstrSpec } from './decode.ts';
export { parseElf, loadElf, cpuForProgram, type ElfImage, type ElfSegment, type ElfSymbol, type LoadedProgram } from './elf.ts';
export { writeElf, type ElfWriteOptions, type ElfWriteSegment, type ElfWriteSymbol } from './elf-write.ts';
export { assemble, assembleElf, encode, enc, encodeB, encodeI, encodeJ, encodeR, encodeS, encodeU, type Assembled } from './asm.ts';
