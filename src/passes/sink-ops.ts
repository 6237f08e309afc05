/**
 * Pass — sink-ops: FFN ops moved later, toward their readers, where that shortens what is alive.
 * The schedule places every op as early as its inputs allow, so a value computed early and read
 * late holds its slot through every sublayer between (the ALU's case conditions, decoded in layer
 * 4 and read by the result's choice in layer 8, held 24 slots through the CPU's widest layers).
 * This pass walks the FFN ops from the latest sublayer back; each may move to a later FFN
 * sublayer, no later than the one before its first reader (LM head dims are read after the last
 * layer), in a layer with FFN units to spare. Moving from sublayer c to s frees its outputs' slots
 * for s − c sublayers each and holds each input whose last reader it becomes until s; the op takes
 * the latest sublayer with the largest net saving when that is not negative (a move that saves
 * nothing itself lets the other readers of the same input follow: the ALU's case conditions). The
 * layer count, every op's inputs and outputs and their values are unchanged: only when values are
 * computed moves, never past a reader. Adds to the schedule: later sublayers for some FFN ops (`producedAt`, `bornAt` follow).
 */
import type { FfnOp, LoweredCircuit } from '../lower/lowered.ts';
import { writeSublayers, type LayerResources, type Schedule } from './schedule.ts';

export function sinkOps(lc: LoweredCircuit, sched: Schedule, res: LayerResources): Schedule {
  const END = 2 * sched.numLayers; // LM head dims are read here, after the last layer
  const sublayer = sched.sublayer.slice();
  const usage = sched.usage.map((u) => ({ ...u }));
  const readers: number[][] = Array.from({ length: lc.dims.length }, () => []);
  const opReads = lc.ops.map((op) => [...new Set(op.reads)]);
  for (const op of lc.ops) for (const d of opReads[op.id]!) readers[d]!.push(op.id);
  const toLmHead = new Uint8Array(lc.dims.length);
  for (const d of lc.lmHeadDims) toLmHead[d] = 1;
  // the sublayer after which dim d is no longer read, ignoring reader `skip`
  const endWithout = (d: number, skip: number): number => {
    let e = toLmHead[d] === 1 ? END : -Infinity;
    for (const r of readers[d]!) if (r !== skip && sublayer[r]! > e) e = sublayer[r]!;
    return e;
  };
  const order = lc.ops.filter((op): op is FfnOp => op.kind === 'ffn').sort((a, b) => sublayer[b.id]! - sublayer[a.id]! || b.id - a.id);
  for (const op of order) {
    const cur = sublayer[op.id]!;
    let latest = END - 1;
    for (const w of op.writes) {
      if (toLmHead[w] === 1) continue;
      for (const r of readers[w]!) latest = Math.min(latest, sublayer[r]! - 1);
    }
    if (latest % 2 === 0) latest--;
    if (latest <= cur) continue;
    const units = op.units.length;
    const inputEnds = opReads[op.id]!.map((d) => Math.max(endWithout(d, op.id), cur));
    let best = cur;
    let bestGain = 0;
    for (let s = cur + 2; s <= latest; s += 2) {
      const L = s >> 1;
      if (usage[L]!.units + units > res.ffnUnits - (res.ffnReserve?.[L] ?? 0)) continue;
      let gain = op.writes.length * (s - cur);
      for (const e of inputEnds) if (s > e) gain -= s - e;
      if (gain >= bestGain) {
        bestGain = gain;
        best = s;
      }
    }
    if (best === cur) continue;
    usage[cur >> 1]!.units -= units;
    usage[best >> 1]!.units += units;
    sublayer[op.id] = best;
  }
  return { ...sched, sublayer, ...writeSublayers(lc, sublayer), usage };
}
