/**
 * Every command's name, arguments and one-line summary, in help order: what `chipc --help` lists
 * without importing the command modules (each imports the parts of the library it runs — the
 * compiler, the executor, the store — which cost more than the listing). Each module describes
 * its command with summaryOf(name); test/cli.test.ts checks that the listing equals the one the
 * loaded modules give.
 */
export interface CommandSummary {
  readonly name: string;
  /** Argument terms as commander prints them: `<required>`, `[optional]`. */
  readonly args: readonly string[];
  readonly summary: string;
  /** A command with subcommands (and no options of its own). */
  readonly group?: true;
}

export const COMMAND_TABLE: readonly CommandSummary[] = [
  { name: 'inspect', args: ['<path>'], summary: 'list the tensors of a checkpoint or .chip, or (--slots) a compiled circuit\'s residual allocation' },
  { name: 'diff', args: ['<a>', '[b]'], summary: 'compare two checkpoints tensor by tensor, bit for bit, or one against golden hashes (exit 0 identical, 1 different, 2 error)' },
  { name: 'targets', args: ['[target]'], summary: 'list the built-in targets, or describe one (a name or a config.json of either family); with --fit CIRCUIT, whether the circuit fits each target and what it costs' },
  { name: 'exec', args: ['<path>'], summary: 'run a checkpoint in the reference executor on token ids' },
  { name: 'emu', args: ['<file>'], summary: 'run an RV32IM+Zba ELF on the golden emulator (exit status = the program\'s exit code)' },
  { name: 'build', args: ['<circuit>'], summary: 'build and validate a circuit file; write its IR (msgpack)' },
  { name: 'compile', args: ['<circuit>'], summary: 'compile a circuit into a checkpoint for a target model shape' },
  { name: 'check', args: ['<circuit>'], summary: 'compile a circuit and compare the IR interpreter with the compiled weights, bit for bit' },
  { name: 'cpu', args: [], summary: 'compile the generic RV32IM+Zba chip (any program that fits its RAMs) and write it as a checkpoint or .chip file' },
  { name: 'run', args: ['<elf>'], summary: 'run an RV32IM+Zba ELF on the generic compiled chip, token by token, printing its console output' },
  { name: 'repl', args: [], summary: 'the bundled interpreter on the generic chip: evaluate -e SOURCE or lines from stdin, printing answers as the model generates them' },
  { name: 'compact', args: ['<dir>'], summary: 'write the compact sparse .chip form of a checkpoint directory (only non-zero blocks + manifest)' },
  { name: 'expand', args: ['<file>'], summary: 'regenerate the dense checkpoint directory of a .chip file, byte for byte' },
  { name: 'merge', args: [], summary: 'merge a compiled chip into a host checkpoint of the same family (chip layers first, vocabulary extended)' },
  { name: 'trace', args: ['<elf>'], summary: 'write a program\'s loader prompt and golden token trace as JSON (for tools/hf_check.py)' },
  { name: 'store', args: [], group: true, summary: 'the hashed filesystem store on a store file, through the compiled weights (docs/store.md)' },
  { name: 'cache', args: [], group: true, summary: 'the cache of compiled chips (chipc run compiles a chip once per target, code size, data size and dtype)' },
];

/** The summary of command `name` (a name not in the table is a bug of ours). */
export function summaryOf(name: string): string {
  const c = COMMAND_TABLE.find((x) => x.name === name);
  if (c === undefined) throw new Error(`internal: no command ${name} in the command table`);
  return c.summary;
}
