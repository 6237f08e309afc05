/**
 * Public API of the reference executor (the numeric definition everything later is checked
 * against). Implementation: exec/executor.ts and the per-sublayer modules beside it.
 */

/** How activations are rounded. */
export type NumericProfile =
  /** float32 everywhere (Hugging Face transformers' float32 path). */
  | 'f32'
  /** activations rounded to bfloat16 where a bf16 engine materialises a tensor. */
  | 'bf16';

/** How each dot product / reduction is summed. */
export type OrderMode =
  /** sequential in index order, from −0 (the identity of float addition). */
  | { kind: 'sequential' }
  /** each reduction summed in a seeded random permutation of its terms. */
  | { kind: 'shuffled'; seed: number }
  /** sequential, but every product is accumulated with one rounding (fused multiply-add). */
  | { kind: 'fma' };

export interface ExecOptions {
  profile?: NumericProfile;
  order?: OrderMode;
  /**
   * The order of the GDN chunked kernel's reductions alone (default: `order`). The chip's matmul
   * rows are exact in every order for exact inputs (src/passes/order-invariance.ts), so a check of
   * chunked prefill can run the kernel — the one place where order can change a compiled value — in
   * fma or shuffled order and the matmuls on the fast sparse path in sequential order.
   */
  kernelOrder?: OrderMode;
  /**
   * 'dense' walks every weight; 'sparse' skips zero weights and zero activations and is
   * bit-identical to 'dense' in sequential order (including the sign of zero). Default 'sparse'
   * when every matrix has a CSR form and no dense one, else 'dense'.
   */
  path?: 'dense' | 'sparse';
  /**
   * silu form: 'div' = fl(x/fl(1+fl(exp(−x)))), ATen's kernel (CPU and CUDA), which `F.silu`,
   * `nn.SiLU` and `ACT2FN['silu']` run in transformers' MLP and after the GDN conv — the default;
   * 'mul' = fl(x·sigmoid(x)). Compiled chips use silu only where both forms agree exactly
   * (docs/numerics.md, "Saturated regions").
   */
  siluForm?: 'mul' | 'div';
  /** mean in RMSNorm: 'div' = sum/N (torch CPU, default), 'mulrecip' = sum·fl(1/N) (CUDA). */
  meanMode?: 'div' | 'mulrecip';
  /**
   * What decode() / decodeArgmax() (and a one-token extend()) do on an empty cache. 'chunked'
   * (default, transformers): they are refused (exec.empty-cache), since the first forward runs
   * the GDN layers through the chunked kernel (prefill()). 'recurrent': they run the decode step —
   * the recurrent rule from the zero state and the zero conv window — from position 0, as an engine
   * that treats a one-token prompt as a decode step does. The two agree bit for bit on compiled
   * chips; on general weights only in exact arithmetic (docs/executor.md, "The first token").
   */
  firstToken?: 'chunked' | 'recurrent';
  /**
   * Size thresholds of the sparse path (defaults: plans.ts DEFAULT_TUNING). They choose between
   * forms that give the same bits, so they change speed and MatmulStats, never a value; tests
   * lower them to exercise a form on small models.
   */
  tuning?: ExecTuning;
}

/** ExecOptions.tuning: the sparse path's size thresholds (any left out keeps its default). */
export interface ExecTuning {
  /** Stored entries of a matrix below which the row walk is used instead of the scatter form (65536). */
  scatterMinNnz?: number;
  /** Stored entries above which a column is "big" for the greedy LM head's bounded argmax (4096). */
  bigColumn?: number;
  /** Token ids whose embedding rows a tracked decode keeps as their entries (4096; then it starts over). */
  embedRowsKept?: number;
  /** MiB of WebAssembly memory for the wasm kernels and the arrays they read (256; 0: everything in JavaScript). */
  wasmHeapMiB?: number;
  /** Stored entries per used column below which a matrix whose input is outside the wasm memory walks in JavaScript (4). */
  wasmMinEntriesPerColumn?: number;
  /** The tracked GDN step after which conv blocks that repeat another's run through it (1024; 1: from the first; 0: never, the same bits). */
  aliasConvBlocks?: number;
  /** 1: a tracked GDN step that moved no projection row and has nothing else to step ends early (1; 0: never, the same bits). */
  quietSteps?: number;
  /** Entries a layer's FFN memo keeps (512; 0: no memo, every step computed: the same bits). */
  ffnMemoEntries?: number;
  /** The tracked decode steps a layer's FFN takes before its memo runs (8192; 0: from the first; the same bits). */
  ffnMemoFrom?: number;
}

/** Read-only views handed to hooks; arrays are copies the hook may keep. */
export interface LayerHookEvent {
  layer: number;
  position: number;
  /** Residual stream entering the layer, after the mixer, and after the FFN. [H] each. */
  residualIn: Float32Array;
  residualMid: Float32Array;
  residualOut: Float32Array;
  /** full_attention layers: softmax rows [Hq][positions so far]. */
  attentionProbs?: Float32Array[];
  /** linear_attention layers: recurrent state after this token, per value head [dk·dv] ([i·dv + j] = S[i,j]). */
  gdnState?: Float32Array[];
}

export type LayerHook = (ev: LayerHookEvent) => void;

/** How a hook is called (Executor.addHook). */
export interface HookOptions {
  /**
   * Hand each linear_attention layer's recurrent states to the hook (`gdnState`, copies: a layer's
   * whole state at every position); default true. Without them a decode step keeps its idle skip
   * (a hook with states sees every GDN step run), and a reader compares the live states through
   * Executor.gdnCacheOf between tokens.
   */
  gdnStates?: boolean;
}

/**
 * A float32 dot product Σ_i a[aOff + i·aStride] · b[bOff + i·bStride] for i < n, summed per the
 * active OrderMode (sequential from −0, seeded shuffle, or FMA accumulation). Every product and
 * every partial sum is a float32 operation (JS doubles rounded with Math.fround: exact for + − ×
 * of float32 operands because 53 ≥ 2·24 + 2). Implemented by exec/numeric.ts `makeDot`; the
 * GDN chunked kernel and every sublayer reduce through it so order modes reach every reduction.
 */
export type DotFn = (
  a: ArrayLike<number>, aOff: number, aStride: number,
  b: ArrayLike<number>, bOff: number, bStride: number,
  n: number,
) => number;

/** A float32 sum Σ_i a[off + i·stride] for i < n, per the active OrderMode (same rules as DotFn). */
export type SumFn = (a: ArrayLike<number>, off: number, stride: number, n: number) => number;

/** Numeric context threaded through every kernel. */
export interface NumericContext {
  profile: NumericProfile;
  dot: DotFn;
  sum: SumFn;
  siluForm: 'mul' | 'div';
  meanMode: 'div' | 'mulrecip';
  /** Rounds a float32 value to what the profile materialises (identity in 'f32', bf16 RNE in 'bf16'). */
  act(x: number): number;
}
