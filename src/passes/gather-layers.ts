/**
 * Pass — gather the layers: every scheduled op's units and heads into the spec of its layer
 * (lower/forms.ts LayerSpec), which assembly turns into weights. FFN ops' units, then the slot
 * clears packing asks for (one `clear` unit each), go to the layer's FFN; GDN and attention ops'
 * heads to its mixer, with the norm weights they need (ops sharing a layer must agree). Records
 * where each lowered RAM's key heads sit (RamPlacement) and how many clear units each layer got.
 */
import type { CircuitIR } from '../ir/types.ts';
import { clear } from '../gadgets/ffn.ts';
import type { AttnKvHeadSpec, FfnUnit, GdnKeyHeadSpec, LayerSpec } from '../lower/forms.ts';
import type { LoweredCircuit } from '../lower/lowered.ts';
import type { GdnRamLowering } from '../lower/ram-lowering.ts';
import type { Packing } from './pack-slots.ts';
import type { Schedule } from './schedule.ts';

/** Where a RAM's key heads sit in the compiled model (for state files and loaders). */
export interface RamPlacement {
  ram: number;
  name: string;
  layer: number;
  /** Model key-head index of each of the lowering's heads (same order as lowering.heads / roles). */
  keyHeads: number[];
  lowering: GdnRamLowering;
}

export interface GatheredLayers {
  /** One spec per layer, of the type `schedule.layerTypes` gives it. */
  layers: LayerSpec[];
  /** Every lowered RAM's layer and key heads. */
  rams: RamPlacement[];
  /** Clear units per layer (already in its FFN). */
  clearUnits: number[];
}

/** `gdnValueHeadDim`: the target's GDN value head dim (the length of a layer's gated-norm weights). */
export function gatherLayers(ir: CircuitIR, lowered: LoweredCircuit, sched: Schedule, packing: Packing, gdnValueHeadDim: number): GatheredLayers {
  const L = sched.numLayers;
  const ffn: FfnUnit[][] = Array.from({ length: L }, () => []);
  const gdnHeads: GdnKeyHeadSpec[][] = Array.from({ length: L }, () => []);
  const attnHeads: AttnKvHeadSpec[][] = Array.from({ length: L }, () => []);
  const gdnNorm: (number | undefined)[] = new Array(L).fill(undefined);
  const attnNorms: ({ q?: number[]; k?: number[] } | undefined)[] = new Array(L).fill(undefined);
  const rams: RamPlacement[] = [];
  for (const op of lowered.ops) {
    const s = sched.sublayer[op.id]!;
    const layer = Math.floor(s / 2);
    if (op.kind === 'ffn') ffn[layer]!.push(...op.units);
    else if (op.kind === 'gdn') {
      if (op.ram) {
        const first = gdnHeads[layer]!.length;
        rams.push({
          ram: op.ram.id, name: ir.rams[op.ram.id]!.name, layer,
          keyHeads: op.heads.map((_, i) => first + i), lowering: op.ram.lowering,
        });
      }
      gdnHeads[layer]!.push(...op.heads);
      if (op.normWeight !== undefined) {
        if (gdnNorm[layer] !== undefined && gdnNorm[layer] !== op.normWeight) {
          throw new Error(`internal: GDN ops in layer ${layer} need different gated-norm weights`);
        }
        gdnNorm[layer] = op.normWeight;
      }
    } else {
      attnHeads[layer]!.push(...op.heads);
      const cur = attnNorms[layer];
      const want = { q: op.qNormWeight, k: op.kNormWeight };
      if (cur && JSON.stringify(cur) !== JSON.stringify(want)) {
        throw new Error(`internal: attention ops in layer ${layer} need different q/k norm weights`);
      }
      attnNorms[layer] = want;
    }
  }
  const clearUnits = new Array<number>(L).fill(0);
  for (const c of packing.clears) {
    const d = lowered.dims[c.dim]!;
    const layer = Math.floor(c.sublayer / 2);
    ffn[layer]!.push(...clear(c.dim, d));
    clearUnits[layer]!++;
  }
  const layers: LayerSpec[] = sched.layerTypes.map((t, i) => ({
    mixer: t === 'linear_attention'
      ? { kind: 'linear_attention', heads: gdnHeads[i]!, normWeight: gdnNorm[i] === undefined ? undefined : new Array(gdnValueHeadDim).fill(gdnNorm[i]) }
      : { kind: 'full_attention', heads: attnHeads[i]!, qNormWeight: attnNorms[i]?.q, kNormWeight: attnNorms[i]?.k },
    ffn: ffn[i]!,
  }));
  return { layers, rams, clearUnits };
}
