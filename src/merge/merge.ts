/**
 * `chipc merge`: a compiled chip (checkpoint directory or `.chip` file) placed in front of a host
 * checkpoint of the same family, written as one streaming, atomic checkpoint (docs/merge.md).
 *
 * Every merged tensor is a TensorSource that builds its output one batch of rows at a time from
 * row ranges of the host's and the chip's tensors (TensorStore.readBytes), scaled by a power of two
 * (plan.ts) and zero-padded; no whole host tensor is ever held in memory.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ChipcError } from '../util/errors.ts';
import type { ModelConfig } from '../model/config.ts';
import { hfConfigJson, parseHfConfig } from '../model/hf-config.ts';
import { MODEL_PREFIX, expectedTensors } from '../model/naming.ts';
import { checkCheckpointTensors } from '../model/load-weights.ts';
import { openCheckpoint } from '../safetensors/checkpoint.ts';
import { decodeToF32, dtypeBytes, encodeFromF32 } from '../safetensors/dtype.ts';
import type { DType, TensorSource, TensorStore, WriteProgress } from '../safetensors/types.ts';
import { writeCheckpoint, type CheckpointWriteResult } from '../safetensors/writer.ts';
import { isChipFile, openChipFile } from '../chipfile/read.ts';
import { writeChipFromSources } from '../chipfile/from-sources.ts';
import type { CompactResult } from '../chipfile/compact.ts';
import { MANIFEST_FILE } from '../emit/manifest.ts';
import { MERGE_INFO_FILE, planMerge, type MergePlan } from './plan.ts';

export { MERGE_INFO_FILE };

/** Small host files copied verbatim when present (tokenizer and generation settings). */
const HOST_EXTRA_FILES = [
  'tokenizer.json', 'tokenizer_config.json', 'vocab.json', 'merges.txt', 'special_tokens_map.json',
  'added_tokens.json', 'generation_config.json', 'chat_template.jinja', 'chat_template.json',
];

/** One side of the merge: a config, an open store and the text prefix its tensor names use. */
interface Side {
  label: string;
  config: ModelConfig;
  store: TensorStore;
  prefix: string;
  /** Raw files to carry over (manifest, tokenizer …). */
  files: Record<string, Uint8Array>;
}

function parseJsonBytes(bytes: Uint8Array, label: string): unknown {
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (e) {
    throw new ChipcError('target.config', `cannot read ${label}: ${(e as Error).message}`, { cause: e });
  }
}

function configOf(json: unknown, label: string): ModelConfig {
  try {
    return parseHfConfig(json);
  } catch (e) {
    if (e instanceof ChipcError) throw new ChipcError(e.code, `${label}: ${e.message}`, { cause: e });
    throw e;
  }
}

/** Open a checkpoint directory (config.json + safetensors) or, when allowChip, a `.chip` file. */
function openSide(p: string, label: string, allowChip: boolean): Side {
  const st = fs.statSync(p, { throwIfNoEntry: false });
  if (st === undefined) throw new ChipcError('checkpoint.not-found', `${label} ${p}: no such file or directory`);
  const files: Record<string, Uint8Array> = {};
  if (st.isFile()) {
    if (!allowChip || !isChipFile(p)) {
      throw new ChipcError('checkpoint.not-found', `${label} ${p}: expected a checkpoint directory${allowChip ? ' or a .chip file' : ''}`);
    }
    const chip = openChipFile(p);
    try {
      if (!chip.hasFile('config.json')) throw new ChipcError('target.config', `${label} ${p}: the .chip file holds no config.json`);
      const config = configOf(parseJsonBytes(chip.readFile('config.json'), `${p}: config.json`), `${label} ${p}: config.json`);
      if (chip.hasFile(MANIFEST_FILE)) files[MANIFEST_FILE] = chip.readFile(MANIFEST_FILE);
      const prefix = checkTensors(chip, config, label, p);
      return { label, config, store: chip, prefix, files };
    } catch (e) {
      chip.close();
      throw e;
    }
  }
  const cfgPath = path.join(p, 'config.json');
  if (!fs.existsSync(cfgPath)) throw new ChipcError('target.config', `${label} ${p}: no config.json`);
  const config = configOf(parseJsonBytes(fs.readFileSync(cfgPath), cfgPath), `${label} ${cfgPath}`);
  for (const f of [MANIFEST_FILE, ...HOST_EXTRA_FILES]) {
    const fp = path.join(p, f);
    if (fs.existsSync(fp) && fs.statSync(fp).isFile()) files[f] = fs.readFileSync(fp);
  }
  let store: TensorStore;
  try {
    store = openCheckpoint(p);
  } catch (e) {
    if (e instanceof ChipcError) throw new ChipcError(e.code, `${label}: ${e.message}`, { cause: e });
    throw e;
  }
  try {
    const prefix = checkTensors(store, config, label, p);
    return { label, config, store, prefix, files };
  } catch (e) {
    store.close();
    throw e;
  }
}

