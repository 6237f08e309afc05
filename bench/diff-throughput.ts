/**
 * `chipc diff` throughput on big sharded checkpoints: writes two synthetic checkpoints of
 * qwen3.5-4b-like tensors (a 248,320 × 2,560 BF16 embedding plus --layers 2,560 × 9,216 BF16
 * matrices; mostly zeros with a few non-zeros, streamed by the writer's sparse source), sharded
 * differently (A: 1 GB shards, B: 300 MB shards) and differing only in the last element of the
 * embedding. Then, each in a child process (for its own peak RSS, process.resourceUsage().maxRSS):
 * the streaming diff A vs B, the golden write of A, and the golden check of B against it. Prints
 * elements, bytes, wall time, MB/s, elements/s and peak RSS per run, `cat` of the same files as a
 * reference, one JSON line, and deletes everything. The page cache is not dropped (needs root).
 *
 *   npx tsx bench/diff-throughput.ts [--layers 8] [--chunk-mb 8]
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { diffCheckpoints } from '../src/inspect/diff.ts';
import { checkGolden, computeGolden, readGoldenFile, writeGoldenFile } from '../src/inspect/golden.ts';
import { sparseSource, writeCheckpoint } from '../src/safetensors/writer.ts';
import type { TensorSource } from '../src/safetensors/types.ts';

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(name);
  if (i < 0) return dflt;
  const v = Number(process.argv[i + 1]);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} needs a positive number`);
  return v;
}

interface ChildResult {
  mode: string;
  wallS: number;
  maxRssKb: number;
  elements: number;
  bytes: number;
  identical: boolean;
  detail: string;
}

/** Child mode: run one operation, print its figures as one JSON line. */
function child(mode: string, a: string, b: string, chunkBytes: number): void {
  const t0 = performance.now();
  let r: Omit<ChildResult, 'wallS' | 'maxRssKb' | 'mode'>;
  if (mode === 'diff') {
    const d = diffCheckpoints(a, b, { chunkBytes });
    const diffs = d.tensors.filter((t) => t.status !== 'identical');
    r = {
      elements: d.elementsCompared, bytes: d.bytesCompared, identical: d.identical,
      detail: diffs.map((t) => `${t.name}: ${t.count} differ, first at ${t.firstIndex} (${t.firstBitsA} vs ${t.firstBitsB})`).join('; '),
    };
  } else if (mode === 'write-golden') {
    const g = computeGolden(a, { chunkBytes });
    writeGoldenFile(b, g);
    let elements = 0;
    let bytes = 0;
    for (const t of Object.values(g.tensors)) {
      const n = t.shape.reduce((x, y) => x * y, 1);
      elements += n;
      bytes += n * 2; // all bench tensors are BF16
    }
    r = { elements, bytes, identical: true, detail: `${Object.keys(g.tensors).length} tensors` };
  } else {
    const c = checkGolden(a, readGoldenFile(b), { chunkBytes });
    r = {
      elements: c.elementsHashed, bytes: c.bytesHashed, identical: c.identical,
      detail: c.tensors.filter((t) => t.status !== 'identical').map((t) => `${t.name}: ${t.status}`).join('; '),
    };
  }
  const wallS = (performance.now() - t0) / 1000;
  const out: ChildResult = { mode, wallS, maxRssKb: process.resourceUsage().maxRSS, ...r };
  process.stdout.write(JSON.stringify(out) + '\n');
}

function sources(lastEmbed: number, layers: number): TensorSource[] {
  const V = 248_320;
  const H = 2_560;
  const I = 9_216;
  const out: TensorSource[] = [];
  // A few non-zeros spread over the embedding (one per 4,096 rows), and the last element.
  const idx: number[] = [];
  const val: number[] = [];
  for (let r = 0; r < V; r += 4096) { idx.push(r * H + (r % H)); val.push(1); }
  idx.push(V * H - 1);
  val.push(lastEmbed);
  out.push(sparseSource('model.embed_tokens.weight', 'BF16', [V, H], idx, new Float32Array(val)));
  for (let l = 0; l < layers; l++) {
    const n = H * I;
    const li: number[] = [];
    for (let k = l; k < n; k += 1_000_003) li.push(k);
    out.push(sparseSource(`model.layers.${String(l).padStart(2, '0')}.mlp.down_proj.weight`, 'BF16', [H, I], li, new Float32Array(li.length).fill(-2)));
  }
  return out;
}

