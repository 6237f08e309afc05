/**
 * The RV32IM+Zba chip (src/cpu/cpu.ts) on token protocol v5.
 * - The chip circuit (FastEvaluator), fed the prompt [BOS, J(entry)] and then its own emitted tokens, with the
 *   program image in its code and data RAMs and sp in its register file, generates exactly the
 *   golden token trace that riscv/golden-trace.ts derives from the golden emulator: chipc's own
 *   self-checking ISA programs (branch, zba, mul, div, load_store with word-crossing accesses, fence
 *   with self-modifying code; alu's tohost variant — ending in HALT(0), i.e. their checks
 *   passed) and the hello firmware (console bytes through OUT tokens).
 * - The compiled weights follow the interpreter bit for bit (every placed signal at every
 *   sublayer, every emitted token) on a hand program that uses memory of every width, the
 *   console, MUL/MULH and signed/unsigned division, in f32 and bf16; the RAMs are loaded directly
 *   into the GDN state (state-file path) on the weights side.
 */
import fs from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { compileCircuit, type CompileResult } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { checkCompiled } from '../src/verify/check.ts';
import { applyRamContents } from '../src/load/ram-state.ts';
import fc from 'fast-check';
import { randomProgram } from '../riscv/random-program.ts';
import { chipExecutor, chipRamContents, programOf, runOnChip, type ChipProgram } from '../src/chip/run.ts';
import { chipIr, locateDivergence, runOnInterpreter } from '../src/chip/build.ts';
import type { Matrix } from '../src/model/weights.ts';
import { assembleElf } from '../riscv/asm.ts';
import { goldenTokens } from '../riscv/golden-trace.ts';
import { decodeToken, encodeToken, type TokenKind } from '../riscv/protocol.ts';
import { cli } from './helpers/cli.ts';
import { ISA_TEST_GROUPS, buildProgram } from '../riscv/isa-tests/index.ts';

const MEM = 64 * 1024;
/**
 * The chip the interpreter runs: the default generic chip's shape for every program (the chip is
 * generic: a program's code end arrives as configuration), so the file builds its circuit once
 * (shared with `chipc run --engine ir` below, which runs in this process).
 */
const SHAPE = { codeBytes: 16 * 1024, memBytes: MEM };

/** Run a program's image on the chip circuit in the interpreter against its golden stream. */
function againstGolden(elf: Uint8Array, shape: { codeBytes: number; memBytes: number } = SHAPE) {
  const prog = programOf(elf, shape);
  const memBytes = shape.memBytes;
  // The emulator's fetch limit is the chip's code RAM.
  const trace = goldenTokens(elf, { maxInstructions: 50_000, mem: { size: memBytes }, codeBytes: prog.codeBytes });
  const r = runOnInterpreter(prog, { maxTokens: trace.tokens.length + 5, golden: trace.tokens, goldenPc: trace.tokenPc });
  return { r, trace };
}

