/**
 * Loading RAM contents into a compiled model (src/load/): the state written directly
 * (`applyRamContents`, state files) must be bit-identical to the state a prompt of write tokens
 * leaves through the chunked GDN kernel — every value head of every GDN layer compared as
 * Uint32 bit patterns, in the f32 and bf16 profiles — and decode reads afterwards must match the
 * IR interpreter preloaded with the same contents (`setRamRow`). Circuits: the regfile example
 * (tiny target; its expected state is also derived by hand here), and a wider RAM written in this
 * file (2 fields / 9 bits = 2 value heads, 20 rows = 2 row blocks of 16, 2 read ports) on a tiny
 * shape with 4 key heads and on dk = dv = 128, where the hot value T = 181.01934814453125 differs
 * from its bf16 rounding 181. Also: state file round trip, every truncation and random byte flips
 * refused, capture of written states, refusal of invalid layouts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { defineCircuit } from '../src/dsl/index.ts';
import { buildCircuit, loadCircuitFile } from '../src/dsl/load.ts';
import { compileCircuit, type CompileResult, type RamPlacement } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import type { ModelConfig } from '../src/model/config.ts';
import { Executor, argmax } from '../src/exec/executor.ts';
import type { NumericProfile } from '../src/exec/types.ts';
import { Interpreter } from '../src/ir/interpret.ts';
import { ChipcError } from '../src/util/errors.ts';
import { applyRamContents, captureRamContents, ramStateConfig, ramStateRows } from '../src/load/ram-state.ts';
import {
  applyStateFile, captureStateFile, decodeStateFile, encodeStateFile, loadStateFile, saveStateFile, stateFileOf,
  writeStateFile,
} from '../src/load/state-file.ts';

const tiny = resolveTarget('tiny').config;
const PROFILES: NumericProfile[] = ['f32', 'bf16'];

// ---- circuits ----------------------------------------------------------------------------------

interface Case {
  res: CompileResult;
  ram: RamPlacement;
  rows: number;
  fieldHi: number[];
  bos: number;
  writeToken: (row: number, values: number[]) => number;
  /** Read tokens that read every row (on every port). */
  readTokens: number[];
}

let regfileCase: Case | null = null;
async function regfile(): Promise<Case> {
  if (!regfileCase) {
    const res = compileCircuit(await loadCircuitFile('circuits/examples/regfile.ts'), tiny);
    regfileCase = {
      res, ram: res.rams[0]!, rows: 8, fieldHi: [15], bos: 136,
      writeToken: (r, [v]) => 16 * r + v!,
      readTokens: Array.from({ length: 8 }, (_, r) => 128 + r),
    };
  }
  return regfileCase;
}

/**
 * 20 rows × (a ∈ [0, 7], b ∈ [0, 63]) = a 9-bit word, 2 read ports. Token 512·row + 64·a + b
 * (< 10240) writes; token 10240 + 20·r0 + r1 reads row r0 on port 0 and r1 on port 1 (a write
 * token reads its own row on both); every position emits 64·a(port 0) + b(port 1).
 */
const W_ROWS = 20;
const W_WRITES = W_ROWS * 512;
const W_BOS = W_WRITES + W_ROWS * W_ROWS;
const wideDef = defineCircuit({ name: 'wideram', vocab: W_BOS + 1, bos: W_BOS }, (c) => {
  const isWrite = c.tokenField('isWrite', (t) => (t < W_WRITES ? 1 : 0), [0, 1]);
  const r0 = c.tokenField('r0', (t) => (t < W_WRITES ? t >> 9 : t < W_BOS ? Math.floor((t - W_WRITES) / W_ROWS) : 0), [0, W_ROWS - 1]);
  const r1 = c.tokenField('r1', (t) => (t < W_WRITES ? t >> 9 : t < W_BOS ? (t - W_WRITES) % W_ROWS : 0), [0, W_ROWS - 1]);
  const a = c.tokenField('a', (t) => (t < W_WRITES ? (t >> 6) & 7 : 0), [0, 7]);
  const b = c.tokenField('b', (t) => (t < W_WRITES ? t & 63 : 0), [0, 63]);
  const mem = c.ram('mem', { rows: W_ROWS, fields: [8, 64] });
  mem.write(r0, [a, b], isWrite);
  const [a0] = mem.read(r0);
  const [, b1] = mem.read(r1);
  c.emit([a0!, b1!], (x, y) => 64 * x + y);
});
const wideCases = new Map<string, Case>();
function wide(shape: 'tiny4' | 'dk128'): Case {
  let k = wideCases.get(shape);
  if (!k) {
    const over: Partial<ModelConfig> = shape === 'tiny4'
      ? { linearNumKeyHeads: 4, linearNumValueHeads: 8 }
      : { linearKeyHeadDim: 128, linearValueHeadDim: 128 };
    const target: ModelConfig = { ...tiny, vocabSize: 10752, ...over };
    const res = compileCircuit(buildCircuit(wideDef), target);
    k = {
      res, ram: res.rams[0]!, rows: W_ROWS, fieldHi: [7, 63], bos: W_BOS,
      writeToken: (r, [x, y]) => 512 * r + 64 * x! + y!,
      // Port 0 reads row r, port 1 row (r + 7) mod 20: both ports cover every row.
      readTokens: Array.from({ length: W_ROWS }, (_, r) => W_WRITES + W_ROWS * r + ((r + 7) % W_ROWS)),
    };
    wideCases.set(shape, k);
  }
  return k;
}

