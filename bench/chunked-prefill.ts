/**
 * Chunked prefill against token-by-token feeding, through the weights of a generic chip.
 *
 *   npx tsx bench/chunked-prefill.ts --chip CKPT [--programs hello,crc32,…] [--plans whole,chunked:1,…]
 *     [--orders sequential,fma,shuffled] [--full] [--decode N | --replay N] [--profile f32|bf16] [--json OUT]
 *
 * For every bundled firmware program (fixtures/firmware) the loader prompt is fed one token per
 * forward in sequential order: the reference. Then, for every plan (how the prompt is split into
 * forwards: docs/cli.md `--prefill`) and every reduction order, a fresh executor is fed the same
 * prompt and its whole cache — every GDN layer's conv window and recurrent states, every attention
 * layer's keys and values — is compared with the reference's as bit patterns, together with the
 * first generated token. The order applies to the GDN chunked kernel, the one reduction whose
 * order can change a compiled value (every matmul row of the chip is exact in any order for exact
 * inputs: src/passes/order-invariance.ts); `--full` applies it to every matmul too (far slower). Identical caches and position make every later decode step identical (the
 * forward is a function of the cache and the token); `--decode N` also decodes N tokens after each
 * split and compares them with the golden emulator's stream.
 *
 * `--replay N` instead feeds the loader prompt *followed by the first N tokens of the golden
 * stream* through each plan, as one prompt (teacher forcing: what an engine does when it prefills a
 * conversation that holds generated text), and compares the argmax at every position from the
 * prompt's last token on with the golden next token. Such a stream reads rows it rewrote inside a
 * chunk, which the chip's rule (docs/numerics.md "Chunked prefill") does not cover: the bench
 * measures where it holds anyway and where it does not.
 *
 * Prints one line per (program, plan, order) and the totals: prompt positions compared and
 * divergent runs. Exit status 1 when any run diverged (with --replay: always 0; the lines say).
 */
import fs from 'node:fs';
import path from 'node:path';
import { checkChipFits, feedLoaderPrompt, goldenTokens, parsePrefillPlan, prefillPieces, prefillPlanName, programOf, readChipCheckpoint, STEPWISE, type ChipProgram } from '../src/chip/run.ts';
import { loadChipModel } from '../src/chip/loaded.ts';
import { Executor, argmax, compareCaches } from '../src/exec/index.ts';
import { parseOrder } from '../src/cli/commands/exec.ts';
import type { NumericProfile } from '../src/exec/types.ts';

const args = process.argv.slice(2);
function opt(name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}
function usage(msg: string): never {
  process.stderr.write(`bench/chunked-prefill.ts: ${msg}\n`);
  process.exit(2);
}
const chipPath = opt('--chip') ?? usage('--chip CKPT is required (make one with `npx chipc cpu -o CKPT.chip`)');
const programs = (opt('--programs') ?? 'hello,crc32,sort,calc,fixedpoint,accum,bignum,store,bench,bigfact').split(',');
const plans = (opt('--plans') ?? 'whole,chunked:1,chunked:7,chunked:64,chunked:512,chunked:2048,random:1,random:2:64').split(',').map(parsePrefillPlan);
const orders = (opt('--orders') ?? 'sequential,fma,shuffled:1').split(',');
const decodeN = Number(opt('--decode') ?? '0');
const replayN = Number(opt('--replay') ?? '0');
if (!Number.isSafeInteger(decodeN) || decodeN < 0) usage(`--decode must be a non-negative integer`);
if (!Number.isSafeInteger(replayN) || replayN < 0) usage(`--replay must be a non-negative integer`);
if (replayN > 0 && decodeN > 0) usage('--replay and --decode are separate runs: pass one of them');
const profile = (opt('--profile') ?? 'f32') as NumericProfile;
if (profile !== 'f32' && profile !== 'bf16') usage(`--profile must be f32 or bf16, not ${profile}`);
const jsonOut = opt('--json');
// By default the order applies to the GDN chunked kernel (ExecOptions.kernelOrder) and the matmuls
// run sequentially on the sparse path; --full applies it to every reduction (dense, far slower).
const full = args.includes('--full');

const ck = readChipCheckpoint(chipPath);
const shape = ck.manifest.rv32;
if (shape === undefined || shape.generic !== true) usage(`${chipPath} is not a generic RV32 chip`);
function progFor(elf: Uint8Array): ChipProgram {
  const prog = programOf(elf, { codeBytes: 4 * shape!.codeWords, memBytes: 4 * shape!.memWords });
  prog.chip.memBankWords = shape!.memBankWords;
  checkChipFits(ck, prog);
  return prog;
}
const elves = programs.map((p) => {
  const f = path.join('fixtures', 'firmware', `${p}.elf`);
  if (!fs.existsSync(f)) usage(`${f} does not exist`);
  return { name: p, elf: fs.readFileSync(f) };
});
const chip = loadChipModel(chipPath, progFor(elves[0]!.elf));
const date = new Date().toISOString();
process.stdout.write(`chip ${chipPath}: ${chip.weights.config.numLayers} layers, hidden ${chip.weights.config.hiddenSize}; profile ${profile}; ${date}\n`);

