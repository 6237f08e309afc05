#!/usr/bin/env node
// Thin launcher: registers tsx so the CLI (and user circuits written in TypeScript) run without a build step.
import { register } from 'tsx/esm/api';

register();
const { launch } = await import('../src/cli/launch.ts');
await launch(process.argv);
