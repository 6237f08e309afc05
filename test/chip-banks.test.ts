/**
 * A data RAM larger than one GDN layer holds (riscv/chip-shape.ts, memLayout): 128 KiB as four
 * interleaved banks of 8,192 words (word w in bank w mod 4) in four layers. A program stores and
 * loads words (aligned, sub-word and word-crossing — a crossing access always spans two banks,
 * and from bank 3 into bank 0 the row moves on too) across the RAM, through the compiled weights and the IR,
 * every token equal to the golden trace; the loader prompt reaches every bank. A code RAM larger
 * than one bank (codeBanks: "code", "code1", …) at the qwen3.5-4b shape with one value head per key
 * head: fetch from both banks, a code store, the loader reaching bank 1 — on one generic chip that
 * also runs the data-bank program. Packed rows at qwen3.5-4b itself: banks of 4,096 words.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { MEM_BANK_WORDS, codeBanks, memLayout, memPlace, memWordAt } from '../src/cpu/cpu.ts';
import { ChipcError } from '../src/util/errors.ts';
import { chipRamContents, memBankWordsFor, parsePrefillPlan, programOf, runOnChip, type ChipProgram } from '../src/chip/run.ts';
import { compileChip, runOnInterpreter } from '../src/chip/build.ts';
import type { CompileResult } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { assembleElf, encode } from '../riscv/asm.ts';
import { decodeToken, encodeToken } from '../riscv/protocol.ts';
import { loaderAddressToken } from '../riscv/console-input.ts';
import { goldenTokens } from '../riscv/golden-trace.ts';

const MEM = 128 * 1024;

/** Words at the start and end of each bank, stored then loaded back and summed into a0's checksum. */
function bankProgram(bankWords = MEM_BANK_WORDS, banks = 4): string {
  const lines: string[] = ['lui x5, 0x80000', 'addi x10, x0, 0'];
  const spots: number[] = [];
  for (let b = 0; b < banks; b++) spots.push(b * bankWords * 4 + 2048, b * bankWords * 4 + bankWords * 4 - 8);
  spots.forEach((off, i) => {
    // x6 = address; x7 = a value that differs per spot.
    lines.push(`lui x6, ${(0x80000000 + off + 0x800) >>> 12}`, `addi x6, x6, ${((off & 0xfff) ^ 0x800) - 0x800}`);
    lines.push(`lui x7, ${0x12345 + i}`, `addi x7, x7, ${17 * i}`);
    lines.push('sw x7, 0(x6)');
  });
  // A byte store and a word-crossing load at the edge between bank 0 and bank 1.
  const edge = bankWords * 4;
  lines.push(`lui x6, ${(0x80000000 + edge) >>> 12}`, 'addi x7, x0, 0x5a', 'sb x7, 0(x6)', 'sb x7, -1(x6)', 'lw x8, -2(x6)', 'add x10, x10, x8');
  spots.forEach((off) => {
    lines.push(`lui x6, ${(0x80000000 + off + 0x800) >>> 12}`, `addi x6, x6, ${((off & 0xfff) ^ 0x800) - 0x800}`, 'lw x8, 0(x6)', 'add x10, x10, x8');
  });
  lines.push('andi x10, x10, 255', 'addi x17, x0, 93', 'ecall');
  return lines.join('\n');
}

