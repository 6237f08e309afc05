/**
 * The manifest file's layout (src/emit/manifest.ts manifestJson): it parses back to the same value
 * as JSON.stringify's text for any JSON value, top-level keys and the members of top-level objects
 * sit one per line, an array of records has one record per line, and nothing deeper is indented.
 * parseManifestDeferringEmit reads the same value back with the `emit` section parsed on first
 * read, wherever the key sits (version 1 wrote it before `report`), falls back to a whole parse for
 * other layouts, and names the file when the deferred section is not JSON. manifestJson writes
 * `emit` last (version 2), and readManifestHead reads such a text only up to it, from pieces cut
 * anywhere; a `.chip`'s manifest is read that way by readChipCheckpoint, its emit rows read again
 * from the file (closed by then) when asked for.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileCircuit } from '../src/compile.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';
import { buildManifest, manifestJson, MANIFEST_FILE, parseManifestDeferringEmit, readManifestHead } from '../src/emit/manifest.ts';
import { openChipFile } from '../src/chipfile/read.ts';
import { readChipCheckpoint } from '../src/chip/run.ts';
import { cli } from './helpers/cli.ts';
import { chipError } from './helpers/assert.ts';
import { resolveTarget } from '../src/model/targets.ts';
import adder from '../circuits/examples/adder.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-manifest-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** manifestJson's layout with the top-level `emit` at entry index `at` (version 1 placed it before `report`). */
function layoutWithEmitAt(entries: [string, unknown][], emit: unknown, at: number): string {
  const placeholder = '\u0000emit'; // manifestJson keeps every other key in order
  const list = entries.filter(([k]) => k !== 'emit' && k !== placeholder);
  list.splice(at % (list.length + 1), 0, [placeholder, emit]);
  return manifestJson(Object.fromEntries(list)).replace(`\n  ${JSON.stringify(placeholder)}: `, '\n  "emit": ');
}

/** Pieces of `text`'s UTF-8 bytes cut at the given sizes (cycled; a size of 0 gives an empty piece), counting how many were taken. */
function piecesOf(text: string, cuts: number[]): { pieces: Iterable<Uint8Array>; taken: () => number; total: number } {
  const bytes = new TextEncoder().encode(text);
  const out: Uint8Array[] = [];
  for (let at = 0, i = 0; at < bytes.length; i++) {
    const n = cuts[i % cuts.length]!;
    out.push(bytes.subarray(at, at + n));
    at += n;
    if (i > 4 * bytes.length + 10) throw new Error('cuts make no progress');
  }
  let taken = 0;
  return { pieces: (function* () { for (const p of out) { taken++; yield p; } })(), taken: () => taken, total: out.length };
}

describe('manifestJson', () => {
  it('writes the top-level emit key last, the other keys in their order (version 2)', () => {
    fc.assert(fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.jsonValue(), fc.nat(), (o, emit, at) => {
      const entries = Object.entries(o).filter(([k]) => k !== 'emit');
      entries.splice(at % (entries.length + 1), 0, ['emit', emit]);
      const text = manifestJson(Object.fromEntries(entries));
      const keys = Object.keys(JSON.parse(text) as object);
      expect(keys).toEqual([...entries.map(([k]) => k).filter((k) => k !== 'emit'), 'emit']);
      // the emit line is the last top-level key line
      const top = text.split('\n').filter((l) => /^ {2}"/.test(l));
      expect(top.at(-1)!.startsWith('  "emit": ')).toBe(true);
    }), { seed: 28, numRuns: 200 });
  });

  it('parses back to what JSON.stringify would write, for any JSON object', () => {
    fc.assert(fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (o) => {
      const text = manifestJson(o);
      expect(text.endsWith('\n')).toBe(true);
      expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(o)));
    }), { seed: 28, numRuns: 300 });
  });

  it('drops undefined members as JSON.stringify does', () => {
    expect(JSON.parse(manifestJson({ a: 1, b: undefined, c: { d: undefined, e: [1, undefined] } }))).toEqual({ a: 1, c: { e: [1, null] } });
  });

  it('lays out a compiled circuit\'s manifest: one line per key, signal and emit row', () => {
    const ir = buildCircuit(adder, 'circuits/examples/adder.ts');
    const m = buildManifest(compileCircuit(ir, resolveTarget('tiny').config), 'tiny');
    const lines = manifestJson(m).trimEnd().split('\n');
    expect(lines[0]).toBe('{');
    expect(lines.at(-1)).toBe('}');
    // each signal on a line of its own, exactly JSON.stringify of the record
    m.signals.forEach((s, i) => expect(lines).toContain(`    ${JSON.stringify(s)}${i === m.signals.length - 1 ? '' : ','}`));
    expect(lines).toContain(`  "hidden": ${m.hidden},`);
    expect(lines).toContain(`  "layerTypes": ${JSON.stringify(m.layerTypes)},`);
    // no line deeper than a record in a top-level member's array
    expect(lines.every((l) => /^ {0,6}\S/.test(l))).toBe(true);
    expect(JSON.parse(lines.join('\n'))).toEqual(JSON.parse(JSON.stringify(m)));
  });
});

