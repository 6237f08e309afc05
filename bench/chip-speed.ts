/**
 * Decode speed of the reference executor on a compiled chip (sparse path, sequential order), timed
 * per token with a per-phase breakdown (Executor.setPhaseTimes; the un-profiled run is timed
 * separately so the probes do not inflate it).
 *
 *   npx tsx bench/chip-speed.ts --elf fixtures/firmware/hello.elf [--target T | --model CHIP [--cold-plans] | --sized] [--tokens N] ...
 *   npx tsx bench/chip-speed.ts DIR [--tokens N] [--warmup N] [--profile f32|bf16] [--no-phases] [--json]
 *   ... [--cold-runs R [--node-flags "FLAGS"]]
 *
 * `--elf FILE` runs the program on the generic chip `chipc run` uses: the default sizes of
 * `--target` (default chip-test), compiled in this process, or the saved chip `--model CHIP`
 * (`chipc cpu -o CHIP`); its RAM images, configuration words and prompt [BOS, J(entry)] are
 * loaded as `chipc run` loads them (state), and it decodes until HALT or N steps. `--sized`
 * compiles a chip sized to the program instead (code RAM rounded up to the program: the chip the
 * figures before the generic chip were measured on). `DIR` (a checkpoint from `chipc compile`)
 * runs with an empty code RAM: all-zero instructions, fine for timing.
 *
 * Two figures:
 * - `firstThousandTokensPerSecond`: the first run of the process, cold (no JIT warm-up, as a
 *   fresh `chipc run` process): 1,000 (or N, if smaller, or fewer at HALT) generated tokens over
 *   the wall time from the start of the prompt (which yields the first token) to the last of them;
 *   `firstThousandPageFaults` the minor page faults of that window (each a first touch of a fresh
 *   4 KiB page, dear on some virtual machines: bench/page-faults.ts), `firstThousandGc` the
 *   collections V8 ran in it (scavenges, others, their ms: the young generation a fresh process
 *   grows in its first steps), `firstThousandThreadCpu` the CPU ms of the main thread and of the
 *   others (V8's helper threads) in it (Linux), `firstThousandMemory` the
 *   process's array-buffer bytes and resident bytes after it. `firstThousandCurve` and
 *   `warmCurve`: ms from the prompt's start to generated tokens 1, 10, 50, 100, 250, 500, 1,000,
 *   in the cold run and in the timed run (a fresh executor on warm code, the weight plans built),
 *   so the difference is what a fresh process pays once (plans, JIT, first touches). With
 *   `--cold-plans` (and `--model`), `coldPlansCurve`: the same after the cold run, on a second copy
 *   of the chip loaded in the process (warm code, its weight plans still to build), which splits
 *   that difference into the weight plans' part and the JIT's.
 *   The cold start varies from process to process far more than the steady rate (the machine's
 *   page faults and the JIT's background threads), so one process is one sample: `--cold-runs R`
 *   first runs R fresh processes of this script that each time the cold window alone
 *   (`--cold-only`, one after another, this process idle meanwhile) and reports their median,
 *   least and greatest (`coldRuns`); `--node-flags` gives those processes Node options (for
 *   example "--v8-pool-size=0": docs/benchmarks.md, "The cold window").
 * - `tokensPerSecond` (steady): after `--warmup N` (default 2000) untimed decode steps on fresh
 *   executors of the same weights and program (repeated when the program halts sooner), so that
 *   the timed run measures the JIT's optimized code; each timed run starts after a forced major GC
 *   and a 100 ms pause for the GC's helper threads. Decode steps only (prefill excluded).
 *
 * Prints ms/token and tokens/s; with --elf also the instructions started, tokens per instruction,
 * instructions/s through the weights and the golden emulator's instructions/s on the same program
 * in the same process (the reference); the work per token of the incremental matmuls (stored
 * entries walked, rows reached and refolded, and the entries the refolds walk) and of the tracked
 * GDN steps (conv channels recomputed, value-head steps run and passed over) and the LM head's
 * rows folded by its bounded argmax (`argmaxRows`) and the FFN steps its memo answered
 * (`ffnMemoHits`, of the layers' eleven a token at qwen3.5-4b) — deterministic, so it compares two builds on a noisy
 * machine where timings cannot — and the phase table, then the same profiled run's time per layer
 * (`layersMsPerToken`: each layer's mixer and FFN, each with its norm and residual add; these
 * overlap the phases and are kept out of `phasesMsPerToken`).
 *
 * `wasmMemoryCarvedMiB`: what the timed run's executor carved from its numeric context's wasm
 * memory by its end (Executor.wasmMemoryUse).
 *
 * `--layer-detail` (with the phases) breaks the profiled run down by layer: each layer's phases
 * (`layerPhasesMsPerToken`: per layer, phase → ms per token) and the spread of a step's time in
 * each layer half (`layerTokenUs`: per layer and half, the mean, median, 90th and 99th percentile
 * and greatest step in µs, and `tailShare`, the part of the mean from steps above 40 µs) — where a
 * layer's mean comes from a few slow steps rather than from every step — and each layer half's
 * share of the work counters per token (`layerWorkPerToken`: entries walked, rows reached, conv
 * channels, value-head steps run and passed over, FFN memo hits; deterministic).
 */
import fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import v8 from 'node:v8';
import vm from 'node:vm';
import path from 'node:path';
import { constants as perfConstants, PerformanceObserver } from 'node:perf_hooks';
import { Executor } from '../src/exec/executor.ts';
import type { HalfWork, LayerDetail, PhaseTimes } from '../src/exec/profile.ts';
import { DELTA_ROLES, type DeltaRole, type DeltaWork } from '../src/exec/matmul.ts';
import { loadModel } from '../src/model/load-weights.ts';
import type { ModelWeights } from '../src/model/weights.ts';
import { chipExecutor, programOf, readChipCheckpoint, type ChipProgram } from '../src/chip/run.ts';
import { compileChip, compileGenericChip } from '../src/chip/build.ts';
import { defaultChipSizes } from '../src/chip/generic.ts';
import { loadChipModel, type ChipModel } from '../src/chip/loaded.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { CODE_BASE } from '../src/cpu/cpu.ts';
import { BOS_ID, decodeToken, encodeToken } from '../riscv/protocol.ts';
import { cpuForProgram, loadElf } from '../riscv/elf.ts';

let PROMPT = [247044, 131072];

function usage(msg: string): never {
  console.error(`chip-speed: ${msg}\nusage: npx tsx bench/chip-speed.ts DIR|--elf FILE [--target T|--model CHIP [--cold-plans]|--sized] [--tokens N] [--warmup N] [--profile f32|bf16] [--no-phases] [--layer-detail] [--json] [--cold-runs R [--node-flags "FLAGS"]] [--cold-only]`);
  process.exit(2);
}

const argv = process.argv.slice(2);
let dir: string | undefined;
let tokens = 300;
let profile: 'f32' | 'bf16' = 'f32';
let phases = true;
let layerDetail = false;
let json = false;
let elf: string | undefined;
let warmup = 2000;
let targetName = 'chip-test';
let modelPath: string | undefined;
let sized = false;
let coldPlans = false;
let coldRuns = 0;
let nodeFlags: string[] = [];
let coldOnly = false;
/** The arguments a --cold-runs child gets: these, less --cold-runs, --node-flags and --cold-plans. */
const childArgs: string[] = [];
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--tokens') tokens = Number(argv[++i]);
  else if (a === '--profile') profile = argv[++i] as 'f32' | 'bf16';
  else if (a === '--no-phases') phases = false;
  else if (a === '--layer-detail') layerDetail = true;
  else if (a === '--json') json = true;
  else if (a === '--elf') elf = argv[++i];
  else if (a === '--warmup') warmup = Number(argv[++i]);
  else if (a === '--target') targetName = argv[++i] ?? usage('--target needs a name');
  else if (a === '--model') modelPath = argv[++i] ?? usage('--model needs a path');
  else if (a === '--sized') sized = true;
  else if (a === '--cold-plans') coldPlans = true;
  else if (a === '--cold-runs') { coldRuns = Number(argv[++i]); continue; }
  else if (a === '--node-flags') { nodeFlags = (argv[++i] ?? usage('--node-flags needs a string')).split(/\s+/).filter((f) => f !== ''); continue; }
  else if (a === '--cold-only') coldOnly = true;
  else if (a.startsWith('--')) usage(`unknown option ${a}`);
  else if (dir === undefined) dir = a;
  else usage(`unexpected argument ${a}`);
}
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--cold-runs' || argv[i] === '--node-flags') i++;
  else if (argv[i] !== '--cold-plans') childArgs.push(argv[i]);
}
if (dir === undefined && elf === undefined) usage('missing checkpoint directory (or --elf FILE)');
if (dir !== undefined && elf !== undefined) usage('give a checkpoint directory or --elf FILE, not both');
if (!Number.isInteger(tokens) || tokens < 1) usage('--tokens must be a positive integer');
if (!Number.isInteger(warmup) || warmup < 0) usage('--warmup must be a non-negative integer');
if (profile !== 'f32' && profile !== 'bf16') usage('--profile must be f32 or bf16');
if (dir !== undefined && !fs.existsSync(path.join(dir, 'config.json'))) usage(`${dir} has no config.json (compile a checkpoint first)`);
if (elf !== undefined && !fs.existsSync(elf)) usage(`${elf} does not exist`);
if (elf === undefined && (modelPath !== undefined || sized)) usage('--model and --sized go with --elf');
if (modelPath !== undefined && sized) usage('--model and --sized exclude each other');
if (coldPlans && modelPath === undefined) usage('--cold-plans needs --model (a second copy of the chip is loaded from it)');
if (!Number.isInteger(coldRuns) || coldRuns < 0) usage('--cold-runs must be a non-negative integer');
if (nodeFlags.length > 0 && coldRuns === 0) usage('--node-flags goes with --cold-runs');
if (coldOnly && coldRuns > 0) usage('--cold-only and --cold-runs exclude each other');

