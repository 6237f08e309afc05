/**
 * Error codes (docs/errors.md, tools/error-catalog.ts): every code chipc raises follows the
 * `area.problem` scheme, the catalog in docs/errors.md is the one the source gives, and the
 * scanner finds codes by the parameter they are passed to — so a new helper, a conditional code
 * or a validator problem cannot slip past it, and a literal passed elsewhere is not a code.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  catalog, catalogMarkdown, CODE_SCHEME, scanErrorCodes, sourceFiles, spliceCatalog, type ErrorSite,
} from '../tools/error-catalog.ts';
import { cli } from './helpers/cli.ts';

const root = fileURLToPath(new URL('..', import.meta.url));

describe('error codes of the source', () => {
  let sites: ErrorSite[];
  beforeAll(() => {
    sites = scanErrorCodes(root, sourceFiles(root));
  }, 60_000);

  it('every code follows the scheme area.problem-words', () => {
    const bad = [...new Set(sites.filter((s) => !CODE_SCHEME.test(s.code)).map((s) => `${s.code} (${s.file}:${s.line})`))];
    expect(bad).toEqual([]);
  });

  it('finds codes through ChipcError, forwarding helpers, conditionals and validator problems', () => {
    const codes = new Set(sites.map((s) => s.code));
    // one of each route, picked from distinct files; each is also raised by a test elsewhere
    for (const c of [
      'safetensors.truncated', // a local `fail(code, msg)` in the reader
      'fit.lookup.stamp-bits', // `err(code, tag, msg)`: the code is not the only string argument
      'checkpoint.index-duplicate', // one branch of a conditional code
      'wire.unassigned', // a validator Problem object literal
      'store.not-empty', // new ChipcError(...)
      'cli.tokens',
    ]) expect(codes.has(c), c).toBe(true);
    expect(codes.size).toBeGreaterThan(250);
    // phase labels and file names are string literals of the same shape, passed elsewhere
    for (const notCode of ['gdn.proj', 'config.json', 'model.safetensors']) expect(codes.has(notCode), notCode).toBe(false);
  });

  it('docs/errors.md holds the catalog the source gives', () => {
    const doc = fs.readFileSync(path.join(root, 'docs', 'errors.md'), 'utf8');
    const fresh = spliceCatalog(doc, catalogMarkdown(catalog(sites)));
    expect(fresh === doc, 'docs/errors.md is stale: run npx tsx tools/error-catalog.ts --write').toBe(true);
    for (const c of new Set(sites.map((s) => s.code))) expect(doc.includes(`| \`${c}\` |`), c).toBe(true);
  });
});

describe('the scanner on a file of its own', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-codes-'));
    fs.mkdirSync(path.join(dir, 'src'));
    fs.writeFileSync(path.join(dir, 'src', 'a.ts'), [
      'export class Failure extends Error { constructor(readonly code: string, message: string) { super(message); } }',
      'function fail(code: string, msg: string): never { throw new Failure(code, msg); }',
      'function phase(label: string): void { void label; }',
      'export function f(x: number): void {',
      "  phase('gdn.proj');",
      "  if (x > 1) throw new Failure('BAD_THING', `x is ${x}`);",
      "  if (x > 2) fail(x > 3 ? 'a.big' : 'a.medium-size', 'too big');",
      "  fail('a.camelCase', 'no');",
      '}',
      '',
    ].join('\n'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('reports each code with its line and message, and only codes', () => {
    const found = scanErrorCodes(dir, sourceFiles(dir));
    expect(found.map((s) => [s.code, s.line, s.message])).toEqual([
      ['BAD_THING', 6, 'x is …'],
      ['a.big', 7, 'too big'],
      ['a.medium-size', 7, 'too big'],
      ['a.camelCase', 8, 'no'],
    ]);
    expect(found.filter((s) => !CODE_SCHEME.test(s.code)).map((s) => s.code)).toEqual(['BAD_THING', 'a.camelCase']);
  });
});

describe('codes on the command line', () => {
  it('a missing checkpoint is reported as checkpoint.not-found, in text and in --json', async () => {
    const missing = path.join(os.tmpdir(), 'chipc-no-such-checkpoint');
    const text = await cli('inspect', missing);
    expect(text.code).toBe(2);
    expect(text.err).toContain('chipc: error [checkpoint.not-found]:');
    const json = await cli('inspect', missing, '--json');
    expect(json.code).toBe(2);
    expect(JSON.parse(json.out).error.code).toBe('checkpoint.not-found');
  });
});
