/**
 * The import graph of chipc's own sources, and its cycles (issue 30: no cycles, file or folder
 * level, in src/, circuits/ and riscv/; test/import-rules.test.ts enforces it):
 *
 *   npx tsx tools/import-graph.ts [DIR ...]      (default: src circuits riscv)
 *
 * prints every file-, folder- and area-level cycle and every import of circuits/ from src/, and
 * exits 1 when there is any. Dependency-free on purpose (no TypeScript parser): it reads the static
 * `import … from '…'`, `import '…'`, `export … from '…'` and literal `import('…')` specifiers of
 * each .ts file, skipping comments, strings and template literals so that code quoted in a string
 * is not taken for an import. Only relative specifiers count (packages and node: builtins are
 * leaves of the graph and cannot close a cycle).
 *
 * What counts as an edge:
 *   - `import type` / `export type` count. They vanish at run time, but a type-only cycle still
 *     ties two modules together (neither can be read, moved or tested without the other), and a
 *     type import turns into a value import with one edit. Shared types go to a lower module.
 *   - Literal dynamic `import('…')` counts: deferring a load hides a cycle from the module loader,
 *     not from the design.
 *
 * Levels: file (every file), folder (every file collapses to the folder it sits in:
 * src/passes/assemble/rows.ts → src/passes/assemble, circuits/store/store.ts → circuits/store) and
 * area (to its top folder: src/passes/assemble/rows.ts → src/passes). At the folder and area levels
 * the files directly in a root (src/compile.ts, src/index.ts, riscv/cpu.ts) are units by themselves:
 * a root is no module of its own (src/index.ts re-exports every folder; were it one unit with
 * src/compile.ts, any folder importing the compiler would close a cycle through the index).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** One import specifier found in a source text. */
export interface ImportRef {
  specifier: string;
  /** `import type …` / `export type …` (a whole-statement type import; `import { type X }` is not). */
  typeOnly: boolean;
  /** A literal `import('…')`. */
  dynamic: boolean;
  /** 1-based line of the specifier. */
  line: number;
}

/** An edge between two files of the graph, paths relative to the root, '/'-separated. */
export interface ImportEdge {
  from: string;
  to: string;
  typeOnly: boolean;
  dynamic: boolean;
  line: number;
}

export interface ImportGraph {
  /** Every scanned file, sorted. */
  files: string[];
  /** Every edge between files (resolved relative specifiers), sorted by from, then to. */
  edges: ImportEdge[];
}

/** Keywords after which a '/' starts a regular expression rather than a division. */
const REGEX_AFTER_WORD = new Set(['return', 'typeof', 'instanceof', 'in', 'of', 'new', 'delete', 'void', 'throw', 'case', 'do', 'else', 'yield', 'await']);

/**
 * `src` with comments blanked and the contents of strings, template literals and regular
 * expressions replaced by spaces (quotes, newlines and length kept, so offsets and lines still
 * match). Template substitutions `${…}` stay code.
 */
