/**
 * Opening a saved chip: `loadChipModel` (what `chipc run --model CHIP` and a cached `chipc run` do
 * before the first token) of a `.chip` written by `chipc cpu`, timed in this process `--runs`
 * times (the first is what a fresh process pays after reading the manifest once, as `chipc run
 * --model` does; later ones run warm code), with the parts of the
 * first: opening and validating the `.chip` (checksum, manifest, every block table), reading its
 * manifest, and building the sparse weights from its blocks (the token embedding held, its rows
 * decoded on demand: model/lazy-rows.ts).
 *
 *   npx tsx bench/chip-open.ts --model CHIP [--elf fixtures/firmware/hello.elf] [--runs 3] [--json]
 */
import fs from 'node:fs';
import { loadChipModel } from '../src/chip/loaded.ts';
import { programOf, readChipCheckpoint } from '../src/chip/run.ts';
import { openChipFile } from '../src/chipfile/read.ts';
import { loadModelFromChipFile } from '../src/model/load-weights.ts';

function usage(msg: string): never {
  console.error(`chip-open: ${msg}\nusage: npx tsx bench/chip-open.ts --model CHIP [--elf FILE] [--runs N] [--json]`);
  process.exit(2);
}

const argv = process.argv.slice(2);
let model: string | undefined;
let elf = 'fixtures/firmware/hello.elf';
let runs = 3;
let json = false;
for (let i = 0; i < argv.length; i++) {
  const a = argv[i]!;
  if (a === '--model') model = argv[++i];
  else if (a === '--elf') elf = argv[++i] ?? usage('--elf needs a file');
  else if (a === '--runs') runs = Number(argv[++i]);
  else if (a === '--json') json = true;
  else usage(`unknown argument ${a}`);
}
if (model === undefined) usage('--model CHIP is required (a .chip written by chipc cpu)');
if (!Number.isSafeInteger(runs) || runs < 1) usage('--runs must be a positive integer');
if (!fs.statSync(model, { throwIfNoEntry: false })?.isFile()) usage(`${model} is not a .chip file`);

const ms = (t0: number): number => performance.now() - t0;
// the program only sizes the check that the chip runs it (its RAM sizes from the manifest)
const rv32 = readChipCheckpoint(model).manifest.rv32;
if (typeof rv32?.codeWords !== 'number' || typeof rv32.memWords !== 'number') usage(`${model}: its manifest records no RV32 RAM sizes (write it with chipc cpu)`);
const prog = () => programOf(fs.readFileSync(elf), { codeBytes: rv32.codeWords * 4, memBytes: rv32.memWords * 4 });

const loads: number[] = [];
for (let r = 0; r < runs; r++) {
  const p = prog();
  const t0 = performance.now();
  loadChipModel(model, p);
  loads.push(ms(t0));
}
// the parts of a load, after the runs above (warm code)
let t = performance.now();
const chip = openChipFile(model);
const openMs = ms(t);
t = performance.now();
readChipCheckpoint(model, chip);
const manifestMs = ms(t);
t = performance.now();
loadModelFromChipFile(chip, model, { mode: 'sparse', lazyEmbedding: true }); // (as loadChipModel loads)
const weightsMs = ms(t);
chip.close();

const figures = {
  model, bytes: fs.statSync(model).size,
  warmParts: { openAndValidateMs: openMs, manifestMs, weightsMs },
  loadChipModelMs: loads,
};
if (json) console.log(JSON.stringify(figures));
else {
  console.log(`${model} (${figures.bytes.toLocaleString('en-US')} bytes)`);
  console.log(`loadChipModel, ${runs} runs: ${loads.map((x) => `${x.toFixed(0)} ms`).join(', ')} (the first in a fresh process)`);
  console.log(`parts of one more (warm): open and validate ${openMs.toFixed(0)} ms, manifest ${manifestMs.toFixed(0)} ms, sparse weights ${weightsMs.toFixed(0)} ms`);
}