// ---- helpers -----------------------------------------------------------------------------------

/** Every value head's recurrent state of every GDN layer (copies). */
function allStates(ex: Executor): Float32Array[] {
  const out: Float32Array[] = [];
  ex.config.layerTypes.forEach((t, l) => {
    if (t !== 'linear_attention') return;
    for (let h = 0; h < ex.config.linearNumValueHeads; h++) out.push(ex.gdnState(l, h).slice());
  });
  return out;
}

/** Number of float32 entries whose bit patterns differ (a length mismatch counts as all). */
function bitDiff(a: Float32Array[], b: Float32Array[]): number {
  if (a.length !== b.length) return Infinity;
  let n = 0;
  a.forEach((x, k) => {
    const y = b[k]!;
    if (x.length !== y.length) { n += Math.max(x.length, y.length); return; }
    const ux = new Uint32Array(x.buffer, x.byteOffset, x.length);
    const uy = new Uint32Array(y.buffer, y.byteOffset, y.length);
    for (let i = 0; i < ux.length; i++) if (ux[i] !== uy[i]) n++;
  });
  return n;
}

/** Random write sequences (overwrites included) for a case; `contents` = last write per row wins. */
function writesArb(k: Case, maxLen: number) {
  return fc.array(fc.tuple(fc.integer({ min: 0, max: k.rows - 1 }), fc.tuple(...k.fieldHi.map((hi) => fc.integer({ min: 0, max: hi })))),
    { minLength: 0, maxLength: maxLen });
}
function contentsOf(writes: [number, number[]][]): Map<number, number[]> {
  const m = new Map<number, number[]>();
  for (const [r, v] of writes) m.set(r, v);
  return m;
}

/** The RAM contents as an independent model reads them: field values, or 0 for an unwritten row. */
function expectRead(k: Case, m: Map<number, number[]>, row: number, f: number): number {
  return m.get(row)?.[f] ?? 0;
}

/** Emitted token expected for a read token, from the contents (independent of the interpreter). */
function expectedEmit(k: Case, m: Map<number, number[]>, tok: number): number {
  if (k.bos === 136) return expectRead(k, m, tok - 128, 0);
  const r0 = Math.floor((tok - W_WRITES) / W_ROWS);
  const r1 = (tok - W_WRITES) % W_ROWS;
  return 64 * expectRead(k, m, r0, 0) + expectRead(k, m, r1, 1);
}

/**
 * Loads `writes` by a prompt ([bos, writes…], one prefill: chunked kernel) and `contents` by
 * applyRamContents on a fresh executor (then a [bos] prefill), compares the GDN states bit for
 * bit, then decodes every read token on both and compares the emitted tokens with an interpreter
 * preloaded by setRamRow and with the independent expectation.
 */
function promptVersusDirect(k: Case, writes: [number, number[]][], profile: NumericProfile): void {
  const contents = contentsOf(writes);
  const prompt = [k.bos, ...writes.map(([r, v]) => k.writeToken(r, v))];
  const viaPrompt = new Executor(k.res.weights, { profile });
  viaPrompt.prefill(prompt);
  const direct = new Executor(k.res.weights, { profile });
  applyRamContents(direct, k.res, k.ram, contents);
  expect(bitDiff(allStates(viaPrompt), allStates(direct))).toBe(0);
  // The prompt-written state decodes back to the contents.
  expect(captureRamContents(viaPrompt, k.res, k.ram)).toEqual(contents);
  direct.prefill([k.bos]);
  expect(bitDiff(allStates(viaPrompt), allStates(direct))).toBe(0);

  const interp = new Interpreter(k.res.ir);
  for (const [r, v] of contents) interp.setRamRow(k.ram.ram, r, v);
  interp.step(k.bos);
  for (const tok of k.readTokens) {
    const want = interp.step(tok).emitted;
    expect(want).toBe(expectedEmit(k, contents, tok));
    expect(argmax(viaPrompt.decode(tok))).toBe(want);
    expect(argmax(direct.decode(tok))).toBe(want);
  }
}