/** One --cold-only process's figures. */
interface ColdSample { tokens: number; ms: number; tokensPerSecond: number; pageFaults: number; curve: CurvePoint[]; gc: GcWork; threadCpu: ThreadCpu | null }
/**
 * CPU ms of this process's threads over a window (Linux: /proc/self/task/TID/schedstat), the main
 * thread's and the others' (V8's helper threads: optimising compiles and the collector's tasks;
 * on two cores they compete with the decode). null where /proc is not there.
 */
interface ThreadCpu { mainMs: number; helperMs: number }
function threadCpuNow(): ThreadCpu | null {
  let tasks: string[];
  try { tasks = fs.readdirSync('/proc/self/task'); } catch { return null; }
  let mainMs = 0;
  let helperMs = 0;
  for (const tid of tasks) {
    let ns: number;
    try { ns = Number(fs.readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]); } catch { continue; }
    if (Number(tid) === process.pid) mainMs += ns / 1e6;
    else helperMs += ns / 1e6;
  }
  return { mainMs, helperMs };
}
/** The collections V8 ran in a window (perf_hooks 'gc' entries): scavenges, the others (mark-compact and its steps), and their ms. */
interface GcWork { scavenges: number; others: number; ms: number }
/**
 * --cold-runs: R fresh processes of this script (this Node and its loader flags, then
 * --node-flags), each timing the cold window alone, one after another.
 */
