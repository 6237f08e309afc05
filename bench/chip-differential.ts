/**
 * The chip's long differential benchmark: RV32 programs run through the chip circuit
 * (src/cpu/cpu.ts) in the fast IR evaluator (src/ir/evaluate-fast.ts), teacher-forced on
 * the golden emulator's token stream (riscv/golden-trace.ts); at every position the chip's emitted
 * token must equal the stream's next token.
 *
 *   npx tsx bench/chip-differential.ts [--instructions N] [--seed S] [--no-fixtures] [--json-only]
 *
 * Programs: every fixtures/firmware/*.elf (not .linux.elf) and fixtures/isa/*.elf — skipped, and
 * reported, are programs whose golden trace throws `protocol.unsupported` (ecall write, …) — then
 * random RV32IM + Zba loop programs (division included; half-word accesses at offset 1 of a word;
 * their data area lies in the code segment, so their stores are code stores) built with
 * riscv/asm.ts from `--seed` until the total instruction count reaches `--instructions` (default
 * 20,000,000); each random image is padded to 768 words so they share one chip shape.
 *
 * Prints per program and in total: positions, instructions, mismatches, positions/s and
 * instructions/s of the chip evaluation, and the golden emulator's own instructions/s (its token
 * trace, and a plain run without trace) in the same run; one JSON line at the end. A mismatch
 * prints the program, position, expected / got token and the pc of its instruction. Exit status
 * 1 on any mismatch, 2 on bad arguments.
 */
import fs from 'node:fs';
import path from 'node:path';
import { buildCircuit } from '../src/dsl/load.ts';
import { FastEvaluator } from '../src/ir/evaluate-fast.ts';
import type { CircuitIR } from '../src/ir/types.ts';
import { programOf, type ChipProgram } from '../src/chip/run.ts';
import { ChipcError } from '../src/util/errors.ts';
import { cpuCircuit, CONSOLE_ADDR } from '../src/cpu/cpu.ts';
import { codeEndWords, goldenTokens, type GoldenTrace } from '../riscv/golden-trace.ts';
import { formatToken } from '../riscv/protocol.ts';
import { assembleElf } from '../riscv/asm.ts';
import { cpuForProgram, loadElf } from '../riscv/elf.ts';

function usage(msg: string): never {
  console.error(`chip-differential: ${msg}\nusage: npx tsx bench/chip-differential.ts [--instructions N] [--seed S] [--no-fixtures] [--json-only]`);
  process.exit(2);
}

const argv = process.argv.slice(2);
let targetInstructions = 20_000_000;
let seed = 1;
let fixtures = true;
let quiet = false;
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--instructions') targetInstructions = Number(argv[++i]);
  else if (a === '--seed') seed = Number(argv[++i]);
  else if (a === '--no-fixtures') fixtures = false;
  else if (a === '--json-only') quiet = true;
  else usage(`unknown argument ${a}`);
}
if (!Number.isSafeInteger(targetInstructions) || targetInstructions < 0) usage('--instructions must be a non-negative integer');
if (!Number.isSafeInteger(seed) || seed < 0 || seed > 0xffffffff) usage('--seed must be an integer in [0, 2^32)');

const log = (s: string): void => { if (!quiet) console.log(s); };

