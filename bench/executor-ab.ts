/**
 * Steady decode of two builds of the executor, compared in shared processes: in each, both builds
 * run a fresh executor of the same saved chip on the same program and take turns on blocks of
 * decode steps (A B, then B A, …), so a slower minute of the machine slows both alike. Each block's
 * time is paired with the other build's block next to it; the figure is the median of the pairs'
 * differences per token, with how many pairs went each way. Separate processes timed one after
 * another swing by 10–30 % from minute to minute on the development machine (docs/benchmarks.md),
 * far more than the change one round of executor work makes; pairs of blocks 0.3 s apart do not.
 * The build loaded second into a process runs a few µs per token faster than the first (a build
 * against itself shows it), so the processes alternate which build they load first, and the
 * result gives the median under each order as well as over all pairs.
 *
 *   npx tsx bench/executor-ab.ts --base REV [--head REV] --model CHIP [--elf FILE] [--rounds R]
 *     [--blocks N] [--block-tokens T] [--warmup W] [--cold N] [--profile f32|bf16] [--json]
 *
 * `--base REV` (A) and `--head REV` (B; default: the working tree, uncommitted edits included) are
 * git revisions of this repository. Each is bundled with esbuild from its own sources (a revision
 * other than the working tree is checked out into a temporary worktree, removed afterwards) into
 * build/ab/, from a small entry this script writes that uses the revision's chipExecutor,
 * programOf and loadChipModel (src/chip/run.ts, src/chip/loaded.ts) as `chipc run` does. `--model
 * CHIP` is a saved chip (`npx chipc cpu --target qwen3.5-4b -o CHIP`), `--elf` the program
 * (default fixtures/firmware/crc32.elf); a build decodes it from its prompt [BOS, J(entry)] and
 * starts it again from a fresh executor when it halts. `--rounds` processes (default 4; odd ones
 * load A first, even ones B) each decode `--warmup` steps per build (default 2,000: the JIT's
 * optimised code), then `--blocks` (default 20) blocks of `--block-tokens` (default 1,000) steps
 * per build. Both builds must emit the same tokens: every one is compared, and the script exits 1
 * when they differ.
 *
 * Prints per build the median block's tokens/s, then the pairs' median difference in µs per token
 * (B − A; negative: B faster), how many of the pairs B won, and the median under each load order;
 * `--json` prints one object: { base, head, profile, rounds, blocks, blockTokens, tokensPerSecond: { base,
 * head }, diffUsPerToken, headFaster, pairs, byOrder: { baseFirst, headFirst }, identical }.
 *
 * `--profile bf16` runs both builds in the bf16 profile (default f32).
 *
 * `--cold N` compares the cold window instead (a fresh process's first N generated tokens, timed
 * as bench/chip-speed.ts's `--cold-only` times them: the chip loaded and the executor made before
 * the clock starts at the prompt): `--rounds` (default 20 here) pairs of fresh processes, one per
 * build, the order alternating from pair to pair. It prints each build's median window and first
 * token, the pairs' median differences and how many pairs B finished sooner; `--json`: { base,
 * head, profile, mode: 'cold', processes, tokens, windowMs, firstTokenMs, windowDiffMs, headSooner,
 * firstTokenDiffMs, identical } (every process's tokens compared by a hash of their ids).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function usage(msg: string): never {
  console.error(`executor-ab: ${msg}\nusage: npx tsx bench/executor-ab.ts --base REV [--head REV] --model CHIP [--elf FILE] [--rounds R] [--blocks N] [--block-tokens T] [--warmup W] [--cold N] [--profile f32|bf16] [--json]`);
  process.exit(2);
}

const argv = process.argv.slice(2);
let base: string | undefined;
let head: string | undefined;
let model: string | undefined;
let elf = 'fixtures/firmware/crc32.elf';
let rounds = 4;
let blocks = 20;
let blockTokens = 1000;
let warmup = 2000;
let json = false;
let cold = 0;
let profile = 'f32';
for (let i = 0; i < argv.length; i++) {
  const a = argv[i]!;
  const value = (): string => {
    const v = argv[++i];
    if (v === undefined) usage(`${a} needs a value`);
    return v;
  };
  if (a === '--base') base = value();
  else if (a === '--head') head = value();
  else if (a === '--model') model = value();
  else if (a === '--elf') elf = value();
  else if (a === '--rounds') rounds = Number(value());
  else if (a === '--blocks') blocks = Number(value());
  else if (a === '--block-tokens') blockTokens = Number(value());
  else if (a === '--warmup') warmup = Number(value());
  else if (a === '--cold') cold = Number(value());
  else if (a === '--profile') profile = value();
  else if (a === '--json') json = true;
  else usage(`unknown argument ${a}`);
}
if (base === undefined) usage('--base REV is required');
if (profile !== 'f32' && profile !== 'bf16') usage(`--profile must be f32 or bf16, got ${profile}`);
// (the child processes inherit it; the bundled entry reads it)
process.env.EXECUTOR_AB_PROFILE = profile;
if (model === undefined) usage('--model CHIP is required (npx chipc cpu --target qwen3.5-4b -o CHIP)');
const chipPath: string = model;
if (cold !== 0 && (!Number.isInteger(cold) || cold < 1)) usage(`--cold must be a positive integer, got ${cold}`);
if (cold > 0 && !argv.includes('--rounds')) rounds = 20;
for (const [name, v, min] of [['--rounds', rounds, 1], ['--blocks', blocks, 2], ['--block-tokens', blockTokens, 1], ['--warmup', warmup, 0]] as const) {
  if (!Number.isInteger(v) || v < min) usage(`${name} must be an integer ≥ ${min}, got ${v}`);
}
for (const f of [chipPath, elf]) if (!fs.existsSync(f)) usage(`${f}: no such file`);

/** The commit `rev` names (git rev-parse); a usage error when it names none. */
function commitOf(rev: string): string {
  try {
    return execFileSync('git', ['rev-parse', '--verify', `${rev}^{commit}`], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  } catch {
    return usage(`${rev} is not a revision of this repository`);
  }
}

/**
 * The entry bundled for each build: a decode runner over that build's sources (imports relative
 * to the entry's place, build/ab/ under the build's root).
 */
const ENTRY = `import fs from 'node:fs';
import { chipExecutor, programOf, readChipCheckpoint } from '../../src/chip/run.ts';
import { loadChipModel } from '../../src/chip/loaded.ts';
import { CODE_BASE } from '../../src/cpu/cpu.ts';
import { BOS_ID, decodeToken, encodeToken } from '../../riscv/protocol.ts';
/** The program on the saved chip as chipc run loads it: a maker of fresh executors, and the prompt. */
function load(elf, chip) {
  const rv32 = readChipCheckpoint(chip).manifest.rv32;
  const prog = programOf(fs.readFileSync(elf), { codeBytes: rv32.codeWords * 4, memBytes: rv32.memWords * 4 });
  const model = loadChipModel(chip, prog);
  return {
    executor: () => chipExecutor(model, prog, { profile: process.env.EXECUTOR_AB_PROFILE === 'bf16' ? 'bf16' : 'f32', order: { kind: 'sequential' }, path: 'sparse' }),
    prompt: [BOS_ID, encodeToken({ kind: 'J', w: (prog.entry - CODE_BASE) / 4 })],
  };
}
export function makeRunner(elf, chip) {
  const { executor, prompt } = load(elf, chip);
  let ex, last;
  const restart = () => {
    ex = executor();
    ex.prime(prompt.slice(0, -1));
    last = ex.decodeArgmax(prompt[prompt.length - 1]);
  };
  restart();
  return {
    /** n decode steps (a fresh executor after a HALT); their ms and ids. */
    step(n, ids) {
      const t = performance.now();
      for (let i = 0; i < n; i++) {
        if (decodeToken(last).kind === 'HALT') restart();
        else last = ex.decodeArgmax(last);
        ids.push(last);
      }
      return performance.now() - t;
    },
  };
}
/**
 * A fresh process's first n generated tokens (the cold window, as bench/chip-speed.ts times it):
 * the chip loaded and the executor made first, then the clock from the prompt's start to the
 * n-th token (or HALT); its ms, the first token's ms, the tokens and their ids.
 */
export function coldWindow(elf, chip, n) {
  const { executor, prompt } = load(elf, chip);
  const ex = executor();
  const t = performance.now();
  ex.prime(prompt.slice(0, -1));
  let last = ex.decodeArgmax(prompt[prompt.length - 1]);
  const firstMs = performance.now() - t;
  const ids = [last];
  while (ids.length < n && decodeToken(last).kind !== 'HALT') { last = ex.decodeArgmax(last); ids.push(last); }
  return { ms: performance.now() - t, firstMs, ids };
}
`;

interface Build { label: string; bundle: string; cleanup: () => void }

/** Bundles the runner from `rev`'s sources (undefined: the working tree) into build/ab/NAME.mjs. */
async function buildSide(name: string, rev: string | undefined): Promise<Build> {
  const esbuild = await import('esbuild');
  let src = root;
  let cleanup = (): void => {};
  let label = 'working tree';
  if (rev !== undefined) {
    const commit = commitOf(rev);
    label = commit.startsWith(rev) ? commit.slice(0, 7) : `${rev} (${commit.slice(0, 7)})`;
    src = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-ab-'));
    fs.rmdirSync(src);
    execFileSync('git', ['worktree', 'add', '--detach', '--quiet', src, commit], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
    // the worktree resolves its packages from this checkout's node_modules
    fs.symlinkSync(path.join(root, 'node_modules'), path.join(src, 'node_modules'), 'dir');
    cleanup = () => execFileSync('git', ['worktree', 'remove', '--force', src], { cwd: root, stdio: 'ignore' });
  }
  try {
    const entryDir = path.join(src, 'build', 'ab');
    fs.mkdirSync(entryDir, { recursive: true });
    const entry = path.join(entryDir, `entry-${name}.ts`);
    fs.writeFileSync(entry, ENTRY);
    const outDir = path.join(root, 'build', 'ab');
    fs.mkdirSync(outDir, { recursive: true });
    const bundle = path.join(outDir, `${name}.mjs`);
    await esbuild.build({
      entryPoints: [entry], bundle: true, platform: 'node', format: 'esm', outfile: bundle, logLevel: 'error',
      banner: { js: "import { createRequire as __abRequire } from 'node:module'; const require = __abRequire(import.meta.url);" },
    });
    if (rev === undefined) fs.rmSync(entry);
    return { label, bundle, cleanup };
  } catch (e) {
    cleanup();
    throw e;
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((p, q) => p - q);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/**
 * One process's comparison (run as a child): imports the two bundles in the order given (the
 * first loaded first), decodes `warmup` steps on each, then `blocks` blocks taking turns (first,
 * second; then second, first; …), and prints { first: ms[], second: ms[], steps, firstDiff }.
 */
const DRIVER = `const [firstBundle, secondBundle, elf, chip, warmup, blocks, blockTokens] = process.argv.slice(2);
const a = (await import(firstBundle)).makeRunner(elf, chip);
const b = (await import(secondBundle)).makeRunner(elf, chip);
const idsA = [], idsB = [], ta = [], tb = [];
a.step(Number(warmup), idsA);
b.step(Number(warmup), idsB);
for (let i = 0; i < Number(blocks); i++) {
  if (i % 2 === 0) { ta.push(a.step(Number(blockTokens), idsA)); tb.push(b.step(Number(blockTokens), idsB)); }
  else { tb.push(b.step(Number(blockTokens), idsB)); ta.push(a.step(Number(blockTokens), idsA)); }
}
let firstDiff = idsA.length === idsB.length ? -1 : Math.min(idsA.length, idsB.length);
for (let i = 0; i < Math.min(idsA.length, idsB.length); i++) if (idsA[i] !== idsB[i]) { firstDiff = i; break; }
console.log(JSON.stringify({ first: ta, second: tb, steps: idsA.length, firstDiff }));
`;

/** One fresh process's cold window (run as a child): prints { ms, firstMs, tokens, hash }. */
const COLD_DRIVER = `const [bundle, elf, chip, n] = process.argv.slice(2);
const r = (await import(bundle)).coldWindow(elf, chip, Number(n));
let h = 0x811c9dc5;
for (const id of r.ids) h = Math.imul(h ^ id, 0x01000193);
console.log(JSON.stringify({ ms: r.ms, firstMs: r.firstMs, tokens: r.ids.length, hash: h >>> 0 }));
`;

const sideA = await buildSide('base', base);
let sideB: Build;
try {
  sideB = await buildSide('head', head);
} catch (e) {
  sideA.cleanup();
  throw e;
}
try {
  const urlA = pathToFileURL(sideA.bundle).href;
  const urlB = pathToFileURL(sideB.bundle).href;
  if (cold > 0) coldComparison(urlA, urlB);
  else steadyComparison(urlA, urlB);
} finally {
  sideA.cleanup();
  sideB.cleanup();
}

/**
 * The steady comparison: `--rounds` processes of the driver, alternating which build each loads
 * first; prints the pairs' median difference over all of them and under each order.
 */
function steadyComparison(urlA: string, urlB: string): void {
  const driver = path.join(root, 'build', 'ab', 'driver.mjs');
  fs.writeFileSync(driver, DRIVER);
  // per load order: the pairs' differences B − A in µs per token, and the blocks' ms
  const diffs: Record<'baseFirst' | 'headFirst', number[]> = { baseFirst: [], headFirst: [] };
  const ta: number[] = [];
  const tb: number[] = [];
  let steps = 0;
  let identical = true;
  for (let r = 0; r < rounds; r++) {
    const baseFirst = r % 2 === 0;
    const args = [driver, baseFirst ? urlA : urlB, baseFirst ? urlB : urlA, elf, chipPath, String(warmup), String(blocks), String(blockTokens)];
    const out = execFileSync(process.execPath, args, { cwd: root, encoding: 'utf8', maxBuffer: 1 << 26 });
    const run = JSON.parse(out.trim().split('\n').pop()!) as { first: number[]; second: number[]; steps: number; firstDiff: number };
    const [a, b] = baseFirst ? [run.first, run.second] : [run.second, run.first];
    ta.push(...a);
    tb.push(...b);
    diffs[baseFirst ? 'baseFirst' : 'headFirst'].push(...a.map((x, i) => ((b[i]! - x) / blockTokens) * 1000));
    steps += run.steps;
    if (run.firstDiff >= 0) {
      identical = false;
      console.error(`executor-ab: round ${r + 1}: the builds' tokens differ at step ${run.firstDiff}`);
    }
  }
  const all = [...diffs.baseFirst, ...diffs.headFirst];
  const result = {
    base: sideA.label, head: sideB.label, profile, rounds, blocks, blockTokens,
    tokensPerSecond: { base: blockTokens / (median(ta) / 1000), head: blockTokens / (median(tb) / 1000) },
    diffUsPerToken: median(all), headFaster: all.filter((d) => d < 0).length, pairs: all.length,
    byOrder: { baseFirst: median(diffs.baseFirst), headFirst: diffs.headFirst.length > 0 ? median(diffs.headFirst) : null },
    identical,
  };
  if (json) console.log(JSON.stringify(result));
  else {
    const sign = (x: number) => `${x >= 0 ? '+' : ''}${x.toFixed(2)}`;
    console.log(`A ${result.base}: ${result.tokensPerSecond.base.toFixed(0)} tokens/s (median block)`);
    console.log(`B ${result.head}: ${result.tokensPerSecond.head.toFixed(0)} tokens/s`);
    console.log(`B − A: ${sign(result.diffUsPerToken)} µs per token (median of ${all.length} pairs of ${blockTokens}-step blocks, ${rounds} processes), B faster in ${result.headFaster} of ${all.length}`);
    console.log(`  by load order: A loaded first ${sign(result.byOrder.baseFirst)}${result.byOrder.headFirst === null ? '' : `, B loaded first ${sign(result.byOrder.headFirst)}`}`);
    console.log(identical ? `the same tokens from both (${steps} steps each)` : 'the builds\' tokens differ');
  }
  if (!identical) process.exitCode = 1;
}

/**
 * `--cold N`: `--rounds` pairs of fresh processes, one per build, the order alternating from pair
 * to pair (A B, then B A); each times its cold window of N tokens. Prints the medians of the
 * window and of the first token per build, the pairs' median differences, and whether every
 * process emitted the same tokens.
 */
function coldComparison(urlA: string, urlB: string): void {
  const driver = path.join(root, 'build', 'ab', 'cold-driver.mjs');
  fs.writeFileSync(driver, COLD_DRIVER);
  const runOne = (url: string) => JSON.parse(execFileSync(process.execPath, [driver, url, elf, chipPath, String(cold)], { cwd: root, encoding: 'utf8' }).trim().split('\n').pop()!) as { ms: number; firstMs: number; tokens: number; hash: number };
  const a: ReturnType<typeof runOne>[] = [];
  const b: ReturnType<typeof runOne>[] = [];
  for (let r = 0; r < rounds; r++) {
    if (r % 2 === 0) { a.push(runOne(urlA)); b.push(runOne(urlB)); } else { b.push(runOne(urlB)); a.push(runOne(urlA)); }
  }
  const identical = [...a, ...b].every((x) => x.hash === a[0]!.hash && x.tokens === a[0]!.tokens);
  const windowDiffs = a.map((x, i) => b[i]!.ms - x.ms);
  const firstDiffs = a.map((x, i) => b[i]!.firstMs - x.firstMs);
  const result = {
    base: sideA.label, head: sideB.label, profile, mode: 'cold', processes: rounds, tokens: a[0]!.tokens,
    windowMs: { base: median(a.map((x) => x.ms)), head: median(b.map((x) => x.ms)) },
    firstTokenMs: { base: median(a.map((x) => x.firstMs)), head: median(b.map((x) => x.firstMs)) },
    windowDiffMs: median(windowDiffs), headSooner: windowDiffs.filter((d) => d < 0).length, firstTokenDiffMs: median(firstDiffs),
    identical,
  };
  if (json) console.log(JSON.stringify(result));
  else {
    const sign = (x: number) => `${x >= 0 ? '+' : ''}${x.toFixed(1)}`;
    console.log(`A ${result.base}: ${result.tokens} tokens in ${result.windowMs.base.toFixed(1)} ms (median of ${rounds} fresh processes), first token ${result.firstTokenMs.base.toFixed(1)} ms`);
    console.log(`B ${result.head}: ${result.windowMs.head.toFixed(1)} ms, first token ${result.firstTokenMs.head.toFixed(1)} ms`);
    console.log(`B − A: window ${sign(result.windowDiffMs)} ms (median of ${rounds} pairs), B sooner in ${result.headSooner} of ${rounds}; first token ${sign(result.firstTokenDiffMs)} ms`);
    console.log(identical ? 'the same tokens from every process' : 'the processes\' tokens differ');
  }
  if (!identical) process.exitCode = 1;
}