function checkTensors(store: TensorStore, cfg: ModelConfig, label: string, p: string): string {
  try {
    return checkCheckpointTensors(store, cfg);
  } catch (e) {
    if (e instanceof ChipcError) throw new ChipcError(e.code, `${label} ${p}: ${e.message}`, { cause: e });
    throw e;
  }
}

/** A rectangle of a source tensor copied into an output tensor, scaled by a power of two. */
interface Piece {
  side: Side;
  /** Stored tensor name. */
  name: string;
  /** Source rows × cols (a 1-D tensor is 1 × n; higher ranks flatten trailing dims). */
  rows: number;
  cols: number;
  /** Rows [srcRow0, srcRow0 + rows) of the source land at output rows [rowOffset, …), column colOffset. */
  srcRow0: number;
  rowOffset: number;
  colOffset: number;
  scale: number;
}

function rowsCols(shape: number[]): [number, number] {
  if (shape.length <= 1) return [1, shape[0] ?? 1];
  return [shape[0], shape.slice(1).reduce((a, b) => a * b, 1)];
}

/**
 * A TensorSource of `shape` in `dtype` whose element (r, c) is piece.scale·src(r − rowOffset,
 * c − colOffset) inside a piece and +0 elsewhere. Built a batch of rows at a time; every scaled
 * value must be exact in float32 and in `dtype` (else ChipcError merge.inexact).
 */
function paddedSource(name: string, dtype: DType, shape: number[], pieces: Piece[], batchBytes: number): TensorSource {
  const [rows, cols] = rowsCols(shape);
  const elem = dtypeBytes(dtype);
  for (const pc of pieces) {
    if (pc.rowOffset + pc.rows > rows || pc.colOffset + pc.cols > cols) {
      throw new Error(`internal: piece ${pc.name} [${pc.rows}, ${pc.cols}] at (${pc.rowOffset}, ${pc.colOffset}) exceeds ${name} [${rows}, ${cols}]`);
    }
  }
  return {
    name, dtype, shape: [...shape],
    *chunks(): Iterable<Uint8Array> {
      const per = Math.max(1, Math.floor(batchBytes / Math.max(1, cols * elem)));
      for (let r0 = 0; r0 < rows; r0 += per) {
        const n = Math.min(per, rows - r0);
        const out = new Float32Array(n * cols);
        for (const pc of pieces) {
          const a = Math.max(r0, pc.rowOffset);
          const b = Math.min(r0 + n, pc.rowOffset + pc.rows);
          if (a >= b) continue;
          const info = pc.side.store.info(pc.name);
          const srcElem = dtypeBytes(info.dtype);
          const s0 = pc.srcRow0 + a - pc.rowOffset;
          const bytes = pc.side.store.readBytes(pc.name, s0 * pc.cols * srcElem, (s0 + b - a) * pc.cols * srcElem);
          const src = decodeToF32(info.dtype, bytes, `${pc.side.label} ${pc.name}`);
          for (let i = 0; i < b - a; i++) {
            const o = (a - r0 + i) * cols + pc.colOffset;
            const si = i * pc.cols;
            if (pc.scale === 1) {
              out.set(src.subarray(si, si + pc.cols), o);
              continue;
            }
            for (let c = 0; c < pc.cols; c++) {
              const v = src[si + c] * pc.scale;
              if (Math.fround(v) !== v) {
                throw new ChipcError('merge.inexact',
                  `${pc.side.label} ${pc.name}: element (${s0 + i}, ${c}) = ${src[si + c]} times ${pc.scale} is not exact in float32 (overflow or subnormal)`);
              }
              out[o + c] = v;
            }
          }
        }
        yield encodeFromF32(dtype, out, { exact: true, label: name, indexBase: r0 * cols });
      }
    },
  };
}

