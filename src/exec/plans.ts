/**
 * The fast decoder's caches, owned by objects instead of modules: `ExecPlans` (what is derived
 * from the weights, shared by every executor on the same ModelWeights) and `ExecMemos` (what one
 * numeric context remembers between calls, one per context). Also the types of what they hold
 * (re-exported by the modules that use them), so that this file imports no module of src/exec/
 * but types.ts and every module of the executor can import it without an import cycle.
 *
 * Classification of every cache of src/exec/ (the key is the object the entry is kept for):
 *
 *  (a) derived purely from the weights (a plan of a matrix, a per-layer flag) — ExecPlans:
 *      - csrFinite (CsrMatrix → every stored value finite), derivedCsr (dense array → its CSR),
 *        sparsePlans (Matrix → SparsePlan), cscPlans (a CSR → CscPlan | null), columnRuns (a CSR →
 *        ColumnRuns | null), rowUnions (gate Matrix → union of gate/up non-empty rows):
 *        matmul-plans.ts;
 *      - boundedPreps (CscPlan or ColumnRuns → packed small columns, column companions): matmul-argmax.ts;
 *      - weightLowbits (a CSR's values → lowest set bit of each stored weight): delta.ts;
 *      - stacks (first part → row stacks [A; B; …]): stack-rows.ts;
 *      - convZero (conv1d weights → finite taps, all-+0 channel output), inProjLists (GdnWeights →
 *        [qkv, z, b, a]): gdn-token.ts; convLive (stacked in_proj → live conv channels), convAlias
 *        (stacked in_proj → aliased conv blocks), convAliasStacks (stacked in_proj → the stack
 *        without the aliased blocks' rows): conv-alias.ts;
 *        singleTap (conv1d weights → single-tap weights): gdn-tracked.ts; idleLayers (GdnWeights →
 *        all in_proj weights +0): gdn-idle.ts;
 *      - gateUpLists (MLP → [gate, up]): mlp.ts; onePlus (norm weights → fl(1 + w)): norms.ts.
 *  (b) a memo of outputs that depends on the weights and the numeric mode:
 *      - idleOutputs (GdnWeights → numeric mode → the idle step's output; gdn-idle.ts): a pure
 *        function of the weights and the mode, keyed by both — ExecPlans;
 *      - deltaStates (delta.ts), argmaxMemos (matmul-argmax.ts), ffnDeltaStates (mlp.ts): per
 *        numeric context and matrix, the last input/output of an incremental matmul, the greedy
 *        token per activation key, SwiGLU's kept h — ExecMemos, one per context (an executor's
 *        decode state: they follow what that executor ran, so they are never shared; the argmax
 *        memo's hit counts are per executor too).
 *  (c) scratch buffers, carrying nothing from one call to the next that the call relies on:
 *      - argmaxStates (Matrix → SparseOut and activation scratch; the SparseOut clears the rows
 *        its previous call touched, whoever made it; the bit view of the activation vector it was
 *        last called with, remade for any other vector), supportBuffers (gate/up row union → the
 *        down projection's input buffer, +0 outside the union, an invariant every call keeps),
 *        ffnScratch (SwiGLU's g and u) — ExecPlans (sized by the weights; sharing them costs
 *        nothing, calls are synchronous).
 *
 * What stays module-level, and why: delta.ts `inputStamps` (a counter whose stamps must be
 * unique across every executor: a DeltaShare compares them) and fixed-size scratch that holds
 * nothing between calls (delta.ts bitsScratch, gdn-token.ts nzScratch, norms.ts sqScratch);
 * profile.ts `activeTimes` (opt-in timings, not a cache); `plansByWeights` below.
 *
 * The size thresholds of the sparse path are per executor: `ExecOptions.tuning`, held by the
 * numeric context (`ctx.tuning`, defaults DEFAULT_TUNING).
 */
import type { CsrMatrix, GdnWeights, Matrix, ModelWeights } from '../model/weights.ts';
import type { GdnDims } from '../model/naming.ts';
import type { ExecTuning } from './types.ts';
import { ZeroArena } from './arena.ts';
import type { DeltaArrays, DeltaAt, ViewAt, WasmHeap } from './wasm-heap.ts';

