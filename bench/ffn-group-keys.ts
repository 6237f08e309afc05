/**
 * How often the FFN's independent groups of units see an input they saw before: the measure behind
 * a per-group FFN memo (docs/benchmarks.md "The executor's round 41"). Runs a program on the
 * generic chip compiled in this process and, at every decode step, takes each layer's FFN input
 * (the post-attention norm of the residual after the mixer, recomputed from the layer hook's
 * residual with the executor's own norm) and splits each dense FFN into groups: units joined by a
 * shared down-projection row are one group (so every down row's stored entries lie in one group,
 * and the group's output is a function of the input columns its gate and up rows store, its *key*).
 * Over `--tokens` steps after `--skip` more it counts, per layer, the groups whose key bits moved
 * (a *move*), the moves whose key is among the group's `--lru` most recent keys (a *hit* of a
 * least-recently-used table of that size per group) or among every key it had (*ever*), and the
 * gate/up stored entries a move would walk (the group's entries in the changed columns: what the
 * incremental matmul walks for it). Then the groups a memo would look up under a static rule — at
 * least N gate/up entries per key column, for N in `--per-column` — with their moves, misses and
 * share of the entries; and the groups that hold the most entries.
 *
 *   npx tsx bench/ffn-group-keys.ts [--elf FILE] [--target qwen3.5-4b] [--tokens 4000] [--skip 300]
 *                                   [--lru 64] [--per-column 8,16,32] [--top 12] [--json]
 * The counts are deterministic (no timing). With --json one object: { target, elf, tokens, lru,
 * layers: [{ layer, groups, keyedGroups, movesPerToken, meanKey, hitRate, everRate,
 * entriesPerToken, entriesInHits }], total: { movesPerToken, hitRate, entriesPerToken,
 * entriesInHits }, rules: [{ perColumn, groups, movesPerToken, missesPerToken, entryShare }],
 * top: [{ layer, units, key, movesPerToken, hitRate, entriesPerMove }] } (rates and shares as
 * fractions).
 */
import fs from 'node:fs';
import { compileGenericChip } from '../src/chip/build.ts';
import { defaultChipSizes } from '../src/chip/generic.ts';
import { chipExecutor, programOf } from '../src/chip/run.ts';
import type { CsrMatrix } from '../src/model/weights.ts';
import { rmsNorm1p } from '../src/exec/norms.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { CODE_BASE } from '../src/cpu/cpu.ts';
import { BOS_ID, decodeToken, encodeToken } from '../riscv/protocol.ts';

function usage(msg: string): never {
  console.error(`ffn-group-keys: ${msg}\nusage: npx tsx bench/ffn-group-keys.ts [--elf FILE] [--target T] [--tokens N] [--skip N] [--lru N] [--per-column A,B,…] [--top K] [--json]`);
  process.exit(2);
}

const argv = process.argv.slice(2);
let elf = 'fixtures/firmware/crc32.elf';
let targetName = 'qwen3.5-4b';
let tokens = 4000;
let skip = 300;
let lru = 64;
let perColumn = [8, 16, 32];
let top = 12;
let json = false;
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--elf') elf = argv[++i] ?? usage('--elf needs a file');
  else if (a === '--target') targetName = argv[++i] ?? usage('--target needs a name');
  else if (a === '--tokens') tokens = Number(argv[++i]);
  else if (a === '--skip') skip = Number(argv[++i]);
  else if (a === '--lru') lru = Number(argv[++i]);
  else if (a === '--per-column') perColumn = (argv[++i] ?? usage('--per-column needs a list')).split(',').map(Number);
  else if (a === '--top') top = Number(argv[++i]);
  else if (a === '--json') json = true;
  else usage(`unknown argument ${a}`);
}
if (!Number.isInteger(tokens) || tokens < 1) usage('--tokens must be a positive integer');
if (!Number.isInteger(skip) || skip < 0) usage('--skip must be a non-negative integer');
if (!Number.isInteger(lru) || lru < 1) usage('--lru must be a positive integer');
if (perColumn.some((n) => !(n >= 0))) usage('--per-column must list non-negative numbers');
if (!Number.isInteger(top) || top < 0) usage('--top must be a non-negative integer');
if (!fs.existsSync(elf)) usage(`${elf} does not exist`);

const target = resolveTarget(targetName);
const sizes = defaultChipSizes(target.config);
const prog = programOf(fs.readFileSync(elf), sizes, target.config);
const chip = compileGenericChip({ targetName: target.name, target: target.config, ...sizes });
const weights = chip.weights;
const H = weights.config.hiddenSize;

