/**
 * The circuit IR: a graph of integer-valued nodes evaluated once per token position, plus the
 * stateful resources that connect positions (RAMs on pinned Gated DeltaNet heads, lookups on
 * hard-attention heads) and the token output. Node ids are dense, stable and in creation order,
 * which is also a valid evaluation order once forward wires are resolved (the validator checks).
 *
 * Semantics at position t with input token x_t (the interpreter in interpret.ts is the oracle):
 * - `token_field` is table[x_t]; `const`, `linear`, `table`, `compare`, `select`, `logic` are
 *   exact integer functions of their inputs;
 * - a RAM applies this position's write (when enabled), then every read returns the row's value
 *   after that write ("read sees write"); rows start at 0;
 * - a lookup publishes (key, value) at t when `publish` is 1, then returns the value of the latest
 *   published position s ≤ t whose key equals the query (latest = largest stamp; without a stamp
 *   keys must be unique among published positions), or the default values with hit = 0;
 * - `prev` is the source's value at position t − 1 (its default at position 0);
 * - the emitted token is `emit.fn(values of emit.fields)` (or the one emit row all of whose
 *   required field values hold).
 */

export type NodeId = number;

export interface SourceLoc {
  file: string;
  line: number;
  col: number;
}

/** `file:line:col`, the prefix of every circuit error (here, not in src/dsl, so that ir/, lower/ and passes/ need not import the DSL). */
export function fmtLoc(loc: SourceLoc): string {
  return `${loc.file}:${loc.line}:${loc.col}`;
}

/** A problem the builder found in a call's arguments: collected, then reported by the validator with every other problem. */
export interface Problem {
  code: string;
  message: string;
  loc: SourceLoc;
}

/** Closed integer interval [lo, hi]. */
export interface Range {
  lo: number;
  hi: number;
}

export type CompareOp = 'eq' | 'ne' | 'lt' | 'le' | 'gt' | 'ge';
export type LogicOp = 'and' | 'or' | 'xor' | 'not';

interface NodeBase {
  id: NodeId;
  /** A user-visible name (unique within the circuit; generated when not given). */
  name: string;
  /** Declared or inferred value range. */
  range: Range;
  loc: SourceLoc;
}

/** A token field's values by token id: a plain array, or a typed array of integers (a compact table). */
export type TokenValues = readonly number[] | Int8Array | Int16Array | Int32Array;

export interface TokenFieldNode extends NodeBase {
  op: 'token_field';
  /** values[tokenId]: the field's value for every token id of the circuit vocabulary. */
  values: TokenValues;
}
export interface ConstNode extends NodeBase {
  op: 'const';
  value: number;
}
export interface LinearNode extends NodeBase {
  op: 'linear';
  terms: { node: NodeId; coef: number }[];
  bias: number;
  /**
   * A choice (`c.choose`): every term is a select(cond, value, 0) with coefficient 1, the bias is 0,
   * and at most one cond holds at any position (the interpreters check it).
   */
  choice?: true;
}
export interface TableNode extends NodeBase {
  op: 'table';
  inputs: NodeId[];
  /** Row-major over the inputs' ranges (first input slowest): values[Σ (v_i − lo_i)·stride_i]. */
  values: number[];
  /** Built from the cases of its one input, a choice (`c.table(…, { overCases: true })`). */
  overCases?: true;
}
export interface CompareNode extends NodeBase {
  op: 'compare';
  cmp: CompareOp;
  a: NodeId;
  b: NodeId;
}
export interface SelectNode extends NodeBase {
  op: 'select';
  cond: NodeId;
  then: NodeId;
  else: NodeId;
}
export interface LogicNode extends NodeBase {
  op: 'logic';
  logic: LogicOp;
  args: NodeId[];
}
export interface RamReadNode extends NodeBase {
  op: 'ram_read';
  ram: number;
  /** Which read port of the RAM (one key-head copy per port). */
  port: number;
  /** Which field of the RAM word. */
  field: number;
}
export interface LookupResultNode extends NodeBase {
  op: 'lookup_value';
  lookup: number;
  /** Index into the lookup's value fields, or −1 for the hit flag. */
  field: number;
}
/**
 * The value `source` had at the previous position (`default` at position 0): a one-position delay
 * line, compiled to a GDN head whose value channels take the causal conv's previous-token tap.
 * `source` must not depend on this node (a feedback loop through a delay cannot be compiled: the
 * source would be needed before the layer that holds the delay).
 */
