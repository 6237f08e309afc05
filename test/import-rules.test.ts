/**
 * Import rules (issue 30; the graph: tools/import-graph.ts, whose header says what counts as an
 * edge — `import type` and literal `import()` included):
 *  - no import cycle among src/, circuits/ and riscv/ at the file, folder (src/passes/assemble)
 *    or area (src/passes) level;
 *  - src/ imports nothing from circuits/ (the library must not depend on the circuits it compiles).
 * KNOWN lists the violations that remain, as exact edges, each to be cut by whoever owns it. An
 * edge listed there is left out before looking for cycles; a listed edge that no longer exists or
 * no longer closes a cycle fails the test too, so the list can only shrink: delete the line.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  buildImportGraph, cyclesAt, edgeKey, scanImports, srcImportsOfCircuits, UNIT, type Cycle, type ImportGraph, type Level,
} from '../tools/import-graph.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIRS = ['src', 'circuits', 'riscv'];

/** The remaining violations, as exact edges per level (none). */
const KNOWN: Record<Level, string[]> = { file: [], folder: [], area: [] };

/**
 * The imports of circuits/ from src/ that remain (none). The RV32 CPU circuit the chip runner
 * compiles (chipIr) is library code in src/cpu/; the chip's shape, banks, configuration words and
 * token ids are riscv/chip-shape.ts and riscv/protocol.ts. circuits/ may import src/, not the reverse.
 */
const KNOWN_SRC_TO_CIRCUITS: string[] = [];

const LEVELS: Level[] = ['file', 'folder', 'area'];

function show(cycles: Cycle[]): string[] {
  return cycles.map((c) => `${c.nodes.join(' ↔ ')}: ${c.unitEdges.join('; ')}`);
}

/** The listed edges that no longer occur at `level` or no longer lie on a cycle there. */
function stale(graph: ImportGraph, level: Level, listed: readonly string[]): string[] {
  const unit = UNIT[level];
  const present = new Set(graph.edges.map((e) => edgeKey(unit(e.from), unit(e.to))));
  const comp = new Map<string, number>();
  cyclesAt(graph, level).forEach((c, i) => c.nodes.forEach((n) => comp.set(n, i)));
  return listed.filter((k) => {
    const [a, b] = k.split(' -> ') as [string, string];
    return !present.has(k) || comp.get(a) === undefined || comp.get(a) !== comp.get(b);
  });
}

describe('import rules: src/, circuits/, riscv/', () => {
  const graph = buildImportGraph(ROOT, DIRS);

  it('sees the sources', () => {
    expect(graph.files.length).toBeGreaterThan(100);
    expect(graph.files).toContain('src/compile.ts');
    expect(graph.edges.length).toBeGreaterThan(500);
  });

  for (const level of LEVELS) {
    it(`has no ${level}-level cycle but the known ones`, () => {
      // (joined, so that a failure prints every cycle; `npx tsx tools/import-graph.ts` adds their imports' lines)
      expect(show(cyclesAt(graph, level, new Set(KNOWN[level]))).join('\n')).toBe('');
    });

    it(`lists only ${level}-level exceptions that still close a cycle (delete the others)`, () => {
      expect(stale(graph, level, KNOWN[level]).join('\n')).toBe('');
    });
  }

  it('has src/ import nothing from circuits/ but the known imports', () => {
    const known = new Set(KNOWN_SRC_TO_CIRCUITS);
    const found = srcImportsOfCircuits(graph).map((e) => edgeKey(e.from, e.to));
    expect(found.filter((k) => !known.has(k)).join('\n')).toBe('');
    // a known import that is gone must leave the list
    expect(KNOWN_SRC_TO_CIRCUITS.filter((k) => !found.includes(k)).join('\n')).toBe('');
  });
});

describe('tools/import-graph.ts', () => {
  it('reads static, type-only, re-export, side-effect and literal dynamic imports', () => {
    const src = [
      "import a from './a.ts';",
      "import type { B } from './b.ts';",
      "import {\n  c,\n  type C,\n} from './c.ts';",
      "import * as d from './d.ts';",
      "import e, { f } from './e.ts';",
      "export { g } from './g.ts';",
      "export type { H } from './h.ts';",
      "export * from './i.ts';",
      "import './j.ts';",
      "const k = await import('./k.ts');",
    ].join('\n');
    expect(scanImports(src).map((r) => [r.specifier, r.typeOnly, r.dynamic])).toEqual([
      ['./a.ts', false, false], ['./b.ts', true, false], ['./c.ts', false, false], ['./d.ts', false, false],
      ['./e.ts', false, false], ['./g.ts', false, false], ['./h.ts', true, false], ['./i.ts', false, false],
      ['./j.ts', false, false], ['./k.ts', false, true],
    ]);
  });

  it('skips imports quoted in comments, strings, templates and regular expressions', () => {
    const src = [
      "// import x from './no1.ts';",
      "/* export * from './no2.ts'; */",
      "const s = \"import y from './no3.ts'\";",
      "const t = `import z from './no4.ts' ${\"a\"} import w from './no5.ts'`;",
      "const r = /import v from '.\\/no6.ts'/;",
      "const q = 1 / 2; import u from './yes.ts';",
    ].join('\n');
    expect(scanImports(src).map((r) => r.specifier)).toEqual(['./yes.ts']);
  });

  it('finds a cycle at each level, and leaves out the allowed edges', () => {
    const edge = (from: string, to: string) => ({ from, to, typeOnly: false, dynamic: false, line: 1 });
    const g: ImportGraph = {
      files: ['src/a/x.ts', 'src/a/y.ts', 'src/b/z.ts', 'src/a/sub/w.ts', 'src/c/v.ts'],
      edges: [
        edge('src/a/x.ts', 'src/a/y.ts'), edge('src/a/y.ts', 'src/a/x.ts'), // file cycle inside src/a
        edge('src/a/y.ts', 'src/b/z.ts'), edge('src/b/z.ts', 'src/a/sub/w.ts'), // src/a → src/b → src/a/sub:
        edge('src/a/sub/w.ts', 'src/c/v.ts'), // no folder cycle, but an area cycle src/a ↔ src/b
      ],
    };
    expect(cyclesAt(g, 'file').map((c) => c.nodes)).toEqual([['src/a/x.ts', 'src/a/y.ts']]);
    expect(cyclesAt(g, 'folder')).toEqual([]);
    expect(cyclesAt(g, 'area').map((c) => c.unitEdges)).toEqual([['src/a -> src/b', 'src/b -> src/a']]);
    expect(cyclesAt(g, 'area', new Set(['src/b -> src/a']))).toEqual([]);
    expect(stale(g, 'area', ['src/b -> src/a', 'src/a -> src/c'])).toEqual(['src/a -> src/c']);
  });
});
