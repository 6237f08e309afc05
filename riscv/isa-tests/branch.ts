/**
 * ISA test group `branch`: the six conditional branches taken and not taken, forward and
 * backward, near and far (offsets past ±2 KiB); JAL and JALR targets and link values, JALR's
 * cleared bit 0, JALR with rd = rs1, and a call/return.
 *
 * Each branch check leaves a3 = 2 when the branch went to its target and a3 = 1 when it fell
 * through; a wrong target runs into an illegal word (`.zero`) or a different marker.
 */
import type { Check, TestGroup } from './program.ts';
import { REF_BRANCH, hx, u32 } from './ref.ts';

const INT_MIN = 0x80000000n;
const INT_MAX = 0x7fffffffn;
const ALL1 = 0xffffffffn;
/** Bytes of illegal zero words between a far branch and its target (offset bit 11 set). */
const FAR_GAP = 2100;

const PAIRS: Record<string, [bigint, bigint][]> = {
  beq: [[5n, 5n], [5n, 6n], [INT_MIN, 0n]],
  bne: [[5n, 5n], [5n, 6n], [INT_MIN, 0n]],
  blt: [[ALL1, 1n], [1n, ALL1], [INT_MIN, INT_MAX], [7n, 7n]],
  bge: [[ALL1, 1n], [1n, ALL1], [INT_MIN, INT_MAX], [7n, 7n]],
  bltu: [[ALL1, 1n], [1n, ALL1], [INT_MIN, INT_MAX], [7n, 7n]],
  bgeu: [[ALL1, 1n], [1n, ALL1], [INT_MIN, INT_MAX], [7n, 7n]],
};

const marker = (taken: boolean): bigint => (taken ? 2n : 1n);

function forward(op: string, a: bigint, b: bigint, gap = 0): Check {
  const taken = REF_BRANCH[op](a, b);
  return {
    desc: `${op} ${hx(a)}, ${hx(b)} forward${gap ? ' far' : ''} (${taken ? 'taken' : 'not taken'})`,
    asm: (p) => [
      'li a3, 0', `li a1, ${hx(a)}`, `li a2, ${hx(b)}`,
      `${op} a1, a2, ${p}t`,
      'li a3, 1',
      `j ${p}e`,
      ...(gap ? [`.zero ${gap}`] : []),
      `${p}t: li a3, 2`,
      `${p}e:`,
    ],
    expected: marker(taken),
  };
}

function backward(op: string, a: bigint, b: bigint, gap = 0): Check {
  const taken = REF_BRANCH[op](a, b);
  return {
    desc: `${op} ${hx(a)}, ${hx(b)} backward${gap ? ' far' : ''} (${taken ? 'taken' : 'not taken'})`,
    asm: (p) => [
      'li a3, 0',
      `j ${p}f`,
      `${p}t: li a3, 2`,
      `j ${p}e`,
      ...(gap ? [`.zero ${gap}`] : []),
      `${p}f: li a1, ${hx(a)}`, `li a2, ${hx(b)}`,
      `${op} a1, a2, ${p}t`,
      'li a3, 1',
      `${p}e:`,
    ],
    expected: marker(taken),
  };
}

