/**
 * What reading a typed array's `byteOffset`, `buffer` and `length` costs in this Node, against a
 * plain object field: each read in a small function called in a hot loop, over views of a
 * WebAssembly memory (as the executor's kernels take them) and of an ordinary ArrayBuffer, timed
 * after an untimed pass, best of `--repeats`. In Node 20 (V8 11.3) `byteOffset` and `buffer` are
 * builtin calls that the optimising compiler does not inline, while `length` and a field are plain
 * loads: the executor therefore keeps the byte addresses it passes to its wasm kernels instead of
 * reading them at every call (src/exec/wasm-heap.ts ViewAt, DeltaAt;
 * docs/benchmarks.md "The executor's round 36").
 *
 *   npx tsx bench/view-getters.ts [--calls 20000000] [--repeats 3] [--json]
 *
 * Prints ns per read for each; with --json one object { calls, node, nsPerRead: { wasmByteOffset,
 * wasmBuffer, plainByteOffset, plainBuffer, length, field } }.
 */

const argv = process.argv.slice(2);
let calls = 20_000_000;
let repeats = 3;
let json = false;
function usage(msg: string): never {
  console.error(`view-getters: ${msg}\nusage: npx tsx bench/view-getters.ts [--calls N] [--repeats R] [--json]`);
  process.exit(2);
}
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--calls') calls = Number(argv[++i]);
  else if (a === '--repeats') repeats = Number(argv[++i]);
  else if (a === '--json') json = true;
  else usage(`unknown argument ${a}`);
}
if (!Number.isSafeInteger(calls) || calls < 1000) usage('--calls must be an integer of at least 1000');
if (!Number.isSafeInteger(repeats) || repeats < 1) usage('--repeats must be a positive integer');

interface WasmMemoryApi { Memory: new (d: { initial: number }) => { buffer: ArrayBuffer } }
const memory = new (globalThis as unknown as { WebAssembly: WasmMemoryApi }).WebAssembly.Memory({ initial: 16 });
const wasmView = new Float32Array(memory.buffer, 4096, 2560);
const plainView = new Float32Array(new ArrayBuffer(1 << 20), 4096, 2560);
const holder = { at: 4096 };

// One function per read, each called with one view only (monomorphic, as a call site of the executor is).
const reads: [string, () => number][] = [
  ['wasmByteOffset', () => { let s = 0; for (let i = 0; i < calls; i++) s += wasmView.byteOffset; return s; }],
  ['wasmBuffer', () => { let s = 0; for (let i = 0; i < calls; i++) s += wasmView.buffer === memory.buffer ? 1 : 0; return s; }],
  ['plainByteOffset', () => { let s = 0; for (let i = 0; i < calls; i++) s += plainView.byteOffset; return s; }],
  ['plainBuffer', () => { let s = 0; for (let i = 0; i < calls; i++) s += plainView.buffer === plainView.buffer ? 1 : 0; return s; }],
  ['length', () => { let s = 0; for (let i = 0; i < calls; i++) s += wasmView.length; return s; }],
  ['field', () => { let s = 0; for (let i = 0; i < calls; i++) s += holder.at; return s; }],
];

const nsPerRead: Record<string, number> = {};
let sink = 0;
for (const [name, f] of reads) {
  sink += f(); // untimed: the optimised code
  let best = Infinity;
  for (let r = 0; r < repeats; r++) {
    const t0 = performance.now();
    sink += f();
    best = Math.min(best, performance.now() - t0);
  }
  nsPerRead[name] = (best * 1e6) / calls;
}
if (sink === 0.5) console.log(''); // keeps the loops' results alive

if (json) console.log(JSON.stringify({ calls, node: process.version, nsPerRead }));
else {
  console.log(`${process.version}, ${calls.toLocaleString('en-US')} reads each, best of ${repeats}: ns per read`);
  for (const [name, ns] of Object.entries(nsPerRead)) console.log(`  ${name.padEnd(16)} ${ns.toFixed(2)}`);
}
