/**
 * Where a token's incremental work goes, per lowered op: runs a firmware program through the
 * chip's weights (sparse path, f32, greedy as `chipc run`), counts how often each residual dim's
 * bits change from one position to the next at each sublayer's input, and charges every op the
 * stored entries its input rows would walk — for each term of each of its forms (FFN gate and
 * up; GDN q, k, v, z and β), the changes per token of the dim the term reads. That is the work
 * of the incremental matmuls (docs/executor.md round 3) before the down and out projections,
 * attributed to the circuit's own ops: the table to rewrite to make decode cheaper.
 *
 *   npx tsx bench/chip-op-work.ts [--elf fixtures/firmware/hello.elf] [--tokens 800] [--top 30] [--json]
 *
 * Columns: sublayer, entries per token (estimate), units (FFN) or key heads (GDN), the op, and the
 * dims that cost it most (name: entries per token). The estimate counts a term once per change
 * of its dim; the executor's own count (`bench/chip-speed.ts`, "stored entries walked") also has
 * the down / out projections and rows shared by fused tables.
 */
import fs from 'node:fs';
import { Command } from 'commander';
import { Executor, argmax } from '../src/exec/executor.ts';
import { programOf } from '../src/chip/run.ts';
import { compileChip } from '../src/chip/build.ts';
import { applyRamContents } from '../src/load/ram-state.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { CODE_BASE } from '../src/cpu/cpu.ts';
import { BOS_ID, decodeToken, encodeToken } from '../riscv/protocol.ts';
import type { Form } from '../src/lower/forms.ts';

const opts = new Command()
  .option('--elf <file>', 'firmware image', 'fixtures/firmware/hello.elf')
  .option('--tokens <n>', 'decode steps at most (stops at HALT)', '800')
  .option('--top <n>', 'ops to print', '30')
  .option('--json', 'print JSON')
  .parse().opts<{ elf: string; tokens: string; top: string; json?: boolean }>();
const maxTokens = Number(opts.tokens);
const top = Number(opts.top);
if (!Number.isInteger(maxTokens) || maxTokens < 2) throw new Error('--tokens must be an integer ≥ 2');
if (!Number.isInteger(top) || top < 1) throw new Error('--top must be a positive integer');
if (!fs.existsSync(opts.elf)) throw new Error(`${opts.elf} does not exist`);

const prog = programOf(fs.readFileSync(opts.elf));
const res = compileChip(prog.chip, resolveTarget('chip-test').config);
const w = res.weights;
const ex = new Executor(w, { profile: 'f32', order: { kind: 'sequential' }, path: 'sparse' });
for (const [name, rows] of [['code', prog.code], ['mem', prog.data], ['regs', prog.regs]] as const) {
  const placement = res.rams.find((r) => r.name === name);
  if (!placement) throw new Error(`the compiled chip has no RAM "${name}"`);
  applyRamContents(ex, res, placement, rows);
}

// changes per dim at each sublayer's input: mixer 2l reads the layer input, FFN 2l + 1 the mid sum
// (the RMSNorm factor is constant on the chip, so a normalised dim changes iff its input does)
const L = w.config.numLayers;
const H = w.config.hiddenSize;
const changes = Array.from({ length: 2 * L }, () => new Float64Array(H));
const prev: (Float32Array | null)[] = Array(2 * L).fill(null);
let steps = 0;
ex.addHook((ev) => {
  for (const [s, v] of [[2 * ev.layer, ev.residualIn], [2 * ev.layer + 1, ev.residualMid]] as const) {
    const p = prev[s];
    if (p) {
      const a = new Uint32Array(v.buffer, v.byteOffset, H);
      const b = new Uint32Array(p.buffer, p.byteOffset, H);
      for (let i = 0; i < H; i++) if (a[i] !== b[i]) changes[s]![i]!++;
    }
    prev[s] = v;
  }
  if (ev.layer === 0 && prev[0] !== null) steps++;
});
let last = argmax(ex.prefill([BOS_ID, encodeToken({ kind: 'J', w: (prog.entry - CODE_BASE) / 4 })])[0]!);
for (let t = 0; t < maxTokens && decodeToken(last).kind !== 'HALT'; t++) last = ex.decodeArgmax(last);
const per = Math.max(1, steps - 1); // the first decode step has no previous position to compare with

const lc = res.lowered;
const dimOf = (v: number): number => res.slotDim(res.packing.slot[v]!);
interface OpWork { sublayer: number; what: string; kind: string; size: number; entries: number; byDim: [string, number][] }
const out: OpWork[] = [];
for (const op of lc.ops) {
  const sub = res.schedule.sublayer[op.id]!;
  const forms: Form[] = [];
  let size = 0;
  if (op.kind === 'ffn') {
    for (const u of op.units) forms.push(u.gate, u.up);
    size = op.units.length;
  } else if (op.kind === 'gdn') {
    for (const h of op.heads) {
      forms.push(...h.q, ...h.k);
      for (const v of h.values) if (v) forms.push(...v.v, ...v.z, v.b);
    }
    size = op.heads.length;
  } else continue;
  const byDim = new Map<string, number>();
  let entries = 0;
  for (const f of forms) {
    for (const t of f.terms) {
      if (t.coef === 0) continue;
      const c = changes[sub]![dimOf(t.dim)]! / per;
      if (c === 0) continue;
      entries += c;
      const name = lc.dims[t.dim]!.name;
      byDim.set(name, (byDim.get(name) ?? 0) + c);
    }
  }
  out.push({ sublayer: sub, what: op.what, kind: op.kind, size, entries, byDim: [...byDim.entries()].sort((a, b) => b[1] - a[1]).slice(0, 4) });
}
out.sort((a, b) => b.entries - a.entries);
const total = out.reduce((s, o) => s + o.entries, 0);
if (opts.json) {
  console.log(JSON.stringify({ bench: 'chip-op-work', elf: opts.elf, positions: per, total, ops: out.slice(0, top) }, null, 1));
} else {
  console.log(`${opts.elf}: ${per} positions compared; ≈ ${Math.round(total).toLocaleString('en-US')} input-row entries per token over ${out.length} ops`);
  console.log('sub  entries/token  units|heads  op — costliest dims');
  for (const o of out.slice(0, top)) {
    const dims = o.byDim.map(([n, c]) => `${n}: ${c.toFixed(0)}`).join(', ');
    console.log(`${String(o.sublayer).padStart(3)}  ${o.entries.toFixed(0).padStart(13)}  ${String(o.size).padStart(11)}  ${o.what} — ${dims}`);
  }
}
