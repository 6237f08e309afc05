/**
 * Loading a circuit: import a circuit file (TypeScript, run through tsx), run its builder and
 * validate the result. `buildCircuit` is the in-process form used by tests.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import fs from 'node:fs';
import { ChipcError } from '../util/errors.ts';
import { fmtLoc, type CircuitIR } from '../ir/types.ts';
import { validate } from '../passes/validate.ts';
import { CircuitBuilder, type CircuitDef, type TargetShape } from './builder.ts';
import { stackLoc } from './source-loc.ts';

export function buildCircuit(def: CircuitDef, source = '<inline>'): CircuitIR {
  const c = new CircuitBuilder(def.meta, def.loc);
  userCode(source, 'build function', () => def.build(c));
  const ir = c.toIR(source);
  validate(ir, c.problems);
  return ir;
}

/**
 * Runs a circuit's own code (its build function, its retarget): what it throws is the circuit's
 * error — `circuit.build`, exit 2, at the circuit's line from the stack — not a chipc bug. A
 * ChipcError passes through (the DSL's own refusals), and so does an exception whose stack has no
 * frame outside chipc's sources (a bug of ours).
 */
function userCode<T>(source: string, what: string, body: () => T): T {
  try {
    return body();
  } catch (e) {
    if (e instanceof ChipcError) throw e;
    const err = e instanceof Error ? e : null;
    const loc = err?.stack !== undefined ? stackLoc(err.stack) : null;
    if (err !== null && loc === null) throw e;
    const what2 = err === null ? `threw ${typeof e === 'string' ? JSON.stringify(e) : String(e)}` : `threw ${err.name}: ${err.message}`;
    const at = loc === null ? source : fmtLoc(loc);
    throw new ChipcError('circuit.build', `${at}: the circuit's ${what} ${what2}`, { cause: e });
  }
}

/**
 * Circuit files are TypeScript (or modules that import it): tsx loads them. The launcher registers
 * it before the CLI when it runs from the sources; the compiled package (dist/) and the CLI bundle
 * (tools/bundle-cli.mjs) register it here, on the first circuit file, so that commands without one
 * do not pay for it (importing tsx's API takes ≈ 0.2 s).
 */
async function ensureTypeScriptLoader(): Promise<void> {
  const g = globalThis as { __chipcTsxRegistered?: boolean };
  if (g.__chipcTsxRegistered === true || import.meta.url.endsWith('.ts')) return;
  const { register } = await import('tsx/esm/api');
  register();
  g.__chipcTsxRegistered = true;
}

/**
 * Import a circuit file and build its default export; with a target, the circuit's `retarget`
 * form for it when the circuit has one.
 */
export async function loadCircuitFile(file: string, target?: TargetShape): Promise<CircuitIR> {
  const abs = path.resolve(file);
  if (!fs.existsSync(abs)) throw new ChipcError('circuit.file', `circuit file ${file} does not exist`);
  let mod: { default?: unknown };
  await ensureTypeScriptLoader();
  try {
    mod = (await import(pathToFileURL(abs).href)) as { default?: unknown };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ERR_REQUIRE_CYCLE_MODULE') {
      throw new ChipcError('circuit.import', `cannot load circuit ${file}: ${(e as Error).message}`, { cause: e });
    }
    // A circuit written as an ES module in a CommonJS scope (a .ts or .js file in a project
    // without "type": "module"): node hands it to the CommonJS loader, which finds ES module syntax
    // and comes back to the file being loaded. tsx's scoped import compiles it as a module.
    try {
      const { tsImport } = await import('tsx/esm/api');
      mod = (await tsImport(pathToFileURL(abs).href, import.meta.url)) as { default?: unknown };
    } catch (e2) {
      throw new ChipcError('circuit.import', `cannot load circuit ${file}: ${(e2 as Error).message}`, { cause: e2 });
    }
  }
  // (a module compiled as CommonJS carries its default export one level down)
  const isCircuit = (x: unknown): x is CircuitDef => (x as CircuitDef | undefined)?.kind === 'chipc-circuit';
  const def = isCircuit(mod.default) ? mod.default : (mod.default as { default?: unknown } | undefined)?.default;
  if (!isCircuit(def)) {
    throw new ChipcError('circuit.export', `${file} must default-export defineCircuit(…)`);
  }
  const retarget = def.retarget;
  const shaped = target !== undefined && retarget !== undefined ? userCode(file, 'retarget function', () => retarget(target)) : def;
  if (shaped?.kind !== 'chipc-circuit') throw new ChipcError('circuit.export', `${file}: retarget must return defineCircuit(…)`);
  return buildCircuit(shaped, path.relative(process.cwd(), abs));
}