describe('memLayout', () => {
  it('interleaves a data RAM over four banks of at most a bank\'s rows', () => {
    const shape = (w: number, bank?: number) => { const l = memLayout(w, bank); return [l.count, l.shift, l.rows, l.names]; };
    const names = ['mem', 'mem1', 'mem2', 'mem3'];
    expect(shape(8192)).toEqual([4, 2, 2048, names]);
    expect(shape(64)).toEqual([4, 2, 16, names]);
    expect(shape(32768)).toEqual([4, 2, 8192, names]);
    expect(shape(8192 + 64)).toEqual([4, 2, 2064, names]);
    expect(shape(4096 + 64, 2048)).toEqual([4, 2, 1040, names]);
    expect(() => memLayout(65536, 2048)).toThrow(ChipcError);
    expect(() => memLayout(65536, 2048)).toThrow(/data RAM of 65536 words does not fit 4 equal banks of at most 2048 words/);
    expect(() => memLayout(32768 + 4)).toThrow(/does not fit 4 equal banks of at most 8192 words/);
  });
  it('places word w at row w >> shift of bank w mod count, and back', () => {
    fc.assert(fc.property(fc.constantFrom(64, 8192, 8192 + 64, 32768), fc.nat(), (words, r) => {
      const l = memLayout(words);
      const w = r % words;
      const [bank, row] = memPlace(l, w);
      expect(bank).toBe(w % l.count);
      expect(row).toBeLessThan(l.rows);
      expect(memWordAt(l, bank, row)).toBe(w);
    }));
  });
  it('sizes the banks to what one GDN layer of the target holds', () => {
    // chip-test: one value head per key head, one 32-bit word per key-head row (64 × 128 rows)
    expect(memBankWordsFor(resolveTarget('chip-test').config)).toBe(64 * 128);
    // qwen3.5-4b and the Qwen3-Next targets: two value heads per key head, two words per row (packed rows)
    for (const t of ['qwen3.5-4b', 'qwen3-next-80b', 'qwen3-coder-next']) expect(memBankWordsFor(resolveTarget(t).config), t).toBe(16 * 128 * 2);
    // the same shape with one value head per key head: one word per row
    expect(memBankWordsFor({ ...resolveTarget('qwen3.5-4b').config, linearNumValueHeads: 16 })).toBe(16 * 128);
    expect(programOf(assembleElf('ecall').elf, 32768, resolveTarget('qwen3.5-4b').config).chip.memBankWords).toBe(4096);
    expect(programOf(assembleElf('ecall').elf, 32768).chip.memBankWords).toBe(MEM_BANK_WORDS);
  });
});

/**
 * Code in two banks of 2,048 words: a jump into bank 1's first word (fetch from "code1"), a code
 * store into bank 0 (A(w), then the word) that the program then executes, console output from
 * bank 1, and back. Exit code by hand: 5 + 11 + 7 + 100 = 123.
 */
function codeBankProgram(): string {
  return `
  _start:
    li a0, 5
    la t0, slot
    li t1, ${encode('addi', [10, 10, 100])}
    sw t1, 0(t0)
    j far
  back:
    addi a0, a0, 7
  slot:
    nop
    andi a0, a0, 255
    li a7, 93
    ecall
    .balign 8192
  far:
    addi a0, a0, 11
    li t2, 0x10000000
    li t3, 66
    sb t3, 0(t2)
    j back
  `;
}

