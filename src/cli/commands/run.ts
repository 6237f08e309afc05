/**
 * `chipc run FILE.elf [--target T] [--mem-size BYTES] [--check] [--max-tokens N]`: compile the RV32
 * chip (circuits/rv32im/cpu.ts, token protocol v4: docs/token-protocol.md) with a data RAM of the
 * given size, load the program's image into its GDN state and generate token by token in the
 * reference executor until HALT, printing the console output live; `--check` compares every
 * token with the golden emulator's trace and stops at the first divergence. `--model CKPT` runs a
 * saved chip checkpoint instead (the chip alone or merged into a host model: ids offset, loaded by
 * the loader prompt, plain greedy decoding); `--emit OUT` writes the chip compiled for the program
 * (so it can be merged) and exits. Exit status: the program's exit code, 1 on a divergence or when
 * no HALT came, 2 on an error.
 */
import fs from 'node:fs';
import type { Command } from 'commander';
import chalk from 'chalk';
import { resolveTarget } from '../../model/targets.ts';
import { ChipcError } from '../../util/errors.ts';
import { integerOption, memSizeOption } from '../options.ts';
import {
  DEFAULT_MEM_BYTES, checkChipFits, compileChip, emitChip, goldenTokens, locateDivergence, programOf, readChipCheckpoint,
  runOnChip, runOnInterpreter, runOnModel,
} from '../../chip/run.ts';
import { loadModel } from '../../model/load-weights.ts';
import { loadChipModel } from '../../chip/loaded.ts';
import type { Mismatch } from '../../verify/check.ts';
import { decodeToken, formatToken } from '../../../riscv/protocol.ts';
import { EXIT_DIFFERENT, fmtInt, makeOut } from '../output.ts';
import type { Runner } from '../main.ts';

interface RunCliOptions {
  target?: string;
  check?: boolean;
  maxTokens: string;
  profile: string;
  trace?: boolean;
  engine: string;
  memSize?: string;
  load?: string;
  model?: string;
  emit?: string;
  dtype: string;
  overwrite?: boolean;
  json?: boolean;
}

