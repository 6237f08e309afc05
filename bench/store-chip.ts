/**
 * The store through the compiled weights (src/store/chip.ts): tokens, instructions and time per
 * operation of typical sizes, and a random workload checked against the reference model.
 *
 *   npx tsx bench/store-chip.ts [--capacity full|small] [--ops 30] [--list-files 100] [--engine weights|ir] [--json]
 *
 * full = the `chipc store init` defaults (512 files, names ≤ 32, contents ≤ 1,024, 1,024 chunks of
 * 16; a 128 KiB data RAM in four banks); small = the CI test's store (8 files, 32 KiB).
 * Typical sizes: an 8-token name with 32 tokens of content (token ids over the whole vocabulary);
 * put (new), put (overwrite), get (found), get (not found), delete, and list of --list-files files
 * (imported straight into the state: no tokens). Every generated token is compared with the golden
 * emulator's stream; every answer with the model's.
 */
import { Command } from 'commander';
import { ChipStore, CHIP_STORE_DEFAULTS, CHIP_STORE_SMALL, type ChipStoreCall } from '../src/store/chip.ts';
import { StoreModel, resolveStoreParams, type StoreParams, type StoreResult } from '../src/store/model.ts';
import { asFirmwareAnswer, type StoreRequest } from '../src/store/firmware.ts';
import { applyRequest, storeWorkload } from '../src/store/workload.ts';
import { resolveTarget } from '../src/model/targets.ts';

const o = new Command()
  .option('--capacity <c>', 'full or small', 'full')
  .option('--ops <n>', 'random workload operations through the chip', '30')
  .option('--list-files <n>', 'files in the store that list runs on', '100')
  .option('--engine <e>', 'weights or ir', 'weights')
  .option('--target <t>', 'target', 'chip-test')
  .option('--json', 'print JSON')
  .parse().opts<{ capacity: string; ops: string; listFiles: string; engine: 'weights' | 'ir'; target: string; json?: boolean }>();

const params: StoreParams = o.capacity === 'small'
  ? resolveStoreParams(CHIP_STORE_SMALL)
  : resolveStoreParams(CHIP_STORE_DEFAULTS);
const target = resolveTarget(o.target).config;
const t0 = performance.now();
const { res, memBytes } = ChipStore.compile(params, target);
const compileSeconds = (performance.now() - t0) / 1000;

let seed = 12345;
const rnd = () => {
  seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0;
  return seed;
};
const toks = (n: number) => Array.from({ length: n }, () => rnd() % params.vocab);
const strip = (r: StoreResult) => JSON.stringify(asFirmwareAnswer(r));

const rows: Record<string, unknown>[] = [];
const record = (what: string, c: ChipStoreCall, want: StoreResult) => {
  if (JSON.stringify(c.result) !== strip(want)) throw new Error(`${what}: the chip answered ${JSON.stringify(c.result)}, the model ${strip(want)}`);
  const row = { what, promptTokens: c.promptTokens, generatedTokens: c.generatedTokens, instructions: c.instructions, seconds: +c.seconds.toFixed(2) };
  rows.push(row);
  if (!o.json) console.log(`${what}: ${c.promptTokens} request + ${c.generatedTokens} generated tokens, ${c.instructions} instructions, ${row.seconds} s`);
};

// ── typical operations on a fresh store ──────────────────────────────────────────────────────
const model = new StoreModel(params);
const s = ChipStore.open(params, { target, engine: o.engine, compiled: res, memBytes });
const nm = toks(Math.min(8, params.nameMax));
const ct = toks(Math.min(32, params.contentMax));
record('put 8+32 (new)', s.put(nm, ct), model.put(nm, ct));
const ct2 = toks(Math.min(32, params.contentMax));
record('put 8+32 (overwrite)', s.put(nm, ct2), model.put(nm, ct2));
record('get 8+32 (found)', s.get(nm), model.get(nm));
const other = toks(Math.min(8, params.nameMax));
record('get (not found)', s.get(other), model.get(other));
record('delete 8+32', s.delete(nm), model.delete(nm));

// ── list of many files: the store imported into the state, then one list through the chip ──────
const full = new StoreModel(params);
const nFiles = Math.min(Number(o.listFiles), params.maxFiles);
for (let i = 0; i < nFiles; i++) full.put(toks(Math.min(8, params.nameMax)), toks(Math.min(32, params.contentMax)));
const sl = ChipStore.open(full, { target, engine: o.engine, compiled: res, memBytes });
record(`list of ${full.fileCount} files`, sl.list(), full.list());

// ── random workload vs the model ─────────────────────────────────────────────────────────────
const w0 = performance.now();
const ws = ChipStore.open(params, { target, engine: o.engine, compiled: res, memBytes });
const wm = new StoreModel(params);
let tokens = 0;
const codes: Record<string, number> = {};
const ops: StoreRequest[] = storeWorkload(2026, Number(o.ops), params);
for (const [i, q] of ops.entries()) {
  const c = ws.apply(q);
  const want = applyRequest(wm, q);
  if (JSON.stringify(c.result) !== strip(want)) throw new Error(`workload operation ${i}: the chip answered ${JSON.stringify(c.result)}, the model ${strip(want)}`);
  tokens += c.promptTokens + c.generatedTokens;
  codes[c.result.code] = (codes[c.result.code] ?? 0) + 1;
}
const exported = ws.exportModel(); // rows read back from the chip's state, checked against the emulator's
const workload = { ops: ops.length, mismatches: 0, tokens, seconds: +((performance.now() - w0) / 1000).toFixed(1), codes, files: exported.fileCount };

const doc = { capacity: o.capacity, params, memBytes, engine: o.engine, target: o.target, layers: res.weights.config.numLayers, compileSeconds: +compileSeconds.toFixed(1), rows, workload };
if (o.json) console.log(JSON.stringify(doc, null, 2));
else {
  console.log(`workload: ${workload.ops} random operations, 0 mismatches with the model, ${tokens} tokens in ${workload.seconds} s; answers ${JSON.stringify(codes)}`);
  console.log(`(${o.engine}, ${o.target}: ${doc.layers} layers, ${memBytes / 1024} KiB data RAM; compile ${doc.compileSeconds} s)`);
}
