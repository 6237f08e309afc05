/**
 * Where a run's memory comes from: the wall time, minor page faults (first touches of fresh 4 KiB
 * pages: bench/page-faults.ts) and resident set of each phase of running a program on a saved chip
 * the way `chipc run --model CHIP` does — open and validate the `.chip`, read its manifest, load
 * the weights, make the executor (RAM images into the GDN state), the prompt's BOS, the first
 * decode (J(entry)), then N more tokens. (`loadChipModel` reads the manifest again: the
 * weights' phase includes a second read.)
 *
 *   npx tsx bench/chip-faults.ts --model CHIP [--elf FILE] [--tokens N] [--json]
 *
 * `--elf` defaults to fixtures/firmware/crc32.elf, `--tokens` to 1000.
 */
import fs from 'node:fs';
import { openChipFile } from '../src/chipfile/read.ts';
import { chipExecutor, programOf, readChipCheckpoint } from '../src/chip/run.ts';
import { loadChipModel } from '../src/chip/loaded.ts';
import { CODE_BASE } from '../src/cpu/cpu.ts';
import { BOS_ID, encodeToken } from '../riscv/protocol.ts';

function usage(msg: string): never {
  console.error(`chip-faults: ${msg}\nusage: npx tsx bench/chip-faults.ts --model CHIP [--elf FILE] [--tokens N] [--json]`);
  process.exit(2);
}
const argv = process.argv.slice(2);
let model: string | undefined;
let elf = 'fixtures/firmware/crc32.elf';
let tokens = 1000;
let json = false;
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--model') model = argv[++i] ?? usage('--model needs a path');
  else if (a === '--elf') elf = argv[++i] ?? usage('--elf needs a path');
  else if (a === '--tokens') tokens = Number(argv[++i]);
  else if (a === '--json') json = true;
  else usage(`unknown argument ${a}`);
}
if (model === undefined) usage('--model is required');
if (!Number.isSafeInteger(tokens) || tokens < 0) usage('--tokens needs a non-negative integer');

const rows: { phase: string; ms: number; pageFaults: number; rssMiB: number }[] = [];
// (performance.now() counts from the process's start)
let t0 = performance.now();
let f0 = process.resourceUsage().minorPageFault;
rows.push({ phase: 'process start and imports', ms: t0, pageFaults: f0, rssMiB: process.memoryUsage().rss / 2 ** 20 });
const lap = (phase: string): void => {
  const t = performance.now();
  const f = process.resourceUsage().minorPageFault;
  rows.push({ phase, ms: t - t0, pageFaults: f - f0, rssMiB: process.memoryUsage().rss / 2 ** 20 });
  t0 = t;
  f0 = f;
};
const chip = openChipFile(model);
lap('open and validate the .chip');
const ck = readChipCheckpoint(model, chip);
lap('read the manifest');
const rv32 = ck.manifest.rv32;
if (rv32 === undefined) usage(`${model} is not an RV32 chip`);
const prog = programOf(fs.readFileSync(elf), { codeBytes: rv32.codeWords * 4, memBytes: rv32.memWords * 4 });
const loaded = loadChipModel(model, prog, chip);
lap('load the weights');
const ex = chipExecutor(loaded, prog, { profile: 'f32', order: { kind: 'sequential' }, path: 'sparse' });
lap('make the executor');
ex.prime([BOS_ID]);
lap('prompt: BOS');
let tok = ex.decodeArgmax(encodeToken({ kind: 'J', w: (prog.entry - CODE_BASE) / 4 }));
lap('prompt: J(entry), the first token');
for (let i = 0; i < tokens; i++) tok = ex.decodeArgmax(tok);
lap(`the next ${tokens} tokens`);
chip.close();
const total = rows.reduce((s, r) => s + r.pageFaults, 0);
if (json) console.log(JSON.stringify({ model, elf, tokens, phases: rows, pageFaults: total }));
else {
  for (const r of rows) console.log(`${r.phase.padEnd(36)} ${r.ms.toFixed(0).padStart(6)} ms ${r.pageFaults.toLocaleString('en-US').padStart(8)} page faults  ${r.rssMiB.toFixed(0).padStart(5)} MiB resident`);
  console.log(`${'in all'.padEnd(36)} ${' '.repeat(9)} ${total.toLocaleString('en-US').padStart(8)} page faults`);
}
