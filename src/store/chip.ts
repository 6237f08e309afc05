/**
 * The store through the compiled weights: a store session on the RV32 chip running the store
 * service (fixtures/firmware/store.elf, firmware/lib/store.c, docs/store.md "Store firmware
 * service"). Every operation is a service call (src/chip/service.ts): its request is fed as write
 * tokens and the chip generates the service's run token by token until HALT(result code); the
 * answer is decoded from the generated tokens (the OUT bytes and the HALT code), never from the
 * emulator. Beside it the golden emulator runs the same call, and every generated token is
 * compared with the golden stream (a divergence is a ChipcError naming the operation and token).
 *
 * A store file is imported by writing its rows straight into the chip's data-RAM state (and into
 * the emulator's memory) — no tokens — and exported by reading the rows back out of that state.
 */
import fs from 'node:fs';
import path from 'node:path';
import { CODE_BASE } from '../../riscv/protocol.ts';
import { ChipService, type ServiceEngine, type ServiceWrite } from '../chip/service.ts';
import { programOf, readChipCheckpoint, type ChipProgram } from '../chip/run.ts';
import { chipIr, compileChip } from '../chip/build.ts';
import { loadChipModel, type ChipModel } from '../chip/loaded.ts';
import { cachedGenericChip } from '../chip/cached.ts';
import type { CompileResult } from '../compile.ts';
import type { ModelConfig } from '../model/config.ts';
import { groupDigits } from '../util/group-digits.ts';
import type { NumericProfile } from '../exec/types.ts';
import { ChipcError } from '../util/errors.ts';
import { decodeToken, formatToken } from '../../riscv/protocol.ts';
import { loadElf } from '../../riscv/elf.ts';
import { StoreModel, TABLE_NAMES, resolveStoreParams, type StoreOptions, type StoreParams } from './model.ts';
import { PACKAGE_ROOT } from '../util/package-root.ts';
import {
  FirmwareStore, SERVICE_AREA_SYMBOL, decodeAnswer, encodeInitRequest, encodeRequest, initValues, memoryWordsFromModel, rowsFromMemory, storeAreaWords,
  type FirmwareResult, type StoreRequest, type TableRows,
} from './firmware.ts';

/** The bundled store service image. */
export const STORE_ELF = path.join(PACKAGE_ROOT, 'fixtures', 'firmware', 'store.elf');

/**
 * Default parameters of a store on the chip (`chipc store init`): 512 files in a 128 KiB data RAM
 * (names ≤ 32 tokens, contents ≤ 1,024, 1,024 chunks of 16 tokens). The reference model's own
 * defaults (contents ≤ 4,096, 2,048 chunks) need more than the 128 KiB the chip addresses.
 */
export const CHIP_STORE_DEFAULTS = { maxFiles: 512, nameMax: 32, contentMax: 1024, chunkSize: 16, chunkPool: 1024, vocab: 248_320 } as const;

/**
 * The chunk pool `chipc store init` takes when none is given: two chunks per file, and at least
 * the chunks of one maximum-size file (1,024 at the defaults; the reference model's 4 per file
 * does not fit the chip's RAM at the default capacity), at most 2^24 − 1.
 */
export function chipChunkPool(o: { maxFiles: number; nameMax: number; contentMax: number; chunkSize: number }): number {
  return Math.min(2 ** 24 - 1, Math.max(2 * o.maxFiles, Math.ceil((o.nameMax + o.contentMax) / o.chunkSize)));
}

/**
 * A small store for tests and the benches' `--capacity small` (the CI store tests' capacity): 8
 * files, names ≤ 6, contents ≤ 40, 32 chunks of 4, ids < 300 (two bytes) — it fills up, so every
 * result code comes up within a few hundred operations. A 32 KiB data RAM, one bank.
 */
export const CHIP_STORE_SMALL = { maxFiles: 8, nameMax: 6, contentMax: 40, chunkSize: 4, chunkPool: 32, vocab: 300 } as const;