function runChild(mode: string, a: string, b: string, chunkBytes: number): ChildResult {
  const self = fileURLToPath(import.meta.url);
  const r = spawnSync(process.execPath, ['--import', 'tsx', self, '--child', mode, a, b, String(chunkBytes)], { encoding: 'utf8', maxBuffer: 1 << 20 });
  if (r.status !== 0) throw new Error(`child ${mode} failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as ChildResult;
}

function main(): void {
  const layers = Math.round(arg('--layers', 8));
  const chunkBytes = Math.round(arg('--chunk-mb', 8) * 2 ** 20);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-bench-diff-'));
  try {
    const a = path.join(dir, 'a');
    const b = path.join(dir, 'b');
    const golden = path.join(dir, 'golden.json');
    const cfg = { 'config.json': '{"model_type": "qwen3_5_text"}\n' };
    let t0 = performance.now();
    writeCheckpoint(a, sources(1.5, layers), { maxShardSize: 1_000_000_000, extraFiles: cfg });
    writeCheckpoint(b, sources(1.75, layers), { maxShardSize: 300_000_000, extraFiles: cfg });
    const writeS = (performance.now() - t0) / 1000;
    const shardsA = fs.readdirSync(a).filter((f) => f.endsWith('.safetensors')).length;
    const shardsB = fs.readdirSync(b).filter((f) => f.endsWith('.safetensors')).length;
    t0 = performance.now();
    const cat = spawnSync('sh', ['-c', 'cat "$1"/*.safetensors "$2"/*.safetensors > /dev/null', 'sh', a, b], { stdio: 'inherit' });
    const catS = (performance.now() - t0) / 1000;
    if (cat.status !== 0) throw new Error('cat failed');
    const runs = [runChild('diff', a, b, chunkBytes), runChild('write-golden', a, golden, chunkBytes), runChild('check-golden', b, golden, chunkBytes)];
    const size = (d: string) => fs.readdirSync(d).reduce((s, f) => s + fs.statSync(path.join(d, f)).size, 0);
    const diskBytes = size(a) + size(b);
    console.log(`checkpoints: ${layers + 1} tensors each; A ${shardsA} shard(s), B ${shardsB} shard(s); ${(diskBytes / 1e9).toFixed(2)} GB on disk; written in ${writeS.toFixed(1)} s`);
    console.log(`cat A B > /dev/null: ${catS.toFixed(2)} s, ${(diskBytes / 1e6 / catS).toFixed(0)} MB/s`);
    for (const r of runs) {
      // diff reads both sides: bytes read = 2 × bytes compared.
      const read = r.mode === 'diff' ? 2 * r.bytes : r.bytes;
      console.log(`${r.mode.padEnd(13)} ${r.elements.toLocaleString('en-US')} elements, ${(r.bytes / 1e9).toFixed(2)} GB per side, ` +
        `${r.wallS.toFixed(2)} s, ${(read / 1e6 / r.wallS).toFixed(0)} MB/s read, ${(r.elements / r.wallS / 1e6).toFixed(0)} M elements/s, ` +
        `peak RSS ${(r.maxRssKb / 1024).toFixed(0)} MiB; ${r.identical ? 'identical' : 'different'}${r.detail ? ` (${r.detail})` : ''}`);
    }
    console.log(JSON.stringify({ bench: 'diff-throughput', layers, chunkBytes, diskBytes, shardsA, shardsB, catS, runs }));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const ci = process.argv.indexOf('--child');
if (ci >= 0) child(process.argv[ci + 1]!, process.argv[ci + 2]!, process.argv[ci + 3]!, Number(process.argv[ci + 4]));
else main();