describe('the chip in the IR interpreter = the golden token trace', () => {
  it.each(['branch', 'zba', 'mul', 'div', 'load_store', 'fence', 'bn'])('ISA program %s: every token, ending in HALT(0)', (name) => {
    const { r, trace } = againstGolden(fs.readFileSync(`fixtures/isa/${name}.exit.elf`));
    expect(r.divergence).toBeNull();
    expect(r.tokens).toEqual(Array.from(trace.tokens));
    expect(r.exitCode).toBe(0);
  }, 120_000);

  it('tohost halting: the alu program\'s tohost variant ends in HALT(0) from its store', () => {
    const { r, trace } = againstGolden(fs.readFileSync('fixtures/isa/alu.elf'));
    expect(trace.halt.reason).toBe('tohost');
    expect(r.divergence).toBeNull();
    expect(r.exitCode).toBe(0);
  }, 120_000);

  it('tohost halting with a failed case: the code is value >>> 1 (here 3), every token as the golden trace', () => {
    // the alu fixture with case 3's expected constant changed: its check fails and stores 3·2 + 1
    const good = fs.readFileSync('fixtures/isa/alu.elf');
    const bad = buildProgram(ISA_TEST_GROUPS[0]!, { mode: 'tohost', mutateCase: 3 }).elf;
    expect(bad.length).toBe(good.length);
    const { r, trace } = againstGolden(bad);
    expect(trace.halt.reason).toBe('tohost');
    expect(r.divergence).toBeNull();
    expect(r.tokens).toEqual(Array.from(trace.tokens));
    expect(r.exitCode).toBe(3);
  }, 120_000);

  it('the hello firmware loaded by prompt: the same stream after the loader prompt', () => {
    const elf = fs.readFileSync('fixtures/firmware/hello.elf');
    const prog = programOf(elf, SHAPE);
    const trace = goldenTokens(elf, { maxInstructions: 50_000, mem: { size: MEM }, codeBytes: prog.codeBytes });
    const r = runOnInterpreter(prog, { maxTokens: trace.tokens.length + 5, golden: trace.tokens, load: 'prompt' });
    expect(r.divergence).toBeNull();
    expect(r.tokens.slice(r.promptLength)).toEqual(Array.from(trace.tokens.slice(2)));
  }, 120_000);

  it('the hello firmware: console bytes through OUT tokens, sub-word stores, byte loads', () => {
    const elf = fs.readFileSync('fixtures/firmware/hello.elf');
    const { r, trace } = againstGolden(elf);
    expect(r.divergence).toBeNull();
    const out = r.tokens.map((t) => decodeToken(t)).flatMap((t) => (t.kind === 'OUT' ? [t.b] : []));
    expect(Buffer.from(out).toString('latin1')).toBe(Buffer.from(trace.console).toString('latin1'));
    expect(out.length).toBeGreaterThan(20);
  }, 120_000);

  it('catches a wrong instruction: a changed ISA program diverges from the unchanged golden trace', () => {
    const elf = fs.readFileSync('fixtures/isa/zba.exit.elf');
    const trace = goldenTokens(elf, { maxInstructions: 20_000, mem: { size: MEM }, codeBytes: SHAPE.codeBytes });
    const bad = new Uint8Array(elf);
    // Flip an immediate bit of the program's first addi-like word in the code segment.
    const view = new DataView(bad.buffer);
    const codeOff = [...Array(bad.length).keys()].find((o) => o % 4 === 0 && o + 4 <= bad.length && (view.getUint32(o, true) & 0x7f) === 0x13 && view.getUint32(o, true) >>> 20 !== 0)!;
    view.setUint32(codeOff, view.getUint32(codeOff, true) ^ (1 << 21), true);
    const r = runOnInterpreter(programOf(bad, SHAPE), { maxTokens: trace.tokens.length, golden: trace.tokens });
    expect(r.divergence).not.toBeNull();
  }, 120_000);
});

// Memory of every width (aligned, and sub-word at every offset within a word), the console,
// MUL / MULH / MULHU, DIV / DIVU / REM / REMU with a negative operand, a zero divisor and
// INT_MIN / -1, the bignum unit's bn.mac (low words and the carry), and a taken branch; exit code = a checksum the golden emulator also computes.
const HAND = `
  li t0, 0x12345678
  sw t0, -16(sp)
  li t1, -2
  sb t1, -15(sp)
  sh t1, -14(sp)
  lw a0, -16(sp)
  lb a1, -15(sp)
  lbu a2, -13(sp)
  lh a3, -14(sp)
  lhu a4, -16(sp)
  li t2, 0x10000000
  li t3, 72
  sb t3, 0(t2)
  li t3, 105
  sw t3, 0(t2)
  mul a5, t0, t1
  mulh a6, t0, t1
  mulhu a7, t0, t1
  li t4, -100
  li t5, 7
  div s2, t4, t5
  rem s3, t4, t5
  divu s4, t0, t5
  remu s5, t0, t5
  div s6, t4, zero
  li t6, 0x80000000
  li s7, -1
  div s8, t6, s7
  rem s9, t6, s7
  add a0, a0, a1
  xor a0, a0, a2
  add a0, a0, a3
  xor a0, a0, a4
  add a0, a0, a5
  xor a0, a0, a6
  add a0, a0, a7
  xor a0, a0, s2
  add a0, a0, s3
  xor a0, a0, s4
  add a0, a0, s5
  xor a0, a0, s6
  add a0, a0, s8
  xor a0, a0, s9
  li s10, 0xfedcba98
  bn.mac s10, t0, t6
  bn.mac s10, t0, s7
  bn.mac1 s10, s10, t6
  li s11, 0
  bn.mac s11, zero, zero
  bn.mac1 s11, zero, zero
  add a0, a0, s10
  xor a0, a0, s11
  bne a0, zero, done
  addi a0, a0, 1
done:
  andi a0, a0, 255
  li a7, 93
  ecall
`;