// ── the chip, one evaluator per chip shape ───────────────────────────────────────────────────
interface Chip { ir: CircuitIR; fe: FastEvaluator; ram: { code: number; mem: number; regs: number } }
const chips = new Map<string, Chip>();
let buildSeconds = 0;
function chipFor(prog: ChipProgram): Chip {
  const key = JSON.stringify(prog.chip);
  let c = chips.get(key);
  if (!c) {
    const t0 = performance.now();
    const ir = buildCircuit(cpuCircuit(prog.chip), 'src/cpu/cpu.ts');
    const fe = new FastEvaluator(ir);
    buildSeconds += (performance.now() - t0) / 1000;
    const idx = (name: string): number => {
      const i = ir.rams.findIndex((r) => r.name === name);
      if (i < 0) throw new ChipcError('chip.ram', `the chip circuit has no RAM "${name}"`);
      return i;
    };
    c = { ir, fe, ram: { code: idx('code'), mem: idx('mem'), regs: idx('regs') } };
    // Keep the two most recent chips (each evaluator holds ~100 MB).
    while (chips.size >= 2) chips.delete(chips.keys().next().value!);
    chips.set(key, c);
    log(`  (built chip ${key}: ${ir.nodes.length} nodes, ${fe.stats.checks} range checks, emit ${fe.emitMode}, ${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  }
  return c;
}

// ── totals ───────────────────────────────────────────────────────────────────────────────────
const totals = { programs: 0, positions: 0, instructions: 0, mismatches: 0, chipSeconds: 0, goldenSeconds: 0, emuSeconds: 0, emuInstructions: 0 };
const skipped: { program: string; reason: string }[] = [];
const MAX_PRINTED = 5;


/** Golden trace and chip evaluation of one program; returns false when it was skipped. */
function runProgram(name: string, elf: Uint8Array, maxInstructions: number): boolean {
  let prog: ChipProgram;
  let trace: GoldenTrace;
  let g0 = performance.now();
  try {
    prog = programOf(elf);
    g0 = performance.now();
    trace = goldenTokens(elf, { mem: { size: prog.memBytes }, maxInstructions });
  } catch (e) {
    if (e instanceof ChipcError && (e.code === 'protocol.unsupported' || e.code === 'chip.mem' || e.code === 'protocol.code-range')) {
      skipped.push({ program: name, reason: `${e.code}: ${e.message}` });
      log(`${name}: skipped (${e.code}: ${e.message})`);
      return false;
    }
    throw e;
  }
  const goldenS = (performance.now() - g0) / 1000;
  // The golden emulator alone, without the token trace, for its raw speed (and its final memory).
  const e0 = performance.now();
  const plainProgram = loadElf(elf, { size: prog.memBytes });
  const plain = cpuForProgram(plainProgram).run({ maxInstructions });
  const emuS = (performance.now() - e0) / 1000;

  const chip = chipFor(prog);
  const { fe } = chip;
  fe.reset();
  for (const [ram, rows] of [[chip.ram.code, prog.code], [chip.ram.mem, prog.data], [chip.ram.regs, prog.regs]] as const) {
    for (const [row, v] of rows) fe.setRamRow(ram, row, v);
  }
  const tokens = trace.tokens;
  let mismatches = 0;
  const c0 = performance.now();
  // Position 0 is BOS and position 1 the driver's J(entry); from position 1 on, each emitted
  // token must be the stream's next one (the last token, HALT or the budget's end, is not fed).
  fe.step(tokens[0]!);
  for (let p = 1; p + 1 < tokens.length; p++) {
    const got = fe.step(tokens[p]!);
    if (got !== tokens[p + 1]) {
      mismatches++;
      if (mismatches <= MAX_PRINTED) {
        console.log(`MISMATCH ${name} position ${p + 1}: expected ${formatToken(tokens[p + 1]!)}, got ${got === null ? 'nothing' : safeFormat(got)} ` +
          `(instruction at pc 0x${trace.tokenPc[p + 1]!.toString(16)})`);
      }
    }
  }
  const chipS = (performance.now() - c0) / 1000;
  const positions = Math.max(0, tokens.length - 1);
  const instructions = trace.summary.instructions;
  totals.programs++;
  totals.positions += positions;
  totals.instructions += instructions;
  totals.mismatches += mismatches;
  totals.chipSeconds += chipS;
  totals.goldenSeconds += goldenS;
  totals.emuSeconds += emuS;
  totals.emuInstructions += plain.instret;
  log(`${name}: ${instructions} instructions, ${positions} positions, ${mismatches} mismatches, ` +
    `${(positions / chipS).toFixed(0)} positions/s, halt ${trace.halt.reason}${trace.halt.exitCode !== null ? ` (${trace.halt.exitCode})` : ''}`);
  return true;
}

function safeFormat(t: number): string {
  try {
    return formatToken(t);
  } catch {
    return `id ${t}`;
  }
}

// ── random programs ──────────────────────────────────────────────────────────────────────────
/** xorshift32: a small deterministic generator (the benchmark must be reproducible from --seed). */
function rng(s: number): () => number {
  let x = (s ^ 0x9e3779b9) >>> 0 || 1;
  return () => {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    return x;
  };
}

const POOL = ['t0', 't1', 't2', 's0', 's1', 'a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6', 's2', 's3'];
const R_OPS = ['add', 'sub', 'sll', 'slt', 'sltu', 'xor', 'srl', 'sra', 'or', 'and', 'mul', 'mulh', 'mulhsu', 'mulhu', 'div', 'divu', 'rem', 'remu', 'sh1add', 'sh2add', 'sh3add'];
const I_OPS = ['addi', 'slti', 'sltiu', 'xori', 'ori', 'andi'];
const SHIFTS = ['slli', 'srli', 'srai'];
const LOADS: [string, number][] = [['lb', 1], ['lbu', 1], ['lh', 2], ['lhu', 2], ['lw', 4]];
const STORES: [string, number][] = [['sb', 1], ['sh', 2], ['sw', 4]];
const BRANCHES = ['beq', 'bne', 'blt', 'bge', 'bltu', 'bgeu'];
const DATA_BYTES = 256;
/** Every random program's image is padded to this many words (one chip shape for all of them). */
const RANDOM_IMAGE_WORDS = 768;

/**
 * A random loop program: registers and a data area initialised from the generator, a body of
 * ALU / shift / lui / auipc / MUL / Zba / aligned load and store / console store / forward
 * branch instructions repeated `iterations` times (s10 counts), then exit with the low byte of
 * the xor of the registers. s11 holds the data base, s9 the console address.
 */
function randomProgram(next: () => number, bodyLen: number, iterations: number): string {
  const pick = <T>(xs: readonly T[]): T => xs[next() % xs.length]!;
  const reg = (): string => (next() % 12 === 0 ? 'zero' : pick(POOL));
  const int32 = (): number => {
    const k = next() % 8;
    return k === 0 ? pick([0, 1, -1, 0x7fffffff, -0x80000000, 31, 32, 0xffff]) : next() | 0;
  };
  const body: string[] = [];
  for (let i = 0; i < bodyLen; i++) {
    const k = next() % 23;
    let s: string;
    if (k < 8) s = `${pick(R_OPS)} ${reg()}, ${reg()}, ${reg()}`;
    else if (k < 11) s = `${pick(I_OPS)} ${reg()}, ${reg()}, ${(next() % 4096) - 2048}`;
    else if (k < 13) s = `${pick(SHIFTS)} ${reg()}, ${reg()}, ${next() % 32}`;
    else if (k < 14) s = `${pick(['lui', 'auipc'])} ${reg()}, ${next() % 0x100000}`;
    else if (k < 15) s = `li ${reg()}, ${int32()}`;
    else if (k < 19) {
      const [op, n] = pick(k < 17 ? LOADS : STORES);
      // Half-words also at offset 1 of a word (misaligned, within the word).
      const off = n === 2 && next() % 4 === 0 ? 4 * (next() % (DATA_BYTES / 4)) + 1 : n * (next() % (DATA_BYTES / n));
      s = `${op} ${reg()}, ${off}(s11)`;
    }
    else if (k < 20) s = `sb ${reg()}, 0(s9)`;
    else s = `${pick(BRANCHES)} ${reg()}, ${reg()}, L${Math.min(bodyLen, i + 2 + (next() % 3))}`;
    body.push(`L${i}: ${s}`);
  }
  const init = POOL.map((r) => `  li ${r}, ${int32()}`);
  const data = Array.from({ length: DATA_BYTES / 4 }, () => next() | 0);
  return [
    '_start:',
    '  la s11, data',
    `  li s9, ${CONSOLE_ADDR}`,
    `  li s10, ${iterations}`,
    ...init,
    'loop:',
    ...body,
    `L${bodyLen}:`,
    '  addi s10, s10, -1',
    '  bnez s10, loop',
    '  li a0, 0',
    ...POOL.map((r) => `  xor a0, a0, ${r}`),
    '  andi a0, a0, 255',
    '  li a7, 93',
    '  ecall',
    '.align 2',
    `data: .word ${data.join(', ')}`,
  ].join('\n');
}

// ── main ─────────────────────────────────────────────────────────────────────────────────────
const t0 = performance.now();
const date = new Date().toISOString();
if (fixtures) {
  const files: string[] = [];
  for (const dir of ['fixtures/firmware', 'fixtures/isa']) {
    for (const f of fs.readdirSync(dir).sort()) if (f.endsWith('.elf') && !f.endsWith('.linux.elf')) files.push(path.join(dir, f));
  }
  for (const f of files) runProgram(f, fs.readFileSync(f), 10_000_000);
}
const fixtureInstructions = totals.instructions;
const next = rng(seed);
let randomPrograms = 0;
while (totals.instructions < targetInstructions) {
  const bodyLen = 20 + (next() % 100);
  const left = targetInstructions - totals.instructions;
  // ~100k–300k instructions a program (less for the last), ≈ bodyLen + 2 instructions per iteration.
  const want = Math.min(left, 100_000 + (next() % 200_000));
  const iterations = Math.max(1, Math.ceil(want / (bodyLen + 2)));
  const name = `random#${randomPrograms} (seed ${seed}, body ${bodyLen}, ${iterations} iterations)`;
  // Pad every random program's image to the same size, so that they share one chip shape
  // (the chip is compiled for the program's code size: its code stores reach that code).
  const src = randomProgram(next, bodyLen, iterations);
  const bytes = assembleElf(src).elf;
  const pad = RANDOM_IMAGE_WORDS - codeEndWords(loadElf(bytes));
  if (pad < 0) usage(`a random program outgrew ${RANDOM_IMAGE_WORDS} words`);
  const { elf } = assembleElf(pad > 0 ? `${src}\npadding: .word ${new Array(pad).fill(0).join(', ')}` : src);
  randomPrograms++;
  if (!runProgram(name, elf, 10_000_000) && randomPrograms > 3 * (totals.programs + 1)) {
    usage('the random programs keep being skipped; the generator no longer fits the chip');
  }
}
const wallS = (performance.now() - t0) / 1000;
const summary = {
  bench: 'chip-differential',
  date,
  seed,
  targetInstructions,
  programs: totals.programs,
  randomPrograms,
  fixtureInstructions,
  skipped,
  positions: totals.positions,
  instructions: totals.instructions,
  mismatches: totals.mismatches,
  chipSeconds: +totals.chipSeconds.toFixed(2),
  positionsPerSecond: Math.round(totals.positions / totals.chipSeconds),
  instructionsPerSecond: Math.round(totals.instructions / totals.chipSeconds),
  goldenTraceInstructionsPerSecond: Math.round(totals.instructions / totals.goldenSeconds),
  emulatorInstructionsPerSecond: Math.round(totals.emuInstructions / totals.emuSeconds),
  buildSeconds: +buildSeconds.toFixed(2),
  wallSeconds: +wallS.toFixed(1),
};
log(`\ntotal: ${totals.programs} programs (${randomPrograms} random, ${skipped.length} skipped), ${totals.instructions} instructions, ` +
  `${totals.positions} positions, ${totals.mismatches} mismatches`);
log(`chip (fast IR evaluator): ${summary.positionsPerSecond} positions/s, ${summary.instructionsPerSecond} instructions/s; ` +
  `golden emulator: ${summary.goldenTraceInstructionsPerSecond} instructions/s with token trace, ${summary.emulatorInstructionsPerSecond} plain; wall ${summary.wallSeconds} s`);
console.log(JSON.stringify(summary));
process.exit(totals.mismatches > 0 ? 1 : 0);
