/**
 * The order-invariance analysis: it must call exact rows exact and catch rows that are not, and
 * its verdict must agree with the executor (shuffled order gives the same bits where it says so).
 */
import { describe, expect, it } from 'vitest';
import { analyzeOrderInvariance } from '../src/passes/order-invariance.ts';
import { form, type LayerSpec } from '../src/lower/forms.ts';
import type { VDimInfo } from '../src/lower/lowered.ts';
import { loadCircuitFile } from '../src/dsl/load.ts';
import { compileCircuit } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';

const dim = (id: number, lo: number, hi: number): VDimInfo => ({ id, node: id, encoding: 'scalar', index: 0, lo, hi, name: `d${id}` });

describe('order invariance analysis', () => {
  it('accepts integer rows below 2^24 and flags a row whose partial sums can exceed 24 bits', () => {
    const dims = [dim(0, 0, 255), dim(1, 0, 255), dim(2, 0, 255)];
    const ok: LayerSpec = {
      mixer: { kind: 'linear_attention', heads: [] },
      ffn: [{ gate: form([{ dim: 0, coef: 128 }, { dim: 1, coef: -128 }, { dim: 2, coef: 64 }], -128), up: form([], 1), down: [] }],
    };
    const good = analyzeOrderInvariance([ok], dims);
    expect([good.rows, good.invariantRows, good.invariantMatmuls]).toEqual([2, 2, 2]); // gate and up rows
    // 2^16 · 255 + 2^-8 · 255 + …: the sum spans far more than 24 bits.
    const bad: LayerSpec = {
      mixer: { kind: 'linear_attention', heads: [] },
      ffn: [{ gate: form([{ dim: 0, coef: 65536 }, { dim: 1, coef: 2 ** -8 }, { dim: 2, coef: 1 }], 0), up: form([], 1), down: [] }],
    };
    const r = analyzeOrderInvariance([bad], dims);
    expect([r.rows, r.invariantRows]).toEqual([2, 1]); // the up row (a constant) is fine
    expect(r.notInvariant).toEqual(['layers.0.mlp.gate_proj']);
    // Verify the flagged row really rounds in some order: 65536·255 + 2^-8·255 is not a float32.
    expect(Math.fround(65536 * 255 + 255 / 256)).not.toBe(65536 * 255 + 255 / 256);
  });

  it('every matmul of every example circuit is order-invariant (and shuffled runs agree, see examples.test.ts)', async () => {
    const tiny = resolveTarget('tiny').config;
    for (const name of ['counter', 'adder', 'comparator', 'sbox', 'regfile', 'fsm']) {
      const res = compileCircuit(await loadCircuitFile(`circuits/examples/${name}.ts`), tiny);
      expect(res.invariance.notInvariant, name).toEqual([]);
      expect(res.invariance.matmuls).toBeGreaterThan(0);
    }
  });
});
