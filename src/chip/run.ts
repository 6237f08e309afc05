/**
 * Running an RV32 program on the compiled chip (`chipc run`): the program's image, configuration
 * and prompts for a chip shape (programOf), its image loaded into the RAMs' GDN state (the
 * state-file path) or fed as a loader prompt, the prompt [BOS, J(entry)] and greedy generation
 * until HALT — optionally beside the golden emulator's token trace, stopping at the first
 * divergence. A saved checkpoint of the chip (`chipc run --model`: the chip alone, or merged into
 * a host model with its ids offset, docs/merge.md "Running") is read here too (readChipCheckpoint,
 * checkChipFits). Compiling the chip, writing it and the runs on its circuit are build.ts's: a
 * run of a saved or cached chip does not load the compiler.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ChipModel } from './chip-model.ts';
import { Executor, argmax } from '../exec/executor.ts';
import type { ExecOptions } from '../exec/types.ts';
import { applyRamContents } from '../load/ram-state.ts';
import { ChipcError } from '../util/errors.ts';
import {
  codeBanks, memLayout, memPlace, memBankWordsFor, MEM_LAYOUT, CODE_STORE_WORDS, CONFIG_CODE_END, CONFIG_TOHOST, MEM_BANK_WORDS, VOCAB, type CpuOptions,
} from '../../riscv/chip-shape.ts';
import type { ModelWeights } from '../model/weights.ts';
import { openChipFile, type ChipFile } from '../chipfile/read.ts';
import { MANIFEST_FILE, parseManifestDeferringEmit, readManifestHead, type Manifest } from '../emit/manifest.ts';
import { MERGE_INFO_FILE } from '../merge/plan.ts';
import { loadElf } from '../../riscv/elf.ts';
import { codeEndWords, goldenTokens } from '../../riscv/golden-trace.ts';
import { firstRunInputWrites, inputAreaOf, loaderWordTokens, startPrompt, type InputArea, type MemoryWrite } from '../../riscv/console-input.ts';
import {
  BOS_ID, CODE_BASE, PROTOCOL_VERSION, decodeToken, formatToken, formatTokenAfter, trapCauseName,
} from '../../riscv/protocol.ts';
import type { TargetShape } from '../dsl/index.ts';

export interface ChipProgram {
  entry: number;
  /** Code words from CODE_BASE, as 32 bit-values each (the image's nonzero words below the code RAM's end). */
  code: Map<number, number[]>;
  /** Nonzero words of the whole image (every PT_LOAD segment) from CODE_BASE: the data RAM's contents. */
  data: Map<number, number[]>;
  /** Initial registers: sp (x2) = the top of the data RAM, as the golden emulator resets it. */
  regs: Map<number, number[]>;
  /**
   * The run-time configuration the chip reads (docs/token-protocol.md "Loading by prompt"): the
   * program's code end in words, capped at CODE_STORE_WORDS (stores below it are code stores),
   * and its tohost address (null: none).
   */
  config: { codeEnd: number; tohost: number | null };
  /**
   * The same image as a prompt of loader tokens (docs/token-protocol.md, "Loading by prompt"):
   * BOS, then E(address), D(lo), H(hi) per nonzero word, the two configuration words and sp, then J(entry).
   */
  loader: number[];
  /**
   * The prompt that starts the program once its image is in the chip's state (`--load state`):
   * BOS, the console input's loader tokens, J(entry) — [BOS, J(entry)] without input.
   */
  start: number[];
  /** The console input's words (riscv/console-input.ts), fed at the end of both prompts; the golden emulator gets the same. */
  input: MemoryWrite[];
  /** The program's console input area (its __input_area / __input_size symbols), null without one. */
  inputArea: InputArea | null;
  /** Data RAM size in bytes (the golden emulator must run with the same RAM). */
  memBytes: number;
  /** Code RAM size in bytes (the golden emulator's fetch limit). */
  codeBytes: number;
  /** Where the program's code ends, in words from CODE_BASE (its executable segments; not capped). */
  codeEndWords: number;
  /** The chip shape this program runs on: code RAM rows, data RAM rows, rows per bank. */
  chip: Required<CpuOptions>;
}

/** Default data RAM: 64 KiB from CODE_BASE. */
export const DEFAULT_MEM_BYTES = 64 * 1024;
/** Default code RAM: 16 KiB from CODE_BASE. */
export const DEFAULT_CODE_BYTES = 16 * 1024;

const bitsOfWord = (wd: number) => Array.from({ length: 32 }, (_, k) => (wd >>> k) & 1);

export { memBankWordsFor };

