/**
 * `chipc inspect PATH --slots`: the residual allocation read back from a checkpoint's manifest
 * (src/inspect/allocation.ts) holds every signal the compiler placed, at the dim of its slot and
 * over the sublayers it was packed for; no two signals share a dim at one sublayer; malformed
 * manifests and checkpoints without one are refused naming the problem.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildCircuit } from '../src/dsl/load.ts';
import { compileCircuit } from '../src/compile.ts';
import { buildManifest } from '../src/emit/manifest.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { allocationLines, allocationOf, sublayerName } from '../src/inspect/allocation.ts';
import { cli } from './helpers/cli.ts';
import { expectChipcError } from './helpers/assert.ts';
import adder from '../circuits/examples/adder.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-alloc-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('the allocation of a compiled circuit', () => {
  // the adder reuses slots (10 of its dims hold two signals each, one after the other's clear)
  const res = compileCircuit(buildCircuit(adder, 'circuits/examples/adder.ts'), resolveTarget('tiny').config);
  const manifest = JSON.parse(JSON.stringify(buildManifest(res, 'tiny')));
  const a = allocationOf(manifest, 'adder');
  const L = res.weights.config.numLayers;

  it('holds every placed signal at its slot\'s dim over the sublayers the packing gave it', () => {
    const want = res.signals.map((s) => `${s.name}@${res.frame.firstSlot + s.slot}:${s.birth}-${s.end}`).sort();
    expect(a.rows.map((r) => `${r.name}@${r.dim}:${r.from}-${r.to}`).sort()).toEqual(want);
    expect(a.slots).toBe(res.packing.slotsUsed);
    expect(new Set(a.rows.map((r) => r.dim)).size).toBe(res.packing.slotsUsed);
    expect(a.layerTypes).toHaveLength(L);
    expect(a.frame.map((f) => f.dim)).toEqual([...Array(res.frame.firstSlot).keys()]);
  });

  it('no two signals hold one dim at one sublayer, and the rows come by dim, then by their first sublayer', () => {
    expect(a.rows.length).toBeGreaterThan(a.slots); // some dim is reused
    for (let i = 1; i < a.rows.length; i++) {
      const p = a.rows[i - 1]!, r = a.rows[i]!;
      expect(p.dim < r.dim || (p.dim === r.dim && p.from <= r.from)).toBe(true);
      // a slot is reused only after its previous holder's clear: the intervals [from, to] are disjoint
      if (p.dim === r.dim) expect(r.from, `${p.name} and ${r.name} at dim ${r.dim}`).toBeGreaterThan(p.to);
    }
  });

  it('prints a heading, the frame and one line per signal with its sublayers', () => {
    const lines = allocationLines(a);
    expect(lines[0]).toBe(`${res.ir.name} at tiny: hidden ${res.frame.hidden}, ${L} layer${L === 1 ? '' : 's'} (${a.layerTypes.map((t) => (t === 'full_attention' ? 'attention' : 'GDN')).join(', ')}), ${a.slots} slots, ${a.rows.length} placed signals`);
    expect(lines.filter((l) => /^\s*\d+ {2}\S+–\S+ {2,}/.test(l))).toHaveLength(a.rows.length);
    const first = a.rows[0]!;
    expect(lines).toContain(`${String(first.dim).padStart(3)}  ${`${sublayerName(first.from, L)}–${sublayerName(first.to, L)}`.padEnd(9)}  ${first.name} (${[first.encoding, ...(first.cleared ? ['cleared'] : [])].join(', ')})`);
  });

  it('names sublayers as the layer map does', () => {
    expect([-1, 0, 1, 6, 7, 21, 22].map((s) => sublayerName(s, 11))).toEqual(['emb', '0M', '0F', '3M', '3F', '10F', 'out']);
  });

  it('refuses a manifest without the fields it reads, naming the field', () => {
    expectChipcError(() => allocationOf([], 'm'), 'inspect.manifest');
    for (const [field, value, says] of [
      ['layerTypes', 'gdn', /"layerTypes"/],
      ['hidden', -4, /"hidden"/],
      ['frame', { anchors: [] }, /"frame" must list/],
      ['signals', [{ name: 'x', dim: 4, birth: 'early', end: 3 }], /signal 0 must/],
    ] as const) {
      expect(() => allocationOf({ ...manifest, [field]: value }, 'm.json')).toThrow(says);
      expectChipcError(() => allocationOf({ ...manifest, [field]: value }, 'm.json'), 'inspect.manifest');
    }
  });
});

describe('chipc inspect --slots', () => {
  it('reads a compiled checkpoint and its .chip alike; --json carries the rows', async () => {
    const dir = path.join(tmp, 'adder');
    const chip = path.join(tmp, 'adder.chip');
    expect((await cli('compile', 'circuits/examples/adder.ts', '-o', dir, '--chip', chip, '--no-progress')).code).toBe(0);
    const fromDir = await cli('inspect', dir, '--slots');
    expect(fromDir.code, fromDir.err).toBe(0);
    expect(fromDir.out).toMatch(/^adder at tiny: hidden \d+, \d+ layers? \(/);
    expect((await cli('inspect', chip, '--slots')).out).toBe(fromDir.out);
    const j = JSON.parse((await cli('inspect', chip, '--slots', '--json')).out);
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'chipc-manifest.json'), 'utf8'));
    expect(j.allocation.rows).toHaveLength(manifest.signals.length);
  });

  it('refuses a checkpoint that chipc did not compile (no manifest) and a missing path', async () => {
    const r = await cli('inspect', 'fixtures/tiny', '--slots');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/inspect\.manifest.*no chipc-manifest\.json/);
    const m = await cli('inspect', path.join(tmp, 'none'), '--slots');
    expect(m.code).toBe(2);
    expect(m.err).toMatch(/checkpoint\.not-found/);
  });
});
