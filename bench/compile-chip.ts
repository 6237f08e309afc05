/**
 * The generic RV32 chip's compile, pass by pass: building the circuit (IR), then fit-vocab,
 * lowering, fuse-tables, schedule-and-pack, and the whole compileCircuit (which repeats those and
 * adds size-frame, gather-layers, assemble, order-invariance and the report), for each target at
 * the generic chip's default RAM sizes (src/chip/generic.ts defaultChipSizes). Each pass is timed
 * `--runs` times in one process on the same IR (the first run pays V8's warm-up; the minimum is the
 * figure to compare). Issue figure: lowering + scheduling + packing.
 *   npx tsx bench/compile-chip.ts [--targets chip-test,qwen3.5-4b] [--runs 3] [--json]
 * With --json the last line is a JSON array of { target, irMs, lowerMs, fuseMs, schedulePackMs,
 * lowerSchedulePackMs, compileMs } objects (minimum over the runs).
 */
import { compileCircuit } from '../src/compile.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { cpuCircuit, memBankWordsFor } from '../src/cpu/cpu.ts';
import { defaultChipSizes } from '../src/chip/generic.ts';
import { fitVocab } from '../src/passes/fit-vocab.ts';
import { lower } from '../src/passes/lower.ts';
import { fuseTables } from '../src/passes/fuse-tables.ts';
import { scheduleAndPack } from '../src/passes/schedule-and-pack.ts';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1]! : dflt;
}

const targets = arg('--targets', 'chip-test,qwen3.5-4b').split(',');
const runs = Math.max(1, Number(arg('--runs', '3')));
const asJson = process.argv.includes('--json');

const rows: Record<string, number | string>[] = [];
for (const name of targets) {
  const target = resolveTarget(name).config;
  const { codeBytes, memBytes } = defaultChipSizes(target);
  const shape = { codeWords: codeBytes / 4, memWords: memBytes / 4, memBankWords: memBankWordsFor(target) };
  const min: Record<string, number> = { irMs: Infinity, lowerMs: Infinity, fuseMs: Infinity, schedulePackMs: Infinity, lowerSchedulePackMs: Infinity, compileMs: Infinity };
  for (let r = 0; r < runs; r++) {
    let t = performance.now();
    const lap = () => { const now = performance.now(); const d = now - t; t = now; return d; };
    const ir = buildCircuit(cpuCircuit(shape), 'src/cpu/cpu.ts');
    const irMs = lap();
    const fitted = fitVocab(ir, target);
    lap();
    const lowered = lower(ir, fitted);
    const lowerMs = lap();
    const fused = fuseTables(lowered);
    const fuseMs = lap();
    scheduleAndPack(fused, fitted);
    const schedulePackMs = lap();
    compileCircuit(ir, target);
    const compileMs = lap();
    const got = { irMs, lowerMs, fuseMs, schedulePackMs, lowerSchedulePackMs: lowerMs + fuseMs + schedulePackMs, compileMs };
    for (const [k, v] of Object.entries(got)) min[k] = Math.min(min[k]!, v);
    if (!asJson) console.log(`${name} run ${r + 1}: ${Object.entries(got).map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', ')}`);
  }
  rows.push({ target: name, codeBytes, memBytes, ...Object.fromEntries(Object.entries(min).map(([k, v]) => [k, Math.round(v)])) });
}
if (asJson) console.log(JSON.stringify(rows));
else for (const r of rows) console.log(`${r.target} (minimum of ${runs}): ${Object.entries(r).filter(([k]) => k.endsWith('Ms')).map(([k, v]) => `${k} ${v}`).join(', ')}`);