function coldSamples(runs: number): ColdSample[] {
  const out: ColdSample[] = [];
  for (let r = 0; r < runs; r++) {
    const res = spawnSync(process.execPath, [...nodeFlags, ...process.execArgv, process.argv[1]!, ...childArgs, '--cold-only', '--json'], { encoding: 'utf8' });
    if (res.status !== 0) {
      console.error(`chip-speed: cold run ${r + 1} of ${runs} failed (exit ${String(res.status ?? res.signal)}):\n${res.stderr}`);
      process.exit(1);
    }
    out.push(JSON.parse(res.stdout) as ColdSample);
  }
  return out;
}
const median = (v: number[]): number => {
  const s = [...v].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const spread = (v: number[]) => ({ median: median(v), min: Math.min(...v), max: Math.max(...v) });
const samples = coldRuns > 0 ? coldSamples(coldRuns) : [];
const coldRunsSummary = samples.length === 0 ? null : {
  runs: samples.length, nodeFlags: nodeFlags.join(' '),
  tokensPerSecond: spread(samples.map((s) => s.tokensPerSecond)),
  ms: spread(samples.map((s) => s.ms)),
  pageFaults: spread(samples.map((s) => s.pageFaults)),
  gcMs: spread(samples.map((s) => s.gc.ms)),
  threadCpu: samples.every((s) => s.threadCpu !== null)
    ? { mainMs: spread(samples.map((s) => s.threadCpu!.mainMs)), helperMs: spread(samples.map((s) => s.threadCpu!.helperMs)) } : null,
  /** The median ms to each curve point over the runs. */
  curve: samples[0]!.curve.map((p, i) => ({ tokens: p.tokens, ms: median(samples.map((s) => s.curve[i]?.ms ?? NaN)) })),
};

const t0 = performance.now();
let weights: ModelWeights;
/** A fresh executor of the weights (with --elf: the program's RAM images and configuration words loaded). */
let newExecutor: () => Executor = () => new Executor(weights, { profile, order: { kind: 'sequential' }, path: 'sparse' });
let chipLabel = '';
/** --cold-plans: a fresh executor of a second copy of the chip (weights of their own, so plans of their own). */
let newCopyExecutor: (() => Executor) | null = null;
if (elf !== undefined) {
  const bytes = fs.readFileSync(elf);
  const target = resolveTarget(targetName);
  let prog: ChipProgram;
  let model: ChipModel;
  if (modelPath !== undefined) {
    const rv32 = readChipCheckpoint(modelPath).manifest.rv32;
    if (typeof rv32?.codeWords !== 'number' || typeof rv32.memWords !== 'number') usage(`${modelPath}: its manifest records no RV32 RAM sizes (write it with chipc cpu)`);
    prog = programOf(bytes, { codeBytes: rv32.codeWords * 4, memBytes: rv32.memWords * 4 });
    model = loadChipModel(modelPath, prog);
    chipLabel = `saved chip ${path.basename(modelPath)}`;
  } else if (sized) {
    prog = programOf(bytes);
    model = compileChip(prog.chip, target.config);
    chipLabel = `chip sized to the program (${prog.chip.codeWords * 4} B code) at ${target.name}`;
  } else {
    const sizes = defaultChipSizes(target.config);
    prog = programOf(bytes, sizes, target.config);
    model = compileGenericChip({ targetName: target.name, target: target.config, ...sizes });
    chipLabel = `generic chip (${sizes.codeBytes / 1024} KiB code, ${sizes.memBytes / 1024} KiB data) at ${target.name}`;
  }
  weights = model.weights;
  PROMPT = [BOS_ID, encodeToken({ kind: 'J', w: (prog.entry - CODE_BASE) / 4 })];
  newExecutor = () => chipExecutor(model, prog, { profile, order: { kind: 'sequential' }, path: 'sparse' });
  if (coldPlans) {
    const copy = loadChipModel(modelPath as string, prog);
    newCopyExecutor = () => chipExecutor(copy, prog, { profile, order: { kind: 'sequential' }, path: 'sparse' });
  }
} else weights = loadModel(dir as string, { mode: 'sparse' });
const loadMs = performance.now() - t0;

v8.setFlagsFromString('--expose-gc');
const fullGc = vm.runInNewContext('gc') as () => void;
/** The pause after the forced GC (ms): the main thread sleeps, the GC's helper threads finish. */
const SETTLE_MS = 100;
const sleeper = new Int32Array(new SharedArrayBuffer(4));
function settle(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}

/**
 * The prompt as `chipc run` feeds it: every token but the last through the decode path
 * (Executor.prime), the last by decodeArgmax; returns the first generated token.
 */
function start(ex: Executor): number {
  ex.prime(PROMPT.slice(0, -1));
  return ex.decodeArgmax(PROMPT[PROMPT.length - 1]!);
}

/**
 * The prompt (start) + `n` greedy decode steps; returns the decode ms (and the first step's), the prompt's ms
 * and the emitted ids.
 */
interface Work { entries: number; rows: number; refolds: number; refoldEntries: number; conv: number; heads: number; headsPassed: number; argmaxRows: number; ffnMemoHits: number; byRole: Record<DeltaRole, DeltaWork> }
/** Generated-token counts at which the cold run and the timed run note their time (the curve). */
const CURVE_AT = [1, 10, 50, 100, 250, 500, 1000];
interface CurvePoint { tokens: number; ms: number }
function run(n: number, times: PhaseTimes | null, detail: LayerDetail | null = null): { decodeMs: number; firstMs: number; cpuMs: number; prefillMs: number; ids: number[]; steps: number; work: Work; instructions: number; curve: CurvePoint[]; carvedBytes: number | null } {
  const ex = newExecutor();
  const p0 = performance.now();
  let last = start(ex);
  const prefillMs = performance.now() - p0;
  ex.setPhaseTimes(times, detail);
  const ids = [last];
  const w0 = { entries: ex.stats.deltaEntries, rows: ex.stats.deltaRows, refolds: ex.stats.deltaRefolds, refoldEntries: ex.stats.deltaRefoldEntries, conv: ex.stats.convChannels, heads: ex.stats.gdnHeadSteps, headsPassed: ex.stats.gdnHeadsBetaZero, argmaxRows: ex.stats.argmaxBoundedRows, ffnMemoHits: ex.stats.ffnMemoHits, byRole: structuredClone(ex.stats.deltaByRole) };
  // a major GC now, not in the timed window (the compile leaves garbage for one to collect, and
  // its incremental marking, tens of ms, landed inside short runs such as hello's); then a pause
  // while its helper threads finish: started right after the GC, hello's first decode step (which
  // allocates the layers' tracks) ran beside them and took about twice as long
  fullGc();
  settle(SETTLE_MS);
  const d0 = performance.now();
  const c0 = process.cpuUsage();
  let steps = 0;
  let firstMs = 0;
  // the curve: the prompt's time (which yields token 1), then the decode steps' (the GC and the
  // pause before them left out)
  const curve: CurvePoint[] = [{ tokens: 1, ms: prefillMs }];
  for (; steps < n; steps++) {
    if (elf !== undefined && decodeToken(last).kind === 'HALT') break;
    last = ex.decodeArgmax(last);
    if (steps === 0) firstMs = performance.now() - d0;
    if (CURVE_AT.includes(steps + 2)) curve.push({ tokens: steps + 2, ms: prefillMs + performance.now() - d0 });
    ids.push(last);
  }
  const cpu = process.cpuUsage(c0);
  const decodeMs = performance.now() - d0;
  // instructions started in the decode steps (as chipc run counts them: positions fed E, N, OUT or J)
  let instructions = 0;
  for (const t of ids.slice(0, steps)) { const k = decodeToken(t).kind; if (k === 'E' || k === 'N' || k === 'OUT' || k === 'J') instructions++; }
  const work = {
    entries: ex.stats.deltaEntries - w0.entries, rows: ex.stats.deltaRows - w0.rows, refolds: ex.stats.deltaRefolds - w0.refolds,
    refoldEntries: ex.stats.deltaRefoldEntries - w0.refoldEntries,
    conv: ex.stats.convChannels - w0.conv,
    heads: ex.stats.gdnHeadSteps - w0.heads,
    headsPassed: ex.stats.gdnHeadsBetaZero - w0.headsPassed,
    argmaxRows: ex.stats.argmaxBoundedRows - w0.argmaxRows,
    ffnMemoHits: ex.stats.ffnMemoHits - w0.ffnMemoHits,
    byRole: Object.fromEntries(DELTA_ROLES.map((r) => {
      const a = ex.stats.deltaByRole[r];
      const b = w0.byRole[r];
      return [r, { calls: a.calls - b.calls, changedColumns: a.changedColumns - b.changedColumns, entries: a.entries - b.entries, rows: a.rows - b.rows, refolds: a.refolds - b.refolds, refoldEntries: a.refoldEntries - b.refoldEntries }];
    })) as Record<DeltaRole, DeltaWork>,
  };
  return { decodeMs, firstMs, cpuMs: (cpu.user + cpu.system) / 1000, prefillMs, ids, steps, work, instructions, curve, carvedBytes: ex.wasmMemoryUse()?.carvedBytes ?? null };
}

/** The golden emulator's instructions/s on the same program (--elf), run whole, repeated for ≥ 0.3 s. */
function goldenRate(file: string): { instructions: number; perSecond: number } {
  const bytes = fs.readFileSync(file);
  let total = 0;
  let ms = 0;
  for (let rep = 0; rep < 1000 && ms < 300; rep++) {
    const cpu = cpuForProgram(loadElf(bytes, { size: 32 * 1024 }));
    const t = performance.now();
    const r = cpu.run({ maxInstructions: 10_000_000 });
    ms += performance.now() - t;
    total += r.instret;
  }
  return { instructions: total, perSecond: total / (ms / 1000) };
}

/** Every collection V8 reports, on the performance.now() clock (delivered after the synchronous run that saw it). */
const gcSeen: { start: number; ms: number; minor: boolean }[] = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind;
    gcSeen.push({ start: e.startTime, ms: e.duration, minor: kind === perfConstants.NODE_PERFORMANCE_GC_MINOR });
  }
}).observe({ entryTypes: ['gc'] });
/** The collections that started in [from, to) (after a timer's turn of the event loop, which delivers them; setImmediate's does not). */
async function gcWork(from: number, to: number): Promise<GcWork> {
  await new Promise((r) => setTimeout(r, 0));
  const seen = gcSeen.filter((g) => g.start >= from && g.start < to);
  return { scavenges: seen.filter((g) => g.minor).length, others: seen.filter((g) => !g.minor).length, ms: seen.reduce((a, g) => a + g.ms, 0) };
}

