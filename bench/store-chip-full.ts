/**
 * The store's random workload through the compiled weights at full capacity, in segments
 * (src/store/segments.ts): resumable, and shardable over processes.
 *
 *   npx tsx bench/store-chip-full.ts [--ops 10000] [--segment-ops 100] [--shard I/N] [--max-minutes M]
 *                                    [--capacity full|small] [--engine weights|ir] [--log FILE] [--summary]
 *
 * Each segment is a store session on the chip, opened from the reference model's state before
 * its first operation and checked at its end against the model's state after its last, so the
 * segments together are the continuous workload (the module comment of src/store/segments.ts).
 * Every finished segment appends one JSON line to the log (default
 * .bench-data/store-full/<capacity>-<engine>-<ops>x<segment-ops>.jsonl, git-ignored); a run skips
 * the segments the log already holds, so it can stop at any time (--max-minutes: start no segment
 * after M minutes) and go on later. The log's first line names the run (store parameters, seed,
 * the store image's SHA-256, target, the chip's weights' SHA-256, engine); a run whose identity
 * differs refuses the log.
 * --shard I/N runs only the segments with index ≡ I mod N (one process per core). --summary only
 * prints what the log holds. A wrong answer, token or end state stops the run with an error
 * naming the segment and operation (nothing is logged for that segment).
 */
import { Command } from 'commander';
import { execSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ChipStore, CHIP_STORE_DEFAULTS, CHIP_STORE_SMALL, STORE_ELF } from '../src/store/chip.ts';
import { resolveStoreParams, type StoreParams } from '../src/store/model.ts';
import { runSegment, segmentPlan, type SegmentResult } from '../src/store/segments.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { goldenHashes } from '../src/emit/golden.ts';

const o = new Command()
  .option('--capacity <c>', 'full or small', 'full')
  .option('--ops <n>', 'workload operations', '10000')
  .option('--segment-ops <n>', 'operations per segment (one chip session each)', '100')
  .option('--seed <n>', 'workload seed', '2026')
  .option('--engine <e>', 'weights or ir', 'weights')
  .option('--target <t>', 'target', 'chip-test')
  .option('--shard <i/n>', 'run the segments with index ≡ i mod n', '0/1')
  .option('--max-minutes <m>', 'start no segment after this many minutes')
  .option('--log <file>', 'segment log (JSON lines)')
  .option('--summary', 'print the log\'s summary only')
  .parse().opts<{ capacity: string; ops: string; segmentOps: string; seed: string; engine: 'weights' | 'ir'; target: string; shard: string; maxMinutes?: string; log?: string; summary?: boolean }>();

const params: StoreParams = o.capacity === 'small'
  ? resolveStoreParams(CHIP_STORE_SMALL)
  : resolveStoreParams(CHIP_STORE_DEFAULTS);
const plan = segmentPlan(params, Number(o.seed), Number(o.ops), Number(o.segmentOps));
const shard = /^(\d+)\/(\d+)$/.exec(o.shard);
if (!shard || Number(shard[1]) >= Number(shard[2])) {
  console.error(`--shard must be I/N with 0 ≤ I < N, got ${o.shard}`);
  process.exit(2);
}
const [shardIndex, shardCount] = [Number(shard[1]), Number(shard[2])];

const target = resolveTarget(o.target).config;
const t0 = performance.now();
const { res, memBytes } = ChipStore.compile(params, target);
// The chip's identity: the SHA-256 of its float32 tensors' hashes (src/emit/golden.ts), so that
// segments of two different chips never count as one run.
const chipSha256 = createHash('sha256').update(JSON.stringify(goldenHashes(res, o.target, 'F32').tensors)).digest('hex');
const identity = {
  bench: 'store-chip-full', capacity: o.capacity, params, seed: plan.seed, ops: plan.count, segmentOps: plan.segmentOps,
  storeElfSha256: createHash('sha256').update(fs.readFileSync(STORE_ELF)).digest('hex'), target: o.target, chipSha256, engine: o.engine,
};
const logFile = o.log ?? path.join('.bench-data', 'store-full', `${o.capacity}-${o.engine}-${plan.count}x${plan.segmentOps}.jsonl`);

type LoggedSegment = SegmentResult & { commit: string; date: string; host: string; cpu: string };

/** The log's segments (by index); creates the log with its identity line when missing. */
function readLog(): Map<number, LoggedSegment> {
  if (!fs.existsSync(logFile)) {
    fs.mkdirSync(path.dirname(logFile), { recursive: true });
    fs.writeFileSync(logFile, JSON.stringify(identity) + '\n');
  }
  const lines = fs.readFileSync(logFile, 'utf8').split('\n').filter((l) => l !== '');
  if (lines[0] !== JSON.stringify(identity)) {
    console.error(`${logFile} belongs to another run:\n  its run: ${lines[0]}\n  this run: ${JSON.stringify(identity)}\n(use another --log, or remove the file)`);
    process.exit(2);
  }
  const done = new Map<number, LoggedSegment>();
  for (const l of lines.slice(1)) {
    const s = JSON.parse(l) as LoggedSegment;
    done.set(s.index, s);
  }
  return done;
}

