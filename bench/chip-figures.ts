/**
 * The chip's size figures (issue 4): layers, residual slots, heads (GDN key heads + attention
 * heads), FFN units and non-zeros (chip layers alone and with the embedding / LM head) of
 * circuits/rv32im/cpu.ts compiled for each target, with the code and data RAM sizes given.
 *   npx tsx bench/chip-figures.ts [--targets chip-test,qwen3.5-4b] [--code-words 1024]
 *                                 [--mem-bytes chip-test=32768,qwen3.5-4b=8192] [--json]
 * A data RAM must fit one GDN layer's key heads (qwen3.5-4b: 16 key heads × 128 rows of one
 * 32-bit word = 8 KiB; chip-test: 64 × 128 = 32 KiB); a bigger one is a `fit.ram` error.
 */
import { compileCircuit } from '../src/compile.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import { resolveTarget } from '../src/model/targets.ts';
import type { Matrix } from '../src/model/weights.ts';
import { cpuCircuit } from '../circuits/rv32im/cpu.ts';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1]! : dflt;
}

const targets = arg('--targets', 'chip-test,qwen3.5-4b').split(',');
const codeWords = Number(arg('--code-words', '1024'));
const memBytes = new Map(arg('--mem-bytes', 'chip-test=32768,qwen3.5-4b=8192').split(',').map((kv) => {
  const [k, v] = kv.split('=');
  return [k!, Number(v)] as const;
}));

const rows: Record<string, number | string>[] = [];
for (const name of targets) {
  const target = resolveTarget(name);
  const mem = memBytes.get(name) ?? 8192;
  const t0 = performance.now();
  const ir = buildCircuit(cpuCircuit({ codeWords, memWords: mem / 4}), 'circuits/rv32im/cpu.ts');
  const res = compileCircuit(ir, target.config);
  const seconds = (performance.now() - t0) / 1000;
  const chipNonZeros = res.layers.reduce((s, l) => s + l.nonZeros, 0);
  const nz = (m: Matrix): number => (m.csr ? m.csr.values.length : (m.dense ?? new Float32Array()).reduce((s, v) => s + (v !== 0 ? 1 : 0), 0));
  const io = nz(res.weights.embedTokens) + (res.weights.lmHead === res.weights.embedTokens ? 0 : nz(res.weights.lmHead));
  rows.push({
    target: name,
    codeBytes: 4 * codeWords,
    memBytes: mem,
    layers: res.layers.length,
    hidden: res.frame.hidden,
    slots: res.packing.slotsUsed,
    liveMax: res.packing.liveMax,
    gdnKeyHeads: res.layers.filter((l) => l.type === 'linear_attention').reduce((s, l) => s + l.heads, 0),
    attentionHeads: res.layers.filter((l) => l.type === 'full_attention').reduce((s, l) => s + l.heads, 0),
    ffnUnits: res.layers.reduce((s, l) => s + l.units, 0),
    clearUnits: res.layers.reduce((s, l) => s + l.clearUnits, 0),
    chipNonZeros,
    embeddingLmHeadNonZeros: io,
    nodes: ir.nodes.length,
    compileSeconds: Number(seconds.toFixed(1)),
  });
}
const cols = Object.keys(rows[0]!);
console.log(cols.join('\t'));
for (const r of rows) console.log(cols.map((c) => (typeof r[c] === 'number' ? (r[c] as number).toLocaleString('en-US') : r[c])).join('\t'));
if (process.argv.includes('--json')) console.log(JSON.stringify(rows));