// ---- the tests ---------------------------------------------------------------------------------

describe('RAM state rows', () => {
  it('regfile: the state rows equal the layout derived by hand (T = 64 = 16·√16, 2 digits + 2 padding digits)', async () => {
    const k = await regfile();
    const contents = new Map([[0, [0]], [3, [9]], [7, [15]]]);
    for (const profile of PROFILES) {
      const rows = ramStateRows(k.ram, contents, ramStateConfig(k.res, k.ram, profile));
      const kh = k.ram.keyHeads[0]!;
      expect(rows.heads.map((h) => h.valueHead)).toEqual([2 * kh, 2 * kh + 1]);
      const want = new Float32Array(16 * 16);
      for (const [r, [v]] of contents) {
        // value v: digits v mod 4, ⌊v/4⌋, then two padding groups holding digit 0.
        const d = [v! & 3, v! >> 2, 0, 0];
        d.forEach((x, g) => { want[r * 16 + 4 * g + x] = 64; });
      }
      expect(bitDiff([rows.heads[0]!.state, rows.heads[1]!.state], [want, new Float32Array(256)])).toBe(0);
    }
  });

  it('regfile: the state holds T = 64 after a real write (both profiles)', async () => {
    const k = await regfile();
    for (const profile of PROFILES) {
      const ex = new Executor(k.res.weights, { profile });
      ex.prefill([136, k.writeToken(5, [6])]);
      const S = ex.gdnState(k.ram.layer, 2 * k.ram.keyHeads[0]!);
      // 6 = digits (2, 1): columns 2 and 4 + 1, then digit 0 of groups 2, 3: columns 8, 12.
      expect([...S.subarray(5 * 16, 6 * 16)]).toEqual([0, 0, 64, 0, 0, 64, 0, 0, 64, 0, 0, 0, 64, 0, 0, 0]);
    }
  });

  it('dk = 128: a real write stores T = 181.01934814453125 in f32 and bf16(T) = 181 in bf16', () => {
    const k = wide('dk128');
    for (const [profile, hot] of [['f32', 181.01934814453125], ['bf16', 181]] as const) {
      const ex = new Executor(k.res.weights, { profile });
      ex.prefill([k.bos, k.writeToken(4, [0, 0])]);
      const S = ex.gdnState(k.ram.layer, k.ram.keyHeads[0]! * 2);
      const nz = [...S].filter((x) => x !== 0);
      expect(nz.length).toBe(32); // one hot entry per digit group, G = 128/4
      expect(new Set(nz)).toEqual(new Set([hot]));
      expect(S[4 * 128]).toBe(hot); // word 0: digit 0 in every group
      const rows = ramStateRows(k.ram, new Map([[4, [0, 0]]]), ramStateConfig(k.res, k.ram, profile));
      expect(rows.heads.find((h) => h.valueHead === k.ram.keyHeads[0]! * 2)!.state[4 * 128]).toBe(hot);
    }
  });

  it('the wide RAM spans 2 row blocks × 2 ports and 2 value heads on the tiny shape', () => {
    const k = wide('tiny4');
    const lay = k.ram.lowering.layout;
    expect([lay.rowBlocks, lay.rowsPerKeyHead, lay.valueHeadsPerWord, lay.wordParts, lay.wordBits]).toEqual([2, 16, 2, 1, 9]);
    expect(k.ram.lowering.roles).toEqual([
      { port: 0, block: 0, part: 0 }, { port: 0, block: 1, part: 0 }, { port: 1, block: 0, part: 0 }, { port: 1, block: 1, part: 0 },
    ]);
  });

  it('refuses contents that do not fit the RAM', async () => {
    const k = await regfile();
    const ex = new Executor(k.res.weights);
    for (const bad of [new Map([[8, [1]]]), new Map([[-1, [1]]]), new Map([[0, [16]]]), new Map([[0, [1, 2]]]), new Map([[0, [1.5]]])]) {
      expect(() => applyRamContents(ex, k.res, k.ram, bad)).toThrow(ChipcError);
    }
    const interp = new Interpreter(k.res.ir);
    expect(() => interp.setRamRow(0, 8, [1])).toThrow(ChipcError);
    expect(() => interp.setRamRow(0, 0, [16])).toThrow(ChipcError);
    expect(() => interp.setRamRow(1, 0, [1])).toThrow(ChipcError);
  });
});

