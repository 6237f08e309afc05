/**
 * Token protocol v1 (riscv/protocol.ts) and the golden token trace (riscv/golden-trace.ts).
 *
 * Expected ids come from a second, literal transcription of the alphabet table in
 * docs/token-protocol.md (the helpers E, D, J, … below), and expected streams of the small
 * programs are derived by hand from the emission table. The fixture programs are checked by
 * replaying their streams with an independent reading of the "fed at position t, it …" column and
 * comparing every started pc and every committed value with the emulator's own trace.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { assembleElf, cpuForProgram, loadElf, type TraceEvent } from '../riscv/index.ts';
import {
  BOS_ID, CODE_BASE, PROTOCOL_ALPHABET_SIZE, QWEN_VOCAB_SIZE, codeAddress, codeWord, decodeToken,
  encodeToken, fits30, fitsNarrow, formatToken, formatTokenAfter, signExtend14, signExtend30, splitResult, wideHi14, wideValue, type Token, type TokenFields,
} from '../riscv/protocol.ts';
import { INSTR_CLASSES, PROMPT_LENGTH, divisionSteps, goldenTokens, type GoldenTrace } from '../riscv/golden-trace.ts';
import { expectChipcError } from './helpers/assert.ts';

// ---- The alphabet table of docs/token-protocol.md, transcribed literally ----
const E = (j: number, v: number): number => j * 16384 + (v < 0 ? v + 16384 : v);
const D = (v: number): number => 65536 + v;
const J = (w: number): number => 131072 + w;
const H = (v: number): number => 163840 + v;
const K = (v: number): number => 229376 + (v < 0 ? v + 16384 : v);
const N = (j: number): number => 245760 + j;
const OUT = (j: number, b: number): number => 245764 + 256 * j + b;
const HALT = (c: number): number => 246788 + c;
const BOS = 247044;
const Q = (st: number, q: number): number => 247045 + 16 * st + q;
const A = (w: number): number => 247173 + w;
const TRAP = (cause: number): number => 248197 + cause;
/** J payload of a code address (docs: w = (pc − 0x80000000) / 4). */
const Jpc = (pc: number): number => J((pc - 0x80000000) / 4);


