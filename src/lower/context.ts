/**
 * The lowering context: allocates virtual dims for the encodings of IR signals and records the
 * ops that produce them. Encodings are created on demand, memoised per (signal, encoding):
 *
 * - scalar: the signal's value. Constants and linear nodes have no dim of their own — their
 *   scalar is a *form* folded into every consumer's weights (`formOf`); a dim is materialised
 *   (one LIN unit) only where a consumer needs a dim (`scalarDim`).
 * - bits(base, width): bit j of (value − base), LSB first, for RAM addresses and words and lookup
 *   keys (a common base makes equal values give equal bits).
 * - onehot: dim j is [value = lo + j], for the LM head.
 *
 * Token fields and constants get every encoding from the embedding for free; computed signals
 * get bits and one-hots from one ramp table over their scalar form (one FFN sublayer later).
 */
import { fmtLoc, type CircuitIR, type IrNode, type NodeId, type SourceLoc, type TokenValues } from '../ir/types.ts';
import { ChipcError } from '../util/errors.ts';
import { combine, constForm, form, type Form, type VDim } from './forms.ts';
import type { Encoding, LoweredOp, VDimInfo } from './lowered.ts';
import { SLOT_LIMIT } from './frame.ts';
import { encodingColumns, nonZeroTokensInto, valuesAt } from './token-columns.ts';

/**
 * An embedded dim's values: a function of the token id, or its non-zero entries as a column
 * (ascending token ids, each with its value).
 */
export type EmbedValues = ((token: number) => number) | Column;

/**
 * An embedding column: the ids whose value is not 0 (ascending) and their values — in the integer
 * type of the token field's own table where it has one, as 0/1 bytes for one-hot and bit dims: a
 * Float64Array of every field's values was ≈ 300 MB of fresh memory in the RV32 chip's first
 * lowering.
 */
export type Column = { readonly tokens: Int32Array; readonly values: Float64Array | Int8Array | Int16Array | Int32Array | Uint8Array };

// The embedding columns made from each token field's table, per encoding key. They depend only on
// the table and the key, never on the circuit being lowered, and are never written after they are
// made; a table passed to several builds (src/cpu/cpu-tokens.ts protocolField) is scanned once.
const fieldColumns = new WeakMap<TokenValues, Map<string, readonly Column[]>>();

function keepColumns(values: TokenValues, key: string, cols: readonly Column[]): void {
  let byKey = fieldColumns.get(values);
  if (byKey === undefined) fieldColumns.set(values, (byKey = new Map()));
  byKey.set(key, cols);
}

type OpInit = LoweredOp extends infer O ? (O extends LoweredOp ? Omit<O, 'id'> : never) : never;

/**
 * What the lowering driver (passes/lower.ts) lowers on the context's demand: lowering is
 * demand-driven, so a producer asks the context for its inputs' forms and dims, which may call a
 * producer again. Given to the constructor, so the context never imports a pass and never runs
 * without them.
 */
export interface Producers {
  /** The form of a node whose value is a form over other dims (delay lines: value and valid), or null. */
  form(ctx: LowerContext, n: IrNode): Form | null;
  /** The scalar dim of a computed node (arith, RAM, lookups). */
  scalar(ctx: LowerContext, n: IrNode): VDim;
}

export class LowerContext {
  readonly dims: VDimInfo[] = [];
  readonly ops: LoweredOp[] = [];
  /** Embedded dims and the raw value of each for token t. */
  readonly embedded = new Map<VDim, EmbedValues>();
  private readonly forms = new Map<NodeId, Form>();
  private readonly scalarDims = new Map<NodeId, VDim>();
  private readonly encodings = new Map<string, VDim[]>();
  private columnScratch = new Int32Array(0);

