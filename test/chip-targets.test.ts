/**
 * The RV32 chip at every full-size target's exact config (issue 6: "a model at each target's
 * exact config runs the chip in the executor"): compiled in memory once per distinct config —
 * qwen3.5-4b, and qwen3-next-80b, whose config qwen3-coder-next shares field for field (checked
 * below, so the compile would give the same weights) — with the vocabulary widened where the
 * protocol's 248,205 ids do not fit; a short program with memory of two widths, the console, MUL
 * and DIV runs through the weights with every generated token compared with the golden emulator's
 * trace.
 */
import { describe, expect, it } from 'vitest';
import { programOf, runOnChip } from '../src/chip/run.ts';
import { compileChip } from '../src/chip/build.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { goldenTokens } from '../riscv/golden-trace.ts';
import { assembleElf } from '../riscv/asm.ts';
import { decodeToken } from '../riscv/protocol.ts';

const SRC = `
  li t0, 0x12345678
  sw t0, -16(sp)
  li t1, -2
  sb t1, -15(sp)
  lw a0, -16(sp)
  mul a5, t0, t1
  li t2, 0x10000000
  li t3, 72
  sb t3, 0(t2)
  li t4, -100
  li t5, 7
  div s2, t4, t5
  add a0, a0, a5
  xor a0, a0, s2
  andi a0, a0, 255
  li a7, 93
  ecall
`;

describe('the chip at each full-size target', () => {
  const elf = assembleElf(SRC).elf;
  const prog = programOf(elf, 1024);
  const golden = goldenTokens(elf, { mem: { size: prog.memBytes }, codeBytes: prog.codeBytes });
  it('qwen3-coder-next has qwen3-next-80b\'s config: one chip stands for both', () => {
    expect(resolveTarget('qwen3-coder-next').config).toEqual(resolveTarget('qwen3-next-80b').config);
  });

  for (const name of ['qwen3.5-4b', 'qwen3-next-80b']) {
    it(`${name}: the program runs through the weights with 0 divergences`, () => {
      const host = resolveTarget(name).config;
      const res = compileChip(prog.chip, host);
      const cfg = res.weights.config;
      // the family's shapes are kept; only the vocabulary grows when the ids do not fit
      expect(cfg.family).toBe(host.family);
      expect(cfg.family).toBe(name === 'qwen3.5-4b' ? 'qwen3_5_text' : 'qwen3_next');
      expect(cfg.linearNumKeyHeads).toBe(host.linearNumKeyHeads);
      expect(cfg.linearKeyHeadDim).toBe(host.linearKeyHeadDim);
      expect(cfg.hiddenSize).toBeGreaterThanOrEqual(host.hiddenSize);
      expect(cfg.vocabSize).toBe(Math.max(host.vocabSize, 248_320));
      const r = runOnChip(res, prog, { maxTokens: golden.tokens.length, golden: golden.tokens, goldenPc: golden.tokenPc });
      expect(r.divergence).toBeNull();
      expect(r.halted).toBe(true);
      expect(r.tokens.length).toBe(golden.tokens.length);
      const last = decodeToken(r.tokens[r.tokens.length - 1]!);
      expect(last.kind).toBe('HALT');
    }, 180_000);
  }
});
