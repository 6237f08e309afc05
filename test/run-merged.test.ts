/**
 * `chipc run --model`: running a saved RV32 chip checkpoint — alone, or merged into a host model
 * with its token ids offset — by its loader prompt and plain greedy decoding (src/chip/run.ts
 * runOnModel, readChipCheckpoint, checkChipFits; docs/merge.md "Running").
 * - The compiled chip for a small program, run through runOnModel with offset 0, follows the golden
 *   trace to the program's exit code, token for token the same as runOnChip's prompt loading.
 * - The same weights with `off` zero rows put in front of the embedding and LM head (the merged
 *   model's vocabulary layout: on chip tokens every host logit is exactly 0, docs/merge.md) run
 *   with idOffset off and give the same chip tokens; a host row that outscores the chip's winner
 *   is reported as "the host's token won".
 * - Refusals (ChipcError, exit 2) read only config.json and the manifests: no manifest, another
 *   circuit, no recorded RAM shape, a per-program chip of an older chipc (not generic), another
 *   data RAM size, a code RAM smaller than the program needs (run.code), other RAM banks, a
 *   vocabulary too small for the offset, disagreeing merge records; --load state on a manifest
 *   without RAM layouts or on a merged checkpoint. The generic chip takes programs of other code
 *   ends and tohost addresses (they arrive as configuration words of the loader prompt).
 * - `--load state` on a saved `.chip` (its manifest records the RAM layouts): the rows written
 *   straight into the state, the same tokens as the compiled chip's state run.
 * The full dense path (emit → merge → run) is not exercised here: the RV32 chip at hidden 845 is
 * ~2 GB dense and ~8 GB merged (hidden 4·845), beyond a unit test (docs/merge.md "Running").
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompileResult } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import type { Matrix, ModelWeights } from '../src/model/weights.ts';
import { checkChipFits, programOf, readChipCheckpoint, runOnChip, runOnModel, type ChipProgram } from '../src/chip/run.ts';
import { MEM_LAYOUT } from '../riscv/chip-shape.ts';
import { compileChip, emitChip } from '../src/chip/build.ts';
import { loadChipModel } from '../src/chip/loaded.ts';
import { VOCAB } from '../src/cpu/cpu.ts';
import { assembleElf } from '../riscv/asm.ts';
import { goldenTokens } from '../riscv/golden-trace.ts';
import { PROTOCOL_VERSION, decodeToken } from '../riscv/protocol.ts';
import { MANIFEST_FILE } from '../src/emit/manifest.ts';
import { MERGE_INFO_FILE } from '../src/merge/merge.ts';
import { ChipcError } from '../src/util/errors.ts';
import { cli } from './helpers/cli.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-run-merged-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

// A store and loads through memory, the console, and an exit code the golden emulator computes.
const PROG = `
  li t0, 0x1234
  sw t0, -8(sp)
  lw t1, -8(sp)
  li t2, 0x10000000
  li t3, 79
  sb t3, 0(t2)
  li t3, 107
  sb t3, 0(t2)
  srli a0, t1, 4
  andi a0, a0, 255
  li a7, 93
  ecall
`;
const MEM = 1024;
const elf = assembleElf(PROG).elf;
const elfPath = path.join(tmp, 'prog.elf');
fs.writeFileSync(elfPath, elf);

/** `m` with `off` zero rows in front (CSR only: the compiled chip's embedding and LM head are sparse). */
function shiftRows(m: Matrix, off: number): Matrix {
  if (m.csr === undefined) throw new Error('test: expected a CSR matrix');
  const rowPtr = new Uint32Array(m.rows + off + 1);
  rowPtr.set(m.csr.rowPtr, off);
  return { rows: m.rows + off, cols: m.cols, csr: { rowPtr, colIdx: m.csr.colIdx, values: m.csr.values } };
}

/** Row r of a CSR matrix as (column, value) pairs. */
function csrRow(m: Matrix, r: number): [number, number][] {
  const c = m.csr!;
  const out: [number, number][] = [];
  for (let k = c.rowPtr[r]!; k < c.rowPtr[r + 1]!; k++) out.push([c.colIdx[k]!, c.values[k]!]);
  return out;
}

