/**
 * What one GDN value head's recurrent step costs in the JavaScript loops and with the wasm kernels
 * (src/exec/gdn-sparse-step.ts recurrentStepSparse; src/exec/wasm-gdn-kernels.ts dots and delta),
 * on heads shaped like the generic chip's RAM banks at qwen3.5-4b: dk = dv = 128, a state with
 * `--rows` rows written (data words as floats: positive, negative and zero entries), and per step a
 * one-hot key (a write, β = 1, or none, β = 0), a one-hot query and a new v — the step's kv dots,
 * δ, the key row's update and the output dots. `--heads` heads are stepped in turn (the chip steps
 * about 25 a token), each with its own state, so the working set is the decode's.
 *
 * Both forms run the same seeded steps on copies of the same states and must end with the same
 * state and output bits (checked: a broken kernel fails instead of timing fast). Printed: ns per
 * head step, the median of `--repeats` timed runs after one untimed run, for `js` (arrays outside
 * the wasm memory) and `wasm` (the same arrays carved from it).
 *
 * Run: npx tsx bench/gdn-step.ts [--heads 32] [--rows 64] [--steps 20000] [--repeats 5] [--json]
 */
import { siluFormula } from '../src/exec/numeric.ts';
import { WasmHeap } from '../src/exec/wasm-heap.ts';
import { classifyState, newSparseStepScratch, recurrentStepSparse, type SparseStepScratch } from '../src/exec/gdn-sparse-step.ts';

const argv = process.argv.slice(2);
let heads = 32;
let rows = 64;
let steps = 20000;
let repeats = 5;
let json = false;
function usage(msg: string): never {
  console.error(`gdn-step: ${msg}\nusage: npx tsx bench/gdn-step.ts [--heads N] [--rows N] [--steps N] [--repeats R] [--json]`);
  process.exit(2);
}
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--heads') heads = Number(argv[++i]);
  else if (a === '--rows') rows = Number(argv[++i]);
  else if (a === '--steps') steps = Number(argv[++i]);
  else if (a === '--repeats') repeats = Number(argv[++i]);
  else if (a === '--json') json = true;
  else usage(`unknown argument ${a}`);
}
const DK = 128, DV = 128;
for (const [name, v, max] of [['--heads', heads, 4096], ['--rows', rows, DK], ['--steps', steps, 1e8], ['--repeats', repeats, 1000]] as const) {
  if (!Number.isInteger(v) || v < 1 || v > max) usage(`${name} must be an integer in [1, ${max}]`);
}

let seed = 0x1b873593;
/** xorshift32 in [0, 1) */
function rnd(): number {
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed / 4294967296;
}
const WORDS = [0, 0, 1, 7, 181, -3, 65535, -(2 ** 20), 0.5];
const pick = (a: readonly number[]): number => a[Math.floor(rnd() * a.length)]!;

/** The heads' initial states and the steps (write row or −1, read row, v), drawn once. */
const init = Array.from({ length: heads }, () => {
  const S = new Float32Array(DK * DV);
  for (let r = 0; r < rows; r++) for (let j = 0; j < DV; j++) S[r * DV + j] = pick(WORDS);
  return S;
});
const plan = Array.from({ length: steps }, () => ({
  h: Math.floor(rnd() * heads), write: rnd() < 0.3 ? Math.floor(rnd() * DK) : -1, read: Math.floor(rnd() * DK),
  v: Float32Array.from({ length: DV }, () => pick(WORDS)),
}));

interface Arrays { S: Float32Array[]; rows: Uint8Array[]; kind: number[]; q: Float32Array; k: Float32Array; v: Float32Array; o: Float32Array; scratch: SparseStepScratch }

function arrays(heap: WasmHeap | null): Arrays {
  const f = (n: number) => (heap === null ? new Float32Array(n) : heap.take(Float32Array, n)!);
  const u = (n: number) => (heap === null ? new Uint8Array(n) : heap.take(Uint8Array, n)!);
  const a: Arrays = {
    S: init.map(() => f(DK * DV)), rows: init.map(() => u(DK)), kind: init.map(() => 0),
    q: f(DK), k: f(DK), v: f(DV), o: f(DV), scratch: newSparseStepScratch(DK, DV, heap),
  };
  if (heap !== null && a.scratch.heap === null) usage('the wasm memory has no GDN kernels (SIMD) or no room');
  return a;
}

function reset(a: Arrays): void {
  for (let h = 0; h < heads; h++) {
    a.S[h]!.set(init[h]!);
    a.kind[h] = classifyState(a.S[h]!, a.rows[h]!);
  }
}

/** Runs the plan; returns ns per head step. */
function run(a: Arrays): number {
  const t0 = performance.now();
  for (const s of plan) {
    a.k.fill(0);
    if (s.write >= 0) a.k[s.write] = 1;
    a.q.fill(0);
    a.q[s.read] = 1;
    a.v.set(s.v);
    a.kind[s.h] = recurrentStepSparse(DK, DV, a.S[s.h]!, a.kind[s.h]!, a.rows[s.h]!, a.q, 0, a.k, 0, a.v, 0, -0, s.write >= 0 ? 1 : 0, a.o, 0, a.scratch);
  }
  return ((performance.now() - t0) * 1e6) / steps;
}

const median = (xs: number[]): number => { const s = [...xs].sort((x, y) => x - y); const n = s.length; return n % 2 ? s[(n - 1) / 2]! : (s[n / 2 - 1]! + s[n / 2]!) / 2; };
const bits = (x: Float32Array): Uint32Array => new Uint32Array(x.buffer, x.byteOffset, x.length);
const same = (x: Float32Array, y: Float32Array): boolean => { const a = bits(x), b = bits(y); return a.every((w, i) => w === b[i]); };

const heap = WasmHeap.create(Math.ceil((heads * DK * (DV + 1) * 4) / 2 ** 20) + 4, siluFormula);
if (heap === null) usage('WebAssembly is not available');
const forms: [string, Arrays][] = [['js', arrays(null)], ['wasm', arrays(heap)]];
const results: Record<string, number> = {};
for (const [name, a] of forms) {
  const times: number[] = [];
  for (let r = 0; r <= repeats; r++) {
    reset(a);
    const ns = run(a);
    if (r > 0) times.push(ns);
  }
  results[name] = median(times);
}
// the same bits from both forms
const [js, wa] = [forms[0]![1], forms[1]![1]];
for (let h = 0; h < heads; h++) if (!same(js.S[h]!, wa.S[h]!)) { console.error(`gdn-step: head ${h}'s state differs between the forms`); process.exit(1); }
if (!same(js.o, wa.o)) { console.error('gdn-step: the last output differs between the forms'); process.exit(1); }

if (json) console.log(JSON.stringify({ heads, rows, steps, repeats, nsPerHeadStep: results }));
else {
  console.log(`GDN head steps (dk = dv = ${DK}, ${heads} heads of ${rows} written rows, ${steps} steps, median of ${repeats}):`);
  for (const [name, ns] of Object.entries(results)) console.log(`  ${name.padEnd(5)} ${ns.toFixed(0).padStart(6)} ns per head step`);
}