describe('prompt of write tokens = direct state, bit for bit, then exact decode reads', () => {
  it.each(PROFILES)('regfile, random contents, %s', async (profile) => {
    const k = await regfile();
    fc.assert(fc.property(writesArb(k, 24), (w) => promptVersusDirect(k, w, profile)), { numRuns: 8, seed: 7 });
  });

  it.each(PROFILES)('wide RAM (2 blocks, 2 ports, 2 value heads), random contents, %s', (profile) => {
    const k = wide('tiny4');
    fc.assert(fc.property(writesArb(k, 30), (w) => promptVersusDirect(k, w, profile)), { numRuns: 4, seed: 8 });
  });

  it('wide RAM, a 70-token prompt (two chunks) filling every row', () => {
    const k = wide('tiny4');
    const writes: [number, number[]][] = Array.from({ length: 70 }, (_, i) => [(i * 7) % W_ROWS, [(i * 5) % 8, (i * 37) % 64]]);
    promptVersusDirect(k, writes, 'bf16');
  });

  it.each(PROFILES)('dk = dv = 128 (T ≠ bf16(T)), random contents, %s', (profile) => {
    const k = wide('dk128');
    fc.assert(fc.property(writesArb(k, 20), (w) => promptVersusDirect(k, w, profile)), { numRuns: 2, seed: 9 });
  });

  it('a direct state of the wrong profile differs from the prompt state (the test has teeth)', () => {
    const k = wide('dk128');
    const ex = new Executor(k.res.weights, { profile: 'bf16' });
    ex.prefill([k.bos, k.writeToken(3, [5, 17])]);
    const rows = ramStateRows(k.ram, new Map([[3, [5, 17]]]), ramStateConfig(k.res, k.ram, 'f32'));
    const direct = new Executor(k.res.weights, { profile: 'bf16' });
    for (const h of rows.heads) direct.gdnState(rows.layer, h.valueHead).set(h.state);
    expect(bitDiff(allStates(ex), allStates(direct))).toBeGreaterThan(0);
    expect(() => captureRamContents(direct, k.res, k.ram)).toThrow(ChipcError);
  });
});

const tmpDirs: string[] = [];
function tmpDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-state-'));
  tmpDirs.push(d);
  return d;
}
afterAll(() => { for (const d of tmpDirs) fs.rmSync(d, { recursive: true, force: true }); });

