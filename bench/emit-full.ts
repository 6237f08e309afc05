/**
 * Dense emission of the RV32 chip at full model shapes (issue 6): compiles src/cpu/cpu.ts
 * once per target, writes the dense bf16 checkpoint (saveModel → writeCheckpoint, streaming,
 * sharded) into a temporary directory, and reports tensors, elements, non-zeros, bytes, shards,
 * the emission's wall time, peak RSS (each target runs in a child process, so the figure is that
 * target's), and the throughput ratio to copying the same bytes on the same disk in the same run
 * (copy time / emit time: each shard copied with fs.copyFileSync and fsynced, as emission fsyncs
 * each shard). `--determinism` emits a second time and compares the sha256 of every file.
 * Zero runs of ≥ 64 KiB are left as holes, as `chipc compile -o DIR` leaves them; `--no-holes`
 * writes every byte. The copy is of the bytes (a sendfile copy writes the holes' zeros).
 *   npx tsx bench/emit-full.ts [--targets qwen3.5-4b,qwen3-coder-next] [--code-words 1024]
 *                              [--mem-bytes 8192] [--dtype bf16|f32] [--determinism] [--no-holes] [--json]
 * At qwen3-coder-next the vocabulary is extended from 151,936 to 248,320 ids (the chip's 248,197
 * token ids, rounded up to a multiple of 256), as a merge into that host would extend it.
 * Temporary files go under os.tmpdir() (or --dir DIR) and are removed, also on failure.
 * Each dense checkpoint is several GB: the run needs about twice that free (emit + copy).
 */
import { sha256File } from '../src/chip/cache.ts';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileCircuit, layerNonZeros } from '../src/compile.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { saveModel } from '../src/model/save-weights.ts';
import type { Matrix, ModelWeights } from '../src/model/weights.ts';
import { cpuCircuit } from '../src/cpu/cpu.ts';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1]! : dflt;
}

interface TargetFigures {
  target: string;
  /** Vocabulary emitted, and whether it was extended beyond the target's for the chip's token ids. */
  vocab: number;
  vocabWidened: boolean;
  layers: number;
  hidden: number;
  tensors: number;
  elements: number;
  nonZeros: number;
  bytes: number;
  shards: number;
  compileSeconds: number;
  emitSeconds: number;
  copySeconds: number;
  /** copy time / emit time (≥ 1: emission as fast as a plain copy). */
  copyRatio: number;
  emitMiBps: number;
  copyMiBps: number;
  /** process.resourceUsage().maxRSS after the compile and at the end (MiB). */
  peakRssAfterCompileMiB: number;
  peakRssMiB: number;
  deterministic: boolean | null;
}

function matrixNonZeros(m: Matrix): number {
  let n = 0;
  for (const v of m.csr ? m.csr.values : (m.dense ?? [])) if (v !== 0) n++;
  return n;
}

/** Non-zero elements of every emitted tensor (the layers as layerNonZeros counts, plus I/O and the final norm). */
function weightsNonZeros(w: ModelWeights): number {
  let n = matrixNonZeros(w.embedTokens) + (w.config.tieWordEmbeddings ? 0 : matrixNonZeros(w.lmHead));
  for (const v of w.norm) if (v !== 0) n++;
  for (let i = 0; i < w.layers.length; i++) n += layerNonZeros(w, i);
  return n;
}


function hashDir(dir: string): Map<string, string> {
  return new Map(fs.readdirSync(dir).sort().map((f) => [f, sha256File(path.join(dir, f))]));
}

const rssMiB = (): number => Math.round(process.resourceUsage().maxRSS / 1024); // maxRSS is in KiB

