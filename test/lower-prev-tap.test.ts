/**
 * Delays of delays (src/passes/lower-prev.ts): previous(previous(x)) with one default is lowered
 * as one delay that reads x through the causal conv's tap two positions back (three for three),
 * not as two delays in a row; with different defaults it keeps the chain. Checked: the lowered
 * GDN ops (how many, their tap offsets), the compiled weights against the IR interpreter bit for
 * bit at every placed signal (f32, bf16; positions 0 and 1 where the taps see nothing), and the
 * interpreter against the plain definition of the delays.
 */
import { describe, expect, it } from 'vitest';
import { defineCircuit } from '../src/dsl/index.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import { compileCircuit } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { checkCompiled } from '../src/verify/check.ts';
import { Interpreter } from '../src/ir/interpret.ts';

const BOS = 31;
function circuit(innerDefault: number) {
  return defineCircuit({ name: 'taps', vocab: 32, bos: BOS }, (c) => {
    const d = c.tokenField('d', (t) => (t === BOS ? 0 : t & 7), [0, 7]);
    const p1 = c.previous(d, innerDefault).named('p1');
    const p2 = c.previous(p1, 5).named('p2');
    const p3 = c.previous(p2, 5).named('p3');
    c.emit([c.table('mix', [p2, p3], (a, b) => (a + 3 * b) % 32, [0, 31])]);
  });
}

function taps(res: ReturnType<typeof compileCircuit>): number[] {
  return res.lowered.ops.filter((o) => o.kind === 'gdn').map((o) => o.kind === 'gdn' ? o.heads.flatMap((h) => h.values.map((v) => v?.vTapOffset ?? 0)).find((x) => x > 0) ?? 0 : 0).sort();
}

describe('delay of a delay through a deeper conv tap', () => {
  const target = { ...resolveTarget('tiny').config, vocabSize: 64 };
  const tokens = [BOS, 3, 7, 1, 1, 6, 2, 0, 5, 4, 7, 7, 3];

  for (const innerDefault of [5, 0]) {
    const res = compileCircuit(buildCircuit(circuit(innerDefault), 'taps'), target);
    it(`inner default ${innerDefault}: ${innerDefault === 5 ? 'one delay each at taps 2 and 3' : 'p2 and p3 chain on p1'}`, () => {
      // p2 = previous(previous(d)) and p3 = previous(p2) read d at t − 2 and t − 3 when all defaults
      // agree; with p1's default 0 ≠ 5, p2 reads p1 (tap 1) and p3 reads p1 through tap 2.
      expect(taps(res)).toEqual(innerDefault === 5 ? [2, 3] : [1, 1, 2]);
    });
    it(`inner default ${innerDefault}: weights = interpreter bit for bit, interpreter = the definition`, () => {
      for (const profile of ['f32', 'bf16'] as const) {
        const chk = checkCompiled(res, tokens, { profile });
        expect(chk.mismatches).toEqual([]);
        expect(chk.signalsCompared).toBeGreaterThan(tokens.length);
      }
      const steps = new Interpreter(res.ir).run(tokens);
      const id = (n: string) => res.ir.nodes.find((x) => x.name === n)!.id;
      const d = tokens.map((t) => (t === BOS ? 0 : t & 7));
      const p1 = d.map((_, t) => (t >= 1 ? d[t - 1]! : innerDefault));
      const p2 = d.map((_, t) => (t >= 1 ? p1[t - 1]! : 5));
      const p3 = d.map((_, t) => (t >= 1 ? p2[t - 1]! : 5));
      tokens.forEach((_, t) => {
        expect(steps[t]!.values[id('p2')]).toBe(p2[t]);
        expect(steps[t]!.values[id('p3')]).toBe(p3[t]);
      });
    });
  }
});
