/**
 * Golden token trace: runs the golden emulator on an ELF and writes out the exact token stream the
 * chip must generate (docs/token-protocol.md) — the driver's prompt [BOS, J(entry)] followed,
 * for every executed instruction, by the tokens the chip emits after executing it, and (v5) a
 * final TRAP(cause) when the program stops on an illegal instruction, an ebreak or a fault. Each
 * token is tagged with the instruction (index and pc) that emitted it, and the stream is
 * summarised as tokens per instruction, overall and per instruction class.
 */
import { ChipcError } from '../src/util/errors.ts';
import { applyWrites, firstRunInputWrites, inputAreaOf, startPrompt } from './console-input.ts';
import { CONSOLE_ADDR, hex, type Memory, type MemoryOptions } from './memory.ts';
import { OPC, immB, immJ, immS } from './decode.ts';
import { cpuForProgram, loadElf } from './elf.ts';
import { bnMac, type Cpu, type HaltReason, type TraceEvent } from './cpu.ts';
import {
  A_COUNT, CODE_BASE, CODE_BYTES, PROTOCOL_VERSION, TRAP_CAUSE, codeWord, decodeToken, encodeToken, fitsNarrow,
  splitResult, wideHi14, type TokenKind, type TrapCause,
} from './protocol.ts';

/**
 * Instruction classes of the summary. 'trap' is the class of an instruction the stream covers
 * although it did not retire: the one a final TRAP (illegal, fetch, load, store) is attributed to
 * when no retired instruction carries it (docs/token-protocol.md, "v5: traps").
 */
export const INSTR_CLASSES = [
  'alu-imm', 'alu-reg', 'lui/auipc', 'load', 'store', 'branch', 'jal/jalr', 'mul/div', 'system', 'bignum', 'trap',
] as const;
export type InstrClass = (typeof INSTR_CLASSES)[number];

/** Default instruction budget of a golden trace (the token arrays grow with it). */
export const GOLDEN_DEFAULT_MAX_INSTRUCTIONS = 10_000_000;
/** Tokens the driver feeds before the chip generates: BOS, J(entry). */
export const PROMPT_LENGTH = 2;

export interface GoldenTraceOptions {
  /** Instruction budget; the trace ends with halt reason 'limit' when it is spent. Default 10,000,000. */
  maxInstructions?: number;
  /** RAM layout for loadElf (default: the emulator's, base 0x80000000, 1 MiB). */
  mem?: MemoryOptions;
  /**
   * The chip's code RAM in bytes, from 0x80000000 (4 × its code words; a multiple of 4, ≥ 4): the
   * emulator may fetch only below 0x80000000 + codeBytes, and a fetch beyond it is a fetch trap.
   * Default (and at most): the 128 KiB that J(w) reaches.
   */
  codeBytes?: number;
  /**
   * Console input (riscv/console-input.ts): written into the program's input area before the run,
   * and fed as loader tokens between BOS and J(entry) in the stream's prompt, as the chip gets it.
   * ChipcError input.* when the program has no input area or the bytes exceed it. Default: none.
   */
  input?: Uint8Array;
  /** The program's name in error messages (default "the program"). */
  label?: string;
}

export interface ClassCost {
  instructions: number;
  tokens: number;
  /** tokens / instructions (0 when no instruction of the class ran). */
  tokensPerInstruction: number;
}

export interface ProtocolSummary {
  /** Instructions the stream covers: every retired one, plus the non-retired one a final TRAP may be attributed to (class 'trap'). */
  instructions: number;
  /** Generated tokens (the prompt excluded). */
  tokens: number;
  tokensPerInstruction: number;
  byClass: Record<InstrClass, ClassCost>;
  /** Generated tokens of each kind. */
  byKind: Record<TokenKind, number>;
}

