/**
 * Token protocol v9's division start (docs/token-protocol.md "v9: the division's start") on the
 * chip circuit: a division by a short divisor (rs2 in [1, 2^16) as an unsigned value) starts at
 * s0 = min(7, lz(a) + nibbles(b) − 1) with the dividend's top s0 nibbles as its remainder; any
 * other keeps v8's s0 = min(7, lz(a)) (0 for a negative signed dividend or a zero divisor).
 *
 * The program divides dividends of every length (1…8 nibbles) by divisors of every short length
 * (1…4 nibbles) and by long, negative and zero divisors, with DIVU, REMU, DIV and REM, and folds
 * every result into its exit code. The interpreter (FastEvaluator) must follow the golden stream
 * token by token, and the stream must start divisions at every s0 from 0 to 7, with and without
 * the cap at 7 — so a chip or a golden rule that starts anywhere else diverges here.
 */
import { describe, expect, it } from 'vitest';
import { programOf } from '../src/chip/run.ts';
import { runOnInterpreter } from '../src/chip/build.ts';
import { assembleElf } from '../riscv/asm.ts';
import { goldenTokens } from '../riscv/golden-trace.ts';
import { decodeToken } from '../riscv/protocol.ts';

/** A value with exactly n nibbles (its top nibble non-zero), varied by k. */
function ofLength(n: number, k: number): number {
  const top = 1 + ((k * 7 + n) % 15);
  let v = top;
  for (let i = 1; i < n; i++) v = v * 16 + ((k * 5 + i * 3) % 16);
  return v >>> 0;
}

/** Leading zero nibbles of a 32-bit value (8 for 0). */
function lz(x: number): number {
  return x === 0 ? 8 : Math.clz32(x) >>> 2;
}

const pairs: [number, number][] = [];
for (let la = 1; la <= 8; la++) for (let lb = 1; lb <= 4; lb++) pairs.push([ofLength(la, lb), ofLength(lb, la)]);
// a dividend below the divisor (quotient 0), the largest short divisor, long and negative
// divisors, a zero divisor, a negative dividend and INT_MIN
pairs.push([0x0123, 0xfff0], [0x00ffffff, 0xffff], [0x7fffffff, 0x10000], [0x00abcdef, 0xfffffff9], [0x1234, 0], [0xfffff000, 0x35], [0x80000000, 0x7]);

const src = `
_start:
  li s0, 0
${pairs.map(([a, b]) => `  li t0, ${a | 0}
  li t1, ${b | 0}
  divu t2, t0, t1
  add s0, s0, t2
  remu t2, t0, t1
  xor s0, s0, t2
  div t2, t0, t1
  add s0, s0, t2
  rem t2, t0, t1
  xor s0, s0, t2`).join('\n')}
  andi a0, s0, 255
  li a7, 93
  ecall
`;

describe('token protocol v9: the division start on the chip circuit', () => {
  const elf = assembleElf(src).elf;
  const shape = { codeBytes: 16 * 1024, memBytes: 64 * 1024 };
  const golden = goldenTokens(elf, { mem: { size: shape.memBytes }, codeBytes: shape.codeBytes });

  it('the golden stream starts short divisions past the quotient\'s known leading zero digits, every s0 from 0 to 7', () => {
    const firstSteps: number[] = [];
    let prevQ = false;
    for (const id of golden.tokens) {
      const t = decodeToken(id);
      if (t.kind === 'Q' && !prevQ) firstSteps.push(t.s);
      // a division's Q tokens are separated by its D (and H) tokens; a new division starts after a result
      if (t.kind === 'Q') prevQ = true;
      else if (t.kind !== 'D' && t.kind !== 'H') prevQ = false;
    }
    // one division per op (DIVU, REMU, DIV, REM) per pair, in program order
    expect(firstSteps.length).toBe(4 * pairs.length);
    const expected = pairs.flatMap(([a, b]) => {
      const unsigned = (b >>> 0) === 0 ? 0 : (b >>> 0) < 65536 ? Math.min(7, lz(a >>> 0) + 8 - lz(b >>> 0) - 1) : Math.min(7, lz(a >>> 0));
      const negA = (a | 0) < 0;
      const ma = negA ? (-(a | 0)) >>> 0 : a >>> 0;
      const signed = (b >>> 0) === 0 || negA ? 0 : (b >>> 0) < 65536 ? Math.min(7, lz(ma) + 8 - lz(b >>> 0) - 1) : Math.min(7, lz(ma));
      return [unsigned, unsigned, signed, signed];
    });
    expect(firstSteps).toEqual(expected);
    expect(new Set(firstSteps)).toEqual(new Set([0, 1, 2, 3, 4, 5, 6, 7]));
    // the cap: some short divisions would start past step 7 (lz(a) + nibbles(b) − 1 > 7)
    expect(pairs.some(([a, b]) => (b >>> 0) > 0 && (b >>> 0) < 65536 && lz(a >>> 0) + 8 - lz(b >>> 0) - 1 > 7)).toBe(true);
    expect(golden.halt.reason).toBe('exit');
  });

  it('the chip circuit follows the golden stream token by token, to HALT', () => {
    const prog = programOf(elf, shape);
    const r = runOnInterpreter(prog, { maxTokens: golden.tokens.length + 2, golden: golden.tokens, goldenPc: golden.tokenPc });
    expect(r.divergence).toBeNull();
    expect(r.halted).toBe(true);
    expect(r.exitCode).toBe(golden.halt.exitCode! & 255);
    expect(r.tokens.length).toBeGreaterThanOrEqual(golden.tokens.length);
  }, 120_000);
});
