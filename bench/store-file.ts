/**
 * Store file sizes (issue 5 figures): the `.chip-store` file of the default store (F = 512,
 * N = 32, M = 4,096, C = 16, V = 248,320) empty, with 512 small files (names of 8 tokens,
 * contents of 32) and with one maximum-size file (a 32-token name and 4,096 content tokens),
 * against the system we re-create (9,746 / 604,338 / 2,163,655 bytes). Token ids are drawn
 * from the whole vocabulary by a fixed xorshift32 generator (most need 3 varint bytes: a worst-ish
 * case). Also prints the row traffic of typical operations. Prints a table and one JSON line.
 *
 *   npx tsx bench/store-file.ts
 */
import { StoreModel } from '../src/store/model.ts';
import { encodeStore } from '../src/store/file.ts';

let seed = 12345;
/** xorshift32 (shifts 13, 17, 5); token = state mod V. */
function token(v: number): number {
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed % v;
}
const tokens = (n: number, v: number): number[] => Array.from({ length: n }, () => token(v));

const empty = new StoreModel();
const V = empty.params.vocab;

const small = new StoreModel();
const names: number[][] = [];
for (let i = 0; i < 512; i++) {
  const name = tokens(8, V);
  names.push(name);
  const r = small.put(name, tokens(32, V));
  if (r.code !== 'OK') throw new Error(`put ${i}: ${r.code}`);
}
const big = new StoreModel();
const bigName = tokens(big.params.nameMax, V);
const bigPut = big.put(bigName, tokens(big.params.contentMax, V));
if (bigPut.code !== 'OK') throw new Error(`max put: ${bigPut.code}`);

const sizes = { empty: encodeStore(empty).length, files512: encodeStore(small).length, maxFile: encodeStore(big).length };
const theirs = { empty: 9746, files512: 604338, maxFile: 2163655 };
console.log('store file sizes (bytes), default store F=512 N=32 M=4096 C=16 P=2048');
console.log('case                         ours     theirs');
for (const k of Object.keys(sizes) as (keyof typeof sizes)[]) {
  console.log(`${k.padEnd(24)} ${String(sizes[k]).padStart(9)} ${String(theirs[k]).padStart(10)}`);
}

// Probe lengths of a get of each of the 512 files (load 50 %).
const probes = names.map((n) => small.get(n).cost.probes);
const meanProbes = probes.reduce((a, b) => a + b, 0) / probes.length;
console.log(`\nget probes over the 512 files: mean ${meanProbes.toFixed(3)}, max ${Math.max(...probes)}`);

// Row traffic of typical operations on the store holding 512 small files.
const fresh = new StoreModel();
const ops = {
  'put 8+32 (empty store)': fresh.put(names[0], tokens(32, V)).cost,
  'get 8+32 (512 files)': small.get(names[100]).cost,
  'put overwrite 8+32': small.put(names[100], tokens(32, V)).cost,
  'delete 8+32': small.delete(names[200]).cost,
  'list (511 files)': small.list().cost,
  'get max file': big.get(bigName).cost,
};
console.log('\noperation                    row reads  row writes  probes');
for (const [k, c] of Object.entries(ops)) {
  console.log(`${k.padEnd(28)} ${String(c.rowReads).padStart(9)} ${String(c.rowWrites).padStart(11)} ${String(c.probes).padStart(7)}`);
}
console.log(JSON.stringify({ bench: 'store-file', sizes, theirs, probes: { mean: meanProbes, max: Math.max(...probes) }, ops: Object.fromEntries(Object.entries(ops).map(([k, c]) => [k, { reads: c.rowReads, writes: c.rowWrites, probes: c.probes }])) }));