/** The sparse path's size thresholds, every one set (ExecOptions.tuning over DEFAULT_TUNING). */
export type SparseTuning = Required<ExecTuning>;

/** The thresholds the executor runs with unless ExecOptions.tuning says otherwise. */
export const DEFAULT_TUNING: Readonly<SparseTuning> = Object.freeze({
  /** Stored entries of a matrix below which the row walk is used instead of the scatter form. */
  scatterMinNnz: 65536,
  /**
   * A column with more stored entries than this is "big" for boundedArgmax (folded through the
   * CSR rows instead of a packed copy, and never the last one taken). The chip's emit columns: a
   * payload byte value reaches ≈ 1,000 – 2,300 rows, a token kind 16 k – 65 k.
   */
  bigColumn: 4096,
  /**
   * Token ids whose embedding rows an executor keeps as their entries (residual-track.ts
   * setEmbeddingEntries; about 300 bytes each). A long run feeds tens of thousands of distinct
   * payload ids; past this many the kept rows start over.
   */
  embedRowsKept: 4096,
  /**
   * MiB of the context's WebAssembly memory, for the wasm kernels and the arrays they read
   * (wasm-kernels.ts, wasm-gdn-kernels.ts; address space, touched only where used: crc32 on the
   * generic chip carves 69.4 MiB of it at qwen3.5-4b, most of it GDN states whose untouched pages
   * stay unmapped). 0 keeps everything in JavaScript (the same bits); what does not fit runs in
   * JavaScript.
   */
  wasmHeapMiB: 256,
  /**
   * For a matrix whose input lies outside the wasm memory: the stored entries per used column
   * below which its walks stay in JavaScript instead of being listed for the wasm walk (listing a
   * column costs about what walking a short one does: the chip's down projections, 1.4 entries a
   * changed column, were slower listed than walked in JavaScript).
   */
  wasmMinEntriesPerColumn: 4,
  /**
   * The tracked decode step (of a GDN layer's track; 1 its first) after which the layer's conv
   * blocks that repeat another's (the same in_proj rows and conv weights) run through it
   * (conv-alias.ts); 0: never (every block runs its own channels; the same bits). Finding them and
   * building the stack without their rows cost a fresh process about 60 ms at qwen3.5-4b, which
   * the 18 µs or so they save a token (crc32) return after about 3,000 tokens: they start past the
   * first 1,000 tokens of a run, the window `chipc run` shows first.
   */
  aliasConvBlocks: 1024,
  /**
   * 1: a tracked GDN step whose input projections recomputed no row, with no conv channel active
   * and no value head to step, ends there and hands out its last result (gdn-tracked.ts
   * quietStep; the chip's RAM banks at rest, most tokens); 0: never (the same bits).
   */
  quietSteps: 1,
  /**
   * Entries each layer's FFN memo keeps (ffn-memo.ts: a step whose input bits on the columns the
   * FFN reads match an earlier computed step's takes that step's output), in two-way sets; each
   * its key's and its output's entries other than +0, in room for the whole key and the output on
   * the down projection's rows (at most 4.1 KB at qwen3.5-4b). 0: no memo (the same bits). Larger
   * tables found more and ran slower (crc32, paired against 1,024 entries past step 12,000: 512
   * −1.96 µs a token, 256 −1.94, 4,096 +5.62): a lookup's loads spread over more memory.
   */
  ffnMemoEntries: 512,
  /**
   * The tracked decode steps a layer's FFN takes before its memo runs (0: from the first). A memo
   * saves nothing while it learns: its first lookups find little, and its code is compiled and
   * recompiled then (crc32 at qwen3.5-4b, paired, started at 1,024 instead: +5.2 µs a token over
   * steps 1,000–8,000 with round 40's first rests, +0.38 and +0.66 with its final ones, −2.2 over
   * 2,000–22,000; docs/benchmarks.md "The executor's round 40" and "… round 41"). It starts past
   * the windows `chipc run` and bench/chip-speed.ts time by default, which it would not speed up.
   */
  ffnMemoFrom: 8192,
});

