/**
 * What runs a chip as a service (a ChipService with the weights engine, a ChipStore): its
 * weights, RAM placements and declarations. A CompileResult is one; so is a chip loaded from a
 * checkpoint (src/chip/loaded.ts). Its own file so that the runner (run.ts) and the loader
 * (loaded.ts, which calls into run.ts) share it without importing each other.
 */
import type { CircuitIR } from '../ir/types.ts';
import type { ModelWeights } from '../model/weights.ts';
import type { RamHost, RamStatePlacement } from '../load/ram-state.ts';

/** A chip to run as a service: its weights, RAM placements and declarations; the whole IR only when compiled. */
export interface ChipModel extends RamHost {
  weights: ModelWeights;
  rams: readonly RamStatePlacement[];
  ir: RamHost['ir'] & Partial<Pick<CircuitIR, 'nodes'>>;
}

/** Whether the chip carries its circuit (compiled: the IR engine and divergence location can run). */
export function hasCircuit(m: ChipModel): m is ChipModel & { ir: CircuitIR } {
  return Array.isArray(m.ir.nodes);
}