function ranges(xs: number[]): string {
  const out: string[] = [];
  for (let i = 0; i < xs.length; i++) {
    let j = i;
    while (j + 1 < xs.length && xs[j + 1] === xs[j]! + 1) j++;
    out.push(i === j ? `${xs[i]}` : `${xs[i]}–${xs[j]}`);
    i = j;
  }
  return out.join(', ');
}

function summary(done: Map<number, LoggedSegment>): void {
  const segs = [...done.values()].sort((a, b) => a.index - b.index);
  const sum = (f: (s: LoggedSegment) => number) => segs.reduce((a, s) => a + f(s), 0);
  const codes: Record<string, number> = {};
  for (const s of segs) for (const [k, v] of Object.entries(s.codes)) codes[k] = (codes[k] ?? 0) + v;
  const missing = Array.from({ length: plan.segments }, (_, i) => i).filter((i) => !done.has(i));
  const tokens = sum((s) => s.tokens);
  const seconds = sum((s) => s.seconds);
  console.log(`${logFile}: ${segs.length} of ${plan.segments} segments, ${sum((s) => s.ops).toLocaleString('en-US')} of ${plan.count.toLocaleString('en-US')} operations, 0 mismatches`);
  console.log(`  tokens ${tokens.toLocaleString('en-US')} (generated ${sum((s) => s.generatedTokens).toLocaleString('en-US')}), instructions ${sum((s) => s.instructions).toLocaleString('en-US')}, ` +
    `${seconds.toFixed(0)} s of segment time (${(tokens / Math.max(seconds, 1e-9)).toFixed(0)} tokens/s per process)`);
  console.log(`  answers ${JSON.stringify(codes)}`);
  if (segs.length > 0) {
    // the wall-clock span the logged segments ran in (a segment's start: its end date minus its time)
    const starts = segs.map((s) => Date.parse(s.date) - 1000 * s.seconds);
    const ends = segs.map((s) => Date.parse(s.date));
    const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
    console.log(`  ran between ${iso(Math.min(...starts))} and ${iso(Math.max(...ends))}; slowest segment ${Math.max(...segs.map((s) => s.seconds)).toFixed(0)} s, largest ${Math.max(...segs.map((s) => s.tokens)).toLocaleString('en-US')} tokens`);
  }
  console.log(`  commits ${[...new Set(segs.map((s) => s.commit))].join(', ') || '—'}; hosts ${[...new Set(segs.map((s) => s.host))].join(', ') || '—'}`);
  console.log(missing.length === 0 ? '  every segment done: the whole workload ran through the chip' : `  to run: ${ranges(missing)}`);
}

let done = readLog();
if (o.summary) {
  summary(done);
  process.exit(0);
}

const commit = (() => {
  try {
    const head = execSync('git rev-parse --short HEAD', { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
    const dirty = execSync('git status --porcelain --untracked-files=no', { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim() !== '';
    return dirty ? `${head}+changes` : head;
  } catch {
    return 'unknown';
  }
})();
console.log(`chip compiled in ${((performance.now() - t0) / 1000).toFixed(1)} s (${res.weights.config.numLayers} layers, ${memBytes / 1024} KiB data RAM); shard ${shardIndex}/${shardCount}`);
const deadline = o.maxMinutes === undefined ? Infinity : t0 + Number(o.maxMinutes) * 60_000;

for (let index = shardIndex; index < plan.segments; index += shardCount) {
  if (performance.now() > deadline) {
    console.log(`--max-minutes reached: stopping before segment ${index}`);
    break;
  }
  done = readLog(); // another shard may have run it
  if (done.has(index)) continue;
  const r = runSegment(plan, index, { target, engine: o.engine, compiled: res, memBytes });
  const logged: LoggedSegment = { ...r, seconds: +r.seconds.toFixed(2), commit, date: new Date().toISOString(), host: os.hostname(), cpu: os.cpus()[0]?.model ?? 'unknown' };
  fs.appendFileSync(logFile, JSON.stringify(logged) + '\n');
  console.log(`segment ${index}: operations ${r.firstOp}–${r.firstOp + r.ops - 1}, ${r.tokens} tokens in ${r.seconds.toFixed(1)} s (${(r.tokens / r.seconds).toFixed(0)} tokens/s), ${r.files} files after, answers ${JSON.stringify(r.codes)}`);
}
summary(readLog());
