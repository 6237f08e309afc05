/**
 * The documentation stands alone: code, tests and docs point only into this repository.
 *  (a) no file names a document kept outside the repository (the forbidden strings are built from
 *      pieces below, so this file does not match itself);
 *  (b) every repository path mentioned in README.md and docs/*.md (backticked or not: `src/…`,
 *      `docs/…`, `bench/…`, …) and every relative markdown link target exists, and every
 *      `docs/NAME.md` that code mentions exists;
 *  (c) every section reference `docs/NAME.md §N` and every heading reference `docs/NAME.md "Text"`
 *      (in code and in docs) resolves: §N to a heading numbered N, "Text" to a heading, a bold
 *      paragraph lead or a line start of that document containing the text.
 * The resolvers are also checked on made-up inputs, so a broken reference is known to fail.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Directories scanned (recursively) besides README.md. */
const SCANNED_DIRS = ['src', 'circuits', 'riscv', 'test', 'bench', 'tools', 'firmware', 'docs', 'targets'];
const TEXT_FILE = /\.(ts|mts|cts|js|mjs|cjs|py|sh|c|h|S|s|ld|md|json|txt)$/;
const SKIP_DIRS = new Set(['node_modules', 'dist', 'out', 'build']);

function walk(rel: string, out: string[]): string[] {
  const abs = path.join(ROOT, rel);
  if (!fs.existsSync(abs)) return out;
  for (const e of fs.readdirSync(abs, { withFileTypes: true })) {
    if (e.name.startsWith('.') || SKIP_DIRS.has(e.name)) continue;
    const r = `${rel}/${e.name}`;
    if (e.isDirectory()) walk(r, out);
    else if (e.isFile() && TEXT_FILE.test(e.name)) out.push(r);
  }
  return out;
}

const FILES = [...SCANNED_DIRS.flatMap((d) => walk(d, [])), 'README.md'].sort();
/** This file: its made-up references (docs/x.md …) exercise the checks below and are not scanned by (b) and (c). */
const SELF = 'test/docs-references.test.ts';
const DOC_FILES = FILES.filter((f) => f === 'README.md' || /^docs\/[^/]+\.md$/.test(f));

const textCache = new Map<string, string>();
/** A file's text, with JSON's `\u00a7` escape read as the § it stands for. */
function textOf(rel: string): string {
  let t = textCache.get(rel);
  if (t === undefined) {
    t = fs.readFileSync(path.join(ROOT, rel), 'utf8').replace(/\\u00a7/gi, '§');
    textCache.set(rel, t);
  }
  return t;
}

const exists = (rel: string): boolean => fs.existsSync(path.join(ROOT, rel));

// ---------------------------------------------------------------------------------------------
// (a) documents outside the repository

/** Names of documents that live outside the repository (built from pieces: see the header). */
const FORBIDDEN = [
  ['..', '/shared'],
  ['BRI', 'EF'],
  ['spec ', '§'],
  ['numerics-', 'findings'],
  ['floorplan-', 'sketch'],
  ['qwen-hybrid-', 'spec'],
].map((parts) => parts.join(''));

function forbiddenHits(rel: string, text: string): string[] {
  const hits: string[] = [];
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    for (const f of FORBIDDEN) if (line.includes(f)) hits.push(`${rel}:${i + 1}: ${f}`);
  });
  return hits;
}

// ---------------------------------------------------------------------------------------------
// (b) paths and links

const PATH_ROOTS = ['docs', 'src', 'circuits', 'riscv', 'bench', 'tools', 'firmware', 'test', 'fixtures', 'targets'];
const PATH_RE = new RegExp(`(?<![\\w./@-])((?:${PATH_ROOTS.join('|')})/[A-Za-z0-9_./+{}*<>-]*)`, 'g');

/**
 * Paths the docs mention that are examples or placeholders, not files of the repository. Only
 * outputs and illustrations belong here.
 */
const PATH_EXCEPTIONS = new Set([
  'bench/NAME.ts', // "npx tsx bench/NAME.ts": any benchmark script
  'fixtures/firmware/NAME.elf', // any bundled firmware program
  'circuits/bad.ts', // docs/dsl.md: an example of a circuit with an error, in a user's project
  'circuits/mine.ts', // docs/dsl.md: a user's own circuit
]);

/** Repository paths mentioned in `text` (placeholders with {…}, *, <…> skipped). */
function mentionedPaths(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(PATH_RE)) {
    const token = m[1]!;
    if (/[{}*<>]/.test(token)) continue;
    out.push(token.replace(/[.\-+]+$/, ''));
  }
  return out;
}