export interface GoldenTrace {
  /** Token ids: the prompt (PROMPT_LENGTH tokens), then every generated token. */
  tokens: Int32Array;
  /**
   * Per token: index of the instruction that emitted it (0-based, in execution order); −1 for the
   * prompt. A final TRAP belongs to the instruction the chip traps at: the ebreak; a jump or
   * branch whose target it cannot fetch (the TRAP replaces its J); the instruction whose
   * window-end J(PC+4) is beyond the J range; otherwise a covered but not retired instruction at
   * the trapping pc (class 'trap': the illegal word, the faulting load / store, the jump to a
   * misaligned target, or the pc that cannot be fetched).
   */
  tokenInstr: Int32Array;
  /** Per token: pc of that instruction; 0 for the prompt. */
  tokenPc: Uint32Array;
  /** Per covered instruction: its pc and class (index into INSTR_CLASSES). */
  instrPc: Uint32Array;
  instrClass: Uint8Array;
  entry: number;
  /**
   * How the emulator stopped. For 'exit' / 'tohost' the stream ends with HALT; for 'illegal',
   * 'ebreak' and 'fault' with TRAP(trap); for 'limit' after the last instruction's tokens (which
   * end with TRAP(fetch) when it is a jump to, or a window end before, a pc the chip cannot fetch).
   * `trap`: the cause of the stream's final TRAP; absent when there is none.
   */
  halt: { reason: HaltReason; exitCode: number | null; pc: number; instret: number; message: string; trap?: TrapCause };
  /** The bytes of the OUT tokens (equal to the emulator's console). */
  console: Uint8Array;
  summary: ProtocolSummary;
}

/** Instruction class of a legal RV32IM+Zba word (by opcode; M is OP with funct7 = 1). */
export function classifyInstruction(word: number): InstrClass {
  switch (word & 0x7f) {
    case OPC.OP_IMM: return 'alu-imm';
    case OPC.OP: return (word >>> 25) === 0x01 ? 'mul/div' : 'alu-reg';
    case OPC.LUI: case OPC.AUIPC: return 'lui/auipc';
    case OPC.LOAD: return 'load';
    case OPC.STORE: return 'store';
    case OPC.BRANCH: return 'branch';
    case OPC.JAL: case OPC.JALR: return 'jal/jalr';
    case OPC.MISC_MEM: case OPC.SYSTEM: return 'system';
    case OPC.CUSTOM0: return 'bignum';
    default: throw new ChipcError('protocol.internal', `word 0x${hex(word)} has no instruction class`);
  }
}

/** What the trace callback learns about one retired instruction (registers are read at that moment). */
interface Retired {
  pc: number;
  word: number;
  cls: InstrClass;
  /** rd value written (unsigned 32-bit), null when none (rd = x0, stores, branches, jumps' links are carried by J). */
  result: number | null;
  /** Console byte of a store to CONSOLE_ADDR, else null. */
  consoleByte: number | null;
  /** A branch that was taken, or JAL / JALR. */
  jumps: boolean;
  /** Statically known jump target (taken branch, JAL); null for JALR and non-jumps. */
  target: number | null;
  /**
   * A store to RAM that is not an aligned SW (v2): the aligned word(s) it left in memory — one, or
   * two for a store that crosses a word boundary — each riding on D + H (no register commit).
   */
  storeWords: number[] | null;
  /** A load that crosses a word boundary (v2): the D payload of its first step (the bytes of the word read first). */
  loadPrefix: number | null;
  /** A store into the program's code (v2): the code word index it writes, carried by A(w) first. */
  codeStore: number | null;
  /** DIV / DIVU / REM / REMU (v2): the division-step tokens Q(s, q), D, H emitted before the result. */
  divTokens: number[] | null;
  /**
   * bn.mac (v4): the new carry, emitted (D, H) before the low word, which is then always emitted
   * in the wide form (D, H, N) — even for rd = x0 (`result` holds it then too).
   */
  bnCarry: number | null;
}

