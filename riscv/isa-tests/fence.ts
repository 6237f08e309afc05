/**
 * ISA test group `fence`: FENCE (several pred/succ/fm encodings, all of which must act as
 * no-ops on one hart) and FENCE.I with self-modifying code: the program stores new instruction
 * words over its own code, executes FENCE.I, then runs them.
 *
 * The new instruction words come from the project's encoder (`enc`); the expected results are
 * the hand-derived effects of those instructions. The code segment is R+W+X for this program.
 */
import { ChipcError } from '../../src/util/errors.ts';
import { enc } from '../asm.ts';
import type { Check, TestGroup } from './program.ts';
import { hx } from './ref.ts';

const A3 = 13;

/** A FENCE word: fm[31:28] pred[27:24] succ[23:20] rs1 = funct3 = rd = 0, opcode MISC-MEM. */
const fenceWord = (fm: number, pred: number, succ: number): number => ((fm << 28) | (pred << 24) | (succ << 20) | 0x0f) >>> 0;
const I = 8, O = 4, R = 2, W = 1;

function checks(): Check[] {
  const out: Check[] = [];
  out.push({
    desc: 'sw; fence iorw, iorw; lw sees the store',
    asm: () => ['la a1, fence_data', 'li a2, 0x5a5a1234', 'sw a2, 0(a1)', 'fence', 'lw a3, 0(a1)'],
    expected: 0x5a5a1234n,
  });
  const variants: [string, number][] = [
    ['fence r, r', fenceWord(0, R, R)],
    ['fence w, r', fenceWord(0, W, R)],
    ['fence.tso (fm = 8, rw, rw)', fenceWord(8, R | W, R | W)],
    ['pause (fence w, 0)', fenceWord(0, W, 0)],
    ['fence io, io', fenceWord(0, I | O, I | O)],
  ];
  for (const [name, word] of variants) {
    out.push({
      desc: `${name} (${hx(BigInt(word))}) is a no-op`,
      asm: () => ['li a3, 77', `.word ${hx(BigInt(word))}`, 'addi a3, a3, 1'],
      expected: 78n,
    });
  }
  // Overwrite `addi a3, zero, 1` with `addi a3, zero, 42`, fence.i, run it.
  out.push({
    desc: 'sw a new instruction, fence.i, execute it',
    asm: (p) => [
      `la a1, ${p}slot`, `li a2, ${hx(BigInt(enc.addi(A3, 0, 42)))}`, 'sw a2, 0(a1)', 'fence.i',
      `${p}slot: addi a3, zero, 1`,
    ],
    expected: 42n,
  });
  // The same slot runs twice: once as written (+1), once patched (+100).
  out.push({
    desc: 'loop: run a slot, patch it, fence.i, run it again',
    asm: (p) => [
      'li a3, 0', 'li s0, 0',
      `${p}slot: addi a3, a3, 1`,
      `bnez s0, ${p}e`,
      'li s0, 1',
      `la a1, ${p}slot`, `li a2, ${hx(BigInt(enc.addi(A3, A3, 100)))}`, 'sw a2, 0(a1)', 'fence.i',
      `j ${p}slot`,
      `${p}e:`,
    ],
    expected: 101n,
  });
  // Patch an addi into a jump (jal x0, +8) that skips the next instruction.
  out.push({
    desc: 'patch an instruction into jal x0, +8',
    asm: (p) => [
      'li a3, 7',
      `la a1, ${p}slot`, `li a2, ${hx(BigInt(enc.jal(0, 8)))}`, 'sw a2, 0(a1)', 'fence.i',
      `${p}slot: addi a3, zero, 1`,
      'addi a3, a3, 100',
    ],
    expected: 7n,
  });
  // Patch only the immediate: a halfword store into bits 31:16 of `addi a3, zero, 1`.
  {
    const before = enc.addi(A3, 0, 1);
    const after = enc.addi(A3, 0, 42);
    if ((before & 0xffff) !== (after & 0xffff)) {
      throw new ChipcError('isa.internal', 'fence group: the two addi words must share their low halfword');
    }
    out.push({
      desc: 'sh into the immediate half of an instruction, fence.i, execute it',
      asm: (p) => [
        `la a1, ${p}slot`, `li a2, ${hx(BigInt(after >>> 16))}`, 'sh a2, 2(a1)', 'fence.i',
        `${p}slot: addi a3, zero, 1`,
      ],
      expected: 42n,
    });
  }
  return out;
}

export const fenceGroup: TestGroup = {
  name: 'fence',
  summary: 'fence (several pred/succ/fm encodings) and fence.i with self-modifying code',
  covers: ['fence', 'fence.i', 'sw', 'sh'],
  checks: checks(),
  data: ['fence_data: .word 0'],
  writesCode: true,
};