describe('alphabet', () => {
  it('fits the 248,320-id vocabulary; v2 adds the 128 division-step ids and 1,024 code-store ids after BOS, v5 the 8 trap ids', () => {
    expect(PROTOCOL_ALPHABET_SIZE).toBe(247045 + 128 + 1024 + 8);
    expect(PROTOCOL_ALPHABET_SIZE).toBe(248205);
    expect(PROTOCOL_ALPHABET_SIZE).toBeLessThanOrEqual(QWEN_VOCAB_SIZE);
    expect(QWEN_VOCAB_SIZE).toBe(248320);
    expect(BOS_ID).toBe(BOS);
  });

  it('every id decodes and re-encodes to itself; kind counts match the table', () => {
    const counts: Record<string, number> = {};
    for (let id = 0; id < PROTOCOL_ALPHABET_SIZE; id++) {
      const t = decodeToken(id);
      counts[t.kind] = (counts[t.kind] ?? 0) + 1;
      if (encodeToken(t) !== id) expect.fail(`id ${id} (${formatToken(id)}) does not round-trip`);
    }
    expect(counts).toEqual({ E: 65536, D: 65536, J: 32768, H: 65536, K: 16384, N: 4, OUT: 1024, HALT: 256, BOS: 1, Q: 128, A: 1024, TRAP: 8 });
  });

  it('range boundaries (first and last id of every kind)', () => {
    const cases: [TokenFields, number][] = [
      [{ kind: 'E', j: 0, v: 0 }, 0], [{ kind: 'E', j: 0, v: 8191 }, 8191], [{ kind: 'E', j: 0, v: -8192 }, 8192],
      [{ kind: 'E', j: 0, v: -1 }, 16383], [{ kind: 'E', j: 3, v: -1 }, 65535], [{ kind: 'E', j: 1, v: 0 }, 16384],
      [{ kind: 'D', v: 0 }, 65536], [{ kind: 'D', v: 0xffff }, 131071],
      [{ kind: 'J', w: 0 }, 131072], [{ kind: 'J', w: 32767 }, 163839],
      [{ kind: 'H', v: 0 }, 163840], [{ kind: 'H', v: 0xffff }, 229375],
      [{ kind: 'K', v: 0 }, 229376], [{ kind: 'K', v: -1 }, 245759], [{ kind: 'K', v: 8191 }, 229376 + 8191],
      [{ kind: 'N', j: 0 }, 245760], [{ kind: 'N', j: 3 }, 245763],
      [{ kind: 'OUT', j: 0, b: 0 }, 245764], [{ kind: 'OUT', j: 3, b: 255 }, 246787],
      [{ kind: 'HALT', code: 0 }, 246788], [{ kind: 'HALT', code: 255 }, 247043],
      [{ kind: 'BOS' }, 247044],
      [{ kind: 'Q', s: 0, q: 0 }, 247045], [{ kind: 'Q', s: 7, q: 15 }, 247172],
      [{ kind: 'A', w: 0 }, 247173], [{ kind: 'A', w: 1023 }, 248196],
      [{ kind: 'TRAP', cause: 0 }, 248197], [{ kind: 'TRAP', cause: 7 }, 248204],
    ];
    for (const [fields, id] of cases) {
      expect(encodeToken(fields)).toBe(id);
      expect(decodeToken(id)).toEqual(fields);
    }
  });

  it('encode/decode round trip over every kind and payload range (fast-check)', () => {
    const j = fc.integer({ min: 0, max: 3 });
    const s14 = fc.integer({ min: -8192, max: 8191 });
    const u16 = fc.integer({ min: 0, max: 0xffff });
    const byte = fc.integer({ min: 0, max: 255 });
    const token: fc.Arbitrary<Token> = fc.oneof(
      fc.record({ kind: fc.constant('E' as const), j, v: s14 }),
      fc.record({ kind: fc.constant('D' as const), v: u16 }),
      fc.record({ kind: fc.constant('J' as const), w: fc.integer({ min: 0, max: 32767 }) }),
      fc.record({ kind: fc.constant('H' as const), v: u16 }),
      fc.record({ kind: fc.constant('K' as const), v: s14 }),
      fc.record({ kind: fc.constant('N' as const), j }),
      fc.record({ kind: fc.constant('OUT' as const), j, b: byte }),
      fc.record({ kind: fc.constant('HALT' as const), code: byte }),
      fc.constant({ kind: 'BOS' as const }),
      fc.record({ kind: fc.constant('Q' as const), s: fc.integer({ min: 0, max: 7 }), q: fc.integer({ min: 0, max: 15 }) }),
      fc.record({ kind: fc.constant('A' as const), w: fc.integer({ min: 0, max: 1023 }) }),
      fc.record({ kind: fc.constant('TRAP' as const), cause: fc.integer({ min: 0, max: 7 }) }),
    );
    const literal = (t: Token): number => {
      switch (t.kind) {
        case 'E': return E(t.j, t.v);
        case 'D': return D(t.v);
        case 'J': return J(t.w);
        case 'H': return H(t.v);
        case 'K': return K(t.v);
        case 'N': return N(t.j);
        case 'OUT': return OUT(t.j, t.b);
        case 'HALT': return HALT(t.code);
        case 'BOS': return BOS;
        case 'Q': return Q(t.s, t.q);
        case 'A': return A(t.w);
        case 'TRAP': return TRAP(t.cause);
      }
    };
    fc.assert(fc.property(token, (t) => {
      const id = encodeToken(t);
      expect(id).toBe(literal(t));
      expect(decodeToken(id)).toEqual(t);
    }), { numRuns: 2000 });
  });

  it('ids outside the alphabet are ChipcErrors', () => {
    for (const id of [-1, PROTOCOL_ALPHABET_SIZE, QWEN_VOCAB_SIZE - 1, QWEN_VOCAB_SIZE, 1.5, Number.NaN, 2 ** 40]) {
      expectChipcError(() => decodeToken(id), 'protocol.id');
      expectChipcError(() => formatToken(id), 'protocol.id');
    }
  });

  it('encodeToken refuses missing, extra and out-of-range fields', () => {
    const bad: TokenFields[] = [
      { kind: 'E', j: 4, v: 0 }, { kind: 'E', j: 0, v: 8192 }, { kind: 'E', j: 0, v: -8193 }, { kind: 'E', j: 1 },
      { kind: 'D', v: 0x10000 }, { kind: 'D', v: -1 }, { kind: 'D', v: 1.5 }, { kind: 'J', w: 32768 }, { kind: 'J', w: -1 },
      { kind: 'H', v: 65536 }, { kind: 'K', v: 8192 }, { kind: 'N', j: -1 }, { kind: 'OUT', j: 0, b: 256 },
      { kind: 'HALT', code: 256 }, { kind: 'HALT', code: -1 }, { kind: 'HALT' },
      { kind: 'D', v: 1, j: 0 }, { kind: 'J', w: 1, v: 0 }, { kind: 'BOS', code: 0 }, { kind: 'N', j: 0, b: 1 },
      { kind: 'Q', s: 8, q: 0 }, { kind: 'Q', s: 0, q: 16 }, { kind: 'Q', s: 0 }, { kind: 'A', w: 1024 }, { kind: 'A' },
      { kind: 'TRAP', cause: 8 }, { kind: 'TRAP', cause: -1 }, { kind: 'TRAP' }, { kind: 'TRAP', cause: 0, code: 0 },
      { kind: 'X' as TokenFields['kind'] },
    ];
    for (const t of bad) expectChipcError(() => encodeToken(t), 'protocol.token');
  });

  it('formatToken', () => {
    expect(formatToken(E(2, -17))).toBe('E(2, -17)');
    expect(formatToken(D(0x1234))).toBe('D(0x1234)');
    expect(formatToken(J(0x40))).toBe('J(0x40)');
    expect(formatToken(H(0xbeef))).toBe('H(0xbeef)');
    expect(formatToken(K(-8192))).toBe('K(-8192)');
    expect(formatToken(N(3))).toBe('N(3)');
    expect(formatToken(OUT(1, 0x41))).toBe('OUT(1, 0x41)');
    expect(formatToken(HALT(255))).toBe('HALT(255)');
    expect(formatToken(BOS)).toBe('BOS');
    expect(formatToken(TRAP(0))).toBe('TRAP(illegal)');
    expect(formatToken(TRAP(4))).toBe('TRAP(store)');
    expect(formatToken(TRAP(5))).toBe('TRAP(5)');
  });

  it('formatTokenAfter: after a D, the word the pair carries (v6 pointers, wide, full); otherwise formatToken', () => {
    expect(formatTokenAfter(E(2, -8192), D(0x0010))).toBe('E(2, -8192) = 0x80000010');
    expect(formatTokenAfter(K(0x2765 - 0x4000), D(0x4000))).toBe('K(-6299) = 0x87654000');
    expect(formatTokenAfter(E(1, 0x1234), D(0x5000))).toBe('E(1, 4660) = 0x12345000');
    expect(formatTokenAfter(E(1, -1), D(0xe000))).toBe('E(1, -1) = 0xffffe000');
    expect(formatTokenAfter(H(0x9765), D(0x4321))).toBe('H(0x9765) = 0x97654321');
    expect(formatTokenAfter(E(1, 5), null)).toBe('E(1, 5)');
    expect(formatTokenAfter(E(1, 5), N(1))).toBe('E(1, 5)');
    expect(formatTokenAfter(N(2), D(0x10))).toBe('N(2)');
  });
});

// v6: the commit rule after a D, stated from the doc independently of the helpers: payload bits
// 13…12 = 10 give 0x80000000 + 2^16·(bits 11…0) + lo, every other payload v·2^16 + lo (v signed).
const docWide = (payload: number, lo: number): number => {
  const u = payload & 0x3fff;
  return (u >> 12 === 2 ? 0x80000000 + 65536 * (u & 0xfff) + lo : (u >= 8192 ? u - 16384 : u) * 65536 + lo + 2 ** 32) % 2 ** 32;
};

