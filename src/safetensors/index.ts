/** chipc's safetensors layer: dtypes, the lazy reader, checkpoints (sharded or not), the writer. */
export type { CheckpointWriteOptions, DType, TensorInfo, TensorSource, TensorStore, WriteOptions } from './types.ts';
export * from './dtype.ts';
export {
  compareCodePoints, DEFAULT_CHUNK_BYTES, MAX_FORMAT_INT, MAX_HEADER_SIZE, openSafetensors, openSafetensorsBuffer,
  parseHeader, SafetensorsFile, type OpenOptions, type ParsedHeader, type ReadAt, type ReadFn,
} from './reader.ts';
export { INDEX_FILE_NAME, openCheckpoint, ShardedStore, SINGLE_FILE_NAME } from './checkpoint.ts';
export * from './writer.ts';
