/**
 * Pass — pack residual slots by liveness. A virtual dim occupies its slot from the sublayer that
 * writes it (`birth`; −1 for the embedding) through the sublayer that clears it (`end`): the
 * residual stream is additive, so a slot is reusable only after an FFN unit subtracts the dead
 * value (gadgets: `clear`). The clear runs in the first FFN sublayer at or after the dim's last
 * reader (the same FFN when the last reader is an FFN: it reads the value before adding −value),
 * and never in the FFN that writes the value. Dims the LM head reads live to the end.
 *
 * Intervals [birth, end] are closed; two dims conflict when their intervals overlap. Colouring
 * them greedily in order of birth with the lowest free slot uses exactly as many slots as the
 * largest number of intervals alive at one sublayer (interval graphs are perfect), which is the
 * figure `chipc compile --report` prints as "live max". Adds to the lowered circuit: the slot of
 * every dim and the list of clears (dim, sublayer) needed where a slot is reused.
 */
import type { LoweredCircuit } from '../lower/lowered.ts';
import type { Schedule } from './schedule.ts';

export interface Packing {
  /** Slot index (0-based, before the frame offset) of every vdim. */
  slot: Int32Array;
  slotsUsed: number;
  /** Largest number of dims alive at one sublayer (computed by an independent sweep). */
  liveMax: number;
  /** Per sublayer boundary −1 … 2·layers−1: dims alive there (for the report and the SVG). */
  liveAt: number[];
  birth: Int32Array;
  end: Int32Array;
  /** Clears to emit: the dim and the FFN sublayer that subtracts it. */
  clears: { dim: number; sublayer: number }[];
}

export function packSlots(lc: LoweredCircuit, sched: Schedule): Packing {
  const n = lc.dims.length;
  const END = 2 * sched.numLayers;
  const birth = Int32Array.from(sched.producedAt);
  const lastUse = new Int32Array(n).fill(-3);
  for (const op of lc.ops) {
    const s = sched.sublayer[op.id]!;
    for (const d of op.reads) lastUse[d] = Math.max(lastUse[d]!, s);
  }
  for (const d of lc.lmHeadDims) lastUse[d] = END;
  const end = new Int32Array(n);
  const used: number[] = [];
  for (let d = 0; d < n; d++) {
    if (birth[d]! < -1) continue; // never produced (unused encoding): takes no slot
    used.push(d);
    if (lastUse[d] === END) {
      end[d] = END;
      continue;
    }
    const afterRead = lastUse[d]! >= 0 ? lastUse[d]! | 1 : -1;
    // Not in the FFN that writes it: the earliest FFN strictly after its birth.
    const afterBirth = birth[d]! % 2 === 1 || birth[d]! === -1 ? birth[d]! + 2 : birth[d]! + 1;
    end[d] = Math.max(afterRead, birth[d]! === -1 ? 1 : afterBirth);
    if (end[d]! >= END) end[d] = END;
  }

  // Independent sweep: live count per sublayer.
  const liveAt = new Array<number>(END + 2).fill(0);
  for (const d of used) for (let t = birth[d]!; t <= Math.min(end[d]!, END); t++) liveAt[t + 1]!++;
  const liveMax = Math.max(0, ...liveAt);

  // Greedy colouring by birth, lowest free slot first.
  const order = used.slice().sort((a, b) => birth[a]! - birth[b]! || a - b);
  const slot = new Int32Array(n).fill(-1);
  const free: number[] = [];
  const active: number[] = [];
  let slotsUsed = 0;
  const lastOwner: number[] = [];
  const clears: { dim: number; sublayer: number }[] = [];
  for (const d of order) {
    for (let i = active.length - 1; i >= 0; i--) {
      const a = active[i]!;
      if (end[a]! < birth[d]!) {
        free.push(slot[a]!);
        active.splice(i, 1);
      }
    }
    free.sort((x, y) => x - y);
    let s: number;
    if (free.length > 0) s = free.shift()!;
    else s = slotsUsed++;
    const prev = lastOwner[s];
    if (prev !== undefined) clears.push({ dim: prev, sublayer: end[prev]! });
    lastOwner[s] = d;
    slot[d] = s;
    active.push(d);
  }
  clears.sort((a, b) => a.sublayer - b.sublayer || a.dim - b.dim);
  return { slot, slotsUsed, liveMax, liveAt, birth, end, clears };
}
