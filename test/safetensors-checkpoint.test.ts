/**
 * openCheckpoint: a single file, a directory with model.safetensors, and a sharded directory whose
 * index is validated against the shards (one mutated directory per rule, asserting its code).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openCheckpoint } from '../src/safetensors/checkpoint.ts';
import { denseSource, writeCheckpoint, writeSafetensors, zerosSource } from '../src/safetensors/writer.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-st-ckpt-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));
let n = 0;

/** A 2-shard checkpoint: a, b in shard 1; c in shard 2. Returns its directory. */
function sharded(): string {
  const dir = path.join(tmp, `ck${n++}`);
  writeCheckpoint(dir, [zerosSource('a', 'U8', [8]), zerosSource('b', 'U8', [8]), zerosSource('c', 'U8', [16])], { maxShardSize: 16 });
  return dir;
}
const S1 = 'model-00001-of-00002.safetensors';
const S2 = 'model-00002-of-00002.safetensors';
const indexPath = (dir: string): string => path.join(dir, 'model.safetensors.index.json');
const setIndex = (dir: string, text: string): void => fs.writeFileSync(indexPath(dir), text);
const wm = (m: Record<string, string>): string => JSON.stringify({ metadata: { total_size: 32 }, weight_map: m });

describe('openCheckpoint', () => {
  it('opens a file, a single-file directory and a sharded directory', () => {
    const dir = sharded();
    const st = openCheckpoint(dir);
    expect(st.names).toEqual(['a', 'b', 'c']);
    expect(st.info('c').byteLength).toBe(16);
    expect(Array.from(st.readBytes('c', 0, 2))).toEqual([0, 0]);
    expect([...st.chunks('c', 5)].map((c) => c.length)).toEqual([5, 5, 5, 1]);
    expect(() => st.info('zz')).toThrow(expect.objectContaining({ code: 'safetensors.no-tensor' }));
    st.close();
    const f = path.join(tmp, `single${n++}.safetensors`);
    writeSafetensors(f, [denseSource('w', 'F32', [1], new Float32Array([4]))]);
    const s2 = openCheckpoint(f);
    expect(Array.from(s2.readF32('w'))).toEqual([4]);
    s2.close();
  });

  const rules: [string, (dir: string) => void, string][] = [
    ['index not JSON', (d) => setIndex(d, '{"weight_map": '), 'checkpoint.index-json'],
    ['no weight_map', (d) => setIndex(d, '{"metadata": {}}'), 'checkpoint.index-weight-map'],
    ['duplicate key in weight_map', (d) => setIndex(d, `{"weight_map": {"a": "${S1}", "a": "${S1}", "b": "${S1}", "c": "${S2}"}}`), 'checkpoint.index-duplicate'],
    ['shard name with a path', (d) => setIndex(d, wm({ a: S1, b: S1, c: `../${S2}` })), 'checkpoint.index-shard-name'],
    ['shard name not a string', (d) => setIndex(d, '{"weight_map": {"a": 1}}'), 'checkpoint.index-shard-name'],
    ['referenced shard missing', (d) => fs.rmSync(path.join(d, S2)), 'checkpoint.index-shard-missing'],
    ['index lists a tensor its shard lacks', (d) => setIndex(d, wm({ a: S1, b: S1, c: S2, x: S2 })), 'checkpoint.index-tensor-missing'],
    ['shard holds a tensor the index omits', (d) => setIndex(d, wm({ a: S1, c: S2 })), 'checkpoint.index-tensor-unlisted'],
    ['index assigns a tensor to the wrong shard', (d) => setIndex(d, wm({ a: S1, b: S2, c: S2 })), 'checkpoint.index-tensor-unlisted'],
    ['a tensor stored in two shards', (d) => writeSafetensors(path.join(d, S2), [zerosSource('c', 'U8', [16]), zerosSource('a', 'U8', [8])]), 'checkpoint.index-tensor-duplicate'],
    ['a corrupt shard', (d) => fs.appendFileSync(path.join(d, S2), 'x'), 'safetensors.trailing-bytes'],
    ['both model.safetensors and an index', (d) => writeSafetensors(path.join(d, 'model.safetensors'), []), 'checkpoint.ambiguous'],
    ['neither file', (d) => { fs.rmSync(indexPath(d)); }, 'checkpoint.not-found'],
  ];
  for (const [what, mutate, want] of rules) {
    it(`${what} → ${want}`, () => {
      const dir = sharded();
      mutate(dir);
      expect(() => openCheckpoint(dir)).toThrow(expect.objectContaining({ code: want }));
    });
  }
  it('a missing path → checkpoint.not-found', () => {
    expect(() => openCheckpoint(path.join(tmp, 'nope'))).toThrow(expect.objectContaining({ code: 'checkpoint.not-found' }));
  });
});
