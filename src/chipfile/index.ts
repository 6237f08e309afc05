/** The compact sparse checkpoint form, `.chip` (docs/chip-file.md): format, compact, expand, store. */
export * from './format.ts';
export { compactCheckpoint, listCheckpointFiles, MAX_MIN_GAP, resolveCodec, type ChipWriteCodec, type CompactOptions, type CompactResult } from './compact.ts';
export { expandChip, expandChipFile, type ExpandOptions, type ExpandResult } from './expand.ts';
export { ChipFile, DEFAULT_FRAME_CACHE_BYTES, isChipFile, openChipFile, type OpenChipOptions } from './read.ts';
export { writeChipFromSources, type ChipFromSourcesOptions } from './from-sources.ts';
export { openCheckpointOrChip, readCheckpointFile } from './open.ts';