/** Data-RAM sizes a store session may use: 32 KiB steps up to the 128 KiB the loader addresses. */
export const STORE_MEM_SIZES = [32 * 1024, 64 * 1024, 96 * 1024, 128 * 1024];

/** Bytes from CODE_BASE to the service area in the bundled image. */
function areaOffset(elf: Uint8Array): number {
  const area = loadElf(elf, { base: CODE_BASE, size: STORE_MEM_SIZES.at(-1)! }).symbols.get(SERVICE_AREA_SYMBOL);
  if (area === undefined) throw new ChipcError('service.symbol', `the store image has no symbol "${SERVICE_AREA_SYMBOL}"`);
  return area - CODE_BASE;
}

/**
 * The smallest data RAM (a multiple of 32 KiB, at most 128 KiB) whose service area holds a store
 * with these parameters; ChipcError `store.mem` naming what it needs when none does.
 */
export function storeMemBytes(p: StoreParams, elf: Uint8Array = fs.readFileSync(STORE_ELF)): number {
  const need = storeAreaWords(p);
  const off = areaOffset(elf);
  for (const m of STORE_MEM_SIZES) if ((m - off) / 4 >= need) return m;
  throw new ChipcError('store.mem',
    `a store of ${p.maxFiles} files (N = ${p.nameMax}, M = ${p.contentMax}, C = ${p.chunkSize}, P = ${p.chunkPool}) needs ${need} words ` +
    `(${4 * need + off} bytes of data RAM with the service); the chip's data RAM is at most ${STORE_MEM_SIZES.at(-1)! / 1024} KiB — lower maxFiles (--max-files), contentMax (--content-max) or chunkPool (--chunk-pool)`);
}

/** A store's limits and its footprint on the chip (what `chipc store init` and the store circuit print). */
export function storeLimits(p: StoreParams, elf?: Uint8Array): Record<string, number> {
  return {
    maxFiles: p.maxFiles, dirSlots: p.dirSlots, nameMax: p.nameMax, contentMax: p.contentMax, chunkSize: p.chunkSize,
    chunkPool: p.chunkPool, tokenCapacity: p.chunkPool * p.chunkSize, vocab: p.vocab, areaWords: storeAreaWords(p),
    chipMemBytes: storeMemBytes(p, elf),
  };
}

/** The limits as three lines of text. */
export function storeLimitLines(p: StoreParams, elf?: Uint8Array): string[] {
  const l = storeLimits(p, elf);
  const n = (x: number | undefined) => groupDigits(x!);
  return [
    `files ≤ ${n(l.maxFiles)} (${n(l.dirSlots)} directory slots), names ≤ ${n(l.nameMax)} tokens, contents ≤ ${n(l.contentMax)} tokens`,
    `${n(l.chunkPool)} chunks of ${l.chunkSize} tokens (${n(l.tokenCapacity)} tokens of names + contents in all), token ids < ${n(l.vocab)}`,
    `on the chip: ${n(l.areaWords)} words of service area, a ${l.chipMemBytes! / 1024} KiB data RAM`,
  ];
}

export interface ChipStoreOptions {
  /** Target model shape (default chip-test). */
  target: ModelConfig;
  /**
   * weights (default: the compiled chip in the reference executor) or ir (the chip circuit in the
   * fast evaluator: without `compiled`, only the circuit is built — no weights are compiled).
   */
  engine?: ServiceEngine;
  profile?: NumericProfile;
  /** Data RAM bytes (default: storeMemBytes). */
  memBytes?: number;
  /**
   * A chip to reuse instead of compiling one: a CompileResult (compiled for this image and memory
   * size), or a chip loaded from a checkpoint with its program (ChipStore.load).
   */
  compiled?: ChipModel;
  /** The chip program `compiled` runs (default: the store image for `target` and `memBytes`). */
  program?: ChipProgram;
  /** Called with each generated token. */
  onToken?: (t: number) => void;
}

