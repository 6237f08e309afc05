/**
 * The memory layouts that the executor's wasm kernels (wasm-kernels.ts, wasm-gdn-kernels.ts) and
 * the JavaScript that calls them (wasm-heap.ts, delta.ts, gdn-cache.ts, …) agree on: the word
 * indices of the kernels' control and track blocks, and the length of a scratch block. A module
 * of its own so that the runtime reads them without loading the kernels' emitters.
 */

/**
 * The word indices of a delta state's track block (int32, TRACK_WORDS of them), which walk and
 * delta read the tracked rows' arrays from: the rows' record slots (int32), the records (float64,
 * 4 a slot: delta.ts rowExact), the refold list (int32) and its count (in and out), and for walk
 * the listed columns' x_new, x_old (float64) and lowbit32(x_new) (int32).
 */
export const TRACK = { slotAt: 0, exactAt: 1, refoldAt: 2, nf: 3, walkXAt: 4, walkLowAt: 5 } as const;
export const TRACK_WORDS = 8;

/**
 * The word indices of the conv kernels' control block (int32; CONV_CTL_WORDS of them, then the
 * K-float window scratch at word CONV_CTL_WORDS): what a call reads and writes, and the addresses
 * of the layer's arrays and its dimensions (written once, gdn-cache.ts convKernelOf).
 */
export const CONV_CTL = {
  rowsAt: 0, nRows: 1, nActive: 2, nLazy: 3, step: 4, n: 5, resume: 6, m: 7,
  chanAt: 8, activeAt: 9, lazyAt: 10, tapAtAt: 11, convAt: 12, cwAt: 13, mixedAt: 14, convedAt: 15,
  qDirtyAt: 16, kDirtyAt: 17, vDirtyAt: 18, vBeyondAt: 19, convDim: 20, zOff: 21, keyDim: 22, dk: 23, dv: 24, K: 25, form: 26,
} as const;
export const CONV_CTL_WORDS = 28;

/**
 * The word indices of the gated norm kernel's control block (int32; NORM_CTL_WORDS of them, then
 * dv int32 of moved-entry scratch and dv float32 of output scratch): the addresses of the arrays
 * it reads and writes and the layer's dimensions (written once, gdn-cache.ts gatedNormKernelOf),
 * the call's z address and flags, and what it leaves (the changed count, the head it stopped at).
 * invN and eps hold float32 bits.
 */
export const NORM_CTL = {
  coreAt: 0, normInAt: 1, normZAt: 2, zAt: 3, nwAt: 4, normedAt: 5, changedAt: 6, accAt: 7, rAt: 8, keptAt: 9,
  coreChangedAt: 10, hv: 11, dv: 12, full: 13, form: 14, meanDiv: 15, invN: 16, eps: 17, nc: 18, resume: 19,
} as const;
export const NORM_CTL_WORDS = 20;

/** The int32 length of gdnDots' scratch block for a head of dk × dv: the dot and row lists, the any-flags and io. */
export function gdnDotsScratchLength(dk: number, dv: number): number {
  return 2 * dk + dv + 8;
}