type Role = 'reader' | 'writer' | 'hidden-vector' | 'other';

/** How a layer tensor touches the hidden dimension (by its name; shapes are checked after). */
function roleOf(name: string): Role {
  if (/\.(input_layernorm|post_attention_layernorm)\.weight$/.test(name)) return 'hidden-vector';
  if (/\.(o_proj|out_proj|down_proj)\.weight$/.test(name)) return 'writer';
  if (/\.(q_proj|k_proj|v_proj|in_proj_qkvz|in_proj_ba|in_proj_qkv|in_proj_z|in_proj_b|in_proj_a|gate_proj|up_proj|shared_expert_gate)\.weight$/.test(name)
    || /\.mlp\.gate\.weight$/.test(name)) return 'reader';
  return 'other';
}

export interface MergeOptions {
  overwrite?: boolean;
  /** Leave zero runs of 64 KiB or more as holes in a directory output (default true; WriteOptions.holes). */
  holes?: boolean;
  /** Bytes of tensor data per shard (writeCheckpoint's maxShardSize; default 5 GB). */
  maxShardSize?: number;
  /** Output rows are built in batches of about this many bytes (default 1 MiB). */
  batchBytes?: number;
  onProgress?: (p: WriteProgress) => void;
  /** A `.chip` output: record each safetensors file's dense SHA-256 (CompactOptions.fileHashes). */
  fileHashes?: boolean;
}

export interface MergeResult {
  plan: MergePlan;
  /** The files written (for a `.chip` output: the one file, with the dense checkpoint's totals). */
  write: CheckpointWriteResult;
  /** For an output path ending in `.chip`: the compact file written instead of a directory. */
  chipFile?: CompactResult;
  /** Output dtype of the tensors (the host's embedding dtype). */
  dtype: DType;
}

/** The merge plan's record written as chipc-merge.json (deterministic key order). */
export function mergeInfo(plan: MergePlan, hostDtype: DType): Record<string, unknown> {
  return {
    format: 'chipc-merge',
    version: 1,
    hidden: { host: plan.hostHidden, chip: plan.chipHidden, merged: plan.hidden, chipDimOffset: plan.hostHidden },
    scale: { host: plan.hostScale, chip: plan.chipScale },
    vocab: {
      host: plan.host.vocabSize, chipIdOffset: plan.chipIdOffset, chipAlphabet: plan.chipAlphabet,
      chipRows: plan.chipVocabRows, merged: plan.merged.vocabSize,
    },
    layers: { chip: plan.chipLayers, host: plan.host.numLayers, hostLayerOffset: plan.chipLayers },
    dtype: hostDtype,
    notes: plan.notes,
  };
}

/**
 * Merge `chipPath` (a compiled checkpoint directory or `.chip` file) into the host checkpoint
 * directory `hostDir`, writing the merged checkpoint directory `outDir` atomically (complete or
 * absent). Refuses an existing non-empty `outDir` unless `overwrite`.
 */