/**
 * What the sparse path precomputes once per Matrix: its CSR (own or derived), whether every stored
 * value is finite, the rows with at least one stored entry, and, for a matrix that also has a dense
 * form, which rows hold a −0 there (only those need the dense row to decide the sign of a zero
 * result; a dense row without −0 has +0 wherever the CSR has no entry, like a CSR-only row).
 */
export interface SparsePlan {
  csr: CsrMatrix;
  finite: boolean;
  /** The rows with at least one stored entry, ascending: null until nonEmptyRowsOf lists them. */
  nonEmptyRows: Uint32Array | null;
  /** 1 where the dense form's row has a −0 entry; null when there is no dense form. */
  denseNegZeroRow: Uint8Array | null;
}
/**
 * Column-major copy of a CSR matrix for the scatter form of the sparse path (built once per
 * matrix, cached): colPtr[c]..colPtr[c+1] index rowIdx/values, rows ascending within a column.
 * Null when some CSR row does not list its columns in strictly ascending order (the scatter form
 * sums each row in ascending column order, which is the CSR walk's order only for sorted rows).
 */
export interface CscPlan {
  colPtr: Uint32Array;
  /** 16-bit for a matrix of at most 65,536 rows (every matrix of the chip but its LM head), else 32. */
  rowIdx: Uint16Array | Uint32Array;
  values: Float32Array;
  /** The largest number of stored entries in one row. */
  maxRowNnz: number;
  /** One past the last column with an entry (0 when none has one). */
  usedCols: number;
  /** The column extremes, null until first asked for (columnExtremesOf, matmul-plans.ts). */
  extremes: ColumnExtremes | null;
}

/**
 * Per column, the largest and the smallest stored weight (+0 for a column without entries; a NaN
 * weight is passed over; of equal weights, ±0, the first in row order): boundedArgmax's bounds.
 */
export interface ColumnExtremes {
  colMax: Float32Array;
  colMin: Float32Array;
}

/**
 * The lowest set bit of each stored weight (delta.ts weightLows): 8-bit when every one fits in
 * −128 … 127 (every float32's lies in −149 … 127: only a weight below 2^−104 can need 16 bits).
 */
export type WeightLows = Int8Array | Int16Array;

/**
 * A CscPlan in runs, for a matrix whose columns reach rows in arithmetic progressions of one
 * weight each (the chip's LM head: 810,016 stored entries in fewer than 2,000 runs, since a token
 * field's column reaches every id of that field at a fixed stride). Column c's runs are
 * q = runPtr[c] … runPtr[c+1), each at 4q … 4q+3 of `runs`: first row, row stride, entry count and
 * the weight (float32 bits; `weights[4q + 3]` is the same word as a float). A run of one entry has
 * stride 0. Within a column the runs' rows are ascending and disjoint, so walking them lists the
 * column's entries in the CscPlan's order with the same weights. colPtr and maxRowNnz are the
 * CscPlan's (colPtr counts entries, not runs), colMax and colMin its ColumnExtremes. Built by columnRunsOf
 * (matmul-plans.ts) in one pass over the CSR, writing only the runs.
 */
export interface ColumnRuns extends ColumnExtremes {
  runPtr: Uint32Array;
  runs: Int32Array;
  weights: Float32Array;
  colPtr: Uint32Array;
  maxRowNnz: number;
}

/** A stack of matrices over the same input: part p owns rows offsets[p] … offsets[p+1) of m. */
export interface RowStack {
  m: Matrix;
  offsets: number[];
}

export interface StackEntry {
  parts: readonly Matrix[];
  /** Each part's storage when the stack was built (a part given new storage gets a new stack). */
  csr: (CsrMatrix | undefined)[];
  dense: (Float32Array | undefined)[];
  stack: RowStack | null;
}

