/**
 * IR files (`.chip-ir`): msgpack (msgpackr) of the CircuitIR with a small envelope — a magic
 * string, the format version and a sha256 of the payload — so a truncated or corrupted file is
 * refused with a clear error instead of decoding into nonsense. Writing is atomic (temporary
 * name, then rename) and deterministic (object keys in a fixed order, no timestamps).
 */
import fs from 'node:fs';
import { createHash } from 'node:crypto';
import { Packr, Unpackr } from 'msgpackr';
import { ChipcError } from '../util/errors.ts';
import type { CircuitIR } from './types.ts';
import { makeParentDir, removeTemp, tempSibling } from '../util/temp-files.ts';

const MAGIC = 'chipc-ir';
const packr = new Packr({ useRecords: false, variableMapSize: true });
const unpackr = new Unpackr({ useRecords: false });

export function encodeIR(ir: CircuitIR): Uint8Array {
  const payload = packr.pack(plainTables(ir));
  const sha256 = createHash('sha256').update(payload).digest('hex');
  return packr.pack({ magic: MAGIC, version: ir.version, sha256, payload });
}

export function decodeIR(bytes: Uint8Array, label = '<ir>'): CircuitIR {
  let env: { magic?: unknown; version?: unknown; sha256?: unknown; payload?: unknown };
  try {
    env = unpackr.unpack(bytes) as typeof env;
  } catch (e) {
    throw new ChipcError('ir.file', `${label} is not a chipc IR file (msgpack decode failed: ${(e as Error).message})`);
  }
  if (env === null || typeof env !== 'object' || env.magic !== MAGIC) {
    throw new ChipcError('ir.file', `${label} is not a chipc IR file (bad magic)`);
  }
  if (env.version !== 1) throw new ChipcError('ir.version', `${label} has IR version ${String(env.version)}; this chipc reads version 1`);
  if (!(env.payload instanceof Uint8Array)) throw new ChipcError('ir.file', `${label} has no payload`);
  const sha = createHash('sha256').update(env.payload).digest('hex');
  if (sha !== env.sha256) throw new ChipcError('ir.checksum', `${label} is corrupted (payload checksum mismatch)`);
  return unpackr.unpack(env.payload) as CircuitIR;
}

export function writeIR(file: string, ir: CircuitIR): void {
  const tmp = tempSibling(file);
  try {
    makeParentDir(file);
    fs.writeFileSync(tmp, encodeIR(ir));
    fs.renameSync(tmp, file);
  } catch (e) {
    removeTemp(tmp);
    throw new ChipcError('ir.write', `cannot write ${file}: ${(e as Error).message}`, { cause: e });
  }
}

export function readIR(file: string): CircuitIR {
  if (!fs.existsSync(file)) throw new ChipcError('ir.file', `${file} does not exist`);
  return decodeIR(fs.readFileSync(file), file);
}

/**
 * The IR with every token field's values as a plain array: a field may be held as a typed array
 * (a compact table, `c.tokenTable`), which msgpack would write as raw bytes and read back as a
 * Buffer; the file keeps one form, a list of integers.
 */
function plainTables(ir: CircuitIR): CircuitIR {
  if (!ir.nodes.some((n) => n.op === 'token_field' && !Array.isArray(n.values))) return ir;
  return { ...ir, nodes: ir.nodes.map((n) => (n.op === 'token_field' && !Array.isArray(n.values) ? { ...n, values: Array.from(n.values) } : n)) };
}
