#!/usr/bin/env node
/**
 * Bundles the chipc CLI into one file, build/cli/chipc.mjs, and records what it was built from
 * (build/cli/chipc.inputs.json: every file esbuild read and the package manifests, each with its
 * size and mtime, and the bundle's own). Two uses:
 *
 * - In a checkout, bin/chipc.js runs the bundle instead of the sources through tsx while the record
 *   holds (bin/fresh-bundle.js): every input as recorded, so the bundle is these sources. It starts
 *   ≈ 0.45 s sooner (docs/benchmarks.md, "Package and command-line start-up"). `npm ci` and `npm
 *   install` build it (the `prepare` script); after an edit the CLI runs the sources through tsx
 *   until `npm run bundle` builds it again.
 * - A machine with node but no node_modules runs it as `node build/cli/chipc.mjs`
 *   (docs/hf-check.md, "Without npm").
 *
 * tsx stays outside the bundle: a circuit file given on the command line is loaded through the
 * checkout's tsx (src/dsl/load.ts imports it then). The bundle must stay two directories below the
 * repository root: it finds targets/ and fixtures/ relative to itself. esbuild comes with tsx.
 *
 *   node tools/bundle-cli.mjs [--if-possible] [--out build/DIR]
 *
 * `--if-possible` (the prepare script): a failure prints one line and exits 0, and the CLI runs
 * through tsx. `--out`: another directory two levels below the root (tests; bin/chipc.js reads
 * build/cli only). Both files are written under temporary names and renamed, the record last.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ifPossible = process.argv.includes('--if-possible');
const outArg = process.argv.indexOf('--out');
const outRel = outArg >= 0 ? process.argv[outArg + 1] ?? '' : path.join('build', 'cli');
if (outRel.split(/[\\/]/).filter((p) => p !== '' && p !== '.').length !== 2 || path.isAbsolute(outRel) || outRel.includes('..')) {
  console.error(`bundle-cli: --out must be a directory two levels below the repository root (the bundle finds targets/ and fixtures/ relative to itself), got ${JSON.stringify(outRel)}`);
  process.exit(2);
}
const outDir = path.join(root, outRel);
const bundleRel = path.join(outRel, 'chipc.mjs').split(path.sep).join('/');
const bundlePath = path.join(outDir, 'chipc.mjs');
const recordPath = path.join(outDir, 'chipc.inputs.json');

async function bundle() {
  const esbuild = await import('esbuild');
  fs.mkdirSync(outDir, { recursive: true });
  const tmp = `${bundlePath}.tmp-${process.pid}`;
  // inputs changed after this instant may not be what esbuild read: then no record is written
  const started = Date.now();
  try {
    const result = await esbuild.build({
      entryPoints: [path.join(root, 'tools', 'cli-bundle-entry.ts')],
      absWorkingDir: root,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      external: ['tsx'],
      outfile: tmp,
      metafile: true,
      logLevel: 'warning',
      banner: { js: "import { createRequire as __chipcCreateRequire } from 'module'; const require = __chipcCreateRequire(import.meta.url);" },
    });
    // (with the manifests: a dependency installed anew keeps npm's fixed mtimes on its files)
    const read = new Set([...Object.keys(result.metafile.inputs), ...['package.json', 'package-lock.json'].filter((p) => fs.existsSync(path.join(root, p)))]);
    const inputs = [...read].sort().map((p) => {
      const s = fs.statSync(path.join(root, p));
      return [p, s.size, s.mtimeMs];
    });
    const raced = inputs.filter(([, , mtimeMs]) => mtimeMs >= started - 1);
    fs.renameSync(tmp, bundlePath);
    if (raced.length > 0) {
      fs.rmSync(recordPath, { force: true });
      console.log(`${bundleRel}: written, but ${raced[0][0]} changed while it was built: no record (bin/chipc.js keeps running the sources; run this again)`);
      return;
    }
    const b = fs.statSync(bundlePath);
    const record = { version: 1, bundle: [bundleRel, b.size, b.mtimeMs], inputs };
    const tmpRecord = `${recordPath}.tmp-${process.pid}`;
    fs.writeFileSync(tmpRecord, JSON.stringify(record) + '\n');
    fs.renameSync(tmpRecord, recordPath);
    console.log(`${bundleRel}: ${b.size.toLocaleString('en-US')} bytes from ${inputs.length} files; it runs alone as: node ${bundleRel} --help${outArg < 0 ? ', and bin/chipc.js runs it while those files are unchanged' : ''}`);
  } finally {
    fs.rmSync(tmp, { force: true });
  }
}

try {
  await bundle();
} catch (e) {
  if (!ifPossible) throw e;
  console.log(`chipc: the CLI bundle was not built (${e instanceof Error ? e.message.split('\n')[0] : String(e)}); bin/chipc.js runs the sources through tsx`);
}