describe('state files', () => {
  it('round trip: save → load → apply gives the prompt state; capture gives the same file bytes', () => {
    const k = wide('tiny4');
    const dir = tmpDir();
    const file = path.join(dir, 'mem.chip-state');
    fc.assert(fc.property(writesArb(k, 25), fc.constantFrom(...PROFILES), (w, profile) => {
      const contents = contentsOf(w);
      saveStateFile(file, k.res, new Map([['mem', contents]]));
      expect(fs.readdirSync(dir)).toEqual(['mem.chip-state']); // no temporary left behind
      const loaded = loadStateFile(file);
      expect(loaded.circuit).toBe('wideram');
      expect(loaded.rams.map((r) => [r.name, r.rows, r.fields])).toEqual([['mem', W_ROWS, [7, 63]]]);
      expect(loaded.rams[0]!.contents).toEqual(new Map([...contents].sort((a, b) => a[0] - b[0])));
      const viaFile = new Executor(k.res.weights, { profile });
      applyStateFile(viaFile, k.res, loaded);
      const viaPrompt = new Executor(k.res.weights, { profile });
      viaPrompt.prefill([k.bos, ...w.map(([r, v]) => k.writeToken(r, v))]);
      expect(bitDiff(allStates(viaPrompt), allStates(viaFile))).toBe(0);
      const bytes = fs.readFileSync(file);
      expect(Buffer.from(encodeStateFile(captureStateFile(viaPrompt, k.res))).equals(bytes)).toBe(true);
    }), { numRuns: 6, seed: 10 });
  });

  it('the bytes follow the documented layout (hand-built file for regfile)', async () => {
    const k = await regfile();
    const bytes = encodeStateFile(stateFileOf(k.res, new Map([['regs', new Map([[5, [9]], [2, [0]]])]])));
    const u32 = (xs: number[]) => xs.flatMap((x) => [x & 255, (x >> 8) & 255, (x >> 16) & 255, x >>> 24]);
    const str = (s: string) => [...u32([s.length]), ...Buffer.from(s, 'utf8')];
    const body = [...str('regfile'), ...u32([1]), ...str('regs'), ...u32([8, 1, 15, 2, 2, 0, 5, 9])];
    const head = [...Buffer.from('CHIPSTAT'), ...u32([1, body.length]), ...body];
    const { createHash } = await import('node:crypto');
    const want = Buffer.concat([Buffer.from(head), createHash('sha256').update(Buffer.from(head)).digest()]);
    expect(Buffer.from(bytes).equals(want)).toBe(true);
    // An empty regfile: 48 bytes of header and checksum + body 11 (name) + 4 (count) + 8 (RAM name) + 16 (rows, F, hi, n).
    expect(encodeStateFile(stateFileOf(k.res, new Map())).length).toBe(48 + 11 + 4 + 8 + 16);
  });

  it('every truncation and random byte flips are refused with a ChipcError', async () => {
    const k = await regfile();
    const bytes = encodeStateFile(stateFileOf(k.res, new Map([['regs', new Map([[1, [3]], [4, [12]], [6, [15]]])]])));
    expect(decodeStateFile(bytes).rams[0]!.contents.size).toBe(3);
    const codes = new Set<string>();
    for (let n = 0; n < bytes.length; n++) {
      let err: unknown = null;
      try { decodeStateFile(bytes.subarray(0, n)); } catch (e) { err = e; }
      expect(err, `truncated to ${n} bytes`).toBeInstanceOf(ChipcError);
      codes.add((err as ChipcError).code);
    }
    expect([...codes]).toEqual(['state.truncated']);
    fc.assert(fc.property(fc.integer({ min: 0, max: bytes.length - 1 }), fc.integer({ min: 1, max: 255 }), (at, mask) => {
      const b = bytes.slice();
      b[at]! ^= mask;
      expect(() => decodeStateFile(b)).toThrow(ChipcError);
    }), { numRuns: 300, seed: 12 });
    // Appended bytes and a file for another circuit are refused too.
    expect(() => decodeStateFile(new Uint8Array([...bytes, 0]))).toThrow(/unexpected bytes/);
    const other = decodeStateFile(encodeStateFile({ ...decodeStateFile(bytes), circuit: 'other' }));
    expect(() => applyStateFile(new Executor(k.res.weights), k.res, other)).toThrow(/circuit "other"/);
    const reshaped = { ...decodeStateFile(bytes), rams: [{ name: 'regs', rows: 16, fields: [15], contents: new Map() }] };
    expect(() => applyStateFile(new Executor(k.res.weights), k.res, reshaped)).toThrow(/16 rows/);
    expect(() => stateFileOf(k.res, new Map([['nope', new Map()]]))).toThrow(/no RAM named "nope"/);
  });

  it('a missing file and an unwritable path are ChipcErrors; a missing directory is created', async () => {
    const k = await regfile();
    const dir = tmpDir();
    expect(() => loadStateFile(path.join(dir, 'none.chip-state'))).toThrow(ChipcError);
    // a missing directory is created (as for every output); a path below a file cannot be
    fs.writeFileSync(path.join(dir, 'a-file'), 'x');
    expect(() => saveStateFile(path.join(dir, 'a-file', 'x.chip-state'), k.res, new Map())).toThrow(ChipcError);
    expect(fs.readdirSync(dir)).toEqual(['a-file']);
    saveStateFile(path.join(dir, 'new-dir', 'x.chip-state'), k.res, new Map());
    expect(fs.readdirSync(path.join(dir, 'new-dir'))).toEqual(['x.chip-state']);
  });
});

