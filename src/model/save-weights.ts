/**
 * ModelWeights → TensorSources in the family's on-disk names and layouts (Qwen3-Next: rows
 * re-interleaved into `in_proj_qkvz` / `in_proj_ba`, docs/host-architecture.md §2.4), and `saveModel`, which writes the
 * checkpoint plus its `config.json` (`saveModelChip`: the same checkpoint as one `.chip` file).
 *
 * Sources stream row batches: a matrix held only as CSR is never expanded to a dense matrix, only
 * to one batch of rows at a time. BF16 emission refuses any value that would round.
 */
import { ChipcError } from '../util/errors.ts';
import { isMoeLayer, type ModelConfig } from './config.ts';
import type { TensorSource, WriteProgress } from '../safetensors/types.ts';
import { dtypeBytes } from '../safetensors/dtype.ts';
import { writeCheckpoint, type CheckpointWriteResult } from '../safetensors/writer.ts';
import { writeChipFromSources } from '../chipfile/from-sources.ts';
import type { CompactResult } from '../chipfile/compact.ts';
import { hfConfigJson, validateModelConfig } from './hf-config.ts';
import {
  MODEL_PREFIX, baDiskToNeutral, expectedTensors, gdnDims, qkvzDiskToNeutral, type TensorSpec,
} from './naming.ts';
import type { Matrix, ModelWeights } from './weights.ts';

export type EmitDType = 'F32' | 'BF16';

export interface SourcesOptions {
  /** Rows are streamed in batches of about this many bytes (default 1 MiB). */
  batchBytes?: number;
}

/** Where on-disk row o of a tensor comes from: a row of one of the neutral matrices. */
type RowFill = (row: number, out: Float32Array) => void;

/** Fill `out` (length m.cols, pre-zeroed by the caller) with row r of m. */
function fillMatrixRow(m: Matrix, r: number, out: Float32Array): void {
  if (m.dense) {
    out.set(m.dense.subarray(r * m.cols, (r + 1) * m.cols));
    return;
  }
  const csr = m.csr;
  if (!csr) throw new ChipcError('weights.matrix', 'matrix has neither dense nor CSR data');
  for (let k = csr.rowPtr[r]; k < csr.rowPtr[r + 1]; k++) out[csr.colIdx[k]] = csr.values[k];
}

function checkMatrix(name: string, m: Matrix, rows: number, cols: number): void {
  if (m.rows !== rows || m.cols !== cols) {
    throw new ChipcError('weights.mismatch', `${name}: matrix is [${m.rows}, ${m.cols}], expected [${rows}, ${cols}]`);
  }
  if (m.dense && m.dense.length !== rows * cols) {
    throw new ChipcError('weights.mismatch', `${name}: dense data has ${m.dense.length} entries, expected ${rows * cols}`);
  }
  if (!m.dense && (!m.csr || m.csr.rowPtr.length !== rows + 1)) {
    throw new ChipcError('weights.mismatch', `${name}: matrix has no dense data and no CSR with ${rows + 1} row pointers`);
  }
}

/**
 * A TensorSource whose element (o, c) is row o of `fill`, encoded as F32 or BF16 (BF16 = top 16
 * bits of the float32; a value whose low 16 bits are not zero is refused with a ChipcError naming
 * the tensor and the flat index). With `csr` (the matrix `fill` reads) the stored entries are
 * written straight into the zeroed batch instead: the same bytes, without visiting the zeros (a
 * compiled chip's embedding and LM head are 248,320 rows of ≈ 1,100 columns, ≈ 99.9 % zeros).
 * With `entries` (where the columns of row r's stored entries are, every other element of it zero:
 * a CSR row) the source also has sparseChunks (csrStretches); a CSR `csr` gives its own.
 */
