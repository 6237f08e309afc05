/**
 * What a column walk costs on this machine when its data is and is not in cache: the loop of
 * src/exec/delta.ts deltaLinearIn's bounded rows (per stored entry of a changed column: the row's
 * mark read, a first touch marked and listed, y_r += w·Δx) over synthetic matrices shaped like the
 * generic chip's at qwen3.5-4b, random rows, so that the decode's cost per entry (bench/chip-speed.ts:
 * a phase's µs per token against `workPerTokenByMatrix`) can be read against a floor:
 *  - `gate/up`: the stacked gate and up projections, 18,432 rows × 2,560 columns, 1 to 19 stored
 *    entries a column (10 on average, as the chip's changed columns hold), 42 changed columns a
 *    call (the chip: 463 in 11 calls);
 *  - `down`: the down projection, 2,560 rows × 9,216 columns of 1 or 2 entries (1.4 on average),
 *    115 changed columns a call (the chip: 1,260 in 11 calls).
 * Each configuration runs `--tokens` steps; a step walks its changed columns (random, ascending in
 * one call) in each of L matrices, each with its own row records, one after the other, as a decode
 * step walks the chip's layers: `hot` is one matrix walking ten times as many columns a call (the
 * loop's own cost: its data stays in cache), then `L = 1, 11, 30` (`--layers`; 11: the chip's
 * FFN layers, 30: a working set three times that). Every configuration checks its sums and row
 * lists against a plain re-computation, so a broken loop fails instead of timing fast. The
 * figures are ns per stored entry walked and µs per step, the median of `--repeats` timed runs
 * after one untimed run (the JIT's optimised code). Each configuration runs twice: `js`, the loop
 * above in JavaScript, and `wasm`, the executor's wasm walk (src/exec/wasm-kernels.ts) over the same
 * data carved from its memory, each call's columns listed first as deltaLinearIn lists them.
 *
 * Run: npx tsx bench/walk-floor.ts [--layers 1,11,30] [--tokens 3000] [--repeats 5] [--json]
 */
import { siluFormula } from '../src/exec/numeric.ts';
import { WasmHeap } from '../src/exec/wasm-heap.ts';

const argv = process.argv.slice(2);
let layerList = [1, 11, 30];
let tokens = 3000;
let repeats = 5;
let json = false;
function usage(msg: string): never {
  console.error(`walk-floor: ${msg}\nusage: npx tsx bench/walk-floor.ts [--layers 1,11,30] [--tokens N] [--repeats R] [--json]`);
  process.exit(2);
}
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--layers') layerList = (argv[++i] ?? usage('--layers needs a list')).split(',').map(Number);
  else if (a === '--tokens') tokens = Number(argv[++i]);
  else if (a === '--repeats') repeats = Number(argv[++i]);
  else if (a === '--json') json = true;
  else usage(`unknown argument ${a}`);
}
if (layerList.some((l) => !Number.isInteger(l) || l < 1)) usage('--layers must list positive integers');
if (!Number.isInteger(tokens) || tokens < 1) usage('--tokens must be a positive integer');
if (!Number.isInteger(repeats) || repeats < 1) usage('--repeats must be a positive integer');

/** A matrix shape: rows, columns, how many stored entries a column holds, changed columns a call. */
interface Shape { name: string; rows: number; cols: number; entries: () => number; perCall: number }
const SHAPES: Shape[] = [
  { name: 'gate/up', rows: 2 * 9216, cols: 2560, entries: () => 1 + Math.floor(rnd() * 19), perCall: 42 },
  { name: 'down', rows: 2560, cols: 9216, entries: () => (rnd() < 0.6 ? 1 : 2), perCall: 115 },
];

let seed = 0x2545f491;
/** xorshift32 in [0, 1) */
function rnd(): number {
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed / 2 ** 32;
}

interface Walked { colPtr: Int32Array; rowIdx: Uint16Array; values: Float32Array; mark: Uint16Array; y: Float32Array; rows: Int32Array }

/** A typed array of `n` zeros: in `heap` (the wasm walk's memory) when given. */
function alloc<T>(ctor: { new (n: number): T; new (b: ArrayBufferLike, o: number, n: number): T; readonly BYTES_PER_ELEMENT: number }, n: number, heap: WasmHeap | null): T {
  if (heap === null) return new ctor(n);
  const a = heap.take(ctor, n);
  if (a === null) throw new Error('walk-floor: the wasm heap is full');
  return a;
}

