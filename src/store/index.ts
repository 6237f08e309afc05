/** The hashed filesystem store: its row-level reference model and its store files (docs/store.md). */
export * from './model.ts';
export * from './file.ts';
