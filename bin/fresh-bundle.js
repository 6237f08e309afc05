// Whether the CLI bundle (build/cli/chipc.mjs, made by tools/bundle-cli.mjs) is these sources:
// its record lists every file it was built from with the size and mtime each had, and the
// bundle's own; any difference — an edit, a checkout, a missing file, a bundle rebuilt without
// its record — means it is not, and the launcher runs the sources through tsx.
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * The bundle's file URL when every file of the record `dir`/chipc.inputs.json (relative to
 * `root`) is as recorded, else null.
 */
export function freshBundle(root, dir = 'build/cli') {
  let record;
  try {
    record = JSON.parse(readFileSync(join(root, dir, 'chipc.inputs.json'), 'utf8'));
  } catch {
    return null;
  }
  if (record === null || typeof record !== 'object' || record.version !== 1 || !Array.isArray(record.inputs) || !Array.isArray(record.bundle)) return null;
  const same = (entry) => {
    if (!Array.isArray(entry) || typeof entry[0] !== 'string') return false;
    const s = statSync(join(root, entry[0]), { throwIfNoEntry: false });
    return s !== undefined && s.isFile() && s.size === entry[1] && s.mtimeMs === entry[2];
  };
  if (record.inputs.length === 0 || !same(record.bundle) || !record.inputs.every(same)) return null;
  return pathToFileURL(join(root, record.bundle[0])).href;
}