function matrix(sh: Shape, heap: WasmHeap | null): Walked {
  const { rows: ROWS, cols: COLS } = sh;
  const colPtr = new Int32Array(COLS + 1); // (Int32, as the executor's column records hold the walks' starts)
  for (let c = 0; c < COLS; c++) colPtr[c + 1] = colPtr[c] + sh.entries();
  const nnz = colPtr[COLS];
  const rowIdx = alloc(Uint16Array, nnz, heap);
  const values = alloc(Float32Array, nnz, heap);
  for (let k = 0; k < nnz; k++) { rowIdx[k] = Math.floor(rnd() * ROWS); values[k] = (Math.floor(rnd() * 8) - 4) || 1; }
  return { colPtr, rowIdx, values, mark: alloc(Uint16Array, ROWS, heap), y: alloc(Float32Array, ROWS, heap), rows: alloc(Int32Array, ROWS, heap) };
}

/** deltaLinearIn's bounded-row walk of one column (mark bit 0 clear: every row bounded here). */
function walkColumn(m: Walked, k0: number, k1: number, dx: number, cur: number, nr: number): number {
  const { rowIdx, values, mark, y, rows } = m;
  for (let k = k0; k < k1; k++) {
    const r = rowIdx[k];
    const f = mark[r];
    if ((f & 1) === 0) {
      if (f !== cur) { mark[r] = cur; rows[nr++] = r; }
      y[r] += values[k] * dx;
    }
  }
  return nr;
}

/** Per step and matrix, `perCall` ascending random columns and their Δx (small integers: exact sums). */
function schedule(COLS: number, steps: number, nMat: number, perCall: number): { cols: Int32Array; dx: Float64Array } {
  const cols = new Int32Array(steps * nMat * perCall);
  const dx = new Float64Array(cols.length);
  for (let s = 0; s < steps * nMat; s++) {
    const part = cols.subarray(s * perCall, (s + 1) * perCall);
    for (let j = 0; j < perCall; j++) part[j] = Math.floor(rnd() * COLS);
    part.sort();
    for (let j = 0; j < perCall; j++) dx[s * perCall + j] = (Math.floor(rnd() * 5) - 2) || 1;
  }
  return { cols, dx };
}

/** One run: every step walks its columns in each matrix; returns the entries walked and rows listed. */
function run(mats: Walked[], cols: Int32Array, dx: Float64Array, perCall: number, steps: number, epoch0: number): { entries: number; rows: number } {
  let entries = 0;
  let listed = 0;
  for (let s = 0; s < steps; s++) {
    const e = (epoch0 + s) % 16383;
    if (e === 0) for (const m of mats) m.mark.fill(0); // (as deltaLinearIn resets its marks when its 14-bit epoch wraps)
    const cur = (e + 1) << 2;
    for (let l = 0; l < mats.length; l++) {
      const m = mats[l];
      const at = (s * mats.length + l) * perCall;
      let nr = 0;
      for (let j = 0; j < perCall; j++) {
        const c = cols[at + j];
        const k0 = m.colPtr[c];
        const k1 = m.colPtr[c + 1];
        entries += k1 - k0;
        nr = walkColumn(m, k0, k1, dx[at + j], cur, nr);
      }
      listed += nr;
    }
  }
  return { entries, rows: listed };
}

/**
 * run() with the walks in wasm (src/exec/wasm-kernels.ts), as deltaLinearIn lists them: per call,
 * each changed column's first and end entry and Δx in the walk list, then one kernel call.
 */
function runWasm(heap: WasmHeap, list: { walkList: Int32Array; walkDx: Float64Array; defer: Int32Array }, mats: Walked[], cols: Int32Array, dx: Float64Array, perCall: number, steps: number, epoch0: number): { entries: number; rows: number } {
  let entries = 0;
  let listed = 0;
  const { walkList, walkDx, defer } = list;
  for (let s = 0; s < steps; s++) {
    const e = (epoch0 + s) % 16383;
    if (e === 0) for (const m of mats) m.mark.fill(0);
    const cur = (e + 1) << 2;
    for (let l = 0; l < mats.length; l++) {
      const m = mats[l];
      const at = (s * mats.length + l) * perCall;
      for (let j = 0; j < perCall; j++) {
        const c = cols[at + j];
        const k0 = m.colPtr[c];
        const k1 = m.colPtr[c + 1];
        entries += k1 - k0;
        walkList[4 * j] = k0;
        walkList[4 * j + 1] = k1;
        walkDx[2 * j + 1] = dx[at + j];
      }
      listed += heap.walk(perCall, walkList, m.mark, m.y, m.rows, m.rowIdx, m.values, defer, cur, 0);
    }
  }
  return { entries, rows: listed };
}