export function mergeCheckpoints(hostDir: string, chipPath: string, outDir: string, opts: MergeOptions = {}): MergeResult {
  const out = path.resolve(outDir);
  for (const [what, p] of [['host', hostDir], ['chip', chipPath]] as const) {
    const rp = path.resolve(p);
    if (out === rp || rp.startsWith(out + path.sep) || out.startsWith(rp + path.sep)) {
      throw new ChipcError('merge.output', `the output ${outDir} must not be (or lie inside, or contain) the ${what} ${p}`);
    }
  }
  if (fs.existsSync(out) && !opts.overwrite) {
    if (path.extname(outDir) === '.chip' || !fs.statSync(out).isDirectory() || fs.readdirSync(out).length > 0) {
      throw new ChipcError('checkpoint.target-exists', `${outDir}: exists (pass --overwrite to replace it)`);
    }
  }
  const host = openSide(hostDir, 'host', false);
  let chip: Side;
  try {
    chip = openSide(chipPath, 'chip', true);
  } catch (e) {
    host.store.close();
    throw e;
  }
  try {
    return mergeOpen(host, chip, outDir, opts);
  } finally {
    host.store.close();
    chip.store.close();
  }
}

function chipAlphabetOf(chip: Side): number {
  const m = chip.files[MANIFEST_FILE];
  if (m === undefined) return chip.config.vocabSize;
  const j = parseJsonBytes(m, `chip ${MANIFEST_FILE}`) as { vocab?: { circuit?: unknown } };
  const n = j?.vocab?.circuit;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1) {
    throw new ChipcError('merge.vocab', `chip ${MANIFEST_FILE}: vocab.circuit must be a positive integer, got ${JSON.stringify(n)}`);
  }
  return n;
}

