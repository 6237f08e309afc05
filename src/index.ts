/**
 * chipc's library API: the package entry `import … from 'chipc'` (docs/api.md). The circuit DSL
 * alone is also `chipc/dsl`. Stages, in the order a compile uses them:
 *   define (DSL) → build (IR, validated) → compile (weights + manifest) → emit (safetensors / .chip)
 *   → run (the reference executor) → inspect (tensors, diffs, golden hashes).
 * Everything throws ChipcError (a stable `code`, a message naming the problem) on bad input.
 */

// errors
export { ChipcError } from './util/errors.ts';

// define: the circuit DSL
export * from './dsl/index.ts';

// build: circuits → IR
export { buildCircuit, loadCircuitFile } from './dsl/load.ts';
export { Interpreter } from './ir/interpret.ts';
export { encodeIR, decodeIR, readIR, writeIR } from './ir/serialize.ts';
export type { CircuitIR, IrNode, NodeId, Range, SourceLoc } from './ir/types.ts';

// compile: IR → weights
export { compileCircuit, layerNonZeros, type CompileOptions, type CompileResult, type LayerReport, type SignalPlacement } from './compile.ts';
export { listTargets, resolveTarget, TARGETS_DIR } from './model/targets.ts';
export type { ModelConfig, LayerType } from './model/config.ts';
export type { ModelWeights, Matrix } from './model/weights.ts';
export { compileReport, buildManifest, MANIFEST_FILE, type Manifest } from './emit/manifest.ts';

// the RV32IM+Zba chip
export { defaultChipSizes, genericShape, type GenericChipSpec } from './chip/generic.ts';
export { compileGenericChip, emitChip } from './chip/build.ts';
export {
  programOf, runOnChip, runOnModel, readChipCheckpoint, checkChipFits, feedLoaderPrompt,
  parsePrefillPlan, DEFAULT_CODE_BYTES, DEFAULT_MEM_BYTES, type PrefillPlan, type RunResult,
} from './chip/run.ts';
export { loadChipModel, type ChipModel } from './chip/loaded.ts';

// emit: weights → files
export { saveModel, saveModelChip, modelWeightsToSources, type SaveModelOptions, type EmitDType } from './model/save-weights.ts';
export { writeSafetensors, writeCheckpoint, denseSource } from './safetensors/writer.ts';
export { openSafetensors } from './safetensors/reader.ts';
export { openCheckpoint } from './safetensors/checkpoint.ts';
export type { TensorSource, TensorStore, DType } from './safetensors/types.ts';
export { compactCheckpoint, expandChipFile, openChipFile, isChipFile, writeChipFromSources, openCheckpointOrChip } from './chipfile/index.ts';

// run: the reference executor
export { Executor, argmax, compareCaches, type CacheSnapshot } from './exec/index.ts';
export type { ExecOptions, HookOptions, LayerHook, LayerHookEvent, NumericProfile, OrderMode } from './exec/types.ts';
export { loadModel, loadModelFromChipFile, loadModelWeights } from './model/load-weights.ts';

// inspect
export { diffCheckpoints, type StoreDiff } from './inspect/diff.ts';
export { computeGolden, checkGolden, readGoldenFile, writeGoldenFile, type CheckpointGolden } from './inspect/golden.ts';
export { tensorStats, countNonZeros } from './inspect/stats.ts';

// merge a chip into a host checkpoint (docs/merge.md)
export { mergeCheckpoints, planMerge, type MergeOptions, type MergeResult, type MergePlan } from './merge/index.ts';

// the hashed filesystem store (docs/store.md): the reference model, store files, the store on the chip
export { StoreModel, resolveStoreParams, type StoreOptions, type StoreParams } from './store/model.ts';
export { loadStoreFile, saveStoreFile, encodeStore, decodeStore } from './store/file.ts';
export { ChipStore, CHIP_STORE_DEFAULTS, chipChunkPool } from './store/chip.ts';
