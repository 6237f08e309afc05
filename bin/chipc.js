#!/usr/bin/env node
// Thin launcher: registers tsx so the CLI (and user circuits written in TypeScript) run without a build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv);