/** Bytes as a short human size (16 KiB, 96 KiB, 1.5 MiB, 300 bytes). */
export function fmtBytes(n: number): string {
  if (n >= 1 << 20 && n % (1 << 18) === 0) return `${n / (1 << 20)} MiB`;
  if (n >= 1024 && n % 256 === 0) return `${n / 1024} KiB`;
  return `${n} bytes`;
}

/** The smallest code RAM size (a power of two ≥ 256 bytes) that holds `bytes`. */
export function codeSizeFor(bytes: number): number {
  let size = 256;
  while (size < bytes) size *= 2;
  return size;
}

export interface ChipShapeOptions {
  /** Data RAM bytes (a multiple of 256, at most 128 KiB); default DEFAULT_MEM_BYTES. */
  memBytes?: number;
  /**
   * Code RAM bytes (a power of two, 256 bytes … 64 KiB); default: the smallest that holds the
   * program's code. `chipc run` passes the generic chip's size (DEFAULT_CODE_BYTES or --code-size).
   */
  codeBytes?: number;
  /** The flags that set the sizes, named in the refusals (e.g. "--code-size", "--mem-size"). */
  flags?: { code: string; mem: string };
  /** The program's file, named at the start of a refusal that is about the program (not a flag). */
  label?: string;
  /** Console input bytes (docs/token-protocol.md "Console input"); ChipcError input.* when the program cannot take them. */
  input?: Uint8Array;
}

/**
 * A program's image, configuration and loader prompt for a chip of the given shape (in banks of
 * what one GDN layer of `target` holds; MEM_BANK_WORDS without a target). Refuses (ChipcError
 * chip.code / chip.mem / chip.tohost) a program whose code does not fit the code RAM or whose
 * image does not fit the data RAM, naming the size it needs and the flag that gives it.
 */
export function programOf(elf: Uint8Array, shape: number | ChipShapeOptions = {}, target?: TargetShape): ChipProgram {
  const o: ChipShapeOptions = typeof shape === 'number' ? { memBytes: shape } : shape;
  const memBytes = o.memBytes ?? DEFAULT_MEM_BYTES;
  const flags = o.flags ?? { code: '--code-size', mem: '--mem-size' };
  checkRamSizes({ memBytes }, flags);
  const about = o.label === undefined ? '' : `${o.label}: `;
  const p = loadElf(elf, {}, o.label);
  let imageEnd = 0;
  for (const s of p.image.segments) {
    if (s.vaddr < CODE_BASE || s.vaddr + s.memsz > CODE_BASE + memBytes) {
      const need = Math.ceil((s.vaddr + s.memsz - CODE_BASE) / 256) * 256;
      throw new ChipcError('chip.mem',
        `${about}segment [0x${s.vaddr.toString(16)}, 0x${(s.vaddr + s.memsz).toString(16)}) does not fit the chip's ${fmtBytes(memBytes)} data RAM ` +
        `[0x${CODE_BASE.toString(16)}, 0x${(CODE_BASE + memBytes).toString(16)})` +
        (s.vaddr >= CODE_BASE && need <= 128 * 1024 ? `; it needs ${flags.mem} ${need} (${fmtBytes(need)}) or more` : '; the chip\'s RAM starts at 0x80000000 and holds at most 128 KiB'));
    }
    imageEnd = Math.max(imageEnd, s.vaddr + s.memsz - CODE_BASE);
  }
  const used = codeEndWords(p);
  const codeBytes = o.codeBytes ?? codeSizeFor(4 * used);
  checkRamSizes({ codeBytes }, flags);
  if (4 * used > codeBytes) {
    throw new ChipcError('chip.code',
      `${about}the program's code ends at 0x${(CODE_BASE + 4 * used).toString(16)} (${fmtBytes(4 * used)} of code); the chip's code RAM holds ${fmtBytes(codeBytes)}: ` +
      `it needs ${flags.code} ${codeSizeFor(4 * used)} (${fmtBytes(codeSizeFor(4 * used))})` + (codeSizeFor(4 * used) > 64 * 1024 ? ', more than a chip can have (64 KiB)' : ''));
  }
  if (p.tohost !== null && (p.tohost < CODE_BASE || p.tohost + 4 > CODE_BASE + memBytes || p.tohost % 4 !== 0)) {
    throw new ChipcError('chip.tohost', `${about}the program's tohost (0x${(p.tohost >>> 0).toString(16)}) is not an aligned word of the data RAM; the chip halts on a store to tohost only there`);
  }
  const codeWords = codeBytes / 4;
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
  const config = { codeEnd: Math.min(used, CODE_STORE_WORDS), tohost: p.tohost };
  // Loader prompt: the address of a word (p < 0x8000), a register (0x8000 + r) or a configuration
  // word (0x8020 + k) — loaderAddressToken —, D(lo), H(hi) per nonzero word (sorted by address),
  // the configuration, sp, then J(entry).
  const loader: number[] = [BOS_ID];
  const put = (p: number, v: number) => loader.push(...loaderWordTokens(p, v));
  for (const [row, wd] of words.sort((x, y) => x[0] - y[0])) put(row, wd);
  put(CONFIG_CODE_END, config.codeEnd);
  put(CONFIG_TOHOST, configTohostWord(config.tohost));
  put(0x8000 + 2, sp);
  const inputArea = inputAreaOf(p.symbols);
  const input = firstRunInputWrites(inputArea, o.input, o.label);
  const start = startPrompt(input, p.entry, memBytes);
  loader.push(...start.slice(1));
  const memBankWords = target === undefined ? MEM_BANK_WORDS : memBankWordsFor(target);
  return { entry: p.entry, code, data, regs, config, loader, start, input, inputArea, memBytes, codeBytes, codeEndWords: used, chip: { codeWords, memWords: memBytes / 4, memBankWords } };
}

