/**
 * The `chipc` command line: a thin commander front end over the library modules. Each command
 * lives in src/cli/commands/ and returns its exit status; errors are mapped here
 * (ChipcError → 2 with its code and message, anything else → 3 with a stack trace).
 */
import { Command, CommanderError } from 'commander';
import chalk from 'chalk';
import { ChipcError } from '../util/errors.ts';
import { EXIT_BUG, EXIT_ERROR, type CommandResult, type Runner } from './support/output.ts';
export type { CommandResult, Runner };
import { COMMAND_TABLE } from './support/command-table.ts';

/** Lets each command report its exit status back through commander's action handlers. */
export interface ExitSink {
  code: number;
}

type Registrar = (program: Command, run: Runner) => void;

/**
 * Each command's module and the command names it registers, in help order. A module is imported
 * only when its command runs (or for the full help listing): importing all of them — the
 * compiler, the executor, the store — cost ≈ 1 s of CPU before `chipc --version` could answer.
 */
const COMMANDS: readonly (readonly [readonly string[], () => Promise<Registrar>])[] = [
  [['inspect'], async () => (await import('./commands/inspect.ts')).registerInspect],
  [['diff'], async () => (await import('./commands/diff.ts')).registerDiff],
  [['targets'], async () => (await import('./commands/targets.ts')).registerTargets],
  [['exec'], async () => (await import('./commands/exec.ts')).registerExec],
  [['emu'], async () => (await import('./commands/emu.ts')).registerEmu],
  [['build'], async () => (await import('./commands/build.ts')).registerBuild],
  [['compile'], async () => (await import('./commands/compile.ts')).registerCompile],
  [['check'], async () => (await import('./commands/check.ts')).registerCheck],
  [['cpu'], async () => (await import('./commands/cpu.ts')).registerCpu],
  [['run'], async () => (await import('./commands/run.ts')).registerRun],
  [['repl'], async () => (await import('./commands/repl.ts')).registerRepl],
  [['compact', 'expand'], async () => (await import('./commands/chipfile.ts')).registerChipfile],
  [['merge'], async () => (await import('./commands/merge.ts')).registerMerge],
  [['trace'], async () => (await import('./commands/trace.ts')).registerTrace],
  [['store'], async () => (await import('./commands/store.ts')).registerStore],
  [['cache'], async () => (await import('./commands/cache.ts')).registerCache],
];

/**
 * The program with the commands `argv` needs: the named command's module alone; none for a bare
 * `--version`; for the bare listing (`chipc`, `chipc --help`) the commands of COMMAND_TABLE with
 * their summaries only; every module otherwise (`chipc help CMD`, an unknown command: commander
 * describes it or suggests one).
 */
export async function buildProgram(sink: ExitSink, argv: readonly string[] = []): Promise<Command> {
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
  const args = argv.slice(2);
  const named = args[0] !== undefined && !args[0].startsWith('-') ? COMMANDS.find(([names]) => names.includes(args[0]!)) : undefined;
  if (named !== undefined) {
    (await named[1]())(program, run);
    return program;
  }
  const listing = args.length === 0 || (args.length === 1 && (args[0] === '--help' || args[0] === '-h'));
  const versionOnly = args.length === 1 && (args[0] === '--version' || args[0] === '-V');
  if (listing) {
    // the list of commands, from the table: no command module is imported to print it
    for (const c of COMMAND_TABLE) {
      const cmd = program.command(c.name).description(c.summary).allowUnknownOption().allowExcessArguments();
      if (c.group !== true) cmd.option('-h, --help', 'display help for command');
      for (const a of c.args) cmd.argument(a);
    }
  } else if (!versionOnly) {
    for (const [, load] of COMMANDS) (await load())(program, run);
  }
  return program;
}


/** Wants `--json` error output when the user asked for JSON. */
function wantsJson(argv: string[]): boolean {
  return argv.includes('--json');
}

export async function main(argv: string[]): Promise<number> {
  const sink: ExitSink = { code: 0 };
  const program = await buildProgram(sink, argv);
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
