import { compileGenericChip } from '../src/chip/build.js';
import { resolveTarget } from '../src/model/targets.js';
import { defaultChipSizes } from '../src/chip/generic.js';
const t = resolveTarget(process.argv[2] ?? 'qwen3.5-4b');
const sizes = defaultChipSizes(t.config);
const r = compileGenericChip({ target: t.config, ...sizes } as any);
const lc = r.lowered, sch = r.schedule;
const writer = new Int32Array(lc.dims.length).fill(-1);
for (const op of lc.ops) for (const d of op.writes) writer[d] = op.id;
const opById = new Map(lc.ops.map((o) => [o.id, o]));
function chain(opId: number) {
  let op = opById.get(opId)!;
  const out: string[] = [];
  for (;;) {
    const sl = sch.sublayer[op.id]!;
    out.push(`${sl >> 1}${sl & 1 ? 'F' : 'M'} ${op.kind} ${op.what} (${op.kind === 'ffn' ? op.units.length + 'u' : ''})`);
    let best = -1, bestSl = -2, bestDim = -1;
    for (const d of op.reads) { const w = writer[d]!; if (w < 0) continue; const s = sch.sublayer[w]!; if (s > bestSl) { bestSl = s; best = w; bestDim = d; } }
    if (best < 0) break;
    out[out.length - 1] += `  <= reads ${lc.dims[bestDim]!.name}`;
    op = opById.get(best)!;
  }
  return out;
}
const target = process.argv[3] ?? 'mem';
for (const op of lc.ops) if (op.kind === 'gdn' && op.what.includes(target) && (op.what === target || process.argv[4])) { console.log('== chain to', op.what); for (const l of chain(op.id)) console.log('  ', l); }
// LM head dims: latest writers
let lmMax = -1, lmOp = -1;
for (const d of lc.lmHeadDims) { const w = writer[d]!; if (w >= 0 && sch.sublayer[w]! > lmMax) { lmMax = sch.sublayer[w]!; lmOp = w; } }
console.log('== chain to LM head'); for (const l of chain(lmOp)) console.log('  ', l);