describe('capture refuses states that are not a valid layout', () => {
  /** A fresh bf16 executor holding rows 2 → [3, 40] and 17 → [6, 1] (both blocks). */
  function loaded(): { k: Case; ex: Executor } {
    const k = wide('tiny4');
    const ex = new Executor(k.res.weights, { profile: 'bf16' });
    applyRamContents(ex, k.res, k.ram, new Map([[2, [3, 40]], [17, [6, 1]]]));
    expect(captureRamContents(ex, k.res, k.ram)).toEqual(new Map([[2, [3, 40]], [17, [6, 1]]]));
    return { k, ex };
  }
  const vh = (k: Case, head: number, j = 0) => k.ram.keyHeads[head]! * 2 + j;

  it.each([
    ['two hot entries in a digit group', (k: Case, ex: Executor) => { ex.gdnState(k.ram.layer, vh(k, 0))[2 * 16 + 0] = 64; }, /two hot entries|differs/],
    ['an entry that is neither +0 nor hot', (k: Case, ex: Executor) => { ex.gdnState(k.ram.layer, vh(k, 0))[9 * 16 + 5] = 1; }, /neither/],
    ['a −0 entry', (k: Case, ex: Executor) => { ex.gdnState(k.ram.layer, vh(k, 0))[9 * 16 + 5] = -0; }, /neither/],
    ['a partly written row', (k: Case, ex: Executor) => { ex.gdnState(k.ram.layer, vh(k, 0, 1)).fill(0, 2 * 16, 3 * 16); }, /digit groups are written|differs/],
    ['read-port copies that differ', (k: Case, ex: Executor) => {
      const S = ex.gdnState(k.ram.layer, vh(k, 2));
      S.fill(0, 2 * 16, 3 * 16);
      S[2 * 16 + 0] = 64; S[2 * 16 + 4] = 64; S[2 * 16 + 8] = 64; S[2 * 16 + 12] = 64;
    }, /differs/],
    ['a hot entry past the RAM rows (block 1, row 20)', (k: Case, ex: Executor) => { ex.gdnState(k.ram.layer, vh(k, 1))[4 * 16] = 64; }, /holds no RAM row/],
    ['a padding digit that is not 0', (k: Case, ex: Executor) => {
      const S = ex.gdnState(k.ram.layer, vh(k, 0, 1)); // groups 4..7 of row 2: group 5.. are padding
      S[2 * 16 + 4] = 0; S[2 * 16 + 5] = 64;
      const S2 = ex.gdnState(k.ram.layer, vh(k, 2, 1));
      S2[2 * 16 + 4] = 0; S2[2 * 16 + 5] = 64;
    }, /padding bit/],
  ])('%s', (_, mutate, msg) => {
    const { k, ex } = loaded();
    mutate(k, ex);
    expect(() => captureRamContents(ex, k.res, k.ram)).toThrow(msg);
    expect(() => captureRamContents(ex, k.res, k.ram)).toThrow(ChipcError);
  });
});

describe('chipc exec --state / --save-state', () => {
  it('saves the RAMs after a run and loads them into the next: the value written is read back', async () => {
    const { cli } = await import('./helpers/cli.ts');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-exec-state-'));
    try {
      const ck = path.join(dir, 'rf');
      expect((await cli('compile', 'circuits/examples/regfile.ts', '--target', 'tiny', '-o', ck, '--no-progress')).code).toBe(0);
      const state = path.join(dir, 'r.chip-state');
      // 16·3 + 7: write 7 to register 3; then save every RAM's rows.
      expect((await cli('exec', ck, '--tokens', '136,55', '--save-state', state, '--json')).code).toBe(0);
      const file = loadStateFile(state);
      expect(file.circuit).toBe('regfile');
      expect([...file.rams[0]!.contents]).toEqual([[3, [7]]]);
      // A fresh run reads register 3 (token 131): 7 from the loaded state, 0 without it.
      const read = async (...extra: string[]) => JSON.parse((await cli('exec', ck, '--tokens', '136,131', '--generate', '1', '--json', ...extra)).out).generated;
      expect(await read('--state', state)).toEqual([7]);
      expect(await read()).toEqual([0]);
      // The output is refused when it exists (without --overwrite) or is the input.
      expect((await cli('exec', ck, '--tokens', '136', '--save-state', state)).err).toMatch(/cli\.exists/);
      expect((await cli('exec', ck, '--tokens', '136', '--state', state, '--save-state', state, '--overwrite')).err).toMatch(/cli\.output-is-input/);
      // A state file of another circuit is refused before anything runs.
      const other = path.join(dir, 'other.chip-state');
      writeStateFile(other, { ...file, circuit: 'kv' });
      const bad = await cli('exec', ck, '--tokens', '136', '--state', other);
      expect(bad.code).toBe(2);
      expect(bad.err).toMatch(/state\.mismatch.*circuit "kv"/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
