import { buildCircuit } from './src/dsl/load.ts';
import { cpuCircuit, memBankWordsFor } from './src/cpu/cpu.ts';
import { compileCircuit } from './src/compile.ts';
import { resolveTarget } from './src/model/targets.ts';
import { defaultChipSizes } from './src/chip/generic.ts';
const target = resolveTarget(process.argv[2] ?? 'qwen3.5-4b');
const d = defaultChipSizes(target.config);
const ir = buildCircuit(cpuCircuit({ codeWords: d.codeBytes / 4, memWords: d.memBytes / 4, memBankWords: memBankWordsFor(target.config) }), 'src/cpu/cpu.ts');
const res = compileCircuit(ir, target.config);
const p = res.packing;
console.log('liveAt', p.liveAt.join(' '));
const at = process.argv[3] !== undefined ? Number(process.argv[3]) : p.liveAt.indexOf(p.liveMax) - 1;
console.log('peak sublayer', at, 'live', p.liveAt[at + 1]);
const groups = new Map<string, number>();
const lc = res.lowered;
const detail = process.argv[4];
for (let v = 0; v < lc.dims.length; v++) {
  if (p.birth[v]! < -1) continue;
  if (p.birth[v]! <= at && p.end[v]! >= at) {
    const info = lc.dims[v]!;
    const name = info.name.replace(/[0-9]+/g, '#');
    const key = `${name} [born ${p.birth[v]}, end ${p.end[v]}]`;
    groups.set(key, (groups.get(key) ?? 0) + 1);
    if (detail && info.name.includes(detail)) console.log('  ', info.name, p.birth[v], p.end[v]);
  }
}
for (const [k, n] of [...groups].sort((a, b) => b[1] - a[1]).slice(0, 70)) console.log(String(n).padStart(4), k);
if (process.env.READERS) {
  const re = new RegExp(process.env.READERS);
  const readers = new Map<string, number>();
  for (const op of lc.ops) {
    if (op.reads.some((v) => re.test(lc.dims[v]!.name))) {
      const k = `${res.schedule.sublayer[op.id]} ${op.what.replace(/[0-9]+/g, '#')}`;
      readers.set(k, (readers.get(k) ?? 0) + 1);
    }
  }
  for (const [k, n] of readers) console.log('READER', n, k);
}
if (process.env.INPUTS) {
  const re = new RegExp(process.env.INPUTS);
  for (const op of lc.ops) if (re.test(op.what)) {
    console.log('OP', res.schedule.sublayer[op.id], op.what);
    const seen = new Map<string, number>();
    for (const d of op.reads) { const k = `${lc.dims[d]!.name.replace(/[0-9]+/g, '#')} born ${p.birth[d]}`; seen.set(k, (seen.get(k) ?? 0) + 1); }
    for (const [k, n] of seen) console.log('   in', n, k);
  }
}
