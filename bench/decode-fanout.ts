/**
 * Where the incremental matmuls' work per token comes from: runs a program on the generic chip
 * compiled in this process (so that every residual column can be named from the compile) and,
 * over `--tokens` decode steps after `--skip` more, counts per matrix and per changed input column
 * the stored entries a decode step walks (delta.ts deltaLinearIn: a changed column walks all its
 * entries). Prints per layer and matrix the calls, changed columns and entries per token; then the
 * share of all entries that the busiest columns hold; then the busiest columns, each with how
 * often it changes, its fan-out (stored entries) and — for the matrices that read the residual
 * stream (the GDN in-projections and the FFN gate/up projections) — the signal the column holds at
 * that sublayer and the lowered ops that read it there (`what` and their FFN units). A column
 * that changes often and feeds a wide one-hot table costs a step that table's width in entries:
 * these are the places where a lowering that reads fewer units per change would cut the decode's
 * work (docs/benchmarks.md, "Where a token's walked entries come from"). Last, the gate rows' part
 * of the gate/up walks: their stored entries in the changed columns, those on rows whose gate is
 * at or below −89 before and after the step (silu gives −0 there: the unit's output stays), those
 * of them in runs of 8 or more consecutive rows that read the column with one weight (a ramp
 * table's units), and the gate rows reached and reached while staying off; and the down
 * projections' changed columns (the SwiGLU units whose output moved), with those whose gate was in
 * silu's identity region (≥ 17) before and after, in a run or not — the rest turned on or off.
 *
 *   npx tsx bench/decode-fanout.ts [--elf FILE] [--target qwen3.5-4b] [--tokens 3000] [--skip 300]
 *                                  [--top 25] [--json]
 * The counts are deterministic (no timing): the same program, target and options give the same
 * figures on any machine. A changed column is one whose input bits changed; the executor passes
 * over one whose input only flips the sign of a zero, so its own count of the entries walked
 * (`walkedPerToken`, printed beside) is a little lower. With --json one object: { target, elf,
 * tokens, entriesPerToken, walkedPerToken,
 * matrices: [{ layer, role, calls, changedColumns, entries }] (per token), shares: [{ top, share }],
 * distinctColumns, columns: [{ layer, role, column, changesPerToken, fanOut, entriesPerToken,
 * signal, readers }], offGates: { entries, offEntries, offInRuns, rows, offRows }, downColumns:
 * { columns, entries, onOnInRuns, onOnInRunsEntries, onOnOther } } (readers: every reading op,
 * widest first; the text lists three; offGates and downColumns per token).
 */
import fs from 'node:fs';
import { compileGenericChip } from '../src/chip/build.ts';
import { defaultChipSizes } from '../src/chip/generic.ts';
import { chipExecutor, programOf } from '../src/chip/run.ts';
import type { Matrix } from '../src/model/weights.ts';
import { inProjParts } from '../src/exec/gdn-token.ts';
import { gateUpParts } from '../src/exec/mlp.ts';
import { SATURATE_ONE_FROM, SATURATE_ZERO_TO } from '../src/exec/numeric.ts';
import { rowStackOf } from '../src/exec/stack-rows.ts';
import type { Executor } from '../src/exec/executor.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { CODE_BASE } from '../src/cpu/cpu.ts';
import { BOS_ID, decodeToken, encodeToken } from '../riscv/protocol.ts';

function usage(msg: string): never {
  console.error(`decode-fanout: ${msg}\nusage: npx tsx bench/decode-fanout.ts [--elf FILE] [--target T] [--tokens N] [--skip N] [--top K] [--json]`);
  process.exit(2);
}

const argv = process.argv.slice(2);
let elf = 'fixtures/firmware/crc32.elf';
let targetName = 'qwen3.5-4b';
let tokens = 3000;
let skip = 300;
let top = 25;
let json = false;
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--elf') elf = argv[++i] ?? usage('--elf needs a file');
  else if (a === '--target') targetName = argv[++i] ?? usage('--target needs a name');
  else if (a === '--tokens') tokens = Number(argv[++i]);
  else if (a === '--skip') skip = Number(argv[++i]);
  else if (a === '--top') top = Number(argv[++i]);
  else if (a === '--json') json = true;
  else usage(`unknown argument ${a}`);
}
if (!Number.isInteger(tokens) || tokens < 1) usage('--tokens must be a positive integer');
if (!Number.isInteger(skip) || skip < 0) usage('--skip must be a non-negative integer');
if (!Number.isInteger(top) || top < 1) usage('--top must be a positive integer');
if (!fs.existsSync(elf)) usage(`${elf} does not exist`);