/** Refuse (chip.code / chip.mem) a RAM size no chip can have: code a power of two in [256 bytes, 64 KiB], data a multiple of 256 in [256, 128 KiB]. */
export function checkRamSizes(sizes: { codeBytes?: number; memBytes?: number }, flags = { code: '--code-size', mem: '--mem-size' }): void {
  const { codeBytes, memBytes } = sizes;
  if (memBytes !== undefined && (!Number.isInteger(memBytes) || memBytes < 256 || memBytes % 256 !== 0 || memBytes > 128 * 1024)) {
    throw new ChipcError('chip.mem', `data RAM size ${memBytes} is not a multiple of 256 bytes in [256, 128 KiB] (${flags.mem})`);
  }
  if (codeBytes !== undefined && (!Number.isInteger(Math.log2(codeBytes)) || codeBytes < 256 || codeBytes > 64 * 1024)) {
    throw new ChipcError('chip.code', `code RAM size ${codeBytes} is not a power of two in [256 bytes, 64 KiB] (${flags.code})`);
  }
}

/** The tohost configuration word: the address with bit 0 set, or 0 for none. */
export function configTohostWord(tohost: number | null): number {
  return tohost === null ? 0 : (tohost | 1) >>> 0;
}

/**
 * The program's image per RAM of the chip: the code RAM (its banks hold consecutive words), each
 * data-RAM bank ("mem", "mem1", …: memLayout, word w at row w >> shift of bank w mod count) and
 * the register file.
 */
export function chipRamContents(prog: ChipProgram): [name: string, rows: Map<number, number[]>][] {
  const out: [string, Map<number, number[]>][] = [];
  for (const [name, first, n] of codeBanks(prog.chip.codeWords, prog.chip.memBankWords)) {
    const m = new Map<number, number[]>();
    for (const [row, v] of prog.code) if (row >= first && row < first + n) m.set(row - first, v);
    out.push([name, m]);
  }
  const layout = memLayout(prog.chip.memWords, prog.chip.memBankWords);
  const banks = layout.names.map(() => new Map<number, number[]>());
  for (const [w, v] of prog.data) {
    if (w < 0 || w >= prog.chip.memWords) continue; // (programOf keeps the image inside the RAM)
    const [bank, row] = memPlace(layout, w);
    banks[bank]!.set(row, v);
  }
  layout.names.forEach((name, b) => out.push([name, banks[b]!]));
  out.push(['regs', prog.regs]);
  out.push(['codeEnd', new Map([[0, bitsOfWord(prog.config.codeEnd).slice(0, 11)]])]);
  out.push(['tohost', new Map([[0, bitsOfWord(configTohostWord(prog.config.tohost))]])]);
  return out;
}

export interface GoldenOptions {
  maxTokens: number;
  /** The expected token stream (riscv/golden-trace.ts) and, per token, its instruction's pc. */
  golden?: ArrayLike<number>;
  goldenPc?: ArrayLike<number>;
  /** Why the golden stream ends (its emulator's halt): a stream cut by the budget ('limit') ends the run without a divergence. */
  goldenEnd?: { reason: string; message: string };
  onToken?: (t: number) => void;
  /**
   * How the image gets into the chip: 'state' (default) writes the RAMs' GDN state directly and
   * feeds prog.start ([BOS, J(entry)], with the console input's tokens before J); 'prompt' feeds the loader prompt (prog.loader) token by token instead.
   * Both leave bit-identical RAM state (test/rv32-cpu.test.ts) and generate the same stream.
   */
  load?: 'state' | 'prompt';
  /** How the loader prompt is fed (load 'prompt'): default stepwise (PrefillPlan). */
  prefill?: PrefillPlan;
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
  /** The chip stopped with TRAP(cause) (protocol v5) at the instruction at `pc` (from the stream). */
  trap: { cause: number; name: string; pc: number | null } | null;
  /** The golden stream ended for its instruction budget ('limit') and the run stopped there. */
  goldenEnded: boolean;
  /**
   * The system calls other than exit that ran, by the pc of their `ecall` word in the loaded image
   * (ascending): the chip answers each with −38 (ENOSYS) in a0 and does nothing else, so a write
   * (a7 = 64), which the golden emulator performs, prints nothing on the chip.
   */
  systemCalls: { pc: number; count: number }[];
}