/**
 * A linear's output kept sparse across calls (scatterInto): `out` is +0 (bit pattern 0) outside
 * the rows touched[0..n), which are distinct; `mark[r]` = 1 exactly for those rows.
 */
export interface SparseOut {
  out: Float32Array;
  mark: Uint8Array;
  touched: Int32Array;
  n: number;
}
/**
 * linearArgmax's memo (per numeric context and matrix): the greedy token for a key = the list of
 * (column, bit pattern) of the non-zero activations in columns that hold weights. Valid only
 * where the scatter precondition holds (the caller checks maxRowNnz < cols − negTotal; the matrix
 * itself must qualify — `maxRowNnz` is +inf otherwise): then every row is a pure function of
 * those activations (scatterInto), so is the argmax. Keys are compared in full (no hash trust).
 */
/**
 * linearArgmax's per-matrix state (matmul-argmax.ts): the sparse output, the bit view of the
 * activation vector it was last called with (remade for any other vector), and the activations'
 * scan — the non-zero columns nz[0..nzn) ascending, the sign-bit-set count neg[0], the count of
 * non-finite activations — of the vector stamped `seenStamp`, whose bits `seen` holds (−1: none).
 */
export interface ArgmaxState {
  rows: number;
  so: SparseOut | null;
  nz: Int32Array;
  nzn: number;
  neg: Int32Array;
  nonFinite: number;
  seen: Uint32Array | null;
  seenStamp: number;
  x: Float32Array | null;
  xb: Uint32Array | null;
}

export interface ArgmaxMemo {
  /** The storage the memo describes (sparsePlanOf's CSR). */
  csr: CsrMatrix;
  colHasEntries: Uint8Array;
  /** The longest row (the CscPlan's or the ColumnRuns'), +inf where the matrix does not qualify. */
  maxRowNnz: number;
  map: Map<number, { key: Uint32Array; best: number }[]>;
  entries: number;
  scratch: Uint32Array;
  /** boundedArgmax's row scratch (made on first use). */
  rowMark?: Uint8Array;
  rowList?: Int32Array;
}
/**
 * What boundedArgmax derives from the weights alone, kept per matrix (per CscPlan or ColumnRuns)
 * rather than per memo, so every executor of the same weights shares it: per small column, made on
 * first use, its rows with their whole CSR rows (packedRowsOf). (The column extremes are the
 * CscPlan's or the ColumnRuns'.)
 */
export interface BoundedPrep {
  packed: ({ u: Uint32Array; f: Float32Array } | undefined)[];
  /** Per column c, made on first use: the other columns that hold an entry in a row where c does, ascending. */
  companions: (Int32Array | undefined)[];
  /** A zeroed scratch of one byte per column (companionsOf's marks). */
  colMark: Uint8Array | null;
}

