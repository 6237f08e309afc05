/**
 * `chipc targets --fit CIRCUIT [TARGET]`: per target, whether a circuit fits and what it costs.
 * Fits are checked against an emitted checkpoint read back (non-zeros counted element by element,
 * hidden size from the tensor shapes); not-fits use targets made here from tiny.json with one
 * resource shrunk, so the expected failing resource is known independently.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cli } from './helpers/cli.ts';
import { openCheckpoint } from '../src/safetensors/checkpoint.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-targets-fit-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const ADDER = 'circuits/examples/adder.ts'; // vocab 257; its widest table needs 15 FFN units in one layer

/** tiny.json with some keys replaced, written as a config file in tmp. */
function tinyWith(name: string, changes: Record<string, unknown>): string {
  const cfg = JSON.parse(fs.readFileSync('targets/tiny.json', 'utf8')) as Record<string, unknown>;
  const file = path.join(tmp, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify({ ...cfg, ...changes }));
  return file;
}

interface Fit {
  target: string;
  fits: boolean;
  code?: string;
  resource?: string;
  message?: string;
  layers?: number;
  hidden?: number;
  targetHidden?: number;
  widened?: boolean;
  slots?: number;
  ffnUnits?: number;
  nonZeros?: number;
}

async function fit(...args: string[]): Promise<{ code: number; results: Fit[] }> {
  const r = await cli('targets', '--fit', ADDER, ...args, '--json');
  expect(r.err).toBe('');
  return { code: r.code, results: (JSON.parse(r.out) as { results: Fit[] }).results };
}

describe('chipc targets --fit', () => {
  it('a fit at tiny: its costs match the checkpoint that compile emits', async () => {
    const { code, results } = await fit('tiny');
    expect(code).toBe(0);
    expect(results).toHaveLength(1);
    const r = results[0]!;
    expect(r).toMatchObject({ target: 'tiny', fits: true, hidden: 64, targetHidden: 64, widened: false });
    const dir = path.join(tmp, 'adder-tiny');
    expect((await cli('compile', ADDER, '--target', 'tiny', '-o', dir, '--no-progress')).code).toBe(0);
    const store = openCheckpoint(dir);
    try {
      let nonZeros = 0;
      let layers = 0;
      for (const name of store.names) {
        for (const v of store.readF32(name)) if (v !== 0) nonZeros++;
        const m = /^model\.layers\.(\d+)\./.exec(name);
        if (m) layers = Math.max(layers, Number(m[1]) + 1);
      }
      expect(r.nonZeros).toBe(nonZeros);
      expect(r.layers).toBe(layers);
      expect(store.info('model.embed_tokens.weight').shape).toEqual([512, r.hidden]);
    } finally {
      store.close();
    }
  });

  it('a fit at a big target (qwen3.5-4b): its own hidden size, not widened', async () => {
    const { code, results } = await fit('qwen3.5-4b');
    expect(code).toBe(0);
    expect(results[0]).toMatchObject({ target: 'qwen3.5-4b', fits: true, hidden: 2560, targetHidden: 2560, widened: false });
    expect(results[0]!.slots).toBeGreaterThan(0);
  });

  it('widens a hidden size too small for the circuit, and says so', async () => {
    const narrow = tinyWith('narrow', { hidden_size: 8 });
    const { results } = await fit(narrow);
    const r = results[0]!;
    expect(r.fits).toBe(true);
    expect(r.targetHidden).toBe(8);
    expect(r.widened).toBe(true);
    expect(r.hidden!).toBeGreaterThan(r.slots!); // the slots plus the frame's anchor / constant dims
    const human = await cli('targets', '--fit', ADDER, narrow);
    expect(human.out).toMatch(new RegExp(`${r.hidden} \\(widened from 8\\)`));
  });

  it('a vocabulary smaller than the circuit\'s is widened (to a multiple of 256) and reported', async () => {
    const small = tinyWith('small-vocab', { vocab_size: 200 });
    const { code, results } = await fit(small);
    expect(code).toBe(0);
    const r = results[0]!;
    if (!r.fits) throw new Error('expected a fit');
    // the adder's alphabet has 257 ids: the next multiple of 256 is 512
    expect(r).toMatchObject({ vocab: 512, targetVocab: 200, vocabWidened: true });
    const human = await cli('targets', '--fit', ADDER, small);
    expect(human.code).toBe(0);
    expect(human.out).toMatch(/512 \(widened from 200\)/);
  });

  it('a clear not-fit for too few FFN units per layer', async () => {
    const few = tinyWith('few-units', { intermediate_size: 4 });
    const { code, results } = await fit(few);
    expect(code).toBe(1);
    expect(results[0]).toMatchObject({ fits: false, code: 'fit.units', resource: 'units' });
    expect(results[0]!.message).toMatch(/the target has 4/);
  });

  it('refuses an unknown target before compiling anything, and a broken circuit is an error, not a not-fit', async () => {
    const r = await cli('targets', '--fit', ADDER, 'no-such-target');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/target.unknown/);
    const missing = await cli('targets', '--fit', path.join(tmp, 'missing.ts'), 'tiny');
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/does not exist/);
  });
});