function checks(): Check[] {
  const out: Check[] = [];
  for (const [op, pairs] of Object.entries(PAIRS)) {
    for (const [a, b] of pairs) out.push(forward(op, a, b));
    // Backward: the first two pairs give one taken and one not-taken case for every op.
    for (const [a, b] of pairs.slice(0, 2)) out.push(backward(op, a, b));
  }
  // Same register on both sides.
  for (const op of ['beq', 'blt', 'bgeu']) {
    const taken = REF_BRANCH[op](0x80000000n, 0x80000000n);
    out.push({
      desc: `${op} a1, a1 (${taken ? 'taken' : 'not taken'})`,
      asm: (p) => ['li a3, 0', 'li a1, 0x80000000', `${op} a1, a1, ${p}t`, 'li a3, 1', `j ${p}e`, `${p}t: li a3, 2`, `${p}e:`],
      expected: marker(taken),
    });
  }
  out.push(forward('bne', 1n, 2n, FAR_GAP), backward('bltu', 3n, 4n, FAR_GAP), backward('bge', 3n, 4n, FAR_GAP));

  // JAL: target and link (pc + 4), forward and backward, near and far.
  out.push({
    desc: 'jal ra forward: link = pc + 4',
    asm: (p) => ['li a3, 0', `${p}j: jal ra, ${p}t`, 'li a3, 1', `j ${p}e`, `${p}t: mv a3, ra`, `${p}e:`],
    expected: (addr, p) => u32(BigInt(addr(`${p}j`)) + 4n),
  });
  out.push({
    desc: 'jal t0 backward: link = pc + 4',
    asm: (p) => ['li a3, 0', `j ${p}f`, `${p}t: mv a3, t0`, `j ${p}e`, `${p}f:`, `${p}j: jal t0, ${p}t`, 'li a3, 1', `${p}e:`],
    expected: (addr, p) => u32(BigInt(addr(`${p}j`)) + 4n),
  });
  out.push({
    desc: 'jal s1 far forward: link = pc + 4',
    asm: (p) => ['li a3, 0', `${p}j: jal s1, ${p}t`, 'li a3, 1', `j ${p}e`, `.zero ${FAR_GAP}`, `${p}t: mv a3, s1`, `${p}e:`],
    expected: (addr, p) => u32(BigInt(addr(`${p}j`)) + 4n),
  });
  out.push({
    desc: 'jal x0 writes no register',
    asm: (p) => ['li a3, 5', `j ${p}t`, 'li a3, 1', `${p}t: addi a3, a3, 1`, 'add a3, a3, zero'],
    expected: 6n,
  });
  // JALR: target = (rs1 + imm) with bit 0 cleared; link = pc + 4; rs1 read before rd is written.
  out.push({
    desc: 'jalr ra, 0(odd address): bit 0 cleared, link = pc + 4',
    asm: (p) => ['li a3, 0', `la a1, ${p}t`, 'addi a1, a1, 1', `${p}j: jalr ra, 0(a1)`, 'li a3, 1', `j ${p}e`, `${p}t: mv a3, ra`, `${p}e:`],
    expected: (addr, p) => u32(BigInt(addr(`${p}j`)) + 4n),
  });
  out.push({
    desc: 'jalr t0, -7(target + 8): odd sum, negative immediate',
    asm: (p) => ['li a3, 0', `la a1, ${p}t+8`, `${p}j: jalr t0, -7(a1)`, 'li a3, 1', `j ${p}e`, `${p}t: mv a3, t0`, `${p}e:`],
    expected: (addr, p) => u32(BigInt(addr(`${p}j`)) + 4n),
  });
  out.push({
    desc: 'jalr ra, 0(ra): rd = rs1',
    asm: (p) => ['li a3, 0', `la ra, ${p}t`, `${p}j: jalr ra, 0(ra)`, 'li a3, 1', `j ${p}e`, `${p}t: mv a3, ra`, `${p}e:`],
    expected: (addr, p) => u32(BigInt(addr(`${p}j`)) + 4n),
  });
  out.push({
    desc: 'jalr x0 backward (jr)',
    asm: (p) => ['li a3, 0', `j ${p}f`, `${p}t: li a3, 2`, `j ${p}e`, `${p}f: la a1, ${p}t`, 'jalr zero, 0(a1)', 'li a3, 1', `${p}e:`],
    expected: 2n,
  });
  out.push({
    desc: 'call and ret (jal ra / jalr x0, 0(ra))',
    asm: (p) => ['li a3, 0', `call ${p}fn`, 'addi a3, a3, 10', `j ${p}e`, `${p}fn: addi a3, a3, 1`, 'ret', `${p}e:`],
    expected: 11n,
  });
  return out;
}

export const branchGroup: TestGroup = {
  name: 'branch',
  summary: 'beq/bne/blt/bge/bltu/bgeu taken and not taken, forward/backward, near/far; jal/jalr targets, links, bit 0 cleared',
  covers: ['beq', 'bne', 'blt', 'bge', 'bltu', 'bgeu', 'jal', 'jalr', 'auipc'],
  checks: checks(),
};
