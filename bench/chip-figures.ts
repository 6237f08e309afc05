/**
 * The generic RV32 chip's size figures per target: layers, residual slots, heads (GDN key heads +
 * attention heads), FFN units and non-zeros (chip layers alone and with the embedding / LM head)
 * of src/cpu/cpu.ts compiled for each target with the code and data RAM sizes given —
 * by default the generic chip's defaults for the target (src/chip/generic.ts defaultChipSizes:
 * 16 KiB of code; 64 KiB of data, 32 KiB where a GDN layer holds 8 KiB).
 *   npx tsx bench/chip-figures.ts [--targets chip-test,qwen3.5-4b] [--code-bytes 16384]
 *                                 [--mem-bytes chip-test=65536,qwen3.5-4b=32768] [--json]
 * With --json the last line is a JSON array of { target, layers, slots, nonZeros, dataBytes,
 * codeBytes, … } objects.
 */
import { compileCircuit } from '../src/compile.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import { resolveTarget } from '../src/model/targets.ts';
import type { Matrix } from '../src/model/weights.ts';
import { cpuCircuit, memBankWordsFor } from '../src/cpu/cpu.ts';
import { defaultChipSizes } from '../src/chip/generic.ts';

function arg(name: string, dflt: string | null): string | null {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1]! : dflt;
}

const targets = arg('--targets', 'chip-test,qwen3.5-4b')!.split(',');
const codeArg = arg('--code-bytes', null);
const memArg = arg('--mem-bytes', null);
const memBytes = new Map((memArg ?? '').split(',').filter((kv) => kv.includes('=')).map((kv) => {
  const [k, v] = kv.split('=');
  return [k!, Number(v)] as const;
}));

const rows: Record<string, number | string>[] = [];
for (const name of targets) {
  const target = resolveTarget(name);
  const dflt = defaultChipSizes(target.config);
  const mem = memBytes.get(name) ?? dflt.memBytes;
  const codeBytes = codeArg !== null ? Number(codeArg) : dflt.codeBytes;
  const t0 = performance.now();
  const ir = buildCircuit(cpuCircuit({ codeWords: codeBytes / 4, memWords: mem / 4, memBankWords: memBankWordsFor(target.config) }), 'src/cpu/cpu.ts');
  const res = compileCircuit(ir, target.config);
  const seconds = (performance.now() - t0) / 1000;
  const chipNonZeros = res.layers.reduce((s, l) => s + l.nonZeros, 0);
  const nz = (m: Matrix): number => (m.csr ? m.csr.values.length : (m.dense ?? new Float32Array()).reduce((s, v) => s + (v !== 0 ? 1 : 0), 0));
  const io = nz(res.weights.embedTokens) + (res.weights.lmHead === res.weights.embedTokens ? 0 : nz(res.weights.lmHead));
  rows.push({
    target: name,
    codeBytes,
    dataBytes: mem,
    layers: res.layers.length,
    hidden: res.frame.hidden,
    slots: res.packing.slotsUsed,
    liveMax: res.packing.liveMax,
    gdnKeyHeads: res.layers.filter((l) => l.type === 'linear_attention').reduce((s, l) => s + l.heads, 0),
    attentionHeads: res.layers.filter((l) => l.type === 'full_attention').reduce((s, l) => s + l.heads, 0),
    ffnUnits: res.layers.reduce((s, l) => s + l.units, 0),
    clearUnits: res.layers.reduce((s, l) => s + l.clearUnits, 0),
    nonZeros: chipNonZeros,
    embeddingLmHeadNonZeros: io,
    nodes: ir.nodes.length,
    compileSeconds: Number(seconds.toFixed(1)),
  });
}
const cols = Object.keys(rows[0]!);
console.log(cols.join('\t'));
for (const r of rows) console.log(cols.map((c) => (typeof r[c] === 'number' ? (r[c] as number).toLocaleString('en-US') : r[c])).join('\t'));
if (process.argv.includes('--json')) console.log(JSON.stringify(rows));
