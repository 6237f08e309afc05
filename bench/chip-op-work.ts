/**
 * Where a token's incremental work goes, per lowered op: runs a firmware program through the
 * chip's weights (sparse path, f32, greedy as `chipc run`) and gives each op of the circuit two
 * figures per decode step:
 *  - an estimate: how often each residual dim's bits change from one position to the next at
 *    each sublayer's input, charged to every op for each term of each of its forms (FFN gate and
 *    up; GDN q, k, v, z and β) — the stored entries its input rows would walk;
 *  - a measurement, through the executor's probe (MatmulStats.onDelta): the gate / up rows of the
 *    op's FFN units that the incremental matmuls reached, the units whose output changed (the
 *    columns down_proj then walks), and for a GDN op the q / k rows of its key heads reached.
 * A unit that reads a signal at every instruction but matters in a few (the divider's tables
 * before docs/cpu-plan.md "the divider idle outside divisions") shows in both: the table to
 * rewrite to make decode cheaper.
 *
 *   npx tsx bench/chip-op-work.ts [--elf fixtures/firmware/hello.elf] [--target chip-test] [--sized]
 *                                 [--tokens 800] [--warmup 0] [--top 30] [--fold] [--by-dim] [--json]
 *
 * The chip is the generic one `chipc run` compiles for the target; `--sized` compiles one sized to
 * the program at chip-test instead (the chip of the figures of 2026-11-30). Either way the
 * program's RAM images and configuration words are loaded as state and the prompt is [BOS, J].
 * `--fold` sums the ops whose names differ only in digits (the 15 multiples of the divider, say).
 * FFN row i of layer L belongs to the i-th unit of the ops in L's FFN in the assembler's order
 * (passes/gather-layers.ts: ops in lowered order, then the slot clears, listed as one line).
 * `--by-dim` lists the dims instead, by the same estimate summed over every op that reads them:
 * how often the dim changes per token, how many input rows read it and which ops own most of them
 * (a dim that many rows read and that moves at most tokens is the input to gate or drop; the
 * register commit's prevIsJump was one: docs/cpu-plan.md "The register commit at rest").
 * Columns: sublayer(s), entries per token (estimate), units (FFN) or key heads (GDN), rows reached
 * and units changed per token (measured), the op, and the dims that cost it most (name: entries
 * per token). The estimate counts a term once per change of its dim; the executor's own count
 * (`bench/chip-speed.ts`, "stored entries walked") also has the down / out projections.
 */
import fs from 'node:fs';
import { Command } from 'commander';
import { chipExecutor, programOf } from '../src/chip/run.ts';
import { compileChip, compileGenericChip } from '../src/chip/build.ts';
import { defaultChipSizes } from '../src/chip/generic.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { CODE_BASE } from '../src/cpu/cpu.ts';
import { BOS_ID, decodeToken, encodeToken } from '../riscv/protocol.ts';
import { gateUpParts } from '../src/exec/mlp.ts';
import { inProjParts } from '../src/exec/gdn-token.ts';
import { plansOf } from '../src/exec/plans.ts';
import { rowStackOf } from '../src/exec/stack-rows.ts';
import type { Form } from '../src/lower/forms.ts';
import type { Matrix } from '../src/model/weights.ts';

const opts = new Command()
  .option('--elf <file>', 'firmware image', 'fixtures/firmware/hello.elf')
  .option('--target <name>', 'target of the generic chip', 'chip-test')
  .option('--sized', 'a chip sized to the program (chip-test) instead of the generic chip')
  .option('--tokens <n>', 'decode steps counted at most (stops at HALT)', '800')
  .option('--warmup <n>', 'decode steps run before counting', '0')
  .option('--top <n>', 'ops to print', '30')
  .option('--fold', 'sum the ops whose names differ only in digits')
  .option('--by-dim', 'list the dims by their estimated entries per token instead of the ops')
  .option('--json', 'print JSON')
  .parse().opts<{ elf: string; target: string; sized?: boolean; tokens: string; warmup: string; top: string; fold?: boolean; byDim?: boolean; json?: boolean }>();
