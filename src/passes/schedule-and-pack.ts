/**
 * Pass — schedule and pack to a fixpoint, with sink-ops between them unless it is turned off (the
 * sunk schedule is kept when it packs into no more slots than the early one). Scheduling budgets
 * each layer's FFN units for the ops only; packing then adds slot clears, one FFN unit each, in
 * the layers where slots are reused.
 * When a layer's ops and clears overflow its FFN, the clears that do not fit are first deferred to
 * the next layer's FFN (packDeferringClears: the dead values stay in their slots a layer longer,
 * the ops where they are). Where that fails, that many units more are reserved in the layer, and
 * at least as many as the layer has clears (a reservation its ops already leave free would move no
 * op), and the circuit is scheduled (and packed) again. Reservations only grow, so this ends; a
 * circuit whose clears still overflow after 50 rounds is a `fit.units` error.
 *
 * A reservation pushes the ops with the least height out of its layer, and height counts data
 * dependences only: an op whose delay holds back a RAM in banks (one GDN layer each, so every bank
 * after the first waits for the one before) looks as if it had slack. So when a schedule that fits
 * has more layers than an earlier round's (which overflowed only by its clears), the ops that
 * resources delayed on its critical path (criticalDelayedOps) get a height boost and the circuit is
 * scheduled again, up to BOOST_ROUNDS times; the result is the fitting schedule with the fewest
 * layers (then the fewest slots), the first one found on a tie. `repair: false` (compileCircuit's
 * repairSchedule) turns deferring and boosting off: reservations only. When the repairs were used,
 * a run with reservations only is made too and the better one kept; that run is a comparison, so
 * its `fit.units` failure leaves the repaired result standing.
 */
import type { ModelConfig } from '../model/config.ts';
import { ChipcError } from '../util/errors.ts';
import type { LoweredCircuit } from '../lower/lowered.ts';
import { schedule, type Schedule } from './schedule.ts';
import { packSlots, type Packing } from './pack-slots.ts';
import { sinkOps } from './sink-ops.ts';

/** Rounds of height boosts, and the boost (sublayers) an op gets per round. */
const BOOST_ROUNDS = 8;
const BOOST = 64;

export function scheduleAndPack(
  lowered: LoweredCircuit, target: ModelConfig, opts: { sinkOps?: boolean; repair?: boolean } = {},
): { schedule: Schedule; packing: Packing } {
  const sink = opts.sinkOps !== false;
  if (opts.repair === false) return fixpoint(lowered, target, sink, false);
  const repaired = fixpoint(lowered, target, sink, true);
  // A run no repair touched is the plain run, round for round. Otherwise the repairs can cost
  // slots where they gain no layer (a deferred clear holds its value longer, a boosted op is
  // computed earlier): keep the plain result unless the repaired one is better.
  if (!repaired.repairedAny) return repaired;
  let plain: Packed;
  try {
    plain = fixpoint(lowered, target, sink, false);
  } catch (e) {
    // the plain run is only a comparison: where reservations alone do not fit, the repairs did
    if (e instanceof ChipcError && e.code === 'fit.units') return repaired;
    throw e;
  }
  return better(repaired, plain) ? repaired : plain;
}

type Packed = { schedule: Schedule; packing: Packing };

/** Fewer layers, or as many in fewer slots. */
function better(a: Packed, b: Packed): boolean {
  return a.schedule.numLayers < b.schedule.numLayers
    || (a.schedule.numLayers === b.schedule.numLayers && a.packing.slotsUsed < b.packing.slotsUsed);
}

/** Schedule and pack to a fixpoint, with the repairs or reservations alone; `repairedAny`: a clear was deferred or an op boosted. */
function fixpoint(lowered: LoweredCircuit, target: ModelConfig, sink: boolean, repair: boolean): Packed & { repairedAny: boolean } {
  let repairedAny = false;
  const reserve: number[] = [];
  const boost = new Int32Array(lowered.ops.length);
  let fewest = Infinity;
  let boostRounds = 0;
  let best: Packed | null = null;
  for (let round = 0; ; round++) {
    const res = {
      ffnUnits: target.intermediateSize,
      gdnKeyHeads: target.linearNumKeyHeads,
      attnKvHeads: target.numKeyValueHeads,
      ffnReserve: reserve,
      boost,
    };
    const early = schedule(lowered, res);
    fewest = Math.min(fewest, early.numLayers);
    const packedEarly = packSlots(lowered, early);
    let sched = early;
    let packing = packedEarly;
    if (sink) {
      // sinking moves ops one at a time by a local estimate; the packing decides whether it paid
      const sunk = sinkOps(lowered, early, res);
      const packedSunk = packSlots(lowered, sunk);
      if (packedSunk.slotsUsed <= packedEarly.slotsUsed) {
        sched = sunk;
        packing = packedSunk;
      }
    }
    if (repair && overflow(sched, packing, target.intermediateSize).length > 0) {
      const deferred = packDeferringClears(lowered, sched, target.intermediateSize);
      if (deferred !== null) { packing = deferred; repairedAny = true; }
    }
    const over = overflow(sched, packing, target.intermediateSize);
    // at least the layer's clears: a reservation below them that its ops already leave free
    // (units + reservation ≤ budget) would move no op, and only grow by the excess each round
    for (const { layer, excess, clears } of over) reserve[layer] = Math.max((reserve[layer] ?? 0) + excess, clears);
    if (over.length === 0) {
      const here = { schedule: sched, packing };
      if (best === null || better(here, best)) best = here;
      if (!repair || best.schedule.numLayers <= fewest || boostRounds >= BOOST_ROUNDS) return { ...best, repairedAny };
      const delayed = criticalDelayedOps(lowered, early);
      if (delayed.length === 0) return { ...best, repairedAny };
      for (const id of delayed) boost[id]! += BOOST;
      boostRounds++;
      repairedAny = true;
      continue;
    }
    if (round >= 50) throw new ChipcError('fit.units', 'slot clears keep overflowing the FFN budget; the circuit is too wide for this target');
  }
}

