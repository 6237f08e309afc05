/**
 * Size rules of the codebase (issue 30): no source file of src/, circuits/ or riscv/ longer than
 * 800 lines, and the compiler driver (src/compile.ts) at most 120 lines — a driver that calls
 * named passes, read in one screen. A file over its limit fails with its name and length: split
 * it by what it does (one stage or pass per file, docs/passes.md).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SOURCE_LIMIT = 800;
const DRIVER_LIMIT = 120;

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.posix.join(dir, e.name);
    if (e.isDirectory()) out.push(...sourceFiles(rel));
    else if (/\.(ts|mts)$/.test(e.name)) out.push(rel);
  }
  return out;
}

/** A file's number of lines (a last line without a newline counts). */
function lineCount(rel: string): number {
  const text = fs.readFileSync(path.join(ROOT, rel), 'utf8');
  return text.length === 0 ? 0 : text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

describe('code size', () => {
  const files = ['src', 'circuits', 'riscv'].flatMap(sourceFiles);

  it('sees the sources', () => {
    expect(files).toContain('src/compile.ts');
    expect(files).toContain('src/dsl/builder.ts');
    expect(files.length).toBeGreaterThan(100);
  });

  it(`no source file is over ${SOURCE_LIMIT} lines`, () => {
    const over = files.map((f) => ({ f, n: lineCount(f) })).filter(({ n }) => n > SOURCE_LIMIT).map(({ f, n }) => `${f}: ${n} lines`);
    expect(over).toEqual([]);
  });

  it(`the driver src/compile.ts is at most ${DRIVER_LIMIT} lines`, () => {
    expect(lineCount('src/compile.ts')).toBeLessThanOrEqual(DRIVER_LIMIT);
  });

  it('counts lines as wc -l does, plus a last line without a newline', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-code-size-'));
    try {
      const rel = (name: string) => path.relative(ROOT, path.join(dir, name));
      fs.writeFileSync(path.join(dir, 'a.ts'), 'x\ny\n');
      fs.writeFileSync(path.join(dir, 'b.ts'), 'x\ny');
      fs.writeFileSync(path.join(dir, 'c.ts'), '');
      expect([lineCount(rel('a.ts')), lineCount(rel('b.ts')), lineCount(rel('c.ts'))]).toEqual([2, 2, 0]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
