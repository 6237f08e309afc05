/**
 * Reader throughput benchmark: writes a safetensors file of --size-gb GB (default 2) of non-zero
 * data into a temp dir, reads every tensor through `chunks()`, times `cat FILE > /dev/null` on the
 * same file, prints a table and one JSON line, and deletes the file.
 * The page cache is not dropped (that needs root): both numbers usually measure cached reads.
 *
 *   npx tsx bench/safetensors-read.ts [--size-gb 2] [--chunk-mb 16]
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { openSafetensors } from '../src/safetensors/reader.ts';
import type { TensorSource } from '../src/safetensors/types.ts';
import { writeSafetensors } from '../src/safetensors/writer.ts';

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(name);
  if (i < 0) return dflt;
  const v = Number(process.argv[i + 1]);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} needs a positive number`);
  return v;
}

const sizeGb = arg('--size-gb', 2);
const chunkBytes = Math.round(arg('--chunk-mb', 16) * 2 ** 20);
const totalBytes = Math.round(sizeGb * 1e9);
const tensorBytes = 64 * 2 ** 20;
const pattern = new Uint8Array(4 * 2 ** 20).map((_, i) => (i * 2654435761) >>> 24 | 1);

const sources: TensorSource[] = [];
for (let off = 0, i = 0; off < totalBytes; off += tensorBytes, i++) {
  const bytes = Math.min(tensorBytes, totalBytes - off) & ~3;
  if (bytes === 0) break;
  sources.push({
    name: `layer.${String(i).padStart(4, '0')}.weight`, dtype: 'F32', shape: [bytes / 4],
    *chunks() { for (let s = 0; s < bytes; s += pattern.length) yield pattern.subarray(0, Math.min(pattern.length, bytes - s)); },
  });
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-bench-'));
const file = path.join(dir, 'bench.safetensors');
try {
  let t0 = performance.now();
  writeSafetensors(file, sources);
  const writeS = (performance.now() - t0) / 1000;
  const fileBytes = fs.statSync(file).size;

  t0 = performance.now();
  const st = openSafetensors(file);
  let read = 0;
  for (const n of st.names) for (const c of st.chunks(n, chunkBytes)) read += c.length;
  st.close();
  const readerS = (performance.now() - t0) / 1000;

  t0 = performance.now();
  const cat = spawnSync('sh', ['-c', 'cat "$1" > /dev/null', 'sh', file], { stdio: 'inherit' });
  const catS = (performance.now() - t0) / 1000;
  if (cat.status !== 0) throw new Error('cat failed');

  const gb = (b: number, s: number): number => Math.round((b / 1e9 / s) * 100) / 100;
  const rows = [
    ['what', 'bytes', 'seconds', 'GB/s'],
    ['write (writeSafetensors)', String(fileBytes), writeS.toFixed(3), String(gb(fileBytes, writeS))],
    [`reader chunks (${chunkBytes / 2 ** 20} MiB)`, String(read), readerS.toFixed(3), String(gb(read, readerS))],
    ['cat FILE > /dev/null', String(fileBytes), catS.toFixed(3), String(gb(fileBytes, catS))],
  ];
  const w = rows[0].map((_, j) => Math.max(...rows.map((r) => r[j].length)));
  for (const r of rows) console.log(r.map((c, j) => c.padEnd(w[j])).join('  '));
  console.log(JSON.stringify({
    bench: 'safetensors-read', sizeGb, tensors: sources.length, chunkBytes, fileBytes,
    writeGBps: gb(fileBytes, writeS), readerGBps: gb(read, readerS), catGBps: gb(fileBytes, catS),
    readerVsCat: Math.round((catS / readerS) * 100) / 100,
  }));
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