/** The layers whose ops and slot clears need more FFN units than the target has, with the excess and the layer's clears. */
function overflow(sched: Schedule, packing: Packing, ffnUnits: number): { layer: number; excess: number; clears: number }[] {
  const clears = new Array<number>(sched.numLayers).fill(0);
  for (const c of packing.clears) clears[Math.floor(c.sublayer / 2)]!++;
  const out: { layer: number; excess: number; clears: number }[] = [];
  sched.usage.forEach((u, L) => { if (u.units + clears[L]! > ffnUnits) out.push({ layer: L, excess: u.units + clears[L]! - ffnUnits, clears: clears[L]! }); });
  return out;
}

const DEFER_ROUNDS = 16;

/**
 * The schedule packed with the clears that overflow a layer's FFN deferred to the next layer's
 * (a dead value may stay in its slot longer: it is subtracted later), round by round as the
 * packing changes; null when some layer still overflows after DEFER_ROUNDS or has no later layer.
 * Deferring keeps the ops where the schedule put them, where reserving units in the layer pushes
 * ops out of it — off the critical path, and values alive longer (more slots).
 */
function packDeferringClears(lowered: LoweredCircuit, sched: Schedule, ffnUnits: number): Packing | null {
  const clearAt = new Int32Array(lowered.dims.length).fill(-1);
  for (let round = 0; round < DEFER_ROUNDS; round++) {
    const packing = packSlots(lowered, sched, clearAt);
    const over = overflow(sched, packing, ffnUnits);
    if (over.length === 0) return packing;
    for (const { layer, excess } of over) {
      if (layer + 1 >= sched.numLayers) return null;
      const here = packing.clears.filter((c) => c.sublayer === 2 * layer + 1);
      for (const c of here.slice(here.length - excess)) clearAt[c.dim] = 2 * layer + 3;
    }
  }
  return null;
}

/**
 * The ops on the schedule's critical path that resources delayed: walking back from the ops of
 * the last layer through the inputs that came last, an op placed later than its inputs allow (an
 * FFN layer or a mixer without room for it); for a delayed GDN or attention op, the walk goes on
 * through the ops of its kind in the mixers it waited behind (the banks before it).
 */
export function criticalDelayedOps(lc: LoweredCircuit, sched: Schedule): number[] {
  const writers: number[][] = Array.from({ length: lc.dims.length }, () => []);
  for (const op of lc.ops) for (const d of op.writes) writers[d]!.push(op.id);
  const byMixer = new Map<number, number[]>();
  for (const op of lc.ops) {
    if (op.kind === 'ffn') continue;
    const s = sched.sublayer[op.id]!;
    (byMixer.get(s) ?? byMixer.set(s, []).get(s)!).push(op.id);
  }
  const lastLayer = sched.numLayers - 1;
  const seen = new Uint8Array(lc.ops.length);
  const queue: number[] = [];
  const visit = (id: number) => { if (seen[id] === 0) { seen[id] = 1; queue.push(id); } };
  for (const op of lc.ops) if (sched.sublayer[op.id]! >> 1 === lastLayer) visit(op.id);
  const out: number[] = [];
  while (queue.length > 0) {
    const id = queue.pop()!;
    const op = lc.ops[id]!;
    const s = sched.sublayer[id]!;
    let latest = -1;
    for (const d of op.reads) latest = Math.max(latest, sched.producedAt[d]!);
    let ready = latest + 1;
    if ((ready % 2 === 1) !== (op.kind === 'ffn')) ready++;
    if (ready < s) {
      out.push(id);
      if (op.kind !== 'ffn') for (let m = ready; m < s; m += 2) for (const other of byMixer.get(m) ?? []) visit(other);
    }
    for (const d of op.reads) if (sched.producedAt[d] === latest) for (const w of writers[d]!) visit(w);
  }
  return out.sort((a, b) => a - b);
}
