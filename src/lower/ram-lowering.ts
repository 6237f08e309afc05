/**
 * What the RAM gadget (gadgets/gdn-ram.ts, whose header explains the layout) returns and a lowered
 * GDN op carries: the key head specs, each head's role, the row layout and the cost. Types only;
 * they sit here, below the gadgets, so that lower/lowered.ts need not import a gadget.
 */
import type { GdnKeyHeadSpec } from './forms.ts';

/** The numbers of the row layout (see the header of gadgets/gdn-ram.ts). */
export interface GdnRamLayout {
  keyScale: number;
  /** Address bits (ceil(log2 rows)). */
  addrBits: number;
  /** Rows held by one key head (a power of two ≤ dk) and the key heads per copy along the rows. */
  rowsPerKeyHead: number;
  rowBlocks: number;
  /** Bits of the word, their digit groups (≥ 1: group 0 also carries the valid flag). */
  wordBits: number;
  groups: number;
  /** dv/4 digit groups per value head. */
  groupsPerValueHead: number;
  valueHeadsPerWord: number;
  /** Key heads along the word (ceil(valueHeadsPerWord / r); 1 for packed rows). */
  wordParts: number;
  /**
   * Words per key-head row: 2 for packed rows (value head j of a key head holds the rows whose
   * address bit `selectBit` is j), else 1. Absent in manifests written before packing: 1.
   */
  wordsPerRow?: number;
  /**
   * Packed rows: the address bit (≥ log2 rowsPerKeyHead) that selects the value head. State row i
   * of value head j in row block b holds the row whose other bits are b·rowsPerKeyHead + i.
   */
  selectBit?: number;
  /** First word bit of each field; field widths. */
  fieldOffset: number[];
  fieldWidth: number[];
  hot: HotValue;
  /** Mismatch penalty P of the value form. */
  penalty: number;
  /** Gate pre-activation (silu(z) = z) and the gated-norm weight the whole GDN layer must use. */
  zConst: number;
  normWeight: number;
  /** Output of a hot column after the gated norm (a power of two). */
  hotOut: number;
}

export interface GdnRamCost {
  keyHeads: number;
  valueHeads: number;
  /** Non-zero weights of the heads' rows (q, k, v, z, b with constants split into bf16 parts) and out_proj. */
  nonZeros: number;
  /** Largest number of non-zero products summed into one output dim. */
  maxProductsPerOutput: number;
}

/** Where key head i of `heads` sits: which read port copy, which row block, which part of the word. */
export interface GdnRamHeadRole {
  port: number;
  block: number;
  part: number;
}

export interface GdnRamLowering {
  heads: GdnKeyHeadSpec[];
  roles: GdnRamHeadRole[];
  /** The gated-norm weight every value head of the layer must share (LayerSpec.mixer.normWeight entries). */
  normWeight: number;
  layout: GdnRamLayout;
  cost: GdnRamCost;
}

/** The hot value of a row entry and what it reads back as. */
export interface HotValue {
  /** Stored hot value (float32). */
  T: number;
  /** fl(T·fl(1/√dk)) — a power of two ≥ 16 — and the same in the bf16 profile (T rounded to bf16 first). */
  oHot: number;
  /** bf16(T): the value stored in the bf16 profile. */
  Tbf16: number;
  /** fl(1/√dk), the query scale. */
  qScale: number;
}
