/**
 * Circuit notes (CircuitMeta.notes → CircuitIR.notes → `chipc compile --report`) and the store
 * circuit (circuits/store/store.ts): its notes state the default store's limits, and the chip it
 * builds has the data RAM those notes name (the banks' rows add up to it).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from './helpers/cli.ts';
import { loadCircuitFile } from '../src/dsl/load.ts';
import { CHIP_STORE_DEFAULTS } from '../src/store/chip.ts';

describe('circuit notes', () => {
  it('are printed by chipc compile --report and carried in --json', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-notes-'));
    try {
      const file = path.join(dir, 'noted.ts');
      const dsl = path.resolve('src/dsl/index.ts');
      fs.writeFileSync(file, `import { defineCircuit } from ${JSON.stringify(dsl)};
export default defineCircuit({ name: 'noted', vocab: 8, notes: ['capacity: 3 things', 'limit: 7'] }, (c) => {
  const x = c.tokenField('x', (t) => t % 4, [0, 3]);
  c.emit([c.table('y', [x], (v) => (v + 1) % 4, [0, 3])]);
});
`);
      const r = await cli('compile', file, '--report');
      expect(r.code).toBe(0);
      expect(r.out).toContain('noted: capacity: 3 things');
      expect(r.out).toContain('noted: limit: 7');
      const j = await cli('compile', file, '--json');
      expect(JSON.parse(j.out).notes).toEqual(['capacity: 3 things', 'limit: 7']);
      // Without notes: none printed, [] in JSON.
      const plain = path.join(dir, 'plain.ts'); // another file: a module is imported once per path
      fs.writeFileSync(plain, fs.readFileSync(file, 'utf8').replace(", notes: ['capacity: 3 things', 'limit: 7']", ''));
      const k = await cli('compile', plain, '--json');
      expect(JSON.parse(k.out).notes).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the store circuit states the default limits and has the data RAM it names', async () => {
    const ir = await loadCircuitFile('circuits/store/store.ts');
    expect(ir.name).toBe('store');
    const notes = ir.notes!.join('\n');
    const d = CHIP_STORE_DEFAULTS;
    const dirSlots = 2 ** Math.ceil(Math.log2(2 * d.maxFiles)); // linear probing at load ≤ 1/2
    expect(notes).toContain(`files ≤ ${d.maxFiles} (${dirSlots.toLocaleString('en-US')} directory slots)`);
    expect(notes).toContain(`names ≤ ${d.nameMax} tokens, contents ≤ ${d.contentMax.toLocaleString('en-US')} tokens`);
    expect(notes).toContain(`${d.chunkPool.toLocaleString('en-US')} chunks of ${d.chunkSize} tokens (${(d.chunkPool * d.chunkSize).toLocaleString('en-US')} tokens`);
    const kib = Number(/a (\d+) KiB data RAM/.exec(notes)![1]);
    // four interleaved banks of kib·1024 / 16 words each (rows: the next power of two, the row digits' range)
    const banks = ir.rams.filter((r) => /^mem\d*$/.test(r.name));
    expect(banks.length).toBe(4);
    for (const r of banks) expect(r.rows).toBe(2 ** Math.ceil(Math.log2((kib * 1024) / 16)));
    expect(kib % 32).toBe(0);
  });
});
