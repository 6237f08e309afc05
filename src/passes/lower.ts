/**
 * The lowering driver: IR → LoweredCircuit. Demand-driven from the circuit's outputs — the emit
 * fields (one-hot dims the LM head reads) — so signals nothing observes are never built (dead
 * code costs nothing). Each computed signal's producer is chosen by its kind:
 * arithmetic → lower-arith.ts (FFN), RAM reads → lower-ram.ts (GDN), lookups → lower-lookup.ts
 * (attention), delay lines → lower-prev.ts (GDN, conv previous-token tap); encodings →
 * lower-encodings.ts; constants, linear nodes and delays fold into forms.
 */
import type { CircuitIR, EmitRow, IrNode } from '../ir/types.ts';
import type { ModelConfig } from '../model/config.ts';
import { ChipcError } from '../util/errors.ts';
import { input, linUnit, withDimBounds } from '../gadgets/ffn-core.ts';
import { atNode, LowerContext, type Column, type EmbedValues, type Producers } from '../lower/context.ts';
import { form, type VDim } from '../lower/forms.ts';
import type { LoweredCircuit, LoweredOp, TokenRow } from '../lower/lowered.ts';
import { opReads } from '../lower/op-io.ts';
import { lowerArith } from './lower-arith.ts';
import { choiceDim, oneHotOf, sumDim } from './lower-encodings.ts';
import { lowerRam, readSumDim } from './lower-ram.ts';
import { tableSumForm } from './lower-table-sums.ts';
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
  const ctx = new LowerContext(ir, producers(ir, target), target.linearNumKeyHeads, target.intermediateSize);
  // Gadgets bound their partial sums with the dims' real ranges (a bit is charged 1, not 256).
  return withDimBounds((d) => {
    const info = ctx.dims[d];
    return info ? Math.max(Math.abs(info.lo), Math.abs(info.hi)) : Infinity;
  }, () => lowerIn(ctx, ir, target));
}

/** A table sum whose form is exactly its one dim (its other terms folded in, or none), as that dim. */
function tableSumDim(ctx: LowerContext, n: IrNode): VDim | null {
  const f = tableSumForm(ctx, n);
  return f !== null && f.constant === 0 && f.terms.length === 1 && f.terms[0]!.coef === 1 ? f.terms[0]!.dim : null;
}

