/**
 * schedule-and-pack's repairs (src/passes/schedule-and-pack.ts): slot clears that overflow a
 * layer's FFN are deferred to the next layer's (packSlots' clearAt) before units are reserved,
 * and the ops that resources delayed on the critical path (criticalDelayedOps) get their height
 * boosted when a fitting schedule comes out longer than an earlier round's. On the generic RV32
 * chip at qwen3.5-4b the repairs give 11 layers where reservations alone give 12 (the control,
 * `repairSchedule: false`); either way every layer's ops and clears fit its FFN, every op sits
 * after what it reads, and every clear after its dim's last reader. At qwen3-next-80b they gain no
 * layer and would cost slots, so the reservations' schedule is kept.
 */
import { describe, expect, it } from 'vitest';
import { packSlots } from '../src/passes/pack-slots.ts';
import { criticalDelayedOps } from '../src/passes/schedule-and-pack.ts';
import type { LoweredCircuit } from '../src/lower/lowered.ts';
import type { Schedule } from '../src/passes/schedule.ts';
import { compileCircuit, type CompileResult } from '../src/compile.ts';
import { buildCircuit } from '../src/dsl/load.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { cpuCircuit, memBankWordsFor } from '../src/cpu/cpu.ts';
import { defaultChipSizes } from '../src/chip/generic.ts';

/** A lowered circuit and schedule of hand-placed ops (kind, sublayer, dims read and written). */
function handCase(layers: number, births: number[], ops: { kind: 'ffn' | 'gdn'; at: number; reads: number[]; writes: number[] }[], lmHead: number[] = []) {
  const lc = { dims: births.map(() => ({})), ops: ops.map((o, id) => ({ id, kind: o.kind, reads: o.reads, writes: o.writes })), lmHeadDims: lmHead } as unknown as LoweredCircuit;
  const sched = { numLayers: layers, producedAt: Int32Array.from(births), bornAt: Int32Array.from(births), sublayer: Int32Array.from(ops.map((o) => o.at)) } as unknown as Schedule;
  return { lc, sched };
}

describe('packSlots clearAt', () => {
  it('holds a dim until the FFN it names: its clear moves there, and a later dim cannot take its slot before', () => {
    // 3 layers (sublayers 0 … 5): dim 0 embedded, read by FFN 0 (1); dim 1 born at mixer 1 (2), read at 3.
    const { lc, sched } = handCase(3, [-1, 2], [{ kind: 'ffn', at: 1, reads: [0], writes: [] }, { kind: 'ffn', at: 3, reads: [1], writes: [] }]);
    const plain = packSlots(lc, sched);
    expect(Array.from(plain.end)).toEqual([1, 3]);
    expect(Array.from(plain.slot)).toEqual([0, 0]);
    expect(plain.clears).toEqual([{ dim: 0, sublayer: 1 }]);
    const held = packSlots(lc, sched, Int32Array.from([3, -1]));
    expect(Array.from(held.end)).toEqual([3, 3]);
    expect(Array.from(held.slot)).toEqual([0, 1]);
    expect(held.slotsUsed).toBe(2);
    expect(held.clears).toEqual([]);
  });
});

describe('criticalDelayedOps', () => {
  it('walks back from the last layer through the latest inputs; a delayed mixer op leads to the mixer ops it waited behind', () => {
    // op 0 (FFN) could run at 1 but sits at 3; op 1 (GDN) reads it at 4; op 2 (GDN) reads it too
    // but waited for heads until 6; op 3 (FFN, the last layer) reads both at 7. op 4 (FFN) is
    // delayed (ready 1, at 5) but off the critical path: nothing in the last layer waits for it.
    const { lc, sched } = handCase(4, [-1, 3, 4, 6, -2, 5], [
      { kind: 'ffn', at: 3, reads: [0], writes: [1] },
      { kind: 'gdn', at: 4, reads: [1], writes: [2] },
      { kind: 'gdn', at: 6, reads: [1], writes: [3] },
      { kind: 'ffn', at: 7, reads: [2, 3], writes: [4] },
      { kind: 'ffn', at: 5, reads: [0], writes: [5] },
    ]);
    expect(criticalDelayedOps(lc, sched)).toEqual([0, 2]);
  });
});

