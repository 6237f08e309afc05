/**
 * `chipc run FILE.elf [--target T] [--code-size BYTES] [--mem-size BYTES] [--check] [--max-tokens N]`:
 * run an RV32 program on the generic RV32IM+Zba chip (src/cpu/cpu.ts, token protocol v5:
 * docs/token-protocol.md) — one compiled chip per target and RAM sizes, taken from the chip cache
 * (src/chip/cache.ts; compiled and cached on a miss, `--no-cache` compiles for this run only) —
 * loading the program's image into its GDN state and generating token by token in the reference
 * executor until HALT or TRAP, printing the console output live. `--check` compares every token
 * with the golden emulator's trace and stops at the first divergence (a token past the end of the
 * golden stream is one). `--model CKPT` runs a saved chip checkpoint instead (`chipc cpu`; the
 * chip alone or merged into a host model: ids offset, loaded by the loader prompt); `--emit OUT`
 * writes the chip this run would use and exits. `--engine ir` runs the chip circuit without
 * weights. Exit status: the program's exit code; 1 on a divergence, a TRAP or when no HALT came;
 * 2 on an error.
 */
import fs from 'node:fs';
import type { Command } from 'commander';
import chalk from 'chalk';
import { resolveTarget } from '../../model/targets.ts';
import { ChipcError } from '../../util/errors.ts';
import { codeSizeOption, engineOption, inputOption, integerOption, memSizeOption, profileOption, type InputFlags } from '../support/options.ts';
import { parseOrder } from './exec.ts';
import { checkChipFits, fmtBytes, goldenTokens, parsePrefillPlan, prefillPlanName, programOf, readChipCheckpoint, runOnChip, runOnModel, type ChipProgram, type RunResult } from '../../chip/run.ts';
import { defaultChipSizes, describeSizes, genericShape, type GenericChipSpec } from '../../chip/generic.ts';
import { cachedGenericChip } from '../../chip/cached.ts';
import { loadModel, loadModelFromChipFile } from '../../model/load-weights.ts';
import { openChipFile } from '../../chipfile/read.ts';
import { loadChipModel } from '../../chip/loaded.ts';
import type { CompileResult } from '../../compile.ts';
import type { Mismatch } from '../../verify/check.ts';
import { decodeToken, formatToken, formatTokenAfter } from '../../../riscv/protocol.ts';
import { EXIT_DIFFERENT, fmtInt, makeOut } from '../support/output.ts';
import type { Runner } from '../support/output.ts';
import { prepareOutput } from '../support/files.ts';
import { summaryOf } from '../support/command-table.ts';

/**
 * The compile side (src/chip/build.ts), imported only by the paths that compile or replay the
 * circuit: a run of a saved or cached chip never loads the compiler, the DSL or the CPU circuit.
 */
const build = () => import('../../chip/build.ts');

interface RunCliOptions extends InputFlags {
  target?: string;
  check?: boolean;
  maxTokens: string;
  profile: string;
  trace?: boolean;
  engine: string;
  memSize?: string;
  codeSize?: string;
  cache: boolean;
  load?: string;
  prefill?: string;
  order?: string;
  kernelOrder?: string;
  model?: string;
  emit?: string;
  dtype: string;
  overwrite?: boolean;
  json?: boolean;
}

