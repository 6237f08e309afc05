/**
 * The long differential through the compiled weights (issue 4): firmware runs through the chip's
 * weights in the reference executor (sparse path, f32, sequential order, `Executor.decodeArgmax`
 * as `chipc run` uses), every generated token compared with the golden emulator's token trace,
 * until a total number of checked positions is reached. Stops at the first divergence.
 *
 *   npx tsx bench/chip-weights-long.ts [--positions 1000000] [--programs sort,bench,...]
 *                                      [--log FILE] [--every 20000]
 *
 * Programs are fixture names (fixtures/firmware/NAME.elf or fixtures/isa/NAME.elf) run in order;
 * each gets the chip compiled for its code size (chip-test target, 32 KiB data RAM) and runs to
 * HALT or until the position budget is spent (then it stops mid-program: every position up to
 * there was checked). A progress line (positions, rate, program) is printed — and appended as
 * JSON to --log — every --every positions, so a run cut short still reports what it verified.
 */
import fs from 'node:fs';
import path from 'node:path';
import { programOf, runOnChip } from '../src/chip/run.ts';
import { compileChip } from '../src/chip/build.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { goldenTokens } from '../riscv/golden-trace.ts';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1]! : dflt;
}

const target = Number(arg('--positions', '1000000'));
const programs = arg('--programs', 'sort,bench,crc32,fixedpoint,calc,hello').split(',');
const logFile = process.argv.includes('--log') ? arg('--log', '') : null;
const every = Number(arg('--every', '20000'));
if (!Number.isInteger(target) || target < 1) throw new Error('--positions must be a positive integer');

function elfPath(name: string): string {
  for (const dir of ['fixtures/firmware', 'fixtures/isa']) {
    const p = path.join(dir, `${name}.elf`);
    if (fs.existsSync(p)) return p;
  }
  throw new Error(`no fixture named ${name}`);
}

function log(rec: Record<string, unknown>): void {
  const line = JSON.stringify({ time: new Date().toISOString(), ...rec });
  console.log(line);
  if (logFile) fs.appendFileSync(logFile, line + '\n');
}

const config = resolveTarget('chip-test').config;
let total = 0;
let nextReport = every;
const t0 = performance.now();
const results: { program: string; positions: number; halted: boolean; divergence: unknown; seconds: number }[] = [];
for (const name of programs) {
  if (total >= target) break;
  const elf = fs.readFileSync(elfPath(name));
  const prog = programOf(elf);
  const budget = target - total;
  const trace = goldenTokens(elf, { mem: { size: prog.memBytes } });
  const c0 = performance.now();
  const res = compileChip(prog.chip, config);
  const compileSeconds = (performance.now() - c0) / 1000;
  let positions = 0;
  const run = runOnChip(res, prog, {
    profile: 'f32', path: 'sparse', order: { kind: 'sequential' },
    maxTokens: Math.min(trace.tokens.length, budget + 2), golden: trace.tokens, goldenPc: trace.tokenPc,
    onToken: () => {
      positions++;
      if (total + positions >= nextReport) {
        nextReport += every;
        const s = (performance.now() - t0) / 1000;
        log({ event: 'progress', program: name, positions: total + positions, seconds: Math.round(s), tokensPerSecond: Math.round((total + positions) / s) });
      }
    },
  });
  total += positions;
  results.push({ program: name, positions, halted: run.halted, divergence: run.divergence, seconds: run.seconds });
  log({ event: 'program', program: name, positions, goldenTokens: trace.tokens.length, halted: run.halted, exitCode: run.exitCode,
    divergence: run.divergence, compileSeconds: Math.round(compileSeconds), runSeconds: Math.round(run.seconds),
    tokensPerSecond: Math.round(positions / run.seconds) });
  if (run.divergence) break;
}
const seconds = (performance.now() - t0) / 1000;
const divergences = results.filter((r) => r.divergence).length;
log({ event: 'done', positions: total, divergences, programs: results.map((r) => r.program), seconds: Math.round(seconds) });
process.exitCode = divergences > 0 ? 1 : 0;
