/** Public API of the model layer: configs, targets, tensor naming, weights load/save/random. */
export * from './config.ts';
export * from './weights.ts';
export * from './hf-config.ts';
export * from './targets.ts';
export * from './naming.ts';
export * from './load-weights.ts';
export * from './save-weights.ts';
export * from './random-weights.ts';