/** One operation through the chip: its decoded answer and what it cost. */
export interface ChipStoreCall<R = FirmwareResult> {
  result: R;
  /** Tokens fed (the request prompt) and generated (ending with HALT). */
  promptTokens: number;
  generatedTokens: number;
  instructions: number;
  seconds: number;
}

const compileCache = new Map<string, { prog: ChipProgram; res: CompileResult; memBytes: number }>();

/**
 * The code RAM a saved chip's manifest records, in bytes, when it is a valid size that holds the
 * image's code; undefined otherwise (no manifest, another shape: loadChipModel reports it).
 */
function chipCodeBytes(file: string, elf: Uint8Array): number | undefined {
  let words: unknown;
  try {
    words = readChipCheckpoint(file).manifest.rv32?.codeWords;
  } catch {
    return undefined;
  }
  if (typeof words !== 'number' || !Number.isInteger(Math.log2(words)) || words < 64 || words > 16384) return undefined;
  const need = programOf(elf, { memBytes: STORE_MEM_SIZES.at(-1)! }).codeBytes;
  return 4 * words >= need ? 4 * words : undefined;
}

/** Console bytes carried by OUT tokens. */
function outBytes(tokens: readonly number[]): Uint8Array {
  const b: number[] = [];
  for (const t of tokens) {
    const d = decodeToken(t);
    if (d.kind === 'OUT') b.push(d.b);
  }
  return Uint8Array.from(b);
}

/** The store image's program and the generic chip of its sizes from chipc's chip cache (compiled on a miss). */
async function cachedStoreChip(
  params: StoreParams, target: { name: string; config: ModelConfig }, opts: { onCompile?: () => void; log?: (line: string) => void },
): Promise<{ prog: ChipProgram; memBytes: number; c: Awaited<ReturnType<typeof cachedGenericChip>> }> {
  const elf = fs.readFileSync(STORE_ELF);
  const memBytes = storeMemBytes(params, elf);
  const prog = programOf(elf, memBytes, target.config);
  const c = await cachedGenericChip({ targetName: target.name, target: target.config, codeBytes: prog.codeBytes, memBytes }, opts);
  return { prog, memBytes, c };
}

/** A store on the chip, with the golden emulator beside it. */
export class ChipStore {
  readonly params: StoreParams;
  readonly golden: FirmwareStore;
  readonly chip: ChipService;
  readonly prog: ChipProgram;
  /** The chip it runs: null for the IR engine without a given chip (the circuit alone, no weights compiled). */
  readonly res: ChipModel | null;
  readonly memBytes: number;
  private readonly onToken: ((t: number) => void) | undefined;

  private constructor(params: StoreParams, golden: FirmwareStore, chip: ChipService, prog: ChipProgram, res: ChipModel | null, memBytes: number, onToken?: (t: number) => void) {
    this.params = params;
    this.golden = golden;
    this.chip = chip;
    this.prog = prog;
    this.res = res;
    this.memBytes = memBytes;
    this.onToken = onToken;
  }

  /**
   * The chip program and compile for a store of these parameters (reusable across sessions; the
   * chip depends only on the data-RAM size and the target, and the two most recent compiles are
   * kept in memory, so the commands of one process compile once).
   */
  static compile(params: StoreParams, target: ModelConfig, memBytes?: number): { prog: ChipProgram; res: CompileResult; memBytes: number } {
    const elf = fs.readFileSync(STORE_ELF);
    const mem = memBytes ?? storeMemBytes(params, elf);
    const key = `${mem}|${JSON.stringify(target)}|${elf.length}`;
    let hit = compileCache.get(key);
    if (hit === undefined) {
      const prog = programOf(elf, mem, target);
      hit = { prog, res: compileChip(prog.chip, target), memBytes: mem };
      if (compileCache.size >= 2) compileCache.delete(compileCache.keys().next().value!);
      compileCache.set(key, hit);
    }
    return hit;
  }