const target = resolveTarget(targetName);
const sizes = defaultChipSizes(target.config);
const prog = programOf(fs.readFileSync(elf), sizes, target.config);
const chip = compileGenericChip({ targetName: target.name, target: target.config, ...sizes });
const { packing, lowered, frame, schedule } = chip;

/** The executor of the current run (startRun makes one per run). */
let ex = null as unknown as Executor;
type Role = 'inProj' | 'outProj' | 'gateUp' | 'down';
/** The executor's stack of `parts` (stack-rows.ts: the in-projections, gate and up are walked as one matrix each). */
function stackOf(parts: Matrix[]): Matrix | undefined {
  return rowStackOf(ex.ctx.plans, parts)?.m;
}
/** Which layer and matrix a matrix the executor walks is. */
const known = new Map<Matrix, { layer: number; role: Role }>();
function identify(m: Matrix): { layer: number; role: Role } {
  let id = known.get(m);
  if (id !== undefined) return id;
  chip.weights.layers.forEach((ly, layer) => {
    const mlp = ly.mlp;
    if ('downProj' in mlp) {
      if (m === mlp.downProj) id = { layer, role: 'down' };
      else if (m === stackOf(gateUpParts(ex.ctx.plans, mlp))) id = { layer, role: 'gateUp' };
    }
    const mix = ly.mixer;
    if (mix.kind === 'linear_attention') {
      if (m === mix.outProj) id = { layer, role: 'outProj' };
      else {
        // the stack, or the stack without the rows of aliased conv blocks (conv-alias.ts), which a
        // track walks once its aliases are set up
        const stack = stackOf(inProjParts(ex.ctx.plans, mix));
        if (stack !== undefined && (m === stack || m === ex.ctx.plans.convAliasStacks.get(stack)?.m)) id = { layer, role: 'inProj' };
      }
    }
  });
  if (id === undefined) throw new Error(`decode-fanout: a ${m.rows} × ${m.cols} matrix that is no layer's in-projection, out-projection, gate/up or down projection`);
  known.set(m, id);
  return id;
}
/** Stored entries per column of m (CSR), made once per matrix. */
const fanOuts = new Map<Matrix, Int32Array>();
function fanOutOf(m: Matrix): Int32Array {
  let f = fanOuts.get(m);
  if (f !== undefined) return f;
  const csr = m.csr;
  if (csr === undefined) throw new Error('decode-fanout: a matrix without CSR storage');
  f = new Int32Array(m.cols);
  for (let k = 0; k < csr.rowPtr[m.rows]!; k++) f[csr.colIdx[k]!]++;
  fanOuts.set(m, f);
  return f;
}

/**
 * A gate/up stack's gate entries by column (CSC of its first rows/2 rows, rows ascending) and, per
 * entry, the length of the run it lies in: consecutive rows with one weight (bit for bit).
 */
