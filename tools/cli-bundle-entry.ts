/**
 * Entry of the single-file CLI bundle (tools/bundle-cli.mjs): the CLI of bin/chipc.js. bin/chipc.js
 * imports it in a checkout while it is fresh and calls `launch`; run as the main script (`node
 * build/cli/chipc.mjs`, docs/hf-check.md "Without npm": a machine with node but no node_modules)
 * it runs the CLI itself. Circuit files given on the command line load through tsx, from
 * node_modules.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { launch } from '../src/cli/launch.ts';

export { launch };

/** Whether this file is the script node was started with (not imported by bin/chipc.js). */
function isMain(): boolean {
  const main = process.argv[1];
  if (main === undefined) return false;
  try {
    return fs.realpathSync(main) === fs.realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isMain()) await launch(process.argv);