export interface PrevNode extends NodeBase {
  op: 'prev';
  source: NodeId;
  default: number;
  /** Delays made together (`c.previousAll`) share one group id and are lowered as one RAM word. */
  group?: number;
}
/** A forward reference: takes the value of `source` (assigned later in the builder). */
export interface WireNode extends NodeBase {
  op: 'wire';
  source: NodeId | null;
}

export type IrNode =
  | TokenFieldNode
  | ConstNode
  | LinearNode
  | TableNode
  | CompareNode
  | SelectNode
  | LogicNode
  | RamReadNode
  | LookupResultNode
  | PrevNode
  | WireNode;

export interface RamWritePort {
  addr: NodeId;
  values: NodeId[];
  /** 0/1; absent = always write. */
  enable: NodeId | null;
  loc: SourceLoc;
}

export interface RamReadPort {
  addr: NodeId;
  /** 0/1; absent = always read. A disabled read returns zeros. */
  enable: NodeId | null;
  /** Result nodes, one per field. */
  results: NodeId[];
  /**
   * Linear nodes over this port's results (Σ coef·field, bias 0) that the read-out writes as
   * values of their own (`Ram.readWithGroups`): a consumer then reads one dim where it would read
   * one per field (say, a nibble of a word whose fields are its bits).
   */
  groups?: NodeId[];
  loc: SourceLoc;
}

export interface RamDecl {
  id: number;
  name: string;
  rows: number;
  /** Value range of each field of a word. Fields are unsigned (lo = 0). */
  fields: Range[];
  write: RamWritePort | null;
  reads: RamReadPort[];
  loc: SourceLoc;
}

export interface LookupDecl {
  id: number;
  name: string;
  key: NodeId[];
  value: NodeId[];
  query: NodeId[];
  /** Recency stamp of each published entry (latest = largest); null = keys unique. */
  stamp: NodeId | null;
  /** 0/1; null = every position publishes. */
  publish: NodeId | null;
  defaults: number[];
  /** Result nodes: one per value field, then the hit flag. */
  results: NodeId[];
  hit: NodeId;
  loc: SourceLoc;
}

export interface EmitRow {
  readonly token: number;
  /** Required value of each emit field (null: any value). */
  readonly values: readonly (number | null)[];
}

export interface EmitDecl {
  fields: NodeId[];
  /**
   * Full table: tokens[Σ (v_i − lo_i)·stride_i] over the fields' ranges — the token emitted for
   * each tuple (`c.emit`). Empty when `rows` is given.
   */
  tokens: number[];
  /**
   * Partial rows (`c.emitRows`): each token names the values it requires of some fields; the
   * validator proves at most one row matches any tuple, and the interpreter requires exactly one.
   */
  rows?: readonly EmitRow[];
  loc: SourceLoc;
}

export interface CircuitIR {
  /** IR format version (bumped on incompatible change). */
  version: 1;
  name: string;
  /** Number of token ids of the circuit (ids 0 … vocab−1). */
  vocab: number;
  /** The token id that starts every sequence (required by lookups: their default sink). */
  bos: number | null;
  nodes: IrNode[];
  rams: RamDecl[];
  lookups: LookupDecl[];
  emit: EmitDecl | null;
  /** The circuit file the IR was built from (relative path as given). */
  source: string;
  /** The circuit's own description lines (CircuitMeta.notes), printed by `chipc compile --report`. */
  notes?: string[];
}

/** Largest magnitude a single residual slot holds exactly in every profile (bf16: 8 significant bits). */
export const SLOT_MAX = 256;
