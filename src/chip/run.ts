/**
 * Running an RV32 program on the compiled chip (`chipc run`): compile the chip for a target with a
 * code RAM sized to the program, load the program's code into the GDN state (the state-file
 * path), feed the prompt [BOS, J(entry)] and let the model generate until HALT — optionally
 * beside the golden emulator's token trace, stopping at the first divergence.
 */
import { buildCircuit } from '../dsl/load.ts';
import { compileCircuit, type CompileResult } from '../compile.ts';
import type { ModelConfig } from '../model/config.ts';
import { Executor, argmax } from '../exec/executor.ts';
import type { ExecOptions } from '../exec/types.ts';
import { applyRamContents } from '../load/ram-state.ts';
import { ChipcError } from '../util/errors.ts';
import { cpuCircuit, CODE_BASE } from '../../circuits/rv32im/cpu.ts';
import { loadElf } from '../../riscv/elf.ts';
import { goldenTokens } from '../../riscv/golden-trace.ts';
import { BOS_ID, decodeToken, encodeToken, formatToken } from '../../riscv/protocol.ts';
import { Interpreter } from '../ir/interpret.ts';

export interface ChipProgram {
  entry: number;
  /** Code words from CODE_BASE, as 32 bit-values each. */
  code: Map<number, number[]>;
  codeWords: number;
}

/** The code words of an ELF: from CODE_BASE to the end of its last executable segment. */
export function programOf(elf: Uint8Array): ChipProgram {
  const p = loadElf(elf);
  let end = CODE_BASE;
  for (const s of p.image.segments) if (s.flags & 1) end = Math.max(end, s.vaddr + s.filesz);
  const used = Math.max(1, Math.ceil((end - CODE_BASE) / 4));
  let codeWords = 64;
  while (codeWords < used) codeWords *= 2;
  const code = new Map<number, number[]>();
  for (let i = 0; i < used; i++) {
    const wd = p.memory.read32(CODE_BASE + 4 * i) >>> 0;
    code.set(i, Array.from({ length: 32 }, (_, k) => (wd >>> k) & 1));
  }
  return { entry: p.entry, code, codeWords };
}

export function compileChip(codeWords: number, target: ModelConfig): CompileResult {
  return compileCircuit(buildCircuit(cpuCircuit({ codeWords }), 'circuits/rv32im/cpu.ts'), target);
}

export interface GoldenOptions {
  maxTokens: number;
  /** The expected token stream (riscv/golden-trace.ts) and, per token, its instruction's pc. */
  golden?: ArrayLike<number>;
  goldenPc?: ArrayLike<number>;
  onToken?: (t: number) => void;
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
}

export function runOnChip(
  res: CompileResult, prog: ChipProgram, opts: ExecOptions & GoldenOptions,
): RunResult {
  const ex = new Executor(res.weights, opts);
  const placement = res.rams.find((r) => r.name === 'code');
  if (!placement) throw new ChipcError('chip.code', 'the compiled chip has no code RAM');
  applyRamContents(ex, res, placement, prog.code);
  const prompt = [BOS_ID, encodeToken({ kind: 'J', w: (prog.entry - CODE_BASE) / 4 })];
  const t0 = performance.now();
  const first = argmax(ex.prefill(prompt)[0]!);
  return follow(prompt, first, (t) => argmax(ex.decode(t)), opts, t0);
}

/**
 * The same run in the IR interpreter (the oracle one link up the chain): no weights, any code
 * size — for programs whose code does not fit a target's code RAM.
 */
export function runOnInterpreter(
  prog: ChipProgram, opts: GoldenOptions,
): RunResult {
  const ir = buildCircuit(cpuCircuit({ codeWords: prog.codeWords }), 'circuits/rv32im/cpu.ts');
  const interp = new Interpreter(ir);
  const code = ir.rams.findIndex((r) => r.name === 'code');
  for (const [row, v] of prog.code) interp.setRamRow(code, row, v);
  const prompt = [BOS_ID, encodeToken({ kind: 'J', w: (prog.entry - CODE_BASE) / 4 })];
  const t0 = performance.now();
  interp.step(prompt[0]!);
  let next = interp.step(prompt[1]!).emitted!;
  return follow(prompt, next, (t) => interp.step(t).emitted!, opts, t0);
}

/** Feed each generated token back until HALT, a divergence from the golden stream, or the limit. */
function follow(
  prompt: number[], first: number, step: (t: number) => number,
  opts: GoldenOptions, t0: number,
): RunResult {
  const tokens = [...prompt];
  let next = first;
  let instructions = 1;
  let divergence: RunResult['divergence'] = null;
  let exitCode: number | null = null;
  for (let pos = prompt.length; pos < opts.maxTokens; pos++) {
    if (opts.golden && pos < opts.golden.length && next !== opts.golden[pos]) {
      divergence = { position: pos, expected: formatToken(opts.golden[pos]!), got: formatToken(next), pc: opts.goldenPc?.[pos] ?? null };
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
  return { tokens, halted: exitCode !== null, exitCode, instructions, divergence, seconds: (performance.now() - t0) / 1000 };
}

export { goldenTokens };