if (replayN > 0) {
  // Teacher forcing: prompt + golden tokens through each plan; each position's argmax against the next token.
  let checked = 0;
  let wrong = 0;
  for (const { name, elf } of elves) {
    const prog = progFor(elf);
    const golden = goldenTokens(elf, { maxInstructions: replayN, mem: { size: prog.memBytes }, codeBytes: prog.codeBytes }).tokens;
    const stream = [...prog.loader, ...golden.slice(2, 2 + replayN)];
    for (const plan of plans) {
      for (const o of orders) {
        const t0 = performance.now();
        const ex = new Executor(chip.weights, full ? { profile, order: parseOrder(o) } : { profile, kernelOrder: parseOrder(o) });
        let bad = 0;
        let first = -1;
        let n = 0;
        for (const [a, b] of prefillPieces(stream.length, plan)) {
          const logits = ex.extend(stream.slice(a, b), { allLogits: true });
          for (let i = a; i < b; i++) {
            if (i < prog.loader.length - 1 || i + 1 >= stream.length) continue;
            n++;
            if (argmax(logits[i - a]!) !== stream[i + 1]) {
              if (first < 0) first = i + 1 - prog.loader.length;
              bad++;
            }
          }
        }
        checked += n;
        wrong += bad;
        process.stdout.write(`${name.padEnd(11)} ${prefillPlanName(plan).padEnd(14)} ${o.padEnd(11)} replay of ${stream.length} positions: ` +
          `${bad === 0 ? `all ${n} next tokens right` : `${bad} of ${n} next tokens wrong, the first at generated token ${first}`} (${((performance.now() - t0) / 1000).toFixed(1)} s)\n`);
      }
    }
  }
  process.stdout.write(`total: ${checked.toLocaleString('en-US')} replayed positions checked, ${wrong.toLocaleString('en-US')} wrong\n`);
  process.exit(0);
}

interface Row { program: string; plan: string; order: string; positions: number; same: boolean; firstToken: boolean; difference: string | null; decoded: number; decodeOk: boolean; seconds: number }
const rows: Row[] = [];
let positions = 0;
let bad = 0;
for (const { name, elf } of elves) {
  const prog = progFor(elf);
  const prompt = prog.loader;
  const ref = new Executor(chip.weights, { profile });
  const refFirst = feedLoaderPrompt(ref, prompt, STEPWISE);
  const refCache = ref.cacheSnapshot();
  const golden = decodeN > 0 ? goldenTokens(elf, { maxInstructions: decodeN, mem: { size: prog.memBytes }, codeBytes: prog.codeBytes }).tokens : [];
  for (const plan of plans) {
    for (const o of orders) {
      const t0 = performance.now();
      const ex = new Executor(chip.weights, full ? { profile, order: parseOrder(o) } : { profile, kernelOrder: parseOrder(o) });
      const first = feedLoaderPrompt(ex, prompt, plan);
      const diff = compareCaches(refCache, ex.cacheSnapshot());
      let decoded = 0;
      let decodeOk = true;
      if (decodeN > 0 && diff === null && first === refFirst) {
        // The golden stream starts with the 2-token state prompt [BOS, J(entry)]: golden[2] is the
        // first generated token, whatever prompt loaded the image.
        let t = first;
        for (let i = 0; i < decodeN && 2 + i < golden.length; i++) {
          if (t !== golden[2 + i]) { decodeOk = false; break; }
          decoded++;
          if (2 + i + 1 >= golden.length) break;
          t = ex.decodeArgmax(t);
        }
      }
      const same = diff === null;
      const ok = same && first === refFirst && decodeOk;
      if (!ok) bad++;
      positions += prompt.length;
      const row: Row = {
        program: name, plan: prefillPlanName(plan), order: o, positions: prompt.length, same, firstToken: first === refFirst,
        difference: diff === null ? null : `${diff.where} (${diff.count} entries)`, decoded, decodeOk, seconds: (performance.now() - t0) / 1000,
      };
      rows.push(row);
      process.stdout.write(`${name.padEnd(11)} ${row.plan.padEnd(14)} ${o.padEnd(11)} ${String(prompt.length).padStart(6)} positions: ` +
        `${ok ? 'identical' : 'DIFFERENT'}${row.difference ? ` — ${row.difference}` : ''}${first === refFirst ? '' : ' — first token differs'}` +
        `${decodeN > 0 ? `; ${decoded} decoded${decodeOk ? '' : ' — DIVERGED'}` : ''} (${row.seconds.toFixed(1)} s)\n`);
    }
  }
}
const decodedTotal = rows.reduce((a, r) => a + r.decoded, 0);
process.stdout.write(`total: ${rows.length} runs, ${positions.toLocaleString('en-US')} prompt positions fed in pieces` +
  `${decodeN > 0 ? ` and ${decodedTotal.toLocaleString('en-US')} decoded after them against the golden stream` : ''}, ${bad} runs different from token-by-token feeding\n`);
if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify({ chip: chipPath, date, profile, rows, positions, decoded: decodedTotal, bad }, null, 1));
process.exit(bad === 0 ? 0 : 1);
