/**
 * Target-shaped circuit files (CircuitDef.retarget): `loadCircuitFile(file, target)` builds the
 * circuit's retarget form for the target, and the CLI commands that compile for a target (compile,
 * check, targets --fit) pass theirs; without a target (or without retarget) the default export is
 * built. The chip circuits use it to split their data RAM into banks that fit the target's layers.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from './helpers/cli.ts';
import { buildCircuit, loadCircuitFile } from '../src/dsl/load.ts';
import { resolveTarget } from '../src/model/targets.ts';
import cpu, { memBankWordsFor } from '../src/cpu/cpu.ts';

let dir = '';
let file = '';
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-retarget-'));
  file = path.join(dir, 'shaped.ts');
  const dsl = path.resolve('src/dsl/index.ts');
  // A RAM of as many rows as the target has GDN key heads; the default has 2. The note names it.
  fs.writeFileSync(file, `import { defineCircuit, type TargetShape } from ${JSON.stringify(dsl)};
const shaped = (rows: number) => defineCircuit({ name: 'shaped', vocab: 8, notes: [\`rows: \${rows}\`] }, (c) => {
  const x = c.tokenField('x', (t) => t % 2, [0, 1]);
  const r = c.ram('r', { rows, fields: [2] });
  r.write(c.constant(0), [x]);
  c.emit([c.table('y', [r.read(c.constant(0))[0]!], (v) => v, [0, 1])]);
});
export default { ...shaped(2), retarget: (t: TargetShape) => shaped(t.linearNumKeyHeads) };
`);
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('retarget', () => {
  it('loadCircuitFile builds the default without a target and the retarget form with one', async () => {
    expect((await loadCircuitFile(file)).notes).toEqual(['rows: 2']);
    const ir = await loadCircuitFile(file, { linearNumKeyHeads: 5, linearKeyHeadDim: 32 });
    expect(ir.notes).toEqual(['rows: 5']);
    expect(ir.rams[0]!.rows).toBe(5);
  });

  it('chipc compile --target and chipc targets --fit use the target\'s form', async () => {
    const tiny = resolveTarget('tiny').config;
    const j = await cli('compile', file, '--target', 'tiny', '--json');
    expect(j.code).toBe(0);
    expect(JSON.parse(j.out).notes).toEqual([`rows: ${tiny.linearNumKeyHeads}`]);
    const f = await cli('targets', 'tiny', '--fit', file, '--json');
    expect(f.code).toBe(0);
    expect(JSON.parse(f.out).results[0].fits).toBe(true);
  });

  it('the chip circuit splits its 32 KiB data RAM into four banks of at most one layer of the target', () => {
    for (const name of ['chip-test', 'qwen3.5-4b']) {
      const t = resolveTarget(name).config;
      const ir = buildCircuit(cpu.retarget!(t), 'cpu');
      const banks = ir.rams.filter((r) => /^mem\d*$/.test(r.name));
      expect(banks.every((b) => b.rows <= memBankWordsFor(t))).toBe(true);
      expect(banks.reduce((s, b) => s + b.rows, 0)).toBe(8192);
    }
    // Without a target: four interleaved banks of 2,048 rows.
    expect(buildCircuit(cpu, 'cpu').rams.filter((r) => /^mem\d*$/.test(r.name)).map((r) => r.rows)).toEqual([2048, 2048, 2048, 2048]);
  });
});
