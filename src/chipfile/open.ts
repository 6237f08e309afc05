/**
 * Opening "a checkpoint" wherever the CLI takes one: a `.chip` file (recognised by its magic
 * bytes, not its name), a checkpoint directory, or a single `.safetensors` file; and reading one
 * of its non-tensor files (config.json, …) from the directory or from the `.chip`'s stored files.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { TensorStore } from '../safetensors/types.ts';
import { openCheckpoint } from '../safetensors/checkpoint.ts';
import { isChipFile, openChipFile } from './read.ts';

/** A TensorStore for `p`: openChipFile for a .chip file, else openCheckpoint (directory or .safetensors). */
export function openCheckpointOrChip(p: string): TensorStore {
  return isChipFile(p) ? openChipFile(p) : openCheckpoint(p);
}

/** Whether `p` stands for a whole checkpoint directory (a directory, or a .chip file). */
export function isCheckpointDirOrChip(p: string): boolean {
  if (isChipFile(p)) return true;
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The bytes of file `name` of the checkpoint at `p` (a directory: `p/name`; a .chip: its stored
 * file), or null when it has none. A single .safetensors file has no other files: null.
 */
export function readCheckpointFile(p: string, name: string): Uint8Array | null {
  if (isChipFile(p)) {
    const chip = openChipFile(p);
    try {
      return chip.hasFile(name) ? chip.readFile(name) : null;
    } finally {
      chip.close();
    }
  }
  let st: fs.Stats;
  try {
    st = fs.statSync(p);
  } catch {
    return null;
  }
  if (!st.isDirectory()) return null;
  const f = path.join(p, name);
  return fs.existsSync(f) ? new Uint8Array(fs.readFileSync(f)) : null;
}