describe('parseManifestDeferringEmit', () => {
  it('gives the value JSON.parse gives, emit anywhere among the keys (or absent), for any JSON values', () => {
    fc.assert(fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.option(fc.jsonValue(), { nil: undefined }), fc.nat(),
      (o, emit, at) => {
        const entries = Object.entries(o).filter(([k]) => k !== 'emit');
        const text = emit === undefined ? manifestJson(Object.fromEntries(entries)) : layoutWithEmitAt(entries, emit, at);
        expect(JSON.parse(JSON.stringify(parseManifestDeferringEmit(text, 'm')))).toEqual(JSON.parse(text));
      }), { seed: 28, numRuns: 300 });
  });

  it('leaves a compiled circuit\'s emit rows unparsed until read, then gives them', () => {
    const ir = buildCircuit(adder, 'circuits/examples/adder.ts');
    const m = buildManifest(compileCircuit(ir, resolveTarget('tiny').config), 'tiny');
    const text = manifestJson(m);
    const got = parseManifestDeferringEmit(text, 'm') as Record<string, unknown>;
    const want = JSON.parse(text) as Record<string, unknown>;
    expect(typeof Object.getOwnPropertyDescriptor(got, 'emit')?.get).toBe('function');
    expect(got['signals']).toEqual(want['signals']);
    expect(got['emit']).toEqual(want['emit']);
    expect(got['emit']).toBe(got['emit']); // parsed once
    expect(Object.keys(got).sort()).toEqual(Object.keys(want).sort());
  });

  it('parses other layouts whole, and names the file when the deferred section is not JSON', () => {
    const flat = JSON.stringify({ a: 1, emit: { rows: [1, 2] }, b: [3] });
    const whole = parseManifestDeferringEmit(flat, 'm') as Record<string, unknown>;
    expect(Object.getOwnPropertyDescriptor(whole, 'emit')?.get).toBeUndefined();
    expect(whole).toEqual({ a: 1, emit: { rows: [1, 2] }, b: [3] });
    // a nested "emit" (deeper than the top level) is not the section
    const nested = manifestJson({ a: { emit: 1 }, b: 2 });
    expect(parseManifestDeferringEmit(nested, 'm')).toEqual({ a: { emit: 1 }, b: 2 });
    const broken = manifestJson({ a: 1, emit: { rows: [1, 2] }, b: 2 }).replace('"rows": [', '"rows": [[');
    const got = parseManifestDeferringEmit(broken, 'dir/chipc-manifest.json') as Record<string, unknown>;
    expect(got['a']).toBe(1);
    expect(got['b']).toBe(2);
    const e = chipError(() => got['emit']);
    expect(e.code).toBe('run.model');
    expect(e.message).toMatch(/dir\/chipc-manifest\.json: its "emit" section is not valid JSON/);
    expect(() => parseManifestDeferringEmit('{\n  "emit": 1,\n  "a": }\n', 'm')).toThrow(SyntaxError);
  });
});