/** The default generic chip's IR for a target. */
function genericChip(name: string) {
  const target = resolveTarget(name).config;
  const sizes = defaultChipSizes(target);
  return { target, ir: buildCircuit(cpuCircuit({ codeWords: sizes.codeBytes / 4, memWords: sizes.memBytes / 4, memBankWords: memBankWordsFor(target) }), 'src/cpu/cpu.ts') };
}

describe('the generic chip at qwen3.5-4b', () => {
  const { target, ir } = genericChip('qwen3.5-4b');
  const repaired = compileCircuit(ir, target);
  const reserved = compileCircuit(ir, target, { repairSchedule: false });

  /** Ops after what they read; every layer's ops and clears within the FFN; clears after the last read. */
  function checkFits(res: CompileResult): void {
    const { sublayer, producedAt, usage, numLayers } = res.schedule;
    const lastRead = new Int32Array(res.lowered.dims.length).fill(-1);
    for (const op of res.lowered.ops) {
      const s = sublayer[op.id]!;
      expect(s % 2).toBe(op.kind === 'ffn' ? 1 : 0);
      for (const d of op.reads) {
        expect(producedAt[d]!).toBeLessThan(s);
        lastRead[d] = Math.max(lastRead[d]!, s);
      }
    }
    const clears = new Array<number>(numLayers).fill(0);
    for (const c of res.packing.clears) {
      clears[c.sublayer >> 1]!++;
      expect(c.sublayer % 2).toBe(1);
      expect(c.sublayer).toBeGreaterThanOrEqual(lastRead[c.dim]!);
    }
    usage.forEach((u, L) => expect(u.units + clears[L]!, `layer ${L}`).toBeLessThanOrEqual(target.intermediateSize));
  }

  it('has 11 layers and at most 700 slots with the repairs, 12 layers with reservations alone', () => {
    expect(repaired.schedule.numLayers).toBe(11);
    expect(repaired.packing.slotsUsed).toBeLessThanOrEqual(700);
    expect(reserved.schedule.numLayers).toBe(12);
    checkFits(repaired);
    checkFits(reserved);
  });
});

describe('the generic chip at qwen3-next-80b', () => {
  it('keeps the reservations\' schedule where the repairs gain no layer and would cost slots', () => {
    const { target, ir } = genericChip('qwen3-next-80b');
    const repaired = compileCircuit(ir, target);
    const reserved = compileCircuit(ir, target, { repairSchedule: false });
    expect(repaired.schedule.numLayers).toBe(reserved.schedule.numLayers);
    expect(repaired.packing.slotsUsed).toBe(reserved.packing.slotsUsed);
    expect(Array.from(repaired.schedule.sublayer)).toEqual(Array.from(reserved.schedule.sublayer));
  }, 120_000);
});

describe('reservations where a layer\'s clears alone overflow', () => {
  it('a chip of 256-byte code and 1 KiB data at qwen3-next-80b fits with reservations alone, and with the repairs', () => {
    // Its layer 4 holds ops that cannot leave it and ≈ 160 clears beyond the FFN's free units: a
    // reservation that grew by each round's excess (2 units) moved no op for more than 50 rounds
    // (`fit.units`); one of at least the layer's clears moves them at once.
    const target = resolveTarget('qwen3-next-80b').config;
    const ir = buildCircuit(cpuCircuit({ codeWords: 64, memWords: 256, memBankWords: memBankWordsFor(target) }), 'src/cpu/cpu.ts');
    for (const res of [compileCircuit(ir, target, { repairSchedule: false }), compileCircuit(ir, target)]) {
      const clears = new Array<number>(res.schedule.numLayers).fill(0);
      for (const c of res.packing.clears) clears[c.sublayer >> 1]!++;
      res.schedule.usage.forEach((u, L) => expect(u.units + clears[L]!, `layer ${L}`).toBeLessThanOrEqual(target.intermediateSize));
      expect(res.schedule.numLayers).toBeLessThanOrEqual(12);
    }
  }, 120_000);
});
