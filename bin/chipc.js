#!/usr/bin/env node
// Thin launcher: registers tsx so the CLI (and user circuits written in TypeScript) run without a build step.
import { register } from 'tsx/esm/api';

// A closed pipe (`chipc … | head`) is a normal way for a reader to stop: exit quietly.
process.stdout.on('error', (err) => {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
});

register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv);
