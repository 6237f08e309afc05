/**
 * The manifest file's layout (src/emit/manifest.ts manifestJson): it parses back to the same value
 * as JSON.stringify's text for any JSON value, top-level keys and the members of top-level objects
 * sit one per line, an array of records has one record per line, and nothing deeper is indented.
 * parseManifestDeferringEmit reads the same value back with the `emit` section parsed on first
 * read, wherever the key sits, falls back to a whole parse for other layouts, and names the file
 * when the deferred section is not JSON.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileCircuit } from '../src/compile.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import { buildManifest, manifestJson, parseManifestDeferringEmit } from '../src/emit/manifest.ts';
import { chipError } from './helpers/assert.ts';
import { resolveTarget } from '../src/model/targets.ts';
import adder from '../circuits/examples/adder.ts';

describe('manifestJson', () => {
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
        if (emit !== undefined) entries.splice(at % (entries.length + 1), 0, ['emit', emit]);
        const text = manifestJson(Object.fromEntries(entries));
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