/**
 * The v2 division steps of DIV/DIVU/REM/REMU on rs1 = a, rs2 = b (docs/token-protocol.md): radix-16
 * long division on the magnitudes (signed ops) or the unsigned values, from step s0 with the
 * dividend's top s0 nibbles as the partial remainder R: s0 = min(7, lz(a)) (lz: leading zero
 * nibbles of the 32-bit value; R = 0 then), and v9: for a short divisor (b as an unsigned value in
 * [1, 2^16)) s0 = min(7, lz(a) + nibbles(b) − 1), the quotient's leading digits known to be 0;
 * s0 = 0 when the divisor is 0 (whose steps give digits 15 and so the all-ones quotient) or a
 * signed dividend is negative. Step s: X = 16·R + nibble (7 − s) of the dividend,
 * q = min(15, ⌊X / divisor⌋) (15 for divisor 0), R ← (X − q·divisor) mod 2^32; it emits
 * Q(s, q), D(R mod 2^16), H(R >>> 16) — v7: without the H at steps s < 7 when b, as an unsigned
 * value, lies in [1, 2^16) (a short divisor: every R < b fits 16 bits).
 */
export function divisionSteps(a: number, b: number, signed: boolean): { tokens: number[]; quotient: number; remainder: number } {
  const mag = (x: number) => (signed && x < 0 ? -x : x >>> 0); // |INT_MIN| = 2^31
  const ma = mag(a | 0);
  const mb = mag(b | 0);
  const lz = (x: number) => (x === 0 ? 8 : Math.clz32(x) >>> 2);
  const short = b >>> 0 >= 1 && b >>> 0 < 2 ** 16;
  let s0 = 0;
  if (mb !== 0 && !(signed && (a | 0) < 0)) {
    s0 = Math.min(7, lz(ma));
    // v9: a short divisor's division starts past the quotient's leading zero digits
    if (short) s0 = Math.min(7, lz(ma) + 8 - lz(b >>> 0) - 1);
  }
  const tokens: number[] = [];
  // the dividend's top s0 nibbles: below the divisor (fewer nibbles than it), so a remainder
  let R = s0 === 0 ? 0 : ma >>> (4 * (8 - s0));
  let Q = 0;
  for (let s = s0; s < 8; s++) {
    const X = 16 * R + ((ma >>> (4 * (7 - s))) & 15);
    const q = mb === 0 ? 15 : Math.min(15, Math.floor(X / mb));
    R = (X - q * mb) % 2 ** 32;
    Q = Q * 16 + q;
    tokens.push(encodeToken({ kind: 'Q', s, q }), encodeToken({ kind: 'D', v: R & 0xffff }));
    // v7: with a divisor in [1, 2^16) (rs2 as an unsigned value) R < 2^16, and steps 0…6 send no H
    if (s === 7 || !short) tokens.push(encodeToken({ kind: 'H', v: R >>> 16 }));
  }
  if (mb !== 0 && (Q !== Math.floor(ma / mb) || R !== ma % mb)) {
    throw new Error(`golden trace: division steps of ${ma} / ${mb} gave ${Q} rem ${R}`);
  }
  return { tokens, quotient: Q, remainder: R };
}

/**
 * The program's code in words from 0x80000000: up to the end of its last executable PT_LOAD
 * segment (file part). Stores into it are code stores (v2: A(w) first); the chip's fetch RAM
 * holds at least these words.
 */
export function codeEndWords(p: { image: { segments: { vaddr: number; filesz: number; flags: number }[] } }): number {
  let end = CODE_BASE;
  for (const s of p.image.segments) if (s.flags & 1) end = Math.max(end, s.vaddr + s.filesz);
  return Math.max(1, Math.ceil((end - CODE_BASE) / 4));
}

/** HALT payload for an exit code: the code itself when in 0…255, else 255 (as `chipc emu`'s exit status). */
export function haltCode(exitCode: number): number {
  return exitCode >= 0 && exitCode <= 255 ? exitCode : 255;
}

/**
 * Run the golden emulator on `elfBytes` and build the token stream the chip must generate.
 * ChipcError: 'protocol.code-range' when the entry is outside the 128 KiB code space at
 * 0x80000000 (or an executed pc lies in RAM below it); 'protocol.code-bytes' for a bad
 * opts.codeBytes; 'protocol.unsupported' for `ecall` write (a7 = 64), which has no token; ELF
 * errors from loadElf. A fetch outside the code RAM (opts.codeBytes), RAM or the J range is a
 * TRAP(fetch), not an error.
 */