function rowSource(spec: TensorSpec, dtype: EmitDType, rows: number, cols: number, fill: RowFill,
  batchBytes: number, csr?: Matrix['csr'], entries?: RowEntries): TensorSource {
  const one = new Float32Array(1);
  const oneBits = new Uint32Array(one.buffer);
  /** bf16 bits of float32 bits b, or a ChipcError for element (r, c). */
  const bf16Bits = (b: number, r: number, c: number, v: number): number => {
    if ((b & 0xffff) !== 0) {
      throw new ChipcError('weights.inexact',
        `${spec.name}: element ${r * cols + c} (row ${r}, column ${c}) = ${v} is not exactly representable in bfloat16`);
    }
    return b >>> 16;
  };
  if (csr) {
    const { rowPtr, colIdx, values } = csr;
    const writeRow = (r: number, base: number, f32: Float32Array | null, u16: Uint16Array | null): void => {
      for (let k = rowPtr[r]!; k < rowPtr[r + 1]!; k++) {
        const c = colIdx[k]!;
        if (c >= cols) throw new ChipcError('weights.matrix', `${spec.name}: row ${r} has an entry in column ${c}, outside its ${cols} columns`);
        if (f32) {
          f32[base + c] = values[k]!;
          continue;
        }
        one[0] = values[k]!;
        u16![base + c] = bf16Bits(oneBits[0]!, r, c, one[0]);
      }
    };
    const source = batchSource(spec, dtype, rows, cols, batchBytes, writeRow);
    const at: RowSpan = { cols: colIdx, from: 0, to: 0 };
    source.sparseChunks = () => csrStretches(rows, cols, dtype, (r) => {
      at.from = rowPtr[r]!;
      at.to = rowPtr[r + 1]!;
      return at;
    }, writeRow);
    return source;
  }
  const row = new Float32Array(cols);
  const rowBits = new Uint32Array(row.buffer);
  const writeRow = (r: number, base: number, f32: Float32Array | null, u16: Uint16Array | null): void => {
    row.fill(0);
    fill(r, row);
    if (f32) f32.set(row, base);
    else for (let c = 0; c < cols; c++) u16![base + c] = bf16Bits(rowBits[c]!, r, c, row[c]!);
  };
  const source = batchSource(spec, dtype, rows, cols, batchBytes, writeRow);
  if (entries) source.sparseChunks = () => csrStretches(rows, cols, dtype, entries, writeRow);
  return source;
}

/** Entries of a CSR row closer than this many columns share one stretch (csrStretches). */
const STRETCH_GAP = 32;

/** Where a row's stored entries are: their columns are cols[from … to − 1] (any order). */
interface RowSpan { cols: ArrayLike<number>; from: number; to: number }
/** Row r's span (the object may be reused from call to call). */
type RowEntries = (r: number) => RowSpan;

/**
 * The bytes of a CSR matrix as TensorSource.sparseChunks: each row's entries (`entries`) in
 * stretches (sorted columns; a gap of more than STRETCH_GAP columns starts a new stretch), written
 * by `writeRow` into a one-row buffer, and the zeros around them as byte counts. A compiled chip's tensors are nearly
 * all zeros (the embedding and LM head: one or a few entries in rows of thousands of columns), so
 * the `.chip` writer scans only the stretches. The buffer's entries are cleared after each row.
 */
function* csrStretches(rows: number, cols: number, dtype: EmitDType, entries: RowEntries,
  writeRow: (r: number, base: number, f32: Float32Array | null, u16: Uint16Array | null) => void): Iterable<Uint8Array | number> {
  const elemBytes = dtypeBytes(dtype);
  const row = new Uint8Array(cols * elemBytes);
  const f32 = dtype === 'F32' ? new Float32Array(row.buffer) : null;
  const u16 = dtype === 'BF16' ? new Uint16Array(row.buffer) : null;
  let zeros = 0;
  let sorted = new Int32Array(16);
  for (let r = 0; r < rows; r++) {
    const { cols: colIdx, from: a, to } = entries(r);
    const n = to - a;
    if (n === 0) {
      zeros += cols * elemBytes;
      continue;
    }
    writeRow(r, 0, f32, u16); // checks every column against cols
    if (sorted.length < n) sorted = new Int32Array(Math.max(n, 2 * sorted.length));
    const cs = sorted.subarray(0, n);
    if (n <= 16) {
      // insertion sort: rows of a few entries are the common case, and a native sort call costs more
      for (let k = 0; k < n; k++) {
        const c = colIdx[a + k]!;
        let i = k;
        for (; i > 0 && cs[i - 1]! > c; i--) cs[i] = cs[i - 1]!;
        cs[i] = c;
      }
    } else {
      for (let k = 0; k < n; k++) cs[k] = colIdx[a + k]!;
      cs.sort();
    }
    let done = 0; // columns of this row accounted for
    for (let i = 0; i < n;) {
      let j = i;
      while (j + 1 < n && cs[j + 1]! - cs[j]! <= STRETCH_GAP) j++;
      const from = cs[i]!;
      const to = cs[j]! + 1;
      zeros += (from - done) * elemBytes;
      if (zeros > 0) yield zeros;
      zeros = 0;
      yield row.subarray(from * elemBytes, to * elemBytes);
      done = to;
      i = j + 1;
    }
    zeros += (cols - done) * elemBytes;
    for (let k = 0; k < n; k++) {
      if (f32) f32[cs[k]!] = 0;
      else u16![cs[k]!] = 0;
    }
  }
  if (zeros > 0) yield zeros;
}