const maxTokens = Number(opts.tokens);
const warmup = Number(opts.warmup);
const top = Number(opts.top);
if (!Number.isInteger(maxTokens) || maxTokens < 2) throw new Error('--tokens must be an integer ≥ 2');
if (!Number.isInteger(warmup) || warmup < 0) throw new Error('--warmup must be a non-negative integer');
if (!Number.isInteger(top) || top < 1) throw new Error('--top must be a positive integer');
if (!fs.existsSync(opts.elf)) throw new Error(`${opts.elf} does not exist`);

const bytes = fs.readFileSync(opts.elf);
let res: ReturnType<typeof compileChip>;
let prog: ReturnType<typeof programOf>;
if (opts.sized) {
  prog = programOf(bytes);
  res = compileChip(prog.chip, resolveTarget('chip-test').config);
} else {
  const target = resolveTarget(opts.target);
  const sizes = defaultChipSizes(target.config);
  res = compileGenericChip({ targetName: target.name, target: target.config, ...sizes });
  prog = programOf(bytes, sizes, target.config);
}
// the program's RAM images and configuration words as state, then the prompt [BOS, J] (chipc run's path)
const ex = chipExecutor(res, prog, { profile: 'f32', order: { kind: 'sequential' }, path: 'sparse' });
ex.prime([BOS_ID]);
let last = ex.decodeArgmax(encodeToken({ kind: 'J', w: (prog.entry - CODE_BASE) / 4 }));
const w = res.weights;
const lc = res.lowered;
const L = w.config.numLayers;
const H = w.config.hiddenSize;
const I = w.config.intermediateSize;
const dk = w.config.linearKeyHeadDim;
const hk = w.config.linearNumKeyHeads;

// The measured side: who owns each FFN row and each GDN key head, and which matrix is which.
const unitOwner: number[][] = Array.from({ length: L }, () => []); // op id, or −1 for a slot clear
const headOwner: number[][] = Array.from({ length: L }, () => []);
for (const op of lc.ops) {
  const l = res.schedule.sublayer[op.id]! >> 1;
  if (op.kind === 'ffn') for (let u = 0; u < op.units.length; u++) unitOwner[l]!.push(op.id);
  else if (op.kind === 'gdn') for (let h = 0; h < op.heads.length; h++) headOwner[l]!.push(op.id);
}
for (const c of res.packing.clears) unitOwner[c.sublayer >> 1]!.push(-1);
const plans = plansOf(w);
const role = new Map<Matrix, { layer: number; kind: 'gateUp' | 'down' | 'inProj' }>();
w.layers.forEach((layer, l) => {
  if (layer.mlp.kind === 'dense') {
    const st = rowStackOf(plans, gateUpParts(plans, layer.mlp));
    if (st) role.set(st.m, { layer: l, kind: 'gateUp' });
    role.set(layer.mlp.downProj, { layer: l, kind: 'down' });
  }
  if (layer.mixer.kind === 'linear_attention') {
    const st = rowStackOf(plans, inProjParts(plans, layer.mixer));
    if (st) role.set(st.m, { layer: l, kind: 'inProj' });
  }
});
const reached = new Map<number, number>(); // op id (−1 clears) → rows reached
const changedUnits = new Map<number, number>();
const bump = (m: Map<number, number>, k: number | undefined) => { if (k !== undefined) m.set(k, (m.get(k) ?? 0) + 1); };
let counting = warmup === 0;
ex.stats.onDelta = (m, rows, nRows, changed, nChanged) => {
  if (!counting) return;
  const r = role.get(m);
  if (r === undefined) return;
  if (r.kind === 'gateUp') for (let t = 0; t < nRows; t++) { const row = rows[t]!; bump(reached, unitOwner[r.layer]![row < I ? row : row - I]); }
  else if (r.kind === 'down') for (let t = 0; t < nChanged; t++) bump(changedUnits, unitOwner[r.layer]![changed[t]!]);
  else for (let t = 0; t < nRows; t++) { const row = rows[t]!; if (row < 2 * hk * dk) bump(reached, headOwner[r.layer]![Math.floor((row % (hk * dk)) / dk)]); }
};