const gateCscs = new Map<Matrix, { ptr: Int32Array; row: Int32Array; runLen: Int32Array }>();
function gateCscOf(m: Matrix): { ptr: Int32Array; row: Int32Array; runLen: Int32Array } {
  let g = gateCscs.get(m);
  if (g !== undefined) return g;
  const { rowPtr, colIdx, values } = m.csr!;
  const n = m.rows / 2;
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const ptr = new Int32Array(m.cols + 1);
  for (let k = 0; k < rowPtr[n]!; k++) ptr[colIdx[k]! + 1]!++;
  for (let c = 0; c < m.cols; c++) ptr[c + 1]! += ptr[c]!;
  const at = ptr.slice(0, m.cols);
  const row = new Int32Array(rowPtr[n]!);
  const wb = new Uint32Array(rowPtr[n]!);
  for (let r = 0; r < n; r++) for (let k = rowPtr[r]!; k < rowPtr[r + 1]!; k++) { const q = at[colIdx[k]!]!++; row[q] = r; wb[q] = bits[k]!; }
  const runLen = new Int32Array(row.length);
  for (let c = 0; c < m.cols; c++) {
    for (let a = ptr[c]!; a < ptr[c + 1]!;) {
      let b = a + 1;
      while (b < ptr[c + 1]! && row[b] === row[b - 1]! + 1 && wb[b] === wb[a]) b++;
      runLen.fill(b - a, a, b);
      a = b;
    }
  }
  g = { ptr, row, runLen };
  gateCscs.set(m, g);
  return g;
}
/** A gate at or below this gives silu −0 (numeric.ts silu32): the unit's output stays +0 while its gate stays there. */
const OFF_BELOW = SATURATE_ZERO_TO;
/** The shortest run counted in `offInRuns`. */
const RUN_MIN = 8;
/** Per gate/up stack, its gate rows' values after the previous step (a run's first step only records them). */
const lastGates = new Map<Matrix, Float32Array>();
/** Per gate/up stack, the reached gate rows' values before the current step, and the step that reached each (`stepNo`). */
const gatesBefore = new Map<Matrix, { before: Float32Array; at: Int32Array }>();
let stepNo = 0;
const off = { entries: 0, offEntries: 0, offInRuns: 0, rows: 0, offRows: 0 };
/** A gate at or above this is in silu's identity region (numeric.ts silu32 gives x there). */
const ON_FROM = SATURATE_ONE_FROM;
/** The down projections' changed columns (the SwiGLU's changed units) and their entries; those whose gate is on before and after, in a run or not. */
const down = { columns: 0, entries: 0, onOnRun: 0, onOnRunEntries: 0, onOnOther: 0 };
/** Per gate/up stack, 1 for each gate row with an entry in a run of RUN_MIN or more. */
const inRuns = new Map<Matrix, Uint8Array>();
function inRunOf(m: Matrix): Uint8Array {
  let a = inRuns.get(m);
  if (a !== undefined) return a;
  const g = gateCscOf(m);
  a = new Uint8Array(m.rows / 2);
  for (let k = 0; k < g.row.length; k++) if (g.runLen[k]! >= RUN_MIN) a[g.row[k]!] = 1;
  inRuns.set(m, a);
  return a;
}
/**
 * A down projection's changed columns: each a SwiGLU unit whose output moved; those whose gate was
 * in silu's identity region before and after the step (its output moved with its gate or up, not
 * by turning on or off), in a ramp table's run or not.
 */
function countDown(m: Matrix, layer: number, changed: Int32Array, nChanged: number): void {
  const mlp = chip.weights.layers[layer]!.mlp;
  if (!('downProj' in mlp)) return;
  const stack = stackOf(gateUpParts(ex.ctx.plans, mlp));
  const st = stack === undefined ? undefined : ex.ctx.memos.deltaStates.get(stack);
  const gb = stack === undefined ? undefined : gatesBefore.get(stack);
  if (st === undefined || gb === undefined) return;
  const y = st.y;
  const inRun = inRunOf(stack!);
  const fan = fanOutOf(m);
  for (let t = 0; t < nChanged; t++) {
    const i = changed[t]!;
    down.columns++;
    down.entries += fan[i]!;
    const before = gb.at[i] === stepNo ? gb.before[i]! : y[i]!;
    if (before >= ON_FROM && y[i]! >= ON_FROM) {
      if (inRun[i] === 1) { down.onOnRun++; down.onOnRunEntries += fan[i]!; } else down.onOnOther++;
    }
  }
}
/**
 * The gate rows' share of a gate/up walk that moves units which stay off: the stored gate entries
 * of the changed columns, those on rows whose gate is ≤ −89 before and after the step, and of
 * those the ones in runs of RUN_MIN or more; the reached gate rows, and those that stay off (added
 * up when `add`; the gates are recorded at every step).
 */
function countOff(m: Matrix, rows: Int32Array, nRows: number, changed: Int32Array, nChanged: number, add: boolean): void {
  const st = ex.ctx.memos.deltaStates.get(m);
  if (st === undefined) return;
  const y = st.y;
  const n = m.rows / 2;
  const prev = lastGates.get(m);
  if (prev === undefined || st.full) { lastGates.set(m, y.slice(0, n)); return; }
  const g = gateCscOf(m);
  for (let t = 0; t < nChanged && add; t++) {
    const c = changed[t]!;
    for (let k = g.ptr[c]!; k < g.ptr[c + 1]!; k++) {
      const r = g.row[k]!;
      off.entries++;
      if (prev[r]! <= OFF_BELOW && y[r]! <= OFF_BELOW) { off.offEntries++; if (g.runLen[k]! >= RUN_MIN) off.offInRuns++; }
    }
  }
  let gb = gatesBefore.get(m);
  if (gb === undefined) gatesBefore.set(m, gb = { before: new Float32Array(n), at: new Int32Array(n).fill(-1) });
  for (let t = 0; t < nRows; t++) {
    const r = rows[t]!;
    if (r >= n) continue;
    gb.before[r] = prev[r]!;
    gb.at[r] = stepNo;
    if (add) {
      off.rows++;
      if (prev[r]! <= OFF_BELOW && y[r]! <= OFF_BELOW) off.offRows++;
    }
    prev[r] = y[r]!;
  }
}

