/**
 * Source locations for circuit errors: every builder call records where in the circuit file it
 * was made, from the V8 stack trace (tsx maps it back to the TypeScript source). Frames inside
 * chipc's own code (this module's `src/`, and the package's `src/` when this runs from the CLI
 * bundle or `dist/`) are skipped so the location is the user's line.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SourceLoc } from '../ir/types.ts';
import { PACKAGE_ROOT } from '../util/package-root.ts';

const SRC_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// The package's src/ as well: run from the CLI bundle or dist/, this module is not under it, while
// a circuit that imports the DSL by relative path runs the DSL's sources from there.
const PACKAGE_SRC = path.join(PACKAGE_ROOT, 'src');
const FRAME = /\(?((?:file:\/\/)?[^()\s]+?):(\d+):(\d+)\)?$/;

/**
 * The calling line outside chipc's `src/`. Lazy: the stack is captured now (cheap) but formatted
 * and mapped back to the TypeScript source only when a field is first read — a circuit records a
 * location for every builder call (≈ 100,000 on the RV32 chip) and reads a few, for its errors.
 * The fields are own enumerable accessors, so JSON and msgpack see a plain { file, line, col }.
 */
export function callerLoc(): SourceLoc {
  const holder: { stack?: string } = {};
  Error.captureStackTrace(holder, callerLoc);
  let loc: SourceLoc | undefined;
  const get = (): SourceLoc => (loc ??= stackLoc(holder.stack ?? '') ?? { file: '<unknown>', line: 0, col: 0 });
  return Object.defineProperties({} as SourceLoc, {
    file: { get: () => get().file, enumerable: true },
    line: { get: () => get().line, enumerable: true },
    col: { get: () => get().col, enumerable: true },
  });
}

/**
 * The first frame of a V8 stack trace outside chipc's own `src/`, node's internals and
 * node_modules — the user's line — or null when there is none. (A first line without a
 * location, the error's message, is skipped.)
 */
export function stackLoc(stack: string): SourceLoc | null {
  for (const raw of stack.split('\n')) {
    const m = FRAME.exec(raw.trim());
    if (!m) continue;
    let file = m[1]!;
    if (file.startsWith('file://')) file = fileURLToPath(file);
    if (file.startsWith('node:') || file.includes('node_modules')) continue;
    const abs = path.resolve(file);
    if (abs.startsWith(SRC_ROOT + path.sep) || abs.startsWith(PACKAGE_SRC + path.sep)) continue;
    return { file: path.relative(process.cwd(), abs) || abs, line: Number(m[2]), col: Number(m[3]) };
  }
  return null;
}