// The estimate: changes per dim at each sublayer's input: mixer 2l reads the layer input, FFN
// 2l + 1 the mid sum (the RMSNorm factor is constant on the chip, so a normalised dim changes iff
// its input does)
const changes = Array.from({ length: 2 * L }, () => new Float64Array(H));
const prev: (Float32Array | null)[] = Array(2 * L).fill(null);
let measured = 0; // decode steps compared with the step before (the estimate's denominator)
let steps = 0; // decode steps counted (the measurement's)
ex.addHook((ev) => {
  if (ev.layer === 0 && counting) { steps++; if (prev[0] !== null) measured++; }
  for (const [s, v] of [[2 * ev.layer, ev.residualIn], [2 * ev.layer + 1, ev.residualMid]] as const) {
    const p = prev[s];
    if (p && counting) {
      const a = new Uint32Array(v.buffer, v.byteOffset, H);
      const b = new Uint32Array(p.buffer, p.byteOffset, H);
      for (let i = 0; i < H; i++) if (a[i] !== b[i]) changes[s]![i]!++;
    }
    prev[s] = v.slice();
  }
}, { gdnStates: false });
for (let t = 0; t < warmup + maxTokens && decodeToken(last).kind !== 'HALT'; t++) {
  counting = t >= warmup;
  last = ex.decodeArgmax(last);
}
const perEst = Math.max(1, measured);
const per = Math.max(1, steps);

