import { compileGenericChip } from '../src/chip/build.js';
import { resolveTarget } from '../src/model/targets.js';
import { defaultChipSizes } from '../src/chip/generic.js';
const t = resolveTarget(process.argv[2] ?? 'chip-test');
const r = compileGenericChip({ target: t.config, ...defaultChipSizes(t.config) } as any);
const want = Number(process.argv[3]);
const rows: [number, string][] = [];
for (const op of r.lowered.ops) {
  if (r.schedule.sublayer[op.id] !== want || op.kind !== 'ffn') continue;
  let entries = 0;
  for (const u of op.units) entries += u.gate.terms.length + u.up.terms.length;
  rows.push([entries, `${op.what} units=${op.units.length} reads=${op.reads.length}`]);
}
rows.sort((a, b) => b[0] - a[0]);
for (const [e, w] of rows.slice(0, 25)) console.log(e, w);