/**
 * The first `n` generated tokens of a fresh executor, timed from the start of its prompt (which
 * yields the first token) to the last of them; run first, before any warm-up: the cold start a
 * fresh `chipc run` process sees (JIT compiles, the first step's incremental state).
 */
function coldRun(n: number, ex = newExecutor()): { tokens: number; ms: number; pageFaults: number; curve: CurvePoint[]; arrayBuffers: number; rss: number; from: number; threadCpu: ThreadCpu | null } {
  const c0 = threadCpuNow();
  const f0 = process.resourceUsage().minorPageFault;
  const t = performance.now();
  let last = start(ex);
  let got = 1;
  const curve: CurvePoint[] = [{ tokens: 1, ms: performance.now() - t }];
  while (got < n && !(elf !== undefined && decodeToken(last).kind === 'HALT')) {
    last = ex.decodeArgmax(last);
    got++;
    if (CURVE_AT.includes(got)) curve.push({ tokens: got, ms: performance.now() - t });
  }
  const ms = performance.now() - t;
  const pageFaults = process.resourceUsage().minorPageFault - f0;
  const c1 = threadCpuNow();
  const mem = process.memoryUsage();
  const threadCpu = c0 && c1 ? { mainMs: c1.mainMs - c0.mainMs, helperMs: c1.helperMs - c0.helperMs } : null;
  return { tokens: got, ms, pageFaults, curve, arrayBuffers: mem.arrayBuffers, rss: mem.rss, from: t, threadCpu };
}
const cold = coldRun(Math.min(1000, tokens));
const coldGc = await gcWork(cold.from, cold.from + cold.ms);
const firstThousandTokensPerSecond = cold.tokens / (cold.ms / 1000);
if (coldOnly) {
  console.log(JSON.stringify({ tokens: cold.tokens, ms: cold.ms, tokensPerSecond: firstThousandTokensPerSecond, pageFaults: cold.pageFaults, curve: cold.curve, gc: coldGc, threadCpu: cold.threadCpu } satisfies ColdSample));
  process.exit(0);
}
// warm code (the cold run's), weight plans still to build (the copy's): after a GC and a pause, as the timed run
let coldPlansRun: ReturnType<typeof coldRun> | null = null;
if (newCopyExecutor !== null) {
  const ex = newCopyExecutor();
  fullGc();
  settle(SETTLE_MS);
  coldPlansRun = coldRun(Math.min(1000, tokens), ex);
}

