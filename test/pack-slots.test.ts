/**
 * packSlots (src/passes/pack-slots.ts) on random liveness: every produced dim gets a slot, two dims
 * that share a slot are never alive at the same sublayer, the slot count equals the largest number
 * of dims alive at once (greedy colouring of an interval graph in order of birth is optimal), and
 * the slots are exactly those of the rule written out plainly here (dims in order of birth, then
 * index; each takes the lowest slot whose dims have all ended before its birth).
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { packSlots } from '../src/passes/pack-slots.ts';
import type { LoweredCircuit } from '../src/lower/lowered.ts';
import type { Schedule } from '../src/passes/schedule.ts';

interface Case { layers: number; births: number[]; reads: [number, number][]; lmHead: number[] }

/** The lowered circuit and schedule packSlots reads: dims with births, ops (one per read) at sublayers. */
function inputs(c: Case): [LoweredCircuit, Schedule] {
  const ops = c.reads.map(([dim, sublayer], id) => ({ id, reads: [dim], sublayer }));
  const lc = { dims: c.births.map(() => ({})), ops, lmHeadDims: c.lmHead } as unknown as LoweredCircuit;
  const sched = { numLayers: c.layers, producedAt: Int32Array.from(c.births), bornAt: Int32Array.from(c.births), sublayer: ops.map((o) => o.sublayer) } as unknown as Schedule;
  return [lc, sched];
}

/** The plain rule: in order of birth (then index), the lowest slot free at the dim's birth. */
function plainSlots(births: number[], end: Int32Array): number[] {
  const order = births.map((b, d) => d).filter((d) => births[d]! >= -1).sort((a, b) => births[a]! - births[b]! || a - b);
  const owners: number[][] = [];
  const slot = births.map(() => -1);
  for (const d of order) {
    let s = owners.findIndex((ds) => ds.every((o) => end[o]! < births[d]!));
    if (s < 0) s = owners.push([]) - 1;
    owners[s]!.push(d);
    slot[d] = s;
  }
  return slot;
}

const caseArb = fc.integer({ min: 1, max: 6 }).chain((layers) => fc.record({
  layers: fc.constant(layers),
  births: fc.array(fc.integer({ min: -2, max: 2 * layers - 1 }), { minLength: 1, maxLength: 120 }),
  reads: fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 2 * layers - 1 })), { maxLength: 200 }),
  lmHead: fc.array(fc.nat(), { maxLength: 6 }),
})).map((c) => ({
  ...c,
  // reads and LM-head dims name existing dims; a dim is read only after its birth
  reads: c.reads.map(([d, s]) => [d % c.births.length, s] as [number, number]).filter(([d, s]) => s > c.births[d]!),
  lmHead: c.lmHead.map((d) => d % c.births.length).filter((d) => c.births[d]! >= -1),
}));

describe('packSlots', () => {
  it('random liveness: conflict-free, as many slots as dims alive at once, the plain rule\'s slots', () => {
    fc.assert(fc.property(caseArb, (c) => {
      const p = packSlots(...inputs(c));
      const used = c.births.map((b, d) => d).filter((d) => c.births[d]! >= -1);
      for (const d of c.births.keys()) expect(p.slot[d]! >= 0, `dim ${d}`).toBe(c.births[d]! >= -1);
      for (const a of used) {
        expect(p.end[a]!).toBeGreaterThanOrEqual(p.birth[a]!);
        for (const b of used) {
          if (a < b && p.slot[a] === p.slot[b]) {
            const disjoint = p.end[a]! < p.birth[b]! || p.end[b]! < p.birth[a]!;
            expect(disjoint, `dims ${a} and ${b} share slot ${p.slot[a]}`).toBe(true);
          }
        }
      }
      let alive = 0;
      for (let t = -1; t <= 2 * c.layers; t++) alive = Math.max(alive, used.filter((d) => p.birth[d]! <= t && t <= p.end[d]!).length);
      expect(p.liveMax).toBe(alive);
      expect(p.slotsUsed).toBe(alive);
      expect(Array.from(p.slot)).toEqual(plainSlots(c.births, p.end));
      // a reused slot clears its previous owner at that owner's end
      for (const { dim, sublayer } of p.clears) expect(sublayer).toBe(p.end[dim]);
    }), { numRuns: 300, seed: 20261203 });
  });

  it('a hand case: the LM head keeps its dims to the end; a dim read in an FFN is cleared there', () => {
    // 2 layers (sublayers 0 … 3, end 4): dim 0 embedded (−1), read by the FFN of layer 0 (1);
    // dim 1 written by mixer 0 (0), read by mixer 1 (2); dim 2 written by FFN 0 (1), in the LM head;
    // dim 3 written by mixer 1 (2), read by FFN 1 (3); dim 4 never produced.
    const p = packSlots(...inputs({ layers: 2, births: [-1, 0, 1, 2, -2], reads: [[0, 1], [1, 2], [3, 3]], lmHead: [2] }));
    expect(Array.from(p.end.subarray(0, 4))).toEqual([1, 3, 4, 3]);
    expect(Array.from(p.slot)).toEqual([0, 1, 2, 0, -1]);
    expect(p.slotsUsed).toBe(3);
    expect(p.clears).toEqual([{ dim: 0, sublayer: 1 }]);
  });
});
