/**
 * Running an RV32 program on the compiled chip (`chipc run`): compile the chip for a target with a
 * code RAM sized to the program and a data RAM of the chosen size, load the program's image into
 * both RAMs' GDN state (the state-file path), feed the prompt [BOS, J(entry)] and let the model
 * generate until HALT — optionally beside the golden emulator's token trace, stopping at the
 * first divergence.
 */
import { buildCircuit } from '../dsl/load.ts';
import { compileCircuit, type CompileResult } from '../compile.ts';
import type { ModelConfig } from '../model/config.ts';
import { Executor, argmax } from '../exec/executor.ts';
import type { ExecOptions } from '../exec/types.ts';
import { applyRamContents } from '../load/ram-state.ts';
import { ChipcError } from '../util/errors.ts';
import { cpuCircuit, CODE_BASE, type CpuOptions } from '../../circuits/rv32im/cpu.ts';
import { loadElf } from '../../riscv/elf.ts';
import { codeEndWords, goldenTokens } from '../../riscv/golden-trace.ts';
import { BOS_ID, decodeToken, encodeToken, formatToken } from '../../riscv/protocol.ts';
import type { CircuitIR } from '../ir/types.ts';
import { FastEvaluator } from '../ir/evaluate-fast.ts';
import type { LayerHookEvent } from '../exec/types.ts';
import { comparePosition, type Mismatch } from '../verify/check.ts';

export interface ChipProgram {
  entry: number;
  /** Code words from CODE_BASE, as 32 bit-values each. */
  code: Map<number, number[]>;
  /** Nonzero words of the whole image (every PT_LOAD segment) from CODE_BASE: the data RAM's contents. */
  data: Map<number, number[]>;
  /** Initial registers: sp (x2) = the top of the data RAM, as the golden emulator resets it. */
  regs: Map<number, number[]>;
  /**
   * The same image as a prompt of loader tokens (docs/token-protocol.md, "Loading by prompt"):
   * BOS, then E(address), D(lo), H(hi) per nonzero word and for sp, then J(entry).
   */
  loader: number[];
  /** Data RAM size in bytes (the golden emulator must run with the same RAM). */
  memBytes: number;
  /** The chip options this program needs: code RAM rows (a power of two ≥ 64), data RAM rows, tohost. */
  chip: Required<CpuOptions>;
}

/** Default data RAM: 32 KiB from CODE_BASE (the firmware memory map, docs/firmware.md). */
export const DEFAULT_MEM_BYTES = 32 * 1024;

const bitsOfWord = (wd: number) => Array.from({ length: 32 }, (_, k) => (wd >>> k) & 1);

/**
 * The chip image of an ELF: code words from CODE_BASE to the end of its last executable segment,
 * and every nonzero word of its segments for the data RAM of `memBytes` bytes. ChipcError
 * 'chip.mem' when a segment lies outside [CODE_BASE, CODE_BASE + memBytes).
 */
export function programOf(elf: Uint8Array, memBytes = DEFAULT_MEM_BYTES): ChipProgram {
  if (!Number.isInteger(memBytes) || memBytes < 4 || memBytes % 4 !== 0) {
    throw new ChipcError('chip.mem', `data RAM size ${memBytes} is not a positive multiple of 4 bytes`);
  }
  const p = loadElf(elf);
  for (const s of p.image.segments) {
    if (s.vaddr < CODE_BASE || s.vaddr + s.memsz > CODE_BASE + memBytes) {
      throw new ChipcError('chip.mem',
        `segment [0x${s.vaddr.toString(16)}, 0x${(s.vaddr + s.memsz).toString(16)}) does not fit the chip's ${memBytes}-byte data RAM ` +
        `[0x${CODE_BASE.toString(16)}, 0x${(CODE_BASE + memBytes).toString(16)}); compile a bigger one (--mem-size)`);
    }
  }
  const used = codeEndWords(p);
  let codeWords = 64;
  while (codeWords < used) codeWords *= 2;
  // Nonzero words only (an unwritten row reads 0): the state the loader prompt leaves, exactly.
  const data = new Map<number, number[]>();
  const words: [number, number][] = [];
  for (const s of p.image.segments) {
    for (let a = (s.vaddr - CODE_BASE) & ~3; a < s.vaddr - CODE_BASE + s.filesz; a += 4) {
      const wd = p.memory.read32(CODE_BASE + a) >>> 0;
      if (wd !== 0 && !data.has(a / 4)) {
        data.set(a / 4, bitsOfWord(wd));
        words.push([a / 4, wd]);
      }
    }
  }
  const code = new Map([...data].filter(([row]) => row < codeWords));
  const sp = (CODE_BASE + memBytes) & ~15;
  const regs = new Map([[2, bitsOfWord(sp)]]);
  // Loader prompt: E(word) or E(0x8000 + register), D(lo), H(hi) per nonzero word (sorted by address), then J(entry).
  const loader: number[] = [BOS_ID];
  const put = (p: number, v: number) => loader.push(
    encodeToken({ kind: 'E', j: p >> 14, v: ((p & 0x3fff) ^ 0x2000) - 0x2000 }),
    encodeToken({ kind: 'D', v: v & 0xffff }), encodeToken({ kind: 'H', v: v >>> 16 }));
  for (const [row, wd] of words.sort((x, y) => x[0] - y[0])) put(row, wd);
  put(0x8000 + 2, sp);
  loader.push(encodeToken({ kind: 'J', w: (p.entry - CODE_BASE) / 4 }));
  return { entry: p.entry, code, data, regs, loader, memBytes, chip: { codeWords, codeEnd: used, memWords: memBytes / 4, tohost: p.tohost } };
}