/** The same sums and row counts computed plainly (no marks): the check that the timed loop did its work. */
function check(mats: Walked[], cols: Int32Array, dx: Float64Array, perCall: number, steps: number, runs: number, got: { rows: number }): void {
  let listed = 0;
  for (let l = 0; l < mats.length; l++) {
    const m = mats[l];
    const y = new Float64Array(m.y.length);
    for (let s = 0; s < steps; s++) {
      const seen = new Set<number>();
      const at = (s * mats.length + l) * perCall;
      for (let j = 0; j < perCall; j++) {
        const c = cols[at + j];
        for (let k = m.colPtr[c]; k < m.colPtr[c + 1]; k++) { seen.add(m.rowIdx[k]); y[m.rowIdx[k]] += m.values[k] * dx[at + j]; }
      }
      listed += seen.size;
    }
    for (let r = 0; r < m.y.length; r++) {
      if (m.y[r] !== runs * y[r]) throw new Error(`walk-floor: row ${r} of matrix ${l} holds ${m.y[r]}, expected ${runs * y[r]}`);
    }
  }
  if (got.rows !== listed) throw new Error(`walk-floor: ${got.rows} rows listed in a run, expected ${listed}`);
}

interface Figure { shape: string; config: string; loop: 'js' | 'wasm'; matrices: number; columnsPerCall: number; nsPerEntry: number; usPerStep: number; entriesPerStep: number }

function measure(sh: Shape, config: string, nMat: number, perCall: number, loop: 'js' | 'wasm'): Figure {
  const heap = loop === 'wasm' ? WasmHeap.create(64 + Math.ceil((nMat * (sh.cols * 20 * 6 + sh.rows * 10)) / 2 ** 20), siluFormula) : null;
  if (loop === 'wasm' && heap === null) throw new Error('walk-floor: WebAssembly is not available');
  const mats = Array.from({ length: nMat }, () => matrix(sh, heap));
  const list = heap === null ? null : (() => {
    const walkList = alloc(Int32Array, 4 * perCall, heap);
    return { walkList, walkDx: new Float64Array(walkList.buffer, walkList.byteOffset, 2 * perCall), defer: alloc(Int32Array, 2, heap) };
  })();
  const go = (epoch: number) => (heap === null ? run(mats, cols, dx, perCall, tokens, epoch) : runWasm(heap, list!, mats, cols, dx, perCall, tokens, epoch));
  const { cols, dx } = schedule(sh.cols, tokens, nMat, perCall);
  let epoch = 0;
  let last = go(epoch); // untimed: the JIT's optimised code
  epoch += tokens;
  const times: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t = performance.now();
    last = go(epoch);
    times.push(performance.now() - t);
    epoch += tokens;
  }
  check(mats, cols, dx, perCall, tokens, repeats + 1, last);
  times.sort((a, b) => a - b);
  const ms = times[Math.floor(times.length / 2)];
  return { shape: sh.name, config, loop, matrices: nMat, columnsPerCall: perCall, nsPerEntry: (ms * 1e6) / last.entries, usPerStep: (ms * 1e3) / tokens, entriesPerStep: last.entries / tokens };
}

const figures: Figure[] = [];
for (const sh of SHAPES) {
  for (const loop of ['js', 'wasm'] as const) figures.push(measure(sh, 'hot', 1, 10 * sh.perCall, loop), ...layerList.map((l) => measure(sh, `L = ${l}`, l, sh.perCall, loop)));
}
if (json) console.log(JSON.stringify({ tokens, repeats, figures }));
else {
  console.log(`column walk, ${tokens} steps, median of ${repeats} runs`);
  for (const f of figures) {
    console.log(`${f.shape.padEnd(8)} ${f.loop.padEnd(4)} ${f.config.padEnd(7)} ${String(f.matrices).padStart(2)} × ${String(f.columnsPerCall).padStart(4)} columns: ${f.nsPerEntry.toFixed(2)} ns per entry, ${f.usPerStep.toFixed(1)} µs per step (${f.entriesPerStep.toFixed(0)} entries)`);
  }
}