/**
 * A TensorSource yielding whole rows in batches of about `batchBytes`: each batch is zeroed and
 * `writeRow(r, base, f32, u16)` writes row r at element offset `base` (f32 set for F32, u16 for BF16).
 */
function batchSource(spec: TensorSpec, dtype: EmitDType, rows: number, cols: number, batchBytes: number,
  writeRow: (r: number, base: number, f32: Float32Array | null, u16: Uint16Array | null) => void): TensorSource {
  const elemBytes = dtypeBytes(dtype);
  return {
    name: spec.name,
    dtype,
    shape: [...spec.shape],
    *chunks(): Iterable<Uint8Array> {
      const rowsPerBatch = Math.max(1, Math.floor(batchBytes / Math.max(1, cols * elemBytes)));
      // One buffer for every batch, zeroed again before each (TensorSource: a chunk is consumed
      // before the next is asked for). A fresh zeroed buffer per batch cost a page fault per 4 KiB
      // of the dense bytes (≈ 6.5 GB for the chip at qwen3.5-4b).
      const buffer = new Uint8Array(Math.min(rowsPerBatch, rows) * cols * elemBytes);
      for (let start = 0; start < rows; start += rowsPerBatch) {
        const n = Math.min(rowsPerBatch, rows - start);
        const bytes = buffer.subarray(0, n * cols * elemBytes);
        if (start > 0) bytes.fill(0);
        const f32 = dtype === 'F32' ? new Float32Array(bytes.buffer, 0, n * cols) : null;
        const u16 = dtype === 'BF16' ? new Uint16Array(bytes.buffer, 0, n * cols) : null;
        for (let j = 0; j < n; j++) writeRow(start + j, j * cols, f32, u16);
        yield bytes;
      }
    },
  };
}

/**
 * TensorSources for every tensor of the weights' config, in expectedTensors order, named and laid
 * out as the family stores them. Vectors are emitted from their Float32Arrays; tied models emit no
 * `lm_head.weight`.
 */