/** Compile the chip circuit with `opts` for `target`. */
export function compileChip(opts: Required<CpuOptions>, target: ModelConfig): CompileResult {
  return compileCircuit(chipIr(opts), target);
}

export interface GoldenOptions {
  maxTokens: number;
  /** The expected token stream (riscv/golden-trace.ts) and, per token, its instruction's pc. */
  golden?: ArrayLike<number>;
  goldenPc?: ArrayLike<number>;
  onToken?: (t: number) => void;
  /**
   * How the image gets into the chip: 'state' (default) writes the RAMs' GDN state directly and
   * feeds [BOS, J(entry)]; 'prompt' feeds the loader prompt (prog.loader) token by token instead.
   * Both leave bit-identical RAM state (test/rv32-cpu.test.ts) and generate the same stream.
   */
  load?: 'state' | 'prompt';
}

export interface RunResult {
  tokens: number[];
  halted: boolean;
  exitCode: number | null;
  /** Instructions started (positions fed E, N, OUT or J). */
  instructions: number;
  /** The first token that differs from the golden trace, with the pc of the instruction it belongs to. */
  divergence: { position: number; expected: string; got: string; pc: number | null } | null;
  seconds: number;
  /** Tokens of the prompt at the start of `tokens` (2, or the loader prompt's length). */
  promptLength: number;
}

export function runOnChip(
  res: CompileResult, prog: ChipProgram, opts: ExecOptions & GoldenOptions,
): RunResult {
  const ex = chipExecutor(res, prog, opts);
  const prompt = opts.load === 'prompt' ? prog.loader : [BOS_ID, encodeToken({ kind: 'J', w: (prog.entry - CODE_BASE) / 4 })];
  const t0 = performance.now();
  // The loader prompt is fed by decode steps: RAM reads are exact there (a chunked prefill's are
  // not guaranteed, docs/gadgets-gdn.md), and the loader's writes depend on latch reads.
  let first = argmax(ex.prefill(prompt.slice(0, opts.load === 'prompt' ? 1 : prompt.length))[0]!);
  if (opts.load === 'prompt') for (const t of prompt.slice(1)) first = ex.decodeArgmax(t);
  return follow(prompt, first, (t) => ex.decodeArgmax(t), opts, t0);
}

/**
 * Where a divergence of runOnChip starts. `tokens` are the run's tokens (RunResult.tokens: the
 * prompt and the generated tokens before the divergent one) and `position` the divergent token's
 * position, so the forward that produced it consumed tokens[position − 1]. Replays the run — the
 * same loading, the same prefill and decode calls — through the weights and, beside it, through
 * the chip circuit (FastEvaluator), and compares at that position every placed signal after every
 * sublayer with the circuit's values (verify/check.ts comparePosition). Returns the mismatches,
 * earliest sublayer first: empty when the weights agree with the circuit everywhere (then the
 * circuit itself differs from the golden trace), only `token` when the residual agrees but the LM
 * head picks another token.
 */
export function locateDivergence(
  res: CompileResult, prog: ChipProgram, tokens: readonly number[], position: number,
  opts: ExecOptions & { load?: 'state' | 'prompt' },
): Mismatch[] {
  const target = position - 1;
  if (!Number.isInteger(target) || target < 0 || target >= tokens.length) {
    throw new ChipcError('chip.locate', `position ${position} is outside the run's ${tokens.length} tokens`);
  }
  const fast = new FastEvaluator(res.ir);
  if (opts.load !== 'prompt') {
    for (const [name, rows] of [['code', prog.code], ['mem', prog.data], ['regs', prog.regs]] as const) {
      const ram = res.ir.rams.findIndex((r) => r.name === name);
      for (const [row, v] of rows) fast.setRamRow(ram, row, v);
    }
  }
  let ref = fast.stepResult(tokens[0]!);
  for (let i = 1; i <= target; i++) {
    if (i === target) ref = fast.stepResult(tokens[i]!);
    else fast.step(tokens[i]!);
  }
  const ex = chipExecutor(res, prog, opts);
  const afterSub: Float32Array[] = [];
  const hook = (ev: LayerHookEvent) => {
    if (ev.position !== target) return;
    if (ev.layer === 0) afterSub[0] = ev.residualIn.slice();
    afterSub[2 * ev.layer + 1] = ev.residualMid.slice();
    afterSub[2 * ev.layer + 2] = ev.residualOut.slice();
  };
  const prefillLen = opts.load === 'prompt' ? 1 : Math.min(2, tokens.length);
  if (target < prefillLen) ex.addHook(hook);
  const logits = ex.prefill(tokens.slice(0, prefillLen), { allLogits: true });
  let got = target < prefillLen ? argmax(logits[target]!) : -1;
  for (let i = prefillLen; i <= target; i++) {
    if (i === target) ex.addHook(hook);
    got = ex.decodeArgmax(tokens[i]!);
  }
  return comparePosition(res, ref.values, ref.emitted, afterSub, got, target).mismatches;
}