/** Targets of relative markdown links `[text](target)` outside code spans and fences. */
function markdownLinks(text: string): string[] {
  const prose = text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
  const out: string[] = [];
  for (const m of prose.matchAll(/\[[^\]\n]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const t = m[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(t) || t.startsWith('#')) continue;
    out.push(t.split('#')[0]!);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// (c) section and heading references

interface DocRef { doc: string; section?: string; heading?: string }

const SECTION_REF = /docs\/([A-Za-z0-9_-]+\.md)`?,? ?\(?§ ?(\d+(?:\.\d+)*)/g;
const HEADING_REF = /docs\/([A-Za-z0-9_-]+\.md)`?,? ?\(?["“]([^"”\n]+)["”]/g;

function docRefs(text: string): DocRef[] {
  const out: DocRef[] = [];
  for (const m of text.matchAll(SECTION_REF)) out.push({ doc: `docs/${m[1]}`, section: m[2]! });
  for (const m of text.matchAll(HEADING_REF)) out.push({ doc: `docs/${m[1]}`, heading: m[2]! });
  return out;
}

const plain = (s: string): string => s.replace(/[`*_]/g, '').toLowerCase().trim();

/** Why `ref` does not resolve in the markdown `docText`, or null when it does. */
function unresolved(ref: DocRef, docText: string): string | null {
  const headings = docText.split('\n').filter((l) => /^#{1,6} /.test(l)).map((l) => l.replace(/^#+ +/, ''));
  if (ref.section !== undefined) {
    const n = ref.section;
    const ok = headings.some((h) => (h.startsWith(`${n}.`) && !/^\d/.test(h.slice(n.length + 1))) || h.startsWith(`${n} `));
    return ok ? null : `no heading numbered ${n}`;
  }
  const want = plain(ref.heading!);
  const leads = [
    ...headings,
    ...[...docText.matchAll(/\*\*([^*\n]+)\*\*/g)].map((m) => m[1]!),
  ].map(plain);
  if (leads.some((h) => h.includes(want))) return null;
  if (docText.split('\n').some((l) => plain(l).startsWith(want))) return null;
  return `no heading, bold lead or line starting with "${ref.heading}"`;
}

// ---------------------------------------------------------------------------------------------

describe('documentation references', () => {
  it('scans the repository (sanity)', () => {
    expect(FILES.length).toBeGreaterThan(100);
    expect(DOC_FILES).toContain('docs/host-architecture.md');
    expect(DOC_FILES).toContain('README.md');
  });

  it('(a) nothing names a document kept outside the repository', () => {
    const hits = FILES.flatMap((f) => forbiddenHits(f, textOf(f)));
    expect(hits).toEqual([]);
  });

  it('(b) every repository path and relative link in README.md and docs/ exists', () => {
    const missing: string[] = [];
    for (const f of DOC_FILES) {
      const text = textOf(f);
      for (const p of mentionedPaths(text)) {
        if (!PATH_EXCEPTIONS.has(p) && !exists(p)) missing.push(`${f}: ${p}`);
      }
      for (const t of markdownLinks(text)) {
        const target = path.posix.normalize(path.posix.join(path.posix.dirname(f), t));
        if (!exists(target)) missing.push(`${f}: link ${t}`);
      }
    }
    expect([...new Set(missing)]).toEqual([]);
  });

  it('(b) every docs/NAME.md that code mentions exists', () => {
    const missing: string[] = [];
    for (const f of FILES) {
      if (DOC_FILES.includes(f) || f === SELF) continue;
      for (const m of textOf(f).matchAll(/(?<![\w./-])docs\/[A-Za-z0-9_-]+\.md/g)) {
        if (!exists(m[0])) missing.push(`${f}: ${m[0]}`);
      }
    }
    expect([...new Set(missing)]).toEqual([]);
  });

  it('(c) every docs/NAME.md §N and docs/NAME.md "Heading" reference resolves', () => {
    const bad: string[] = [];
    let count = 0;
    for (const f of FILES) {
      if (f === SELF) continue;
      for (const ref of docRefs(textOf(f))) {
        count++;
        const where = `${f}: ${ref.doc} ${ref.section !== undefined ? `§${ref.section}` : `"${ref.heading}"`}`;
        if (!exists(ref.doc)) { bad.push(`${where}: no such document`); continue; }
        const why = unresolved(ref, textOf(ref.doc));
        if (why !== null) bad.push(`${where}: ${why}`);
      }
    }
    expect(count).toBeGreaterThan(50);
    expect(bad).toEqual([]);
  });
});

describe('the reference checks fail on broken references', () => {
  const doc = [
    '# Title',
    '## 1. Config',
    '### 1.2 Values',
    '## 3. Forward',
    '## Chunked prefill (a prompt)',
    '**Hot value T.** A float32 …',
    'Round 3 — incremental decode',
  ].join('\n');

  it('resolves sections and headings that exist', () => {
    for (const ref of docRefs('see docs/x.md §1, docs/x.md §1.2, docs/x.md §3 and docs/x.md "Chunked prefill", '
      + '`docs/x.md` "Hot value T", docs/x.md ("Round 3")')) {
      expect(unresolved(ref, doc)).toBeNull();
    }
  });

  it('rejects sections and headings that do not', () => {
    const refs = docRefs('docs/x.md §2, docs/x.md §1.3, docs/x.md §12, docs/x.md "Chunked decode", docs/x.md "Hot value U"');
    expect(refs).toHaveLength(5);
    for (const ref of refs) expect(unresolved(ref, doc)).not.toBeNull();
  });

  it('finds forbidden names, paths and links', () => {
    expect(forbiddenHits('f', `see ${FORBIDDEN[2]}3`)).toHaveLength(1);
    expect(forbiddenHits('f', 'see docs/host-architecture.md §3')).toEqual([]);
    expect(mentionedPaths('run `npx tsx bench/exec.ts` or src/model/naming.ts. Not src/{a,b}.ts or out/x'))
      .toEqual(['bench/exec.ts', 'src/model/naming.ts']);
    expect(exists('src/model/no-such-file.ts')).toBe(false);
    expect(markdownLinks('[a](docs/x.md) [b](https://e.org) `[c](d)` [e](#f)')).toEqual(['docs/x.md']);
  });
});
