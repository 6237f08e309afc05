/**
 * Services on the RV32 chip (protocol v3, docs/token-protocol.md "Re-entry"): a service is a
 * firmware image (firmware/services, linked with runtime/link-service.ld) that the host loads
 * once and then calls many times. A call writes request words into the chip's data RAM with
 * loader tokens and starts the program at its entry; the program answers on the console and
 * halts with a result code. Its state between calls lives in RAM rows nobody else writes.
 *
 * The token sequence of one call is
 *
 *     first, E(p₁) D(lo₁) H(hi₁), …, E(pₙ) D(loₙ) H(hiₙ), J(entry)   ← fed (the request prompt)
 *     t₁, t₂, …, HALT(code)                                          ← generated
 *
 * with first = BOS for the first call of a session and the token the previous call generated last
 * — HALT(previous code), or TRAP(cause) when it trapped (protocol v5) — afterwards: a fed HALT or
 * TRAP re-arms the chip's loader mode (v3), in which
 * E(p) D(lo) H(hi) writes the word {hi, lo} to word p of the data RAM and nothing else is
 * committed, exactly as in the loader prompt.
 *
 * Two drivers run the same calls: `ServiceEmulator` (the golden emulator, with the golden token
 * stream of every call on request) and `ChipService` (the compiled weights in the reference
 * executor, or the chip circuit in the IR fast evaluator), which compares every generated token
 * with the golden stream.
 */
import { Cpu } from '../../riscv/cpu.ts';
import { loadElf, type LoadedProgram } from '../../riscv/elf.ts';
import { startPrompt, type MemoryWrite } from '../../riscv/console-input.ts';
import { hex } from '../../riscv/memory.ts';
import { codeEndWords, goldenRun, haltCode, type GoldenTrace } from '../../riscv/golden-trace.ts';
import { BOS_ID, CODE_BASE, decodeToken, encodeToken, formatToken } from '../../riscv/protocol.ts';
import { memLayout, memPlace, memWordAt } from '../../riscv/chip-shape.ts';
import { hasCircuit, type ChipModel } from './loaded.ts';
import { argmax, type Executor } from '../exec/executor.ts';
import type { ExecOptions } from '../exec/types.ts';
import { FastEvaluator } from '../ir/evaluate-fast.ts';
import type { CircuitIR } from '../ir/types.ts';
import { applyRamContents, captureRamContents } from '../load/ram-state.ts';
import { ChipcError } from '../util/errors.ts';
import { chipExecutor, type ChipProgram } from './run.ts';
import { preloadFast } from './build.ts';

/** One request word: a 4-aligned byte address in the chip's data RAM and the 32-bit word to store there. */
export type ServiceWrite = MemoryWrite;

/** Default instruction budget of one call. */
export const SERVICE_MAX_INSTRUCTIONS = 50_000_000;

/**
 * The request prompt of a call: `first` (BOS or the previous call's HALT), then E(p) D(lo) H(hi)
 * per write (p = the word index from CODE_BASE), then J(entry) — startPrompt with that first
 * token. ChipcError 'service.write' for a word that is not an unsigned 32-bit integer,
 * 'input.address' for an address that is not a 4-aligned word of the data RAM the loader reaches.
 */
export function requestPrompt(first: number, writes: readonly ServiceWrite[], entry: number, memBytes: number): number[] {
  for (const [addr, word] of writes) {
    if (!Number.isInteger(word) || word < 0 || word > 0xffffffff) {
      throw new ChipcError('service.write', `request word at 0x${hex(addr >>> 0)} must be an unsigned 32-bit integer, got ${word}`);
    }
  }
  return startPrompt(writes, entry, memBytes, first);
}

/** What one call did. */
export interface ServiceCall {
  /** The program's exit code (a0 of the exit ecall, or tohost >>> 1). */
  exitCode: number;
  /** Console bytes the call wrote. */
  console: Uint8Array;
  /** Instructions the call retired. */
  instructions: number;
  /** The call's request prompt (fed tokens). */
  prompt: number[];
  /** With `trace`: the golden stream (prompt, then every generated token, ending with HALT). */
  trace?: GoldenTrace;
}

