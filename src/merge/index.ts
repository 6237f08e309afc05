/** Merging a compiled chip into a host checkpoint (docs/merge.md). */
export * from './plan.ts';
export * from './merge.ts';
