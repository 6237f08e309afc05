/**
 * Opens a checkpoint as one TensorStore: a single .safetensors file, or a directory holding
 * `model.safetensors` or `model.safetensors.index.json` plus its shards (docs/host-architecture.md §6.6).
 * The index is validated against the shards' own headers.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ChipcError } from '../util/errors.ts';
import type { TensorInfo, TensorStore } from './types.ts';
import { compareCodePoints, isJsonObject, openSafetensors, parseStrictJson, type OpenOptions, type SafetensorsFile } from './reader.ts';

export const SINGLE_FILE_NAME = 'model.safetensors';
export const INDEX_FILE_NAME = 'model.safetensors.index.json';

/** Several shard files seen as one store; tensor names are unique across shards. */
export class ShardedStore implements TensorStore {
  readonly names: readonly string[];
  readonly metadata: Readonly<Record<string, string>>;
  private readonly owner = new Map<string, SafetensorsFile>();

  /** `shards` in file-name order; metadata is taken from the first shard. */
  constructor(readonly dir: string, readonly shards: readonly SafetensorsFile[]) {
    for (const s of shards) for (const n of s.names) this.owner.set(n, s);
    this.names = Object.freeze([...this.owner.keys()].sort(compareCodePoints));
    this.metadata = shards.length > 0 ? shards[0].metadata : Object.freeze({});
  }
  /** The shard file holding `name`. */
  shardOf(name: string): string {
    return this.get(name).path;
  }
  has(name: string): boolean {
    return this.owner.has(name);
  }
  info(name: string): TensorInfo {
    return this.get(name).info(name);
  }
  readBytes(name: string, start?: number, end?: number): Uint8Array {
    return this.get(name).readBytes(name, start, end);
  }
  readF32(name: string): Float32Array {
    return this.get(name).readF32(name);
  }
  chunks(name: string, chunkBytes?: number): Iterable<Uint8Array> {
    return this.get(name).chunks(name, chunkBytes);
  }
  close(): void {
    for (const s of this.shards) s.close();
  }
  private get(name: string): SafetensorsFile {
    const s = this.owner.get(name);
    if (s === undefined) throw new ChipcError('safetensors.no-tensor', `${this.dir}: no tensor named ${JSON.stringify(name)}`);
    return s;
  }
}

/**
 * Opens `p`: a .safetensors file, or a directory with exactly one of `model.safetensors` /
 * `model.safetensors.index.json` (both present is refused as ambiguous).
 */
export function openCheckpoint(p: string, opts: OpenOptions = {}): TensorStore {
  let st: fs.Stats;
  try {
    st = fs.statSync(p);
  } catch (e) {
    throw new ChipcError('checkpoint.not-found', `${p}: no such file or directory`, { cause: e });
  }
  if (st.isFile()) return openSafetensors(p, opts);
  if (!st.isDirectory()) throw new ChipcError('checkpoint.not-found', `${p}: not a file or directory`);
  const single = path.join(p, SINGLE_FILE_NAME);
  const index = path.join(p, INDEX_FILE_NAME);
  const hasSingle = fs.existsSync(single);
  const hasIndex = fs.existsSync(index);
  if (hasSingle && hasIndex) throw new ChipcError('checkpoint.ambiguous', `${p}: holds both ${SINGLE_FILE_NAME} and ${INDEX_FILE_NAME}; remove one`);
  if (hasSingle) return openSafetensors(single, opts);
  if (!hasIndex) throw new ChipcError('checkpoint.not-found', `${p}: directory holds neither ${SINGLE_FILE_NAME} nor ${INDEX_FILE_NAME}`);
  return openIndexed(p, index, opts);
}

function openIndexed(dir: string, indexPath: string, opts: OpenOptions): ShardedStore {
  const fail = (code: string, msg: string): never => {
    throw new ChipcError(code === 'safetensors.header-json' || code === 'safetensors.header-padding' ? 'checkpoint.index-json' : code === 'safetensors.duplicate-key' ? 'checkpoint.index-duplicate' : code, `${indexPath}: ${msg}`);
  };
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(fs.readFileSync(indexPath));
  } catch (e) {
    throw new ChipcError('checkpoint.index-json', `${indexPath}: cannot read as UTF-8 text: ${(e as Error).message}`, { cause: e });
  }
  const root = parseStrictJson(text, fail);
  if (!isJsonObject(root)) return fail('checkpoint.index-weight-map', 'the index is not a JSON object');
  const wm = root.map.get('weight_map');
  if (!isJsonObject(wm)) return fail('checkpoint.index-weight-map', 'the index has no "weight_map" object');
  const listed = new Map<string, string>(); // tensor → shard file name
  for (const name of wm.keys) {
    const file = wm.map.get(name);
    if (typeof file !== 'string' || file === '' || file !== path.basename(file) || file === '.' || file === '..' || file.includes('/') || file.includes('\\')) {
      fail('checkpoint.index-shard-name', `weight_map[${JSON.stringify(name)}] must be a shard file name in the same directory, got ${JSON.stringify(file)}`);
    }
    listed.set(name, file as string);
  }
  const shardNames = [...new Set(listed.values())].sort(compareCodePoints);
  for (const f of shardNames) {
    if (!fs.existsSync(path.join(dir, f))) fail('checkpoint.index-shard-missing', `shard ${JSON.stringify(f)} named in weight_map does not exist`);
  }
  const shards: SafetensorsFile[] = [];
  try {
    const seenIn = new Map<string, string>();
    for (const f of shardNames) shards.push(openSafetensors(path.join(dir, f), opts));
    shards.forEach((s, i) => {
      for (const n of s.names) {
        const prev = seenIn.get(n);
        if (prev !== undefined) fail('checkpoint.index-tensor-duplicate', `tensor ${JSON.stringify(n)} is stored in two shards: ${prev} and ${shardNames[i]}`);
        seenIn.set(n, shardNames[i]);
      }
    });
    for (const [n, f] of seenIn) {
      const want = listed.get(n);
      if (want !== f) fail('checkpoint.index-tensor-unlisted', `shard ${f} holds tensor ${JSON.stringify(n)}, which weight_map ${want === undefined ? 'does not list' : `assigns to ${want}`}`);
    }
    for (const [n, f] of listed) {
      if (seenIn.get(n) !== f) fail('checkpoint.index-tensor-missing', `weight_map assigns tensor ${JSON.stringify(n)} to ${f}, which does not hold it`);
    }
  } catch (e) {
    for (const s of shards) s.close();
    throw e;
  }
  return new ShardedStore(dir, shards);
}