// JIT warm-up: untimed decodes of the same program (each on a fresh executor, as the timed run)
// until `warmup` steps have run. The JIT compiles the decode's functions only once they are hot:
// with a 20-step warm-up, hello's whole timed run overlapped their optimizing compiles (40 ms for
// gdnDecodeTracked alone), measuring unoptimized code, not the decode.
for (let warmed = 0; warmed < warmup;) {
  const w = run(Math.min(tokens, warmup - warmed), null).steps;
  if (w === 0) break;
  warmed += w;
}
const plain = run(tokens, null);
const steps = plain.steps;
const msPerToken = plain.decodeMs / steps;
let times: PhaseTimes | null = null;
let profiledMs = 0;
const detail: LayerDetail | null = layerDetail && phases ? { tokenMs: [], work: [] } : null;
if (layerDetail && !phases) usage('--layer-detail needs the phases (drop --no-phases)');
if (phases) {
  times = {};
  const r = run(tokens, times, detail);
  profiledMs = r.decodeMs;
  if (r.ids.join(',') !== plain.ids.join(',')) throw new Error('profiled run emitted different tokens');
}
const c = weights.config;
// the executor's per-layer totals (`layer N mixer` / `layer N ffn`, each the layer's norm, sublayer
// and residual add) are kept apart from the phases, which they overlap
const LAYER_KEY = /^layer (\d+) (mixer|ffn)$/;
const phaseRows = Object.entries(times ?? {}).filter(([k]) => !LAYER_KEY.test(k));
const layerRows = Array.from({ length: c.numLayers }, (_, layer) => ({ layer, mixer: times?.[`layer ${layer} mixer`] ?? 0, ffn: times?.[`layer ${layer} ffn`] ?? 0 }));
// --layer-detail: the per-layer phases (keys `L<n> <phase>`, also kept out of the phase table) and
// the spread of the steps' times in each layer half
const LAYER_PHASE_KEY = /^L(\d+) (.+)$/;
const phaseTable = phaseRows.filter(([k]) => !LAYER_PHASE_KEY.test(k));
const layerPhases = detail === null ? null : Array.from({ length: c.numLayers }, (_, layer) => Object.fromEntries(phaseRows
  .map(([k, v]) => [LAYER_PHASE_KEY.exec(k), v] as const)
  .filter(([m]) => m !== null && Number(m[1]) === layer && !LAYER_KEY.test(m[2]!))
  .sort((a, b) => b[1] - a[1])
  .map(([m, v]) => [m![2]!, v / steps])));