export function modelWeightsToSources(weights: ModelWeights, dtype: EmitDType, opts: SourcesOptions = {}): TensorSource[] {
  if (dtype !== 'F32' && dtype !== 'BF16') {
    throw new ChipcError('weights.argument', `emit dtype must be F32 or BF16, got ${String(dtype)}`);
  }
  const cfg = weights.config;
  validateModelConfig(cfg);
  if (weights.layers.length !== cfg.numLayers) {
    throw new ChipcError('weights.mismatch', `weights have ${weights.layers.length} layers, config says ${cfg.numLayers}`);
  }
  const batchBytes = opts.batchBytes ?? 1 << 20;
  const specs = new Map(expectedTensors(cfg).map((t) => [t.name, t]));
  const out: TensorSource[] = [];
  const spec = (name: string): TensorSpec => {
    const s = specs.get(name);
    if (!s) throw new Error(`internal: no tensor spec for ${name}`);
    return s;
  };
  const mat = (name: string, m: Matrix): void => {
    const s = spec(name);
    checkMatrix(name, m, s.shape[0], s.shape[1]);
    out.push(rowSource(s, dtype, m.rows, m.cols, (r, row) => fillMatrixRow(m, r, row), batchBytes, m.dense ? undefined : m.csr));
  };
  /** Fused tensor: on-disk row o is neutral row rowMap[o] of the concatenation of `parts`. */
  const fused = (name: string, parts: [string, Matrix][], rowMap: Uint32Array): void => {
    const s = spec(name);
    const starts: number[] = [];
    let total = 0;
    for (const [pname, m] of parts) {
      checkMatrix(pname, m, m.rows, s.shape[1]);
      starts.push(total);
      total += m.rows;
    }
    if (total !== s.shape[0] || rowMap.length !== total) {
      throw new ChipcError('weights.mismatch', `${name}: parts have ${total} rows, expected ${s.shape[0]}`);
    }
    const partOf = (n: number): number => {
      let p = parts.length - 1;
      while (starts[p] > n) p--;
      return p;
    };
    const fill: RowFill = (o, row) => {
      const n = rowMap[o];
      const p = partOf(n);
      fillMatrixRow(parts[p][1], n - starts[p], row);
    };
    // where on-disk row o's entries are, when every part is CSR: its part's row
    const at: RowSpan = { cols: [], from: 0, to: 0 };
    const entries: RowEntries | undefined = parts.every(([, m]) => !m.dense) ? (o) => {
      const n = rowMap[o]!;
      const p = partOf(n);
      const csr = parts[p]![1].csr!;
      at.cols = csr.colIdx;
      at.from = csr.rowPtr[n - starts[p]!]!;
      at.to = csr.rowPtr[n - starts[p]! + 1]!;
      return at;
    } : undefined;
    out.push(rowSource(s, dtype, total, s.shape[1], fill, batchBytes, undefined, entries));
  };
  const vec = (name: string, v: Float32Array): void => {
    const s = spec(name);
    const numel = s.shape.reduce((a, b) => a * b, 1);
    if (v.length !== numel) {
      throw new ChipcError('weights.mismatch', `${name}: vector has ${v.length} entries, expected ${numel}`);
    }
    out.push(rowSource(s, dtype, 1, numel, (_r, row) => row.set(v), batchBytes));
  };

  const H = cfg.hiddenSize;
  mat(`${MODEL_PREFIX}embed_tokens.weight`, weights.embedTokens);
  weights.layers.forEach((layer, i) => {
    const p = `${MODEL_PREFIX}layers.${i}.`;
    vec(`${p}input_layernorm.weight`, layer.inputLayernorm);
    vec(`${p}post_attention_layernorm.weight`, layer.postAttentionLayernorm);
    const mx = layer.mixer;
    const wantKind = cfg.layerTypes[i];
    if (mx.kind !== wantKind) {
      throw new ChipcError('weights.mismatch', `layer ${i}: weights are ${mx.kind}, config says ${wantKind}`);
    }
    if (mx.kind === 'linear_attention') {
      const la = `${p}linear_attn.`;
      if (cfg.family === 'qwen3_next') {
        const d = gdnDims(cfg);
        checkMatrix(`${la}inProjQkv`, mx.inProjQkv, d.convDim, H);
        checkMatrix(`${la}inProjZ`, mx.inProjZ, d.valueDim, H);
        checkMatrix(`${la}inProjB`, mx.inProjB, d.hv, H);
        checkMatrix(`${la}inProjA`, mx.inProjA, d.hv, H);
        fused(`${la}in_proj_qkvz.weight`, [[`${la}inProjQkv`, mx.inProjQkv], [`${la}inProjZ`, mx.inProjZ]],
          qkvzDiskToNeutral(cfg));
        fused(`${la}in_proj_ba.weight`, [[`${la}inProjB`, mx.inProjB], [`${la}inProjA`, mx.inProjA]],
          baDiskToNeutral(cfg));
      } else {
        mat(`${la}in_proj_qkv.weight`, mx.inProjQkv);
        mat(`${la}in_proj_z.weight`, mx.inProjZ);
        mat(`${la}in_proj_b.weight`, mx.inProjB);
        mat(`${la}in_proj_a.weight`, mx.inProjA);
      }
      vec(`${la}conv1d.weight`, mx.conv1d);
      vec(`${la}A_log`, mx.aLog);
      vec(`${la}dt_bias`, mx.dtBias);
      vec(`${la}norm.weight`, mx.norm);
      mat(`${la}out_proj.weight`, mx.outProj);
    } else {
      const sa = `${p}self_attn.`;
      mat(`${sa}q_proj.weight`, mx.qProj);
      mat(`${sa}k_proj.weight`, mx.kProj);
      mat(`${sa}v_proj.weight`, mx.vProj);
      mat(`${sa}o_proj.weight`, mx.oProj);
      vec(`${sa}q_norm.weight`, mx.qNorm);
      vec(`${sa}k_norm.weight`, mx.kNorm);
    }
    const mp = `${p}mlp.`;
    const mlp = layer.mlp;
    const wantMoe = isMoeLayer(cfg, i);
    if ((mlp.kind === 'moe') !== wantMoe) {
      throw new ChipcError('weights.mismatch', `layer ${i}: weights have a ${mlp.kind} MLP, config says ${wantMoe ? 'moe' : 'dense'}`);
    }
    if (mlp.kind === 'moe') {
      const m = cfg.moe!;
      if (mlp.experts.length !== m.numExperts) {
        throw new ChipcError('weights.mismatch', `layer ${i}: ${mlp.experts.length} experts, config says ${m.numExperts}`);
      }
      mat(`${mp}gate.weight`, mlp.gate);
      mlp.experts.forEach((ex, e) => {
        mat(`${mp}experts.${e}.gate_proj.weight`, ex.gateProj);
        mat(`${mp}experts.${e}.up_proj.weight`, ex.upProj);
        mat(`${mp}experts.${e}.down_proj.weight`, ex.downProj);
      });
      mat(`${mp}shared_expert.gate_proj.weight`, mlp.sharedExpert.gateProj);
      mat(`${mp}shared_expert.up_proj.weight`, mlp.sharedExpert.upProj);
      mat(`${mp}shared_expert.down_proj.weight`, mlp.sharedExpert.downProj);
      mat(`${mp}shared_expert_gate.weight`, mlp.sharedExpertGate);
    } else {
      mat(`${mp}gate_proj.weight`, mlp.gateProj);
      mat(`${mp}up_proj.weight`, mlp.upProj);
      mat(`${mp}down_proj.weight`, mlp.downProj);
    }
  });
  vec(`${MODEL_PREFIX}norm.weight`, weights.norm);
  if (!cfg.tieWordEmbeddings) mat('lm_head.weight', weights.lmHead);
  return out;
}