  /**
   * `gdnKeyHeads`: the target's GDN key heads per layer, for the lowering's own estimates of where
   * ops land (a choice's case read from its slot or not); `ffnUnits`: its FFN units per layer, so
   * that an op the lowering may build whole or in parts (a sum as one dim) is built in parts when
   * whole it would crowd a layer. Both unbounded when not given.
   */
  /** Each RAM read group (RamReadPort.groups) → a result of its port, whose lowering writes the group's dim. */
  private readonly readGroups = new Map<NodeId, NodeId>();

  constructor(readonly ir: CircuitIR, private readonly producers: Producers, readonly gdnKeyHeads = Infinity, readonly ffnUnits = Infinity) {
    for (const ram of ir.rams) for (const port of ram.reads) for (const g of port.groups ?? []) this.readGroups.set(g, port.results[0]!);
  }

  node(id: NodeId): IrNode {
    return this.ir.nodes[id]!;
  }

  fail(n: { loc: SourceLoc }, code: string, msg: string): never {
    throw new ChipcError(code, `${fmtLoc(n.loc)}: ${msg}`);
  }

  newDim(node: NodeId, encoding: Encoding, index: number, lo: number, hi: number, name: string): VDim {
    const id = this.dims.length;
    this.dims.push({ id, node, encoding, index, lo, hi, name });
    return id;
  }

  addOp(op: OpInit): LoweredOp {
    const full = { ...op, id: this.ops.length } as LoweredOp;
    this.ops.push(full);
    return full;
  }

  /** Follow wires to the node that defines the value. */
  resolve(id: NodeId): IrNode {
    let n = this.node(id);
    while (n.op === 'wire') n = this.node(n.source!);
    return n;
  }

  /** A dim the embedding fills with value(token) for every token (or with a column's entries). */
  embedDim(node: NodeId, encoding: Encoding, index: number, lo: number, hi: number, name: string, value: EmbedValues): VDim {
    const d = this.newDim(node, encoding, index, lo, hi, name);
    this.embedded.set(d, value);
    return d;
  }

  /**
   * The 0/1 dims 0 … count−1 of a token field's one-hot or bit encoding, all filled in one pass
   * over its values (a field has a value for each of the vocabulary's ids, ≈ 248,000 on the RV32
   * chip; a function per dim visited every id once per dim): `entries(v, put)` calls put(j, x)
   * for each dim j whose value is x ≠ 0 when the field's value is v (`dflt` where it has none).
   * `entriesKey` names what `entries` computes (the encoding and its parameters): the columns are
   * kept per field table and key, so a circuit lowered again whose fields are the same tables
   * (the RV32 chip's protocol fields) reuses them.
   */
  embedFieldDims(
    n: IrNode & { op: 'token_field' }, encoding: 'onehot' | 'bits', count: number, nameOf: (j: number) => string,
    entriesKey: string, entries: (v: number, put: (j: number, x: number) => void) => void, dflt: number,
  ): VDim[] {
    const vocab = this.ir.vocab;
    const key = `${encoding}|${entriesKey}|${count}|${dflt}|${vocab}`;
    const kept = fieldColumns.get(n.values)?.get(key);
    if (kept) return kept.map((c, j) => this.embedDim(n.id, encoding, j, 0, 1, nameOf(j), c));
    const cols = encodingColumns(n.values, vocab, dflt, count, entries, n.name, encoding);
    keepColumns(n.values, key, cols);
    return cols.map((c, j) => this.embedDim(n.id, encoding, j, 0, 1, nameOf(j), c));
  }

  /** The value of a signal as a linear form over dims (folding constants and linear nodes). */
  formOf(id: NodeId): Form {
    const n = this.resolve(id);
    const memo = this.forms.get(n.id);
    if (memo) return memo;
    let f: Form;
    // a RAM read group has a dim of its own (scalarDim: its RAM's lowering writes it)
    if (this.readGroups.has(n.id)) f = form([{ dim: this.scalarDim(n.id), coef: 1 }], 0);
    else if (n.op === 'const') f = constForm(n.value);
    else if (n.op === 'linear') {
      // a choice or a sum of compares and tables may have a dim of its own (producers.form); else its terms' sum
      const own = this.producers.form(this, n);
      if (own !== null) f = own;
      else {
        f = constForm(n.bias);
        for (const t of n.terms) f = combine(1, f, t.coef, this.formOf(t.node));
      }
    } else f = this.producers.form(this, n) ?? form([{ dim: this.scalarDim(n.id), coef: 1 }], 0);
    this.forms.set(n.id, f);
    return f;
  }

