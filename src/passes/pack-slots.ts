/**
 * Pass — pack residual slots by liveness. A virtual dim occupies its slot from the sublayer that
 * first writes it (`birth`; −1 for the embedding) through the sublayer that clears it (`end`): the
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

/**
 * `clearAt` (optional, per dim): an FFN sublayer before which the dim is not cleared (−1: none) —
 * schedule-and-pack defers clears out of a layer whose FFN they would overflow.
 */
export function packSlots(lc: LoweredCircuit, sched: Schedule, clearAt?: Int32Array): Packing {
  const n = lc.dims.length;
  const END = 2 * sched.numLayers;
  const birth = Int32Array.from(sched.bornAt);
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
    end[d] = Math.max(afterRead, birth[d]! === -1 ? 1 : afterBirth, clearAt?.[d] ?? -1);
    if (end[d]! >= END) end[d] = END;
  }

  // Independent sweep: live count per sublayer.
  const liveAt = new Array<number>(END + 2).fill(0);
  for (const d of used) for (let t = birth[d]!; t <= Math.min(end[d]!, END); t++) liveAt[t + 1]!++;
  const liveMax = Math.max(0, ...liveAt);

  // Greedy colouring by birth, lowest free slot first. The live dims sit in a heap by end (the
  // ones that end before the next birth leave it, their slots freed), the free slots in a heap by
  // index: the same choices as scanning every live dim and sorting the free list, in n log n.
  const order = used.slice().sort((a, b) => birth[a]! - birth[b]! || a - b);
  const slot = new Int32Array(n).fill(-1);
  const free = new MinHeap();
  const active = new MinHeap();
  let slotsUsed = 0;
  const lastOwner: number[] = [];
  const clears: { dim: number; sublayer: number }[] = [];
  for (const d of order) {
    while (active.size > 0 && active.minKey() < birth[d]!) {
      const a = active.pop();
      free.push(slot[a]!, slot[a]!);
    }
    let s: number;
    if (free.size > 0) s = free.pop();
    else s = slotsUsed++;
    const prev = lastOwner[s];
    if (prev !== undefined) clears.push({ dim: prev, sublayer: end[prev]! });
    lastOwner[s] = d;
    slot[d] = s;
    active.push(end[d]!, d);
  }
  clears.sort((a, b) => a.sublayer - b.sublayer || a.dim - b.dim);
  return { slot, slotsUsed, liveMax, liveAt, birth, end, clears };
}

/** A binary min-heap of (key, value) pairs of integers; ties leave in any order. */
class MinHeap {
  private keys: number[] = [];
  private values: number[] = [];

  get size(): number {
    return this.keys.length;
  }

  minKey(): number {
    return this.keys[0]!;
  }

  push(key: number, value: number): void {
    const k = this.keys;
    const v = this.values;
    let i = k.length;
    k.push(key);
    v.push(value);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (k[p]! <= key) break;
      k[i] = k[p]!;
      v[i] = v[p]!;
      i = p;
    }
    k[i] = key;
    v[i] = value;
  }

  /** Removes the pair of the smallest key and returns its value. */
  pop(): number {
    const k = this.keys;
    const v = this.values;
    const top = v[0]!;
    const lastKey = k.pop()!;
    const lastValue = v.pop()!;
    const n = k.length;
    if (n === 0) return top;
    let i = 0;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && k[c + 1]! < k[c]!) c++;
      if (k[c]! >= lastKey) break;
      k[i] = k[c]!;
      v[i] = v[c]!;
      i = c;
    }
    k[i] = lastKey;
    v[i] = lastValue;
    return top;
  }
}