/** The chip's weights with `off` host rows (all zero except `hostRows`) in front of its vocabulary. */
function shifted(w: ModelWeights, off: number, hostRows: Map<number, [number, number][]> = new Map()): ModelWeights {
  const head = shiftRows(w.lmHead, off);
  if (hostRows.size > 0) {
    // Rebuild the head's CSR with the given host rows filled in.
    const c = head.csr!;
    const cols: number[] = [];
    const vals: number[] = [];
    const rowPtr = new Uint32Array(head.rows + 1);
    for (let r = 0; r < head.rows; r++) {
      const row = r < off ? (hostRows.get(r) ?? []) : csrRow(w.lmHead, r - off);
      for (const [j, v] of row) { cols.push(j); vals.push(v); }
      rowPtr[r + 1] = cols.length;
    }
    head.csr = { rowPtr, colIdx: Uint32Array.from(cols), values: Float32Array.from(vals) };
    expect(c.rowPtr.length).toBe(rowPtr.length);
  }
  return {
    ...w,
    config: { ...w.config, vocabSize: w.config.vocabSize + off, tieWordEmbeddings: false },
    embedTokens: shiftRows(w.embedTokens, off),
    lmHead: head,
  };
}

describe('runOnModel: the compiled chip, alone and with its ids offset', () => {
  let res: CompileResult;
  const prog: ChipProgram = programOf(elf, MEM);
  // The emulator's fetch limit is the chip's code RAM (docs/token-protocol.md, v5 traps).
  const golden = goldenTokens(elf, { mem: { size: MEM }, codeBytes: prog.codeBytes });
  const tiny = resolveTarget('tiny').config;
  const target = {
    ...tiny, vocabSize: VOCAB, intermediateSize: 16_384,
    linearNumKeyHeads: 8, linearNumValueHeads: 16, linearKeyHeadDim: 64, linearValueHeadDim: 64,
  };
  beforeAll(() => {
    res = compileChip(prog.chip, target);
  }, 120_000);

  it('the program itself: console "Ok", exit code 0x1234 >> 4 & 255 by hand', () => {
    expect(Buffer.from(golden.console).toString('latin1')).toBe('Ok');
    expect(golden.halt.exitCode).toBe((0x1234 >> 4) & 255);
  });

  it('offset 0: 0 divergences, the exit code, the same tokens as runOnChip loading by prompt', () => {
    const opts = { maxTokens: golden.tokens.length + 5, golden: golden.tokens, goldenPc: golden.tokenPc };
    const r = runOnModel(res.weights, prog, opts);
    expect(r.divergence).toBeNull();
    expect(r.exitCode).toBe(golden.halt.exitCode);
    expect(r.tokens.slice(r.promptLength)).toEqual(Array.from(golden.tokens.slice(2)));
    const viaChip = runOnChip(res, prog, { ...opts, load: 'prompt' });
    expect(r.tokens).toEqual(viaChip.tokens);
  }, 60_000);

  it('offset 777 (zero host rows in front, as in a merged model): the same chip tokens, 0 divergences', () => {
    const off = 777;
    const outBytes: number[] = [];
    const r = runOnModel(shifted(res.weights, off), prog, {
      maxTokens: golden.tokens.length + 5, golden: golden.tokens, goldenPc: golden.tokenPc, idOffset: off,
      onToken: (t) => { const d = decodeToken(t); if (d.kind === 'OUT') outBytes.push(d.b); },
    });
    expect(r.divergence).toBeNull();
    expect(r.exitCode).toBe(golden.halt.exitCode);
    expect(r.tokens).toEqual([...prog.loader, ...Array.from(golden.tokens.slice(2))]);
    expect(Buffer.from(outBytes).toString('latin1')).toBe('Ok');
    // Without the offset the shifted model's argmax is a zero host row's id (every logit there is 0
    // or the chip's, shifted): the run cannot follow the trace.
    const wrong = runOnModel(shifted(res.weights, off), prog, { maxTokens: golden.tokens.length + 5, golden: golden.tokens });
    expect(wrong.divergence).not.toBeNull();
  }, 90_000);

  it('a saved .chip with --load state: its RAM layouts from the manifest, the same tokens as the compiled chip', async () => {
    const chipPath = path.join(tmp, 'state.chip');
    emitChip(chipPath, res, prog.chip, 'tiny-rv32', { dtype: 'BF16' });
    const loadedProg = programOf(elf, MEM);
    const loaded = loadChipModel(chipPath, loadedProg);
    expect(loaded.rams.map((r) => [r.name, r.layer, r.keyHeads])).toEqual(res.rams.map((r) => [r.name, r.layer, r.keyHeads]));
    const opts = { maxTokens: golden.tokens.length + 5, golden: golden.tokens, goldenPc: golden.tokenPc, load: 'state' as const };
    const fromFile = runOnChip(loaded, loadedProg, opts);
    expect(fromFile.divergence).toBeNull();
    expect(fromFile.tokens).toEqual(runOnChip(res, prog, opts).tokens);
    const r = await cli('run', elfPath, '--model', chipPath, '--load', 'state', '--check', '--json');
    expect(r.code).toBe(golden.halt.exitCode); // chipc run exits with the program's exit code
    expect(JSON.parse(r.out)).toMatchObject({ load: 'state', divergence: null, exitCode: golden.halt.exitCode });
  }, 120_000);

  it('a host row that outscores the chip\'s winner: the run stops with "the host\'s token won"', () => {
    const off = 300;
    // Host id 5 gets twice the LM-head row of the first generated token: where the chip emits that
    // token (its logit > 0, docs/merge.md), host id 5 scores twice as much and wins.
    const firstGen = golden.tokens[2]!;
    const row = csrRow(res.weights.lmHead, firstGen).map(([j, v]) => [j, 2 * v] as [number, number]);
    const r = runOnModel(shifted(res.weights, off, new Map([[5, row]])), prog, {
      maxTokens: golden.tokens.length + 5, golden: golden.tokens, idOffset: off,
    });
    expect(r.divergence).not.toBeNull();
    expect(r.divergence!.position).toBe(prog.loader.length);
    expect(r.divergence!.got).toBe('host token id 5 (the host\'s token won)');
    expect(r.halted).toBe(false);
  }, 60_000);
});

