/**
 * Generic chips shared by the test files. A chip compile costs seconds (the RV32 circuit's IR,
 * lowering, packing, emission), and many files run the same few chips: each of SHARED_CHIPS is
 * compiled once per compiler into chipc's own chip cache (`$CHIPC_CACHE_DIR`, which
 * vitest.config.ts points at `node_modules/.cache/chipc-tests`; test/setup/shared-chips.ts builds
 * the missing ones before the files start) and every file loads the `.chip` from there, as
 * `chipc run` does. The cache key holds a hash of the compiler's sources, so a changed compiler
 * builds them again: a test on a shared chip fails when the compiler breaks it.
 */
import { type GenericChipSpec } from '../../src/chip/generic.ts';
import { cachedGenericChip } from '../../src/chip/cached.ts';
import { loadChipModel, type ChipModel } from '../../src/chip/loaded.ts';
import { programOf } from '../../src/chip/run.ts';
import { resolveTarget } from '../../src/model/targets.ts';
import { assembleElf } from '../../riscv/asm.ts';

/** A shared chip: a built-in target and the two RAM sizes (and the zero attention layer). */
export interface SharedChipSpec {
  target: string;
  codeBytes: number;
  memBytes: number;
  attentionLayer?: boolean;
}

/** The chips the setup builds before the test files start (the ones several files run). */
export const SHARED_CHIPS: readonly SharedChipSpec[] = [
  { target: 'chip-test', codeBytes: 4096, memBytes: 32 * 1024 },
  { target: 'chip-test', codeBytes: 4096, memBytes: 32 * 1024, attentionLayer: true },
];

function genericSpec(s: SharedChipSpec): GenericChipSpec {
  return {
    targetName: s.target, target: resolveTarget(s.target).config, codeBytes: s.codeBytes, memBytes: s.memBytes,
    ...(s.attentionLayer === true ? { attentionLayer: true } : {}),
  };
}

/** Compile `s` into the chip cache unless it is there (the setup's builder). */
export async function buildSharedChip(s: SharedChipSpec): Promise<{ hit: boolean; path: string }> {
  const r = await cachedGenericChip(genericSpec(s));
  return { hit: r.hit, path: r.path };
}

/** The chips loaded in this worker, by spec: the files a worker runs share its modules (vitest.config.ts isolate: false). */
const loaded = new Map<string, Promise<ChipModel>>();

/**
 * The chip of `s`: loaded from the chip cache (compiled into it first when missing), as a
 * ChipModel (weights, RAM placements and declarations) that runOnChip and chipExecutor run. Loaded
 * once per worker and shared by its files (a load costs 1.5–2.5 s): callers run it, never change it.
 */
export function sharedChip(s: SharedChipSpec): Promise<ChipModel> {
  const key = JSON.stringify([s.target, s.codeBytes, s.memBytes, s.attentionLayer === true]);
  let p = loaded.get(key);
  if (p === undefined) {
    p = loadSharedChip(s);
    loaded.set(key, p);
    p.catch(() => loaded.delete(key)); // a failed load is tried again by the next caller
  }
  return p;
}

async function loadSharedChip(s: SharedChipSpec): Promise<ChipModel> {
  const r = await cachedGenericChip(genericSpec(s));
  if (r.compiled !== null) return r.compiled;
  // Any program that fits checks the chip's shape; the model itself does not depend on it.
  return loadChipModel(r.path, programOf(assembleElf('ecall').elf, { codeBytes: s.codeBytes, memBytes: s.memBytes }, resolveTarget(s.target).config));
}