export interface CallOptions {
  /** Instruction budget (default SERVICE_MAX_INSTRUCTIONS); running out is a ChipcError 'service.halt'. */
  maxInstructions?: number;
  /** Also compute the golden token stream (slower: every instruction is inspected). */
  trace?: boolean;
}

/**
 * The golden emulator as a service host: one RAM of `memBytes` bytes from CODE_BASE holding the
 * loaded image, the registers carried from call to call (as the chip's register file is).
 */
export class ServiceEmulator {
  readonly program: LoadedProgram;
  readonly memBytes: number;
  /** The chip's code RAM in bytes: the emulator fetches only below CODE_BASE + codeBytes (null: no limit but RAM and the J range). */
  readonly codeBytes: number | null;
  private regs: Int32Array | null = null;
  /** The bignum unit's carries, kept across calls like the registers (the chip's latches keep them too). */
  private bnCarry = [0, 0];
  private nextFirst = BOS_ID;
  private calls = 0;

  private constructor(program: LoadedProgram, memBytes: number, codeBytes: number | null) {
    this.program = program;
    this.memBytes = memBytes;
    this.codeBytes = codeBytes;
  }

  /**
   * Load an ELF into a RAM of memBytes bytes (ELF errors and 'elf.range' from loadElf). `codeBytes`:
   * the chip's code RAM (ChipProgram.codeBytes), the emulator's fetch limit — a fetch beyond it
   * stops the call as the chip's TRAP(fetch) does.
   */
  static load(elf: Uint8Array, memBytes: number, codeBytes?: number): ServiceEmulator {
    return new ServiceEmulator(loadElf(elf, { base: CODE_BASE, size: memBytes }), memBytes, codeBytes ?? null);
  }

  get memory() { return this.program.memory; }
  get entry(): number { return this.program.entry; }
  /** Calls made so far. */
  get callCount(): number { return this.calls; }

  /** An ELF symbol's address; ChipcError 'service.symbol' when the image has none of that name. */
  symbol(name: string): number {
    const v = this.program.symbols.get(name);
    if (v === undefined) throw new ChipcError('service.symbol', `the service image has no symbol "${name}"`);
    return v >>> 0;
  }

  /** The token the next call's prompt starts with: BOS for the first call, then the previous HALT. */
  get firstToken(): number { return this.nextFirst; }

  /** Write the request words, run from the entry to the halt, and return what the call did. */
  call(writes: readonly ServiceWrite[], opts: CallOptions = {}): ServiceCall {
    const prompt = requestPrompt(this.nextFirst, writes, this.entry, this.memBytes);
    for (const [addr, word] of writes) this.memory.write32(addr, word);
    const cpu = new Cpu(this.memory, { pc: this.entry, tohost: this.program.tohost, fetchLimit: this.codeBytes });
    if (this.regs !== null) cpu.regs.set(this.regs);
    cpu.bnCarry.splice(0, 2, ...this.bnCarry);
    const budget = opts.maxInstructions ?? SERVICE_MAX_INSTRUCTIONS;
    let trace: GoldenTrace | undefined;
    let reason: string;
    let code: number | null;
    let message: string;
    let consoleBytes: Uint8Array;
    if (opts.trace) {
      trace = goldenRun(cpu, { memory: this.memory, tohost: this.program.tohost, codeEnd: codeEndWords(this.program), entry: this.entry },
        prompt, { maxInstructions: budget, ...(this.codeBytes === null ? {} : { codeBytes: this.codeBytes }) });
      ({ reason, exitCode: code, message } = trace.halt);
      consoleBytes = trace.console;
    } else {
      const r = cpu.run({ maxInstructions: budget });
      ({ reason, exitCode: code, message } = r);
      consoleBytes = r.consoleBytes;
    }
    if ((reason !== 'exit' && reason !== 'tohost') || code === null) {
      throw new ChipcError('service.halt', `service call ${this.calls + 1} did not halt by exit: ${message}`);
    }
    this.regs = Int32Array.from(cpu.regs);
    this.bnCarry = [...cpu.bnCarry];
    this.nextFirst = encodeToken({ kind: 'HALT', code: haltCode(code) });
    this.calls++;
    return { exitCode: code, console: consoleBytes, instructions: cpu.instret, prompt, ...(trace ? { trace } : {}) };
  }
}

