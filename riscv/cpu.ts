/**
 * The golden RV32IM + Zba CPU: one hart, no privileged architecture, no CSRs. It decodes every
 * instruction from memory on every fetch (so stores to code are visible at once — FENCE.I is a
 * no-op), keeps x1..x31 in an Int32Array and runs a plain switch on the opcode.
 *
 * Halting (see docs/riscv-emulator.md): `ecall` with a7 = 93 (exit, code in a0); a non-zero
 * store to the `tohost` word; `ebreak`; an illegal instruction; a memory fault (fetch, load or
 * store: RunResult.fault; an optional fetch limit makes fetches past the code RAM fault); the
 * instruction budget. `ecall` with a7 = 64 is Linux `write(fd, buf, len)`: fd 1 and 2 append to the console.
 * Any other `ecall` returns −38 (−ENOSYS) in a0 and continues, as qemu-user does.
 */
import { ChipcError } from '../src/util/errors.ts';
import { CONSOLE_ADDR, Memory, hex } from './memory.ts';
import { decode, disassemble } from './decode.ts';

export type HaltReason = 'exit' | 'tohost' | 'limit' | 'illegal' | 'fault' | 'ebreak';
/**
 * What faulted (reason 'fault'): 'fetch' — an instruction fetch outside RAM or beyond the fetch
 * limit, at a misaligned pc, or a jump / branch to a target that is not 4-aligned (it faults at the
 * jump); 'load' / 'store' — a data access outside RAM and the console.
 */
export type FaultKind = 'fetch' | 'load' | 'store';

export interface RunResult {
  reason: HaltReason;
  /** a0 at `ecall` exit (signed 32-bit), tohost value >>> 1 for `tohost`; null otherwise. */
  exitCode: number | null;
  /** Instructions retired since reset (a halting ecall / ebreak / tohost store counts; a faulting or illegal one does not). */
  instret: number;
  /** The halting instruction's address; for `limit`, the next instruction to run. */
  pc: number;
  /** Console output decoded as UTF-8. */
  console: string;
  consoleBytes: Uint8Array;
  /** What happened, for people (names pc, and the address or raw word where relevant). */
  message: string;
  /** Raw word of the illegal instruction (reason 'illegal'). */
  word?: number;
  /** Faulting data or fetch address (reason 'fault'; for a misaligned jump target, the target). */
  addr?: number;
  /** Which kind of access faulted (reason 'fault'). */
  fault?: FaultKind;
}

/** One retired instruction. */
export interface TraceEvent {
  pc: number;
  /** Raw instruction word, unsigned. */
  word: number;
  disasm: string;
  /** Destination register written (never 0), or null when the instruction writes none. */
  rd: number | null;
  /** Value written to rd, unsigned 32-bit; null when rd is null. */
  rdValue: number | null;
}

export interface RunOptions {
  /** Stop with reason 'limit' after this many more instructions. Default 100,000,000. */
  maxInstructions?: number;
  /** Called after every retired instruction (slow: it disassembles). */
  trace?: (e: TraceEvent) => void;
  /** Fetch limit for this run, overriding the CPU's (CpuOptions.fetchLimit); null: none. */
  fetchLimit?: number | null;
}

export interface CpuOptions {
  /** Initial pc (the ELF entry). Default memory.base. */
  pc?: number;
  /** Address of the `tohost` word, if the program has one. */
  tohost?: number | null;
  /** Initial sp (x2). Default: top of RAM (base + size, 16-aligned). qemu-user differs, so tests must not read sp unset. */
  sp?: number;
  /**
   * Bytes of RAM, from memory.base, that instructions may be fetched from (the chip's code RAM):
   * a fetch at pc ≥ base + fetchLimit faults ('fault', fault 'fetch'). Default: none (all of RAM).
   */
  fetchLimit?: number | null;
}

export const DEFAULT_MAX_INSTRUCTIONS = 100_000_000;
const SYS_WRITE = 64;
const SYS_EXIT = 93;
const ENOSYS = -38;
const EBADF = -9;
const EFAULT = -14;

/**
 * High 32 bits of the unsigned 64-bit product a·b (a, b taken as unsigned 32-bit), from 16-bit
 * limbs so every partial sum stays an exact float64 integer. Returns a signed 32-bit value.
 */