  /**
   * The store chip from chipc's chip cache, as `chipc run` takes the generic chip: the store chip
   * is the generic chip of the store image's code RAM and the store's data RAM, so it shares
   * `chipc run`'s cache key (target, config hash, the two sizes). On a miss it is compiled and
   * written into the cache (`onCompile` told first) and the CompileResult returned; on a hit the
   * cached `.chip` is opened. Pass `res` and `prog` to `open` (`compiled`, `program`).
   */
  static async cached(
    params: StoreParams, target: { name: string; config: ModelConfig }, opts: { onCompile?: () => void; log?: (line: string) => void } = {},
  ): Promise<{ prog: ChipProgram; res: ChipModel; memBytes: number; hit: boolean; path: string; compileSeconds: number }> {
    const { prog, memBytes, c } = await cachedStoreChip(params, target, opts);
    const res = c.compiled ?? loadChipModel(c.path, prog);
    return { prog, res, memBytes, hit: c.hit, path: c.path, compileSeconds: c.compileSeconds };
  }

  /**
   * The store chip's `.chip` in chipc's chip cache (compiled into it on a miss, as `cached`),
   * without loading its weights: what `chipc store chip` copies. `layers` comes from the compile
   * or from the cached chip's manifest.
   */
  static async cachedFile(
    params: StoreParams, target: { name: string; config: ModelConfig }, opts: { onCompile?: () => void; log?: (line: string) => void } = {},
  ): Promise<{ memBytes: number; layers: number; hit: boolean; path: string; compileSeconds: number }> {
    const { memBytes, c } = await cachedStoreChip(params, target, opts);
    const layers = c.compiled?.weights.config.numLayers ?? readChipCheckpoint(c.path).manifest.layerTypes?.length;
    if (layers === undefined) throw new ChipcError('run.model', `${c.path}: the cached chip's manifest records no layer types`);
    return { memBytes, layers, hit: c.hit, path: c.path, compileSeconds: c.compileSeconds };
  }

  /**
   * The store chip saved at `file` (`chipc store chip`: a checkpoint directory or `.chip` file)
   * instead of compiled, checked to fit a store of `params`: its data RAM must be the size the
   * store needs (ChipcError `store.model` otherwise) and it must run the store image
   * (loadChipModel's errors). Pass the result's chip and program to `open` (`compiled`, `program`).
   */
  static load(file: string, params: StoreParams): { prog: ChipProgram; res: ChipModel; memBytes: number } {
    const elf = fs.readFileSync(STORE_ELF);
    const memBytes = storeMemBytes(params, elf);
    try {
      // The program for the chip's code RAM (the golden emulator's fetch limit) when the manifest
      // records one that holds it; otherwise the smallest, and checkChipFits names the mismatch.
      const prog = programOf(elf, { memBytes, codeBytes: chipCodeBytes(file, elf) });
      return { prog, res: loadChipModel(file, prog), memBytes };
    } catch (e) {
      if (e instanceof ChipcError && (e.code === 'run.model' || e.code === 'run.mem' || e.code === 'run.code')) {
        throw new ChipcError('store.model', `${e.message} — this store needs the store chip with a ${memBytes / 1024} KiB data RAM: chipc store chip STORE_FILE -o ${file}`, { cause: e });
      }
      throw e;
    }
  }

  /**
   * A session holding `model`'s state (imported straight into the chip's data-RAM state: no
   * tokens), or a fresh store with parameters `opts` initialised by an init call through the chip.
   */
  static open(source: StoreModel | StoreOptions, opts: ChipStoreOptions): ChipStore {
    const params = source instanceof StoreModel ? source.params : resolveStoreParams(source);
    const elf = fs.readFileSync(STORE_ELF);
    const memBytes = opts.memBytes ?? storeMemBytes(params, elf);
    const engine = opts.engine ?? 'weights';
    // The IR engine runs the chip circuit: without a given chip nothing is compiled to weights.
    const { prog, res } = opts.compiled
      ? { prog: opts.program ?? programOf(elf, memBytes, opts.target), res: opts.compiled }
      : engine === 'ir'
        ? { prog: programOf(elf, memBytes, opts.target), res: null }
        : ChipStore.compile(params, opts.target, memBytes);
    // The emulator fetches only from the chip's code RAM, as the chip does.
    const golden = FirmwareStore.load(elf, memBytes, params, prog.codeBytes);
    const chip = new ChipService(res, prog, {
      engine, ...(res === null ? { ir: chipIr(prog.chip) } : {}), ...(opts.profile ? { profile: opts.profile } : {}),
    });
    const s = new ChipStore(params, golden, chip, prog, res, memBytes, opts.onToken);
    if (source instanceof StoreModel) {
      golden.importModel(source);
      chip.writeWords(memoryWordsFromModel(source, golden.base));
    } else {
      const r = s.run(encodeInitRequest(golden.base, initValues(params), golden.areaWords), 'init');
      if (r.exitCode !== 0) throw new ChipcError('store.bad-request', `the store service refused init (exit code ${r.exitCode})`);
    }
    return s;
  }