export function goldenTokens(elfBytes: Uint8Array, opts: GoldenTraceOptions = {}): GoldenTrace {
  const program = loadElf(elfBytes, opts.mem ?? {}, opts.label);
  const cpu = cpuForProgram(program);
  const writes = firstRunInputWrites(inputAreaOf(program.symbols), opts.input, opts.label);
  applyWrites(program.memory, writes);
  return goldenRun(cpu, { memory: program.memory, tohost: program.tohost, codeEnd: codeEndWords(program), entry: program.entry },
    startPrompt(writes, program.entry, program.memory.base + program.memory.size - CODE_BASE), opts);
}

/** What goldenRun needs to know about the program besides the CPU. */
export interface GoldenProgram {
  memory: Memory;
  tohost: number | null;
  /** Words of code from CODE_BASE (codeEndWords). */
  codeEnd: number;
  /** The pc the prompt's final J starts (the CPU's pc must equal it). */
  entry: number;
}

/**
 * The golden stream of a run of `cpu` from its current state (pc = program.entry, registers and
 * memory as they are), after `prompt` — whose last token must be the J that starts program.entry.
 * goldenTokens uses it with the prompt [BOS, J(entry)] on a fresh CPU; a service call
 * (src/chip/service.ts) with [HALT(previous code), the request's write tokens…, J(entry)] on a CPU
 * that carries the previous call's registers and memory (protocol v3, re-entry after HALT).
 */