/** An executor for the compiled chip; with load 'state' (the default) the program's RAM rows are written into its GDN state. */
export function chipExecutor(res: CompileResult, prog: ChipProgram, opts: ExecOptions & { load?: 'state' | 'prompt' }): Executor {
  const ex = new Executor(res.weights, opts);
  if (opts.load === 'prompt') return ex;
  for (const [name, rows] of [['code', prog.code], ['mem', prog.data], ['regs', prog.regs]] as const) {
    const placement = res.rams.find((r) => r.name === name);
    if (!placement) throw new ChipcError('chip.ram', `the compiled chip has no RAM "${name}"`);
    applyRamContents(ex, res, placement, rows);
  }
  return ex;
}

/**
 * The same run on the chip circuit without weights (the oracle one link up the chain), any RAM
 * size, in the FastEvaluator (the IR compiled to JavaScript, equal to the IR interpreter node for
 * node: test/ir-fast.test.ts).
 */
export function runOnInterpreter(prog: ChipProgram, opts: GoldenOptions): RunResult {
  const ir = chipIr(prog.chip);
  const interp = fastEvaluators.get(ir) ?? new FastEvaluator(ir);
  fastEvaluators.set(ir, interp);
  interp.reset();
  if (opts.load !== 'prompt') {
    for (const [name, rows] of [['code', prog.code], ['mem', prog.data], ['regs', prog.regs]] as const) {
      const ram = ir.rams.findIndex((r) => r.name === name);
      for (const [row, v] of rows) interp.setRamRow(ram, row, v);
    }
  }
  const prompt = opts.load === 'prompt' ? prog.loader : [BOS_ID, encodeToken({ kind: 'J', w: (prog.entry - CODE_BASE) / 4 })];
  const t0 = performance.now();
  let next = 0;
  for (const t of prompt) next = interp.step(t)!;
  return follow(prompt, next, (t) => interp.step(t)!, opts, t0);
}

// Building the chip circuit takes seconds (its token fields span 248,197 ids): keep the last few.
const irCache = new Map<string, CircuitIR>();
const fastEvaluators = new WeakMap<CircuitIR, FastEvaluator>();

/** The chip circuit's IR for these options (memoised: the 4 most recent option sets). */
export function chipIr(opts: Required<CpuOptions>): CircuitIR {
  const key = JSON.stringify([opts.codeWords, opts.codeEnd, opts.memWords, opts.tohost]);
  let ir = irCache.get(key);
  if (ir === undefined) {
    ir = buildCircuit(cpuCircuit(opts), 'circuits/rv32im/cpu.ts');
    if (irCache.size >= 4) irCache.delete(irCache.keys().next().value!);
    irCache.set(key, ir);
  }
  return ir;
}


/** Feed each generated token back until HALT, a divergence from the golden stream, or the limit. */
function follow(
  prompt: number[], first: number, step: (t: number) => number,
  opts: GoldenOptions, t0: number,
): RunResult {
  const tokens = [...prompt];
  // The golden stream starts with the 2-token prompt [BOS, J(entry)]; generated tokens line up after it.
  const shift = prompt.length - 2;
  let next = first;
  let instructions = 1;
  let divergence: RunResult['divergence'] = null;
  let exitCode: number | null = null;
  for (let pos = prompt.length; pos < opts.maxTokens + shift; pos++) {
    const g = pos - shift;
    if (opts.golden && g < opts.golden.length && next !== opts.golden[g]) {
      divergence = { position: pos, expected: formatToken(opts.golden[g]!), got: formatToken(next), pc: opts.goldenPc?.[g] ?? null };
      break;
    }
    tokens.push(next);
    opts.onToken?.(next);
    const d = decodeToken(next);
    if (d.kind === 'HALT') {
      exitCode = d.code;
      break;
    }
    if (d.kind === 'E' || d.kind === 'N' || d.kind === 'OUT' || d.kind === 'J') instructions++;
    next = step(next);
  }
  return { tokens, halted: exitCode !== null, exitCode, instructions, divergence, seconds: (performance.now() - t0) / 1000, promptLength: prompt.length };
}

export { goldenTokens };