const perMatrix = new Map<string, { layer: number; role: Role; calls: number; changedColumns: number; entries: number }>();
const perColumn = new Map<string, { layer: number; role: Role; column: number; changes: number; fanOut: number; entries: number }>();
let counting = false;
let total = 0;
function onDelta(m: Matrix, rows: Int32Array, nRows: number, changed: Int32Array, nChanged: number): void {
  const { layer, role } = identify(m);
  if (role === 'gateUp') countOff(m, rows, nRows, changed, nChanged, counting);
  if (!counting) return;
  if (role === 'down') countDown(m, layer, changed, nChanged);
  const fan = fanOutOf(m);
  const mk = `${layer}.${role}`;
  const pm = perMatrix.get(mk) ?? { layer, role, calls: 0, changedColumns: 0, entries: 0 };
  pm.calls++;
  pm.changedColumns += nChanged;
  for (let t = 0; t < nChanged; t++) {
    const c = changed[t]!;
    const ck = `${mk}.${c}`;
    const pc = perColumn.get(ck) ?? { layer, role, column: c, changes: 0, fanOut: fan[c]!, entries: 0 };
    pc.changes++;
    pc.entries += fan[c]!;
    perColumn.set(ck, pc);
    pm.entries += fan[c]!;
    total += fan[c]!;
  }
  perMatrix.set(mk, pm);
}

// the prompt as `chipc run` feeds it, then greedy decoding (on a fresh executor again after HALT)
function startRun(): number {
  lastGates.clear();
  gatesBefore.clear();
  ex = chipExecutor(chip, prog, { profile: 'f32', order: { kind: 'sequential' }, path: 'sparse' });
  ex.stats.onDelta = onDelta;
  ex.prime([BOS_ID]);
  return ex.decodeArgmax(encodeToken({ kind: 'J', w: (prog.entry - CODE_BASE) / 4 }));
}
let last = startRun();
let steps = 0;
/** The executor's own count of the entries it walked in the counted steps (delta.ts passes over a column whose input only flips between +0 and −0). */
let walked = 0;
for (let i = 0; i < skip + tokens; i++) {
  if (decodeToken(last).kind === 'HALT') {
    counting = false;
    last = startRun();
  }
  counting = i >= skip;
  stepNo++;
  const w0 = ex.stats.deltaEntries;
  last = ex.decodeArgmax(last);
  if (counting) { steps++; walked += ex.stats.deltaEntries - w0; }
}

/** The signal a residual column holds when `sublayer` reads it, and the lowered ops there that read it. */
function nameColumn(layer: number, role: Role, column: number): { signal: string; readers: string[] } {
  if (role !== 'inProj' && role !== 'gateUp') return { signal: '', readers: [] };
  const sublayer = role === 'inProj' ? 2 * layer : 2 * layer + 1;
  const slot = column - frame.firstSlot;
  const dims = new Set<number>();
  for (let d = 0; d < lowered.dims.length; d++) {
    if (packing.slot[d] === slot && packing.birth[d]! < sublayer && packing.end[d]! >= sublayer) dims.add(d);
  }
  const readers: { what: string; units: number }[] = [];
  for (const op of lowered.ops) {
    if (schedule.sublayer[op.id] !== sublayer || !op.reads.some((d) => dims.has(d))) continue;
    readers.push({ what: op.what, units: op.kind === 'ffn' ? op.units.length : 0 });
  }
  readers.sort((a, b) => b.units - a.units || a.what.localeCompare(b.what));
  return { signal: [...dims].map((d) => lowered.dims[d]!.name).join(', '), readers: readers.map((r) => (r.units > 0 ? `${r.what} (${r.units} units)` : r.what)) };
}