function mergeOpen(host: Side, chip: Side, outDir: string, opts: MergeOptions): MergeResult {
  const plan = planMerge(host.config, chip.config, chipAlphabetOf(chip));
  const batch = opts.batchBytes ?? 1 << 20;
  const H = plan.hidden;
  const hostName = (n: string) => n.startsWith(MODEL_PREFIX) ? host.prefix + n.slice(MODEL_PREFIX.length) : n;
  const chipName = (n: string) => n.startsWith(MODEL_PREFIX) ? chip.prefix + n.slice(MODEL_PREFIX.length) : n;
  const embedName = `${MODEL_PREFIX}embed_tokens.weight`;
  const dtype = host.store.info(hostName(embedName)).dtype;
  const piece = (side: Side, name: string, rowOffset: number, colOffset: number, scale: number, srcRow0 = 0, nRows?: number): Piece => {
    const [rows, cols] = rowsCols(side.store.info(name).shape);
    return { side, name, rows: nRows ?? rows, cols, srcRow0, rowOffset, colOffset, scale };
  };
  const hostHead = host.config.tieWordEmbeddings ? hostName(embedName) : 'lm_head.weight';
  const chipHead = chip.config.tieWordEmbeddings ? chipName(embedName) : 'lm_head.weight';
  const sources: TensorSource[] = [];
  for (const spec of expectedTensors(plan.merged)) {
    const n = spec.name;
    let pieces: Piece[];
    if (n === embedName) {
      pieces = [
        piece(host, hostName(embedName), 0, 0, plan.hostScale),
        piece(chip, chipName(embedName), plan.chipIdOffset, plan.hostHidden, plan.chipScale, 0, plan.chipAlphabet),
      ];
    } else if (n === 'lm_head.weight') {
      pieces = [
        piece(host, hostHead, 0, 0, 1 / plan.hostScale),
        piece(chip, chipHead, plan.chipIdOffset, plan.hostHidden, 1 / plan.chipScale, 0, plan.chipAlphabet),
      ];
    } else if (n === `${MODEL_PREFIX}norm.weight`) {
      pieces = [piece(host, hostName(n), 0, 0, 1), piece(chip, chipName(n), 0, plan.hostHidden, 1)];
    } else {
      const m = /^model\.layers\.(\d+)\.(.*)$/.exec(n);
      if (m === null) throw new Error(`internal: unexpected merged tensor ${n}`);
      const l = Number(m[1]);
      const isChip = l < plan.chipLayers;
      const side = isChip ? chip : host;
      const srcName = `${side.prefix}layers.${isChip ? l : l - plan.chipLayers}.${m[2]}`;
      const off = isChip ? plan.hostHidden : 0;
      const s = isChip ? plan.chipScale : plan.hostScale;
      const role = roleOf(n);
      const p = role === 'reader' ? piece(side, srcName, 0, off, 1 / s)
        : role === 'writer' ? piece(side, srcName, off, 0, s)
          : role === 'hidden-vector' ? piece(side, srcName, 0, off, 1)
            : piece(side, srcName, 0, 0, 1);
      const [rows, cols] = rowsCols(spec.shape);
      const wantRows = role === 'writer' ? side.config.hiddenSize : rows;
      const wantCols = role === 'reader' || role === 'hidden-vector' ? side.config.hiddenSize : cols;
      if (p.rows !== wantRows || p.cols !== wantCols) {
        throw new ChipcError('weights.mismatch', `${side.label} ${srcName}: [${p.rows}, ${p.cols}] does not fit merged ${n} [${rows}, ${cols}] (role ${role})`);
      }
      pieces = [p];
    }
    // Host tensors keep their own dtype; chip-only tensors take the host embedding's.
    const first = pieces[0].side === host ? host.store.info(pieces[0].name).dtype : dtype;
    const outDtype: DType = first === 'F32' || first === 'BF16' || first === 'F16' ? first : 'F32';
    sources.push(paddedSource(n, outDtype, spec.shape, pieces, batch));
  }
  if (H !== plan.merged.hiddenSize) throw new Error('internal: hidden size');
  const mergedCfg: ModelConfig = { ...plan.merged, dtype: dtype === 'F32' ? 'float32' : dtype === 'BF16' ? 'bfloat16' : plan.merged.dtype };
  const cfgJson = JSON.parse(hfConfigJson(mergedCfg)) as Record<string, unknown>;
  const info = mergeInfo(plan, dtype);
  cfgJson['chipc_merge'] = info;
  const extra: Record<string, string | Uint8Array> = {};
  for (const [f, b] of Object.entries(host.files)) if (f !== MANIFEST_FILE) extra[f] = b;
  if (chip.files[MANIFEST_FILE] !== undefined) extra[MANIFEST_FILE] = chip.files[MANIFEST_FILE];
  extra['config.json'] = JSON.stringify(cfgJson, null, 2) + '\n';
  extra[MERGE_INFO_FILE] = JSON.stringify(info, null, 2) + '\n';
  const writeOpts = {
    maxShardSize: opts.maxShardSize,
    holes: opts.holes,
    overwrite: opts.overwrite,
    metadata: { chipc_merge: 'v1' },
    extraFiles: extra,
    onProgress: opts.onProgress,
  };
  if (path.extname(outDir) === '.chip') {
    // The compact form of the merged checkpoint, straight from the same sources (docs/chip-file.md):
    // `chipc expand` regenerates exactly the directory the dense path writes.
    const chipFile = writeChipFromSources(outDir, sources, { ...writeOpts, fileHashes: opts.fileHashes });
    let totalSize = 0;
    let totalParameters = 0;
    for (const src of sources) {
      const numel = src.shape.reduce((a, b) => a * b, 1);
      totalParameters += numel;
      totalSize += numel * dtypeBytes(src.dtype);
    }
    return { plan, write: { dir: outDir, files: [path.basename(outDir)], totalSize, totalParameters, weightMap: {} }, dtype, chipFile };
  }
  const write = writeCheckpoint(outDir, sources, writeOpts);
  return { plan, write, dtype };
}
