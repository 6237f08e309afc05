/**
 * The lowering driver: IR → LoweredCircuit. Demand-driven from the circuit's outputs — the emit
 * fields (one-hot dims the LM head reads) — so signals nothing observes are never built (dead
 * code costs nothing). Each computed signal's producer is chosen by its kind:
 * arithmetic → lower-arith.ts (FFN), RAM reads → lower-ram.ts (GDN), lookups → lower-lookup.ts
 * (attention), delay lines → lower-prev.ts (GDN, conv previous-token tap); encodings →
 * lower-encodings.ts; constants, linear nodes and delays fold into forms.
 */
import type { CircuitIR, IrNode } from '../ir/types.ts';
import type { ModelConfig } from '../model/config.ts';
import { ChipcError } from '../util/errors.ts';
import { input, linUnit, withDimBounds } from '../gadgets/ffn-core.ts';
import { atNode, LowerContext, type EmbedValues, type Producers } from '../lower/context.ts';
import type { VDim } from '../lower/forms.ts';
import type { LoweredCircuit } from '../lower/lowered.ts';
import { opReads } from '../lower/op-io.ts';
import { lowerArith } from './lower-arith.ts';
import { oneHotOf } from './lower-encodings.ts';
import { lowerRam } from './lower-ram.ts';
import { lowerLookup } from './lower-lookup.ts';
import { lowerPrev } from './lower-prev.ts';

/** Materialise a linear node's folded form in its own dim (one LIN unit). */
function lowerLinear(ctx: LowerContext, n: IrNode): VDim {
  const d = ctx.newDim(n.id, 'scalar', 0, n.range.lo, n.range.hi, n.name);
  const units = atNode(ctx, n.id, 'the linear combination', () =>
    [linUnit(input(ctx.formOf(n.id), n.range.lo, n.range.hi), [{ dim: d, k: 1 }], n.name)]);
  ctx.addOp({ kind: 'ffn', what: `linear "${n.name}"`, units, reads: opReads(units), writes: [d] });
  return d;
}

export function lower(ir: CircuitIR, target: ModelConfig): LoweredCircuit {
  const ctx = new LowerContext(ir, producers(ir, target));
  // Gadgets bound their partial sums with the dims' real ranges (a bit is charged 1, not 256).
  return withDimBounds((d) => {
    const info = ctx.dims[d];
    return info ? Math.max(Math.abs(info.lo), Math.abs(info.hi)) : Infinity;
  }, () => lowerIn(ctx, ir, target));
}

/** Each computed signal's producer, by its kind (a RAM or lookup is lowered whole, at its first read). */
function producers(ir: CircuitIR, target: ModelConfig): Producers {
  const ramsDone = new Set<number>();
  const lookupsDone = new Set<number>();
  return {
    form: (ctx, n) => (n.op === 'prev' ? lowerPrev(ctx, n, target) : null),
    scalar: (ctx, n) => {
      switch (n.op) {
        case 'table':
        case 'compare':
        case 'select':
        case 'logic':
          return lowerArith(ctx, n);
        case 'linear':
        case 'prev':
          return lowerLinear(ctx, n);
        case 'ram_read':
          if (!ramsDone.has(n.ram)) {
            ramsDone.add(n.ram);
            lowerRam(ctx, ir.rams[n.ram]!, target);
          }
          return ctx.scalarDim(n.id);
        case 'lookup_value':
          if (!lookupsDone.has(n.lookup)) {
            lookupsDone.add(n.lookup);
            lowerLookup(ctx, ir.lookups[n.lookup]!, target);
          }
          return ctx.scalarDim(n.id);
        default:
          throw new Error(`internal: no producer for ${n.op}`);
      }
    },
  };
}