/** One layer's groups and counts. */
interface LayerGroups {
  groups: number;
  /** Per group: its key columns (ascending), its gate/up entries in total. */
  keys: number[][];
  entries: Float64Array;
  /** Per column: the groups reading it and their entries in it. */
  readers: Map<number, number>[];
  prev: Uint32Array | null;
  recent: string[][];
  seen: Set<string>[];
  moves: Int32Array;
  hits: Int32Array;
  ever: Int32Array;
  moveEntries: Float64Array;
  hitEntries: Float64Array;
  units: Int32Array;
}

function groupsOf(g: CsrMatrix, u: CsrMatrix, d: CsrMatrix, n: number, rows: number): LayerGroups {
  const par = Int32Array.from({ length: n }, (_, j) => j);
  const find = (x: number): number => { while (par[x] !== x) { par[x] = par[par[x]!]!; x = par[x]!; } return x; };
  for (let r = 0; r < rows; r++) {
    for (let e = d.rowPtr[r]! + 1; e < d.rowPtr[r + 1]!; e++) {
      const a = find(d.colIdx[d.rowPtr[r]!]!), b = find(d.colIdx[e]!);
      if (a !== b) par[a] = b;
    }
  }
  const index = new Map<number, number>();
  const groupOf = new Int32Array(n);
  for (let j = 0; j < n; j++) {
    const r = find(j);
    if (!index.has(r)) index.set(r, index.size);
    groupOf[j] = index.get(r)!;
  }
  const G = index.size;
  const keySets = Array.from({ length: G }, () => new Set<number>());
  const readers = Array.from({ length: H }, () => new Map<number, number>());
  const entries = new Float64Array(G);
  const units = new Int32Array(G);
  for (let j = 0; j < n; j++) units[groupOf[j]!]!++;
  for (const m of [g, u]) {
    for (let j = 0; j < n; j++) {
      const k = groupOf[j]!;
      for (let e = m.rowPtr[j]!; e < m.rowPtr[j + 1]!; e++) {
        const c = m.colIdx[e]!;
        keySets[k]!.add(c);
        readers[c]!.set(k, (readers[c]!.get(k) ?? 0) + 1);
        entries[k]!++;
      }
    }
  }
  return {
    groups: G, keys: keySets.map((s) => [...s].sort((a, b) => a - b)), entries, readers, prev: null,
    recent: Array.from({ length: G }, () => []), seen: Array.from({ length: G }, () => new Set()),
    moves: new Int32Array(G), hits: new Int32Array(G), ever: new Int32Array(G),
    moveEntries: new Float64Array(G), hitEntries: new Float64Array(G), units,
  };
}

const layers: (LayerGroups | null)[] = weights.layers.map((lw) => {
  const f = lw.mlp;
  if (f.kind !== 'dense' || !f.gateProj.csr || !f.upProj.csr || !f.downProj.csr) return null;
  return groupsOf(f.gateProj.csr, f.upProj.csr, f.downProj.csr, f.gateProj.rows, f.downProj.rows);
});

const ex = chipExecutor(chip, prog, { path: 'sparse', profile: 'f32', order: { kind: 'sequential' } });
const normed = new Float32Array(H);
const normedBits = new Uint32Array(normed.buffer);
let step = 0;
ex.addHook((ev) => {
  const l = layers[ev.layer];
  if (!l) return;
  rmsNorm1p(ex.ctx, ev.residualMid, 0, H, weights.layers[ev.layer]!.postAttentionLayernorm, weights.config.rmsNormEps, normed, 0);
  const cur = Uint32Array.from(normedBits);
  if (l.prev !== null) {
    // the groups whose key moved, with their entries in the changed columns; the skipped steps
    // only learn the keys
    const moved = new Map<number, number>();
    for (let c = 0; c < H; c++) if (cur[c] !== l.prev[c]) for (const [k, e] of l.readers[c]!) moved.set(k, (moved.get(k) ?? 0) + e);
    const counting = step > skip;
    for (const [k, e] of moved) {
      const key = l.keys[k]!.map((c) => cur[c]!.toString(16)).join(',');
      const ever = l.seen[k]!.has(key);
      l.seen[k]!.add(key);
      const recent = l.recent[k]!;
      const at = recent.indexOf(key);
      if (at >= 0) recent.splice(at, 1);
      recent.push(key);
      if (recent.length > lru) recent.shift();
      if (!counting) continue;
      l.moves[k]!++;
      l.moveEntries[k]! += e;
      if (ever) l.ever[k]!++;
      if (at >= 0) { l.hits[k]!++; l.hitEntries[k]! += e; }
    }
  }
  l.prev = cur;
}, { gdnStates: false });
ex.prime([BOS_ID]);
let id = ex.decodeArgmax(encodeToken({ kind: 'J', w: (prog.entry - CODE_BASE) / 4 }));
for (step = 1; step <= skip + tokens && decodeToken(id).kind !== 'HALT'; step++) id = ex.decodeArgmax(id);
const counted = Math.max(1, step - 1 - skip);

