/**
 * A compiled chip loaded from a checkpoint instead of compiled: its weights (sparse) and, from its
 * manifest (`chipc-manifest.json`, src/emit/manifest.ts), the RAM placements and declarations that
 * writing and reading RAM rows straight in the GDN state needs (src/load/ram-state.ts). A
 * `ChipModel` is what a ChipService (weights engine) and a ChipStore run on; a CompileResult is
 * one, and so is a loaded chip — a store command with `--model` skips the compile (seconds) and
 * reads the checkpoint instead.
 */
import fs from 'node:fs';
import { loadModel, loadModelFromChipFile } from '../model/load-weights.ts';
import { openChipFile, type ChipFile } from '../chipfile/read.ts';
import type { RamDeclShape, RamStatePlacement } from '../load/ram-state.ts';
import { hasCircuit, type ChipModel } from './chip-model.ts';
import type { ManifestRam } from '../emit/manifest.ts';
import type { ModelWeights } from '../model/weights.ts';
import type { StateHost } from '../load/state-file.ts';
import { ChipcError } from '../util/errors.ts';
import { checkChipFits, readChipCheckpoint, type ChipCheckpoint, type ChipProgram } from './run.ts';

export { hasCircuit, type ChipModel };

const isInt = (x: unknown): x is number => typeof x === 'number' && Number.isSafeInteger(x);

/**
 * Reads the checkpoint at `path` (a directory or a `.chip` file written with its run manifest:
 * `chipc run FILE.elf --emit`, `chipc store chip`) and checks that its chip runs `prog` (the
 * program's data-RAM bank size is taken from the manifest first). ChipcError `run.model` for a
 * merged checkpoint (a service session drives the chip's own ids), a manifest without RAM layouts
 * (written before they were recorded) or one whose RAM records are malformed; the errors of
 * readChipCheckpoint and checkChipFits otherwise. `open`: the `.chip` file at `path` already open
 * (read, left open: the caller's to close).
 */
export function loadChipModel(path: string, prog: ChipProgram, open?: ChipFile): ChipModel & { checkpoint: ChipCheckpoint } {
  if (open !== undefined) return loadChipModelFrom(path, prog, open);
  // a .chip is opened and validated once, for the manifest and the weights
  const chip = fs.statSync(path, { throwIfNoEntry: false })?.isFile() ? openChipFile(path) : undefined;
  try {
    return loadChipModelFrom(path, prog, chip);
  } finally {
    chip?.close();
  }
}

function loadChipModelFrom(path: string, prog: ChipProgram, chip: ChipFile | undefined): ChipModel & { checkpoint: ChipCheckpoint } {
  const ck = readChipCheckpoint(path, chip);
  if (ck.merged) {
    throw new ChipcError('run.model', `${path} is a merged checkpoint (chip ids from ${ck.idOffset}); a chip service needs the chip alone (the checkpoint chipc run --emit or chipc store chip wrote)`);
  }
  const banked = ck.manifest.rv32?.memBankWords;
  if (isInt(banked)) prog.chip.memBankWords = banked;
  checkChipFits(ck, prog);
  const { rams, decls } = manifestRams(path, ck.manifest.rams);
  // a run looks up the rows of the tokens it feeds: the embedding's are decoded on demand
  const opts = { mode: 'sparse', lazyEmbedding: true } as const;
  const weights = chip === undefined ? loadModel(path, opts) : loadModelFromChipFile(chip, path, opts);
  if (weights.config.numLayers !== ck.manifest.layerTypes?.length) {
    throw new ChipcError('run.model', `${path}: config.json has ${weights.config.numLayers} layers, the manifest ${String(ck.manifest.layerTypes?.length)}`);
  }
  return { weights, rams, ir: { rams: decls }, checkpoint: ck };
}

/**
 * The RAM placements and declarations a manifest records (`rams`), checked: what writing and
 * reading RAM rows straight in the GDN state needs. ChipcError run.model for a manifest without
 * RAMs, without their layouts (written before layouts were recorded) or with a malformed record.
 */
export function manifestRams(path: string, recordedIn: unknown): { rams: RamStatePlacement[]; decls: RamDeclShape[] } {
  const again = 'emit the chip again with this version of chipc';
  const recorded = (Array.isArray(recordedIn) ? recordedIn : []) as ManifestRam[];
  if (recorded.length === 0) throw new ChipcError('run.model', `${path}: its manifest records no RAMs; ${again}`);
  const decls: RamDeclShape[] = [];
  const rams: RamStatePlacement[] = recorded.map((r) => {
    if (r.layout === undefined || r.roles === undefined || r.ram === undefined || r.rows === undefined || r.fields === undefined) {
      throw new ChipcError('run.model', `${path}: its manifest does not record RAM "${String(r.name)}"'s layout (written before layouts were recorded); ${again}`);
    }
    const ok = typeof r.name === 'string' && isInt(r.layer) && r.layer >= 0 && isInt(r.ram) && r.ram >= 0 && isInt(r.rows) && r.rows > 0
      && Array.isArray(r.keyHeads) && r.keyHeads.every(isInt) && Array.isArray(r.roles) && r.roles.length === r.keyHeads.length
      && Array.isArray(r.fields) && r.fields.every((f) => isInt(f?.lo) && isInt(f?.hi) && f.lo <= f.hi)
      && typeof r.layout === 'object' && r.layout !== null && decls[r.ram] === undefined;
    if (!ok) throw new ChipcError('run.model', `${path}: the manifest's record of RAM "${String(r.name)}" is malformed`);
    decls[r.ram] = { id: r.ram, name: r.name, rows: r.rows, fields: r.fields };
    return { ram: r.ram, name: r.name, layer: r.layer, keyHeads: r.keyHeads, lowering: { layout: r.layout, roles: r.roles } };
  });
  return { rams, decls };
}

/**
 * What a state file needs of any compiled checkpoint with a manifest (`chipc compile`, `chipc cpu`,
 * `chipc run --emit`): its circuit's name, RAM declarations and placements (`chipc exec --state`).
 * ChipcError run.model (no manifest, or RAMs not recorded) and the checkpoint's read errors.
 */
export function stateHostOf(path: string, weights: ModelWeights): StateHost {
  const ck = readChipCheckpoint(path);
  const { rams, decls } = manifestRams(path, ck.manifest.rams);
  return { weights, rams, ir: { name: ck.manifest.circuit, rams: decls } };
}