describe('sign extension and range predicates', () => {
  it('signExtend14 / signExtend30 on every low-bit pattern boundary and at random', () => {
    expect([0, 0x1fff, 0x2000, 0x3fff, 0x4000, 0xffffffff, -1].map(signExtend14)).toEqual([0, 8191, -8192, -1, 0, -1, -1]);
    expect([0, 0x1fffffff, 0x20000000, 0x3fffffff, 0x40000000, -1].map(signExtend30)).toEqual([0, 536870911, -536870912, -1, 0, -1]);
    fc.assert(fc.property(fc.integer({ min: 0, max: 0xffffffff }), (x) => {
      const l14 = x % 16384, l30 = x % 2 ** 30;
      expect(signExtend14(x)).toBe(l14 >= 8192 ? l14 - 16384 : l14);
      expect(signExtend30(x)).toBe(l30 >= 2 ** 29 ? l30 - 2 ** 30 : l30);
    }), { numRuns: 1000 });
  });

  it('fits30 boundaries, signed and unsigned forms', () => {
    const yes30 = [0, 2 ** 29 - 1, -(2 ** 29), 0xe0000000, 8192, 0x10000000];
    const no30 = [2 ** 29, -(2 ** 29) - 1, 0xdfffffff, 0x80000000, 0x7fffffff];
    for (const v of yes30) expect(fits30(v), `fits30(${v})`).toBe(true);
    for (const v of no30) expect(fits30(v), `fits30(${v})`).toBe(false);
    fc.assert(fc.property(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), (s) => {
      const u = s < 0 ? s + 2 ** 32 : s;
      expect(fits30(s)).toBe(s >= -(2 ** 29) && s < 2 ** 29);
      expect(fits30(u)).toBe(s >= -(2 ** 29) && s < 2 ** 29);
    }), { numRuns: 1000 });
    for (const v of [2 ** 32, -(2 ** 31) - 1, 0.5, Number.NaN]) expectChipcError(() => fits30(v), 'protocol.value');
  });

  it('splitResult: D lo and H hi16 rebuild every value', () => {
    fc.assert(fc.property(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), (s) => {
      const { lo, hi16 } = splitResult(s);
      expect(hi16 * 65536 + lo).toBe(s < 0 ? s + 2 ** 32 : s);
    }), { numRuns: 1000 });
  });

  it('v6 narrow and wide forms: boundaries, the pointer quadrant, and the lost 0xE quadrant', () => {
    for (const v of [0, 8191, -1, -4096, 0xfffff000, 0xffffffff]) expect(fitsNarrow(v), `fitsNarrow(${v})`).toBe(true);
    for (const v of [8192, -4097, -8192, 0xffffe000, 0x80000000]) expect(fitsNarrow(v), `fitsNarrow(${v})`).toBe(false);
    // pointers into the code and data RAMs take two tokens; their payloads sit in quadrant 10
    expect(wideHi14(0x80000000)).toBe(-8192);
    expect(wideHi14(0x8001fffc)).toBe(-8191);
    expect(wideHi14(0x8fffffff)).toBe(-4097);
    expect(wideValue(-8191, 0xfffc) >>> 0).toBe(0x8001fffc);
    // values with top bits 1110 (v5's [−2^29, −2^28)) and those beyond 30 bits take the full form
    for (const v of [0xe0000000, 0xefffffff, -(2 ** 29), 0x90000000, 0x7fffffff, 2 ** 29, 0xdfffffff]) expect(wideHi14(v), `wideHi14(${v})`).toBe(null);
    for (const v of [0xf0000000, 2 ** 29 - 1, -(2 ** 28), 8192, -8192]) expect(wideHi14(v), `wideHi14(${v})`).not.toBe(null);
    for (const v of [2 ** 32, 0.5]) { expectChipcError(() => fitsNarrow(v), 'protocol.value'); expectChipcError(() => wideHi14(v), 'protocol.value'); }
  });

  it('v6 wide form: every value it carries comes back by the doc rule, and it carries exactly the values the doc lists', () => {
    fc.assert(fc.property(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), (s) => {
      const u = s < 0 ? s + 2 ** 32 : s;
      const hi = wideHi14(s);
      const top = u >>> 28;
      expect(hi !== null).toBe(top === 0x8 || top === 0x0 || top === 0x1 || top === 0xf);
      if (hi !== null) {
        expect(hi).toBeGreaterThanOrEqual(-8192);
        expect(hi).toBeLessThanOrEqual(8191);
        expect(docWide(hi, u & 0xffff)).toBe(u);
        expect(wideValue(hi, u & 0xffff) >>> 0).toBe(u);
      }
      expect(fitsNarrow(s)).toBe(s >= -4096 && s <= 8191);
    }), { numRuns: 2000 });
    for (let p = -8192; p < 8192; p += 7) expect(wideValue(p, 0x1234) >>> 0).toBe(docWide(p, 0x1234));
  });

  it('code address mapping', () => {
    expect(codeWord(0x80000000)).toBe(0);
    expect(codeWord(0x80000100)).toBe(0x40);
    expect(codeWord(0x8001fffc)).toBe(32767);
    expect(codeAddress(0x40)).toBe(0x80000100);
    expect(CODE_BASE).toBe(0x80000000);
    for (const pc of [0x80020000, 0x7ffffffc, 0x80000002, 0]) expectChipcError(() => codeWord(pc), 'protocol.code-range');
    expectChipcError(() => codeAddress(32768), 'protocol.token');
  });
});

// ---- Hand-derived streams of tiny programs ----

function trace(src: string, opts: { maxInstructions?: number; origin?: number; memSize?: number } = {}): GoldenTrace {
  const { elf } = assembleElf(src, opts.origin === undefined ? {} : { origin: opts.origin });
  return goldenTokens(elf, { maxInstructions: opts.maxInstructions, mem: opts.memSize === undefined ? {} : { size: opts.memSize } });
}

function expectStream(t: GoldenTrace, generated: number[], owners?: number[]): void {
  const want = [BOS, Jpc(t.entry), ...generated];
  expect([...t.tokens].map(formatToken)).toEqual(want.map(formatToken));
  expect([...t.tokens]).toEqual(want);
  expect([...t.tokenInstr.subarray(0, PROMPT_LENGTH)]).toEqual([-1, -1]);
  if (owners !== undefined) expect([...t.tokenInstr.subarray(PROMPT_LENGTH)]).toEqual(owners);
  for (let i = PROMPT_LENGTH; i < t.tokens.length; i++) expect(t.tokenPc[i]).toBe(t.instrPc[t.tokenInstr[i]!]);
}