/** The ECALL instruction word. */
const ECALL_WORD = 0x00000073;

/** The pcs of the `ecall` words in a program's code image. */
function ecallPcsOf(prog: ChipProgram): Set<number> {
  const pcs = new Set<number>();
  for (const [row, bits] of prog.code) {
    let w = 0;
    for (let k = 0; k < 32; k++) w |= (bits[k]! & 1) << k;
    if (w >>> 0 === ECALL_WORD) pcs.add((CODE_BASE + 4 * row) >>> 0);
  }
  return pcs;
}

export function runOnChip(
  res: ChipModel, prog: ChipProgram, opts: ExecOptions & GoldenOptions,
): RunResult {
  const ex = chipExecutor(res, prog, opts);
  const prompt = opts.load === 'prompt' ? prog.loader : prog.start;
  const t0 = performance.now();
  // The short prompt of a state-loaded run ([BOS, input…, J(entry)]) through the decode path
  // (Executor.prime): the chunked kernel would cost ≈ 0.5 s for it.
  let first: number;
  if (opts.load === 'prompt') first = feedLoaderPrompt(ex, prompt, opts.prefill);
  else {
    ex.prime(prompt.slice(0, -1));
    first = ex.decodeArgmax(prompt[prompt.length - 1]!);
  }
  return follow(prog, prompt, first, (t) => ex.decodeArgmax(t), opts, t0);
}

/**
 * Feed a loader prompt (docs/token-protocol.md "Loading by prompt") and return the argmax after its
 * last token, in the pieces a plan says (default stepwise: a prefill of the first token, then one
 * decode step per token). Any plan leaves the same cache bit for bit: in a loader prompt
 * every RAM row of the chip changes at most once (docs/numerics.md "Chunked prefill"). Shared by
 * runOnChip (load 'prompt') and runOnModel; the ids are the model's (already offset for a merged
 * checkpoint).
 */
export function feedLoaderPrompt(ex: Executor, prompt: readonly number[], plan: PrefillPlan = STEPWISE): number {
  if (prompt.length === 0) throw new ChipcError('chip.prompt', 'the loader prompt is empty');
  if (plan.kind === 'stepwise') {
    // a prefill of the first token, then decode steps: transformers' stepwise feeding, which the
    // layer dumps compare position by position (tools/layer-dump.ts, tools/hf_layers.py)
    let next = argmax(ex.prefill([prompt[0]!])[0]!);
    for (const t of prompt.slice(1)) next = ex.decodeArgmax(t);
    return next;
  }
  let logits: Float32Array | undefined;
  for (const [a, b] of prefillPieces(prompt.length, plan)) logits = ex.extend(prompt.slice(a, b))[0];
  return argmax(logits!);
}

/**
 * How a prompt is fed: 'stepwise' — a one-token prefill, then one decode step per token;
 * 'chunked' — forwards of `size` tokens each (the last one shorter), as an engine with a chunked-
 * prefill token budget does (size ≥ the prompt: the whole prompt in one forward, like
 * `generate()`); 'random' — forwards of random lengths 1 … max from a seeded generator.
 * Every forward of several tokens runs the GDN layers through the chunked kernel from the
 * cached state (Executor.extend).
 */
export type PrefillPlan =
  | { kind: 'stepwise' }
  | { kind: 'chunked'; size: number }
  | { kind: 'random'; seed: number; max: number };

export const STEPWISE: PrefillPlan = { kind: 'stepwise' };

/** Parses `stepwise`, `whole`, `chunked:N`, `random:SEED[:MAX]` (MAX default 2,048). */
export function parsePrefillPlan(s: string): PrefillPlan {
  const bad = () => new ChipcError('cli.prefill', `--prefill must be stepwise, whole, chunked:N (N ≥ 1) or random:SEED[:MAX], not "${s}"`);
  if (s === 'stepwise') return STEPWISE;
  if (s === 'whole') return { kind: 'chunked', size: Number.MAX_SAFE_INTEGER };
  const m = /^chunked:(\d+)$/.exec(s);
  if (m) {
    const size = Number(m[1]);
    if (!Number.isSafeInteger(size) || size < 1) throw bad();
    return { kind: 'chunked', size };
  }
  const r = /^random:(\d+)(?::(\d+))?$/.exec(s);
  if (r) {
    const max = r[2] === undefined ? 2048 : Number(r[2]);
    if (!Number.isSafeInteger(max) || max < 1) throw bad();
    return { kind: 'random', seed: Number(r[1]), max };
  }
  throw bad();
}