const matrices = [...perMatrix.values()].sort((a, b) => a.layer - b.layer || a.role.localeCompare(b.role))
  .map((m) => ({ layer: m.layer, role: m.role, calls: m.calls / steps, changedColumns: m.changedColumns / steps, entries: m.entries / steps }));
const byEntries = [...perColumn.values()].sort((a, b) => b.entries - a.entries || a.layer - b.layer || a.column - b.column);
const shares: { top: number; share: number }[] = [];
let acc = 0;
byEntries.forEach((c, i) => {
  acc += c.entries;
  if ([10, 50, 100, 200, 500, 1000].includes(i + 1)) shares.push({ top: i + 1, share: acc / total });
});
const columns = byEntries.slice(0, top).map((c) => ({
  layer: c.layer, role: c.role, column: c.column, changesPerToken: c.changes / steps, fanOut: c.fanOut,
  entriesPerToken: c.entries / steps, ...nameColumn(c.layer, c.role, c.column),
}));

const offGates = {
  entries: off.entries / steps, offEntries: off.offEntries / steps, offInRuns: off.offInRuns / steps, rows: off.rows / steps, offRows: off.offRows / steps,
};
const downColumns = {
  columns: down.columns / steps, entries: down.entries / steps, onOnInRuns: down.onOnRun / steps, onOnInRunsEntries: down.onOnRunEntries / steps,
  onOnOther: down.onOnOther / steps,
};
if (json) {
  console.log(JSON.stringify({
    target: target.name, elf, tokens: steps, entriesPerToken: total / steps, walkedPerToken: walked / steps, matrices, shares,
    distinctColumns: byEntries.length, columns, offGates, downColumns,
  }));
} else {
  console.log(`${elf} on the generic chip at ${target.name} (${schedule.numLayers} layers, ${packing.slotsUsed} slots): ${steps} decode steps after ${skip}`);
  console.log(`stored entries of the changed columns per token: ${(total / steps).toFixed(1)}, over ${byEntries.length} distinct columns (walked, by the executor's count: ${(walked / steps).toFixed(1)}; it passes over a column whose input only flips the sign of a zero)`);
  console.log('\nlayer  matrix   calls  changed columns  entries (per token)');
  for (const m of matrices) console.log(`${String(m.layer).padStart(5)}  ${m.role.padEnd(7)} ${m.calls.toFixed(2).padStart(6)}  ${m.changedColumns.toFixed(1).padStart(15)}  ${m.entries.toFixed(1).padStart(8)}`);
  console.log(`\nthe busiest columns' share of the entries: ${shares.map((s) => `top ${s.top} ${(100 * s.share).toFixed(1)} %`).join(', ')}`);
  console.log(`\ngate rows of the gate/up walks (per token): ${offGates.entries.toFixed(1)} stored entries of the changed columns, ${offGates.offEntries.toFixed(1)} of them on rows off (gate ≤ ${OFF_BELOW}) before and after, ${offGates.offInRuns.toFixed(1)} of those in runs of ${RUN_MIN}+ consecutive rows with one weight; ${offGates.rows.toFixed(1)} gate rows reached, ${offGates.offRows.toFixed(1)} of them off before and after`);
  console.log(`down projections (per token): ${downColumns.columns.toFixed(1)} changed columns (units whose output moved) with ${downColumns.entries.toFixed(1)} stored entries; ${downColumns.onOnInRuns.toFixed(1)} of them units of runs whose gate was on (≥ ${ON_FROM}) before and after, with ${downColumns.onOnInRunsEntries.toFixed(1)} entries; ${downColumns.onOnOther.toFixed(1)} other units on before and after`);
  console.log('\nlayer  matrix   column  changes/token  fan-out  entries/token  signal: readers');
  for (const c of columns) {
    console.log(`${String(c.layer).padStart(5)}  ${c.role.padEnd(7)} ${String(c.column).padStart(6)}  ${c.changesPerToken.toFixed(3).padStart(13)}  ${String(c.fanOut).padStart(7)}  ${c.entriesPerToken.toFixed(1).padStart(13)}  ${c.signal}${c.readers.length > 0 ? `: ${c.readers.slice(0, 3).join('; ')}${c.readers.length > 3 ? `; ${c.readers.length - 3} more` : ''}` : ''}`);
  }
}