  /** A dim holding the signal's value (materialised with one LIN unit for folded forms). */
  scalarDim(id: NodeId): VDim {
    const n = this.resolve(id);
    const memo = this.scalarDims.get(n.id);
    if (memo !== undefined) return memo;
    const group = this.readGroups.get(n.id);
    if (group !== undefined) {
      this.scalarDim(group); // the RAM's lowering sets the group's dim
      const dim = this.scalarDims.get(n.id);
      if (dim === undefined) throw new Error(`internal: read group "${n.name}" has no dim after its RAM's lowering`);
      return dim;
    }
    if (n.range.lo < -SLOT_LIMIT || n.range.hi > SLOT_LIMIT) {
      this.fail(n, 'lower.range', `signal "${n.name}" has range [${n.range.lo}, ${n.range.hi}]; a residual slot holds integers within ±${SLOT_LIMIT} exactly (split it into digits)`);
    }
    let d: VDim;
    if (n.op === 'token_field') {
      d = this.embedDim(n.id, 'scalar', 0, n.range.lo, n.range.hi, n.name, this.nonZeroColumn(n.values));
    } else if (n.op === 'const') {
      const v = n.value;
      d = this.embedDim(n.id, 'scalar', 0, v, v, n.name, () => v);
    } else {
      d = this.producers.scalar(this, n);
    }
    this.scalarDims.set(n.id, d);
    return d;
  }

  /** Record the form of a node computed by a producer that lowers several nodes at once. */
  presetForm(id: NodeId, f: Form): void {
    this.forms.set(id, f);
  }

  /** Record a scalar dim produced by an op (called by producers). */
  setScalarDim(id: NodeId, d: VDim): void {
    this.scalarDims.set(id, d);
  }

  /** The non-zero entries of values[0 … vocab) (a missing value is 0) as an embedding column. */
  private nonZeroColumn(values: TokenValues): EmbedValues {
    const key = `scalar|${this.ir.vocab}`;
    const kept = fieldColumns.get(values)?.get(key);
    if (kept) return kept[0]!;
    const n = Math.min(this.ir.vocab, values.length);
    // (the non-zero ids of one field go to a scratch array of the context, then are copied out)
    const at = this.columnScratch.length >= n ? this.columnScratch : (this.columnScratch = new Int32Array(n));
    const count = nonZeroTokensInto(values, n, at);
    const tokens = at.slice(0, count);
    const column = { tokens, values: valuesAt(values, tokens) };
    keepColumns(values, key, [column]);
    return column;
  }

  /** Memoised encodings other than scalar. */
  encoding(key: string, make: () => VDim[]): VDim[] {
    const memo = this.encodings.get(key);
    if (memo) return memo;
    const dims = make();
    this.encodings.set(key, dims);
    return dims;
  }
}

/** Run a gadget constructor; a gadget's bound violation becomes a circuit error at the node. */
export function atNode<T>(ctx: LowerContext, id: NodeId, what: string, make: () => T): T {
  try {
    return make();
  } catch (e) {
    // Only a gadget's own bound violation is this node's problem; errors raised while building
    // the node's inputs (another node's gadget, a RAM that does not fit) pass through unchanged.
    if (e instanceof ChipcError && e.code.startsWith('ffn.')) {
      const n = ctx.resolve(id);
      ctx.fail(n, 'lower.gadget', `${what} of signal "${n.name}" cannot be built exactly: ${e.message}`);
    }
    throw e;
  }
}