describe('a 16 KiB code RAM and a 16 KiB data RAM at the qwen3.5-4b shape with one value head per key head: the code in two banks of 2,048 words, the data in four of 1,024', () => {
  const SHAPE = { codeBytes: 16 * 1024, memBytes: 16 * 1024 };
  // (qwen3.5-4b's own two value heads per key head pack two words per row: 4,096-word banks, below)
  const target = { ...resolveTarget('qwen3.5-4b').config, linearNumValueHeads: 16 };
  let res: CompileResult;
  beforeAll(() => {
    // One generic chip for both programs below.
    res = compileChip(programOf(assembleElf('ecall').elf, SHAPE, target).chip, target);
  }, 300_000);

  it('places the banks', () => {
    expect(codeBanks(4096, 2048)).toEqual([['code', 0, 2048], ['code1', 2048, 2048]]);
    expect(codeBanks(2048, 2048)).toEqual([['code', 0, 2048]]);
    const names = res.rams.map((r) => r.name);
    expect(names.filter((n) => /^code\d*$/.test(n)).sort()).toEqual(['code', 'code1']);
    expect(names.filter((n) => /^mem\d*$/.test(n)).sort()).toEqual(['mem', 'mem1', 'mem2', 'mem3']);
  });

  it('data in both banks: runs through the weights with every token equal to the golden trace', () => {
    const elf = assembleElf(bankProgram(2048, 2)).elf;
    const prog = programOf(elf, SHAPE, target);
    const golden = goldenTokens(elf, { mem: { size: SHAPE.memBytes }, codeBytes: prog.codeBytes });
    expect(golden.halt.reason).toBe('exit');
    const r = runOnChip(res, prog, { maxTokens: 10_000, golden: golden.tokens, goldenPc: golden.tokenPc, load: 'prompt' });
    expect(r.divergence).toBeNull();
    expect(r.exitCode).toBe(golden.halt.exitCode);
  }, 300_000);

  it('code in both banks (and a code store into bank 0): the golden trace through the weights (state and prompt) and the IR', () => {
    const elf = assembleElf(codeBankProgram()).elf;
    const prog = programOf(elf, SHAPE, target);
    expect(prog.chip).toEqual(programOf(assembleElf('ecall').elf, SHAPE, target).chip);
    expect([...prog.code.keys()].some((row) => row >= 2048)).toBe(true);
    expect(chipRamContents(prog).find(([n]) => n === 'code1')![1].size).toBeGreaterThan(0);
    const golden = goldenTokens(elf, { mem: { size: SHAPE.memBytes }, codeBytes: prog.codeBytes });
    expect(golden.halt.reason).toBe('exit');
    expect(golden.halt.exitCode).toBe(123);
    expect(Buffer.from(golden.console).toString('latin1')).toBe('B');
    const kinds = new Set(Array.from(golden.tokens, (t) => decodeToken(t).kind));
    expect(kinds.has('A')).toBe(true); // the code store
    for (const load of ['state', 'prompt'] as const) {
      const r = runOnChip(res, prog, { maxTokens: 10_000, golden: golden.tokens, goldenPc: golden.tokenPc, load });
      expect(r.divergence, load).toBeNull();
      expect(r.exitCode, load).toBe(123);
    }
    const ir = runOnInterpreter(prog, { maxTokens: 10_000, golden: golden.tokens, goldenPc: golden.tokenPc, load: 'prompt' });
    expect(ir.divergence).toBeNull();
    expect(ir.exitCode).toBe(123);
  }, 300_000);
});

describe('packed rows at qwen3.5-4b: 16 KiB of code in one bank, 32 KiB of data in four banks of 2,048 words', () => {
  const SHAPE = { codeBytes: 16 * 1024, memBytes: 32 * 1024 };
  const target = resolveTarget('qwen3.5-4b').config;
  let res: CompileResult;
  beforeAll(() => {
    res = compileChip(programOf(assembleElf('ecall').elf, SHAPE, target).chip, target);
  }, 300_000);

  it('one code bank and four data banks, each two words per key-head row (the code in all 16 key heads, a data bank in 8)', () => {
    const banks = res.rams.filter((r) => /^(code|mem)\d*$/.test(r.name));
    expect(banks.map((r) => r.name).sort()).toEqual(['code', 'mem', 'mem1', 'mem2', 'mem3']);
    for (const r of banks) {
      expect(r.lowering.layout.wordsPerRow, r.name).toBe(2);
      expect(r.lowering.layout.rowBlocks, r.name).toBe(r.name === 'code' ? 16 : 8);
    }
  });

  it('data in both banks: through the weights (state and prompt loading) with every token equal to the golden trace', () => {
    const elf = assembleElf(bankProgram(4096, 2)).elf;
    const prog = programOf(elf, SHAPE, target);
    expect(prog.chip.memBankWords).toBe(4096);
    const golden = goldenTokens(elf, { mem: { size: SHAPE.memBytes }, codeBytes: prog.codeBytes });
    expect(golden.halt.reason).toBe('exit');
    for (const load of ['state', 'prompt'] as const) {
      const r = runOnChip(res, prog, { maxTokens: 10_000, golden: golden.tokens, goldenPc: golden.tokenPc, load });
      expect(r.divergence, load).toBeNull();
      expect(r.exitCode, load).toBe(golden.halt.exitCode);
    }
  }, 300_000);
});

