/**
 * Compact `.chip` figures: compiles the RV32 chip (src/cpu/cpu.ts) for each target,
 * writes the dense checkpoint into a temp dir, compacts it to a `.chip`, expands it back, checks
 * that every expanded file equals the original byte for byte (`cmp`), and prints the dense size,
 * the .chip size, the save / compact / expand wall times and the peak RSS. Temp files are removed.
 *
 *   npx tsx bench/chip-file.ts [--targets chip-test,qwen3.5-4b] [--dtype bf16|f32] [--code-words 1024]
 *                              [--mem-bytes chip-test=32768,qwen3.5-4b=8192] [--direct] [--codec br|none] [--json]
 *
 * `--codec` (default br): the .chip codec (docs/chip-file.md: br = version 2, brotli frames; none =
 * version 1); `--codec br,none` writes both from the same compile (one row each). Rows also give the number of tensors stored with codec br and, for --direct, the
 * time to read every tensor's bytes back through the reader (chunks(), inflating frames).
 *
 * `--direct`: no dense checkpoint at all: writes the `.chip` straight from the compiled weights
 * (writeChipFromSources, as `chipc compile --chip`), opens it (full validation) and prints its size, the
 * write wall time and the peak RSS; for targets whose dense form is too big to write here.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { compileCircuit } from '../src/compile.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { modelCheckpointParts, saveModel } from '../src/model/save-weights.ts';
import { writeChipFromSources } from '../src/chipfile/from-sources.ts';
import { openChipFile } from '../src/chipfile/read.ts';
import { compactCheckpoint } from '../src/chipfile/compact.ts';
import { expandChipFile } from '../src/chipfile/expand.ts';
import { cpuCircuit } from '../src/cpu/cpu.ts';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1]! : dflt;
}

const targets = arg('--targets', 'chip-test').split(',');
const dtype = arg('--dtype', 'bf16') === 'f32' ? 'F32' : 'BF16';
const codeWords = Number(arg('--code-words', '1024'));
const memBytes = new Map(arg('--mem-bytes', 'chip-test=32768,qwen3.5-4b=8192').split(',').map((kv) => {
  const [k, v] = kv.split('=');
  return [k!, Number(v)] as const;
}));
const json = process.argv.includes('--json');
const direct = process.argv.includes('--direct');
const codecs = arg('--codec', 'br').split(',').map((c) => (c === 'none' ? 'none' as const : 'br' as const));
const brTensors = (chip: string): number => {
  const f = openChipFile(chip);
  try {
    return f.manifest.files.reduce((s, x) => s + (x.kind === 'safetensors' ? x.tensors.filter((t) => t.codec === 'br').length : 0), 0);
  } finally {
    f.close();
  }
};

const dirBytes = (d: string): number => fs.readdirSync(d).reduce((s, n) => s + fs.statSync(path.join(d, n)).size, 0);
const mb = (n: number): string => (n / 1e6).toFixed(2);

const rows: Record<string, number | string | boolean>[] = [];
for (const name of targets) {
  const target = resolveTarget(name);
  const mem = memBytes.get(name) ?? 8192;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-bench-chip-'));
  try {
    const t0 = performance.now();
    const ir = buildCircuit(cpuCircuit({ codeWords, memWords: mem / 4}), 'src/cpu/cpu.ts');
    const res = compileCircuit(ir, target.config);
    const t1 = performance.now();
    if (direct) {
      for (const codec of codecs) {
        const t1c = performance.now();
        const chip = path.join(tmp, `direct-${codec}.chip`);
        const { sources, extraFiles } = modelCheckpointParts(res.weights, dtype);
        const c = writeChipFromSources(chip, sources, { extraFiles, codec });
        const t2 = performance.now();
        const f = openChipFile(chip);
        const t3 = performance.now();
        let readBytes = 0;
        for (const n of f.names) for (const part of f.chunks(n)) readBytes += part.length;
        const t4 = performance.now();
        f.close();
        rows.push({
          target: name, dtype, codec, mode: 'direct', files: c.files, tensors: c.tensors, brTensors: brTensors(chip), blocks: c.blocks,
          denseBytes: c.denseBytes, chipBytes: c.chipBytes, blockBytes: c.blockBytes,
          compileS: +((t1 - t0) / 1000).toFixed(2), chipWriteS: +((t2 - t1c) / 1000).toFixed(2), openS: +((t3 - t2) / 1000).toFixed(2),
          readAllS: +((t4 - t3) / 1000).toFixed(2), readAllBytes: readBytes,
          peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
        });
        fs.rmSync(chip);
      }
      continue;
    }
    const dense = path.join(tmp, 'dense');
    saveModel(dense, res.weights, { dtype });
    const t2 = performance.now();
    for (const codec of codecs) {
      const t2c = performance.now();
      const chip = path.join(tmp, `chip-${codec}.chip`);
      const c = compactCheckpoint(dense, chip, { codec });
      const t3 = performance.now();
      const back = path.join(tmp, `back-${codec}`);
      expandChipFile(chip, back);
      const t4 = performance.now();
      const files = fs.readdirSync(dense).sort();
      const identical = files.every((f) => spawnSync('cmp', ['-s', path.join(dense, f), path.join(back, f)]).status === 0)
        && fs.readdirSync(back).sort().join() === files.join();
      rows.push({
        target: name, dtype, codec, files: files.length, tensors: c.tensors, brTensors: brTensors(chip), blocks: c.blocks,
        denseBytes: dirBytes(dense), chipBytes: c.chipBytes, blockBytes: c.blockBytes,
        compileS: +((t1 - t0) / 1000).toFixed(2), saveS: +((t2 - t1) / 1000).toFixed(2),
        compactS: +((t3 - t2c) / 1000).toFixed(2), expandS: +((t4 - t3) / 1000).toFixed(2),
        identical, peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
      });
      fs.rmSync(back, { recursive: true, force: true });
      fs.rmSync(chip);
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

if (json) {
  console.log(JSON.stringify(rows));
} else {
  for (const r of rows) {
    if (r.mode === 'direct') {
      console.log(`${r.target} (${r.dtype}), compile --chip (codec ${r.codec}): .chip ${mb(r.chipBytes as number)} MB for a ${mb(r.denseBytes as number)} MB dense form ` +
        `(${r.files} files, ${r.tensors} tensors, ${r.brTensors} with br, ${r.blocks} blocks, ${mb(r.blockBytes as number)} MB of block bytes); ` +
        `compile ${r.compileS} s, .chip write ${r.chipWriteS} s, open+validate ${r.openS} s, read all tensors ${r.readAllS} s; peak RSS ${r.peakRssMiB} MiB`);
      continue;
    }
    console.log(`${r.target} (${r.dtype}, codec ${r.codec}): dense ${mb(r.denseBytes as number)} MB in ${r.files} files → .chip ${mb(r.chipBytes as number)} MB ` +
      `(${r.tensors} tensors, ${r.brTensors} with br, ${r.blocks} blocks, ${mb(r.blockBytes as number)} MB of block bytes, ratio ${((r.denseBytes as number) / (r.chipBytes as number)).toFixed(0)}×); ` +
      `compile ${r.compileS} s, save ${r.saveS} s, compact ${r.compactS} s, expand ${r.expandS} s; ` +
      `byte-identical: ${r.identical}; peak RSS ${r.peakRssMiB} MiB`);
  }
  console.log(JSON.stringify(rows));
}
