/**
 * What holds the generic RV32 chip's residual slots: the dims alive at every sublayer and, at the
 * widest sublayers, the signal families alive there (a family is a dim name with its digits
 * replaced by `#`: `div.m#.k#` is the divider's 120 first-step tables), each with the sublayer
 * that writes it and the last one it is alive in (its last read, or the FFN after it writes it). The slot count is the largest number of
 * dims alive at one sublayer, so these are the families to narrow or move.
 *   npx tsx bench/chip-live.ts [--target qwen3.5-4b] [--sublayers 19,11 | --widest 3] [--top 25]
 *                              [--no-sink] [--json]
 * Sublayer s is layer ⌊s/2⌋'s mixer (even s) or FFN (odd s); −1 is the embedding. With --json the
 * last line is { target, slots, liveAt: [{ sublayer, live }], widest: [{ sublayer, live,
 * families: [{ family, born, end, dims }] }] }.
 */
import { compileCircuit } from '../src/compile.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { cpuCircuit, memBankWordsFor } from '../src/cpu/cpu.ts';
import { defaultChipSizes } from '../src/chip/generic.ts';

function arg(name: string, dflt: string | null): string | null {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] ?? null : dflt;
}

const targetName = arg('--target', 'qwen3.5-4b')!;
const top = Number(arg('--top', '25'));
const widestCount = Number(arg('--widest', '3'));
const asked = arg('--sublayers', null);
const asJson = process.argv.includes('--json');
if (!Number.isInteger(top) || top < 1 || !Number.isInteger(widestCount) || widestCount < 1) {
  console.error('chip-live: --top and --widest take a positive integer');
  process.exit(2);
}

const target = resolveTarget(targetName);
const sizes = defaultChipSizes(target.config);
const ir = buildCircuit(cpuCircuit({
  codeWords: sizes.codeBytes / 4, memWords: sizes.memBytes / 4, memBankWords: memBankWordsFor(target.config),
}), 'src/cpu/cpu.ts');
const res = compileCircuit(ir, target.config, { sinkOps: !process.argv.includes('--no-sink') });
const { packing, lowered } = res;
// packing.liveAt[t + 1] is the count at sublayer t (t = −1 … 2·layers − 1)
const liveAt = packing.liveAt.map((live, i) => ({ sublayer: i - 1, live }));
const sublayers = asked !== null
  ? asked.split(',').map(Number)
  : liveAt.slice().sort((a, b) => b.live - a.live || a.sublayer - b.sublayer).slice(0, widestCount).map((x) => x.sublayer);
for (const s of sublayers) {
  if (!Number.isInteger(s) || s < -1 || s >= packing.liveAt.length - 1) {
    console.error(`chip-live: sublayer ${s} is not one of −1 … ${packing.liveAt.length - 2}`);
    process.exit(2);
  }
}

const widest = sublayers.map((s) => {
  const byFamily = new Map<string, { family: string; born: number; end: number; dims: number }>();
  for (let d = 0; d < lowered.dims.length; d++) {
    const born = packing.birth[d]!;
    if (born < -1 || born > s || packing.end[d]! < s) continue;
    const family = lowered.dims[d]!.name.replace(/[0-9]+/g, '#');
    const key = `${family}|${born}|${packing.end[d]}`;
    const f = byFamily.get(key);
    if (f) f.dims++;
    else byFamily.set(key, { family, born, end: packing.end[d]!, dims: 1 });
  }
  const families = [...byFamily.values()].sort((a, b) => b.dims - a.dims || a.family.localeCompare(b.family));
  return { sublayer: s, live: packing.liveAt[s + 1]!, families };
});

if (asJson) {
  console.log(JSON.stringify({ target: targetName, slots: packing.slotsUsed, liveAt, widest: widest.map((w) => ({ ...w, families: w.families.slice(0, top) })) }));
} else {
  console.log(`${targetName}: ${res.schedule.numLayers} layers, ${packing.slotsUsed} slots`);
  console.log(`dims alive per sublayer (−1 … ${packing.liveAt.length - 2}): ${packing.liveAt.join(' ')}`);
  for (const w of widest) {
    const kind = w.sublayer < 0 ? 'the embedding' : `layer ${w.sublayer >> 1}'s ${w.sublayer % 2 === 1 ? 'FFN' : 'mixer'}`;
    console.log(`\nsublayer ${w.sublayer} (${kind}): ${w.live} dims alive`);
    console.log('   dims  written  alive to  family');
    for (const f of w.families.slice(0, top)) {
      console.log(`${String(f.dims).padStart(7)}  ${String(f.born).padStart(7)}  ${String(f.end).padStart(8)}  ${f.family}`);
    }
    const rest = w.families.slice(top).reduce((n, f) => n + f.dims, 0);
    if (rest > 0) console.log(`${String(rest).padStart(7)}  (${w.families.length - top} more families)`);
  }
}
