/**
 * The chipc package's root folder (package.json, targets/, fixtures/, src/): found by walking up
 * from this module, so that the same code finds it whether it runs from the TypeScript sources
 * (src/util/) or from the compiled package entry points (dist/src/util/).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (let dir = here; ; dir = path.dirname(dir)) {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: unknown };
      if (pkg.name === 'chipc') return dir;
    } catch { /* no package.json here: go up */ }
    if (path.dirname(dir) === dir) return path.resolve(here, '..', '..');
  }
}

/** Absolute path of the package root (with a trailing separator). */
export const PACKAGE_ROOT = findRoot() + path.sep;
