/**
 * The lowered circuit: what the lowering passes add to the IR. Every IR signal that must exist
 * in the residual stream gets virtual dims (one per encoding element: a scalar, bits, a one-hot),
 * and every operation becomes a LoweredOp of one sublayer kind that reads some virtual dims and
 * writes others. Scheduling assigns each op a sublayer; packing assigns each virtual dim a slot;
 * assembly turns the ops' unit/head specs into weights.
 *
 * Sublayer timeline: the embedding is sublayer −1; layer L's mixer is sublayer 2L and its FFN is
 * 2L + 1; the LM head reads after the last sublayer. A value written by sublayer s is visible to
 * every sublayer > s.
 */
import type { NodeId } from '../ir/types.ts';
import type { AttnKvHeadSpec, FfnUnit, GdnKeyHeadSpec, IntInput, RampOutput, VDim } from './forms.ts';
import type { GdnRamLowering } from './ram-lowering.ts';

/**
 * How a dim encodes its signal's value v: 'scalar' v; 'bits' bit `index` of (v − base); 'onehot'
 * [v = lo + index]; a delay line's 'delayed' (v − base from position d on, 0 before) and 'valid'
 * (0 before position d, then 1), d = the conv tap it reads: index 0 for d = 1 (one delay), else
 * index = d (2 or 3: a delay of delays); 'delayedBit' bit `index` of the source's (v − base) from
 * position `tap` on (0 before: the idempotent delay RAMs of passes/lower-prev.ts); 'residue'
 * [(v − base) mod modulus = index] (the one-hot of a table's low bits: lower-ram.ts).
 */
export type Encoding = 'scalar' | 'bits' | 'onehot' | 'delayed' | 'delayedBit' | 'valid' | 'residue';

export interface VDimInfo {
  id: VDim;
  /** The IR node this dim encodes (−1 for internal temporaries). */
  node: NodeId;
  encoding: Encoding;
  /** Element index within the encoding (bit index, one-hot position). */
  index: number;
  /** bits: the dim holds bit `index` of (value − base). */
  base?: number;
  /** Delay encodings: the conv tap d the dim reads (position t − d). */
  tap?: number;
  /** residue: the dim holds [(value − base) mod modulus = index]. */
  modulus?: number;
  /** Raw value range of the dim. */
  lo: number;
  hi: number;
  /** Display name: `signal`, `signal.bit3`, `signal=5`. */
  name: string;
}

interface OpBase {
  id: number;
  /** IR node (or RAM / lookup declaration) this op implements, for reports and errors. */
  what: string;
  reads: VDim[];
  writes: VDim[];
}

export interface FfnOp extends OpBase {
  kind: 'ffn';
  units: FfnUnit[];
  /** For a lookup table: its index input and values per output dim (what fuse-tables merges). */
  table?: { input: IntInput; outs: RampOutput[] };
}

export interface GdnOp extends OpBase {
  kind: 'gdn';
  heads: GdnKeyHeadSpec[];
  /** The RAM this op implements (its IR id), with the gadget's lowering (layout, head roles). */
  ram?: { id: number; lowering: GdnRamLowering };
  /** The gated-norm weight the op's value heads need (ops sharing a layer must agree). */
  normWeight?: number;
}

export interface AttnOp extends OpBase {
  kind: 'attn';
  heads: AttnKvHeadSpec[];
  /** Layer-wide q_norm / k_norm weights this op needs (ops sharing a layer must agree). */
  qNormWeight?: number[];
  kNormWeight?: number[];
}

export type LoweredOp = FfnOp | GdnOp | AttnOp;

/**
 * One row per token id: `row(t, put)` calls put(dim, x) for each entry of token t's row, in a fixed
 * order (none for an id outside the circuit's vocabulary). A visitor, not an array: the assembler
 * reads every row of a ≈ 248,000-token vocabulary, and an object per entry was most of its garbage.
 */
export type TokenRow = (token: number, put: (dim: VDim, x: number) => void) => void;

export interface LoweredCircuit {
  dims: VDimInfo[];
  ops: LoweredOp[];
  /** Embedding contents: the raw value of each vdim of token t's row that is not 0. */
  embedding: TokenRow;
  /** Dims written by the embedding. */
  embedDims: VDim[];
  /** LM head rows: which dims the LM head reads for token t, and with what weight. */
  lmHead: TokenRow;
  /** Dims the LM head reads (live until the end). */
  lmHeadDims: VDim[];
}
