/**
 * Temporary siblings of outputs, and their clean-up. Every chipc write goes to a temporary name in
 * the output's directory (same file system, so the final rename is atomic), named
 * `.NAME.KIND.PID.RANDOM.tmp`: a write killed before its rename leaves one behind, and the next
 * write of the same output removes it once the process that made it is gone.
 */
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * Creates the directories above `target` that do not exist yet, as every chipc output does at its
 * write (the checkpoint writers too), so that `-o new/dir/out` works the same for every command.
 */
export function makeParentDir(target: string): void {
  fs.mkdirSync(path.dirname(path.resolve(target)), { recursive: true });
}

/**
 * Removes the temporary of a failed write (a file or a directory). A path that cannot be reached
 * (its directory missing, or a file) holds nothing to remove, so the write's own error is the one
 * that reaches the caller.
 */
export function removeTemp(p: string): void {
  try {
    fs.rmSync(p, { recursive: true, force: true });
  } catch { /* nothing there to remove */ }
}

/** A fresh temporary sibling of `target` for a write of `kind` (a short word: tmp, payload, dir, …). */
export function tempSibling(target: string, kind = 'tmp'): string {
  return path.join(path.dirname(target), `.${path.basename(target)}.${kind}.${process.pid}.${crypto.randomBytes(6).toString('hex')}.tmp`);
}

const TEMP = /^\.(.+)\.([a-z][a-z0-9-]*)\.(\d+)\.[0-9a-f]{12}\.tmp$/;

/** Whether process `pid` is running (a process of another user counts as running). */
function alive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the temporaries of `target` (tempSibling names, files or directories) whose process is
 * no longer running; returns the paths removed. A directory that cannot be listed yields nothing.
 */
export function removeStaleTemps(target: string): string[] {
  const dir = path.dirname(path.resolve(target));
  const base = path.basename(target);
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const m = TEMP.exec(name);
    // ('old': an output moved aside while its replacement is renamed in; left for the user)
    if (m === null || m[1] !== base || m[2] === 'old' || alive(Number(m[3]))) continue;
    const p = path.join(dir, name);
    try {
      fs.rmSync(p, { recursive: true, force: true });
      removed.push(p);
    } catch { /* another process removed it, or it cannot be: leave it */ }
  }
  return removed;
}
