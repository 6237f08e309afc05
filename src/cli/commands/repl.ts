/**
 * `chipc repl [-e SOURCE] [--model CHIP] [--check]`: the bundled interpreter (firmware/interp,
 * docs/firmware.md "The interpreter") on the generic chip. With -e, SOURCE is one evaluation; else
 * every line typed on stdin is one (a line that leaves a `{` open continues on the next). The
 * answer is printed as the model generates it. The chip is taken from the chip cache as `chipc run`
 * takes it (compiled once per target and sizes), or from `--model CKPT` (a chip from `chipc cpu`).
 * Exit status: with -e the interpreter's exit code (0 ok, 1 an error message); from stdin 0 at the
 * end of input; 1 when the chip diverges from the golden emulator (--check) or stops without HALT;
 * 2 on an error.
 */
import readline from 'node:readline';
import type { Command } from 'commander';
import chalk from 'chalk';
import { ChipcError } from '../../util/errors.ts';
import { codeSizeOption, engineOption, integerOption, memSizeOption, profileOption } from '../support/options.ts';
import { defaultChipSizes } from '../../chip/generic.ts';
import { EVAL_MAX_TOKENS, InterpreterOnChip, openInterpreter, type Evaluation } from '../../chip/repl.ts';
import { EXIT_DIFFERENT, fmtInt, makeOut } from '../support/output.ts';
import type { Runner } from '../support/output.ts';
import { summaryOf } from '../support/command-table.ts';

interface ReplCliOptions {
  eval?: string;
  model?: string;
  target?: string;
  codeSize?: string;
  memSize?: string;
  check?: boolean;
  engine: string;
  profile: string;
  cache: boolean;
  program?: string;
  maxTokens: string;
  stats?: boolean;
  json?: boolean;
}

/** Whether `text` leaves a `{` open outside string literals (the next line continues it). */
export function opensBlock(text: string): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '#') { while (i < text.length && text[i] !== '\n') i++; }
    else if (c === '{') depth++;
    else if (c === '}') depth--;
  }
  return depth > 0;
}

export function registerRepl(program: Command, run: Runner): void {
  const sizes = defaultChipSizes();
  program
    .command('repl')
    .description(summaryOf('repl'))
    .option('-e, --eval <source>', 'evaluate this source once and exit with the interpreter\'s exit code (else: read lines from stdin)')
    .option('--model <ckpt>', 'run on this chip checkpoint (directory or .chip from chipc cpu) instead of the cached chip')
    .option('--target <name|config.json>', 'target model shape of the cached chip (default chip-test)')
    .option('--code-size <bytes>', `code RAM of the cached chip (default ${sizes.codeBytes})`)
    .option('--mem-size <bytes>', 'data RAM of the cached chip (default: as chipc run)')
    .option('--no-cache', 'compile the chip for this run instead of taking it from the chip cache')
    .option('--check', 'run every evaluation on the golden emulator too and compare every token')
    .option('--engine <e>', 'weights (the compiled chip in the reference executor) or ir (the chip circuit, no weights)', 'weights')
    .option('--profile <p>', 'numeric profile: f32 or bf16', 'f32')
    .option('--program <elf>', 'run this ELF instead of the bundled interpreter (any program that reads its console input)')
    .option('--max-tokens <n>', 'token budget of one evaluation', String(EVAL_MAX_TOKENS))
    .option('--stats', 'print tokens, instructions and seconds of each evaluation on stderr')
    .option('--json', 'print one JSON document per evaluation (JSON lines) instead of the console output')
    .action((o: ReplCliOptions) =>
      run(async () => {
        const out = makeOut(Boolean(o.json));
        const profile = profileOption(o.profile);
        const engine = engineOption(o.engine);
        const maxTokens = integerOption(o.maxTokens, '--max-tokens', 'cli.max-tokens', { min: 3 });
        if (o.model !== undefined && (o.engine !== 'weights' || o.target !== undefined || o.codeSize !== undefined || o.memSize !== undefined)) {
          throw new ChipcError('cli.model', '--model runs the given checkpoint: --engine ir, --target, --code-size and --mem-size do not apply');
        }
        const log = (line: string) => { if (!o.json) process.stderr.write(chalk.dim(`${line}\n`)); };
        const t0 = performance.now();
        const { interp, where } = await openInterpreter({
          ...(o.program !== undefined ? { elfPath: o.program } : {}),
          ...(o.model !== undefined ? { model: o.model } : {}),
          ...(o.target !== undefined ? { target: o.target } : {}),
          ...(o.codeSize !== undefined ? { codeBytes: codeSizeOption(o.codeSize) } : {}),
          ...(o.memSize !== undefined ? { memBytes: memSizeOption(o.memSize) } : {}),
          noCache: !o.cache, log, ...(o.eval !== undefined ? { source: o.eval } : {}),
          engine, profile, check: o.check === true,
        });
        if (o.stats) log(`${where} ready in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

        let diverged = false;
        const evaluate = (source: string): Evaluation => {
          let lastByte = 10;
          const e = interp.evaluate(source, {
            maxTokens,
            onByte: (b) => { lastByte = b; if (!o.json) process.stdout.write(Buffer.from([b])); },
          });
          if (!o.json && lastByte !== 10) process.stdout.write('\n');
          out.emit({
            source, console: Buffer.from(e.console).toString('utf8'), exitCode: e.exitCode, trap: e.trap, divergence: e.divergence,
            promptTokens: e.promptTokens, generatedTokens: e.generatedTokens, instructions: e.instructions, seconds: e.seconds,
          });
          if (o.stats && !o.json) {
            log(`${fmtInt(e.promptTokens)} prompt + ${fmtInt(e.generatedTokens)} generated tokens` +
              (e.instructions !== null ? `, ${fmtInt(e.instructions)} instructions` : '') +
              `, ${e.seconds.toFixed(2)} s (${fmtInt(Math.round((e.promptTokens + e.generatedTokens) / Math.max(e.seconds, 1e-9)))} tokens/s)`);
          }
          if (e.exitCode === null) {
            diverged = true;
            if (!o.json) process.stderr.write(chalk.red(`chipc repl: ${InterpreterOnChip.describeStop(e)}\n`));
          } else if (o.check && !o.json && o.stats) {
            log('0 divergences from the golden emulator');
          }
          return e;
        };

        if (o.eval !== undefined) {
          const e = evaluate(o.eval);
          return diverged ? EXIT_DIFFERENT : e.exitCode!;
        }
        const tty = process.stdin.isTTY === true && !o.json;
        const rl = readline.createInterface({ input: process.stdin, output: tty ? process.stdout : undefined, terminal: tty });
        if (tty) {
          process.stdout.write(chalk.dim(`chipc repl: the interpreter on ${where}; one evaluation per line, Ctrl-D to end\n`));
          rl.setPrompt('> ');
          rl.prompt();
        }
        let pending = '';
        for await (const line of rl) {
          pending = pending === '' ? line : `${pending}\n${line}`;
          if (opensBlock(pending)) {
            if (tty) { rl.setPrompt('. '); rl.prompt(); }
            continue;
          }
          if (pending.trim() !== '') evaluate(pending);
          pending = '';
          if (diverged) break;
          if (tty) { rl.setPrompt('> '); rl.prompt(); }
        }
        rl.close();
        if (!diverged && pending.trim() !== '') evaluate(pending);
        return diverged ? EXIT_DIFFERENT : 0;
      })(),
    );
}
