/**
 * Pass — fuse-tables: lookup tables over the same index share their ramps. A table is lowered to
 * ramps max(0, ±(x − t)) of its mixed-radix index x, one per point where its values bend, and the
 * down projection weighs each ramp by the values' second difference there (gadgets/ffn-core.ts
 * `rampTable`). Tables that read the very same index form (same dims, coefficients, constant and
 * range — e.g. the low and high digits of one nibble product) can use one set of ramps whose down
 * weights write every table's output: the union of their bend points instead of the sum. The
 * outputs are the same values, exactly (each output's down weights are its own second
 * differences, as before). A group is fused only when that costs fewer units and every bound of
 * the fused units holds; each fused op writes all the group's dims and sits where its first
 * member was. Adds to the lowered circuit: fewer, wider table ops (renumbered ids).
 */
import { rampTable, withDimBounds } from '../gadgets/ffn-core.ts';
import type { FfnOp, LoweredCircuit, LoweredOp } from '../lower/lowered.ts';
import { opReads } from '../lower/op-io.ts';
import { ChipcError } from '../util/errors.ts';

function keyOf(op: FfnOp): string {
  const { form, lo, hi } = op.table!.input;
  const terms = [...form.terms].sort((a, b) => a.dim - b.dim || a.coef - b.coef).map((t) => `${t.dim}:${t.coef}`).join(',');
  return `${terms}|${form.constant}|${lo}|${hi}`;
}

/** Fuse the table ops of `lc` that share an index; returns a new circuit (ops renumbered). */
export function fuseTables(lc: LoweredCircuit): LoweredCircuit {
  // The fused units' bounds use the dims' real ranges, as lowering did (a bit is charged 1, not 256).
  return withDimBounds((d) => {
    const info = lc.dims[d];
    return info ? Math.max(Math.abs(info.lo), Math.abs(info.hi)) : Infinity;
  }, () => fuseIn(lc));
}

function fuseIn(lc: LoweredCircuit): LoweredCircuit {
  const groups = new Map<string, FfnOp[]>();
  for (const op of lc.ops) {
    if (op.kind !== 'ffn' || op.table === undefined) continue;
    const k = keyOf(op);
    const g = groups.get(k);
    if (g) g.push(op);
    else groups.set(k, [op]);
  }
  const replaced = new Map<number, LoweredOp | null>(); // op id → fused op (at the first member) or null (dropped)
  for (const g of groups.values()) {
    if (g.length < 2) continue;
    const outs = g.flatMap((o) => o.table!.outs);
    let units;
    try {
      units = rampTable(g[0]!.table!.input, outs, g.map((o) => o.what).join(' + '));
    } catch (e) {
      if (e instanceof ChipcError) continue; // a bound of the fused form fails: keep the tables apart
      throw e;
    }
    if (units.length >= g.reduce((s, o) => s + o.units.length, 0)) continue;
    const fused: FfnOp = {
      id: -1, kind: 'ffn', what: g.length === 2 ? `${g[0]!.what} + ${g[1]!.what}` : `${g[0]!.what} + ${g.length - 1} tables`,
      units, reads: opReads(units), writes: g.flatMap((o) => o.writes), table: { input: g[0]!.table!.input, outs },
    };
    replaced.set(g[0]!.id, fused);
    for (const o of g.slice(1)) replaced.set(o.id, null);
  }
  if (replaced.size === 0) return lc;
  const ops: LoweredOp[] = [];
  for (const op of lc.ops) {
    const r = replaced.get(op.id);
    if (r === null) continue;
    ops.push({ ...(r ?? op), id: ops.length } as LoweredOp);
  }
  return { ...lc, ops };
}