export function goldenRun(cpu: Cpu, program: GoldenProgram, prompt: readonly number[], opts: GoldenTraceOptions = {}): GoldenTrace {
  const codeEnd = program.codeEnd;
  const codeBytes = opts.codeBytes ?? CODE_BYTES;
  if (!Number.isInteger(codeBytes) || codeBytes < 4 || codeBytes % 4 !== 0) {
    throw new ChipcError('protocol.code-bytes', `code RAM size ${codeBytes} must be a positive multiple of 4 bytes`);
  }
  // v5: the chip fetches only from its code RAM, [0x80000000, + codeBytes), and never beyond the
  // 128 KiB J range; the emulator runs with that fetch limit (and the CPU's own, if lower), so it
  // stops with a fetch fault exactly where the chip traps.
  const mem = cpu.memory;
  const fetchLimit = Math.min(Math.max(0, CODE_BASE + Math.min(codeBytes, CODE_BYTES) - mem.base), cpu.fetchLimit ?? Infinity);
  const fetchEnd = Math.min(mem.size, fetchLimit);
  /** The emulator's fetch test under fetchLimit (riscv/cpu.ts). */
  const fetchable = (pc: number): boolean => (pc & 3) === 0 && ((pc - mem.base) >>> 0) <= fetchEnd - 4;
  /** J(w) can name pc. */
  const jumpable = (pc: number): boolean => (pc & 3) === 0 && pc - CODE_BASE >= 0 && pc - CODE_BASE < CODE_BYTES;
  const regs = cpu.regs;
  if ((cpu.pc >>> 0) !== (program.entry >>> 0)) throw new Error(`goldenRun: the CPU's pc 0x${hex(cpu.pc)} is not the entry 0x${hex(program.entry)}`);
  const lastPrompt = prompt.length === 0 ? null : decodeToken(prompt[prompt.length - 1]!);
  if (lastPrompt === null || lastPrompt.kind !== 'J' || CODE_BASE + 4 * lastPrompt.w !== (program.entry >>> 0)) {
    throw new Error('goldenRun: the prompt must end with J(entry)');
  }

  const tokens: number[] = [];
  const tokenInstr: number[] = [];
  const tokenPc: number[] = [];
  const instrPc: number[] = [];
  const instrClass: number[] = [];
  const consoleOut: number[] = [];
  const byClass = Object.fromEntries(INSTR_CLASSES.map((c) => [c, { instructions: 0, tokens: 0, tokensPerInstruction: 0 }])) as Record<InstrClass, ClassCost>;

  const push = (id: number, instr: number, pc: number): void => {
    tokens.push(id);
    tokenInstr.push(instr);
    tokenPc.push(pc);
  };
  for (const t of prompt) push(t, -1, 0);

  // Window state as the chip sees it: base from the last J, j = index of the running instruction.
  let base = program.entry;
  let j = 0;
  /** The cause of the TRAP the stream ended with, once emitted. */
  let trapped: TrapCause | null = null;
  const trapToken = (cause: TrapCause): number => encodeToken({ kind: 'TRAP', cause: TRAP_CAUSE[cause] });

  /** Start covered instruction `instrPc.length` at pc (which must be where the window says). */
  const cover = (pc: number, cls: InstrClass): number => {
    const index = instrPc.length;
    if (pc !== base + 4 * j) {
      throw new Error(`golden trace: instruction ${index} at 0x${hex(pc)} is not at base 0x${hex(base)} + 4·${j}`);
    }
    instrPc.push(pc);
    instrClass.push(INSTR_CLASSES.indexOf(cls));
    return index;
  };

  /** v5: the stream's final TRAP(cause), as the only token of the instruction at pc (class cls). */
  const emitTrap = (cause: TrapCause, pc: number, cls: InstrClass): void => {
    push(trapToken(cause), cover(pc, cls), pc);
    byClass[cls].instructions++;
    byClass[cls].tokens++;
    trapped = cause;
  };

  /**
   * Emit the tokens of instruction `r` (index instrPc.length); nextPc is the pc that ran after it.
   * `last`: r is the last instruction the emulator retired, so nextPc may be a pc the chip cannot
   * fetch — a jump there, or a window-end J(nextPc) that J cannot name, becomes TRAP(fetch).
   */
  const emit = (r: Retired, nextPc: number, halting: 'exit' | 'tohost' | null, exitCode: number | null, last = false): void => {
    codeWord(r.pc);
    const index = cover(r.pc, r.cls);
    const before = tokens.length;
    const out = (id: number): void => push(id, index, r.pc);

    if (halting !== null) {
      out(encodeToken({ kind: 'HALT', code: haltCode(exitCode ?? 0) }));
    } else if (r.jumps) {
      if (r.target !== null && r.target !== nextPc) {
        throw new Error(`golden trace: jump at 0x${hex(r.pc)} went to 0x${hex(nextPc)}, expected 0x${hex(r.target)}`);
      }
      if (last && !fetchable(nextPc)) {
        // v5: the chip checks a jump's target at the jump.
        out(trapToken('fetch'));
        trapped = 'fetch';
      } else {
        out(encodeToken({ kind: 'J', w: codeWord(nextPc) }));
        base = nextPc;
        j = 0;
      }
    } else {
      if (nextPc !== ((r.pc + 4) >>> 0)) {
        throw new Error(`golden trace: sequential instruction at 0x${hex(r.pc)} was followed by 0x${hex(nextPc)}`);
      }
      const windowEnd = j === 3;
      // v2: a division first emits its steps; its result (or N / J when rd = x0) follows as usual.
      if (r.divTokens !== null) for (const id of r.divTokens) out(id);
      if (r.bnCarry !== null) {
        // v4: bn.mac emits its new carry, then its low word, each as D + H, then N (J at the window end).
        for (const word of [r.bnCarry, r.result!]) {
          const { lo, hi16 } = splitResult(word);
          out(encodeToken({ kind: 'D', v: lo }));
          out(encodeToken({ kind: 'H', v: hi16 }));
        }
        if (!windowEnd) out(encodeToken({ kind: 'N', j: j + 1 }));
      } else if (r.consoleByte !== null) {
        // At the window end OUT(0, b) outputs b and starts nothing (v1 decision; OUT(0, ·) is otherwise never emitted).
        out(encodeToken({ kind: 'OUT', j: windowEnd ? 0 : j + 1, b: r.consoleByte }));
        consoleOut.push(r.consoleByte);
      } else if (r.storeWords !== null) {
        // v2: a sub-word or misaligned store carries each whole word it leaves in memory; the chip
        // writes it at the H position.
        if (r.codeStore !== null) out(encodeToken({ kind: 'A', w: r.codeStore }));
        for (const word of r.storeWords) {
          const { lo, hi16 } = splitResult(word);
          out(encodeToken({ kind: 'D', v: lo }));
          out(encodeToken({ kind: 'H', v: hi16 }));
        }
        if (!windowEnd) out(encodeToken({ kind: 'N', j: j + 1 }));
      } else if (r.result !== null) {
        const v = r.result;
        const { lo, hi16 } = splitResult(v);
        const hi14 = wideHi14(v);
        const commit = (payload: number): number =>
          encodeToken(windowEnd ? { kind: 'K', v: payload } : { kind: 'E', j: j + 1, v: payload });
        // v2: a word-crossing load first brings back the bytes it read first, then always the wide form.
        if (r.loadPrefix !== null) out(encodeToken({ kind: 'D', v: r.loadPrefix }));
        if (fitsNarrow(v) && r.loadPrefix === null) {
          out(commit(v | 0));
        } else if (hi14 !== null) {
          out(encodeToken({ kind: 'D', v: lo }));
          out(commit(hi14));
        } else {
          out(encodeToken({ kind: 'D', v: lo }));
          out(encodeToken({ kind: 'H', v: hi16 }));
          if (!windowEnd) out(encodeToken({ kind: 'N', j: j + 1 }));
        }
      } else {
        if (r.loadPrefix !== null) out(encodeToken({ kind: 'D', v: r.loadPrefix }));
        if (!windowEnd) out(encodeToken({ kind: 'N', j: j + 1 }));
      }
      if (windowEnd && last && !jumpable(nextPc) && !fetchable(nextPc)) {
        // v5: the window-end J(PC+4) cannot name PC+4 (beyond the 128 KiB J range). (A PC+4 that
        // the emulator can fetch but J cannot name lies in RAM below 0x80000000: codeWord refuses it.)
        out(trapToken('fetch'));
        trapped = 'fetch';
      } else if (windowEnd) {
        out(encodeToken({ kind: 'J', w: codeWord(nextPc) }));
        base = nextPc;
        j = 0;
      } else {
        j++;
      }
    }
    const c = byClass[r.cls];
    c.instructions++;
    c.tokens += tokens.length - before;
  };

  let pending: Retired | null = null;
  // Registers before the instruction being inspected (a load may overwrite its own base register).
  let before = Int32Array.from(regs);
  const carryBefore = [...cpu.bnCarry];
  const onRetire = (e: TraceEvent): void => {
    const r = inspect(e, before, carryBefore, program.memory, program.tohost, codeEnd);
    const bank = e.word >>> 25;
    if (r.bnCarry !== null && r.bnCarry !== cpu.bnCarry[bank]) throw new Error(`golden trace: bn.mac at 0x${hex(e.pc)} left carry 0x${hex(cpu.bnCarry[bank]!)}, expected 0x${hex(r.bnCarry)}`);
    before.set(regs);
    carryBefore.splice(0, carryBefore.length, ...cpu.bnCarry);
    if (pending !== null) emit(pending, e.pc, null, null);
    pending = r;
  };
  const result = cpu.run({ maxInstructions: opts.maxInstructions ?? GOLDEN_DEFAULT_MAX_INSTRUCTIONS, trace: onRetire, fetchLimit });
  const last = pending as Retired | null;
  switch (result.reason) {
    case 'exit': case 'tohost':
      if (last !== null) emit(last, result.pc, result.reason, result.exitCode);
      break;
    case 'limit':
      if (last !== null) emit(last, result.pc, null, null, true);
      break;
    case 'ebreak':
      // v5: the ebreak retired; TRAP(ebreak) takes the place of its tokens.
      if (last === null || last.word !== 0x00100073 || last.pc !== result.pc) throw new Error('golden trace: ebreak halt without its ebreak');
      codeWord(last.pc);
      emitTrap('ebreak', last.pc, last.cls);
      break;
    case 'illegal': case 'fault': {
      // v5: the instruction at result.pc did not retire (or, for a fetch fault, could not be
      // fetched): the last retired instruction's tokens lead there, then TRAP(cause) at that pc —
      // unless those tokens already ended in TRAP(fetch) (a jump to the pc, or a window end before
      // a pc J cannot name).
      const cause: TrapCause = result.reason === 'illegal' ? 'illegal' : result.fault!;
      if (last !== null) emit(last, result.pc, null, null, true);
      if (trapped === null) emitTrap(cause, result.pc, 'trap');
      else if (trapped !== cause) throw new Error(`golden trace: the stream trapped on ${trapped}, the emulator stopped on ${cause}`);
      break;
    }
  }

  const consoleBytes = Uint8Array.from(consoleOut);
  if (consoleBytes.length !== result.consoleBytes.length || consoleBytes.some((b, i) => b !== result.consoleBytes[i])) {
    throw new Error('golden trace: the OUT bytes differ from the emulator console');
  }

  const generated = tokens.length - prompt.length;
  const byKind: Record<TokenKind, number> = { E: 0, D: 0, J: 0, H: 0, K: 0, N: 0, OUT: 0, HALT: 0, BOS: 0, Q: 0, A: 0, TRAP: 0 };
  for (let i = prompt.length; i < tokens.length; i++) byKind[decodeToken(tokens[i]!).kind]++;
  for (const c of INSTR_CLASSES) {
    const k = byClass[c];
    k.tokensPerInstruction = k.instructions === 0 ? 0 : k.tokens / k.instructions;
  }
  return {
    tokens: Int32Array.from(tokens),
    tokenInstr: Int32Array.from(tokenInstr),
    tokenPc: Uint32Array.from(tokenPc),
    instrPc: Uint32Array.from(instrPc),
    instrClass: Uint8Array.from(instrClass),
    entry: program.entry,
    halt: {
      reason: result.reason, exitCode: result.exitCode, pc: result.pc, instret: result.instret, message: result.message,
      ...(trapped === null ? {} : { trap: trapped as TrapCause }),
    },
    console: consoleBytes,
    summary: {
      instructions: instrPc.length,
      tokens: generated,
      tokensPerInstruction: instrPc.length === 0 ? 0 : generated / instrPc.length,
      byClass,
      byKind,
    },
  };
}