const sum = (a: ArrayLike<number>): number => {
  let s = 0;
  for (let k = 0; k < a.length; k++) s += a[k]!;
  return s;
};
const perLayer = layers.flatMap((l, layer) => {
  if (!l) return [];
  const moves = sum(l.moves);
  const keyed = l.keys.filter((k) => k.length > 0).length;
  let keyTotal = 0;
  for (let k = 0; k < l.groups; k++) keyTotal += l.moves[k]! * l.keys[k]!.length;
  return [{
    layer, groups: l.groups, keyedGroups: keyed, movesPerToken: moves / counted, meanKey: moves > 0 ? keyTotal / moves : 0,
    hitRate: moves > 0 ? sum(l.hits) / moves : 0, everRate: moves > 0 ? sum(l.ever) / moves : 0,
    entriesPerToken: sum(l.moveEntries) / counted, entriesInHits: sum(l.moveEntries) > 0 ? sum(l.hitEntries) / sum(l.moveEntries) : 0,
  }];
});
const allMoves = sum(perLayer.map((l) => l.movesPerToken));
const allEntries = sum(perLayer.map((l) => l.entriesPerToken));
const total = {
  movesPerToken: allMoves,
  hitRate: sum(perLayer.map((l) => l.hitRate * l.movesPerToken)) / allMoves,
  entriesPerToken: allEntries,
  entriesInHits: sum(perLayer.map((l) => l.entriesInHits * l.entriesPerToken)) / allEntries,
};
const rules = perColumn.map((n) => {
  let groups = 0, moves = 0, misses = 0, ent = 0;
  for (const l of layers) {
    if (!l) continue;
    for (let k = 0; k < l.groups; k++) {
      const kc = l.keys[k]!.length;
      if (kc === 0 || l.entries[k]! < n * kc) continue;
      groups++;
      moves += l.moves[k]!;
      misses += l.moves[k]! - l.hits[k]!;
      ent += l.moveEntries[k]!;
    }
  }
  return { perColumn: n, groups, movesPerToken: moves / counted, missesPerToken: misses / counted, entryShare: ent / (allEntries * counted) };
});
const busiest = layers.flatMap((l, layer) => (l ? Array.from({ length: l.groups }, (_, k) => ({ l, layer, k })) : []))
  .filter(({ l, k }) => l.moves[k]! > 0)
  .sort((a, b) => b.l.moveEntries[b.k]! - a.l.moveEntries[a.k]!)
  .slice(0, top)
  .map(({ l, layer, k }) => ({
    layer, units: l.units[k]!, key: l.keys[k]!.length, movesPerToken: l.moves[k]! / counted,
    hitRate: l.hits[k]! / l.moves[k]!, entriesPerMove: l.moveEntries[k]! / l.moves[k]!,
  }));

if (json) {
  console.log(JSON.stringify({ target: target.name, elf, tokens: counted, lru, layers: perLayer, total, rules, top: busiest }));
} else {
  const pct = (x: number): string => `${(100 * x).toFixed(1)} %`;
  console.log(`${elf} on the generic chip at ${target.name}: ${counted} decode steps after ${skip}; a least-recently-used table of ${lru} keys per group`);
  console.log('layer  groups  keyed  moves/token  mean key  hits     ever     entries/token  in hits');
  for (const l of perLayer) {
    console.log(`${String(l.layer).padStart(5)}  ${String(l.groups).padStart(6)}  ${String(l.keyedGroups).padStart(5)}  ${l.movesPerToken.toFixed(1).padStart(11)}  ${l.meanKey.toFixed(1).padStart(8)}  ${pct(l.hitRate).padStart(7)}  ${pct(l.everRate).padStart(7)}  ${l.entriesPerToken.toFixed(0).padStart(13)}  ${pct(l.entriesInHits).padStart(7)}`);
  }
  console.log(`all: ${total.movesPerToken.toFixed(1)} moves a token, ${pct(total.hitRate)} hits; ${total.entriesPerToken.toFixed(0)} gate/up entries a token, ${pct(total.entriesInHits)} of them in hits`);
  for (const r of rules) {
    console.log(`groups of at least ${r.perColumn} gate/up entries per key column: ${r.groups}, ${r.movesPerToken.toFixed(1)} moves and ${r.missesPerToken.toFixed(2)} misses a token, ${pct(r.entryShare)} of the entries`);
  }
  for (const b of busiest) {
    console.log(`  layer ${b.layer}: ${b.units} units, key ${b.key}, ${b.movesPerToken.toFixed(3)} moves a token, ${pct(b.hitRate)} hits, ${b.entriesPerMove.toFixed(1)} entries a move`);
  }
}