describe('the chip through the compiled weights = the interpreter, bit for bit', () => {
  let res: CompileResult;
  let prog: ChipProgram;
  const tiny = resolveTarget('tiny').config;
  const target = {
    ...tiny, vocabSize: 248_205, intermediateSize: 16_384, // the protocol v5 alphabet
    linearNumKeyHeads: 8, linearNumValueHeads: 16, linearKeyHeadDim: 64, linearValueHeadDim: 64,
  };
  const elf = assembleElf(HAND).elf;
  beforeAll(() => {
    prog = programOf(elf, 1024);
    res = compileCircuit(chipIr(prog.chip), target); // the circuit the interpreter runs below
  }, 180_000);

  it('the hand program uses what it should and the interpreter follows its golden trace', () => {
    const { r, trace } = againstGolden(elf, { codeBytes: prog.codeBytes, memBytes: 1024 });
    expect(r.divergence).toBeNull();
    const kinds = new Set(Array.from(trace.tokens, (t) => decodeToken(t).kind));
    for (const k of ['E', 'D', 'H', 'N', 'OUT', 'Q', 'HALT'] as TokenKind[]) expect(kinds.has(k)).toBe(true);
    expect(Buffer.from(trace.console).toString('latin1')).toBe('Hi');
  }, 120_000);

  it.each(['f32', 'bf16'] as const)('hand program, plain generation after [BOS, J(entry)], %s', (profile) => {
    const golden = goldenTokens(elf, { mem: { size: 1024 }, codeBytes: prog.codeBytes }).tokens;
    const ramRows = chipRamContents(prog);
    expect(ramRows.map(([name]) => name)).toEqual(['code', 'mem', 'mem1', 'mem2', 'mem3', 'regs', 'codeEnd', 'tohost']);
    const r = checkCompiled(res, golden.slice(0, 2), {
      profile, mode: 'generate', prompt: 2, length: golden.length, prefill: 2,
      setup: (ex, interp) => {
        for (const [name, rows] of ramRows) {
          const placement = res.rams.find((p) => p.name === name)!;
          applyRamContents(ex, res, placement, rows);
          const idx = res.ir.rams.findIndex((x) => x.name === name);
          for (const [row, v] of rows) interp.setRamRow(idx, row, v);
        }
      },
    });
    expect(r.mismatches).toEqual([]);
    expect(r.emitted.slice(1, -1)).toEqual(Array.from(golden.slice(2)));
    expect(golden[golden.length - 1]).not.toBe(encodeToken({ kind: 'HALT', code: 0 }));
  }, 300_000);

  const program = randomProgram();

  // Sequential order (the executor's fast paths); the shuffled and FMA orders run in
  // bench/chip-orders.ts (about 1 s per token without the fast paths).
  it.each(['f32', 'bf16'] as const)('random programs (fast-check) through the weights, %s: the golden stream', (profile) => {
    fc.assert(fc.property(program, (src) => {
      const elfR = assembleElf(src).elf;
      // The same generic chip: each program's code end arrives as configuration (refused with chip.code if its code did not fit).
      const progR = programOf(elfR, { memBytes: 1024, codeBytes: prog.codeBytes });
      expect(progR.chip).toEqual(prog.chip);
      const golden = goldenTokens(elfR, { mem: { size: 1024 }, codeBytes: progR.codeBytes });
      const r = runOnChip(res, progR, { profile, maxTokens: golden.tokens.length + 2, golden: golden.tokens, goldenPc: golden.tokenPc });
      expect(r.divergence).toBeNull();
      expect(r.exitCode).toBe(golden.halt.exitCode! & 255);
    }), { numRuns: 4, seed: 20261129 });
  }, 300_000);

  it('loading by prompt leaves the RAMs bit-identical to the state file, and generation is the same', () => {
    const golden = goldenTokens(elf, { mem: { size: 1024 }, codeBytes: prog.codeBytes }).tokens;
    const viaState = chipExecutor(res, prog, { load: 'state' });
    viaState.prefill([golden[0]!]);
    const stateNext = viaState.decodeArgmax(golden[1]!);
    const viaPrompt = chipExecutor(res, prog, { load: 'prompt' });
    viaPrompt.prefill([prog.loader[0]!]);
    let promptNext = -1;
    for (const t of prog.loader.slice(1)) promptNext = viaPrompt.decodeArgmax(t);
    expect(prog.loader.length).toBeGreaterThan(3 * prog.data.size);
    expect(promptNext).toBe(stateNext);
    expect(promptNext).toBe(golden[2]);
    const r = target.linearNumValueHeads / target.linearNumKeyHeads;
    let compared = 0;
    for (const name of ['code', 'mem', 'regs', 'codeEnd', 'tohost']) {
      const placement = res.rams.find((x) => x.name === name)!;
      for (const kh of placement.keyHeads) {
        for (let j = 0; j < r; j++) {
          const a = new Uint32Array(Float32Array.from(viaState.gdnState(placement.layer, kh * r + j)).buffer);
          const b = new Uint32Array(Float32Array.from(viaPrompt.gdnState(placement.layer, kh * r + j)).buffer);
          expect(b).toEqual(a);
          compared += a.length;
        }
      }
    }
    expect(compared).toBeGreaterThan(0);
    // And the run goes on identically: 40 more tokens from each.
    let x = stateNext, y = promptNext;
    for (let i = 0; i < 40; i++) {
      x = viaState.decodeArgmax(x);
      y = viaPrompt.decodeArgmax(y);
      expect(y).toBe(x);
      expect(x).toBe(golden[3 + i]);
    }
  }, 300_000);
  it('locateDivergence names where perturbed weights first differ from the circuit (LM head row; last-layer FFN)', () => {
    const trace = goldenTokens(elf, { mem: { size: 1024 }, codeBytes: prog.codeBytes });
    const w = res.weights;
    const L = w.config.numLayers;
    const scaleCsr = (m: Matrix, f: (v: number, row: number) => number): Matrix => {
      const csr = m.csr!;
      const values = Float32Array.from(csr.values);
      for (let r = 0; r < m.rows; r++) for (let k = csr.rowPtr[r]!; k < csr.rowPtr[r + 1]!; k++) values[k] = f(values[k]!, r);
      return { rows: m.rows, cols: m.cols, csr: { ...csr, values } };
    };
    // 1. The LM head row of the HALT token the program ends with, zeroed: the residual still agrees
    //    with the circuit everywhere; only the emitted token differs, at the HALT position.
    const halt = trace.tokens[trace.tokens.length - 1]!;
    expect(decodeToken(halt).kind).toBe('HALT');
    const noHalt = { ...res, weights: { ...w, lmHead: scaleCsr(w.lmHead, (v, r) => (r === halt ? 0 : v)) } };
    const r1 = runOnChip(noHalt, prog, { maxTokens: trace.tokens.length, golden: trace.tokens, goldenPc: trace.tokenPc });
    expect(r1.divergence?.position).toBe(trace.tokens.length - 1);
    const m1 = locateDivergence(noHalt, prog, r1.tokens, r1.divergence!.position, {});
    expect(m1.map((m) => m.what)).toEqual(['token']);
    expect(m1[0]!.sublayer).toBe(2 * L);
    expect(m1[0]!.expected).toBe(halt);
    // 2. The last layer's FFN down projection negated: its outputs (read only by the LM head) are
    //    wrong from the first position that uses them; the first mismatch is after that FFN.
    const lastMlp = w.layers[L - 1]!.mlp;
    if (lastMlp.kind !== 'dense') throw new Error('expected a dense MLP');
    const doubled = {
      ...res,
      weights: { ...w, layers: w.layers.map((l, i) => (i === L - 1 ? { ...l, mlp: { ...lastMlp, downProj: scaleCsr(lastMlp.downProj, (v) => -v) } } : l)) },
    };
    const r2 = runOnChip(doubled, prog, { maxTokens: trace.tokens.length, golden: trace.tokens, goldenPc: trace.tokenPc });
    expect(r2.divergence).not.toBeNull();
    const m2 = locateDivergence(doubled, prog, r2.tokens, r2.divergence!.position, {});
    expect(m2.length).toBeGreaterThan(0);
    expect(m2[0]!.sublayer).toBe(2 * (L - 1) + 1);
    expect(m2[0]!.what).not.toBe('token');
    // 3. The unperturbed weights: no divergence to locate, and at any position nothing differs.
    const ok = runOnChip(res, prog, { maxTokens: 12, golden: trace.tokens });
    expect(ok.divergence).toBeNull();
    expect(locateDivergence(res, prog, ok.tokens, 10, {})).toEqual([]);
  }, 300_000);
});

