/**
 * Quiet GDN steps (src/exec/gdn-tracked.ts quietStep): a tracked step whose input projections
 * recomputed no row, with no conv channel active and no value head to step, ends after the
 * projections and hands out its last result. On the chip that is most tokens of the RAM banks at
 * rest. The runs with them (ExecTuning.quietSteps 1, the default) and without (0) must agree bit
 * for bit in every residual and every recurrent state, token by token.
 */
import { describe, expect, it } from 'vitest';
import { Executor } from '../src/exec/executor.ts';
import { gdnConvSnapshot } from '../src/exec/gdn-tracked.ts';
import { densifyMatrix, sparsifyMatrix } from '../src/model/random-weights.ts';
import { decodeLockstep } from './helpers/lockstep.ts';
import { sparseRandomModel } from './helpers/random-models.ts';
import { lockstepChipRun, lockstepProgram } from './helpers/chip-lockstep.ts';

const bits = (a: Float32Array): number[] => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));

describe('quiet GDN steps on the chip (chip-test)', () => {
  it.each(['hello', 'crc32'])('%s: the same residuals, states and tokens with and without them; most RAM-bank steps are quiet', async (name) => {
    const { model, prog } = await lockstepProgram(name);
    const r = await lockstepChipRun(model, prog, {}, { quietSteps: 0 }, 250);
    // and every GDN layer's conv windows as the runs leave them (lazy channels caught up by step count)
    const cfg = model.weights.config;
    const windows = (ex: Executor) => cfg.layerTypes.flatMap((t, l) => (t === 'linear_attention' ? [bits(gdnConvSnapshot(ex.gdnCacheOf(l), cfg.linearConvKernelDim))] : []));
    expect(r.mismatch).toBeNull();
    expect(r.b.ex.stats.gdnQuietSteps).toBe(0);
    expect(r.a.ex.stats.gdnQuietSteps).toBeGreaterThan(120); // RAM-bank layers at rest at most of the 250 tokens
    expect(r.events).toBeGreaterThan(2500);
    expect(r.states).toBeGreaterThan(100_000);
    expect(r.a.ids).toEqual(r.b.ids);
    expect(windows(r.a.ex)).toEqual(windows(r.b.ex));
  }, 120_000);

  it('a random model fed each token six times: steps with a head to step or a conv window still moving are not quiet (sparse = dense)', () => {
    // When a token repeats, the first GDN layer's projections recompute no row. With β ≠ 0 its
    // heads write S at every step; with its v rows empty S stays +0 and no head steps, but for
    // K − 1 steps after a token changes its q / k channels' windows still move (every tap weighs):
    // those steps are not quiet either, and the conv windows must end as the dense path's
    for (const emptyV of [false, true]) {
      const w = sparseRandomModel(31);
      const cfg = w.config;
      const li = cfg.layerTypes.indexOf('linear_attention');
      const m = w.layers[li]!.mixer;
      if (m.kind !== 'linear_attention') throw new Error('no GDN layer');
      const keyDim = cfg.linearNumKeyHeads * cfg.linearKeyHeadDim;
      if (emptyV) {
        const d = densifyMatrix(m.inProjQkv);
        d.dense!.fill(0, 2 * keyDim * d.cols);
        m.inProjQkv = { rows: d.rows, cols: d.cols, csr: sparsifyMatrix({ rows: d.rows, cols: d.cols, dense: d.dense }).csr };
      }
      for (const quietSteps of [1, 0]) {
        const s = new Executor(w, { path: 'sparse', profile: 'f32', tuning: { quietSteps } });
        const d = new Executor(w, { path: 'dense', profile: 'f32' });
        decodeLockstep(s, d, [5, 10], 36, (i) => (Math.floor(i / 6) * 37 + 11) % cfg.vocabSize);
        expect(s.gdnCacheOf(li).track, 'the tracked step ran').toBeDefined();
        for (let h = 0; h < cfg.linearNumValueHeads; h++) expect(bits(s.gdnStateCopy(li, h)), `head ${h}`).toEqual(bits(d.gdnStateCopy(li, h)));
        const K = cfg.linearConvKernelDim;
        expect(bits(gdnConvSnapshot(s.gdnCacheOf(li), K))).toEqual(bits(gdnConvSnapshot(d.gdnCacheOf(li), K)));
        if (emptyV && quietSteps === 1) expect(s.stats.gdnQuietSteps, 'the settled steps of the repeats').toBeGreaterThan(0);
      }
    }
  });
});