export function registerRun(program: Command, run: Runner): void {
  program
    .command('run')
    .description('run an RV32IM+Zba ELF on the compiled chip, token by token, printing its console output')
    .argument('<elf>', 'an RV32IM+Zba ELF (code and data from 0x80000000)')
    .option('--target <name|config.json>', 'target model shape (needs the protocol\'s 248,197 token ids; default chip-test)')
    .option('--mem-size <bytes>', `data RAM size from 0x80000000 (a program outside it is refused; default ${DEFAULT_MEM_BYTES}, with --model the chip's)`)
    .option('--load <how>', 'state (write the image into the GDN state directly) or prompt (feed the loader prompt of write tokens); default state, with --model prompt')
    .option('--model <ckpt>', 'run this checkpoint (directory or .chip: the chip compiled for the program, alone or merged into a host) instead of compiling')
    .option('--emit <out>', 'write the chip compiled for this program (directory, or a .chip file) with its manifest, and exit')
    .option('--dtype <d>', 'with --emit: bf16 or f32', 'bf16')
    .option('--overwrite', 'with --emit: replace an existing output')
    .option('--check', 'compare every token with the golden emulator\'s trace; stop at the first divergence')
    .option('--max-tokens <n>', 'stop after this many tokens', '100000')
    .option('--profile <p>', 'numeric profile: f32 or bf16', 'f32')
    .option('--trace', 'print every generated token')
    .option('--engine <e>', 'weights (the compiled chip in the reference executor) or ir (the chip circuit, no weights: the IR fast evaluator)', 'weights')
    .option('--json', 'print one JSON document')
    .action((file: string, o: RunCliOptions) =>
      run(() => {
        const out = makeOut(Boolean(o.json));
        if (o.profile !== 'f32' && o.profile !== 'bf16') throw new ChipcError('cli.profile', `--profile must be f32 or bf16, not "${o.profile}"`);
        const maxTokens = integerOption(o.maxTokens, '--max-tokens', 'cli.max-tokens', { min: 3 });
        if (!fs.existsSync(file)) throw new ChipcError('cli.file', `${file} does not exist`);
        const elf = fs.readFileSync(file);
        if (o.engine !== 'weights' && o.engine !== 'ir') throw new ChipcError('cli.engine', `--engine must be weights or ir, not "${o.engine}"`);
        if (o.model !== undefined && o.emit !== undefined) throw new ChipcError('cli.model', '--model and --emit exclude each other');
        if (o.model !== undefined && (o.engine !== 'weights' || o.target !== undefined)) {
          throw new ChipcError('cli.model', '--model runs the given checkpoint: --engine ir and --target do not apply');
        }
        if (o.emit !== undefined && o.engine !== 'weights') throw new ChipcError('cli.emit', '--emit writes compiled weights: --engine ir does not apply');
        if (o.dtype !== 'bf16' && o.dtype !== 'f32') throw new ChipcError('cli.dtype', `--dtype must be bf16 or f32, not "${o.dtype}"`);
        // With --model the checkpoint's manifest says what the chip was compiled for (checked against the program below).
        const ck = o.model !== undefined ? readChipCheckpoint(o.model) : null;
        const chipMem = ck?.manifest.rv32?.memWords;
        const memSize = o.memSize ?? (typeof chipMem === 'number' ? String(chipMem * 4) : String(DEFAULT_MEM_BYTES));
        const memBytes = memSizeOption(memSize);
        const loadOpt = o.load ?? (ck !== null ? 'prompt' : 'state');
        if (loadOpt !== 'state' && loadOpt !== 'prompt') throw new ChipcError('cli.load', `--load must be state or prompt, not "${loadOpt}"`);
        const load = loadOpt;
        // The data RAM's banks hold what one GDN layer of the target holds (a saved chip: as recorded).
        const prog = programOf(elf, memBytes, ck === null ? resolveTarget(o.target ?? 'chip-test').config : undefined);
        if (ck !== null) {
          const banked = ck.manifest.rv32?.memBankWords;
          if (typeof banked === 'number') prog.chip.memBankWords = banked;
          checkChipFits(ck, prog);
        }
        if (o.emit !== undefined) {
          const target = resolveTarget(o.target ?? 'chip-test');
          const t0 = performance.now();
          const res = compileChip(prog.chip, target.config);
          const compileSeconds = (performance.now() - t0) / 1000;
          emitChip(o.emit, res, prog, target.name, { dtype: o.dtype === 'bf16' ? 'BF16' : 'F32', overwrite: o.overwrite });
          out.emit({ output: o.emit, target: target.name, chip: prog.chip, layers: res.layers.length, hidden: res.weights.config.hiddenSize, compileSeconds });
          out.line(`${o.emit}: the chip for ${file} (code RAM ${prog.chip.codeWords} words, code end ${prog.chip.codeEnd}, data RAM ${prog.memBytes} bytes) ` +
            `compiled for ${target.name} in ${compileSeconds.toFixed(1)} s (${res.layers.length} layers, hidden ${res.weights.config.hiddenSize})`);
          return 0;
        }
        const trace = o.check ? goldenTokens(elf, { maxInstructions: maxTokens, mem: { size: prog.memBytes } }) : undefined;
        const golden = trace?.tokens;
        const goldenPc = trace?.tokenPc;
        // The console: OUT bytes go to stdout as they are generated (with --trace, the tokens instead).
        const consoleBytes: number[] = [];
        const onToken = (t: number) => {
          const d = decodeToken(t);
          if (d.kind === 'OUT') {
            consoleBytes.push(d.b);
            if (!o.json && !o.trace) process.stdout.write(Buffer.from([d.b]));
          }
          if (o.trace && !o.json) out.line(formatToken(t));
        };
        let r;
        let where: string;
        let compileS = 0;
        let layers: number | null = null;
        let located: Mismatch[] | null = null;
        let numLayers = 0;
        if (ck !== null && load === 'state') {
          // the RAM rows written straight into the state, at the placements the manifest records
          const t0 = performance.now();
          const chip = loadChipModel(ck.path, prog);
          compileS = (performance.now() - t0) / 1000;
          numLayers = chip.weights.config.numLayers;
          r = runOnChip(chip, prog, { profile: o.profile, maxTokens, golden, goldenPc, onToken, load });
          where = `chip checkpoint ${ck.path} loaded in ${compileS.toFixed(1)} s (${numLayers} layers)`;
        } else if (ck !== null) {
          const t0 = performance.now();
          const weights = loadModel(ck.path, { mode: 'sparse' });
          compileS = (performance.now() - t0) / 1000;
          numLayers = weights.config.numLayers;
          r = runOnModel(weights, prog, { profile: o.profile, maxTokens, golden, goldenPc, onToken, idOffset: ck.idOffset });
          where = `${ck.merged ? `merged checkpoint (chip ids from ${fmtInt(ck.idOffset)})` : 'chip checkpoint'} ${ck.path} loaded in ${compileS.toFixed(1)} s (${numLayers} layers)`;
        } else if (o.engine === 'ir') {
          r = runOnInterpreter(prog, { maxTokens, golden, goldenPc, onToken, load });
          where = 'chip circuit in the IR (fast evaluator)';
        } else {
          const target = resolveTarget(o.target ?? 'chip-test');
          const t0 = performance.now();
          const res = compileChip(prog.chip, target.config);
          compileS = (performance.now() - t0) / 1000;
          layers = res.layers.length;
          r = runOnChip(res, prog, { profile: o.profile, maxTokens, golden, goldenPc, onToken, load });
          where = `chip compiled for ${target.name} in ${compileS.toFixed(1)} s (${layers} layers)`;
          numLayers = res.weights.config.numLayers;
          if (r.divergence) {
            // Replay the run beside the chip circuit to find the first sublayer whose residual differs.
            if (!o.json) out.line(chalk.yellow(`divergence at token ${r.divergence.position}: replaying to locate it…`));
            located = locateDivergence(res, prog, r.tokens, r.divergence.position, { profile: o.profile, load });
          }
        }
        if (!o.json && !o.trace && consoleBytes.length > 0 && consoleBytes[consoleBytes.length - 1] !== 10) process.stdout.write('\n');
        const generated = r.tokens.length - r.promptLength;
        const sublayerName = (sub: number) => sub < 0 ? 'the embedding' : sub >= 2 * numLayers ? 'the LM head'
          : `layer ${Math.floor(sub / 2)} ${sub % 2 === 0 ? 'mixer' : 'FFN'}`;
        out.emit({ ...r, generated, firstDifference: located === null ? null : located.slice(0, 5).map((m) => ({ ...m, where: sublayerName(m.sublayer) })), console: Buffer.from(consoleBytes).toString('latin1'), engine: o.engine, load, tokensPerInstruction: generated / Math.max(1, r.instructions), compileSeconds: compileS, layers, model: ck === null ? null : { path: ck.path, merged: ck.merged, idOffset: ck.idOffset } });
        out.line(`${file}: ${where}; ` +
          `${fmtInt(generated)} generated tokens after a ${fmtInt(r.promptLength)}-token prompt (${load}), ${fmtInt(r.instructions)} instructions ` +
          `(${(generated / Math.max(1, r.instructions)).toFixed(2)} tokens/instruction), ${(r.tokens.length / r.seconds).toFixed(0)} tokens/s`);
        if (r.divergence) {
          out.line(chalk.red(`divergence at token ${r.divergence.position}: expected ${r.divergence.expected}, got ${r.divergence.got}` +
            (r.divergence.pc !== null ? ` (instruction at pc 0x${r.divergence.pc.toString(16)})` : '')));
          if (ck !== null) out.line('(run the program without --model to replay it beside the chip circuit and locate the first differing sublayer)');
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
        if (o.check && golden) out.line(chalk.green(`0 divergences from the golden trace (${fmtInt(r.tokens.length)} tokens)`));
        if (!r.halted) {
          out.line(chalk.yellow(`no HALT within ${maxTokens} tokens`));
          return EXIT_DIFFERENT;
        }
        out.line(`exit ${r.exitCode}`);
        return r.exitCode ?? 1;
      })(),
    );
}
