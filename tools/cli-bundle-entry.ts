/**
 * Entry of the single-file CLI bundle (tools/bundle-cli.sh; docs/hf-check.md "Without npm"): the
 * CLI of bin/chipc.js without tsx, for a machine that has node but no node_modules. Circuits given
 * as TypeScript files on the command line need bin/chipc.js; the built-in ones (`run`, `trace`,
 * `emu`, …) are in the bundle.
 */
import { main } from '../src/cli/main.ts';

// A closed pipe (`chipc … | head`) is a normal way for a reader to stop: exit quietly.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
});
process.exitCode = await main(process.argv);
