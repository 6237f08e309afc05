/**
 * The interpreter on the chip (`chipc repl`, docs/firmware.md "The interpreter"): the bundled
 * interpreter image (fixtures/firmware/interp.elf, built from firmware/interp) loaded once into a
 * chip as a service, then one evaluation per piece of source. An evaluation is one service call
 * (docs/token-protocol.md "v3: re-entry after HALT") whose request words are the source as console
 * input (riscv/console-input.ts):
 *
 *     first, E(p) D(lo) H(hi) per input word, J(entry)      ← fed: the source, as a prompt
 *     OUT(…) … HALT(code)                                   ← generated: the printed answer
 *
 * with first = BOS for the first evaluation and the previous evaluation's last token (its HALT, or
 * TRAP) after it. The interpreter keeps its globals and functions in RAM rows nobody else writes,
 * so later evaluations see earlier definitions. With `check`, each evaluation also runs on the
 * golden emulator (ServiceEmulator) and every generated token is compared with its stream.
 */
import fs from 'node:fs';
import path from 'node:path';
import { inputWrites, type InputArea } from '../../riscv/console-input.ts';
import { BOS_ID, decodeToken, trapCauseName } from '../../riscv/protocol.ts';
import { ChipcError } from '../util/errors.ts';
import { PACKAGE_ROOT } from '../util/package-root.ts';
import { loadChipModel, type ChipModel } from './loaded.ts';
import { checkChipFits, programOf, readChipCheckpoint, type ChipProgram } from './run.ts';
import { chipIr } from './build.ts';
import { defaultChipSizes, describeSizes } from './generic.ts';
import { cachedGenericChip } from './cached.ts';
import { resolveTarget } from '../model/targets.ts';
import { ChipService, ServiceEmulator, requestPrompt, type ServiceEngine } from './service.ts';
import type { ExecOptions } from '../exec/types.ts';
import type { CircuitIR } from '../ir/types.ts';

/** The bundled interpreter image. */
export const INTERPRETER_ELF = path.join(PACKAGE_ROOT, 'fixtures', 'firmware', 'interp.elf');

/** Default token budget of one evaluation. */
export const EVAL_MAX_TOKENS = 5_000_000;

/** What one evaluation did. */
export interface Evaluation {
  /** The interpreter's exit code (0: ok; the interpreter's error code otherwise), or null when it did not halt. */
  exitCode: number | null;
  /** The console bytes the chip generated. */
  console: Uint8Array;
  /** Prompt tokens fed (the source's request) and tokens generated. */
  promptTokens: number;
  generatedTokens: number;
  /** Instructions the golden emulator retired for it (check only; else null). */
  instructions: number | null;
  /** Seconds of feeding and generating. */
  seconds: number;
  /** The TRAP cause when the chip trapped. */
  trap: number | null;
  /** With check: the first generated token that differs from the golden stream. */
  divergence: { index: number; expected: string; got: string } | null;
}

export interface InterpreterOptions extends ExecOptions {
  /** 'weights' (the compiled chip in the reference executor) or 'ir' (the chip circuit, no weights). */
  engine?: ServiceEngine;
  /** The chip circuit, for engine 'ir'. */
  ir?: CircuitIR;
  /** Compare every token with the golden emulator. */
  check?: boolean;
  /** The image's name in messages (default: its file name). */
  label?: string;
}

/**
 * An interpreter image loaded into a chip: `evaluate(source)` feeds the source and generates the
 * answer. `prog` is programOf(the image) for the chip's shape; `res` the chip (for engine 'weights').
 */
export class InterpreterOnChip {
  private readonly chip: ChipService;
  private readonly golden: ServiceEmulator | null;
  private readonly area: InputArea | null;
  private readonly label: string;
  private first = BOS_ID;
  private count = 0;

  constructor(readonly prog: ChipProgram, elf: Uint8Array, res: ChipModel | null, opts: InterpreterOptions = {}) {
    this.label = opts.label ?? 'the interpreter';
    this.area = prog.inputArea;
    if (this.area === null) throw new ChipcError('input.none', `${this.label} has no console input area (symbols __input_area, __input_size): it cannot read source`);
    this.chip = new ChipService(res, prog, { ...opts, engine: opts.engine ?? 'weights' });
    this.golden = opts.check === true ? ServiceEmulator.load(elf, prog.memBytes, prog.codeBytes) : null;
  }

  /** Evaluations so far. */
  get evaluations(): number { return this.count; }