export function maskSource(src: string): string {
  const out = src.split('');
  const blank = (i: number): void => {
    if (out[i] !== '\n') out[i] = ' ';
  };
  // Each open template literal's brace depth at its `${`, to know which `}` resumes the template.
  const templateStack: number[] = [];
  let depth = 0;
  let i = 0;
  const n = src.length;
  // The last significant code token, to tell a regex from a division.
  let prev = '';
  const scanTemplate = (): void => {
    // At the char after '`' or after the '}' closing a substitution; stops after the closing '`' or '${'.
    while (i < n) {
      const c = src[i]!;
      if (c === '\\') {
        blank(i);
        if (i + 1 < n) blank(i + 1);
        i += 2;
      } else if (c === '`') {
        i++;
        prev = '`';
        return;
      } else if (c === '$' && src[i + 1] === '{') {
        templateStack.push(depth);
        depth++;
        i += 2;
        prev = '{';
        return;
      } else {
        blank(i);
        i++;
      }
    }
  };
  while (i < n) {
    const c = src[i]!;
    const d = src[i + 1];
    if (c === '/' && d === '/') {
      while (i < n && src[i] !== '\n') blank(i++);
    } else if (c === '/' && d === '*') {
      const end = src.indexOf('*/', i + 2);
      const stop = end < 0 ? n : end + 2;
      while (i < stop) blank(i++);
    } else if (c === '"' || c === "'") {
      i++;
      while (i < n && src[i] !== c && src[i] !== '\n') {
        if (src[i] === '\\') blank(i++);
        if (i < n) blank(i++);
      }
      i++;
      prev = c;
    } else if (c === '`') {
      i++;
      scanTemplate();
    } else if (c === '/') {
      const word = /([A-Za-z_$][\w$]*)$/.exec(prev)?.[1];
      const isRegex = prev === '' || /[(,=:[!&|?{};+\-*%<>~^]$/.test(prev) || (word !== undefined && REGEX_AFTER_WORD.has(word));
      if (isRegex) {
        i++;
        let inClass = false;
        while (i < n && src[i] !== '\n') {
          const r = src[i]!;
          if (r === '\\') {
            blank(i++);
          } else if (r === '[') {
            inClass = true;
          } else if (r === ']') {
            inClass = false;
          } else if (r === '/' && !inClass) {
            break;
          }
          if (i < n) blank(i++);
        }
        i++;
        while (i < n && /[a-z]/i.test(src[i]!)) i++;
        prev = 'regex';
      } else {
        i++;
        prev = '/';
      }
    } else if (c === '{') {
      depth++;
      i++;
      prev = '{';
    } else if (c === '}') {
      depth--;
      i++;
      if (templateStack.length > 0 && templateStack[templateStack.length - 1] === depth) {
        templateStack.pop();
        scanTemplate();
      } else {
        prev = '}';
      }
    } else if (/\s/.test(c)) {
      i++;
    } else if (/[A-Za-z_$0-9]/.test(c)) {
      const m = /^[\w$]+/.exec(src.slice(i, i + 64))!;
      i += m[0].length;
      prev = m[0];
    } else {
      i++;
      // ')' and ']' end an operand: a '/' after them divides.
      prev = c;
    }
  }
  return out.join('');
}

/**
 * Static and literal dynamic import specifiers of a TypeScript source: `import … from '…'`,
 * `import '…'`, `export … from '…'`, `import('…')`.
 */
export function scanImports(src: string): ImportRef[] {
  const masked = maskSource(src);
  const refs: ImportRef[] = [];
  const lineAt = (offset: number): number => {
    let line = 1;
    for (let k = 0; k < offset; k++) if (src.charCodeAt(k) === 10) line++;
    return line;
  };
  // The quote of the specifier survives masking; its text is read back from the original source.
  const patterns: { re: RegExp; dynamic: boolean }[] = [
    // import x from '…' / import { a, b } from '…' / import * as x from '…' / export { a } from '…' / export * from '…'
    { re: /(?<![\w$.])(import|export)(\s+type)?\s+(?:[\w$]+\s*,?\s*)?(?:\{[^}]*\}|\*(?:\s+as\s+[\w$]+)?)?\s*from\s*(['"])/g, dynamic: false },
    // import x from '…' (default import only; the pattern above needs a brace or star after a name followed by a comma)
    { re: /(?<![\w$.])(import)(\s+type)?\s+[\w$]+\s+from\s*(['"])/g, dynamic: false },
    // import '…' (side effects only)
    { re: /(?<![\w$.])(import)()\s*(['"])/g, dynamic: false },
    // import('…')
    { re: /(?<![\w$.])(import)()\s*\(\s*(['"])/g, dynamic: true },
  ];
  const seen = new Set<number>();
  for (const { re, dynamic } of patterns) {
    for (const m of masked.matchAll(re)) {
      const quoteAt = m.index + m[0].length - 1;
      if (seen.has(quoteAt)) continue;
      const quote = m[3]!;
      const end = src.indexOf(quote, quoteAt + 1);
      if (end < 0) continue;
      seen.add(quoteAt);
      refs.push({ specifier: src.slice(quoteAt + 1, end), typeOnly: m[2] !== undefined && m[2] !== '', dynamic, line: lineAt(quoteAt) });
    }
  }
  return refs.sort((a, b) => a.line - b.line);
}

/** Every .ts file (not .d.ts) under root/dir, relative to root, '/'-separated, sorted. */
export function listSources(root: string, dir: string): string[] {
  const files: string[] = [];
  const walk = (rel: string): void => {
    const abs = path.join(root, rel);
    if (!fs.existsSync(abs)) return;
    for (const e of fs.readdirSync(abs, { withFileTypes: true })) {
      if (e.name === 'node_modules' || e.name.startsWith('.')) continue;
      const child = `${rel}/${e.name}`;
      if (e.isDirectory()) walk(child);
      else if (e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) files.push(child);
    }
  };
  walk(dir.replace(/\/+$/, ''));
  return files.sort();
}

/** The import graph of the .ts files under `dirs` (relative to root). Edges may point outside `dirs`. */
export function buildImportGraph(root: string, dirs: readonly string[]): ImportGraph {
  const files = [...new Set(dirs.flatMap((d) => listSources(root, d)))].sort();
  const edges: ImportEdge[] = [];
  for (const from of files) {
    const src = fs.readFileSync(path.join(root, from), 'utf8');
    for (const ref of scanImports(src)) {
      if (!ref.specifier.startsWith('.')) continue;
      const to = path.posix.normalize(path.posix.join(path.posix.dirname(from), ref.specifier));
      edges.push({ from, to, typeOnly: ref.typeOnly, dynamic: ref.dynamic, line: ref.line });
    }
  }
  edges.sort((a, b) => (a.from < b.from ? -1 : a.from > b.from ? 1 : a.to < b.to ? -1 : a.to > b.to ? 1 : a.line - b.line));
  return { files, edges };
}

/** The folder-level unit of a file (see the header): its folder, or the file itself when it sits directly in a root. */
export function folderOf(file: string): string {
  const dir = path.posix.dirname(file);
  return dir.includes('/') ? dir : file;
}

/**
 * The area-level unit of a file: its top folder under a root (src/passes/assemble/rows.ts →
 * src/passes), or the file itself when it sits directly in a root. Catches a cycle that runs
 * through a subfolder (gadgets → passes/assemble, passes → gadgets), which `folderOf` keeps apart.
 */
export function areaOf(file: string): string {
  const parts = file.split('/');
  return parts.length > 2 ? `${parts[0]}/${parts[1]}` : file;
}

/** The three granularities the rules check: files, folders (`folderOf`), areas (`areaOf`). */
export type Level = 'file' | 'folder' | 'area';

export const UNIT: Record<Level, (file: string) => string> = {
  file: (f) => f,
  folder: folderOf,
  area: areaOf,
};

/** `from -> to`: how an edge (between files, folders or areas) is spelled in the exception lists of test/import-rules.test.ts. */
export function edgeKey(from: string, to: string): string {
  return `${from} -> ${to}`;
}

/**
 * The strongly connected components with more than one node (or a self-loop) of a directed graph,
 * each sorted, the list sorted by first node. Tarjan's algorithm, iterative.
 */
export function stronglyConnected(nodes: Iterable<string>, succ: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const comps: string[][] = [];
  let next = 0;
  for (const root of nodes) {
    if (index.has(root)) continue;
    const work: { node: string; it: Iterator<string> }[] = [];
    const open = (v: string): void => {
      index.set(v, next);
      low.set(v, next);
      next++;
      stack.push(v);
      onStack.add(v);
      work.push({ node: v, it: (succ.get(v) ?? new Set<string>()).values() });
    };
    open(root);
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      const step = top.it.next();
      if (!step.done) {
        const w = step.value;
        if (!index.has(w)) open(w);
        else if (onStack.has(w)) low.set(top.node, Math.min(low.get(top.node)!, index.get(w)!));
        continue;
      }
      work.pop();
      const v = top.node;
      if (work.length > 0) {
        const parent = work[work.length - 1]!.node;
        low.set(parent, Math.min(low.get(parent)!, low.get(v)!));
      }
      if (low.get(v) === index.get(v)) {
        const comp: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          comp.push(w);
        } while (w !== v);
        if (comp.length > 1 || succ.get(v)?.has(v)) comps.push(comp.sort());
      }
    }
  }
  return comps.sort((a, b) => (a[0]! < b[0]! ? -1 : 1));
}

/** A cycle: its units (files, folders or areas), the unit edges inside it, and the file edges behind them. */
export interface Cycle {
  nodes: string[];
  /** Edges between units of the cycle, as `edgeKey`s, sorted. */
  unitEdges: string[];
  /** The file imports that make up those unit edges. */
  edges: ImportEdge[];
}

/**
 * The cycles of the graph at `level`: strongly connected sets of units, once the unit edges in
 * `allowed` (`edgeKey`s) are left out. Imports inside one unit are no edge at the folder and
 * area levels.
 */
export function cyclesAt(graph: ImportGraph, level: Level, allowed: ReadonlySet<string> = new Set()): Cycle[] {
  const unit = UNIT[level];
  const succ = new Map<string, Set<string>>();
  const nodes = new Set<string>(graph.files.map(unit));
  const kept = graph.edges.filter((e) => {
    const a = unit(e.from);
    const b = unit(e.to);
    return (level === 'file' || a !== b) && !allowed.has(edgeKey(a, b));
  });
  for (const e of kept) {
    const a = unit(e.from);
    const b = unit(e.to);
    nodes.add(a);
    nodes.add(b);
    if (!succ.has(a)) succ.set(a, new Set());
    succ.get(a)!.add(b);
  }
  return stronglyConnected([...nodes].sort(), succ).map((comp) => {
    const inside = new Set(comp);
    const edges = kept.filter((e) => inside.has(unit(e.from)) && inside.has(unit(e.to)));
    return { nodes: comp, unitEdges: [...new Set(edges.map((e) => edgeKey(unit(e.from), unit(e.to))))].sort(), edges };
  });
}

/** Imports of circuits/ from src/ (the library must not depend on the circuits it compiles). */
export function srcImportsOfCircuits(graph: ImportGraph): ImportEdge[] {
  return graph.edges.filter((e) => e.from.startsWith('src/') && e.to.startsWith('circuits/'));
}

function describe(e: ImportEdge): string {
  const kind = [e.typeOnly ? 'type' : '', e.dynamic ? 'dynamic' : ''].filter(Boolean).join(', ');
  return `    ${e.from}:${e.line} -> ${e.to}${kind ? ` (${kind})` : ''}`;
}

function main(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const dirs = process.argv.length > 2 ? process.argv.slice(2) : ['src', 'circuits', 'riscv'];
  const graph = buildImportGraph(root, dirs);
  let bad = 0;
  for (const level of ['file', 'folder', 'area'] as const) {
    for (const c of cyclesAt(graph, level)) {
      bad++;
      console.log(`${level}-level cycle: ${c.nodes.join(', ')}`);
      for (const k of c.unitEdges) {
        console.log(`  ${k}`);
        if (level !== 'file') for (const e of c.edges) if (edgeKey(UNIT[level](e.from), UNIT[level](e.to)) === k) console.log(describe(e));
      }
    }
  }
  const upward = srcImportsOfCircuits(graph);
  if (upward.length > 0) {
    bad++;
    console.log('src/ imports circuits/:');
    for (const e of upward) console.log(describe(e));
  }
  console.log(`${graph.files.length} files, ${graph.edges.length} edges: ${bad === 0 ? 'no cycles' : `${bad} problem(s)`}`);
  process.exitCode = bad > 0 ? 1 : 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) main();
