/**
 * Random RV32IM+Zba programs (riscv/random-program.ts) through the compiled chip's weights in the
 * executor's other summation orders — shuffled (a seeded random permutation of every reduction)
 * and FMA (one rounding per product) — and the bf16 profile, against the golden token stream.
 * These orders run without the sequential fast paths — the shuffled order permutes every one of
 * the LM head's 248,197 rows at every token, 20 s or more per token on a 2-vCPU machine — so they
 * are a bench, not a test. Static evidence covers every order: the compile report's
 * order-invariance analysis finds all 110 matmuls of the chip exact in any summation order. The chip is compiled once (code RAM 64 words, data RAM 1 KiB) for a `tiny`-derived
 * target with the protocol's vocabulary.
 *   npx tsx bench/chip-orders.ts [--programs N] [--seed S]
 * Prints per program and mode: tokens, divergences, seconds; exit 1 on any divergence.
 */
import fc from 'fast-check';
import { buildCircuit } from '../src/dsl/load.ts';
import { compileCircuit } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { programOf, runOnChip } from '../src/chip/run.ts';
import { cpuCircuit, VOCAB } from '../src/cpu/cpu.ts';
import { assembleElf } from '../riscv/asm.ts';
import { goldenTokens } from '../riscv/golden-trace.ts';
import { randomProgram } from '../riscv/random-program.ts';
import type { ExecOptions } from '../src/exec/types.ts';

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}
const programs = arg('--programs', 1);
const seed = arg('--seed', 20261129);

const sources = fc.sample(randomProgram(2, 4), { numRuns: programs, seed });
const first = programOf(assembleElf(sources[0]!).elf, 1024);
const tiny = resolveTarget('tiny').config;
const target = {
  ...tiny, vocabSize: VOCAB, intermediateSize: 16_384,
  linearNumKeyHeads: 8, linearNumValueHeads: 16, linearKeyHeadDim: 64, linearValueHeadDim: 64,
};
const res = compileCircuit(buildCircuit(cpuCircuit(first.chip), 'src/cpu/cpu.ts'), target);
const modes: [string, ExecOptions][] = [
  ['f32 shuffled', { profile: 'f32', order: { kind: 'shuffled', seed: 7 } }],
  ['f32 fma', { profile: 'f32', order: { kind: 'fma' } }],
  ['bf16 shuffled', { profile: 'bf16', order: { kind: 'shuffled', seed: 11 } }],
];
let divergences = 0;
let tokens = 0;
const rows: Record<string, unknown>[] = [];
for (const [k, src] of sources.entries()) {
  const elf = assembleElf(src).elf;
  const prog = programOf(elf, 1024);
  if (prog.chip.codeWords !== first.chip.codeWords) throw new Error('program size changed the chip shape');
  const golden = goldenTokens(elf, { mem: { size: 1024 } });
  for (const [name, opts] of modes) {
    const r = runOnChip(res, prog, { ...opts, maxTokens: golden.tokens.length + 2, golden: golden.tokens, goldenPc: golden.tokenPc });
    const generated = r.tokens.length - r.promptLength;
    tokens += generated;
    if (r.divergence) divergences++;
    rows.push({ program: k, mode: name, tokens: generated, divergence: r.divergence, seconds: Number(r.seconds.toFixed(1)) });
    console.log(`program ${k} (${golden.summary.instructions} instructions), ${name}: ${generated} tokens, ` +
      `${r.divergence ? `DIVERGENCE at ${r.divergence.position}: expected ${r.divergence.expected}, got ${r.divergence.got}` : '0 divergences'}, ${r.seconds.toFixed(1)} s`);
  }
}
console.log(`total: ${sources.length} programs × ${modes.length} modes, ${tokens} tokens, ${divergences} divergences`);
console.log(JSON.stringify({ bench: 'chip-orders', date: new Date().toISOString(), seed, programs, tokens, divergences, rows }));
process.exit(divergences === 0 ? 0 : 1);