describe('readManifestHead', () => {
  it('reads a version-2 text up to its emit key, from pieces cut anywhere; emit read whole when asked for', () => {
    fc.assert(fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.jsonValue(), fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 1, maxLength: 6 }),
      (o, emit, cuts) => {
        if (cuts.every((c) => c === 0)) cuts = [...cuts, 1];
        const rest = Object.fromEntries(Object.entries(o).filter(([k]) => k !== 'emit' && k !== 'version'));
        const text = manifestJson({ version: 2, ...rest, emit });
        const want = JSON.parse(text) as Record<string, unknown>;
        const src = piecesOf(text, cuts);
        let wholeReads = 0;
        const got = readManifestHead(src.pieces, () => { wholeReads++; return new TextEncoder().encode(text); }, 'm') as Record<string, unknown>;
        expect(typeof Object.getOwnPropertyDescriptor(got, 'emit')?.get).toBe('function');
        // the pieces after the one holding the key were not read
        const keyEnd = new TextEncoder().encode(text.slice(0, text.indexOf('\n  "emit": ') + '\n  "emit": '.length)).length;
        let covered = 0;
        let need = 0;
        for (let i = 0; covered < keyEnd; i++) { covered += cuts[i % cuts.length]!; need++; }
        expect(src.taken()).toBeLessThanOrEqual(need);
        expect(wholeReads).toBe(0);
        expect(JSON.parse(JSON.stringify({ ...got, emit: undefined }))).toEqual(JSON.parse(JSON.stringify({ ...want, emit: undefined })));
        expect(got['emit']).toEqual(want['emit']);
        expect(wholeReads).toBe(1);
        void got['emit'];
        expect(wholeReads).toBe(1); // read once
      }), { seed: 28, numRuns: 200 });
  });

  it('reads anything else whole: version 1 with emit anywhere, no version, no emit', () => {
    fc.assert(fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.option(fc.jsonValue(), { nil: undefined }), fc.nat(), fc.constantFrom(1, undefined, 3),
      fc.array(fc.integer({ min: 1, max: 50 }), { minLength: 1, maxLength: 5 }),
      (o, emit, at, version, cuts) => {
        const entries: [string, unknown][] = [['version', version], ...Object.entries(o).filter(([k]) => k !== 'emit' && k !== 'version')];
        const text = emit === undefined ? manifestJson(Object.fromEntries(entries)) : layoutWithEmitAt(entries, emit, at + 1);
        const src = piecesOf(text, cuts);
        const got = readManifestHead(src.pieces, () => { throw new Error('not to be read again'); }, 'm');
        expect(src.taken()).toBe(src.total);
        expect(JSON.parse(JSON.stringify(got))).toEqual(JSON.parse(text));
      }), { seed: 28, numRuns: 200 });
  });

  it('a .chip: readChipCheckpoint gives the manifest without reading its emit rows, and reads them from the file when asked for', async () => {
    const chip = path.join(tmp, 'adder.chip');
    const r = await cli('compile', 'circuits/examples/adder.ts', '--target', 'tiny', '--chip', chip, '--no-progress');
    expect(r.code, r.err).toBe(0);
    const f = openChipFile(chip);
    const text = new TextDecoder().decode(f.readFile(MANIFEST_FILE));
    f.close();
    const want = JSON.parse(text) as Record<string, unknown>;
    expect(want['version']).toBe(2);
    expect(Object.keys(want).at(-1)).toBe('emit');
    const ck = readChipCheckpoint(chip);
    const got = ck.manifest as unknown as Record<string, unknown>;
    expect(typeof Object.getOwnPropertyDescriptor(got, 'emit')?.get).toBe('function');
    expect(got['signals']).toEqual(want['signals']);
    expect(got['report']).toEqual(want['report']);
    expect(Object.keys(got)).toEqual(Object.keys(want));
    expect(got['emit']).toEqual(want['emit']); // the file was closed: opened again for it
  });
});