const dimOf = (v: number): number => res.slotDim(res.packing.slot[v]!);
/** The input-row forms of an op (FFN gate and up; GDN q, k, v, z and β), or null for other ops. */
function inputForms(op: (typeof lc.ops)[number]): Form[] | null {
  const forms: Form[] = [];
  if (op.kind === 'ffn') for (const u of op.units) forms.push(u.gate, u.up);
  else if (op.kind === 'gdn') {
    for (const h of op.heads) {
      forms.push(...h.q, ...h.k);
      for (const v of h.values) if (v) forms.push(...v.v, ...v.z, v.b);
    }
  } else return null;
  return forms;
}
interface OpWork { sublayers: number[]; what: string; kind: string; size: number; entries: number; rowsReached: number; unitsChanged: number; byDim: [string, number][] }
const out: OpWork[] = [];
for (const op of lc.ops) {
  const sub = res.schedule.sublayer[op.id]!;
  const forms = inputForms(op);
  if (forms === null) continue;
  const size = op.kind === 'ffn' ? op.units.length : op.kind === 'gdn' ? op.heads.length : 0;
  const byDim = new Map<string, number>();
  let entries = 0;
  for (const f of forms) {
    for (const t of f.terms) {
      if (t.coef === 0) continue;
      const c = changes[sub]![dimOf(t.dim)]! / perEst;
      if (c === 0) continue;
      entries += c;
      const name = lc.dims[t.dim]!.name;
      byDim.set(name, (byDim.get(name) ?? 0) + c);
    }
  }
  out.push({
    sublayers: [sub], what: op.what, kind: op.kind, size, entries, rowsReached: (reached.get(op.id) ?? 0) / per,
    unitsChanged: (changedUnits.get(op.id) ?? 0) / per, byDim: [...byDim.entries()],
  });
}
out.push({ sublayers: [], what: 'slot clears', kind: 'ffn', size: res.packing.clears.length, entries: 0, rowsReached: (reached.get(-1) ?? 0) / per, unitsChanged: (changedUnits.get(-1) ?? 0) / per, byDim: [] });
const chip = opts.sized ? 'the chip sized to the program (chip-test)' : `the generic chip at ${opts.target}`;
/** A name with its digits folded (--fold: the 15 multiples of the divider as one). */
const fold = (s: string): string => s.replace(/\d+/g, '#');
if (opts.byDim) {
  // per dim: the estimate's entries summed over its readers, its changes per token (the most at
  // any sublayer that reads it), its reading rows and the ops that own most of them
  interface DimWork { dim: string; entries: number; changesPerToken: number; readers: number; ops: [string, number][] }
  const byName = new Map<string, DimWork & { owners: Map<string, number> }>();
  const opName = (what: string) => (opts.fold ? fold(what) : what);
  for (const op of lc.ops) {
    const forms = inputForms(op);
    if (forms === null) continue;
    const sub = res.schedule.sublayer[op.id]!;
    for (const f of forms) {
      for (const t of f.terms) {
        if (t.coef === 0) continue;
        const name = lc.dims[t.dim]!.name;
        let d = byName.get(name);
        if (d === undefined) byName.set(name, (d = { dim: name, entries: 0, changesPerToken: 0, readers: 0, ops: [], owners: new Map() }));
        const c = changes[sub]![dimOf(t.dim)]! / perEst;
        d.entries += c;
        d.readers++;
        if (c > d.changesPerToken) d.changesPerToken = c;
        d.owners.set(opName(op.what), (d.owners.get(opName(op.what)) ?? 0) + 1);
      }
    }
  }
  const dims: DimWork[] = [...byName.values()].filter((d) => d.entries > 0).sort((a, b) => b.entries - a.entries).slice(0, top)
    .map(({ owners, ...d }) => ({ ...d, ops: [...owners.entries()].sort((a, b) => b[1] - a[1]).slice(0, 3) }));
  if (opts.json) console.log(JSON.stringify({ bench: 'chip-op-work', elf: opts.elf, chip, positions: perEst, dims }, null, 1));
  else {
    console.log(`${opts.elf} on ${chip}: ${perEst} decode steps compared; the dims whose changes cost the most input-row entries (estimate)`);
    console.log('entries/token  changes/token  reading rows  dim — ops owning most of those rows');
    for (const d of dims) {
      const ops = d.ops.map(([n, k]) => `${n}: ${k}`).join(', ');
      console.log(`${d.entries.toFixed(0).padStart(13)}  ${d.changesPerToken.toFixed(3).padStart(13)}  ${String(d.readers).padStart(12)}  ${d.dim} — ${ops}`);
    }
  }
  process.exit(0);
}
let rows = out;
if (opts.fold) {
  const byName = new Map<string, OpWork>();
  for (const o of out) {
    const k = `${o.kind} ${fold(o.what)}`;
    const f = byName.get(k);
    if (f === undefined) { byName.set(k, { ...o, what: fold(o.what), sublayers: [...o.sublayers], byDim: o.byDim.map(([n, c]) => [fold(n), c]) }); continue; }
    for (const s of o.sublayers) if (!f.sublayers.includes(s)) f.sublayers.push(s);
    f.size += o.size; f.entries += o.entries; f.rowsReached += o.rowsReached; f.unitsChanged += o.unitsChanged;
    f.byDim.push(...o.byDim.map(([n, c]) => [fold(n), c] as [string, number]));
  }
  rows = [...byName.values()];
}
for (const o of rows) {
  const m = new Map<string, number>();
  for (const [n, c] of o.byDim) m.set(n, (m.get(n) ?? 0) + c);
  o.byDim = [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, 4);
  o.sublayers.sort((a, b) => a - b);
}
rows.sort((a, b) => b.entries + b.rowsReached - a.entries - a.rowsReached);
const total = out.reduce((s, o) => s + o.entries, 0);
const totalRows = out.reduce((s, o) => s + o.rowsReached, 0);
const totalChanged = out.reduce((s, o) => s + o.unitsChanged, 0);
if (opts.json) {
  console.log(JSON.stringify({ bench: 'chip-op-work', elf: opts.elf, chip, positions: per, total, rowsReached: totalRows, unitsChanged: totalChanged, ops: rows.slice(0, top) }, null, 1));
} else {
  console.log(`${opts.elf} on ${chip}: ${per} decode steps${warmup ? ` after ${warmup}` : ''}; per token ≈ ${Math.round(total).toLocaleString('en-US')} input-row entries (estimate) over ${out.length - 1} ops; measured: ${Math.round(totalRows).toLocaleString('en-US')} FFN gate/up and GDN q/k rows reached, ${Math.round(totalChanged).toLocaleString('en-US')} FFN units changed`);
  console.log('sub      entries/token  units|heads  rows reached  units changed  op — costliest dims');
  for (const o of rows.slice(0, top)) {
    const dims = o.byDim.map(([n, c]) => `${n}: ${c.toFixed(0)}`).join(', ');
    const subs = o.sublayers.length <= 2 ? o.sublayers.join(',') : `${o.sublayers[0]}…${o.sublayers[o.sublayers.length - 1]}`;
    console.log(`${subs.padStart(7)}  ${o.entries.toFixed(0).padStart(13)}  ${String(o.size).padStart(11)}  ${o.rowsReached.toFixed(1).padStart(12)}  ${o.unitsChanged.toFixed(1).padStart(13)}  ${o.what}${dims ? ` — ${dims}` : ''}`);
  }
}