describe('chipc run --model: refusals before any tensor is loaded', () => {
  const prog = programOf(elf, MEM);
  const good = { codeWords: prog.chip.codeWords, memWords: MEM / 4, memBankWords: prog.chip.memBankWords, memLayout: MEM_LAYOUT, generic: true, protocol: PROTOCOL_VERSION };
  let n = 0;
  /** A checkpoint directory with only config.json and the given manifest / merge records (enough for the checks). */
  function fakeCkpt(opts: { vocab?: number; manifest?: unknown; mergeOffset?: number; configOffset?: number }): string {
    const dir = path.join(tmp, `ckpt-${n++}`);
    fs.mkdirSync(dir);
    const cfg: Record<string, unknown> = { model_type: 'qwen3_5_text', vocab_size: opts.vocab ?? 248_320 };
    if (opts.configOffset !== undefined) cfg['chipc_merge'] = { vocab: { chipIdOffset: opts.configOffset } };
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(cfg));
    if (opts.manifest !== undefined) fs.writeFileSync(path.join(dir, MANIFEST_FILE), JSON.stringify(opts.manifest));
    if (opts.mergeOffset !== undefined) fs.writeFileSync(path.join(dir, MERGE_INFO_FILE), JSON.stringify({ vocab: { chipIdOffset: opts.mergeOffset } }));
    return dir;
  }
  const manifest = (rv32: unknown, extra: Record<string, unknown> = {}) => ({ circuit: 'rv32-v1', vocab: { circuit: VOCAB, bos: 0 }, ...(rv32 === undefined ? {} : { rv32 }), ...extra });
  const refuse = (dir: string, code: string, re: RegExp) => {
    let err: unknown;
    try { checkChipFits(readChipCheckpoint(dir), prog); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(ChipcError);
    expect((err as ChipcError).code).toBe(code);
    expect((err as ChipcError).message).toMatch(re);
  };

  it('a matching chip passes; merged records give the offset', () => {
    checkChipFits(readChipCheckpoint(fakeCkpt({ manifest: manifest(good) })), prog);
    const ck = readChipCheckpoint(fakeCkpt({ vocab: 512 + 248_320, manifest: manifest(good), mergeOffset: 512, configOffset: 512 }));
    expect([ck.merged, ck.idOffset]).toEqual([true, 512]);
    checkChipFits(ck, prog);
    // A larger code RAM is accepted (the loader fills the rows it has; fetch never reaches past the program).
    checkChipFits(readChipCheckpoint(fakeCkpt({ manifest: manifest({ ...good, codeWords: 2 * good.codeWords }) })), prog);
  });

  it('one generic chip runs programs of other code ends and tohost addresses (configuration words, not built in)', () => {
    // A longer program with a tohost word: its code end and tohost differ from PROG's, its data RAM is the same.
    const asm = assembleElf(`
      _start:
        la t0, tohost
        li t1, 1
        sw t1, 0(t0)
        j _start
        ${'nop\n'.repeat(40)}
      tohost:
    `, { bss: 4 });
    const other = asm.elf;
    const tohost = asm.program.labels.get('tohost')!;
    const chip = { ...good, codeWords: 1024 / 4 }; // a 1 KiB code RAM holds both programs' code
    const a = programOf(elf, { memBytes: MEM, codeBytes: 1024 });
    const b = programOf(other, { memBytes: MEM, codeBytes: 1024 });
    expect(a.config.tohost).toBeNull();
    expect(b.config.tohost).toBe(tohost);
    expect(b.config.codeEnd).not.toBe(a.config.codeEnd);
    expect(a.chip).toEqual(b.chip); // the same chip shape
    const ck = readChipCheckpoint(fakeCkpt({ manifest: manifest(chip) }));
    checkChipFits(ck, a);
    checkChipFits(ck, b);
    // The code end and tohost travel in the loader prompt at addresses 0x8020 and 0x8021 — OUT(0, 0x20)
    // and OUT(0, 0x21) (protocol v8) —, each then D(lo), H(hi).
    const cfg = (q: ChipProgram, p: number) => {
      const i = q.loader.findIndex((t) => { const d = decodeToken(t); return d.kind === 'OUT' && d.j === 0 && d.b === p - 0x8000; });
      expect(i).toBeGreaterThan(0);
      const lo = decodeToken(q.loader[i + 1]!);
      const hi = decodeToken(q.loader[i + 2]!);
      if (lo.kind !== 'D' || hi.kind !== 'H') throw new Error('expected D, H after the address');
      return (lo.v | (hi.v << 16)) >>> 0;
    };
    expect(cfg(b, 0x8021)).toBe((tohost | 1) >>> 0);
    expect(cfg(a, 0x8021)).toBe(0);
    expect(cfg(b, 0x8020)).toBe(b.config.codeEnd);
  });

  it.each([
    ['no manifest', { manifest: undefined }, 'run.model', /no chipc-manifest\.json.*--emit/],
    ['another circuit', { manifest: { ...manifest(good), circuit: 'counter' } }, 'run.model', /circuit "counter", not the RV32 chip/],
    ['another alphabet', { manifest: { ...manifest(good), vocab: { circuit: 512, bos: 0 } } }, 'run.model', /alphabet has 512 tokens/],
    ['the v4 alphabet (a chip of an older chipc)', { manifest: { ...manifest(good), vocab: { circuit: 248_197, bos: 0 } } }, 'run.model', /alphabet has 248197 tokens; the RV32 chip \(protocol v9\) has 248205/],
    ['no recorded RAM shape (chipc compile src/cpu/cpu.ts)', { manifest: manifest(undefined) }, 'run.model', /does not record its RAM shape.*chipc cpu/],
    ['a chip of token protocol v5 (no protocol recorded)', { manifest: manifest({ ...good, protocol: undefined }) }, 'run.model', /speaks token protocol v5 or older \(its manifest records none\), this chipc v9.*chipc cpu/],
    ['a chip of another token protocol', { manifest: manifest({ ...good, protocol: 'v6' }) }, 'run.model', /speaks token protocol v6, this chipc v9/],
    ['a chip of protocol v7 (its loader reads addresses from E tokens only)', { manifest: manifest({ ...good, protocol: 'v7' }) }, 'run.model', /speaks token protocol v7, this chipc v9/],
    ['a chip of protocol v8 (its divisions start past the dividend\'s leading zero nibbles only)', { manifest: manifest({ ...good, protocol: 'v8' }) }, 'run.model', /speaks token protocol v8, this chipc v9/],
    ['a per-program chip of an older chipc', { manifest: manifest({ codeWords: good.codeWords, codeEnd: 20, memWords: MEM / 4, tohost: null }) }, 'run.model', /compiled for one program by an older chipc/],
    ['another data RAM size', { manifest: manifest({ ...good, memWords: 2048 }) }, 'run.mem', /data RAM is 8 KiB, the run asks for 1 KiB/],
    ['a code RAM smaller than the program\'s code', { manifest: manifest({ ...good, codeWords: 8 }) }, 'run.code', /code RAM is 32 bytes; the program's code ends at \d+ bytes: make a chip with `chipc cpu --code-size 256`/],
    ['other RAM banks', { manifest: manifest({ ...good, memBankWords: good.memBankWords / 2 }) }, 'run.model', /RAM banks hold \d+ rows/],
    ['a vocabulary too small for the offset', { vocab: 248_320, manifest: manifest(good), mergeOffset: 512, configOffset: 512 }, 'run.model', /vocab_size 248320 cannot hold the chip's 248205 ids from id 512/],
    ['disagreeing merge records', { vocab: 300_000, manifest: manifest(good), mergeOffset: 512, configOffset: 256 }, 'run.model', /chip ids start at 512, config\.json chipc_merge says 256/],
  ] as const)('%s', (_label, opts, code, re) => {
    refuse(fakeCkpt(opts as Parameters<typeof fakeCkpt>[0]), code, re);
  });

  it('a chip whose data RAM is not interleaved (no memLayout recorded: an older chipc) is refused', () => {
    const { memLayout: _, ...older } = good;
    for (const rv32 of [older, { ...good, memLayout: 'banks' }]) {
      let err: unknown;
      try { checkChipFits(readChipCheckpoint(fakeCkpt({ manifest: manifest(rv32) })), prog); } catch (e) { err = e; }
      expect((err as ChipcError).code).toBe('run.model');
      expect((err as ChipcError).message).toMatch(/keeps its data RAM in banks of consecutive words \(an older chipc\), this chipc interleaves it over four banks; make one with `chipc cpu -o OUT`/);
    }
  });

  it('through the CLI: exit 2 with the message; --mem-size defaults to the chip\'s; --load state without layouts or merged refused', async () => {
    const dir = fakeCkpt({ manifest: manifest({ ...good, memWords: 2048 }) });
    // Without --mem-size the chip's 8 KiB is used: the program fits, and the next check (code RAM) speaks.
    let r = await cli('run', elfPath, '--model', dir, '--code-size', String(4 * good.codeWords * 2));
    expect(r.code).toBe(2);
    expect(r.err + r.out).toMatch(/code RAM is 256 bytes, the run asks for 512 bytes \(--code-size\); pass --code-size 256 or leave it out/);
    r = await cli('run', elfPath, '--model', dir, '--mem-size', String(MEM));
    expect(r.code).toBe(2);
    expect(r.err + r.out).toMatch(/data RAM is 8 KiB, the run asks for 1 KiB \(--mem-size\); pass --mem-size 8192/);
    // --load state needs the RAM layouts the manifests of this version record (this one has none)
    r = await cli('run', elfPath, '--model', dir, '--mem-size', '8192', '--load', 'state');
    expect(r.code).toBe(2);
    expect(r.err + r.out).toMatch(/manifest records no RAMs; emit the chip again/);
    const merged = fakeCkpt({ vocab: 512 + 248_320, manifest: manifest({ ...good, memWords: 2048 }), mergeOffset: 512, configOffset: 512 });
    r = await cli('run', elfPath, '--model', merged, '--load', 'state');
    expect(r.code).toBe(2);
    expect(r.err + r.out).toMatch(/--load state needs the chip alone; a merged checkpoint is loaded by its prompt/);
    r = await cli('run', elfPath, '--model', path.join(tmp, 'absent'));
    expect(r.code).toBe(2);
    expect(r.err + r.out).toMatch(/does not exist/);
  });
});