describe('a 128 KiB data RAM in four banks (chip-test)', () => {
  const elf = assembleElf(bankProgram()).elf;
  let prog: ChipProgram;
  let res: CompileResult;
  let golden: ReturnType<typeof goldenTokens>;
  beforeAll(() => {
    prog = programOf(elf, MEM);
    golden = goldenTokens(elf, { mem: { size: MEM }, codeBytes: prog.codeBytes });
    res = compileChip(prog.chip, resolveTarget('chip-test').config);
  }, 120_000);

  it('places one RAM per bank in different layers', () => {
    const banks = res.rams.filter((r) => /^mem\d*$/.test(r.name));
    expect(banks.map((r) => r.name).sort()).toEqual(['mem', 'mem1', 'mem2', 'mem3']);
    expect(new Set(banks.map((r) => r.layer)).size).toBe(4);
    expect(chipRamContents(prog).map(([n]) => n)).toEqual(['code', 'mem', 'mem1', 'mem2', 'mem3', 'regs', 'codeEnd', 'tohost']);
  });

  it('the golden program halts with its checksum', () => {
    expect(golden.halt.reason).toBe('exit');
    // Independent checksum: the 8 stored words, plus the word-crossing load at the bank edge.
    let sum = 0;
    for (let i = 0; i < 8; i++) sum = (sum + ((0x12345 + i) << 12) + 17 * i) >>> 0;
    sum = (sum + 0x5a5a00) >>> 0; // bytes edge−2 … edge+1: 0, 0x5a, 0x5a, 0 (unwritten bytes read 0)
    expect(golden.halt.exitCode).toBe(sum & 255);
  });

  it('runs through the weights with every token equal to the golden trace (state and prompt loading)', () => {
    for (const load of ['state', 'prompt'] as const) {
      const r = runOnChip(res, prog, { maxTokens: 10_000, golden: golden.tokens, goldenPc: golden.tokenPc, load });
      expect(r.divergence, load).toBeNull();
      expect(r.exitCode, load).toBe(golden.halt.exitCode);
    }
  }, 300_000);

  it('a loader prompt writes a data word above 64 KiB through K (protocol v8), token by token and in one FMA chunk; v7\'s E(1, ·) still loads it token by token', () => {
    // x10 = the word at 0x80010008 (word index 0x4002), exit with its low byte
    const far = assembleElf('lui x6, 0x80010\nlw x10, 8(x6)\nandi x10, x10, 255\naddi x17, x0, 93\necall').elf;
    const p2 = programOf(far, { memBytes: MEM, codeBytes: prog.codeBytes });
    expect(p2.chip).toEqual(prog.chip);
    const J = p2.loader[p2.loader.length - 1]!;
    const word = [encodeToken({ kind: 'D', v: 0xbeef }), encodeToken({ kind: 'H', v: 0x12ab })];
    const v8 = [encodeToken({ kind: 'K', v: 2 }), ...word];
    expect(v8[0]).toBe(loaderAddressToken(0x4002));
    const v7 = [encodeToken({ kind: 'E', j: 1, v: 2 }), ...word];
    const withWord = (addr: number[]) => ({ ...p2, loader: [...p2.loader.slice(0, -1), ...addr, J] });
    const runs = [
      runOnChip(res, withWord(v8), { maxTokens: 100, load: 'prompt' }),
      runOnChip(res, withWord(v8), { maxTokens: 100, load: 'prompt', prefill: parsePrefillPlan('whole'), kernelOrder: { kind: 'fma' } }),
      runOnChip(res, withWord(v7), { maxTokens: 100, load: 'prompt' }),
    ];
    for (const r of runs) {
      expect(r.halted).toBe(true);
      expect(r.exitCode).toBe(0xef);
    }
    // without the word the program reads 0 (the K token is what loads it)
    expect(runOnChip(res, p2, { maxTokens: 100, load: 'prompt' }).exitCode).toBe(0);
  }, 300_000);

  it('runs through the IR with every token equal to the golden trace', () => {
    const r = runOnInterpreter(prog, { maxTokens: 10_000, golden: golden.tokens, goldenPc: golden.tokenPc });
    expect(r.divergence).toBeNull();
    expect(r.halted).toBe(true);
  }, 120_000);
});
