/**
 * Golden hashes of a checkpoint (`chipc diff DIR --golden FILE` / `--write-golden FILE`): per
 * tensor the dtype, shape and sha256 of its raw little-endian bytes, plus the sha256 of
 * `config.json`, so a pipeline can check an emitted checkpoint without keeping a copy of it.
 * Hashes are computed streaming (bounded chunks), so memory stays bounded whatever the size, and
 * they do not depend on sharding or on the tensors' order inside the files.
 *
 * File format (deterministic: names sorted by code point, one tensor per line, trailing newline):
 *   { "format": "chipc-checkpoint-golden", "version": 1,
 *     "config": { "sha256": HEX } | null,
 *     "tensors": { NAME: { "dtype": D, "shape": [..], "sha256": HEX }, ... } }
 *
 * This module is the one definition of golden hashes: the emission goldens of the example
 * circuits (fixtures/golden/, EmitGolden below; computed by emit/golden.ts before any file is
 * written) record the same tensor entries, hashed over the same bytes, so a fixture checks an
 * emitted checkpoint through emitGoldenAsCheckpoint and checkGolden.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { DType, TensorStore } from '../safetensors/types.ts';
import { isCheckpointDirOrChip, openCheckpointOrChip } from '../chipfile/open.ts';
import { isDType } from '../safetensors/dtype.ts';
import { compareCodePoints, isJsonObject, JsonNumber, parseStrictJson, type JsonValue } from '../safetensors/reader.ts';
import { ChipcError } from '../util/errors.ts';
import { DEFAULT_DIFF_CHUNK_BYTES, readConfigFile, type DiffOptions } from './diff.ts';
import { removeTemp, tempSibling } from '../util/temp-files.ts';
import type { EmitDType } from '../model/save-weights.ts';

export const GOLDEN_FORMAT = 'chipc-checkpoint-golden';
export const GOLDEN_VERSION = 1;

export interface GoldenTensor {
  dtype: DType;
  shape: number[];
  /** Lower-case hex sha256 of the tensor's raw bytes. */
  sha256: string;
}

export interface CheckpointGolden {
  format: typeof GOLDEN_FORMAT;
  version: typeof GOLDEN_VERSION;
  /** sha256 of config.json's bytes; null when the checkpoint has none (or is a single file). */
  config: { sha256: string } | null;
  /** By tensor name. */
  tensors: Record<string, GoldenTensor>;
}

export interface GoldenTensorCheck {
  name: string;
  status: 'identical' | 'dtype' | 'shape' | 'different';
  expected: GoldenTensor;
  actual: GoldenTensor;
}

export interface GoldenConfigCheck {
  status: 'identical' | 'different' | 'missing' | 'extra' | 'absent';
  expected: string | null;
  actual: string | null;
}

export interface GoldenCheck {
  identical: boolean;
  /** Recorded in the golden file, absent from the checkpoint. */
  missing: string[];
  /** In the checkpoint, not recorded. */
  extra: string[];
  /** Every tensor present on both sides, names ascending. */
  tensors: GoldenTensorCheck[];
  config: GoldenConfigCheck;
  /** Bytes and elements hashed (tensors of the recorded dtype and shape). */
  bytesHashed: number;
  elementsHashed: number;
}

const HEX64 = /^[0-9a-f]{64}$/;

/** Hex sha256 of the concatenated chunks (a tensor's raw bytes, however they are streamed). */
export function sha256OfChunks(chunks: Iterable<Uint8Array>): string {
  const h = createHash('sha256');
  for (const c of chunks) h.update(c);
  return h.digest('hex');
}

function* storeChunks(store: TensorStore, name: string, chunkBytes: number): Generator<Uint8Array> {
  const total = store.info(name).byteLength;
  for (let s = 0; s < total; s += chunkBytes) yield store.readBytes(name, s, Math.min(total, s + chunkBytes));
}

/** Hex sha256 of a tensor's raw bytes, streamed in chunks of at most `chunkBytes`. */
function tensorSha256(store: TensorStore, name: string, chunkBytes = DEFAULT_DIFF_CHUNK_BYTES): string {
  return sha256OfChunks(storeChunks(store, name, chunkBytes));
}