/** The memo of one matrix's output (per numeric context: ExecMemos.deltaStates; delta.ts). */
export interface DeltaLinearState {
  /** The input bit patterns y was computed from. */
  /**
   * One record per input column c, at 4c … 4c+3, so that what a changed column needs lies in one
   * cache line (these reads were cache misses when they were four arrays): the input bit pattern y
   * was computed from (`colBits`, the same word as a float in `colVals`), M_c as a float32 (the
   * largest |x_c| seen is a float32; in `colVals` at 4c+1), L_c (`colInts` at 4c+2) and the first
   * stored entry of the column in the CSC plan (`colInts` at 4c+3, so column c's entries are
   * 4c+3 … 4(c+1)+3; 4·cols+3 holds the end). A state's first fold leaves the records past the
   * CscPlan's usedCols at +0 but for non-zero input bits (their walks are empty: delta.ts foldFresh).
   */
  colBits: Uint32Array;
  colVals: Float32Array;
  colInts: Int32Array;
  /** How many of those inputs have their sign bit set (x < 0 or −0). */
  negTotal: number;
  /** The output for the recorded input bits (all rows). */
  y: Float32Array;
  /**
   * Every row's fold in float32 before the profile's cast: y itself in f32; in bf16 its own array,
   * of which y holds bf(·), so that bounded rows and the tracked rows' exact updates read and write
   * the uncast sums in either profile.
   */
  acc: Float32Array;
  valid: boolean;
  /** True when the last call recomputed every row (then `rows` is not filled). */
  full: boolean;
  /** The rows recomputed by the last call (a superset of the rows whose value changed), rows[0..nRows). */
  rows: Int32Array;
  nRows: number;
  /**
   * Per row: bit 0 set for a tracked row (one with a `rowExact` record), clear for a bounded row;
   * bits 2 … 15 the `epoch` of the call that last reached the row, and bit 1 set when that call
   * refolds it (a tracked row that failed its exact update, or a bounded row that lost its bound).
   * A new call takes a new epoch, so nothing has to be cleared after a call.
   */
  mark: Uint16Array;
  /** The current call's epoch (1 … MAX_EPOCH; 0 is never current, the marks' initial value). */
  epoch: number;
  /** The input columns whose bit pattern changed in the last call, changed[0..nChanged). */
  changed: Int32Array;
  nChanged: number;
  /** 0 unknown, 1 the matrix meets the static part of the precondition, 2 it does not. */
  usable: number;
  /** Counts the calls that changed y (a consumer's derived data is current iff it saw the last one). */
  version: number;
  /**
   * The tracked rows' records: row r's is at 4s … 4s+3 for s = rowSlot[r] (0: none yet; slots
   * are given out from 1 when a row is first refolded with a record, and kept), one record so that
   * an update touches one cache line: the exact sum Σ w·x, S = Σ|w·x|, T = boundOf(g), and g, a
   * lower bound on the lowest set bit of the row's non-zero products. T = 0 marks a row that is not
   * exact (S + |Σ w·x| < 2T never holds; g is then not kept). Bounded rows need none: the records of a matrix
   * whose rows are all bounded take no memory (in the wasm memory, room for every row is carved
   * and only the pages of the slots taken are touched; elsewhere the array grows as slots are taken).
   */
  rowExact: Float64Array;
  rowSlot: Int32Array;
  nSlots: number;
  /** Scratch: the rows to refold in the current call. */
  refold: Int32Array;
  /**
   * The row bounds of the bounded rows (module comment; the column bounds M_c and L_c, NO_LOW when
   * column c was never non-zero, are in the column records): B_r, and G_r as NO_LOW − G_r (G_r is
   * NO_LOW when row r has no product that can be non-zero: then +0, as allocated, so that the
   * first fold writes only the rows it reaches). A row is bounded iff its `mark` bit 0 is clear.
   */
  rowBound: Float64Array;
  rowLowGap: Uint16Array;
  /** Rows that are bounded (0 in the bf16 profile). */
  nBounded: number;
  /** The matrix's sparse plans and weight lowbits, and the storage they were made from. */
  plan: SparsePlan | null;
  csc: CscPlan | null;
  lows: { csr: WeightLows; csc: WeightLows } | null;
  planCsr: Matrix['csr'];
  planDense: Matrix['dense'];
  /**
   * The wasm kernels' arrays (wasm-kernels.ts), when the state's records, marks, y and lists are
   * views of the context's WasmHeap and the rest fits there; null: the pass runs in JavaScript.
   */
  kernel: DeltaKernel | null;
  /** The last input vector and offset, a view of its bits there, and its byte address in the context's WasmHeap (−1: not there). */
  inSrc: Float32Array | null;
  inOff: number;
  inView: Uint32Array | null;
  inAt: number;
  /** Rows updated without a refold by the last call (a statistic). */
  nUpdated: number;
  /** The caller's stamp of the input of the last call (`DeltaShare`); −1 when none was given or the call failed. */
  stamp: number;
}

/**
 * A delta state's wasm kernels (wasm-kernels.ts): the heap; its CSC plan's rows and weights there
 * (the plan's own arrays, or copies); the walk list (per listed column j: k0, k1 as
 * int32 at 4j, 4j + 1, Δx as a float64 at 2j + 1 of `walkDx`); per listed column j, x_new and
 * x_old (`walkX`, 2j and 2j + 1) and lowbit(x_new) (`walkLow`) for the tracked rows' updates; the
 * track block naming the state's row slots, exact-row records and refold list, with the refold
 * count (`track`, wasm-kernels.ts TRACK); and `delta`'s in/out block `io`.
 */