/** How a ChipService steps: the compiled weights (reference executor) or the chip circuit (IR). */
export type ServiceEngine = 'weights' | 'ir';

/** What one call through the chip produced. */
export interface ChipCall {
  /** Generated tokens (ending with HALT when it halted, TRAP when it trapped). */
  generated: number[];
  exitCode: number | null;
  /** The TRAP cause (protocol v5: 0 illegal, 1 ebreak, 2 fetch, 3 load, 4 store) when the call trapped, else null. */
  trap: number | null;
  /** The first generated token that differs from the golden stream (index into `generated`), or null. */
  divergence: { index: number; expected: string; got: string } | null;
  seconds: number;
}

/**
 * A service session on the chip: the image loaded into the GDN state (or the circuit's RAMs) once,
 * then calls fed as request prompts and decoded greedily until HALT. Each call is checked token by
 * token against the golden stream when one is given (stop at the first divergence).
 */
export class ChipService {
  private readonly ex: Executor | null;
  private readonly fast: FastEvaluator | null;
  private started = false;
  readonly engine: ServiceEngine;

  /** `res`: the chip; null only for engine 'ir' with `opts.ir` (the circuit alone). */
  constructor(readonly res: ChipModel | null, readonly prog: ChipProgram, opts: ExecOptions & { engine?: ServiceEngine; ir?: CircuitIR } = {}) {
    this.engine = opts.engine ?? 'weights';
    if (this.engine === 'weights') {
      if (res === null) throw new ChipcError('service.engine', 'the weights engine needs a chip');
      this.ex = chipExecutor(res, prog, { ...opts, load: 'state' });
      this.fast = null;
    } else {
      const ir = opts.ir ?? (res !== null && hasCircuit(res) ? res.ir : null);
      if (ir === null) throw new ChipcError('service.engine', 'a chip loaded from a checkpoint runs its weights only: the IR engine needs the compiled circuit');
      const fast = new FastEvaluator(ir);
      preloadFast(fast, prog);
      this.ex = null;
      this.fast = fast;
    }
  }

  /** The executor (weights engine only), e.g. to capture or write RAM state. */
  get executor(): Executor {
    if (this.ex === null) throw new ChipcError('service.engine', 'this service runs the IR, not the weights');
    return this.ex;
  }

  private feed(t: number): number {
    if (this.fast !== null) return this.fast.step(t)!;
    if (!this.started) {
      this.started = true;
      return argmax(this.ex!.prefill([t])[0]!);
    }
    return this.ex!.decodeArgmax(t);
  }

  /**
   * Feed `prompt` (requestPrompt: its first token BOS for the first call, else the previous call's
   * HALT), then decode until HALT or TRAP, `maxTokens` generated tokens, or a divergence from
   * `golden` (a golden stream whose first prompt.length tokens are the prompt).
   */
  call(prompt: readonly number[], opts: { golden?: ArrayLike<number>; maxTokens?: number; onToken?: (t: number) => void } = {}): ChipCall {
    const t0 = performance.now();
    const golden = opts.golden;
    const maxTokens = opts.maxTokens ?? 10_000_000;
    if (!this.started && this.fast === null && prompt[0] !== BOS_ID) {
      throw new ChipcError('service.prompt', 'the first call of a chip service must start with BOS');
    }
    let next = 0;
    for (const t of prompt) next = this.feed(t);
    if (this.fast !== null) this.started = true;
    const generated: number[] = [];
    let divergence: ChipCall['divergence'] = null;
    let exitCode: number | null = null;
    let trap: number | null = null;
    while (generated.length < maxTokens) {
      const g = prompt.length + generated.length;
      if (golden !== undefined) {
        const want = g < golden.length ? golden[g]! : null;
        if (want !== next) {
          divergence = { index: generated.length, expected: want === null ? 'the end of the golden stream' : formatToken(want), got: formatToken(next) };
          break;
        }
      }
      generated.push(next);
      opts.onToken?.(next);
      const d = decodeToken(next);
      if (d.kind === 'HALT') {
        exitCode = d.code;
        break;
      }
      if (d.kind === 'TRAP') {
        trap = d.cause;
        break;
      }
      next = this.feed(next);
    }
    return { generated, exitCode, trap, divergence, seconds: (performance.now() - t0) / 1000 };
  }

