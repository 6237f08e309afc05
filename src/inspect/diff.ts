/**
 * Bitwise, streaming comparison of two tensor stores (`chipc diff A B`). Two tensors are
 * identical when name, dtype, shape and every byte agree; otherwise the number of differing
 * elements and the first one (flat index, both values, both bit patterns) are reported.
 *
 * Memory is bounded by the chunk size whatever the checkpoint size: each tensor is read as the
 * same byte ranges [s, s + chunk) of both stores (`readBytes`), so the two sides' sharding, file
 * layout and chunking never have to agree. Equal chunks are recognised with one memcmp
 * (Buffer.compare); only unequal 4 KiB blocks are scanned element by element.
 *
 * When both sides are checkpoint directories or `.chip` files, their `config.json` files are compared too.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { DType, TensorStore } from '../safetensors/types.ts';
import { isCheckpointDirOrChip, openCheckpointOrChip, readCheckpointFile } from '../chipfile/open.ts';
import { ChipcError } from '../util/errors.ts';
import { decodeElement } from './elements.ts';
import { dtypeBits } from '../safetensors/dtype.ts';

export interface TensorDiff {
  name: string;
  status: 'identical' | 'dtype' | 'shape' | 'different';
  dtypeA: DType;
  dtypeB: DType;
  shapeA: number[];
  shapeB: number[];
  /**
   * What `firstIndex` and `count` count: elements, or bytes for the sub-byte dtypes (F4, F6_*),
   * whose elements do not start on byte boundaries (status 'different').
   */
  unit?: 'element' | 'byte';
  /** Flat (row-major) index of the first difference (status 'different'). */
  firstIndex?: number;
  /** The first differing element of A / B as a value with its bit pattern, e.g. `1.5 (0x3fc00000)`. */
  firstA?: string;
  firstB?: string;
  /** Raw bit patterns of that element (little-endian bytes read as one hex number). */
  firstBitsA?: string;
  firstBitsB?: string;
  /** Number of differing elements (status 'different'). */
  count?: number;
}

/** config.json of two checkpoint directories. */
export interface ConfigDiff {
  status: 'identical' | 'different' | 'only-in-a' | 'only-in-b' | 'absent';
  /** Dotted key paths whose values differ (both files valid JSON; at most MAX_CONFIG_KEYS). */
  keys?: string[];
  /** Why no key paths could be given (a side is not valid JSON). */
  note?: string;
}

export interface StoreDiff {
  identical: boolean;
  onlyInA: string[];
  onlyInB: string[];
  tensors: TensorDiff[];
  /** Common tensors compared (every status). */
  compared: number;
  /** Bytes compared byte for byte (tensors of equal dtype and shape), on each side. */
  bytesCompared: number;
  /** Elements compared (tensors of equal dtype and shape). */
  elementsCompared: number;
  /** config.json comparison; null unless both sides are directories. */
  config: ConfigDiff | null;
}

export interface DiffOptions {
  /** Bytes read per side per step (rounded down to whole elements; default 8 MiB). */
  chunkBytes?: number;
}

export const DEFAULT_DIFF_CHUNK_BYTES = 8 << 20;
/** Unequal chunks are narrowed down in blocks of this many bytes (a multiple of every element size). */
const BLOCK = 4096;
const MAX_CONFIG_KEYS = 20;