describe('golden token trace: hand-built programs', () => {
  it('narrow results, x0 destination, a store, window end without a result, exit code −17', () => {
    const t = trace(`
      _start:
        addi a0, zero, -17   # j0: -17 fits 14 bits
        addi a1, a0, 20      # j1: 3
        addi zero, a1, 1     # j2: rd = x0, no result
        sw a1, -4(sp)        # j3: window end, no result -> J(pc+4)
        addi a7, zero, 93    # j0 at 0x80000010
        ecall                # exit(-17)
    `);
    expectStream(t, [E(1, -17), E(2, 3), N(3), Jpc(0x80000010), E(1, 93), HALT(255)], [0, 1, 2, 3, 4, 5]);
    expect(t.halt.reason).toBe('exit');
    expect(t.halt.exitCode).toBe(-17);
    expect([...t.instrPc]).toEqual([0x80000000, 0x80000004, 0x80000008, 0x8000000c, 0x80000010, 0x80000014]);
    expect(t.summary.instructions).toBe(6);
    expect(t.summary.tokens).toBe(6);
    expect(t.summary.byClass['alu-imm']).toEqual({ instructions: 4, tokens: 4, tokensPerInstruction: 1 });
    expect(t.summary.byClass.store).toEqual({ instructions: 1, tokens: 1, tokensPerInstruction: 1 });
    expect(t.summary.byClass.system).toEqual({ instructions: 1, tokens: 1, tokensPerInstruction: 1 });
    expect(t.summary.byKind).toEqual({ E: 3, D: 0, J: 1, H: 0, K: 0, N: 1, OUT: 0, HALT: 1, BOS: 0, Q: 0, A: 0, TRAP: 0 });
  });

  it('v2: a sub-word store carries the word it leaves in memory on D, H; then N', () => {
    const t = trace(`
      _start:
        li a0, 0x41          # j0
        sb a0, -3(sp)        # j1: byte 1 of the word at sp - 4 (was 0) -> 0x00004100
        li a7, 93            # j2
        ecall                # j3: exit(0x41)
    `);
    expectStream(t, [E(1, 0x41), D(0x4100), H(0), N(2), E(3, 93), HALT(0x41)], [0, 1, 1, 1, 2, 3]);
    expect(t.summary.byClass.store).toEqual({ instructions: 1, tokens: 3, tokensPerInstruction: 3 });
  });

  it('v2: DIVU by radix-16 steps from the first non-zero nibble (Q, D, H per step), then the result', () => {
    // 0x64000 / 0x10007 (a divisor of 17 bits: every step sends its H): step 3 (nibble 6): X = 6,
    // q = 0, R = 6; step 4 (4): X = 0x64, q = 0, R = 0x64; steps 5–7 (0, 0, 0): X = 0x640, 0x6400,
    // 0x64000, q = 0, 0, 6, R = 0x640, 0x6400, 0x64000 − 6·0x10007 = 0x3fd6.
    const t = trace(`
      _start:
        li a0, 0x64000       # j0 (lui)
        li a1, 0x10007       # j1, j2 (lui, addi)
        divu a2, a0, a1      # j3
        li a7, 93
        ecall
    `);
    const steps = [[3, 0, 6], [4, 0, 0x64], [5, 0, 0x640], [6, 0, 0x6400], [7, 6, 0x3fd6]].flatMap(([s, q, r]) => [Q(s!, q!), D(r! & 0xffff), H(r! >>> 16)]);
    const first = t.tokens.indexOf(Q(3, 0));
    expect(first).toBeGreaterThan(0);
    expect(Array.from(t.tokens.slice(first, first + 15))).toEqual(steps);
    expect(decodeToken(t.tokens[first + 15]!)).toMatchObject({ kind: 'E', v: 6 }); // the quotient
    expect(t.summary.byClass['mul/div']).toEqual({ instructions: 1, tokens: 16, tokensPerInstruction: 16 });
  });

  it('v9: a short division starts at the step where the quotient may first be non-zero', () => {
    // 0x12345678 / 10000 (0x2710, four nibbles): lz(a) = 0, so steps 0…2 are skipped (digits 0)
    // and step 3 starts from R = 0x123 (below 10000); the quotient 30,541 = 0x774d has four digits.
    const t = trace(`
      _start:
        li a0, 0x12345678
        li a1, 10000
        divu a2, a0, a1
        li a7, 93
        ecall
    `);
    const qs = Array.from(t.tokens).map((id) => decodeToken(id)).filter((k) => k.kind === 'Q');
    expect(qs.map((k) => (k.kind === 'Q' ? [k.s, k.q] : null))).toEqual([[3, 0], [4, 7], [5, 7], [6, 4], [7, 13]]);
    expect(t.summary.byClass['mul/div']!.tokens).toBe(2 * 5 + 1 + 2); // Q, D per step, the last H, D + E of 30,541
  });

  it('v7: a divisor in [1, 2^16) sends Q, D per step and the H of the last step only', () => {
    // 100 = 0x64, 7: step 6 (nibble 6): X = 6, q = 0, R = 6; step 7 (nibble 4): X = 100, q = 14, R = 2.
    const t = trace(`
      _start:
        li a0, 100           # j0
        li a1, 7             # j1
        divu a2, a0, a1      # j2
        li a7, 93            # j3: window end
        ecall                # exit(100)
    `);
    expectStream(t, [E(1, 100), E(2, 7), Q(6, 0), D(6), Q(7, 14), D(2), H(0), E(3, 14), K(93), Jpc(0x80000010), HALT(100)]);
    expect(t.summary.byClass['mul/div']).toEqual({ instructions: 1, tokens: 6, tokensPerInstruction: 6 });
    expect(t.summary.byKind.Q).toBe(2);
  });

  it('v2: division steps agree with BigInt division for signed and unsigned operands (fast-check)', () => {
    const i32 = fc.integer({ min: -0x80000000, max: 0x7fffffff });
    // divisors on both sides of v7's 2^16 bound as often as anywhere else
    const divisor = fc.oneof(i32, fc.integer({ min: -0x20000, max: 0x20000 }));
    fc.assert(fc.property(i32, divisor, fc.boolean(), (a, b, signed) => {
      const { tokens, quotient, remainder } = divisionSteps(a, b, signed);
      const ma = signed ? BigInt(Math.abs(a)) : BigInt(a >>> 0);
      const mb = signed ? BigInt(Math.abs(b)) : BigInt(b >>> 0);
      if (mb === 0n) {
        expect(quotient).toBe(0xffffffff);
        expect(BigInt(remainder)).toBe(ma);
        expect(tokens.length).toBe(24);
      } else {
        expect(BigInt(quotient)).toBe(ma / mb);
        expect(BigInt(remainder)).toBe(ma % mb);
      }
      // Every step is Q(s, ·), D, H with consecutive s ending at 7 — without the H before step 7
      // when b, unsigned, is in [1, 2^16) (v7). Replayed here by long division: each step's digit
      // and its remainder ({H, D}, or D alone where the H is dropped: the whole remainder, so the
      // dropped H would have been H(0)).
      const short = (b >>> 0) >= 1 && (b >>> 0) < 65536;
      let at = 0;
      let s = -1;
      let R = 0n;
      while (at < tokens.length) {
        const q = decodeToken(tokens[at++]!);
        expect(q.kind).toBe('Q');
        if (q.kind !== 'Q') return;
        if (s >= 0) expect(q.s).toBe(s + 1);
        else {
          // v9: the first step is past the quotient's leading digits known to be 0 — lz(a) +
          // nibbles(b) − 1 of them (v8's lz(a) for a negative signed divisor, none for a negative
          // signed dividend or a zero divisor), at most 7 — and starts from the dividend's top
          // nibbles, a remainder below the divisor
          const nibbles = (x: bigint) => { let n = 0; for (let y = x; y > 0n; y >>= 4n) n++; return n; };
          const lzA = 8 - nibbles(ma);
          const shortB = (b >>> 0) < 65536;
          const s0 = mb === 0n || (signed && a < 0) ? 0 : shortB ? Math.min(7, lzA + nibbles(BigInt(b >>> 0)) - 1) : Math.min(7, lzA);
          expect(q.s).toBe(s0);
          if (mb !== 0n) expect(BigInt(quotient) >> BigInt(4 * (8 - s0))).toBe(0n);
          R = s0 === 0 ? 0n : ma >> BigInt(4 * (8 - s0));
          if (mb !== 0n) expect(R < mb).toBe(true);
        }
        s = q.s;
        const X = 16n * R + ((ma >> BigInt(4 * (7 - s))) & 15n);
        const digit = mb === 0n ? 15n : X / mb < 15n ? X / mb : 15n;
        expect(BigInt(q.q)).toBe(digit);
        R = (X - digit * mb) % 2n ** 32n;
        const d = decodeToken(tokens[at++]!);
        expect(d.kind).toBe('D');
        let got = BigInt(d.kind === 'D' ? d.v : -1);
        if (!short || s === 7) {
          const h = decodeToken(tokens[at++]!);
          expect(h.kind).toBe('H');
          got += 65536n * BigInt(h.kind === 'H' ? h.v : -1);
        }
        expect(got).toBe(R);
      }
      expect(s).toBe(7);
      expect(R).toBe(BigInt(remainder));
    }), { numRuns: 500 });
  });

  it('v2: a word-crossing load brings back the bytes it reads first, then its value in the wide form', () => {
    // Words at sp-16: 0x12345678, sp-12: 0x9abcdef0. LH at sp-13 (offset 3): byte 0x12 of the
    // first word (read first: it holds one byte), then 0xf0 of the next: value 0xfffff012.
    // LW at sp-15 (offset 1): three bytes in the first word, so the next word is read first (0xf0).
    const t = trace(`
      _start:
        li t0, 0x12345678    # j0: D, E
        sw t0, -16(sp)       # j1
        li t0, 0x9abcdef0    # j2: D, H, N
        sw t0, -12(sp)       # j3: window end -> J
        lh a0, -13(sp)
        lw a1, -15(sp)
        li a7, 93
        ecall                # exit(0xfffff012) -> 255
    `);
    // li = lui + addi; the second lui ends a window (J). LW's value 0xf0123456 fits 30 bits: D, K at
    // the window end, then J.
    expectStream(t, [D(0x5000), E(1, 0x1234), D(0x5678), E(2, 0x1234), N(3), D(0xe000), H(0x9abc), Jpc(0x80000010),
      D(0xdef0), H(0x9abc), N(1), N(2), D(0x0012), D(0xf012), E(3, -1), D(0x00f0), D(0x3456), K(-4078), Jpc(0x80000020),
      E(1, 93), HALT(255)]);
  });

  it('v2: a store into the program\'s code names the code word (A) before its word comes back (D, H)', () => {
    // slot is instruction 6 (la = auipc + addi, li = lui + addi, sw, fence.i); the new word is
    // addi a3, zero, 42 = (42 << 20) | (13 << 7) | 0x13 = 0x02a00693.
    const t = trace(`
      _start:
        la a1, slot
        li a2, 0x02a00693
        sw a2, 0(a1)
        fence.i
      slot:
        addi a3, zero, 1
        mv a0, a3
        li a7, 93
        ecall
    `);
    const ids = Array.from(t.tokens);
    const at = ids.indexOf(A(6));
    expect(at).toBeGreaterThan(0);
    expect(ids.slice(at, at + 3)).toEqual([A(6), D(0x0693), H(0x02a0)]);
    expect(t.halt.exitCode).toBe(42);
    expect(t.summary.byKind.A).toBe(1);
  });

  it('v2: a word-crossing store carries both words it leaves in memory (D, H each), then N', () => {
    // SW 0xa1b2c3d4 at sp-14 (offset 2) over zeros: first word 0xc3d40000, next word 0x0000a1b2.
    const t = trace(`
      _start:
        li t0, 0xa1b2c3d4    # lui, addi: D, H, N each
        sw t0, -14(sp)       # j2: D(0x0000), H(0xc3d4), D(0xa1b2), H(0x0000), N(3)
        li a7, 93            # j3: K, J
        ecall
    `);
    expectStream(t, [D(0xc000), H(0xa1b2), N(1), D(0xc3d4), H(0xa1b2), N(2), D(0x0000), H(0xc3d4), D(0xa1b2), H(0x0000), N(3),
      K(93), Jpc(0x80000010), HALT(0)]);
  });

  it('lui: wide (D, E), a pointer (D, E in the pointer quadrant), narrow (E), top bits 1110 (D, H, J), below −4096 (D, E)', () => {
    const t = trace(`
      _start:
        lui a0, 0x12345      # j0: 0x12345000 < 2^29 -> D(0x5000), E(1, 0x1234)
        lui a1, 0x80000      # j1: 0x80000000, a pointer -> D(0), E(2, -8192) (payload bits 13..12 = 10)
        lui a2, 0xfffff      # j2: -4096 -> E(3, -4096)
        lui a3, 0xe0000      # j3: 0xe0000000, top bits 1110 -> D(0), H(0xe000), J(0x80000010)
        lui a4, 0xffffe      # j0: -8192, below the narrow form -> D(0xe000), E(1, -1)
        li a7, 93            # j1
        li a0, 0             # j2
        ecall                # j3: exit(0)
    `);
    expectStream(t, [
      D(0x5000), E(1, 0x1234),
      D(0x0000), E(2, -8192),
      E(3, -4096),
      D(0x0000), H(0xe000), Jpc(0x80000010),
      D(0xe000), E(1, -1),
      E(2, 93), E(3, 0), HALT(0),
    ], [0, 0, 1, 1, 2, 3, 3, 3, 4, 4, 5, 6, 7]);
    expect(t.summary.byClass['lui/auipc']).toEqual({ instructions: 5, tokens: 10, tokensPerInstruction: 10 / 5 });
  });

  it('32-bit result at the window end (D, H, J) and inside a window (D, H, N); a pointer at the window end (D, K, J)', () => {
    const t = trace(`
      _start:
        nop                  # j0 -> N(1)
        nop                  # j1 -> N(2)
        nop                  # j2 -> N(3)
        lui a0, 0x97654      # j3: 0x97654000 -> D(0x4000), H(0x9765), J(0x80000010)
        addi a0, a0, 0x321   # j0: 0x97654321 -> D(0x4321), H(0x9765), N(1)
        nop                  # j1 -> N(2)
        nop                  # j2 -> N(3)
        lui a1, 0x87654      # j3: 0x87654000 -> D(0x4000), K(0x2765 - 0x4000 = -6299), J(0x80000020)
        li a7, 93            # j0 -> E(1, 93)
        ecall                # exit(0x97654321 < 0) -> HALT(255)
    `);
    expectStream(t, [N(1), N(2), N(3), D(0x4000), H(0x9765), Jpc(0x80000010), D(0x4321), H(0x9765), N(1),
      N(2), N(3), D(0x4000), K(-6299), Jpc(0x80000020), E(1, 93), HALT(255)]);
  });

  it('branches: not taken (N), taken (J), taken to pc+4 (still J)', () => {
    const t = trace(`
      _start:
        addi t0, zero, 1       # 0x80000000 j0 -> E(1, 1)
        beq t0, zero, skip     # 0x80000004 j1 not taken -> N(2)
        bne t0, zero, skip     # 0x80000008 j2 taken -> J(0x80000010)
        addi a0, zero, 7       # 0x8000000c skipped
      skip:
        beq zero, zero, next   # 0x80000010 j0 taken to pc+4 -> J(0x80000014)
      next:
        addi a7, zero, 93      # 0x80000014 j0 -> E(1, 93)
        ecall                  # j1 -> HALT(0)
    `);
    expectStream(t, [E(1, 1), N(2), Jpc(0x80000010), Jpc(0x80000014), E(1, 93), HALT(0)]);
    expect(t.summary.byClass.branch).toEqual({ instructions: 3, tokens: 3, tokensPerInstruction: 1 });
  });

  it('backward branch loop: the window restarts at the loop head after every J', () => {
    const t = trace(`
      _start:
        li a0, 0               # 0x80000000 j0
      loop:
        addi a0, a0, 1         # 0x80000004
        slti t0, a0, 2         # 0x80000008
        bnez t0, loop          # 0x8000000c
        li a7, 93              # 0x80000010
        ecall
    `);
    // j0 li -> E(1,0); j1 addi -> E(2,1); j2 slti -> E(3,1); j3 bnez taken -> J(0x80000004);
    // j0 addi -> E(1,2); j1 slti -> E(2,0); j2 bnez not taken -> N(3); j3 li a7 -> K(93), J(0x80000014); ecall -> HALT(2)
    expectStream(t, [E(1, 0), E(2, 1), E(3, 1), Jpc(0x80000004), E(1, 2), E(2, 0), N(3), K(93), Jpc(0x80000014), HALT(2)]);
  });

  it('jal / jalr: the link rides on J, no result tokens', () => {
    const t = trace(`
      _start:
        jal ra, f              # 0x80000000 -> J(f)
        addi a7, zero, 93      # 0x80000004
        ecall                  # 0x80000008
      f:
        addi a0, zero, 42      # 0x8000000c j0 -> E(1, 42)
        jalr zero, 0(ra)       # j1 -> J(0x80000004)
    `);
    expectStream(t, [Jpc(0x8000000c), E(1, 42), Jpc(0x80000004), E(1, 93), HALT(42)]);
    expect(t.summary.byClass['jal/jalr']).toEqual({ instructions: 2, tokens: 2, tokensPerInstruction: 1 });
  });

  it('console stores of every width (OUT), including at the window end (OUT(0, b), J)', () => {
    const t = trace(`
      _start:
        lui t0, 0x10000        # j0: 0x10000000 fits 30 -> D(0), E(1, 0x1000)
        addi t1, zero, 72      # j1 -> E(2, 72)
        sb t1, 0(t0)           # j2 -> OUT(3, 'H')
        sw t1, 0(t0)           # j3 -> OUT(0, 'H'), J(0x80000010)
        addi t1, zero, 0x169   # j0 -> E(1, 0x169)
        sh t1, 0(t0)           # j1: low byte 0x69 'i' -> OUT(2, 0x69)
        li a7, 93              # j2 -> E(3, 93)
        li a0, 3               # j3 -> K(3), J(0x80000020)
        ecall                  # j0 -> HALT(3)
    `);
    expectStream(t, [D(0), E(1, 0x1000), E(2, 72), OUT(3, 0x48), OUT(0, 0x48), Jpc(0x80000010),
      E(1, 0x169), OUT(2, 0x69), E(3, 93), K(3), Jpc(0x80000020), HALT(3)]);
    expect(new TextDecoder().decode(t.console)).toBe('HHi');
  });

  it('loads: the result is the loaded rd value', () => {
    const t = trace(`
      _start:
        addi t1, zero, -300    # j0 -> E(1, -300)
        sw t1, -4(sp)          # j1 -> N(2)
        lw a0, -4(sp)          # j2 -> E(3, -300)
        lbu a1, -4(sp)         # j3: 0xfffffed4 & 0xff = 0xd4 -> K(212), J(0x80000010)
        lb a2, -4(sp)          # j0: sign-extended 0xd4 = -44 -> E(1, -44)
        lw zero, -4(sp)        # j1: rd = x0 -> N(2)
        li a7, 93              # j2 -> E(3, 93)
        ecall                  # j3 -> HALT(255)
    `);
    expectStream(t, [E(1, -300), N(2), E(3, -300), K(212), Jpc(0x80000010), E(1, -44), N(2), E(3, 93), HALT(255)]);
    expect(t.summary.byClass.load).toEqual({ instructions: 4, tokens: 5, tokensPerInstruction: 5 / 4 });
  });

  it('tohost store halts with HALT(value >> 1)', () => {
    const t = trace(`
      _start:
        la t0, tohost          # auipc t0, 0 -> 0x80000000: D(0), E(1, -8192); addi -> 0x80000010: D(0x10), E(2, -8192)
        addi t1, zero, 7       # j2 -> E(3, 7)
        sw t1, 0(t0)           # j3: tohost = 7 -> HALT(3)
      tohost:
        .word 0
    `);
    expectStream(t, [D(0), E(1, -8192), D(0x10), E(2, -8192), E(3, 7), HALT(3)]);
    expect(t.halt.reason).toBe('tohost');
    expect(t.summary.byClass.store).toEqual({ instructions: 1, tokens: 1, tokensPerInstruction: 1 });
  });

  it('system: fence (N), a non-exit ecall returns −38 in a0 (E), ebreak ends the stream with TRAP(ebreak) (v5)', () => {
    const t = trace(`
      _start:
        fence                  # j0 -> N(1)
        li a7, 1               # j1 -> E(2, 1)
        ecall                  # j2: a0 = -38 -> E(3, -38)
        ebreak                 # j3: TRAP(ebreak) instead of its tokens (no window-end J)
    `);
    expectStream(t, [N(1), E(2, 1), E(3, -38), TRAP(1)], [0, 1, 2, 3]);
    expect(t.halt.reason).toBe('ebreak');
    expect(t.halt.trap).toBe('ebreak');
    expect(t.halt.instret).toBe(4);
    expect(t.summary.instructions).toBe(4);
    expect(t.summary.byClass.system).toEqual({ instructions: 3, tokens: 3, tokensPerInstruction: 1 });
  });

  it('instruction limit: the stream ends after the last executed instruction', () => {
    const t = trace('_start:\n li a0, 5\n li a1, 6\n li a2, 7\n', { maxInstructions: 2 });
    expectStream(t, [E(1, 5), E(2, 6)]);
    expect(t.halt.reason).toBe('limit');
  });

  it('ecall write has no token; an entry outside the 128 KiB code space is refused (a jump there traps: test/riscv-traps.test.ts)', () => {
    expectChipcError(() => trace('_start:\n li a7, 64\n li a0, 1\n li a2, 0\n ecall\n'), 'protocol.unsupported');
    expectChipcError(() => trace('_start:\n li a7, 93\n ecall\n', { origin: 0x80020000 }), 'protocol.code-range');
  });
});