export function mulhu32(a: number, b: number): number {
  const al = a & 0xffff, ah = a >>> 16, bl = b & 0xffff, bh = b >>> 16;
  const lo = al * bl, m1 = ah * bl, m2 = al * bh;
  const carry = ((lo >>> 16) + (m1 & 0xffff) + (m2 & 0xffff)) >>> 16;
  return (ah * bh + (m1 >>> 16) + (m2 >>> 16) + carry) | 0;
}
/**
 * The bignum unit's multiply-accumulate: t = a·b + acc + carry with all four read as unsigned
 * 32-bit; returns [t mod 2^32, ⌊t / 2^32⌋] as unsigned 32-bit numbers. t < 2^64 always
 * ((2^32 − 1)² + 2·(2^32 − 1) = 2^64 − 1), so the high word never overflows.
 */
export function bnMac(a: number, b: number, acc: number, carry: number): [lo: number, hi: number] {
  const low = (Math.imul(a, b) >>> 0) + (acc >>> 0) + (carry >>> 0); // < 3·2^32: exact in a float64
  const lo = low % 0x1_0000_0000;
  return [lo, ((mulhu32(a, b) >>> 0) + (low - lo) / 0x1_0000_0000) >>> 0];
}
/** High 32 bits of signed(a)·signed(b): mulhu − (a<0 ? b : 0) − (b<0 ? a : 0)  (mod 2^32). */
export function mulh32(a: number, b: number): number {
  return (mulhu32(a, b) - (a < 0 ? b : 0) - (b < 0 ? a : 0)) | 0;
}
/** High 32 bits of signed(a)·unsigned(b): mulhu − (a<0 ? b : 0)  (mod 2^32). */
export function mulhsu32(a: number, b: number): number {
  return (mulhu32(a, b) - (a < 0 ? b : 0)) | 0;
}

function checkFetchLimit(limit: number | null): number | null {
  if (limit !== null && (!Number.isInteger(limit) || limit < 0)) {
    throw new ChipcError('riscv.mem-config', `fetch limit ${limit} must be a byte count (an integer ≥ 0) or null`);
  }
  return limit;
}

export class Cpu {
  readonly regs = new Int32Array(32);
  readonly memory: Memory;
  pc: number;
  instret = 0;
  tohost: number | null;
  /**
   * The bignum unit's carry registers C0, C1 (unsigned 32-bit): bn.mac (funct7 0) adds C0 and leaves
   * its high word there, bn.mac1 (funct7 1) likewise with C1. 0 at reset.
   */
  readonly bnCarry: number[] = [0, 0];
  /** Fetch limit in bytes from memory.base (CpuOptions.fetchLimit); null: all of RAM. */
  fetchLimit: number | null;
  private readonly consoleOut: number[] = [];
  private finished: RunResult | null = null;

  constructor(memory: Memory, opts: CpuOptions = {}) {
    this.memory = memory;
    this.pc = (opts.pc ?? memory.base) >>> 0;
    this.tohost = opts.tohost ?? null;
    this.regs[2] = (opts.sp ?? ((memory.base + memory.size) & ~15)) | 0;
    this.fetchLimit = checkFetchLimit(opts.fetchLimit ?? null);
  }

  /** Console bytes written so far. */
  consoleBytes(): Uint8Array {
    return Uint8Array.from(this.consoleOut);
  }

