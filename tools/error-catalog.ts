/**
 * The catalog of chipc's error codes, read out of the source (docs/errors.md).
 *
 * A code is a string literal passed where a parameter named `code` is expected: the first
 * argument of `new ChipcError(code, message)` and of every helper that forwards to it
 * (`fail(code, msg)`, `err(code, tag, msg)`, the DSL's `problem(code, message, loc)`, …). The
 * TypeScript checker resolves each call's signature, so a helper needs no registration; a literal
 * inside a conditional (`a ? 'x.y' : 'x.z'`) counts for both branches. Codes built at run time
 * (a variable holding a code that came from elsewhere) are the codes of their origin. The
 * circuit validator's problems (object literals of type `Problem` with a `code`) count too: they
 * are reported one per line inside a `circuit.invalid` error.
 *
 *   npx tsx tools/error-catalog.ts            print the catalog (Markdown)
 *   npx tsx tools/error-catalog.ts --write    rewrite the catalog section of docs/errors.md
 *   npx tsx tools/error-catalog.ts --check    exit 1 when docs/errors.md is stale or a code breaks the scheme
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** `area.problem`: lower case, dot-separated parts, words within a part joined by '-'. */
export const CODE_SCHEME = /^[a-z][a-z0-9]*(\.[a-z0-9]+(-[a-z0-9]+)*)+$/;

export interface ErrorSite {
  code: string;
  /** Path relative to the scanned root, with '/' separators. */
  file: string;
  line: number;
  /** The message argument as written: a literal's text, a template with `${…}` shown as "…". */
  message: string | null;
}

/** A circuit validation problem (`src/dsl/builder.ts`): reported together under `circuit.invalid`. */
const PROBLEM_TYPE = 'Problem';
const MESSAGE_PARAMS = new Set(['message', 'msg', 'what']);

/** Every file under `dir` (recursively) ending in .ts, sorted, as paths relative to `root`. */
export function sourceFiles(root: string, dir = 'src'): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(path.join(root, d), { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const rel = `${d}/${e.name}`;
      if (e.isDirectory()) walk(rel);
      else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(rel);
    }
  };
  walk(dir);
  return out;
}

function literalsOf(e: ts.Expression): ts.StringLiteralLike[] {
  if (ts.isStringLiteralLike(e)) return [e];
  if (ts.isParenthesizedExpression(e)) return literalsOf(e.expression);
  if (ts.isConditionalExpression(e)) return [...literalsOf(e.whenTrue), ...literalsOf(e.whenFalse)];
  return [];
}

function messageText(e: ts.Expression | undefined): string | null {
  if (!e) return null;
  if (ts.isStringLiteralLike(e)) return e.text;
  if (ts.isTemplateExpression(e)) return e.head.text + e.templateSpans.map((s) => `…${s.literal.text}`).join('');
  return null;
}

