/**
 * The manifest file's layout (src/emit/manifest.ts manifestJson): it parses back to the same value
 * as JSON.stringify's text for any JSON value, top-level keys and the members of top-level objects
 * sit one per line, an array of records has one record per line, and nothing deeper is indented.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileCircuit } from '../src/compile.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import { buildManifest, manifestJson } from '../src/emit/manifest.ts';
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