export interface DeltaKernel extends DeltaArrays {
  heap: WasmHeap;
  /** The byte addresses of the state's and the kernel's arrays in the heap. */
  at: DeltaAt;
  /** A memo of the candidate lists' address (wasm-heap.ts ViewAt). */
  candAt: ViewAt;
  /** The byte address of the state's y (its cast outputs in bf16; at.y is its uncast sums, acc). */
  yAt: number;
  walkList: Int32Array;
  walkDx: Float64Array;
  /** Per listed column j: x_new and x_old at 2j, 2j + 1, and lowbit32(x_new) at j, which the tracked rows' updates read. */
  walkX: Float64Array;
  walkLow: Int32Array;
  /** Whether the matrix's columns are long enough to be listed for the walk when the pass is not fused (ExecTuning). */
  listed: boolean;
}

/**
 * Per stacked in_proj and conv weight: the channels a conv step can find not cold, and the
 * records (GdnTrack.chan) of the others. A channel whose qkv row in the stack is empty gets
 * mixed = +0 from every step (an empty row is +0, matmul.ts), so a state that started all +0
 * stays all +0 (GdnCache.convInputs); with finite taps the channel is then cold at every step
 * (convStepF32): it keeps its state, its output is convZeroOf's, and its record is not lazy, not
 * active, its single-tap weight, newest bits 0 (`template`, every channel's). `list` holds the
 * others, ascending: a non-empty qkv row or a non-finite tap.
 */
export interface ConvLive { cw: Float32Array; list: Int32Array; template: Int32Array; single: SingleTaps }

/**
 * Per stacked in_proj and conv weight (conv-alias.ts convAliasOf): per key block and per value
 * block, the representative block it repeats (an earlier block of the same kind, itself not
 * repeating one), or −1; `count` the blocks that repeat one.
 */
export interface ConvAlias { cw: Float32Array; keyRep: Int32Array; valueRep: Int32Array; count: number; dims: GdnDims }

/**
 * Per conv weight tensor, per channel: `w` the weight of its one tap that weighs (every other tap's
 * weight ±0), at tap `at` (K − 1 the newest), or NaN for a channel with more than one such tap (or
 * a NaN weight, which the fold handles); a channel whose taps all weigh ±0 has at = K − 1 and
 * w = its newest weight (±0). gdn-tracked.ts singleTapOf.
 */
export interface SingleTaps { w: Float32Array; at: Uint8Array }

/**
 * Per numeric context and gate matrix: swigluDelta's h and the gate/up memo version it reflects;
 * `heap` where h and changed were carved (their byte addresses hAt, changedAt), with memos of the
 * gate/up output's and its row list's addresses (wasm-heap.ts ViewAt).
 */
export interface FfnDeltaState {
  h: Float32Array; hBits: Uint32Array; valid: boolean; changed: Int32Array; ver: number;
  heap: WasmHeap | null; hAt: number; changedAt: number; goAt: ViewAt; rowsAt: ViewAt;
}

/** The all-+0 conv channel facts of a conv1d weight tensor (gdn-token.ts convZeroOf). */
export interface ConvZero { finite: Uint8Array; out: Float32Array }

/**
 * What the executor derives from the weights — categories (a), (b) idleOutputs and (c) of the
 * header — kept per weight object inside (matrices, weight arrays, layers), so weights must not be
 * mutated after their first use. One per ModelWeights (plansOf): several executors are routinely
 * made on the same weights (a chip run's sparse and dense executors, the tests' pairs, bench
 * repeats), and the plans of a real model's matrices (CSR, CSC, row stacks, low bits) take longer
 * to build than a short run takes to decode; each executor rebuilding them would pay that again.
 * A numeric context made without one (makeNumericContext's default, as tests calling linearEx
 * directly do) gets a fresh ExecPlans of its own.
 */
