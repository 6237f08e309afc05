/**
 * Pass — schedule and pack to a fixpoint, with sink-ops between them unless it is turned off (the
 * sunk schedule is kept when it packs into no more slots than the early one). Scheduling budgets
 * each layer's FFN units for the ops only; packing then adds slot clears, one FFN unit each, in
 * the layers where slots are reused.
 * When a layer's ops and clears overflow its FFN, that many units are reserved in the layer and
 * the circuit is scheduled (and packed) again. Reservations only grow, so this ends; a circuit
 * whose clears still overflow after 50 rounds is a `fit.units` error.
 */
import type { ModelConfig } from '../model/config.ts';
import { ChipcError } from '../util/errors.ts';
import type { LoweredCircuit } from '../lower/lowered.ts';
import { schedule, type Schedule } from './schedule.ts';
import { packSlots, type Packing } from './pack-slots.ts';
import { sinkOps } from './sink-ops.ts';

export function scheduleAndPack(
  lowered: LoweredCircuit, target: ModelConfig, opts: { sinkOps?: boolean } = {},
): { schedule: Schedule; packing: Packing } {
  const reserve: number[] = [];
  for (let round = 0; ; round++) {
    const res = {
      ffnUnits: target.intermediateSize,
      gdnKeyHeads: target.linearNumKeyHeads,
      attnKvHeads: target.numKeyValueHeads,
      ffnReserve: reserve,
    };
    const early = schedule(lowered, res);
    const packedEarly = packSlots(lowered, early);
    let sched = early;
    let packing = packedEarly;
    if (opts.sinkOps !== false) {
      // sinking moves ops one at a time by a local estimate; the packing decides whether it paid
      const sunk = sinkOps(lowered, early, res);
      const packedSunk = packSlots(lowered, sunk);
      if (packedSunk.slotsUsed <= packedEarly.slotsUsed) {
        sched = sunk;
        packing = packedSunk;
      }
    }
    const clears = new Array<number>(sched.numLayers).fill(0);
    for (const c of packing.clears) clears[Math.floor(c.sublayer / 2)]!++;
    let over = false;
    sched.usage.forEach((u, L) => {
      const excess = u.units + clears[L]! - target.intermediateSize;
      if (excess > 0) {
        reserve[L] = (reserve[L] ?? 0) + excess;
        over = true;
      }
    });
    if (!over) return { schedule: sched, packing };
    if (round >= 50) throw new ChipcError('fit.units', 'slot clears keep overflowing the FFN budget; the circuit is too wide for this target');
  }
}
