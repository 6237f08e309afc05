/**
 * Pass — report: what the compile result tells its readers (the manifest, the checker, the SVG,
 * `chipc compile --report`), gathered from the passes before it: where every placed signal sits
 * (slot, the sublayers it is alive in, whether a clear ends it) and a line per layer (heads,
 * units, clear units, dims alive on entry, non-zero weights).
 */
import type { LayerType } from '../model/config.ts';
import type { ModelWeights } from '../model/weights.ts';
import type { LayerSpec } from '../lower/forms.ts';
import type { LoweredCircuit } from '../lower/lowered.ts';
import { layerNonZeros } from './count-non-zeros.ts';
import type { Packing } from './pack-slots.ts';
import type { Schedule } from './schedule.ts';

export interface SignalPlacement {
  name: string;
  node: number;
  encoding: string;
  index: number;
  /** bits: the dim holds bit `index` of (value − base). */
  base?: number;
  /** Delay encodings: the conv tap d (the dim holds position t − d's value, 0 before d). */
  tap?: number;
  /** residue: the dim holds [(value − base) mod modulus = index]. */
  modulus?: number;
  slot: number;
  /** Sublayer that writes it (−1 = embedding) and the sublayer whose FFN clears it (or 2·layers = never). */
  birth: number;
  end: number;
  /** Where later than birth: the sublayer after which the value is whole (a dim several RAM read-outs add to). */
  ready?: number;
  cleared: boolean;
  lo: number;
  hi: number;
}

export interface LayerReport {
  layer: number;
  type: LayerType;
  heads: number;
  units: number;
  clearUnits: number;
  liveIn: number;
  nonZeros: number;
}

/** Every dim that has a slot, in dim order. */
export function placeSignals(lowered: LoweredCircuit, sched: Schedule, packing: Packing): SignalPlacement[] {
  const END = 2 * sched.numLayers;
  const clearedSet = new Set(packing.clears.map((c) => c.dim));
  return lowered.dims
    .filter((d) => packing.slot[d.id]! >= 0)
    .map((d) => ({
      name: d.name, node: d.node, encoding: d.encoding, index: d.index, base: d.base, tap: d.tap, ...(d.modulus !== undefined ? { modulus: d.modulus } : {}), slot: packing.slot[d.id]!,
      birth: packing.birth[d.id]!, end: packing.end[d.id]! >= END ? END : packing.end[d.id]!,
      ...(sched.producedAt[d.id]! > packing.birth[d.id]! ? { ready: sched.producedAt[d.id]! } : {}),
      cleared: clearedSet.has(d.id), lo: d.lo, hi: d.hi,
    }));
}

/** A line per layer: `layers` are the specs assembled (clears included, `clearUnits` of them per layer). */
export function layerReports(
  sched: Schedule, packing: Packing, layers: LayerSpec[], clearUnits: number[], weights: ModelWeights,
): LayerReport[] {
  return sched.layerTypes.map((t, i) => ({
    layer: i,
    type: t,
    heads: layers[i]!.mixer.heads.length,
    units: layers[i]!.ffn.length,
    clearUnits: clearUnits[i]!,
    liveIn: packing.liveAt[2 * i] ?? 0,
    nonZeros: layerNonZeros(weights, i),
  }));
}