// ---- Fixture programs: replay every stream independently and compare with the emulator ----

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MEM = { base: 0x80000000, size: 32 * 1024 };

interface Replayed {
  started: number[];
  /** Value committed for instruction i (unsigned), or undefined. */
  commits: Map<number, number>;
  /** v4: the carry a bn.mac (instruction i) brings back before its low word. */
  carries: Map<number, number>;
  console: number[];
  halt: number | null;
}

/**
 * Replay a token stream with the doc's "fed at position t, it …" rules: which instruction each
 * position runs and which values are committed. `wordAt(i)` is the raw word of instruction i
 * (needed only for J's "commits the link if the pending instruction is JAL/JALR").
 */
function replay(tokens: Int32Array, wordAt: (i: number) => number): Replayed {
  expect(tokens[0]).toBe(BOS);
  const first = decodeToken(tokens[1]!);
  if (first.kind !== 'J') expect.fail('prompt must be BOS, J');
  let base = 0x80000000 + 4 * first.w;
  const started = [base];
  const commits = new Map<number, number>();
  const carries = new Map<number, number>();
  let hSeen = 0; // H tokens since the current instruction started
  const out: number[] = [];
  let lo: number | null = null;
  let prev = 'J';
  let prevPrev = 'BOS';
  let lastWasTransfer = false;
  let halt: number | null = null;
  const cur = (): number => started.length - 1;
  const commit = (v: number): void => {
    if (commits.has(cur())) expect.fail(`instruction ${cur()} committed twice`);
    commits.set(cur(), v >>> 0);
  };
  for (let p = 2; p < tokens.length; p++) {
    expect(halt).toBe(null);
    const t = decodeToken(tokens[p]!);
    // After D only E/H/K; after H only N/J (after a division step's H: the next step or the result);
    // after Q only D; after K or OUT(0, ·) only J.
    const transfer = prev === 'D' && prevPrev === 'Q'; // this H brings back a partial remainder
    if (prev === 'Q' || prev === 'A') expect(t.kind).toBe('D');
    if (t.kind === 'A') expect(['E', 'N', 'J', 'OUT'].includes(prev) && (wordAt(cur()) & 0x7f) === 0x23).toBe(true);
    // v2: a word-crossing load's first D (right after the start) is followed by a second D; a
    // word-crossing store's first H by the D of its second word.
    const isStore = (wordAt(cur()) & 0x7f) === 0x23;
    // v4: bn.mac brings back its carry (D, H; commits nothing), then its low word (D, H).
    const isBn = (wordAt(cur()) & 0x7f) === 0x0b;
    const afterStart = ['E', 'N', 'J', 'OUT'].includes(prevPrev);
    // (v7: a division step's D is followed by the next Q when the divisor is short)
    if (prev === 'D') expect(afterStart && (wordAt(cur()) & 0x7f) === 0x03 ? ['E', 'H', 'K', 'D'] : prevPrev === 'Q' ? ['H', 'Q'] : ['E', 'H', 'K']).toContain(t.kind);
    if (prev === 'H' && !(prevPrev === 'D')) expect.fail('H must follow D');
    if (prev === 'H') expect(lastWasTransfer ? ['Q', 'E', 'D', 'K', 'N', 'J'] : isStore ? ['N', 'J', 'D'] : isBn && hSeen === 1 ? ['D'] : ['N', 'J']).toContain(t.kind);
    if (t.kind === 'Q') expect(prev === 'H' ? lastWasTransfer : prev === 'D' ? prevPrev === 'Q' : prev === 'J' || prev === 'E' || prev === 'N' || prev === 'OUT').toBe(true);
    if (prev === 'K' || prev === 'OUT0') expect(t.kind).toBe('J');
    const wide = lo;
    lo = null;
    const instrBefore = started.length - 1;
    switch (t.kind) {
      case 'E': commit(wide === null ? t.v : docWide(t.v, wide)); started.push(base + 4 * t.j); break;
      case 'K': commit(wide === null ? t.v : docWide(t.v, wide)); break;
      case 'D': lo = t.v; break;
      case 'H': {
        expect(wide).not.toBe(null);
        // A sub-word store's H writes memory; a division step's H a partial remainder: neither commits.
        hSeen++;
        if (isBn && hSeen === 1) carries.set(cur(), (t.v * 65536 + wide!) >>> 0);
        else if (isBn) { if (((wordAt(cur()) >>> 7) & 31) !== 0) commit(t.v * 65536 + wide!); }
        else if (!transfer && (wordAt(cur()) & 0x7f) !== 0x23) commit(t.v * 65536 + wide!);
        break;
      }
      case 'Q': case 'A': break;
      case 'N': started.push(base + 4 * t.j); break;
      case 'J': {
        const op = wordAt(cur()) & 0x7f;
        if ((op === 0x6f || op === 0x67) && ((wordAt(cur()) >>> 7) & 31) !== 0) commit(started[cur()]! + 4);
        base = 0x80000000 + 4 * t.w;
        started.push(base);
        break;
      }
      case 'OUT': out.push(t.b); if (t.j !== 0) started.push(base + 4 * t.j); break;
      case 'HALT': halt = t.code; break;
      case 'BOS': expect.fail('BOS inside the stream');
    }
    lastWasTransfer = t.kind === 'H' && transfer;
    if (started.length - 1 !== instrBefore) hSeen = 0;
    prevPrev = prev;
    prev = t.kind === 'OUT' && t.j === 0 ? 'OUT0' : t.kind;
  }
  return { started, commits, carries, console: out, halt };
}