/** Hex of `n` little-endian bytes at `off` as one number, most significant byte first. */
export function bitPattern(buf: Uint8Array, off: number, n: number): string {
  let s = '0x';
  for (let i = n - 1; i >= 0; i--) s += buf[off + i]!.toString(16).padStart(2, '0');
  return s;
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/** Compares tensor `name` of `a` and `b` (present in both) in chunks of bounded size. */
export function diffTensor(a: TensorStore, b: TensorStore, name: string, opts: DiffOptions = {}): TensorDiff {
  const ia = a.info(name);
  const ib = b.info(name);
  const base = { name, dtypeA: ia.dtype, dtypeB: ib.dtype, shapeA: ia.shape, shapeB: ib.shape };
  if (ia.dtype !== ib.dtype) return { ...base, status: 'dtype' };
  if (!sameShape(ia.shape, ib.shape)) return { ...base, status: 'shape' };
  if (ia.byteLength !== ib.byteLength) {
    throw new ChipcError('diff.size', `tensor ${JSON.stringify(name)}: ${ia.byteLength} bytes in A but ${ib.byteLength} in B for the same dtype and shape`);
  }
  const bits = dtypeBits(ia.dtype);
  const subByte = bits % 8 !== 0;
  const elem = subByte ? 1 : bits / 8;
  const want = opts.chunkBytes ?? DEFAULT_DIFF_CHUNK_BYTES;
  if (!Number.isSafeInteger(want) || want <= 0) throw new ChipcError('diff.chunk', `chunk size must be a positive integer, got ${want}`);
  const chunk = Math.max(elem, want - (want % elem));
  const total = ia.byteLength;
  let count = 0;
  let firstByte = -1;
  let firstA = '';
  let firstB = '';
  let firstBitsA = '';
  let firstBitsB = '';
  for (let s = 0; s < total; s += chunk) {
    const e = Math.min(total, s + chunk);
    const ca = a.readBytes(name, s, e);
    const cb = b.readBytes(name, s, e);
    if (ca.length !== e - s || cb.length !== e - s) {
      throw new ChipcError('diff.short-read', `tensor ${JSON.stringify(name)}: asked for bytes [${s}, ${e}), got ${ca.length} (A) and ${cb.length} (B)`);
    }
    if (Buffer.compare(ca, cb) === 0) continue;
    for (let blk = 0; blk < ca.length; blk += BLOCK) {
      const end = Math.min(ca.length, blk + BLOCK);
      if (Buffer.compare(ca.subarray(blk, end), cb.subarray(blk, end)) === 0) continue;
      for (let o = blk; o < end; o += elem) {
        let same = true;
        for (let k = 0; k < elem; k++) {
          if (ca[o + k] !== cb[o + k]) {
            same = false;
            break;
          }
        }
        if (same) continue;
        if (count === 0) {
          firstByte = s + o;
          firstBitsA = bitPattern(ca, o, elem);
          firstBitsB = bitPattern(cb, o, elem);
          firstA = subByte ? firstBitsA : decodeElement(ca, o, ia.dtype);
          firstB = subByte ? firstBitsB : decodeElement(cb, o, ia.dtype);
        }
        count++;
      }
    }
  }
  if (count === 0) return { ...base, status: 'identical' };
  return {
    ...base, status: 'different', unit: subByte ? 'byte' : 'element',
    firstIndex: firstByte / elem, firstA, firstB, firstBitsA, firstBitsB, count,
  };
}

/** Compares every tensor of two stores (names in ascending order). */
export function diffStores(a: TensorStore, b: TensorStore, opts: DiffOptions = {}): StoreDiff {
  const setB = new Set(b.names);
  const setA = new Set(a.names);
  const onlyInA = a.names.filter((n) => !setB.has(n));
  const onlyInB = b.names.filter((n) => !setA.has(n));
  const tensors: TensorDiff[] = [];
  let bytesCompared = 0;
  let elementsCompared = 0;
  for (const name of a.names) {
    if (!setB.has(name)) continue;
    const d = diffTensor(a, b, name, opts);
    if (d.status === 'identical' || d.status === 'different') {
      const info = a.info(name);
      bytesCompared += info.byteLength;
      elementsCompared += info.numel;
    }
    tensors.push(d);
  }
  const identical = onlyInA.length === 0 && onlyInB.length === 0 && tensors.every((t) => t.status === 'identical');
  return { identical, onlyInA, onlyInB, tensors, compared: tensors.length, bytesCompared, elementsCompared, config: null };
}

/** Reads `dir/config.json` (or a .chip file's stored config.json), or null when there is none. */
export function readConfigFile(dir: string): Uint8Array | null {
  if (!isDirectory(dir)) return readCheckpointFile(dir, 'config.json');
  const p = path.join(dir, 'config.json');
  let st: fs.Stats;
  try {
    st = fs.statSync(p);
  } catch {
    return null;
  }
  if (!st.isFile()) throw new ChipcError('diff.config', `${p}: not a regular file`);
  try {
    return fs.readFileSync(p);
  } catch (e) {
    throw new ChipcError('diff.config', `${p}: cannot read: ${(e as Error).message}`, { cause: e });
  }
}

function parseJsonOrNull(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    return undefined;
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Dotted paths where two parsed JSON values differ (objects are descended, anything else compared whole). */
function jsonDiffPaths(a: unknown, b: unknown, prefix: string, out: string[]): void {
  if (out.length >= MAX_CONFIG_KEYS) return;
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    for (const k of keys) {
      const p = prefix === '' ? k : `${prefix}.${k}`;
      if (!Object.hasOwn(a, k) || !Object.hasOwn(b, k)) {
        if (out.length < MAX_CONFIG_KEYS) out.push(p);
      } else {
        jsonDiffPaths(a[k], b[k], p, out);
      }
    }
    return;
  }
  if (JSON.stringify(a) !== JSON.stringify(b)) out.push(prefix === '' ? '(whole file)' : prefix);
}

/** Compares the config.json of two checkpoint directories (or .chip files): presence, bytes, and which keys differ. */
export function diffConfigs(dirA: string, dirB: string): ConfigDiff {
  const ca = readConfigFile(dirA);
  const cb = readConfigFile(dirB);
  if (ca === null && cb === null) return { status: 'absent' };
  if (ca === null) return { status: 'only-in-b' };
  if (cb === null) return { status: 'only-in-a' };
  if (Buffer.compare(ca, cb) === 0) return { status: 'identical' };
  const ja = parseJsonOrNull(ca);
  const jb = parseJsonOrNull(cb);
  if (ja === undefined || jb === undefined) {
    const bad = [ja === undefined ? 'A' : '', jb === undefined ? 'B' : ''].filter(Boolean).join(' and ');
    return { status: 'different', note: `config.json of ${bad} is not valid JSON; the bytes differ` };
  }
  const keys: string[] = [];
  jsonDiffPaths(ja, jb, '', keys);
  if (keys.length === 0) return { status: 'different', keys, note: 'same JSON values, different formatting' };
  return { status: 'different', keys };
}

function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Opens and compares two checkpoints (.safetensors files, directories or .chip files); compares
 * config.json too when both are directories or .chip files. A config.json difference makes the result not identical.
 */
export function diffCheckpoints(pathA: string, pathB: string, opts: DiffOptions = {}): StoreDiff {
  const sa = openCheckpointOrChip(pathA);
  try {
    const sb = openCheckpointOrChip(pathB);
    try {
      const d = diffStores(sa, sb, opts);
      if (isCheckpointDirOrChip(pathA) && isCheckpointDirOrChip(pathB)) {
        d.config = diffConfigs(pathA, pathB);
        if (d.config.status !== 'identical' && d.config.status !== 'absent') d.identical = false;
      }
      return d;
    } finally {
      sb.close();
    }
  } finally {
    sa.close();
  }
}
