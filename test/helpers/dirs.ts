/** Comparing flat directories byte for byte (checkpoint round trips). */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';

/** Every file of a flat directory: name → bytes. */
export function readDir(dir: string): Map<string, Buffer> {
  return new Map(fs.readdirSync(dir).sort().map((n) => [n, fs.readFileSync(path.join(dir, n))]));
}

/** The two directories hold the same file names with the same bytes. */
export function expectSameDir(a: string, b: string): void {
  const fa = readDir(a);
  const fb = readDir(b);
  expect([...fb.keys()]).toEqual([...fa.keys()]);
  for (const [n, bytes] of fa) {
    expect(fb.get(n)!.length, n).toBe(bytes.length);
    expect(fb.get(n)!.equals(bytes), `${n} differs`).toBe(true);
  }
}
