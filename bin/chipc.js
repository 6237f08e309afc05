#!/usr/bin/env node
// Launcher. Installed as a package (under node_modules, with dist/ built by `npm pack`), it runs
// the compiled CLI and registers tsx only when a circuit file is loaded. In a checkout it runs the
// CLI bundle when that was built from these very sources (tools/bundle-cli.mjs, `npm run bundle`;
// `npm ci` builds it: bin/fresh-bundle.js checks every file it was built from), else the
// TypeScript sources through tsx, so an edit takes effect without a build. CHIPC_NO_BUNDLE=1 runs
// the sources in any case.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dist = new URL('../dist/src/cli/launch.js', import.meta.url);
const installed = fileURLToPath(import.meta.url).split(/[\\/]/).includes('node_modules');
let launch;
if (installed && existsSync(dist)) {
  ({ launch } = await import(dist.href));
} else {
  const { freshBundle } = await import('./fresh-bundle.js');
  const bundle = process.env.CHIPC_NO_BUNDLE ? null : freshBundle(fileURLToPath(new URL('..', import.meta.url)));
  if (bundle !== null) {
    ({ launch } = await import(bundle));
  } else {
    const { register } = await import('tsx/esm/api');
    register();
    globalThis.__chipcTsxRegistered = true;
    ({ launch } = await import('../src/cli/launch.ts'));
  }
}
await launch(process.argv);
