/**
 * Where a decode step's work goes, by the circuit's ops: runs a program on the generic chip
 * (compiled in this process, as `chipc run` compiles it) and counts, over the decode steps after
 * a warm-up, the FFN units each lowered op owns that the incremental matmuls reached (their gate /
 * up rows) and that changed (down_proj's changed input columns), and the GDN input-projection
 * rows each RAM op's heads reached. Deterministic, like the work counters of bench/chip-speed.ts,
 * which it splits: a unit that reads a signal every instruction but matters in a few (the
 * divider's tables before docs/cpu-plan.md "the divider idle outside divisions") shows here.
 *
 *   npx tsx bench/op-work.ts [--elf FILE] [--target T] [--tokens N] [--warmup N] [--top K] [--json]
 *
 * FFN row i of layer L belongs to the i-th unit of the ops scheduled in L's FFN, in the order
 * the assembler lays them out (passes/gather-layers.ts: ops in lowered order, then the slot
 * clears), so names are the ops' (`what`, digits folded to #, the same op kind summed).
 */
import fs from 'node:fs';
import { compileGenericChip } from '../src/chip/build.ts';
import { defaultChipSizes } from '../src/chip/generic.ts';
import { chipExecutor, programOf } from '../src/chip/run.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { CODE_BASE } from '../src/cpu/cpu.ts';
import { BOS_ID, decodeToken, encodeToken } from '../riscv/protocol.ts';
import { gateUpParts } from '../src/exec/mlp.ts';
import { inProjParts } from '../src/exec/gdn-token.ts';
import { plansOf } from '../src/exec/plans.ts';
import { rowStackOf } from '../src/exec/stack-rows.ts';
import type { Matrix } from '../src/model/weights.ts';

function usage(msg: string): never {
  console.error(`op-work: ${msg}\nusage: npx tsx bench/op-work.ts [--elf FILE] [--target T] [--tokens N] [--warmup N] [--top K] [--json]`);
  process.exit(2);
}
const argv = process.argv.slice(2);
let elf = 'fixtures/firmware/crc32.elf';
let targetName = 'qwen3.5-4b';
let tokens = 3000;
let warmup = 100;
let top = 30;
let json = false;
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  const num = () => { const v = Number(argv[++i]); if (!Number.isInteger(v) || v < 0) usage(`${a} needs a non-negative integer`); return v; };
  if (a === '--elf') elf = argv[++i] ?? usage('--elf needs a file');
  else if (a === '--target') targetName = argv[++i] ?? usage('--target needs a name');
  else if (a === '--tokens') tokens = num();
  else if (a === '--warmup') warmup = num();
  else if (a === '--top') top = num();
  else if (a === '--json') json = true;
  else usage(`unknown argument ${a}`);
}
if (!fs.existsSync(elf)) usage(`${elf} does not exist`);
if (tokens < 1) usage('--tokens must be at least 1');

const target = resolveTarget(targetName);
const sizes = defaultChipSizes(target.config);
const res = compileGenericChip({ targetName: target.name, target: target.config, ...sizes });
const prog = programOf(fs.readFileSync(elf), sizes, target.config);
const ex = chipExecutor(res, prog, { profile: 'f32', order: { kind: 'sequential' }, path: 'sparse' });
const w = res.weights;
const L = w.config.numLayers;
const I = w.config.intermediateSize;

// the FFN units' owners, per layer, in the assembler's order
const owner: string[][] = Array.from({ length: L }, () => []);
const fold = (s: string) => s.replace(/\d+/g, '#');
for (const op of res.lowered.ops) {
  if (op.kind !== 'ffn') continue;
  const l = res.schedule.sublayer[op.id]! >> 1;
  const name = fold(op.what);
  for (let u = 0; u < op.units.length; u++) owner[l]!.push(name);
}
for (const c of res.packing.clears) owner[c.sublayer >> 1]!.push('slot clears');
// GDN input-projection rows → the RAM (or other GDN op) whose key head they belong to: each key
// head's q, k rows and its value heads' v rows; reported per layer's op names
const gdnOwner = new Map<number, string[]>();
for (const op of res.lowered.ops) {
  if (op.kind !== 'gdn') continue;
  const l = res.schedule.sublayer[op.id]! >> 1;
  const list = gdnOwner.get(l) ?? [];
  for (let h = 0; h < op.heads.length; h++) list.push(fold(op.what));
  gdnOwner.set(l, list);
}