/** Classify one retired instruction from the registers before it, and those (and memory) after it. */
function inspect(e: TraceEvent, regs: Int32Array, carries: readonly number[], memory: Memory, tohost: number | null, codeEnd: number): Retired {
  const w = e.word;
  const cls = classifyInstruction(w);
  const opcode = w & 0x7f;
  const rs1 = (w >>> 15) & 31;
  const rs2 = (w >>> 20) & 31;
  const f3 = (w >>> 12) & 7;
  let consoleByte: number | null = null;
  let storeWords: number[] | null = null;
  let loadPrefix: number | null = null;
  let codeStore: number | null = null;
  let divTokens: number[] | null = null;
  let bnCarry: number | null = null;
  let bnLow: number | null = null;
  let jumps = false;
  let target: number | null = null;
  if (w === 0x00000073 && regs[17] === 64) {
    throw new ChipcError('protocol.unsupported',
      `ecall write (a7 = 64) at pc 0x${hex(e.pc)} has no token in the token protocol (v${PROTOCOL_VERSION}); print through the console device (a store to 0x${hex(CONSOLE_ADDR)})`);
  }
  if (opcode === OPC.LOAD || opcode === OPC.STORE) {
    const addr = (regs[rs1]! + (opcode === OPC.LOAD ? (w >> 20) : immS(w))) >>> 0;
    const n = 1 << (f3 & 3);
    const where = `${opcode === OPC.LOAD ? 'load' : 'store'} of ${n} byte(s) at 0x${hex(addr)} (pc 0x${hex(e.pc)})`;
    const off = addr & 3;
    const crossing = off + n > 4;
    if (crossing && ((addr & ~3) >>> 0) + 4 === CONSOLE_ADDR) {
      throw new ChipcError('protocol.unsupported', `${where} crosses into the console address; protocol ${PROTOCOL_VERSION} has no token sequence for it`);
    }
    if (opcode === OPC.STORE) {
      const hitsTohost = tohost !== null && (((addr - tohost) >>> 0) < 4 || ((tohost - addr) >>> 0) < n);
      if (hitsTohost && memory.read32(tohost) !== 0 && !(n === 4 && addr === tohost)) {
        throw new ChipcError('protocol.unsupported', `${where} halts through tohost but is not a word store to tohost itself (0x${hex(tohost)}); protocol ${PROTOCOL_VERSION} halts only on that`);
      }
      const w0 = (addr & ~3) >>> 0;
      const inCode = w0 - CODE_BASE >= 0 && w0 - CODE_BASE < 4 * codeEnd;
      if (inCode && (crossing || w0 - CODE_BASE >= 4 * A_COUNT)) {
        throw new ChipcError('protocol.unsupported',
          `${where} writes code ${crossing ? 'across a word boundary' : `beyond the first ${A_COUNT} code words`}; protocol ${PROTOCOL_VERSION} has no code-store sequence for it`);
      }
      if (addr === CONSOLE_ADDR) consoleByte = regs[rs2]! & 0xff;
      else if ((n < 4 || off !== 0 || inCode) && memory.contains(w0, crossing ? 8 : 4)) {
        // v2: a store into the program's code (its executable segments) first names the code word (A).
        if (inCode) codeStore = (w0 - CODE_BASE) / 4;
        storeWords = [memory.read32(w0) >>> 0];
        if (crossing) storeWords.push(memory.read32(w0 + 4) >>> 0);
      }
    } else if (crossing && memory.contains((addr & ~3) >>> 0, 8)) {
      // The side with at most two of the load's bytes is read first: the word at addr & ~3 unless
      // it holds three (LW at offset 1), then the next word.
      const k1 = 4 - off;
      const first = k1 <= 2 ? addr : ((addr & ~3) + 4) >>> 0;
      const count = k1 <= 2 ? k1 : n - k1;
      loadPrefix = 0;
      for (let i = 0; i < count; i++) loadPrefix |= memory.read8(first + i) << (8 * i);
    }
  } else if (opcode === OPC.BRANCH) {
    const a = regs[rs1]!, b = regs[rs2]!;
    const taken = f3 === 0 ? a === b : f3 === 1 ? a !== b : f3 === 4 ? a < b : f3 === 5 ? a >= b
      : f3 === 6 ? a >>> 0 < b >>> 0 : a >>> 0 >= b >>> 0;
    if (taken) {
      jumps = true;
      target = (e.pc + immB(w)) >>> 0;
    }
  } else if (opcode === OPC.OP && (w >>> 25) === 1 && f3 >= 4) {
    divTokens = divisionSteps(regs[rs1]!, regs[rs2]!, f3 === 4 || f3 === 6).tokens;
  } else if (opcode === OPC.CUSTOM0) {
    [bnLow, bnCarry] = bnMac(regs[rs1]!, regs[rs2]!, regs[(w >>> 7) & 31]!, carries[w >>> 25]!);
  } else if (opcode === OPC.JAL) {
    jumps = true;
    target = (e.pc + immJ(w)) >>> 0;
  } else if (opcode === OPC.JALR) {
    jumps = true;
  }
  const result = bnLow ?? (jumps || e.rd === null ? null : e.rdValue);
  return { pc: e.pc, word: w, cls, result, consoleByte, jumps, target, storeWords, loadPrefix, codeStore, divTokens, bnCarry };
}