  /** One call through the chip beside the emulator; the chip's generated tokens. */
  private run(writes: readonly ServiceWrite[], what: string): { exitCode: number; generated: number[]; prompt: number[]; instructions: number; seconds: number } {
    const call = this.golden.emu.call(writes, { trace: true });
    const r = this.chip.call(call.prompt, { golden: call.trace!.tokens, ...(this.onToken ? { onToken: this.onToken } : {}) });
    if (r.divergence !== null) {
      throw new ChipcError('store.divergence',
        `${what}: the chip's token ${r.divergence.index} of the call (${r.divergence.got}) differs from the golden stream's (${r.divergence.expected})`);
    }
    if (r.exitCode === null) throw new ChipcError('store.halt', `${what}: the chip did not halt (last token ${formatToken(r.generated.at(-1) ?? 0)})`);
    return { exitCode: r.exitCode, generated: r.generated, prompt: call.prompt, instructions: call.instructions, seconds: r.seconds };
  }

  private op<R extends FirmwareResult>(req: StoreRequest): ChipStoreCall<R> {
    const r = this.run(encodeRequest(req, this.golden.base, this.params), req.op);
    const result = decodeAnswer(req.op, r.exitCode, outBytes(r.generated)) as R;
    return { result, promptTokens: r.prompt.length, generatedTokens: r.generated.length, instructions: r.instructions, seconds: r.seconds };
  }

  put(name: readonly number[], content: readonly number[]) { return this.op<Extract<FirmwareResult, { op: 'put' }>>({ op: 'put', name, content }); }
  get(name: readonly number[]) { return this.op<Extract<FirmwareResult, { op: 'get' }>>({ op: 'get', name }); }
  delete(name: readonly number[]) { return this.op<Extract<FirmwareResult, { op: 'delete' }>>({ op: 'delete', name }); }
  list() { return this.op<Extract<FirmwareResult, { op: 'list' }>>({ op: 'list' }); }
  /** Any request (a workload's). */
  apply(q: StoreRequest): ChipStoreCall {
    return q.op === 'put' ? this.put(q.name, q.content) : q.op === 'get' ? this.get(q.name) : q.op === 'delete' ? this.delete(q.name) : this.list();
  }

  /** The store's rows as the chip's data-RAM state holds them. */
  rows(): TableRows {
    return rowsFromMemory(this.chip.memoryReader(), this.golden.base, this.params);
  }

  /**
   * The store read back out of the chip's state as a model (for a store file). ChipcError
   * `store.divergence` if the chip's rows differ from the emulator's (they never should: every
   * token was checked), `store.corrupt` if they break the store's invariants.
   */
  exportModel(): StoreModel {
    const rows = this.rows();
    const want = this.golden.rows();
    for (const t of TABLE_NAMES) {
      if (JSON.stringify(rows[t]) !== JSON.stringify(want[t])) throw new ChipcError('store.divergence', `the chip's ${t} rows differ from the golden emulator's`);
    }
    const m = new StoreModel(this.params);
    for (const t of TABLE_NAMES) for (const [i, f] of rows[t]) m.setRow(t, i, f);
    m.checkInvariants();
    return m;
  }
}
