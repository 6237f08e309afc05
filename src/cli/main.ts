/**
 * The `chipc` command line: a thin commander front end over the library modules. Each command
 * lives in src/cli/commands/ and returns its exit status; errors are mapped here
 * (ChipcError → 2 with its code and message, anything else → 3 with a stack trace).
 */
import { Command, CommanderError } from 'commander';
import chalk from 'chalk';
import { ChipcError } from '../util/errors.ts';
import { EXIT_BUG, EXIT_ERROR } from './output.ts';
import { registerInspect } from './commands/inspect.ts';
import { registerDiff } from './commands/diff.ts';
import { registerTargets } from './commands/targets.ts';
import { registerExec } from './commands/exec.ts';
import { registerEmu } from './commands/emu.ts';
import { registerBuild } from './commands/build.ts';
import { registerCompile } from './commands/compile.ts';
import { registerCheck } from './commands/check.ts';
import { registerRun } from './commands/run.ts';
import { registerChipfile } from './commands/chipfile.ts';
import { registerMerge } from './commands/merge.ts';
import { registerTrace } from './commands/trace.ts';
import { registerStore } from './commands/store.ts';
import { registerCache } from './commands/cache.ts';
import { registerCpu } from './commands/cpu.ts';

export type CommandResult = Promise<number> | number;

/** Lets each command report its exit status back through commander's action handlers. */
export interface ExitSink {
  code: number;
}

export function buildProgram(sink: ExitSink): Command {
  const program = new Command();
  program
    .name('chipc')
    .description('Compile circuits into the weights of Qwen3.5 / Qwen3-Next hybrid transformers, exactly.')
    .version('0.1.0')
    .showHelpAfterError()
    .exitOverride();
  const run = (fn: () => CommandResult) => async () => {
    sink.code = await fn();
  };
  registerInspect(program, run);
  registerDiff(program, run);
  registerTargets(program, run);
  registerExec(program, run);
  registerEmu(program, run);
  registerBuild(program, run);
  registerCompile(program, run);
  registerCheck(program, run);
  registerCpu(program, run);
  registerRun(program, run);
  registerChipfile(program, run);
  registerMerge(program, run);
  registerTrace(program, run);
  registerStore(program, run);
  registerCache(program, run);
  return program;
}

export type Runner = (fn: () => CommandResult) => () => Promise<void>;

/** Wants `--json` error output when the user asked for JSON. */
function wantsJson(argv: string[]): boolean {
  return argv.includes('--json');
}

export async function main(argv: string[]): Promise<number> {
  const sink: ExitSink = { code: 0 };
  const program = buildProgram(sink);
  try {
    await program.parseAsync(argv);
    return sink.code;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and version exit 0; usage errors (unknown option, missing argument) exit 2.
      return err.exitCode === 0 ? 0 : EXIT_ERROR;
    }
    if (err instanceof ChipcError) {
      if (wantsJson(argv)) {
        process.stdout.write(JSON.stringify({ error: { code: err.code, message: err.message } }, null, 2) + '\n');
      }
      process.stderr.write(`${chalk.red('chipc: error')} [${err.code}]: ${err.message}\n`);
      return EXIT_ERROR;
    }
    process.stderr.write(`${chalk.red('chipc: internal error')} (a bug; please report it):\n`);
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    return EXIT_BUG;
  }
}