function lowerIn(ctx: LowerContext, ir: CircuitIR, target: ModelConfig): LoweredCircuit {
  const lmHeadRows = new Map<number, { dim: VDim; weight: number }[]>();
  const lmHeadDims: VDim[] = [];
  if (ir.emit) {
    const fields = ir.emit.fields;
    const hots = fields.map((f) => oneHotOf(ctx, f));
    for (const h of hots) lmHeadDims.push(...h);
    const ranges = fields.map((f) => ctx.resolve(f).range);
    if (ir.emit.rows) {
      // Partial rows: a row constraining r fields puts weight W − (r − 1) on its first field's
      // one-hot and 1 on the others (W = 1 + the most fields any row constrains), so the row that
      // fully matches scores exactly W and every other row at most W − 1 (small exact integers).
      let W = 1;
      for (const r of ir.emit.rows) W = Math.max(W, 1 + r.values.filter((x) => x !== null).length);
      for (const row of ir.emit.rows) {
        const out: { dim: VDim; weight: number }[] = [];
        const r = row.values.filter((x) => x !== null).length;
        row.values.forEach((want, k) => {
          if (want === null) return;
          out.push({ dim: hots[k]![want - ranges[k]!.lo]!, weight: out.length === 0 ? W - (r - 1) : 1 });
        });
        lmHeadRows.set(row.token, out);
      }
    } else {
      const spans = ranges.map((r) => r.hi - r.lo + 1);
      ir.emit.tokens.forEach((tok, idx) => {
        let rem = idx;
        const row: { dim: VDim; weight: number }[] = [];
        for (let k = fields.length - 1; k >= 0; k--) {
          row.push({ dim: hots[k]![rem % spans[k]!]!, weight: 1 });
          rem = Math.floor(rem / spans[k]!);
        }
        lmHeadRows.set(tok, row.reverse());
      });
    }
  }
  if (target.vocabSize < ir.vocab) {
    throw new ChipcError('fit.vocab', `the circuit uses ${ir.vocab} token ids; the target's vocabulary has ${target.vocabSize}`);
  }
  const embedded = ctx.embedded;
  const embedDims = [...embedded.keys()];
  return {
    dims: ctx.dims,
    ops: ctx.ops,
    embedding: embeddingRows(embedDims.map((d) => [d, embedded.get(d)!] as const), ir.vocab),
    embedDims,
    lmHead: (t) => lmHeadRows.get(t) ?? [],
    lmHeadDims,
  };
}

/**
 * Token t's embedding entries (every embedded dim whose value at t is not ±0, in `dims` order; none
 * for t ≥ vocab), computed once, column by column, into flat arrays: the assembler asks for every
 * token of the target's vocabulary (≈ 248,000 for Qwen3.5), and an object per dim per token was
 * most of the RV32 chip's assembly time in allocation and garbage collection.
 */
function embeddingRows(dims: readonly (readonly [VDim, EmbedValues])[], vocab: number): (t: number) => { dim: VDim; value: number }[] {
  // column by column: the (token, dim index, value) of each non-zero entry
  // (sized for the columns' entries up front: growing by doubling copied ≈ 3.5 M entries a dozen times)
  let capacity = 1024;
  for (const [, f] of dims) capacity += typeof f === 'function' ? 0 : f.tokens.length;
  let tokens = new Int32Array(capacity);
  let which = new Int32Array(capacity);
  let vals = new Float64Array(capacity);
  let n = 0;
  const perToken = new Int32Array(vocab + 1);
  const add = (t: number, j: number, v: number): void => {
    if (n === tokens.length) {
      const grow = <A extends Int32Array | Float64Array>(a: A, b: A): A => (b.set(a), b);
      tokens = grow(tokens, new Int32Array(2 * n));
      which = grow(which, new Int32Array(2 * n));
      vals = grow(vals, new Float64Array(2 * n));
    }
    tokens[n] = t;
    which[n] = j;
    vals[n] = v;
    n++;
    perToken[t + 1]!++;
  };
  dims.forEach(([, f], j) => {
    if (typeof f === 'function') {
      for (let t = 0; t < vocab; t++) {
        const v = f(t);
        if (v !== 0) add(t, j, v);
      }
      return;
    }
    for (let e = 0; e < f.tokens.length; e++) {
      const t = f.tokens[e]!;
      if (t < vocab && f.values[e] !== 0) add(t, j, f.values[e]!);
    }
  });
  // grouped by token (a stable counting sort: each token's entries stay in dims order)
  for (let t = 0; t < vocab; t++) perToken[t + 1]! += perToken[t]!;
  const next = perToken.slice(0, vocab);
  const rowDim = new Int32Array(n);
  const rowVal = new Float64Array(n);
  for (let e = 0; e < n; e++) {
    const at = next[tokens[e]!]!++;
    rowDim[at] = which[e]!;
    rowVal[at] = vals[e]!;
  }
  return (t) => {
    if (!(t >= 0 && t < vocab)) return [];
    const out: { dim: VDim; value: number }[] = [];
    for (let e = perToken[t]!; e < perToken[t + 1]!; e++) out.push({ dim: dims[rowDim[e]!]![0], value: rowVal[e]! });
    return out;
  };
}