  /** The data RAM's rows as the chip holds them now (word index → 32 bits, nonzero rows only), over every bank. */
  captureMemory(): Map<number, number[]> {
    const out = new Map<number, number[]>();
    const layout = memLayout(this.prog.chip.memWords, this.prog.chip.memBankWords);
    layout.names.forEach((name, bank) => {
      if (this.fast !== null) {
        const ram = this.fast.ir.rams.findIndex((r) => r.name === name);
        for (let row = 0; row < layout.rows; row++) {
          const v = this.fast.ramRow(ram, row);
          if (v.some((b) => b !== 0)) out.set(memWordAt(layout, bank, row), [...v]);
        }
      } else {
        for (const [row, v] of captureRamContents(this.ex!, this.res!, this.placement(name))) out.set(memWordAt(layout, bank, row), v);
      }
    });
    return out;
  }

  /**
   * Write data-RAM rows (word index → 32 bits) directly into the state (e.g. a store file's rows):
   * each touched bank's current rows are captured, these rows replace theirs, and the bank is
   * written back, so every other row — and every other head — keeps its bits. An all-zero row
   * becomes unwritten.
   */
  writeMemory(rows: ReadonlyMap<number, readonly number[]>): void {
    for (const row of rows.keys()) {
      if (!Number.isInteger(row) || row < 0 || row >= this.prog.chip.memWords) {
        throw new ChipcError('service.write', `data-RAM row ${row} is outside the chip's ${this.prog.chip.memWords} words`);
      }
    }
    const layout = memLayout(this.prog.chip.memWords, this.prog.chip.memBankWords);
    for (const [bank, name] of layout.names.entries()) {
      const mine = [...rows].map(([w, v]) => [...memPlace(layout, w), v] as const).filter(([b]) => b === bank).map(([, row, v]) => [row, v] as const);
      if (mine.length === 0) continue;
      if (this.fast !== null) {
        const ram = this.fast.ir.rams.findIndex((r) => r.name === name);
        for (const [row, v] of mine) this.fast.setRamRow(ram, row, v);
        continue;
      }
      const placement = this.placement(name);
      const merged = captureRamContents(this.ex!, this.res!, placement);
      for (const [row, v] of mine) {
        if (v.every((b) => b === 0)) merged.delete(row);
        else merged.set(row, [...v]);
      }
      applyRamContents(this.ex!, this.res!, placement, merged);
    }
  }

  /**
   * The data RAM as 32-bit words, read once from the state now: a function of a byte address in
   * [CODE_BASE, CODE_BASE + 4·memWords) (unwritten words read 0).
   */
  memoryReader(): (address: number) => number {
    const mem = this.captureMemory();
    return (address) => {
      const bits = mem.get((address - CODE_BASE) / 4);
      return bits === undefined ? 0 : bits.reduce((s, b, k) => s + b * 2 ** k, 0);
    };
  }

  /** writeMemory for 32-bit words at byte addresses (e.g. a service's state, memoryWordsFromModel). */
  writeWords(words: readonly ServiceWrite[]): void {
    const rows = new Map<number, number[]>();
    for (const [addr, w] of words) rows.set((addr - CODE_BASE) / 4, Array.from({ length: 32 }, (_, k) => (w >>> k) & 1));
    this.writeMemory(rows);
  }

  private placement(name: string) {
    const p = this.res!.rams.find((r) => r.name === name);
    if (!p) throw new ChipcError('chip.ram', `the compiled chip has no RAM "${name}"`);
    return p;
  }
}