export interface SaveModelOptions {
  dtype: EmitDType;
  /** Bytes of tensor data per shard (see CheckpointWriteOptions). */
  maxShardSize?: number;
  /** Extra `__metadata__` strings (format: "pt" is always written). */
  metadata?: Record<string, string>;
  /** Replace an existing non-empty directory (default: refuse). */
  overwrite?: boolean;
  /** More files written into the same directory in the same atomic rename (name → contents). */
  extraFiles?: Record<string, string | Uint8Array>;
  /** Progress of the write (writeCheckpoint's onProgress); does not change the bytes written. */
  onProgress?: (p: WriteProgress) => void;
  /** `.chip` only: record each safetensors file's dense SHA-256 in its manifest (CompactOptions.fileHashes). */
  fileHashes?: boolean;
  /** Leave zero runs of 64 KiB or more as holes (default true; WriteOptions.holes). */
  holes?: boolean;
}

/**
 * Write `weights` as a Hugging Face checkpoint directory: safetensors file(s) (+ index when
 * sharded) and `config.json` (toHfConfig of the weights' config with `dtype` set to the emitted
 * dtype: F32 → "float32", BF16 → "bfloat16"). Everything is written into a temporary sibling
 * directory that is renamed into place (writeCheckpoint), so the directory is complete or absent.
 */
export function saveModel(dir: string, weights: ModelWeights, opts: SaveModelOptions): CheckpointWriteResult {
  const { sources, extraFiles } = modelCheckpointParts(weights, opts.dtype, opts.extraFiles);
  return writeCheckpoint(dir, sources, {
    maxShardSize: opts.maxShardSize,
    metadata: opts.metadata,
    overwrite: opts.overwrite,
    extraFiles,
    onProgress: opts.onProgress,
    holes: opts.holes,
  });
}

/**
 * What saveModel hands to writeCheckpoint: the tensors' sources and the extra files (the caller's
 * plus `config.json`, toHfConfig of the weights' config with `dtype` set to the emitted dtype).
 */
export function modelCheckpointParts(weights: ModelWeights, dtype: EmitDType, extra: Record<string, string | Uint8Array> = {}):
  { sources: TensorSource[]; extraFiles: Record<string, string | Uint8Array> } {
  const cfg: ModelConfig = { ...weights.config, dtype: dtype === 'BF16' ? 'bfloat16' : 'float32' };
  const sources = modelWeightsToSources(weights, dtype);
  return { sources, extraFiles: { ...extra, 'config.json': hfConfigJson(cfg) } };
}

/**
 * Writes the `.chip` file (docs/chip-file.md) of the checkpoint `saveModel(dir, weights, opts)`
 * would write, straight from the weights' sources, without writing the dense directory: the
 * same bytes as `compactCheckpoint` of that directory. Atomic; `overwrite` replaces a file.
 */
export function saveModelChip(file: string, weights: ModelWeights, opts: SaveModelOptions): CompactResult {
  const { sources, extraFiles } = modelCheckpointParts(weights, opts.dtype, opts.extraFiles);
  return writeChipFromSources(file, sources, {
    maxShardSize: opts.maxShardSize,
    metadata: opts.metadata,
    overwrite: opts.overwrite,
    extraFiles,
    onProgress: opts.onProgress,
    fileHashes: opts.fileHashes,
  });
}