export class ExecPlans {
  readonly csrFinite = new WeakMap<CsrMatrix, boolean>();
  readonly derivedCsr = new WeakMap<Float32Array, CsrMatrix>();
  readonly sparsePlans = new WeakMap<Matrix, SparsePlan>();
  readonly cscPlans = new WeakMap<CsrMatrix, CscPlan | null>();
  readonly columnRuns = new WeakMap<CsrMatrix, ColumnRuns | null>();
  readonly rowUnions = new WeakMap<Matrix, { other: Matrix; aCsr: CsrMatrix; bCsr: CsrMatrix; rows: Int32Array }>();
  readonly boundedPreps = new WeakMap<CscPlan | ColumnRuns, BoundedPrep>();
  readonly weightLowbits = new WeakMap<Float32Array, { csr: WeightLows; csc: WeightLows }>();
  readonly stacks = new WeakMap<Matrix, StackEntry[]>();
  readonly convZero = new WeakMap<Float32Array, ConvZero>();
  readonly inProjLists = new WeakMap<GdnWeights, Matrix[]>();
  readonly convLive = new WeakMap<Matrix, ConvLive>();
  readonly convAlias = new WeakMap<Matrix, ConvAlias>();
  readonly convAliasStacks = new WeakMap<Matrix, { alias: ConvAlias; m: Matrix }>();
  readonly singleTap = new WeakMap<Float32Array, SingleTaps>();
  readonly idleLayers = new WeakMap<GdnWeights, boolean>();
  readonly gateUpLists = new WeakMap<object, Matrix[]>();
  readonly onePlus = new WeakMap<Float32Array, Float32Array>();
  /** (b) Per GDN weights, per numeric mode (gdn-idle.ts idleModeKey): the idle step's output. */
  readonly idleOutputs = new WeakMap<GdnWeights, Map<string, Float32Array>>();
  /** (c) linearArgmax's sparse output (made on first use) and activation scratch, per matrix (of `rows` rows). */
  readonly argmaxStates = new WeakMap<Matrix, ArgmaxState>();
  /** (c) Per gate/up row union: the down projection's input buffer, +0 outside the union. */
  readonly supportBuffers = new WeakMap<Int32Array, Float32Array>();
  /** (c) swiglu's gate and up outputs (grown to the widest MLP). */
  ffnScratch: { g: Float32Array; u: Float32Array } = { g: new Float32Array(0), u: new Float32Array(0) };
}

/** The one ExecPlans of each ModelWeights object (the only module-level cache left in src/exec/). */
const plansByWeights = new WeakMap<ModelWeights, ExecPlans>();

/** The ExecPlans shared by every executor on `weights` (made on first use). */
export function plansOf(weights: ModelWeights): ExecPlans {
  let p = plansByWeights.get(weights);
  if (p === undefined) { p = new ExecPlans(); plansByWeights.set(weights, p); }
  return p;
}

/**
 * What one numeric context remembers between calls — category (b) of the header, per matrix:
 * the incremental matmuls' states (delta.ts), linearArgmax's memo (matmul-argmax.ts) and
 * swigluDelta's h (mlp.ts). One per context (makeNumericContext), so one per executor.
 */
export class ExecMemos {
  readonly deltaStates = new WeakMap<Matrix, DeltaLinearState>();
  /**
   * The delta states' records (arena.ts ZeroArena): chunks of 33 MiB, above glibc's largest mmap
   * threshold (32 MiB), for the requests of 64 KiB and more.
   */
  readonly recordArena = new ZeroArena(33 << 20, 64 << 10);
  /** The wasm kernels' memory (wasm-kernels.ts): made with the executor or at the first incremental matmul; null when unavailable or off. */
  wasmHeap: WasmHeap | null | undefined = undefined;
  readonly argmaxMemos = new WeakMap<Matrix, ArgmaxMemo>();
  readonly ffnDeltaStates = new WeakMap<Matrix, FfnDeltaState>();
}