/** One target, in this process (the child). */
function runTarget(name: string, work: string, codeWords: number, memBytes: number, dtype: 'BF16' | 'F32', determinism: boolean): TargetFigures {
  const target = resolveTarget(name);
  const t0 = performance.now();
  const ir = buildCircuit(cpuCircuit({ codeWords, memWords: memBytes / 4}), 'src/cpu/cpu.ts');
  // The chip's token alphabet (248,197 ids) is larger than Qwen3-Next's vocabulary (151,936): the
  // compiler refuses that (fit.vocab), and a merge extends the host's vocabulary for the trace
  // tokens. Emit at the host's shape with the vocabulary extended to the next multiple of 256.
  const vocab = Math.max(target.config.vocabSize, Math.ceil(ir.vocab / 256) * 256);
  const res = compileCircuit(ir, { ...target.config, vocabSize: vocab });
  const compileSeconds = (performance.now() - t0) / 1000;
  const peakRssAfterCompileMiB = rssMiB();

  const out = path.join(work, 'emit');
  const t1 = performance.now();
  const w = saveModel(out, res.weights, { dtype, holes, metadata: { chipc_circuit: ir.name, chipc_target: target.name } });
  const emitSeconds = (performance.now() - t1) / 1000;
  const shardFiles = w.files.filter((f) => f.endsWith('.safetensors'));
  const bytes = shardFiles.reduce((s, f) => s + fs.statSync(path.join(out, f)).size, 0);

  // The same bytes copied on the same disk: each shard copied and fsynced, as emission fsyncs.
  const copyDir = path.join(work, 'copy');
  fs.mkdirSync(copyDir);
  const t2 = performance.now();
  for (const f of shardFiles) {
    const dst = path.join(copyDir, f);
    fs.copyFileSync(path.join(out, f), dst);
    const fd = fs.openSync(dst, 'r+');
    fs.fsyncSync(fd);
    fs.closeSync(fd);
  }
  const copySeconds = (performance.now() - t2) / 1000;
  fs.rmSync(copyDir, { recursive: true, force: true });

  let deterministic: boolean | null = null;
  if (determinism) {
    const first = hashDir(out);
    fs.rmSync(out, { recursive: true, force: true });
    const again = path.join(work, 'emit2');
    saveModel(again, res.weights, { dtype, holes, metadata: { chipc_circuit: ir.name, chipc_target: target.name } });
    const second = hashDir(again);
    deterministic = first.size === second.size && [...first].every(([f, h]) => second.get(f) === h);
    fs.rmSync(again, { recursive: true, force: true });
  }
  fs.rmSync(out, { recursive: true, force: true });
  const MiB = 1024 * 1024;
  return {
    target: name,
    vocab,
    vocabWidened: vocab !== target.config.vocabSize,
    layers: res.layers.length,
    hidden: res.frame.hidden,
    tensors: Object.keys(w.weightMap).length,
    elements: w.totalParameters,
    nonZeros: weightsNonZeros(res.weights),
    bytes,
    shards: shardFiles.length,
    compileSeconds: round(compileSeconds, 1),
    emitSeconds: round(emitSeconds, 2),
    copySeconds: round(copySeconds, 2),
    copyRatio: round(copySeconds / emitSeconds, 3),
    emitMiBps: Math.round(bytes / MiB / emitSeconds),
    copyMiBps: Math.round(bytes / MiB / copySeconds),
    peakRssAfterCompileMiB,
    peakRssMiB: rssMiB(),
    deterministic,
  };
}

function round(x: number, digits: number): number {
  return Number(x.toFixed(digits));
}

const codeWords = Number(arg('--code-words', '1024'));
const memBytes = Number(arg('--mem-bytes', '8192'));
const dtype = arg('--dtype', 'bf16') === 'f32' ? 'F32' : 'BF16';
const determinism = process.argv.includes('--determinism');
/** `--no-holes`: write every zero byte (the default leaves zero runs of ≥ 64 KiB as holes). */
const holes = !process.argv.includes('--no-holes');

if (process.argv.includes('--child')) {
  const name = arg('--child', '');
  const work = arg('--work', '');
  const figures = runTarget(name, work, codeWords, memBytes, dtype, determinism);
  process.stdout.write(`RESULT ${JSON.stringify(figures)}\n`);
} else {
  const targets = arg('--targets', 'qwen3.5-4b,qwen3-coder-next').split(',');
  const base = arg('--dir', os.tmpdir());
  const self = fileURLToPath(import.meta.url);
  const rows: TargetFigures[] = [];
  for (const name of targets) {
    const work = fs.mkdtempSync(path.join(base, 'chipc-emit-full-'));
    try {
      const args = [...process.execArgv, self, '--child', name, '--work', work, '--code-words', String(codeWords),
        '--mem-bytes', String(memBytes), '--dtype', dtype === 'F32' ? 'f32' : 'bf16', ...(determinism ? ['--determinism'] : []), ...(holes ? [] : ['--no-holes'])];
      const r = spawnSync(process.execPath, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 24 });
      const line = (r.stdout ?? '').split('\n').find((l) => l.startsWith('RESULT '));
      if (r.status !== 0 || !line) {
        process.stderr.write(r.stdout ?? '');
        throw new Error(`target ${name}: child exited with ${r.status ?? r.signal}`);
      }
      rows.push(JSON.parse(line.slice('RESULT '.length)) as TargetFigures);
      process.stderr.write(`${line}\n`); // kept even if a later target fails
    } finally {
      fs.rmSync(work, { recursive: true, force: true });
    }
  }
  const cols = Object.keys(rows[0]!) as (keyof TargetFigures)[];
  console.log(cols.join('\t'));
  for (const r of rows) {
    console.log(cols.map((c) => (typeof r[c] === 'number' ? (r[c] as number).toLocaleString('en-US') : String(r[c]))).join('\t'));
  }
  if (process.argv.includes('--json')) console.log(JSON.stringify(rows));
}
