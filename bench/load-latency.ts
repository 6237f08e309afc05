/**
 * What a dependent load costs on this machine by working set: a pointer chase over one cache line
 * in each 64 bytes of an array of the given size, in a random cyclic order (each load's address is
 * the previous load's value, so no two overlap), timed after one untimed pass. The steps where the
 * time jumps are where the working set leaves a cache level or the TLB's reach; the decode's loops,
 * whose records for a token lie scattered over some MiB (docs/executor.md "What bounds the steady
 * rate"), pay these latencies where they miss.
 *
 *   npx tsx bench/load-latency.ts [--sizes 16,64,256,1024,4096,16384,65536] [--steps 4000000] [--json]
 *
 * Sizes in KiB. Prints ns per load for each size; with --json one object { steps, sizes: [{ kib,
 * nsPerLoad }] }.
 */

const argv = process.argv.slice(2);
let sizes = [16, 64, 256, 512, 1024, 2048, 4096, 8192, 32768, 131072];
let steps = 4_000_000;
let json = false;
function usage(msg: string): never {
  console.error(`load-latency: ${msg}\nusage: npx tsx bench/load-latency.ts [--sizes KIB,…] [--steps N] [--json]`);
  process.exit(2);
}
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--sizes') sizes = (argv[++i] ?? usage('--sizes needs a list')).split(',').map(Number);
  else if (a === '--steps') steps = Number(argv[++i]);
  else if (a === '--json') json = true;
  else usage(`unknown argument ${a}`);
}
if (sizes.some((s) => !Number.isInteger(s) || s < 1)) usage('--sizes must list positive integers (KiB)');
if (!Number.isInteger(steps) || steps < 1) usage('--steps must be a positive integer');

/** xorshift32 in [0, 1): a fixed order, the same on every run. */
let seed = 0x9e3779b9;
function rnd(): number {
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed / 2 ** 32;
}

/** ns per load of a chase over `kib` KiB. */
function chase(kib: number): number {
  const words = (kib * 1024) / 4;
  const a = new Int32Array(words);
  const lines = Math.max(2, Math.floor(words / 16));
  const order = Int32Array.from({ length: lines }, (_, i) => i);
  for (let i = lines - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    const t = order[i]; order[i] = order[j]; order[j] = t;
  }
  for (let i = 0; i < lines; i++) a[order[i] * 16] = order[(i + 1) % lines] * 16;
  let p = 0;
  for (let i = 0; i < Math.min(steps, 4 * lines); i++) p = a[p];
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < steps; i++) p = a[p];
  const ns = Number(process.hrtime.bigint() - t0) / steps;
  if (p < 0) throw new Error('load-latency: the chase left the array'); // (keeps p live)
  return ns;
}

const out = sizes.map((kib) => ({ kib, nsPerLoad: chase(kib) }));
if (json) console.log(JSON.stringify({ steps, sizes: out }));
else {
  console.log(`dependent loads, one per cache line, random cyclic order, ${steps} timed loads per size`);
  for (const r of out) console.log(`${String(r.kib).padStart(7)} KiB: ${r.nsPerLoad.toFixed(1)} ns per load`);
}