function fixtureElfs(dir: string, names?: string[]): string[] {
  return fs.readdirSync(path.join(root, dir))
    .filter((f) => f.endsWith('.elf') && !f.endsWith('.linux.elf') && (names === undefined || names.some((n) => f.startsWith(`${n}.`))))
    .sort();
}

describe('golden token trace: fixture programs replayed against the emulator', () => {
  // bench, crc32 and sort run 57k–1.1M instructions; they are covered by bench/protocol-cost.ts.
  const files = [
    ...fixtureElfs('fixtures/isa').map((f) => `fixtures/isa/${f}`),
    ...fixtureElfs('fixtures/firmware', ['hello', 'calc', 'fixedpoint']).map((f) => `fixtures/firmware/${f}`),
  ];
  it('there are fixtures', () => expect(files.length).toBeGreaterThanOrEqual(17));

  for (const file of files) {
    it(file, () => {
      const elf = fs.readFileSync(path.join(root, file));
      const t = goldenTokens(elf, { mem: MEM });
      const events: TraceEvent[] = [];
      const carryAfter: number[] = [];
      const cpu = cpuForProgram(loadElf(elf, MEM));
      const res = cpu.run({ trace: (e) => { events.push(e); carryAfter.push((e.word & 0x7f) === 0x0b ? cpu.bnCarry[e.word >>> 25]! : -1); } });
      expect(['exit', 'tohost']).toContain(res.reason);

      const r = replay(t.tokens, (i) => events[i]!.word);
      // Every executed instruction is started at its pc, in order; nothing else is started.
      expect(r.started).toEqual(events.map((e) => e.pc));
      expect([...t.instrPc]).toEqual(events.map((e) => e.pc));
      // Committed values are exactly the emulator's register writes.
      for (let i = 0; i < events.length; i++) {
        const e = events[i]!;
        if (e.rd === null) {
          if (r.commits.has(i)) expect.fail(`${file}: instruction ${i} (${e.disasm}) committed a value but writes no register`);
        } else if (r.commits.get(i) !== e.rdValue) {
          expect.fail(`${file}: instruction ${i} (${e.disasm}) committed ${r.commits.get(i)}, emulator wrote ${e.rdValue}`);
        }
      }
      // v4: each bn.mac brings back the carry the emulator's unit holds after it; nothing else does.
      for (let i = 0; i < events.length; i++) {
        if ((events[i]!.word & 0x7f) === 0x0b) expect(r.carries.get(i), `${file}: carry of instruction ${i}`).toBe(carryAfter[i]);
        else expect(r.carries.has(i)).toBe(false);
      }
      expect(r.console).toEqual([...res.consoleBytes]);
      expect(r.halt).toBe(res.exitCode! >= 0 && res.exitCode! <= 255 ? res.exitCode : 255);
      // Ownership and the summary agree with the stream.
      const per = new Map<string, number>();
      for (let p = PROMPT_LENGTH; p < t.tokens.length; p++) {
        const cls = INSTR_CLASSES[t.instrClass[t.tokenInstr[p]!]!]!;
        per.set(cls, (per.get(cls) ?? 0) + 1);
        expect(t.tokenPc[p]).toBe(events[t.tokenInstr[p]!]!.pc);
      }
      expect(t.summary.instructions).toBe(events.length);
      expect(t.summary.tokens).toBe(t.tokens.length - PROMPT_LENGTH);
      for (const c of INSTR_CLASSES) expect(t.summary.byClass[c].tokens).toBe(per.get(c) ?? 0);
    });
  }
});