interface Spread { meanUs: number; medianUs: number; p90Us: number; p99Us: number; maxUs: number; tailShare: number }
const spreadOf = (ms: number[]): Spread => {
  const us = ms.map((v) => 1000 * v).sort((a, b) => a - b);
  const at = (q: number) => us[Math.min(us.length - 1, Math.floor(q * us.length))] ?? 0;
  const sum = us.reduce((a, b) => a + b, 0);
  const tail = us.filter((v) => v > 40).reduce((a, b) => a + b, 0);
  return { meanUs: us.length === 0 ? 0 : sum / us.length, medianUs: at(0.5), p90Us: at(0.9), p99Us: at(0.99), maxUs: us[us.length - 1] ?? 0, tailShare: sum === 0 ? 0 : tail / sum };
};
const layerSpread = detail === null ? null : Array.from({ length: c.numLayers }, (_, layer) => ({
  layer, mixer: spreadOf(detail.tokenMs[2 * layer] ?? []), ffn: spreadOf(detail.tokenMs[2 * layer + 1] ?? []),
}));
// each layer half's work counters per token (deterministic: the same in every run of a build)
const perTokenWork = (h: HalfWork | undefined) => Object.fromEntries(Object.entries(h ?? {}).map(([k, v]) => [k, v / steps])) as unknown as HalfWork;
const layerWork = detail === null ? null : Array.from({ length: c.numLayers }, (_, layer) => ({
  layer, mixer: perTokenWork(detail.work?.[2 * layer]), ffn: perTokenWork(detail.work?.[2 * layer + 1]),
}));
const distinct = new Set(plain.ids).size;
const instrPerSecond = plain.instructions / (plain.decodeMs / 1000);
const golden = elf !== undefined ? goldenRate(elf) : null;
if (json) {
  console.log(JSON.stringify({
    dir: path.basename(path.resolve(dir ?? elf ?? '')), chip: elf !== undefined ? chipLabel : null, profile, tokens: steps, loadMs, prefillMs: plain.prefillMs, msPerToken,
    tokensPerSecond: 1000 / msPerToken, firstStepMs: plain.firstMs,
    firstThousandTokens: cold.tokens, firstThousandMs: cold.ms, firstThousandTokensPerSecond, firstThousandPageFaults: cold.pageFaults,
    firstThousandMemory: { arrayBuffers: cold.arrayBuffers, rss: cold.rss }, firstThousandGc: coldGc, firstThousandThreadCpu: cold.threadCpu,
    firstThousandCurve: cold.curve, warmCurve: plain.curve, coldPlansCurve: coldPlansRun?.curve ?? null, coldRuns: coldRunsSummary,
    tokensPerInstruction: elf !== undefined && plain.instructions > 0 ? steps / plain.instructions : null,
    instructions: plain.instructions, instructionsPerSecond: elf !== undefined ? instrPerSecond : null,
    goldenInstructionsPerSecond: golden?.perSecond ?? null,
    wasmMemoryCarvedMiB: plain.carvedBytes === null ? null : plain.carvedBytes / 2 ** 20,
    workPerToken: { entries: plain.work.entries / steps, rows: plain.work.rows / steps, refolds: plain.work.refolds / steps, refoldEntries: plain.work.refoldEntries / steps, convChannels: plain.work.conv / steps, headSteps: plain.work.heads / steps, headsPassedOver: plain.work.headsPassed / steps, argmaxRows: plain.work.argmaxRows / steps, ffnMemoHits: plain.work.ffnMemoHits / steps },
    workPerTokenByMatrix: Object.fromEntries(DELTA_ROLES.map((r) => [r, Object.fromEntries(Object.entries(plain.work.byRole[r]).map(([k, v]) => [k, v / steps]))])),
    phasesMsPerToken: times && Object.fromEntries(phaseTable.map(([k, v]) => [k, v / steps])),
    layersMsPerToken: times && layerRows.map((l) => ({ layer: l.layer, mixer: l.mixer / steps, ffn: l.ffn / steps })),
    ...(layerPhases !== null ? { layerPhasesMsPerToken: layerPhases, layerTokenUs: layerSpread, layerWorkPerToken: layerWork } : {}),
  }));
} else {
  if (elf !== undefined) console.log(`chip: ${chipLabel}`);
  console.log(`checkpoint: ${c.numLayers} layers, hidden ${c.hiddenSize}, vocab ${c.vocabSize}, FFN ${c.intermediateSize} (loaded in ${Math.round(loadMs)} ms)`);
  console.log(`profile ${profile}, sequential, sparse; prompt [${PROMPT.join(', ')}] fed in ${plain.prefillMs.toFixed(1)} ms (decode path); ${steps} decode steps (${distinct} distinct ids)`);
  console.log(`cold start (the process's first run, no warm-up): ${cold.tokens} generated tokens in ${cold.ms.toFixed(0)} ms from the prompt's start, ${firstThousandTokensPerSecond.toFixed(1)} tokens/s (${cold.pageFaults.toLocaleString('en-US')} page faults: bench/page-faults.ts; then ${(cold.arrayBuffers / 2 ** 20).toFixed(1)} MiB of array buffers, ${(cold.rss / 2 ** 20).toFixed(0)} MiB resident; `
    + `${coldGc.scavenges} scavenges and ${coldGc.others} other collections, ${coldGc.ms.toFixed(1)} ms)`);
  if (cold.threadCpu) console.log(`  CPU in that window: main thread ${cold.threadCpu.mainMs.toFixed(0)} ms, V8's helper threads ${cold.threadCpu.helperMs.toFixed(0)} ms`);
  // where the cold run loses time against the timed run of the same program (a fresh executor on
  // warm code and built weight plans): ms from the prompt's start to the Nth generated token
  const curveLine = (cv: CurvePoint[]) => cv.map((p) => `${p.tokens}: ${p.ms.toFixed(0)}`).join(', ');
  console.log(`  ms from the prompt's start to generated token N — cold: ${curveLine(cold.curve)}; warm: ${curveLine(plain.curve)}`);
  if (coldPlansRun) console.log(`  warm code, weight plans to build (--cold-plans: a second copy of the chip): ${curveLine(coldPlansRun.curve)}`);
  if (coldRunsSummary) {
    const { tokensPerSecond: t, ms, pageFaults: f, gcMs } = coldRunsSummary;
    const flags = coldRunsSummary.nodeFlags === '' ? '' : ` (node ${coldRunsSummary.nodeFlags})`;
    console.log(`cold start over ${coldRunsSummary.runs} fresh processes${flags}: median ${t.median.toFixed(1)} tokens/s (${t.min.toFixed(1)}–${t.max.toFixed(1)}), `
      + `${ms.median.toFixed(0)} ms (${ms.min.toFixed(0)}–${ms.max.toFixed(0)}), ${Math.round(f.median).toLocaleString('en-US')} page faults (${f.min.toLocaleString('en-US')}–${f.max.toLocaleString('en-US')}), `
      + `${gcMs.median.toFixed(1)} ms of collections (${gcMs.min.toFixed(1)}–${gcMs.max.toFixed(1)})`);
    const tc = coldRunsSummary.threadCpu;
    if (tc) console.log(`  median CPU: main thread ${tc.mainMs.median.toFixed(0)} ms (${tc.mainMs.min.toFixed(0)}–${tc.mainMs.max.toFixed(0)}), helper threads ${tc.helperMs.median.toFixed(0)} ms (${tc.helperMs.min.toFixed(0)}–${tc.helperMs.max.toFixed(0)})`);
    console.log(`  median ms to generated token N: ${curveLine(coldRunsSummary.curve)}`);
  }
  console.log(`decode: ${msPerToken.toFixed(3)} ms/token, ${(1000 / msPerToken).toFixed(1)} tokens/s (process CPU time ${(plain.cpuMs / steps).toFixed(3)} ms/token)`);
  // the first step builds the sequence's incremental decode state (the GDN tracks; the projection
  // memos come from the prefill): part of the figure above, shown apart as it weighs on short programs
  if (steps > 1) console.log(`  first decode step ${plain.firstMs.toFixed(1)} ms, the other ${steps - 1}: ${((plain.decodeMs - plain.firstMs) / (steps - 1)).toFixed(3)} ms/token`);
  if (elf !== undefined && golden) {
    console.log(`instructions: ${plain.instructions} started in the decode steps (${(steps / plain.instructions).toFixed(2)} tokens/instruction), `
      + `${instrPerSecond.toFixed(1)} instructions/s through the weights; golden emulator on the same program: `
      + `${Math.round(golden.perSecond).toLocaleString('en-US')} instructions/s (same process)`);
  }
  if (plain.carvedBytes !== null) console.log(`wasm memory carved after the timed run: ${(plain.carvedBytes / 2 ** 20).toFixed(1)} MiB (its executor's arrays: address space, resident where written)`);
  const per = (v: number) => Math.round(v / steps).toLocaleString('en-US');
  console.log(`work per token (deterministic): ${per(plain.work.entries)} stored entries walked, ${per(plain.work.rows)} rows reached, ${per(plain.work.refolds)} refolded (${per(plain.work.refoldEntries)} entries); ${per(plain.work.conv)} conv channels recomputed, ${per(plain.work.heads)} GDN value-head steps (${per(plain.work.headsPassed)} more passed over: β = ±0); ${per(plain.work.argmaxRows)} LM-head rows folded by the bounded argmax; ${per(plain.work.ffnMemoHits)} FFN steps answered by the memo`);
  // the incremental matmuls' part of it, by the matrix computed (per token; calls = matrices per step)
  for (const r of DELTA_ROLES) {
    const w = plain.work.byRole[r];
    console.log(`  ${r.padEnd(12)} ${(w.calls / steps).toFixed(1).padStart(5)} calls, ${per(w.changedColumns).padStart(6)} changed input columns, ${per(w.entries).padStart(6)} entries walked, ${per(w.rows).padStart(6)} rows reached, ${per(w.refolds).padStart(5)} refolded (${per(w.refoldEntries)} entries)`);
  }
  if (times) {
    console.log(`phases (profiled run: ${(profiledMs / steps).toFixed(3)} ms/token):`);
    const rows = [...phaseTable].sort((a, b) => b[1] - a[1]);
    for (const [k, v] of rows) {
      console.log(`  ${k.padEnd(16)} ${(v / steps).toFixed(4).padStart(9)} ms/token  ${(100 * v / profiledMs).toFixed(1).padStart(5)} %`);
    }
    console.log('layers (the same run; each the layer\'s norm, sublayer and residual add), ms/token:');
    for (const l of layerRows) {
      const kind = weights.layers[l.layer]!.mixer.kind === 'linear_attention' ? 'GDN' : 'attention';
      console.log(`  layer ${String(l.layer).padStart(2)} ${kind.padEnd(9)} mixer ${(l.mixer / steps).toFixed(4)}  ffn ${(l.ffn / steps).toFixed(4)}`);
    }
    if (layerPhases !== null && layerSpread !== null) {
      console.log('by layer (--layer-detail): µs per token by phase; a step\'s µs in each half — mean, median, 90th / 99th percentile, greatest, and the part of the mean from steps above 40 µs:');
      const sp = (s: Spread) => `${s.meanUs.toFixed(1)} mean, ${s.medianUs.toFixed(1)} median, ${s.p90Us.toFixed(1)} / ${s.p99Us.toFixed(1)}, ${s.maxUs.toFixed(0)} max, ${(100 * s.tailShare).toFixed(0)} % over 40`;
      for (const l of layerSpread) {
        const ph = Object.entries(layerPhases[l.layer]!).map(([k, v]) => `${k} ${(1000 * v).toFixed(1)}`).join(', ');
        console.log(`  layer ${String(l.layer).padStart(2)}: ${ph}`);
        console.log(`    mixer ${sp(l.mixer)}; ffn ${sp(l.ffn)}`);
        const w = layerWork?.[l.layer];
        if (w) {
          const wk = (h: HalfWork) => `${h.entries.toFixed(0)} entries, ${h.rows.toFixed(0)} rows, ${h.convChannels.toFixed(1)} conv channels, ${h.headSteps.toFixed(1)} head steps (${h.headsBetaZero.toFixed(1)} passed over), ${h.ffnMemoHits.toFixed(2)} memo hits`;
          console.log(`    work per token: mixer ${wk(w.mixer)}; ffn ${wk(w.ffn)}`);
        }
      }
    }
  }
}
