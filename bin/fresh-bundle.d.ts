/** The bundle's file URL when every file of the record `dir`/chipc.inputs.json (relative to `root`) is as recorded, else null. */
export function freshBundle(root: string, dir?: string): string | null;
