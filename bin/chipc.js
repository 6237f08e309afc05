#!/usr/bin/env node
// Launcher. Installed as a package (under node_modules, with dist/ built by `npm pack`), it runs
// the compiled CLI and registers tsx only when a circuit file is loaded; in a checkout it runs
// the TypeScript sources through tsx, so an edit takes effect without a build.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dist = new URL('../dist/src/cli/launch.js', import.meta.url);
const installed = fileURLToPath(import.meta.url).split(/[\\/]/).includes('node_modules');
let launch;
if (installed && existsSync(dist)) {
  ({ launch } = await import(dist.href));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  globalThis.__chipcTsxRegistered = true;
  ({ launch } = await import('../src/cli/launch.ts'));
}
await launch(process.argv);