  /**
   * Feed `source` as one evaluation and generate until HALT or TRAP (or maxTokens, or a divergence
   * under check). `onByte` gets each console byte as it is generated. ChipcError input.too-long
   * for source the input area cannot hold.
   */
  evaluate(source: string | Uint8Array, opts: { onByte?: (b: number) => void; maxTokens?: number } = {}): Evaluation {
    if (this.first < 0) throw new ChipcError('repl.stopped', 'the chip stopped in an earlier evaluation (a divergence or no HALT): it cannot evaluate more');
    const bytes = typeof source === 'string' ? new TextEncoder().encode(source) : source;
    const writes = inputWrites(this.area, bytes, this.label);
    let golden: ArrayLike<number> | undefined;
    let instructions: number | null = null;
    let prompt: number[];
    if (this.golden !== null) {
      const call = this.golden.call(writes, { trace: true, maxInstructions: opts.maxTokens ?? EVAL_MAX_TOKENS });
      if (call.prompt[0] !== this.first) throw new Error('InterpreterOnChip: the golden emulator and the chip disagree on the first prompt token');
      golden = call.trace!.tokens;
      instructions = call.instructions;
      prompt = call.prompt;
    } else {
      prompt = requestPrompt(this.first, writes, this.prog.entry, this.prog.memBytes);
    }
    const consoleBytes: number[] = [];
    const r = this.chip.call(prompt, {
      maxTokens: opts.maxTokens ?? EVAL_MAX_TOKENS,
      ...(golden === undefined ? {} : { golden }),
      onToken: (t) => {
        const d = decodeToken(t);
        if (d.kind === 'OUT') {
          consoleBytes.push(d.b);
          opts.onByte?.(d.b);
        }
      },
    });
    this.count++;
    const last = r.generated.at(-1);
    if (r.divergence === null && last !== undefined && (r.exitCode !== null || r.trap !== null)) this.first = last;
    else this.first = -1;
    return {
      exitCode: r.exitCode, console: Uint8Array.from(consoleBytes), promptTokens: prompt.length, generatedTokens: r.generated.length,
      instructions, seconds: r.seconds, trap: r.trap, divergence: r.divergence,
    };
  }


  /** A one-line description of why the chip cannot evaluate more, for messages. */
  static describeStop(e: Evaluation): string {
    if (e.divergence !== null) return `the chip's token ${e.divergence.index} (${e.divergence.got}) differs from the golden stream's (${e.divergence.expected})`;
    if (e.trap !== null) return `the chip trapped: TRAP(${trapCauseName(e.trap)})`;
    return `no HALT within ${e.generatedTokens} tokens`;
  }
}

/** Where `openInterpreter` takes the chip from and how it runs it. */
export interface OpenInterpreterOptions extends InterpreterOptions {
  /** The image (default INTERPRETER_ELF). */
  elfPath?: string;
  /** A chip checkpoint from `chipc cpu` (the chip alone); else the cached generic chip of `target`. */
  model?: string;
  /** Target of the cached chip (default chip-test) and its RAM sizes (default defaultChipSizes). */
  target?: string;
  codeBytes?: number;
  memBytes?: number;
  /** Compile the chip instead of taking it from the chip cache. */
  noCache?: boolean;
  /** Progress lines (a compile on a cache miss). */
  log?: (line: string) => void;
  /** Source about to be evaluated: refused (input.*) before any chip is compiled or loaded when the image cannot take it. */
  source?: string;
}

/**
 * The interpreter (or another image that reads console input) loaded into a chip: a saved
 * checkpoint (`model`), the chip circuit (engine 'ir'), or the cached generic chip of the target.
 * Returns it with a description of the chip for messages. Errors: cli.file for a missing image,
 * cli.model for a merged checkpoint, the chip-fit and cache errors of `chipc run`.
 */
export async function openInterpreter(opts: OpenInterpreterOptions = {}): Promise<{ interp: InterpreterOnChip; where: string }> {
  const file = opts.elfPath ?? INTERPRETER_ELF;
  if (!fs.existsSync(file)) {
    throw new ChipcError('cli.file', opts.elfPath === undefined ? `the bundled interpreter ${file} is missing (build it with firmware/build.sh)` : `${file} does not exist`);
  }
  const elf = fs.readFileSync(file);
  const label = opts.label ?? file;
  const ck = opts.model !== undefined ? readChipCheckpoint(opts.model) : null;
  if (ck !== null && ck.merged) throw new ChipcError('cli.model', `${ck.path}: a merged checkpoint; the interpreter runs on the chip alone (chipc cpu)`);
  const rv32 = ck?.manifest.rv32;
  const target = resolveTarget(opts.target ?? 'chip-test');
  const sizes = defaultChipSizes(target.config);
  const memBytes = opts.memBytes ?? (typeof rv32?.memWords === 'number' ? rv32.memWords * 4 : sizes.memBytes);
  const codeBytes = opts.codeBytes ?? (typeof rv32?.codeWords === 'number' ? rv32.codeWords * 4 : sizes.codeBytes);
  const prog = programOf(elf, { memBytes, codeBytes, label }, ck === null ? target.config : undefined);
  if (opts.source !== undefined) inputWrites(prog.inputArea, new TextEncoder().encode(opts.source), label);
  let res: ChipModel | null = null;
  let where: string;
  if (ck !== null) {
    if (typeof rv32?.memBankWords === 'number') prog.chip.memBankWords = rv32.memBankWords;
    checkChipFits(ck, prog);
    res = loadChipModel(ck.path, prog);
    where = `chip checkpoint ${ck.path}`;
  } else if (opts.engine === 'ir') {
    where = `the chip circuit (IR; ${describeSizes({ codeBytes, memBytes })})`;
  } else {
    const spec = { targetName: target.name, target: target.config, codeBytes, memBytes };
    const c = await cachedGenericChip(spec, {
      noCache: opts.noCache === true,
      log: opts.log,
      onCompile: () => opts.log?.(`chipc: compiling the generic chip (${describeSizes(spec)}) for ${target.name} once; later runs take it from the chip cache`),
    });
    res = c.compiled ?? loadChipModel(c.path, prog);
    where = `generic chip (${describeSizes(spec)}, ${target.name})`;
  }
  const interp = new InterpreterOnChip(prog, elf, res, { ...opts, label, ...(opts.engine === 'ir' ? { ir: chipIr(prog.chip) } : {}) });
  return { interp, where };
}
