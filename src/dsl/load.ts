/**
 * Loading a circuit: import a circuit file (TypeScript, run through tsx), run its builder and
 * validate the result. `buildCircuit` is the in-process form used by tests.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import fs from 'node:fs';
import { ChipcError } from '../util/errors.ts';
import type { CircuitIR } from '../ir/types.ts';
import { validate } from '../passes/validate.ts';
import { CircuitBuilder, type CircuitDef, type TargetShape } from './builder.ts';

export function buildCircuit(def: CircuitDef, source = '<inline>'): CircuitIR {
  const c = new CircuitBuilder(def.meta);
  def.build(c);
  const ir = c.toIR(source);
  validate(ir, c.problems);
  return ir;
}

/**
 * Import a circuit file and build its default export; with a target, the circuit's `retarget`
 * form for it when the circuit has one.
 */
export async function loadCircuitFile(file: string, target?: TargetShape): Promise<CircuitIR> {
  const abs = path.resolve(file);
  if (!fs.existsSync(abs)) throw new ChipcError('circuit.file', `circuit file ${file} does not exist`);
  let mod: { default?: unknown };
  try {
    mod = (await import(pathToFileURL(abs).href)) as { default?: unknown };
  } catch (e) {
    throw new ChipcError('circuit.import', `cannot load circuit ${file}: ${(e as Error).message}`, { cause: e });
  }
  const def = mod.default as CircuitDef | undefined;
  if (!def || def.kind !== 'chipc-circuit') {
    throw new ChipcError('circuit.export', `${file} must default-export defineCircuit(…)`);
  }
  const shaped = target !== undefined && def.retarget !== undefined ? def.retarget(target) : def;
  if (shaped.kind !== 'chipc-circuit') throw new ChipcError('circuit.export', `${file}: retarget must return defineCircuit(…)`);
  return buildCircuit(shaped, path.relative(process.cwd(), abs));
}