describe('chipc run', () => {
  it('runs a program on the generic chip from the chip cache with --check: a miss compiles and caches it, a hit opens it', async () => {
    const os = await import('node:os');
    const path = await import('node:path');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-run-'));
    const saved = process.env['CHIPC_CACHE_DIR'];
    process.env['CHIPC_CACHE_DIR'] = path.join(dir, 'cache');
    try {
      const file = path.join(dir, 'prog.elf');
      // x10 = 6·7 − 35 = 7 through adds and shifts; x11 a pointer (two tokens, protocol v6); exit(7).
      fs.writeFileSync(file, assembleElf(`
        addi x5, x0, 6
        slli x6, x5, 3
        sub x6, x6, x5
        addi x10, x6, -35
        lui x11, 0x80001
        addi x17, x0, 93
        ecall
      `).elf);
      // Small RAMs keep the compile short (the default generic chip is 16 KiB code, 64 KiB data).
      const args = ['run', file, '--code-size', '256', '--mem-size', '1024', '--check', '--json'];
      for (const hit of [false, true]) {
        const { code, out } = await cli(...args);
        const doc = JSON.parse(out);
        expect(doc.divergence).toBeNull();
        expect(doc.exitCode).toBe(7);
        expect(code).toBe(7);
        expect(doc.instructions).toBe(7);
        expect(doc.chip).toEqual({ codeBytes: 256, memBytes: 1024 });
        expect(doc.cache.hit).toBe(hit);
        expect(doc.cache.path.startsWith(path.join(dir, 'cache'))).toBe(true);
      }
      // --trace: a token a line; after a D, the word the pair carries
      const traced = await cli('run', file, '--code-size', '256', '--mem-size', '1024', '--trace');
      expect(traced.code).toBe(7);
      expect(traced.out.split('\n').slice(0, 9)).toEqual(['E(1, 6)', 'E(2, 48)', 'E(3, 42)', 'K(7)', 'J(0x4)', 'D(0x1000)', 'E(1, -8192) = 0x80001000', 'E(2, 93)', 'HALT(7)']);
    } finally {
      if (saved === undefined) delete process.env['CHIPC_CACHE_DIR'];
      else process.env['CHIPC_CACHE_DIR'] = saved;
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);

  it('--engine ir runs the chip circuit in the interpreter against the golden trace', async () => {
    const elf = fs.readFileSync('fixtures/isa/zba.exit.elf');
    const { code, out } = await cli('run', 'fixtures/isa/zba.exit.elf', '--check', '--engine', 'ir', '--json');
    const doc = JSON.parse(out);
    expect(doc.divergence).toBeNull();
    expect(doc.engine).toBe('ir');
    // The default generic chip's RAMs: 16 KiB code (the emulator's fetch limit), 64 KiB data.
    expect(doc.chip).toEqual({ codeBytes: 16 * 1024, memBytes: 64 * 1024 });
    expect(doc.tokens).toEqual(Array.from(goldenTokens(elf, { mem: { size: 64 * 1024 }, codeBytes: 16 * 1024 }).tokens));
    expect(code).toBe(0);
  }, 120_000);
});