/** Every error-code literal in `files` (paths relative to `root`), in file and line order. */
export function scanErrorCodes(root: string, files: string[]): ErrorSite[] {
  const abs = files.map((f) => path.join(root, f));
  const program = ts.createProgram(abs, {
    target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
    allowImportingTsExtensions: true, noEmit: true, skipLibCheck: true, strict: true, types: [],
  });
  const checker = program.getTypeChecker();
  const sites: ErrorSite[] = [];
  for (const [i, file] of abs.entries()) {
    const sf = program.getSourceFile(file);
    if (!sf) throw new Error(`error-catalog: ${files[i]} was not parsed`);
    const visit = (node: ts.Node): void => {
      if ((ts.isCallExpression(node) || ts.isNewExpression(node)) && node.arguments && node.arguments.length > 0) {
        const sig = checker.getResolvedSignature(node);
        const params = sig?.getParameters() ?? [];
        const codeAt = params.findIndex((p) => p.getName() === 'code');
        const msgAt = params.findIndex((p) => MESSAGE_PARAMS.has(p.getName()));
        const arg = codeAt >= 0 ? node.arguments[codeAt] : undefined;
        if (arg) {
          for (const lit of literalsOf(arg)) {
            const { line } = sf.getLineAndCharacterOfPosition(lit.getStart(sf));
            sites.push({ code: lit.text, file: files[i]!, line: line + 1, message: messageText(msgAt >= 0 ? node.arguments[msgAt] : undefined) });
          }
        }
      }
      if (ts.isObjectLiteralExpression(node) && checker.getContextualType(node)?.getSymbol()?.getName() === PROBLEM_TYPE) {
        const prop = (name: string): ts.Expression | undefined => {
          const p = node.properties.find((q) => ts.isPropertyAssignment(q) && q.name.getText(sf) === name);
          return p && ts.isPropertyAssignment(p) ? p.initializer : undefined;
        };
        const arg = prop('code');
        for (const lit of arg ? literalsOf(arg) : []) {
          const { line } = sf.getLineAndCharacterOfPosition(lit.getStart(sf));
          sites.push({ code: lit.text, file: files[i]!, line: line + 1, message: messageText(prop('message')) });
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return sites;
}

export interface CatalogEntry {
  code: string;
  files: string[];
  sites: number;
  message: string | null;
}

/** The message that says the most: the most literal text (placeholders aside); the first on a tie. */
function mostTelling(messages: (string | null)[]): string | null {
  let best: string | null = null;
  let bestScore = -1;
  for (const m of messages) {
    if (m === null) continue;
    const score = m.replace(/…/g, '').replace(/[\s:,.()]/g, '').length;
    if (score > bestScore) [best, bestScore] = [m, score];
  }
  return best;
}

/** One entry per code, sorted by code, with the sites' most telling message. */
export function catalog(sites: ErrorSite[]): CatalogEntry[] {
  const byCode = new Map<string, ErrorSite[]>();
  for (const s of sites) byCode.set(s.code, [...(byCode.get(s.code) ?? []), s]);
  return [...byCode.keys()].sort().map((code) => {
    const list = byCode.get(code)!;
    return {
      code,
      files: [...new Set(list.map((s) => s.file))].sort(),
      sites: list.length,
      message: mostTelling(list.map((s) => s.message)),
    };
  });
}

const cell = (s: string): string => s.replace(/\\/g, '\\\\').replace(/\|/g, '\\|').replace(/`/g, "'").replace(/\s+/g, ' ').trim();

function shorten(s: string, n = 110): string {
  return s.length <= n ? s : `${s.slice(0, n - 1).trimEnd()}…`;
}

/** The Markdown of the catalog: a table per area (the part before the first dot). */
export function catalogMarkdown(entries: CatalogEntry[]): string {
  const areas = new Map<string, CatalogEntry[]>();
  for (const e of entries) {
    const area = e.code.split('.')[0]!;
    areas.set(area, [...(areas.get(area) ?? []), e]);
  }
  const lines: string[] = [`${entries.length} codes in ${areas.size} areas.`, ''];
  for (const [area, list] of [...areas].sort(([a], [b]) => (a < b ? -1 : 1))) {
    lines.push(`### ${area}`, '', '| code | raised in | message (as written; … is a value) |', '|---|---|---|');
    for (const e of list) {
      const where = e.files.map((f) => `\`${f.replace(/^src\//, '')}\``).join(', ') + (e.sites > e.files.length ? ` (${e.sites} sites)` : '');
      lines.push(`| \`${e.code}\` | ${where} | ${e.message === null ? '' : cell(shorten(e.message))} |`);
    }
    lines.push('');
  }
  return lines.join('\n');
}

export const BEGIN = '<!-- error-catalog:begin (generated by `npx tsx tools/error-catalog.ts --write`; do not edit) -->';
export const END = '<!-- error-catalog:end -->';

/** `doc` with the text between the BEGIN and END markers replaced by `body`. */
export function spliceCatalog(doc: string, body: string): string {
  const i = doc.indexOf(BEGIN);
  const j = doc.indexOf(END);
  if (i < 0 || j < i) throw new Error(`error-catalog: docs/errors.md lacks the ${BEGIN} … ${END} markers`);
  return `${doc.slice(0, i + BEGIN.length)}\n\n${body}\n${doc.slice(j)}`;
}

function main(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const entries = catalog(scanErrorCodes(root, sourceFiles(root)));
  const body = catalogMarkdown(entries);
  const mode = process.argv[2];
  if (mode === undefined) {
    process.stdout.write(body);
    return;
  }
  const docPath = path.join(root, 'docs', 'errors.md');
  const doc = fs.readFileSync(docPath, 'utf8');
  const next = spliceCatalog(doc, body);
  if (mode !== '--write' && mode !== '--check') {
    console.error(`error-catalog: unknown option ${mode} (use --write or --check)`);
    process.exitCode = 2;
    return;
  }
  const bad = entries.filter((e) => !CODE_SCHEME.test(e.code));
  for (const e of bad) console.error(`${e.code} (${e.files.join(', ')}) breaks the scheme area.problem-words`);
  if (mode === '--write') {
    if (next !== doc) {
      fs.writeFileSync(`${docPath}.tmp`, next);
      fs.renameSync(`${docPath}.tmp`, docPath);
    }
    console.log(`docs/errors.md: ${entries.length} codes${next === doc ? ', unchanged' : ', rewritten'}`);
  } else if (next !== doc) {
    console.error('docs/errors.md is stale: run npx tsx tools/error-catalog.ts --write');
  }
  process.exitCode = bad.length > 0 || (mode === '--check' && next !== doc) ? 1 : 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) main();
