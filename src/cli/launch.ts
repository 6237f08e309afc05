/**
 * Runs the CLI as a process: what bin/chipc.js (after registering tsx) and the single-file bundle
 * (tools/cli-bundle-entry.ts) both do.
 */
import { main } from './main.ts';

export async function launch(argv: string[]): Promise<void> {
  // A closed pipe (`chipc … | head`) is a normal way for a reader to stop: exit quietly.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
  process.exitCode = await main(argv);
}
