/**
 * Entry of the single-file CLI bundle (tools/bundle-cli.sh; docs/hf-check.md "Without npm"): the
 * CLI of bin/chipc.js without tsx, for a machine that has node but no node_modules. Circuits given
 * as TypeScript files on the command line need bin/chipc.js; the built-in ones (`run`, `trace`,
 * `emu`, …) are in the bundle.
 */
import { launch } from '../src/cli/launch.ts';

await launch(process.argv);