/** Each computed signal's producer, by its kind (a RAM or lookup is lowered whole, at its first read). */
function producers(ir: CircuitIR, target: ModelConfig): Producers {
  const ramsDone = new Set<number>();
  const lookupsDone = new Set<number>();
  const ramOnce = (ctx: LowerContext) => (ram: number) => {
    if (ramsDone.has(ram)) return;
    ramsDone.add(ram);
    lowerRam(ctx, ir.rams[ram]!, target);
  };
  return {
    form: (ctx, n) => {
      if (n.op === 'prev') return lowerPrev(ctx, n, target);
      if (n.op === 'linear') {
        if (!n.choice) {
          const own = sumDim(ctx, n);
          if (own !== null) return form([{ dim: own, coef: 1 }], 0);
          const tables = tableSumForm(ctx, n);
          if (tables !== null) return tables;
        }
        const d = n.choice ? choiceDim(ctx, n) : readSumDim(ctx, n, ramOnce(ctx));
        return d === null ? null : form([{ dim: d, coef: 1 }], 0);
      }
      return null;
    },
    scalar: (ctx, n) => {
      switch (n.op) {
        case 'table':
        case 'compare':
        case 'select':
        case 'logic':
          return lowerArith(ctx, n);
        case 'linear':
          return (n.choice ? choiceDim(ctx, n) : sumDim(ctx, n) ?? tableSumDim(ctx, n) ?? readSumDim(ctx, n, ramOnce(ctx))) ?? lowerLinear(ctx, n);
        case 'prev':
          return lowerLinear(ctx, n);
        case 'ram_read':
          ramOnce(ctx)(n.ram);
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
  const lmHeadDims: VDim[] = [];
  let lmHead: TokenRow = () => {};
  if (ir.emit) {
    const fields = ir.emit.fields;
    const hots = fields.map((f) => oneHotOf(ctx, f));
    for (const h of hots) lmHeadDims.push(...h);
    const ranges = fields.map((f) => ctx.resolve(f).range);
    // Each emitted token's row of the LM head, as flat arrays indexed by token (the RV32 chip
    // emits ≈ 248,000 rows: objects per row and entry were a fifth of its lowering).
    const perToken = new Int32Array(ir.vocab + 1);
    // (typed arrays: ≈ 810,000 entries at the RV32 chip, every dim an integer ≥ 0, every weight a
    // small integer)
    let rowDims = new Int32Array(0);
    let rowWeights = new Float64Array(0);
    if (ir.emit.rows) {
      // Partial rows: a row constraining r fields puts weight W − (r − 1) on its first field's
      // one-hot and 1 on the others (W = 1 + the most fields any row constrains), so the row that
      // fully matches scores exactly W and every other row at most W − 1 (small exact integers).
      const rows = ir.emit.rows;
      const constrained = (row: EmitRow) => {
        let r = 0;
        for (const x of row.values) if (x !== null) r++;
        return r;
      };
      let W = 1;
      for (const row of rows) {
        const r = constrained(row);
        W = Math.max(W, 1 + r);
        perToken[row.token + 1] = r;
      }
      for (let t = 0; t < ir.vocab; t++) perToken[t + 1]! += perToken[t]!;
      rowDims = new Int32Array(perToken[ir.vocab]!);
      rowWeights = new Float64Array(perToken[ir.vocab]!);
      for (const row of rows) {
        const r = perToken[row.token + 1]! - perToken[row.token]!;
        let at = perToken[row.token]!;
        const values = row.values;
        for (let k = 0; k < values.length; k++) {
          const want = values[k];
          if (want === null || want === undefined) continue;
          rowDims[at] = hots[k]![want - ranges[k]!.lo]!;
          rowWeights[at] = at === perToken[row.token]! ? W - (r - 1) : 1;
          at++;
        }
      }
    } else {
      const spans = ranges.map((r) => r.hi - r.lo + 1);
      const nf = fields.length;
      ir.emit.tokens.forEach((tok) => { perToken[tok + 1] = nf; });
      for (let t = 0; t < ir.vocab; t++) perToken[t + 1]! += perToken[t]!;
      rowDims = new Int32Array(perToken[ir.vocab]!);
      rowWeights = new Float64Array(perToken[ir.vocab]!).fill(1);
      ir.emit.tokens.forEach((tok, idx) => {
        let rem = idx;
        for (let k = nf - 1; k >= 0; k--) {
          rowDims[perToken[tok]! + k] = hots[k]![rem % spans[k]!]!;
          rem = Math.floor(rem / spans[k]!);
        }
      });
    }
    lmHead = (t, put) => {
      if (!(t >= 0 && t < ir.vocab)) return;
      for (let e = perToken[t]!; e < perToken[t + 1]!; e++) put(rowDims[e]!, rowWeights[e]!);
    };
  }
  if (target.vocabSize < ir.vocab) {
    throw new ChipcError('fit.vocab', `the circuit uses ${ir.vocab} token ids; the target's vocabulary has ${target.vocabSize}`);
  }
  pruneUnreadRamOutputs(ctx.ops, lmHeadDims);
  const embedded = ctx.embedded;
  const embedDims = [...embedded.keys()];
  return {
    dims: ctx.dims,
    ops: ctx.ops,
    embedding: embeddingRows(embedDims.map((d) => [d, embedded.get(d)!] as const), ir.vocab),
    embedDims,
    lmHead,
    lmHeadDims,
  };
}

/**
 * Token t's embedding entries (every embedded dim whose value at t is not ±0, in `dims` order; none
 * for t ≥ vocab), computed once, column by column, into flat arrays: the assembler asks for every
 * token of the target's vocabulary (≈ 248,000 for Qwen3.5), and an object per dim per token was
 * most of the RV32 chip's assembly time in allocation and garbage collection. (Exported for its
 * tests.)
 */
export function embeddingRows(dims: readonly (readonly [VDim, EmbedValues])[], vocab: number): TokenRow {
  // Two passes over the columns: count each token's entries, then place them (a counting sort by
  // token that keeps each token's entries in dims order), without intermediate arrays. A column
  // given as a function (constants) is tabulated first.
  const columns = dims.map(([, f]) => (typeof f === 'function' ? tabulate(f, vocab) : f));
  const perToken = new Int32Array(vocab + 1);
  for (const c of columns) countPerToken(perToken, c.tokens, c.values, vocab);
  for (let t = 0; t < vocab; t++) perToken[t + 1]! += perToken[t]!;
  const n = perToken[vocab]!;
  const next = perToken.slice(0, vocab);
  // The narrowest arrays that hold the entries exactly: a dim index in 16 bits (a chip embeds a
  // few hundred dims), a value in float32 unless some column's is not one. The RV32 chip has ≈ 5
  // million entries, and fresh pages cost a fault each (docs/benchmarks.md "Page faults").
  const rowDim = columns.length <= 0x10000 ? new Uint16Array(n) : new Int32Array(n);
  const rowVal = columns.every((c) => exactInFloat32(c.values)) ? new Float32Array(n) : new Float64Array(n);
  for (let j = 0; j < columns.length; j++) placeColumn(next, rowDim, rowVal, columns[j]!.tokens, columns[j]!.values, j, vocab);
  const dimAt = dims.map(([d]) => d);
  return (t, put) => {
    if (!(t >= 0 && t < vocab)) return;
    for (let e = perToken[t]!; e < perToken[t + 1]!; e++) put(dimAt[rowDim[e]!]!, rowVal[e]!);
  };
}

type ColumnValues = Column['values'];

// embeddingRows' two passes, a function each, called per column

/** perToken[t + 1] += the column's entries at token t (t < vocab, value not 0). */
function countPerToken(perToken: Int32Array, tokens: Int32Array, values: ColumnValues, vocab: number): void {
  for (let e = 0; e < tokens.length; e++) {
    const t = tokens[e]!;
    if (t < vocab && values[e] !== 0) perToken[t + 1]!++;
  }
}

/** Places column j's entries (t < vocab, value not 0) at next[t]++ in rowDim / rowVal. */
function placeColumn(
  next: Int32Array, rowDim: Uint16Array | Int32Array, rowVal: Float32Array | Float64Array, tokens: Int32Array, values: ColumnValues,
  j: number, vocab: number,
): void {
  for (let e = 0; e < tokens.length; e++) {
    const t = tokens[e]!;
    const v = values[e]!;
    if (t >= vocab || v === 0) continue;
    const at = next[t]!++;
    rowDim[at] = j;
    rowVal[at] = v;
  }
}

/** Whether every value is a float32 (Math.fround leaves it as it is): always for 8- and 16-bit integers. */
function exactInFloat32(values: ColumnValues): boolean {
  if (values instanceof Int8Array || values instanceof Uint8Array || values instanceof Int16Array) return true;
  for (let e = 0; e < values.length; e++) if (Math.fround(values[e]!) !== values[e]!) return false;
  return true;
}

/** The non-zero entries of f over the ids 0 … vocab − 1, as a column. */
function tabulate(f: (t: number) => number, vocab: number): { tokens: Int32Array; values: Float64Array } {
  const ids: number[] = [];
  const vals: number[] = [];
  for (let t = 0; t < vocab; t++) {
    const v = f(t);
    if (v !== 0) {
      ids.push(t);
      vals.push(v);
    }
  }
  return { tokens: Int32Array.from(ids), values: Float64Array.from(vals) };
}

/**
 * A RAM's lowering gives every field of every read port a dim (and its read groups theirs); the
 * ones no op and no LM head row reads are dropped from the op's writes and its read-out (out_proj
 * columns), so they take no slot. (A 32-bit word read for its nibbles, say, leaves its bits.)
 */
function pruneUnreadRamOutputs(ops: LoweredOp[], lmHeadDims: VDim[]): void {
  const read = new Set<VDim>(lmHeadDims);
  for (const op of ops) for (const d of op.reads) read.add(d);
  for (const op of ops) {
    if (op.kind !== 'gdn' || op.ram === undefined || op.writes.every((d) => read.has(d))) continue;
    op.writes = op.writes.filter((d) => read.has(d));
    for (const h of op.heads) for (const v of h.values) if (v !== null) v.out = v.out.filter((o) => read.has(o.dim));
  }
}