/** Hex sha256 of a byte string or of a text's UTF-8 bytes (config.json, the manifest). */
export function sha256Hex(bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** config.json's sha256 when `p` is a directory or .chip file that has one, else null. */
function configSha(p: string): string | null {
  if (!isCheckpointDirOrChip(p)) return null;
  const bytes = readConfigFile(p);
  return bytes === null ? null : sha256Hex(bytes);
}

/** Hashes every tensor of the checkpoint at `p` (.safetensors file, directory or .chip file) and its config.json. */
export function computeGolden(p: string, opts: DiffOptions = {}): CheckpointGolden {
  const store = openCheckpointOrChip(p);
  try {
    const tensors: Record<string, GoldenTensor> = Object.create(null); // a tensor may be named "__proto__"
    for (const name of [...store.names].sort(compareCodePoints)) {
      const info = store.info(name);
      tensors[name] = { dtype: info.dtype, shape: [...info.shape], sha256: tensorSha256(store, name, opts.chunkBytes) };
    }
    const c = configSha(p);
    return { format: GOLDEN_FORMAT, version: GOLDEN_VERSION, config: c === null ? null : { sha256: c }, tensors };
  } finally {
    store.close();
  }
}

/** The golden file's text: deterministic (sorted names, fixed key order, one tensor per line). */
export function serializeGolden(g: CheckpointGolden): string {
  const names = Object.keys(g.tensors).sort(compareCodePoints);
  const lines = names.map((n) => {
    const t = g.tensors[n]!;
    return `    ${JSON.stringify(n)}: {"dtype": ${JSON.stringify(t.dtype)}, "shape": [${t.shape.join(', ')}], "sha256": ${JSON.stringify(t.sha256)}}`;
  });
  const config = g.config === null ? 'null' : `{"sha256": ${JSON.stringify(g.config.sha256)}}`;
  const body = names.length === 0 ? '{}' : `{\n${lines.join(',\n')}\n  }`;
  return `{\n  "format": ${JSON.stringify(GOLDEN_FORMAT)},\n  "version": ${GOLDEN_VERSION},\n  "config": ${config},\n  "tensors": ${body}\n}\n`;
}

/** Writes `g` to `file` atomically (temporary sibling, then rename). */
export function writeGoldenFile(file: string, g: CheckpointGolden): void {
  const dir = path.dirname(path.resolve(file));
  fs.mkdirSync(dir, { recursive: true });
  const tmp = tempSibling(path.join(dir, path.basename(file)));
  try {
    fs.writeFileSync(tmp, serializeGolden(g));
    fs.renameSync(tmp, file);
  } catch (e) {
    removeTemp(tmp);
    if (e instanceof ChipcError) throw e;
    throw new ChipcError('golden.write', `${file}: cannot write the golden file: ${(e as Error).message}`, { cause: e });
  }
}

/**
 * Parses and validates a golden file's text. Anything malformed (bad JSON, duplicate keys, wrong
 * format or version, unknown fields, bad dtype / shape / hash) is a ChipcError GOLDEN_FORMAT
 * naming the file and the problem.
 */
export function parseGolden(text: string, label: string): CheckpointGolden {
  const bad = (msg: string): never => {
    throw new ChipcError('golden.format', `${label}: not a valid golden file: ${msg}`);
  };
  const root = parseStrictJson(text, (_code, msg) => bad(msg.replace('the header', 'the file')));
  if (!isJsonObject(root)) return bad('the top level is not a JSON object');
  const allowed = new Set(['format', 'version', 'config', 'tensors']);
  for (const k of root.keys) if (!allowed.has(k)) bad(`unknown field ${JSON.stringify(k)}`);
  const format = root.map.get('format');
  if (format !== GOLDEN_FORMAT) bad(`"format" must be ${JSON.stringify(GOLDEN_FORMAT)}, got ${show(format)}`);
  const version = root.map.get('version');
  if (!(version instanceof JsonNumber) || version.raw !== String(GOLDEN_VERSION)) {
    bad(`"version" must be ${GOLDEN_VERSION} (the only version this chipc reads), got ${show(version)}`);
  }
  const cfg = root.map.get('config');
  let config: CheckpointGolden['config'];
  if (cfg === null) config = null;
  else if (isJsonObject(cfg)) {
    for (const k of cfg.keys) if (k !== 'sha256') bad(`"config" has unknown field ${JSON.stringify(k)}`);
    config = { sha256: hash(cfg.map.get('sha256'), '"config.sha256"', bad) };
  } else return bad(`"config" must be null or {"sha256": HEX}, got ${show(cfg)}`);
  return { format: GOLDEN_FORMAT, version: GOLDEN_VERSION, config, tensors: parseTensors(root.map.get('tensors'), bad) };
}

/** The "tensors" object of either golden kind: NAME → {"dtype", "shape", "sha256"}. */
function parseTensors(ts: JsonValue | undefined, bad: (m: string) => never): Record<string, GoldenTensor> {
  if (!isJsonObject(ts)) return bad(`"tensors" must be an object, got ${show(ts)}`);
  const tensors: Record<string, GoldenTensor> = Object.create(null); // a tensor may be named "__proto__"
  for (const name of ts.keys) {
    const where = `tensor ${JSON.stringify(name)}`;
    const t = ts.map.get(name);
    if (!isJsonObject(t)) return bad(`${where} must be an object`);
    for (const k of t.keys) if (k !== 'dtype' && k !== 'shape' && k !== 'sha256') bad(`${where} has unknown field ${JSON.stringify(k)}`);
    const dtype = t.map.get('dtype');
    if (!isDType(dtype)) return bad(`${where}: "dtype" must be a safetensors dtype, got ${show(dtype)}`);
    const shape = t.map.get('shape');
    if (!Array.isArray(shape)) return bad(`${where}: "shape" must be an array of non-negative integers, got ${show(shape)}`);
    const dims = shape.map((d) => {
      if (!(d instanceof JsonNumber) || !/^(0|[1-9][0-9]*)$/.test(d.raw) || !Number.isSafeInteger(d.value)) {
        return bad(`${where}: "shape" must be an array of non-negative integers, got element ${show(d)}`);
      }
      return d.value;
    });
    tensors[name] = { dtype, shape: dims, sha256: hash(t.map.get('sha256'), `${where}: "sha256"`, bad) };
  }
  return tensors;
}

function hash(v: JsonValue | undefined, where: string, bad: (m: string) => never): string {
  if (typeof v !== 'string' || !HEX64.test(v)) return bad(`${where} must be 64 lower-case hex digits, got ${show(v)}`);
  return v;
}

function show(v: JsonValue | undefined): string {
  if (v === undefined) return 'nothing (missing)';
  if (v instanceof JsonNumber) return v.raw;
  if (isJsonObject(v)) return 'an object';
  if (Array.isArray(v)) return 'an array';
  const s = JSON.stringify(v);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/** Reads and validates a golden file. */
export function readGoldenFile(file: string): CheckpointGolden {
  return parseGolden(readGoldenText(file), file);
}

/** A golden file's text; unreadable files and non-UTF-8 bytes are ChipcErrors naming `file`. */
function readGoldenText(file: string): string {
  let bytes: Buffer;
  try {
    bytes = fs.readFileSync(file);
  } catch (e) {
    throw new ChipcError('golden.read', `${file}: cannot read the golden file: ${(e as Error).message}`, { cause: e });
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new ChipcError('golden.format', `${file}: not a valid golden file: not UTF-8 text`);
  }
  return text;
}

/**
 * The emission golden of a compiled circuit (fixtures/golden/<circuit>.<target>.json): what was
 * compiled, per tensor of the emitted checkpoint the same entry as a CheckpointGolden, and the
 * sha256 of its config.json and of its manifest. It carries no format or version field (the
 * fixtures predate them); its text is serializeEmitGolden's.
 */
export interface EmitGolden {
  circuit: string;
  target: string;
  dtype: EmitDType;
  tensors: Record<string, GoldenTensor>;
  configSha256: string;
  manifestSha256: string;
}

/** An emission golden's text: fixed key order, tensors by name, JSON indented by one space (the fixtures' layout). */
export function serializeEmitGolden(g: EmitGolden): string {
  const tensors: Record<string, GoldenTensor> = {};
  for (const n of Object.keys(g.tensors).sort(compareCodePoints)) {
    const t = g.tensors[n]!;
    tensors[n] = { dtype: t.dtype, shape: t.shape, sha256: t.sha256 };
  }
  const out: EmitGolden = {
    circuit: g.circuit, target: g.target, dtype: g.dtype, tensors, configSha256: g.configSha256, manifestSha256: g.manifestSha256,
  };
  return JSON.stringify(out, null, 1) + '\n';
}

/** Parses and validates an emission golden's text (golden.format errors, as parseGolden). */
export function parseEmitGolden(text: string, label: string): EmitGolden {
  const bad = (msg: string): never => {
    throw new ChipcError('golden.format', `${label}: not a valid emission golden: ${msg}`);
  };
  const root = parseStrictJson(text, (_code, msg) => bad(msg.replace('the header', 'the file')));
  if (!isJsonObject(root)) return bad('the top level is not a JSON object');
  const allowed = new Set(['circuit', 'target', 'dtype', 'tensors', 'configSha256', 'manifestSha256']);
  for (const k of root.keys) if (!allowed.has(k)) bad(`unknown field ${JSON.stringify(k)}`);
  const str = (k: string): string => {
    const v = root.map.get(k);
    return typeof v === 'string' ? v : bad(`"${k}" must be a string, got ${show(v)}`);
  };
  const dtype = root.map.get('dtype');
  if (dtype !== 'BF16' && dtype !== 'F32') return bad(`"dtype" must be "BF16" or "F32", got ${show(dtype)}`);
  return {
    circuit: str('circuit'), target: str('target'), dtype, tensors: parseTensors(root.map.get('tensors'), bad),
    configSha256: hash(root.map.get('configSha256'), '"configSha256"', bad),
    manifestSha256: hash(root.map.get('manifestSha256'), '"manifestSha256"', bad),
  };
}

/** The checkpoint golden an emission golden implies (its manifest hash aside): what checkGolden expects of the emitted checkpoint. */
export function emitGoldenAsCheckpoint(g: EmitGolden): CheckpointGolden {
  const tensors: Record<string, GoldenTensor> = Object.create(null);
  for (const [n, t] of Object.entries(g.tensors)) tensors[n] = t;
  return { format: GOLDEN_FORMAT, version: GOLDEN_VERSION, config: { sha256: g.configSha256 }, tensors };
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/**
 * Checks the checkpoint at `p` against `golden`: every recorded tensor must be present with the
 * recorded dtype, shape and sha256, no other tensor may be present, and config.json must have
 * the recorded sha256 (or be absent when null was recorded). Tensors whose dtype or shape differ
 * are not hashed.
 */
export function checkGolden(p: string, golden: CheckpointGolden, opts: DiffOptions = {}): GoldenCheck {
  const store = openCheckpointOrChip(p);
  try {
    const recorded = Object.keys(golden.tensors).sort(compareCodePoints);
    const present = new Set(store.names);
    const missing = recorded.filter((n) => !present.has(n));
    const extra = [...store.names].filter((n) => !Object.hasOwn(golden.tensors, n)).sort(compareCodePoints);
    const tensors: GoldenTensorCheck[] = [];
    let bytesHashed = 0;
    let elementsHashed = 0;
    for (const name of recorded) {
      if (!present.has(name)) continue;
      const expected = golden.tensors[name]!;
      const info = store.info(name);
      const actual: GoldenTensor = { dtype: info.dtype, shape: [...info.shape], sha256: '' };
      let status: GoldenTensorCheck['status'];
      if (info.dtype !== expected.dtype) status = 'dtype';
      else if (!sameShape(info.shape, expected.shape)) status = 'shape';
      else {
        actual.sha256 = tensorSha256(store, name, opts.chunkBytes);
        bytesHashed += info.byteLength;
        elementsHashed += info.numel;
        status = actual.sha256 === expected.sha256 ? 'identical' : 'different';
      }
      tensors.push({ name, status, expected, actual });
    }
    const exp = golden.config === null ? null : golden.config.sha256;
    const act = configSha(p);
    const cstatus: GoldenConfigCheck['status'] =
      exp === null && act === null ? 'absent' : exp === null ? 'extra' : act === null ? 'missing' : exp === act ? 'identical' : 'different';
    const identical = missing.length === 0 && extra.length === 0 && tensors.every((t) => t.status === 'identical') &&
      (cstatus === 'identical' || cstatus === 'absent');
    return { identical, missing, extra, tensors, config: { status: cstatus, expected: exp, actual: act }, bytesHashed, elementsHashed };
  } finally {
    store.close();
  }
}