  /**
   * Run until a halt or `maxInstructions` more instructions. After 'limit' a further call
   * resumes; after any other halt it returns the same result again.
   */
  run(opts: RunOptions = {}): RunResult {
    if (this.finished !== null) return this.finished;
    const budget = opts.maxInstructions ?? DEFAULT_MAX_INSTRUCTIONS;
    const trace = opts.trace;
    const regs = this.regs;
    const mem = this.memory;
    const bytes = mem.bytes;
    const view = mem.view;
    const base = mem.base;
    const size = mem.size;
    const hasTohost = this.tohost !== null;
    const tohost = (this.tohost ?? 0) >>> 0;
    const out = this.consoleOut;
    const fetchLimit = opts.fetchLimit === undefined ? this.fetchLimit : checkFetchLimit(opts.fetchLimit);
    // Fetch reads [base, base + fetchEnd): all of RAM unless the fetch limit is below its size.
    const fetchEnd = fetchLimit === null ? size : Math.min(size, fetchLimit);

    let pc = this.pc >>> 0;
    let done = 0;
    let reason: HaltReason = 'limit';
    let exitCode: number | null = null;
    let message = '';
    let faultAddr: number | undefined;
    let badWord: number | undefined;
    let fault: FaultKind | undefined;

    outer: for (;;) {
      if (done >= budget) {
        message = `instruction limit reached after ${budget} instruction(s); next pc 0x${hex(pc)}`;
        break;
      }
      const ioff = (pc - base) >>> 0;
      if (ioff > fetchEnd - 4 || (pc & 3) !== 0) {
        reason = 'fault';
        fault = 'fetch';
        faultAddr = pc;
        message = (pc & 3) !== 0
          ? `instruction fetch at misaligned pc 0x${hex(pc)}`
          : ioff > size - 4
            ? `instruction fetch at pc 0x${hex(pc)} is outside RAM`
            : `instruction fetch at pc 0x${hex(pc)} is beyond the ${fetchLimit}-byte code RAM [0x${hex(base)}, 0x${hex(base + fetchLimit!)})`;
        break;
      }
      const w = view.getInt32(ioff, true);
      const rd = (w >>> 7) & 31;
      const rs1 = (w >>> 15) & 31;
      const f3 = (w >>> 12) & 7;
      let next = (pc + 4) >>> 0;
      let illegal = false;

      switch (w & 0x7f) {
        case 0x37: // LUI
          if (rd !== 0) regs[rd] = w & 0xfffff000;
          break;
        case 0x17: // AUIPC
          if (rd !== 0) regs[rd] = (pc + (w & 0xfffff000)) | 0;
          break;
        case 0x6f: { // JAL
          const imm = ((w >> 11) & ~0xfffff) | (w & 0xff000) | ((w >>> 9) & 0x800) | ((w >>> 20) & 0x7fe);
          const t = (pc + imm) >>> 0;
          if ((t & 3) !== 0) {
            reason = 'fault'; fault = 'fetch'; faultAddr = t;
            message = `jal at pc 0x${hex(pc)} to misaligned target 0x${hex(t)}`;
            break outer;
          }
          if (rd !== 0) regs[rd] = next | 0;
          next = t;
          break;
        }
        case 0x67: { // JALR
          if (f3 !== 0) { illegal = true; break; }
          const t = ((regs[rs1] + (w >> 20)) & ~1) >>> 0;
          if ((t & 3) !== 0) {
            reason = 'fault'; fault = 'fetch'; faultAddr = t;
            message = `jalr at pc 0x${hex(pc)} to misaligned target 0x${hex(t)}`;
            break outer;
          }
          if (rd !== 0) regs[rd] = next | 0;
          next = t;
          break;
        }
        case 0x63: { // BRANCH
          const a = regs[rs1];
          const b = regs[(w >>> 20) & 31];
          let taken: boolean;
          switch (f3) {
            case 0: taken = a === b; break;
            case 1: taken = a !== b; break;
            case 4: taken = a < b; break;
            case 5: taken = a >= b; break;
            case 6: taken = a >>> 0 < b >>> 0; break;
            case 7: taken = a >>> 0 >= b >>> 0; break;
            default: illegal = true; taken = false;
          }
          if (taken) {
            const imm = ((w >> 19) & ~0xfff) | ((w << 4) & 0x800) | ((w >>> 20) & 0x7e0) | ((w >>> 7) & 0x1e);
            const t = (pc + imm) >>> 0;
            if ((t & 3) !== 0) {
              reason = 'fault'; fault = 'fetch'; faultAddr = t;
              message = `branch at pc 0x${hex(pc)} to misaligned target 0x${hex(t)}`;
              break outer;
            }
            next = t;
          }
          break;
        }
        case 0x03: { // LOAD
          const addr = (regs[rs1] + (w >> 20)) >>> 0;
          const o = (addr - base) >>> 0;
          let v: number;
          let n: number;
          switch (f3) {
            case 0: n = 1; v = o < size ? view.getInt8(o) : 0; break;
            case 1: n = 2; v = o <= size - 2 ? view.getInt16(o, true) : 0; break;
            case 2: n = 4; v = o <= size - 4 ? view.getInt32(o, true) : 0; break;
            case 4: n = 1; v = o < size ? bytes[o] : 0; break;
            case 5: n = 2; v = o <= size - 2 ? view.getUint16(o, true) : 0; break;
            default: illegal = true; n = 0; v = 0;
          }
          if (illegal) break;
          if (o > size - n) {
            // Not RAM: only the console slot reads (as 0); anything else faults.
            if (((addr - CONSOLE_ADDR) >>> 0) > 4 - n) {
              reason = 'fault'; fault = 'load'; faultAddr = addr;
              message = `load of ${n} byte(s) at pc 0x${hex(pc)} from unmapped address 0x${hex(addr)}`;
              break outer;
            }
          }
          if (rd !== 0) regs[rd] = v;
          break;
        }
        case 0x23: { // STORE
          const addr = (regs[rs1] + (((w >> 20) & ~0x1f) | rd)) >>> 0;
          const v = regs[(w >>> 20) & 31];
          const o = (addr - base) >>> 0;
          let n: number;
          switch (f3) {
            case 0: n = 1; break;
            case 1: n = 2; break;
            case 2: n = 4; break;
            default: illegal = true; n = 0;
          }
          if (illegal) break;
          if (o <= size - n) {
            if (n === 4) view.setInt32(o, v, true);
            else if (n === 2) view.setInt16(o, v, true);
            else bytes[o] = v;
            if (hasTohost && (((addr - tohost) >>> 0) < 4 || ((tohost - addr) >>> 0) < n)) {
              const to = (tohost - base) >>> 0;
              const tv = to <= size - 4 ? view.getUint32(to, true) : 0;
              if (tv !== 0) {
                done++;
                if (trace !== undefined) this.emitTrace(trace, pc, w);
                reason = 'tohost';
                exitCode = tv >>> 1;
                message = `tohost = 0x${hex(tv)} at pc 0x${hex(pc)}: ${tv === 1 ? 'pass' : `test case ${tv >>> 1} failed`}`;
                break outer;
              }
            }
          } else if (addr === CONSOLE_ADDR) {
            out.push(v & 0xff);
          } else {
            reason = 'fault'; fault = 'store'; faultAddr = addr;
            message = `store of ${n} byte(s) at pc 0x${hex(pc)} to unmapped address 0x${hex(addr)}`;
            break outer;
          }
          break;
        }
        case 0x13: { // OP-IMM
          const a = regs[rs1];
          const imm = w >> 20;
          let v: number;
          switch (f3) {
            case 0: v = (a + imm) | 0; break;
            case 2: v = a < imm ? 1 : 0; break;
            case 3: v = a >>> 0 < imm >>> 0 ? 1 : 0; break;
            case 4: v = a ^ imm; break;
            case 6: v = a | imm; break;
            case 7: v = a & imm; break;
            case 1: // SLLI: imm[11:5] must be 0 (imm[5] set is RV64-only)
              if ((w >>> 25) !== 0) { illegal = true; v = 0; break; }
              v = a << (imm & 31); break;
            default: { // 5: SRLI / SRAI
              const f7 = w >>> 25;
              if (f7 === 0) v = (a >>> (imm & 31)) | 0;
              else if (f7 === 0x20) v = a >> (imm & 31);
              else { illegal = true; v = 0; }
            }
          }
          if (!illegal && rd !== 0) regs[rd] = v;
          break;
        }
        case 0x33: { // OP, M, Zba
          const a = regs[rs1];
          const b = regs[(w >>> 20) & 31];
          const f7 = w >>> 25;
          let v = 0;
          if (f7 === 0) {
            switch (f3) {
              case 0: v = (a + b) | 0; break;
              case 1: v = a << (b & 31); break;
              case 2: v = a < b ? 1 : 0; break;
              case 3: v = a >>> 0 < b >>> 0 ? 1 : 0; break;
              case 4: v = a ^ b; break;
              case 5: v = (a >>> (b & 31)) | 0; break;
              case 6: v = a | b; break;
              default: v = a & b;
            }
          } else if (f7 === 0x20) {
            if (f3 === 0) v = (a - b) | 0;
            else if (f3 === 5) v = a >> (b & 31);
            else illegal = true;
          } else if (f7 === 0x01) {
            switch (f3) {
              case 0: v = Math.imul(a, b); break;
              case 1: v = mulh32(a, b); break;
              case 2: v = mulhsu32(a, b >>> 0); break;
              case 3: v = mulhu32(a, b); break;
              case 4: v = b === 0 ? -1 : (a === -0x80000000 && b === -1) ? a : (a / b) | 0; break;
              case 5: v = b === 0 ? -1 : ((a >>> 0) / (b >>> 0)) | 0; break;
              case 6: v = b === 0 ? a : (a === -0x80000000 && b === -1) ? 0 : (a % b) | 0; break;
              default: v = b === 0 ? a : ((a >>> 0) % (b >>> 0)) | 0;
            }
          } else if (f7 === 0x10 && (f3 === 2 || f3 === 4 || f3 === 6)) {
            v = ((a << (f3 >>> 1)) + b) | 0; // sh1add / sh2add / sh3add
          } else {
            illegal = true;
          }
          if (!illegal && rd !== 0) regs[rd] = v;
          break;
        }
        case 0x0b: { // custom-0: the bignum unit's bn.mac / bn.mac1 (docs/bignum-unit.md)
          const bank = w >>> 25;
          if (f3 !== 0 || bank > 1) { illegal = true; break; }
          const [lo, hi] = bnMac(regs[rs1], regs[(w >>> 20) & 31], regs[rd], this.bnCarry[bank]!);
          if (rd !== 0) regs[rd] = lo | 0;
          this.bnCarry[bank] = hi;
          break;
        }
        case 0x0f: // MISC-MEM: FENCE and FENCE.I are no-ops (one hart, fetch always reads memory)
          if (f3 > 1) illegal = true;
          break;
        case 0x73: // SYSTEM
          if (w === 0x00000073) {
            const a7 = regs[17];
            if (a7 === SYS_EXIT) {
              done++;
              if (trace !== undefined) this.emitTrace(trace, pc, w);
              reason = 'exit';
              exitCode = regs[10];
              message = `exit(${regs[10]}) at pc 0x${hex(pc)}`;
              break outer;
            } else if (a7 === SYS_WRITE) {
              regs[10] = this.sysWrite(regs[10], regs[11] >>> 0, regs[12] >>> 0);
            } else {
              regs[10] = ENOSYS;
            }
          } else if (w === 0x00100073) {
            done++;
            if (trace !== undefined) this.emitTrace(trace, pc, w);
            reason = 'ebreak';
            message = `ebreak at pc 0x${hex(pc)}`;
            break outer;
          } else {
            illegal = true;
          }
          break;
        default:
          illegal = true;
      }
      if (illegal) {
        reason = 'illegal';
        badWord = w >>> 0;
        message = `illegal instruction 0x${hex(w)} at pc 0x${hex(pc)}`;
        break;
      }
      done++;
      if (trace !== undefined) this.emitTrace(trace, pc, w);
      pc = next;
    }

    this.pc = pc;
    this.instret += done;
    const consoleBytes = this.consoleBytes();
    const result: RunResult = {
      reason, exitCode, instret: this.instret, pc, message, consoleBytes,
      console: new TextDecoder('utf-8').decode(consoleBytes),
    };
    if (badWord !== undefined) result.word = badWord;
    if (faultAddr !== undefined) result.addr = faultAddr;
    if (fault !== undefined) result.fault = fault;
    if (reason !== 'limit') this.finished = result;
    return result;
  }

  /** Linux write(fd, buf, len) for fd 1 and 2: append to the console; returns len or −errno. */
  private sysWrite(fd: number, buf: number, len: number): number {
    if (fd !== 1 && fd !== 2) return EBADF;
    if (len === 0) return 0;
    if (!this.memory.contains(buf, len)) return EFAULT;
    const off = (buf - this.memory.base) >>> 0;
    const bytes = this.memory.bytes;
    for (let i = 0; i < len; i++) this.consoleOut.push(bytes[off + i]);
    return len | 0;
  }

  private emitTrace(trace: (e: TraceEvent) => void, pc: number, w: number): void {
    const d = decode(w);
    let rd: number | null = null;
    if (d !== null && d.rd !== 0) {
      const f = d.spec.format;
      if (f === 'R' || f === 'U' || f === 'J' || f === 'SHIFT' || (f === 'I' && d.spec.opcode !== 0x0f)) rd = d.rd;
    }
    // A non-exit ecall returns its result in a0.
    if ((w | 0) === 0x00000073 && this.regs[17] !== SYS_EXIT) rd = 10;
    trace({ pc, word: w >>> 0, disasm: disassemble(w, pc), rd, rdValue: rd === null ? null : this.regs[rd] >>> 0 });
  }
}
