/**
 * Outputs named on the command line, checked before they are written: never one of the inputs,
 * never replaced without --overwrite, the debris of a killed earlier write removed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ChipcError } from '../../util/errors.ts';
import { removeStaleTemps } from '../../util/temp-files.ts';

/** What prepareOutput checks an output against. */
export interface OutputCheck {
  /** The option that names the output, for messages (`-o`, `--write-golden`, …). */
  option: string;
  /** Paths the command reads (files or directories); undefined entries are skipped. */
  inputs: readonly (string | undefined)[];
  /** Whether an existing output may be replaced (`--overwrite`). */
  overwrite: boolean;
}

/** The real path of p, or of its nearest existing ancestor joined with the rest. */
function realish(p: string): string {
  const abs = path.resolve(p);
  try {
    return fs.realpathSync(abs);
  } catch {
    const parent = path.dirname(abs);
    return parent === abs ? abs : path.join(realish(parent), path.basename(abs));
  }
}

function within(inner: string, outer: string): boolean {
  return inner.startsWith(outer.endsWith(path.sep) ? outer : outer + path.sep);
}

function sameFile(a: string, b: string): boolean {
  try {
    const sa = fs.statSync(a);
    const sb = fs.statSync(b);
    return sa.dev === sb.dev && sa.ino === sb.ino;
  } catch {
    return false;
  }
}

function emptyDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory() && fs.readdirSync(p).length === 0;
  } catch {
    return false;
  }
}

/**
 * Before a command writes `out`: refuses an output that is one of its inputs (the same path, a
 * link to it, or the same file under another name), lies inside an input directory, or contains
 * an input (`cli.output-is-input`), and an existing output without `--overwrite` (`cli.exists`; an
 * empty directory is not in the way), and an output below a file (`cli.output-dir`: the write
 * creates the missing directories above the output, makeParentDir);
 * then removes the temporaries a killed earlier write of `out` left behind (removeStaleTemps) and
 * returns their paths.
 */
export function prepareOutput(out: string, check: OutputCheck): string[] {
  const o = realish(out);
  for (const input of check.inputs) {
    if (input === undefined) continue;
    const i = realish(input);
    const what = o === i || sameFile(o, i) ? 'is' : within(o, i) ? 'lies inside' : within(i, o) ? 'contains' : null;
    if (what !== null) {
      throw new ChipcError('cli.output-is-input', `${check.option} ${out} ${what} the input ${input}: writing it would destroy what the command reads; choose another output path`);
    }
  }
  if (fs.existsSync(out) && !check.overwrite && !emptyDirectory(out)) {
    throw new ChipcError('cli.exists', `${out} exists (pass --overwrite to replace it)`);
  }
  // The write creates the directories above `out` that are missing; one that exists as a file stops it.
  let dir = path.dirname(path.resolve(out));
  while (!fs.existsSync(dir) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  if (fs.existsSync(dir) && !fs.statSync(dir).isDirectory()) {
    throw new ChipcError('cli.output-dir', `${check.option} ${out}: ${dir} is a file, not a directory`);
  }
  return removeStaleTemps(out);
}