export function registerRun(program: Command, run: Runner): void {
  const sizes = defaultChipSizes();
  program
    .command('run')
    .description(summaryOf('run'))
    .argument('<elf>', 'an RV32IM+Zba ELF (code and data from 0x80000000)')
    .option('--target <name|config.json>', 'target model shape (needs the protocol\'s 248,205 token ids; default chip-test)')
    .option('--code-size <bytes>', `code RAM size from 0x80000000 (a power of two; default ${sizes.codeBytes}, with --model the chip's)`)
    .option('--mem-size <bytes>', `data RAM size from 0x80000000 (a multiple of 256; default 65536, or 4 banks where less; with --model the chip's)`)
    .option('--no-cache', 'compile the chip for this run instead of taking it from the chip cache (chipc cache)')
    .option('--load <how>', 'state (write the image into the GDN state directly) or prompt (feed the loader prompt of write tokens); default state, with a merged --model prompt')
    .option('--model <ckpt>', 'run this checkpoint (directory or .chip from chipc cpu, alone or merged into a host) instead of the cached chip')
    .option('--emit <out>', 'write the chip this run would use (directory, or a .chip file) with its manifest, and exit (as chipc cpu)')
    .option('--dtype <d>', 'with --emit: bf16 or f32', 'bf16')
    .option('--overwrite', 'with --emit: replace an existing output')
    .option('--input <text>', 'console input: these bytes (UTF-8), fed as prompt tokens after the program and read by its getchar (docs/token-protocol.md "Console input")')
    .option('--input-file <file>', 'console input: the bytes of this file')
    .option('--check', 'compare every token with the golden emulator\'s trace; stop at the first divergence')
    .option('--max-tokens <n>', 'stop after this many tokens', '100000')
    .option('--profile <p>', 'numeric profile: f32 or bf16', 'f32')
    .option('--prefill <plan>', 'how the loader prompt is fed (implies --load prompt): stepwise (one token per forward, the default), whole (one forward, as generate() does), chunked:N (forwards of N tokens) or random:SEED[:MAX] (random lengths 1…MAX)')
    .option('--order <o>', 'reduction order of every sum: sequential, fma (fused multiply-adds, as BLAS GEMMs) or shuffled[:SEED]; default sequential')
    .option('--kernel-order <o>', 'the same for the GDN chunked kernel alone (the order-sensitive part of a chunked prefill); the matmuls stay on the fast sparse path')
    .option('--trace', 'print every generated token')
    .option('--engine <e>', 'weights (the compiled chip in the reference executor) or ir (the chip circuit, no weights: the IR fast evaluator)', 'weights')
    .option('--json', 'print one JSON document')
    .action((file: string, o: RunCliOptions) =>
      run(async () => {
        const out = makeOut(Boolean(o.json));
        const profile = profileOption(o.profile);
        const maxTokens = integerOption(o.maxTokens, '--max-tokens', 'cli.max-tokens', { min: 3 });
        if (!fs.existsSync(file)) throw new ChipcError('cli.file', `${file} does not exist`);
        const elf = fs.readFileSync(file);
        engineOption(o.engine);
        if (o.model !== undefined && o.emit !== undefined) throw new ChipcError('cli.model', '--model and --emit exclude each other');
        if (o.model !== undefined && (o.engine !== 'weights' || o.target !== undefined)) {
          throw new ChipcError('cli.model', '--model runs the given checkpoint: --engine ir and --target do not apply');
        }
        if (o.emit !== undefined && o.engine !== 'weights') throw new ChipcError('cli.emit', '--emit writes compiled weights: --engine ir does not apply');
        if (o.dtype !== 'bf16' && o.dtype !== 'f32') throw new ChipcError('cli.dtype', `--dtype must be bf16 or f32, not "${o.dtype}"`);
        // With --model the checkpoint's manifest says the chip's RAM sizes (checked against the program below).
        // a .chip given with --model is opened and validated once, for its manifest and its weights
        let modelFile = o.model !== undefined && fs.statSync(o.model, { throwIfNoEntry: false })?.isFile() ? openChipFile(o.model) : undefined;
        try {
          const ck = o.model !== undefined ? readChipCheckpoint(o.model, modelFile) : null;
          const rv32 = ck?.manifest.rv32;
          const target = resolveTarget(o.target ?? 'chip-test');
          const sizes = defaultChipSizes(target.config);
          const memBytes = o.memSize !== undefined ? memSizeOption(o.memSize) : typeof rv32?.memWords === 'number' ? rv32.memWords * 4 : sizes.memBytes;
          const codeBytes = o.codeSize !== undefined ? codeSizeOption(o.codeSize) : typeof rv32?.codeWords === 'number' ? rv32.codeWords * 4 : sizes.codeBytes;
          if (ck !== null && o.codeSize !== undefined && typeof rv32?.codeWords === 'number' && codeBytes !== rv32.codeWords * 4) {
            throw new ChipcError('run.code', `${ck.path}: the chip's code RAM is ${fmtBytes(rv32.codeWords * 4)}, the run asks for ${fmtBytes(codeBytes)} (--code-size); ` +
              `pass --code-size ${rv32.codeWords * 4} or leave it out`);
          }
          const prefill = parsePrefillPlan(o.prefill ?? 'stepwise');
          const order = parseOrder(o.order ?? 'sequential');
          const kernelOrder = o.kernelOrder === undefined ? undefined : parseOrder(o.kernelOrder);
          if (o.engine === 'ir' && (o.prefill !== undefined || o.order !== undefined || o.kernelOrder !== undefined)) {
            throw new ChipcError('cli.engine', '--prefill and --order drive the weights\' forward passes: --engine ir does not apply');
          }
          if (o.prefill !== undefined && o.load === 'state') {
            throw new ChipcError('cli.load', '--prefill says how the loader prompt is fed: it needs --load prompt (the default with --prefill)');
          }
          const loadOpt = o.load ?? (o.prefill !== undefined || (ck !== null && ck.merged) ? 'prompt' : 'state');
          if (loadOpt !== 'state' && loadOpt !== 'prompt') throw new ChipcError('cli.load', `--load must be state or prompt, not "${loadOpt}"`);
          if (ck !== null && ck.merged && loadOpt === 'state') throw new ChipcError('cli.load', '--load state needs the chip alone; a merged checkpoint is loaded by its prompt');
          const load: 'state' | 'prompt' = loadOpt;
          const spec: GenericChipSpec = { targetName: target.name, target: target.config, codeBytes, memBytes };
          // The program, for a chip of these sizes (refused before anything is compiled or loaded when it does not fit).
          const input = inputOption(o);
          const prog: ChipProgram = programOf(elf, { memBytes, codeBytes, label: file, input }, ck === null ? target.config : undefined);
          if (ck !== null) {
            const banked = rv32?.memBankWords;
            if (typeof banked === 'number') prog.chip.memBankWords = banked;
            checkChipFits(ck, prog);
          }
          if (o.emit !== undefined) {
            prepareOutput(o.emit, { option: '--emit', inputs: [file], overwrite: o.overwrite === true });
            const t0 = performance.now();
            const { compileGenericChip, emitChip } = await build();
            const res = compileGenericChip(spec);
            const compileSeconds = (performance.now() - t0) / 1000;
            emitChip(o.emit, res, genericShape(spec), target.name, { dtype: o.dtype === 'bf16' ? 'BF16' : 'F32', overwrite: o.overwrite });
            out.emit({ output: o.emit, target: target.name, chip: genericShape(spec), layers: res.layers.length, hidden: res.weights.config.hiddenSize, compileSeconds });
            out.line(`${o.emit}: the generic chip (${describeSizes(spec)}) compiled for ${target.name} in ${compileSeconds.toFixed(1)} s ` +
              `(${res.layers.length} layers, hidden ${res.weights.config.hiddenSize})`);
            return 0;
          }
          const trace = o.check ? goldenTokens(elf, { maxInstructions: maxTokens, mem: { size: prog.memBytes }, codeBytes: prog.codeBytes, input, label: file }) : undefined;
          const golden = trace?.tokens;
          const goldenPc = trace?.tokenPc;
          const goldenEnd = trace === undefined ? undefined : { reason: trace.halt.reason, message: trace.halt.message };
          // The console: OUT bytes go to stdout as they are generated (with --trace, the tokens instead).
          const consoleBytes: number[] = [];
          // seconds from the process's start to the first generated token (what a user waits for)
          let firstTokenAfterStart: number | null = null;
          let prevToken: number | null = null;
          const onToken = (t: number) => {
            firstTokenAfterStart ??= process.uptime();
            const d = decodeToken(t);
            if (d.kind === 'OUT') {
              consoleBytes.push(d.b);
              if (!o.json && !o.trace) process.stdout.write(Buffer.from([d.b]));
            }
            if (o.trace && !o.json) out.line(formatTokenAfter(t, prevToken));
            prevToken = t;
          };
          const runOpts = { profile, order, kernelOrder, maxTokens, golden, goldenPc, goldenEnd, onToken, load, prefill };
          let r: RunResult;
          let where: string;
          let openS = 0;
          let layers: number | null = null;
          let located: Mismatch[] | null = null;
          let numLayers = 0;
          let cache: { hit: boolean; entry: string; path: string } | null = null;
          let compiled: CompileResult | null = null;
          if (ck !== null && load === 'state') {
            // the RAM rows written straight into the state, at the placements the manifest records
            const t0 = performance.now();
            const chip = loadChipModel(ck.path, prog, modelFile);
            modelFile?.close(); // (its block tables are not needed while the program runs)
            modelFile = undefined;
            openS = (performance.now() - t0) / 1000;
            numLayers = chip.weights.config.numLayers;
            r = runOnChip(chip, prog, runOpts);
            where = `chip checkpoint ${ck.path} loaded in ${openS.toFixed(1)} s (${numLayers} layers)`;
          } else if (ck !== null) {
            const t0 = performance.now();
            const weights = modelFile !== undefined ? loadModelFromChipFile(modelFile, ck.path, { mode: 'sparse' }) : loadModel(ck.path, { mode: 'sparse' });
            modelFile?.close();
            modelFile = undefined;
            openS = (performance.now() - t0) / 1000;
            numLayers = weights.config.numLayers;
            r = runOnModel(weights, prog, { ...runOpts, idOffset: ck.idOffset });
            where = `${ck.merged ? `merged checkpoint (chip ids from ${fmtInt(ck.idOffset)})` : 'chip checkpoint'} ${ck.path} loaded in ${openS.toFixed(1)} s (${numLayers} layers)`;
          } else if (o.engine === 'ir') {
            r = (await build()).runOnInterpreter(prog, runOpts);
            where = 'chip circuit in the IR (fast evaluator)';
          } else if (!o.cache) {
            const t0 = performance.now();
            compiled = (await build()).compileGenericChip(spec);
            openS = (performance.now() - t0) / 1000;
            layers = compiled.layers.length;
            numLayers = compiled.weights.config.numLayers;
            r = runOnChip(compiled, prog, runOpts);
            where = `generic chip (${describeSizes(spec)}) compiled for ${target.name} in ${openS.toFixed(1)} s (${layers} layers; --no-cache)`;
          } else {
            const t0 = performance.now();
            const c = await cachedGenericChip(spec, {
              log: (line) => { if (!o.json) process.stderr.write(`${line}\n`); },
              onCompile: () => { if (!o.json) process.stderr.write(chalk.dim(`chipc: compiling the generic chip (${describeSizes(spec)}) for ${target.name} once; later runs take it from the chip cache\n`)); },
            });
            cache = { hit: c.hit, entry: c.entry, path: c.path };
            if (c.compiled !== null) {
              compiled = c.compiled;
              layers = compiled.layers.length;
              numLayers = compiled.weights.config.numLayers;
              openS = (performance.now() - t0) / 1000;
              r = runOnChip(compiled, prog, runOpts);
              where = `generic chip (${describeSizes(spec)}) compiled for ${target.name} in ${c.compileSeconds.toFixed(1)} s and cached (${layers} layers)`;
            } else {
              const chip = loadChipModel(c.path, prog);
              openS = (performance.now() - t0) / 1000;
              numLayers = chip.weights.config.numLayers;
              layers = numLayers;
              r = runOnChip(chip, prog, runOpts);
              where = `cached generic chip (${describeSizes(spec)}, ${target.name}) opened in ${openS.toFixed(1)} s (${numLayers} layers)`;
            }
          }
          if (r.divergence && compiled !== null) {
            // Replay the run beside the chip circuit to find the first sublayer whose residual differs.
            if (!o.json) out.line(chalk.yellow(`divergence at token ${r.divergence.position}: replaying to locate it…`));
            located = (await build()).locateDivergence(compiled, prog, r.tokens, r.divergence.position, { profile, load });
          }
          if (!o.json && !o.trace && consoleBytes.length > 0 && consoleBytes[consoleBytes.length - 1] !== 10) process.stdout.write('\n');
          const generated = r.tokens.length - r.promptLength;
          const sublayerName = (sub: number) => sub < 0 ? 'the embedding' : sub >= 2 * numLayers ? 'the LM head'
            : `layer ${Math.floor(sub / 2)} ${sub % 2 === 0 ? 'mixer' : 'FFN'}`;
          const pcHex = (pc: number | null) => (pc === null ? '' : ` at pc 0x${(pc >>> 0).toString(16)}`);
          out.emit({
            ...r, generated, firstDifference: located === null ? null : located.slice(0, 5).map((m) => ({ ...m, where: sublayerName(m.sublayer) })),
            console: Buffer.from(consoleBytes).toString('latin1'), engine: o.engine, load, prefill: prefillPlanName(prefill), order: o.order ?? 'sequential', kernelOrder: o.kernelOrder ?? null, tokensPerInstruction: generated / Math.max(1, r.instructions),
            openSeconds: openS, firstTokenAfterStartSeconds: firstTokenAfterStart, layers, cache, chip: { codeBytes, memBytes },
            model: ck === null ? null : { path: ck.path, merged: ck.merged, idOffset: ck.idOffset },
          });
          out.line(`${file}: ${where}; ` +
            `${fmtInt(generated)} generated tokens after a ${fmtInt(r.promptLength)}-token prompt (${load}${load === 'prompt' ? `, ${prefillPlanName(prefill)}` : ''}${o.order !== undefined && o.order !== 'sequential' ? `, order ${o.order}` : ''}${o.kernelOrder !== undefined ? `, kernel order ${o.kernelOrder}` : ''}), ${fmtInt(r.instructions)} instructions ` +
            `(${(generated / Math.max(1, r.instructions)).toFixed(2)} tokens/instruction), ${(r.tokens.length / r.seconds).toFixed(0)} tokens/s` +
            (firstTokenAfterStart !== null ? `; first token ${(firstTokenAfterStart as number).toFixed(1)} s after start` : ''));
          if (r.systemCalls.length > 0) out.line(chalk.yellow(systemCallsNote(r.systemCalls)));
          if (r.divergence) {
            out.line(chalk.red(`divergence at token ${r.divergence.position}: expected ${r.divergence.expected}, got ${r.divergence.got}` +
              (r.divergence.pc !== null ? ` (instruction at pc 0x${r.divergence.pc.toString(16)})` : '')));
            if (compiled === null && o.engine === 'weights') out.line('(run it again with --no-cache and without --model to replay it beside the chip circuit and locate the first differing sublayer)');
            if (located !== null) {
              if (located.length === 0) {
                out.line('the weights agree with the chip circuit at every sublayer there: the circuit itself differs from the golden emulator (`--engine ir` shows the same divergence)');
              } else {
                const m = located[0]!;
                out.line(`first difference from the chip circuit: after ${sublayerName(m.sublayer)}, ` +
                  (m.what === 'token' ? `the emitted token (circuit ${formatToken(m.expected)}, weights ${formatToken(m.got)}; every placed signal agrees)`
                    : `signal ${m.what} = ${m.got} (circuit: ${m.expected})`) +
                  (located.length > 1 ? `; ${located.length - 1} more mismatch(es) after it` : ''));
              }
            }
            return EXIT_DIFFERENT;
          }
          if (o.check && golden) {
            out.line(chalk.green(`0 divergences from the golden trace (${fmtInt(r.tokens.length)} tokens${r.goldenEnded ? `; the golden run stopped at its budget: ${trace!.halt.message}` : ''})`));
          }
          if (r.trap !== null) {
            out.line(chalk.red(`the chip trapped: TRAP(${r.trap.name})${pcHex(r.trap.pc)}` + (trace !== undefined ? ` — the golden emulator: ${trace.halt.message}` : '')));
            return EXIT_DIFFERENT;
          }
          if (!r.halted) {
            out.line(chalk.yellow(r.goldenEnded ? 'no HALT within the golden run\'s instruction budget' : `no HALT within ${maxTokens} tokens`));
            return EXIT_DIFFERENT;
          }
          out.line(`exit ${r.exitCode}`);
          return r.exitCode ?? 1;
        } finally {
          modelFile?.close();
        }
      })(),
    );
}

/**
 * The warning for system calls other than exit: the chip answers them with −38 (ENOSYS) and does
 * nothing else, where the golden emulator performs a write (a7 = 64).
 */
export function systemCallsNote(calls: { pc: number; count: number }[]): string {
  const n = calls.reduce((a, c) => a + c.count, 0);
  const shown = calls.slice(0, 4).map((c) => `0x${c.pc.toString(16)}${c.count > 1 ? ` ×${fmtInt(c.count)}` : ''}`).join(', ');
  return `${fmtInt(n)} system call${n === 1 ? '' : 's'} other than exit (ecall at pc ${shown}${calls.length > 4 ? `, ${calls.length - 4} more pcs` : ''}): ` +
    'the chip answers each with -38 (ENOSYS) in a0 and does nothing else, so a write (a7 = 64) prints nothing here; ' +
    'print through the console device instead (a store to 0x10000000, as the firmware runtime\'s putchar does when built without CHIPC_CONSOLE_LINUX)';
}