// the matrices a decode step computes incrementally, by layer and role
const plans = plansOf(w);
const role = new Map<Matrix, { layer: number; kind: 'gateUp' | 'down' | 'inProj' }>();
w.layers.forEach((layer, l) => {
  const mlp = layer.mlp;
  if (mlp.kind === 'dense') {
    const st = rowStackOf(plans, gateUpParts(plans, mlp));
    if (st) role.set(st.m, { layer: l, kind: 'gateUp' });
    role.set(mlp.downProj, { layer: l, kind: 'down' });
  }
  if (layer.mixer.kind === 'linear_attention') {
    const st = rowStackOf(plans, inProjParts(plans, layer.mixer));
    if (st) role.set(st.m, { layer: l, kind: 'inProj' });
  }
});

const reached = new Map<string, number>();
const changedUnits = new Map<string, number>();
const gdnRows = new Map<string, number>();
const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
const dk = w.config.linearKeyHeadDim;
const hk = w.config.linearNumKeyHeads;
let counting = false;
ex.stats.onDelta = (m, rows, nRows, changed, nChanged) => {
  if (!counting) return;
  const r = role.get(m);
  if (r === undefined) return;
  if (r.kind === 'gateUp') {
    for (let t = 0; t < nRows; t++) { const row = rows[t]!; add(reached, owner[r.layer]![row < I ? row : row - I] ?? '(unused row)', 1); }
  } else if (r.kind === 'down') {
    for (let t = 0; t < nChanged; t++) add(changedUnits, owner[r.layer]![changed[t]!] ?? '(unused unit)', 1);
  } else {
    // the q rows (key head h at h·dk…) and k rows (hk·dk + h·dk…) name their key head's op; the
    // rest (v, z, β, g) count under the layer
    const heads = gdnOwner.get(r.layer) ?? [];
    for (let t = 0; t < nRows; t++) {
      const row = rows[t]!;
      const kh = Math.floor((row % (hk * dk)) / dk);
      add(gdnRows, row < 2 * hk * dk ? `${heads[kh] ?? '(unused head)'} (q, k)` : `layer ${r.layer}: v, z, β, g rows`, 1);
    }
  }
};

ex.prime([BOS_ID]);
let last = ex.decodeArgmax(encodeToken({ kind: 'J', w: (prog.entry - CODE_BASE) / 4 }));
let steps = 0;
for (let i = 0; i < warmup + tokens && decodeToken(last).kind !== 'HALT'; i++) {
  counting = i >= warmup;
  last = ex.decodeArgmax(last);
  if (counting) steps++;
}
if (steps === 0) usage('the program halted within the warm-up');
const per = (m: Map<string, number>) => [...m].map(([k, v]) => [k, v / steps] as [string, number]);
const ops = [...new Set([...reached.keys(), ...changedUnits.keys()])]
  .map((k) => ({ op: k, rowsReached: (reached.get(k) ?? 0) / steps, unitsChanged: (changedUnits.get(k) ?? 0) / steps }))
  .sort((a, b) => b.rowsReached + b.unitsChanged - a.rowsReached - a.unitsChanged);
const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0) / steps;
if (json) {
  console.log(JSON.stringify({
    elf, target: target.name, steps, ffnRowsReached: total(reached), ffnUnitsChanged: total(changedUnits), gdnInProjRowsReached: total(gdnRows),
    ffnOps: ops.slice(0, top), gdnOps: per(gdnRows).sort((a, b) => b[1] - a[1]).slice(0, top).map(([op, rowsReached]) => ({ op, rowsReached })),
  }));
} else {
  console.log(`${elf} on the generic chip at ${target.name}: ${steps} decode steps after ${warmup}`);
  console.log(`per token: ${total(reached).toFixed(0)} FFN gate/up rows reached, ${total(changedUnits).toFixed(0)} FFN units changed, ${total(gdnRows).toFixed(0)} GDN input-projection rows reached`);
  console.log('FFN ops (per token: gate/up rows reached, units changed):');
  for (const o of ops.slice(0, top)) console.log(`${o.rowsReached.toFixed(1).padStart(9)} ${o.unitsChanged.toFixed(1).padStart(9)}  ${o.op}`);
  console.log('GDN ops (per token: input-projection rows reached):');
  for (const [k, v] of per(gdnRows).sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${v.toFixed(1).padStart(9)}  ${k}`);
}