export function prefillPlanName(p: PrefillPlan): string {
  if (p.kind === 'stepwise') return 'stepwise';
  if (p.kind === 'chunked') return p.size === Number.MAX_SAFE_INTEGER ? 'whole' : `chunked:${p.size}`;
  return `random:${p.seed}:${p.max}`;
}

/** The [start, end) pieces a prompt of n tokens is fed in under a plan. */
export function prefillPieces(n: number, plan: PrefillPlan): [number, number][] {
  const out: [number, number][] = [];
  if (plan.kind === 'stepwise') {
    for (let i = 0; i < n; i++) out.push([i, i + 1]);
    return out;
  }
  // mulberry32: a small seeded generator, the same split on every machine
  let st = plan.kind === 'random' ? plan.seed >>> 0 : 0;
  const rnd = () => {
    st = (st + 0x6d2b79f5) >>> 0;
    let x = st;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  for (let a = 0; a < n;) {
    const len = plan.kind === 'chunked' ? plan.size : 1 + Math.floor(rnd() * plan.max);
    const b = Math.min(n, a + len);
    out.push([a, b]);
    a = b;
  }
  return out;
}

/**
 * Run a program on a loaded checkpoint of the chip: the chip alone (idOffset 0) or merged into a
 * host model, where chip token t is model id idOffset + t (docs/merge.md). Feeds prog.loader with
 * every id shifted by idOffset (feedLoaderPrompt), then decodes greedily, mapping each generated
 * id back to a chip token (id − idOffset). An id below idOffset is a host text token: the host's
 * token won the argmax; an id at or past idOffset + the chip's alphabet is a padding row. Either
 * ends the run with a divergence naming it (RunResult.divergence, also without a golden stream).
 * RunResult.tokens are chip tokens (the prompt unshifted, then the generated chip tokens).
 */
export function runOnModel(
  weights: ModelWeights, prog: ChipProgram, opts: ExecOptions & GoldenOptions & { idOffset?: number },
): RunResult {
  const off = opts.idOffset ?? 0;
  if (!Number.isSafeInteger(off) || off < 0) throw new ChipcError('chip.offset', `the chip id offset must be a non-negative integer, not ${off}`);
  if (weights.config.vocabSize < off + VOCAB) {
    throw new ChipcError('chip.vocab', `the model's vocabulary (${weights.config.vocabSize} ids) cannot hold the chip's ${VOCAB} token ids from id ${off}`);
  }
  const ex = new Executor(weights, opts);
  const t0 = performance.now();
  const first = feedLoaderPrompt(ex, prog.loader.map((t) => t + off), opts.prefill);
  return follow(prog, prog.loader, first - off, (t) => ex.decodeArgmax(t + off) - off, opts, t0, off);
}

/** An executor for the compiled chip; with load 'state' (the default) the program's RAM rows are written into its GDN state. */
export function chipExecutor(res: ChipModel, prog: ChipProgram, opts: ExecOptions & { load?: 'state' | 'prompt' }): Executor {
  const ex = new Executor(res.weights, opts);
  if (opts.load === 'prompt') return ex;
  for (const [name, rows] of chipRamContents(prog)) {
    const placement = res.rams.find((r) => r.name === name);
    if (!placement) throw new ChipcError('chip.ram', `the compiled chip has no RAM "${name}"`);
    applyRamContents(ex, res, placement, rows);
  }
  return ex;
}

/**
 * Feed each generated token back until HALT or TRAP, a divergence from the golden stream, its end, or
 * the limit (shared with build.ts's runOnInterpreter). `prompt` is prog's start or loader prompt.
 */
export function follow(
  prog: ChipProgram, prompt: number[], first: number, step: (t: number) => number,
  opts: GoldenOptions, t0: number, idOffset = 0,
): RunResult {
  const tokens = [...prompt];
  // The golden stream starts with the start prompt [BOS, input…, J(entry)]; generated tokens line
  // up after it.
  const shift = prompt.length - prog.start.length;
  const ecallPcs = ecallPcsOf(prog);
  const systemCalls = new Map<number, number>();
  let next = first;
  let instructions = 1;
  let divergence: RunResult['divergence'] = null;
  let exitCode: number | null = null;
  let trap: RunResult['trap'] = null;
  let goldenEnded = false;
  // The pc of the instruction the next generated token belongs to: J(w) starts CODE_BASE + 4·w,
  // E / N / OUT(j ≥ 1) start base + 4·j; the other kinds re-execute it.
  let base = 0;
  let pc: number | null = null;
  const fed = (t: number) => {
    const d = decodeToken(t);
    if (d.kind === 'J') { base = CODE_BASE + 4 * d.w; pc = base; }
    else if ((d.kind === 'E' || d.kind === 'N' || d.kind === 'OUT') && d.j >= 1) pc = (base + 4 * d.j) >>> 0;
  };
  fed(prompt[prompt.length - 1]!);
  for (let pos = prompt.length; pos < opts.maxTokens + shift; pos++) {
    const g = pos - shift;
    // `next` is a chip token; outside the chip's alphabet it was a host id or a padding row of a merged model.
    if (next < 0 || next >= VOCAB) {
      const id = next + idOffset;
      divergence = {
        position: pos,
        expected: opts.golden && g < opts.golden.length ? formatToken(opts.golden[g]!) : 'a chip token',
        got: next < 0 ? `host token id ${id} (the host's token won)` : `id ${id}, outside the chip's ${VOCAB}-token alphabet (a padding row)`,
        pc: opts.goldenPc?.[g] ?? null,
      };
      break;
    }
    if (opts.golden && g >= opts.golden.length) {
      // The golden stream ended without HALT or TRAP: its instruction budget ran out (not a divergence),
      // or it stopped where the chip goes on — any token past its end is a divergence.
      if (opts.goldenEnd?.reason === 'limit') { goldenEnded = true; break; }
      divergence = {
        position: pos,
        expected: `the end of the stream (the golden emulator stopped: ${opts.goldenEnd?.message ?? 'no more tokens'})`,
        got: formatToken(next),
        pc,
      };
      break;
    }
    if (opts.golden && next !== opts.golden[g]) {
      // (both streams agree up to here: after a D, each token is shown with the word the pair carries)
      const prev = tokens[tokens.length - 1] ?? null;
      divergence = {
        position: pos, expected: formatTokenAfter(opts.golden[g]!, prev), got: formatTokenAfter(next, prev), pc: opts.goldenPc?.[g] ?? null,
      };
      break;
    }
    tokens.push(next);
    opts.onToken?.(next);
    const d = decodeToken(next);
    if (d.kind === 'HALT') {
      exitCode = d.code;
      break;
    }
    if (d.kind === 'TRAP') {
      trap = { cause: d.cause, name: trapCauseName(d.cause), pc };
      break;
    }
    if (d.kind === 'E' || d.kind === 'N' || d.kind === 'OUT' || d.kind === 'J') instructions++;
    // An ecall that is not exit commits its result, −38, by E or (at the window end) K.
    if ((d.kind === 'E' || d.kind === 'K') && pc !== null && ecallPcs.has(pc)) systemCalls.set(pc, (systemCalls.get(pc) ?? 0) + 1);
    fed(next);
    next = step(next);
  }
  return {
    tokens, halted: exitCode !== null, exitCode, trap, goldenEnded, instructions, divergence,
    seconds: (performance.now() - t0) / 1000, promptLength: prompt.length,
    systemCalls: [...systemCalls].sort((a, b) => a[0] - b[0]).map(([pc, count]) => ({ pc, count })),
  };
}

export { goldenTokens };

/**
 * The manifest of an RV32 chip checkpoint (`chipc cpu`, `chipc run --emit`, `chipc store chip`):
 * the compile manifest plus `rv32`, the chip's shape — code RAM rows, data RAM rows, rows per bank
 * —, `generic: true` (no program-specific constant: any program that fits runs on it) and the
 * token protocol it speaks (`protocol`, PROTOCOL_VERSION; absent in chips of protocol v5 and before).
 */
export type RunManifest = Manifest & {
  rv32?: Required<CpuOptions> & { generic?: boolean; protocol?: string; codeEnd?: number; tohost?: number | null; memLayout?: string };
};

/** What `chipc run --model` needs to know about a checkpoint before loading its tensors. */
export interface ChipCheckpoint {
  path: string;
  /** Chip token t is model id idOffset + t: 0 for the chip alone, the host's vocab_size when merged. */
  idOffset: number;
  merged: boolean;
  vocabSize: number;
  manifest: RunManifest;
}

/** The JSON object `produce` parses: ChipcError `run.model` naming `label` when it is not valid JSON or not an object. */
function jsonObject(label: string, produce: () => unknown): Record<string, unknown> {
  let j: unknown;
  try {
    j = produce();
  } catch (e) {
    if (e instanceof ChipcError) throw e;
    throw new ChipcError('run.model', `${label} is not valid JSON: ${(e as Error).message}`, { cause: e });
  }
  if (j === null || typeof j !== 'object' || Array.isArray(j)) throw new ChipcError('run.model', `${label} is not a JSON object`);
  return j as Record<string, unknown>;
}

function parseJson(bytes: Uint8Array | string, label: string, parse: (text: string) => unknown = JSON.parse): Record<string, unknown> {
  return jsonObject(label, () => parse(typeof bytes === 'string' ? bytes : new TextDecoder().decode(bytes)));
}

/**
 * Read a checkpoint's config.json, chipc-manifest.json and (merged) chipc-merge.json — a directory
 * or a `.chip` file — without loading any tensor. ChipcError: missing path (checkpoint.not-found), no
 * config (target.config), no chip manifest or disagreeing merge records (run.model). `open`: the
 * `.chip` file at `p` already open (read, left open), so that a caller loading its weights as well
 * opens and validates it once.
 */
export function readChipCheckpoint(p: string, open?: ChipFile): ChipCheckpoint {
  const st = open === undefined ? fs.statSync(p, { throwIfNoEntry: false }) : undefined;
  if (open === undefined && st === undefined) throw new ChipcError('checkpoint.not-found', `${p} does not exist`);
  const files = new Map<string, Uint8Array | string>();
  const wanted = ['config.json', MERGE_INFO_FILE];
  // a .chip's manifest is read up to its emit rows (readManifestHead), which are read again from
  // the file only if asked for
  let chipManifest: Record<string, unknown> | undefined;
  const fromChip = (chip: ChipFile) => {
    for (const f of wanted) if (chip.hasFile(f)) files.set(f, chip.readFile(f));
    if (!chip.hasFile(MANIFEST_FILE)) return;
    const label = `${p}: ${MANIFEST_FILE}`;
    chipManifest = jsonObject(label, () => readManifestHead(chip.readFilePieces(MANIFEST_FILE), () => {
      const again = openChipFile(p);
      try {
        return again.readFile(MANIFEST_FILE);
      } finally {
        again.close();
      }
    }, label));
  };
  if (open !== undefined) {
    fromChip(open);
  } else if (st!.isFile()) {
    const chip = openChipFile(p);
    try {
      fromChip(chip);
    } finally {
      chip.close();
    }
  } else {
    wanted.push(MANIFEST_FILE);
    for (const f of wanted) {
      const fp = path.join(p, f);
      if (fs.existsSync(fp)) files.set(f, fs.readFileSync(fp, 'utf8'));
    }
  }
  const cfgBytes = files.get('config.json');
  if (cfgBytes === undefined) throw new ChipcError('target.config', `${p}: no config.json`);
  const cfg = parseJson(cfgBytes, `${p}: config.json`);
  const vocabSize = cfg['vocab_size'];
  if (typeof vocabSize !== 'number' || !Number.isSafeInteger(vocabSize) || vocabSize < 1) {
    throw new ChipcError('target.config', `${p}: config.json vocab_size must be a positive integer`);
  }
  const m = files.get(MANIFEST_FILE);
  if (m === undefined && chipManifest === undefined) {
    throw new ChipcError('run.model',
      `${p} has no ${MANIFEST_FILE}: it is not a compiled chip (or a merge of one); make the chip for this program with \`chipc run FILE.elf --emit DIR\``);
  }
  // (the emit rows, most of the text, are parsed only if read: running a chip does not)
  const manifest = (chipManifest
    ?? parseJson(m!, `${p}: ${MANIFEST_FILE}`, (text) => parseManifestDeferringEmit(text, `${p}: ${MANIFEST_FILE}`))) as unknown as RunManifest;
  // The id offset: chipc-merge.json and config.json's chipc_merge block (both written by chipc merge) must agree.
  const offsets: number[] = [];
  const offsetOf = (rec: unknown, label: string) => {
    const off = (rec as { vocab?: { chipIdOffset?: unknown } } | null)?.vocab?.chipIdOffset;
    if (typeof off !== 'number' || !Number.isSafeInteger(off) || off < 0) {
      throw new ChipcError('run.model', `${p}: ${label} has no valid vocab.chipIdOffset (got ${JSON.stringify(off)})`);
    }
    offsets.push(off);
  };
  const info = files.get(MERGE_INFO_FILE);
  if (info !== undefined) offsetOf(parseJson(info, `${p}: ${MERGE_INFO_FILE}`), MERGE_INFO_FILE);
  if (cfg['chipc_merge'] !== undefined) offsetOf(cfg['chipc_merge'], 'config.json chipc_merge');
  if (offsets.length === 2 && offsets[0] !== offsets[1]) {
    throw new ChipcError('run.model', `${p}: ${MERGE_INFO_FILE} says chip ids start at ${offsets[0]}, config.json chipc_merge says ${offsets[1]}`);
  }
  return { path: p, idOffset: offsets[0] ?? 0, merged: offsets.length > 0, vocabSize, manifest };
}

/**
 * Refuse (ChipcError, code run.model, run.mem or run.code) a checkpoint whose chip cannot run `prog`:
 * not the RV32 chip (circuit name, alphabet), no recorded shape or a per-program chip of an older
 * chipc, a data RAM of another size than the run's, a code RAM too small for the program, or a
 * vocabulary that cannot hold the chip's ids after the offset.
 */
export function checkChipFits(ck: ChipCheckpoint, prog: ChipProgram): void {
  const m = ck.manifest;
  const remedy = 'make one with `chipc cpu -o OUT` (and merge that)';
  if (m.circuit !== 'rv32-v1') throw new ChipcError('run.model', `${ck.path}: the chip is circuit "${String(m.circuit)}", not the RV32 chip (rv32-v1)`);
  if (m.vocab?.circuit !== VOCAB) {
    throw new ChipcError('run.model', `${ck.path}: the chip's alphabet has ${String(m.vocab?.circuit)} tokens; the RV32 chip (protocol ${PROTOCOL_VERSION}) has ${VOCAB}; ${remedy}`);
  }
  if (ck.vocabSize < ck.idOffset + VOCAB) {
    throw new ChipcError('run.model', `${ck.path}: vocab_size ${ck.vocabSize} cannot hold the chip's ${VOCAB} ids from id ${ck.idOffset}`);
  }
  const have = m.rv32;
  if (have === undefined || typeof have !== 'object') {
    throw new ChipcError('run.model',
      `${ck.path}: the chip's manifest does not record its RAM shape (\`chipc compile src/cpu/cpu.ts\` compiles the default export without it); ${remedy}`);
  }
  if (have.generic !== true) {
    throw new ChipcError('run.model', `${ck.path}: the chip was compiled for one program by an older chipc (its code end and tohost are built in); ${remedy}`);
  }
  if (have.protocol !== PROTOCOL_VERSION) {
    // Its tokens mean other values (v6 moved pointers into the wide form, v7 drops a short
    // division's H): the golden stream, --trace
    // and the words a run reports would not be the chip's.
    const speaks = typeof have.protocol === 'string' ? `token protocol ${have.protocol}` : 'token protocol v5 or older (its manifest records none)';
    throw new ChipcError('run.model', `${ck.path}: the chip speaks ${speaks}, this chipc ${PROTOCOL_VERSION} (docs/token-protocol.md); ${remedy}`);
  }
  const need = prog.chip;
  if (have.memWords !== need.memWords) {
    throw new ChipcError('run.mem',
      `${ck.path}: the chip's data RAM is ${fmtBytes(have.memWords * 4)}, the run asks for ${fmtBytes(need.memWords * 4)} (--mem-size); ` +
      `pass --mem-size ${have.memWords * 4} or ${remedy}`);
  }
  if (typeof have.codeWords !== 'number' || 4 * have.codeWords < 4 * prog.codeEndWords) {
    const size = codeSizeFor(4 * prog.codeEndWords);
    throw new ChipcError('run.code', `${ck.path}: the chip's code RAM is ${fmtBytes(4 * (have.codeWords ?? 0))}; the program's code ends at ` +
      `${fmtBytes(4 * prog.codeEndWords)}: make a chip with \`chipc cpu --code-size ${size}\``);
  }
  if ((have.memBankWords ?? MEM_BANK_WORDS) !== need.memBankWords) {
    throw new ChipcError('run.model', `${ck.path}: the chip's RAM banks hold ${have.memBankWords ?? MEM_BANK_WORDS} rows, the run's ${need.memBankWords}; ${remedy}`);
  }
  if (have.memLayout !== MEM_LAYOUT) {
    // Its data RAM is one bank or banks of consecutive words: the program's image would land in the wrong rows.
    throw new ChipcError('run.model', `${ck.path}: the chip keeps its data RAM in banks of consecutive words (an older chipc), this chipc interleaves it over four banks; ${remedy}`);
  }
  // The program runs with the chip's code RAM: its image fills it (words below its size) and the
  // golden emulator's fetch limit is its size.
  fitCodeRam(prog, have.codeWords);
}

/** Give `prog` a code RAM of `codeWords` words (≥ its code): the image's words below it and the fetch limit. */
export function fitCodeRam(prog: ChipProgram, codeWords: number): void {
  if (codeWords < prog.codeEndWords) throw new ChipcError('run.code', `a code RAM of ${codeWords} words cannot hold the program's ${prog.codeEndWords}`);
  prog.chip.codeWords = codeWords;
  prog.codeBytes = 4 * codeWords;
  prog.code = new Map([...prog.data].filter(([row]) => row < codeWords));
}
