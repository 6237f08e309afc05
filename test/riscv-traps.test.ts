/**
 * Token protocol v5: TRAP tokens (docs/token-protocol.md, "v5: traps"). A program the golden
 * emulator stops on an illegal instruction, an ebreak or a fault ends its golden stream with
 * TRAP(cause), so the chip can never "pass" a program the emulator rejects.
 *
 * Expected ids come from a literal transcription of the alphabet table (the helpers below, as in
 * test/riscv-protocol.test.ts) and expected streams are derived by hand from the v5 rules, never
 * from the code's own output.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Cpu, Memory, assembleElf, cpuForProgram, encodeB, encodeJ, loadElf } from '../riscv/index.ts';
import {
  PROTOCOL_ALPHABET_SIZE, PROTOCOL_VERSION, TRAP_BASE, TRAP_CAUSE, TRAP_CAUSE_NAMES, TRAP_COUNT, decodeToken, encodeToken,
  formatToken, trapCauseName,
} from '../riscv/protocol.ts';
import { INSTR_CLASSES, PROMPT_LENGTH, codeEndWords, goldenTokens, type GoldenTrace, type GoldenTraceOptions } from '../riscv/golden-trace.ts';
import { expectChipcError } from './helpers/assert.ts';

// ---- The alphabet table of docs/token-protocol.md, transcribed literally ----
const E = (j: number, v: number): number => j * 16384 + (v < 0 ? v + 16384 : v);
const D = (v: number): number => 65536 + v;
const J = (w: number): number => 131072 + w;
const H = (v: number): number => 163840 + v;
const K = (v: number): number => 229376 + (v < 0 ? v + 16384 : v);
const N = (j: number): number => 245760 + j;
const BOS = 247044;
const TRAP = (cause: number): number => 248197 + cause;
const ILLEGAL = TRAP(0);
const EBREAK = TRAP(1);
const FETCH = TRAP(2);
const LOAD = TRAP(3);
const STORE = TRAP(4);
const Jpc = (pc: number): number => J((pc - 0x80000000) / 4);
const BASE = 0x80000000;

function trace(src: string, opts: GoldenTraceOptions & { origin?: number } = {}): GoldenTrace {
  const { elf } = assembleElf(src, opts.origin === undefined ? {} : { origin: opts.origin });
  return goldenTokens(elf, opts);
}

/**
 * The stream is the prompt [BOS, J(entry)] then `generated`; `owners` are the covered
 * instructions' indices per generated token, `pcs` the covered instructions' pcs, `classes` their
 * classes. Every token's pc is its instruction's pc.
 */
function expectStream(t: GoldenTrace, generated: number[], owners: number[], pcs: number[], classes?: string[]): void {
  const want = [BOS, Jpc(t.entry), ...generated];
  expect([...t.tokens].map(formatToken)).toEqual(want.map(formatToken));
  expect([...t.tokens]).toEqual(want);
  expect([...t.tokenInstr]).toEqual([-1, -1, ...owners]);
  expect([...t.instrPc]).toEqual(pcs);
  if (classes !== undefined) expect([...t.instrClass].map((c) => INSTR_CLASSES[c])).toEqual(classes);
  for (let i = PROMPT_LENGTH; i < t.tokens.length; i++) expect(t.tokenPc[i]).toBe(t.instrPc[t.tokenInstr[i]!]);
  expect(t.summary.instructions).toBe(pcs.length);
  expect(t.summary.tokens).toBe(generated.length);
  expect(t.summary.byKind.TRAP).toBe(generated.filter((id) => id >= 248197).length);
}

describe('v5 alphabet: TRAP(cause)', () => {
  it('8 ids right after A: [248,197, 248,205); the alphabet has 248,205 ids', () => {
    expect(PROTOCOL_VERSION).toBe('v9'); // v6 … v9 changed no id (docs/token-protocol.md "v6", "v7", "v8", "v9")
    expect(TRAP_BASE).toBe(248197);
    expect(TRAP_COUNT).toBe(8);
    expect(PROTOCOL_ALPHABET_SIZE).toBe(248205);
    expect(TRAP_CAUSE).toEqual({ illegal: 0, ebreak: 1, fetch: 2, load: 3, store: 4 });
    expect(TRAP_CAUSE_NAMES).toEqual(['illegal', 'ebreak', 'fetch', 'load', 'store']);
  });

  it('every cause (reserved 5…7 included) round-trips through encode / decode', () => {
    for (let cause = 0; cause < 8; cause++) {
      const id = encodeToken({ kind: 'TRAP', cause });
      expect(id).toBe(TRAP(cause));
      expect(decodeToken(id)).toEqual({ kind: 'TRAP', cause });
    }
    expect(decodeToken(248196)).toEqual({ kind: 'A', w: 1023 });
  });

  it('decodeToken refuses 248,205; encodeToken refuses cause 8, a missing cause and other fields', () => {
    expectChipcError(() => decodeToken(248205), 'protocol.id');
    expectChipcError(() => formatToken(248205), 'protocol.id');
    expectChipcError(() => encodeToken({ kind: 'TRAP', cause: 8 }), 'protocol.token');
    expectChipcError(() => encodeToken({ kind: 'TRAP' }), 'protocol.token');
    expectChipcError(() => encodeToken({ kind: 'TRAP', cause: 0, w: 0 }), 'protocol.token');
    expectChipcError(() => encodeToken({ kind: 'HALT', code: 0, cause: 0 }), 'protocol.token');
  });

  it('formatToken names the cause; reserved causes print their number', () => {
    expect([0, 1, 2, 3, 4, 5, 7].map((c) => formatToken(TRAP(c)))).toEqual([
      'TRAP(illegal)', 'TRAP(ebreak)', 'TRAP(fetch)', 'TRAP(load)', 'TRAP(store)', 'TRAP(5)', 'TRAP(7)',
    ]);
    expect(trapCauseName(3)).toBe('load');
    expect(trapCauseName(6)).toBe('reserved cause 6');
  });
});

describe('the emulator: fault kinds and the fetch limit', () => {
  const runCpu = (src: string, opts: { fetchLimit?: number | null; memSize?: number } = {}) => {
    const { elf } = assembleElf(src);
    return cpuForProgram(loadElf(elf, opts.memSize === undefined ? {} : { size: opts.memSize }),
      opts.fetchLimit === undefined ? {} : { fetchLimit: opts.fetchLimit }).run({ maxInstructions: 1000 });
  };

  it('fault is load / store / fetch; a misaligned jump or branch target is a fetch fault at the jump', () => {
    let r = runCpu('li t0, 0x1000\nlw a0, 0(t0)');
    expect([r.reason, r.fault, r.pc, r.addr]).toEqual(['fault', 'load', BASE + 8, 0x1000]);
    r = runCpu('sw a0, 0(zero)');
    expect([r.reason, r.fault, r.pc, r.addr]).toEqual(['fault', 'store', BASE, 0]);
    r = runCpu('jr zero');
    expect([r.reason, r.fault, r.pc, r.addr, r.instret]).toEqual(['fault', 'fetch', 0, 0, 1]);
    r = runCpu(`nop\n.word ${0x006000ef}`); // jal ra, +6
    expect([r.reason, r.fault, r.pc, r.addr, r.instret]).toEqual(['fault', 'fetch', BASE + 4, BASE + 10, 1]);
    r = runCpu(`.word ${0x00000363}`); // beq zero, zero, +6
    expect([r.reason, r.fault, r.pc, r.addr, r.instret]).toEqual(['fault', 'fetch', BASE, BASE + 6, 0]);
    r = runCpu('nop\nnop\nnop\nnop', { memSize: 16 });
    expect([r.reason, r.fault, r.pc, r.instret]).toEqual(['fault', 'fetch', BASE + 16, 4]);
    r = runCpu('.word 0xf14022f3');
    expect(r.reason).toBe('illegal');
    expect(r.fault).toBeUndefined();
    r = runCpu('li a7, 93\necall');
    expect(r.fault).toBeUndefined();
  });

  it('a fetch at or past base + fetchLimit faults (fetch), naming the pc and the code RAM size', () => {
    const src = 'li a0, 1\nli a0, 2\nli a0, 3\nli a7, 93\necall';
    let r = runCpu(src, { fetchLimit: 8 });
    expect([r.reason, r.fault, r.pc, r.addr, r.instret]).toEqual(['fault', 'fetch', BASE + 8, BASE + 8, 2]);
    expect(r.message).toMatch(/0x80000008.*8-byte code RAM/);
    r = runCpu(src, { fetchLimit: 20 });
    expect([r.reason, r.exitCode]).toEqual(['exit', 3]);
    r = runCpu(src, { fetchLimit: 19 });
    expect([r.reason, r.pc]).toEqual(['fault', BASE + 16]);
    r = runCpu(src, { fetchLimit: null });
    expect(r.reason).toBe('exit');
    r = runCpu(src, { fetchLimit: 0 });
    expect([r.reason, r.fault, r.pc, r.instret]).toEqual(['fault', 'fetch', BASE, 0]);
    // Loads and stores are not limited by it.
    const { elf } = assembleElf('la t0, data\nlw a0, 0(t0)\nsw a0, 4(t0)\nli a7, 93\necall\ndata: .word 9, 0');
    r = cpuForProgram(loadElf(elf), { fetchLimit: 24 }).run(); // code: 6 words; data at +24, +28
    expect([r.reason, r.exitCode]).toEqual(['exit', 9]);
  });

  it('run({ fetchLimit }) overrides the CPU option for that run; bad limits are refused', () => {
    const mem = new Memory({ size: 64 });
    mem.write32(BASE, 0x00000013); // nop
    mem.write32(BASE + 4, 0x00000013);
    const r = new Cpu(mem, { pc: BASE }).run({ fetchLimit: 4 });
    expect([r.reason, r.fault, r.pc]).toEqual(['fault', 'fetch', BASE + 4]);
    const cpu = new Cpu(mem, { pc: BASE, fetchLimit: 4 });
    expect(cpu.fetchLimit).toBe(4);
    expect(cpu.run({ fetchLimit: null, maxInstructions: 2 }).reason).toBe('limit');
    for (const bad of [-4, 1.5, Number.NaN]) {
      expectChipcError(() => new Cpu(mem, { fetchLimit: bad }), 'riscv.mem-config');
      expectChipcError(() => new Cpu(mem).run({ fetchLimit: bad }), 'riscv.mem-config');
    }
  });
});

describe('golden stream: TRAP(illegal)', () => {
  it('first instruction csrr t0, mhartid: [BOS, J(entry), TRAP(illegal)]', () => {
    const t = trace('_start:\n .word 0xf14022f3  # csrr t0, mhartid\n li a7, 93\n ecall\n');
    expectStream(t, [ILLEGAL], [0], [BASE], ['trap']);
    expect(t.halt).toMatchObject({ reason: 'illegal', pc: BASE, instret: 0, trap: 'illegal' });
    expect(t.summary.byClass.trap).toEqual({ instructions: 1, tokens: 1, tokensPerInstruction: 1 });
  });

  it('a compressed instruction (low bits 01) after a retired one: its tokens, then TRAP at the next pc', () => {
    const t = trace('_start:\n li a0, 5\n .half 0x4515\n .half 0\n');
    expectStream(t, [E(1, 5), ILLEGAL], [0, 1], [BASE, BASE + 4], ['alu-imm', 'trap']);
    expect(t.halt.reason).toBe('illegal');
    expect(t.halt.trap).toBe('illegal');
  });

  it('after a window end (J) and after a jump (J to the illegal word)', () => {
    let t = trace('_start:\n nop\n nop\n nop\n nop\n .word 0\n');
    expectStream(t, [N(1), N(2), N(3), Jpc(BASE + 16), ILLEGAL], [0, 1, 2, 3, 4], [BASE, BASE + 4, BASE + 8, BASE + 12, BASE + 16]);
    t = trace('_start:\n j bad\n nop\n bad:\n .word 0xffffffff\n');
    expectStream(t, [Jpc(BASE + 8), ILLEGAL], [0, 1], [BASE, BASE + 8], ['jal/jalr', 'trap']);
  });
});

describe('golden stream: TRAP(ebreak)', () => {
  it('ebreak after some instructions: TRAP(ebreak) in place of its tokens, attributed to the ebreak', () => {
    const t = trace('_start:\n li a0, 1\n li a1, 2\n ebreak\n li a7, 93\n ecall\n');
    expectStream(t, [E(1, 1), E(2, 2), EBREAK], [0, 1, 2], [BASE, BASE + 4, BASE + 8], ['alu-imm', 'alu-imm', 'system']);
    expect(t.halt).toMatchObject({ reason: 'ebreak', pc: BASE + 8, instret: 3, trap: 'ebreak' });
  });

  it('ebreak as the first instruction and at the window end (no J after it)', () => {
    let t = trace('_start:\n ebreak\n');
    expectStream(t, [EBREAK], [0], [BASE], ['system']);
    t = trace('_start:\n nop\n nop\n nop\n ebreak\n');
    expectStream(t, [N(1), N(2), N(3), EBREAK], [0, 1, 2, 3], [BASE, BASE + 4, BASE + 8, BASE + 12]);
  });
});

describe('golden stream: TRAP(load) / TRAP(store)', () => {
  it('a load from an unmapped address (0x0)', () => {
    const t = trace('_start:\n li a1, 3\n lw a0, 0(zero)\n li a7, 93\n ecall\n');
    expectStream(t, [E(1, 3), LOAD], [0, 1], [BASE, BASE + 4], ['alu-imm', 'trap']);
    expect(t.halt).toMatchObject({ reason: 'fault', pc: BASE + 4, instret: 1, trap: 'load' });
  });

  it('a load just past the end of RAM, at the window end', () => {
    // 32 KiB RAM: 0x80008000 is the first byte past it. lui a0, 0x80008 -> D(0x8000), E(1, -8192) (a pointer, v6).
    const t = trace('_start:\n lui a0, 0x80008\n nop\n nop\n lb a1, 0(a0)\n', { mem: { size: 32 * 1024 } });
    expectStream(t, [D(0x8000), E(1, -8192), N(2), N(3), LOAD], [0, 0, 1, 2, 3], [BASE, BASE + 4, BASE + 8, BASE + 12]);
  });

  it('a store to an unmapped address', () => {
    const t = trace('_start:\n li a0, 65\n lui t0, 0x20000\n sw a0, 0(t0)\n');
    // 0x20000000 = 2^29 does not fit 30 bits signed -> D(0), H(0x2000), N(2).
    expectStream(t, [E(1, 65), D(0), H(0x2000), N(2), STORE], [0, 1, 1, 1, 2], [BASE, BASE + 4, BASE + 8], ['alu-imm', 'lui/auipc', 'trap']);
    expect(t.halt).toMatchObject({ reason: 'fault', pc: BASE + 8, trap: 'store' });
  });

  it('a store to the console is no fault; a load from it reads 0', () => {
    const t = trace('_start:\n lui t0, 0x10000\n li a0, 0x41\n sb a0, 0(t0)\n lw a1, 0(t0)\n sw a0, 4(t0)\n');
    // lui t0, 0x10000 -> D(0), E(1, 0x1000); li -> E(2, 0x41); sb -> OUT(3, 0x41); lw -> K(0), J; sw to 0x10000004 faults.
    const OUT = (j: number, b: number): number => 245764 + 256 * j + b;
    expectStream(t, [D(0), E(1, 0x1000), E(2, 0x41), OUT(3, 0x41), K(0), Jpc(BASE + 16), STORE], [0, 0, 1, 2, 3, 3, 4],
      [BASE, BASE + 4, BASE + 8, BASE + 12, BASE + 16]);
  });
});

describe('golden stream: TRAP(fetch)', () => {
  it('jal to a misaligned target (imm bit 1 set) traps at the jal, which did not retire', () => {
    expect(encodeJ(0x6f, 1, 6)).toBe(0x006000ef);
    const t = trace(`_start:\n li a0, 7\n .word ${0x006000ef}\n nop\n nop\n`);
    expectStream(t, [E(1, 7), FETCH], [0, 1], [BASE, BASE + 4], ['alu-imm', 'trap']);
    expect(t.halt).toMatchObject({ reason: 'fault', pc: BASE + 4, instret: 1, trap: 'fetch' });
  });

  it('a taken branch to a misaligned target traps at the branch; a not-taken one runs on', () => {
    expect(encodeB(0x63, 0, 0, 0, 6)).toBe(0x00000363);
    expect(encodeB(0x63, 1, 0, 0, 6)).toBe(0x00001363);
    const t = trace(`_start:\n .word ${0x00001363}  # bne zero, zero, +6\n .word ${0x00000363}  # beq zero, zero, +6\n`);
    expectStream(t, [N(1), FETCH], [0, 1], [BASE, BASE + 4], ['branch', 'trap']);
  });

  it('jalr to 0 (outside RAM): TRAP(fetch) replaces its J, attributed to the jalr', () => {
    const t = trace('_start:\n li a0, 5\n jr zero\n');
    expectStream(t, [E(1, 5), FETCH], [0, 1], [BASE, BASE + 4], ['alu-imm', 'jal/jalr']);
    expect(t.halt).toMatchObject({ reason: 'fault', pc: 0, instret: 2, trap: 'fetch' });
  });

  it('a jump beyond the 128 KiB J range (inside RAM) and a jump or taken branch beyond the code RAM', () => {
    let t = trace('_start:\n lui t0, 0x80020\n jr t0\n');
    // lui -> D(0), E(1, 0x2002 - 0x4000) (a pointer, v6); jr -> TRAP(fetch).
    expectStream(t, [D(0), E(1, 0x2002 - 0x4000), FETCH], [0, 0, 1], [BASE, BASE + 4], ['lui/auipc', 'jal/jalr']);
    expect(t.halt).toMatchObject({ reason: 'fault', pc: 0x80020000, trap: 'fetch' });
    const src = '_start:\n li a0, 1\n j far\n nop\n nop\nfar:\n li a7, 93\n ecall\n';
    t = trace(src, { codeBytes: 16 });
    expectStream(t, [E(1, 1), FETCH], [0, 1], [BASE, BASE + 4], ['alu-imm', 'jal/jalr']);
    // The same program with enough code RAM exits normally.
    t = trace(src, { codeBytes: 24 });
    expectStream(t, [E(1, 1), Jpc(BASE + 16), E(1, 93), 246788 + 1], [0, 1, 2, 3], [BASE, BASE + 4, BASE + 16, BASE + 20]);
    t = trace('_start:\n beqz zero, far\n nop\nfar:\n nop\n', { codeBytes: 8 });
    expectStream(t, [FETCH], [0], [BASE], ['branch']);
  });

  it('sequential fall-off past codeBytes, inside a window: the last tokens, then TRAP at the unfetchable pc', () => {
    const t = trace('_start:\n li a0, 1\n li a1, 2\n li a2, 3\n', { codeBytes: 8 });
    expectStream(t, [E(1, 1), E(2, 2), FETCH], [0, 1, 2], [BASE, BASE + 4, BASE + 8], ['alu-imm', 'alu-imm', 'trap']);
    expect(t.halt).toMatchObject({ reason: 'fault', pc: BASE + 8, instret: 2, trap: 'fetch' });
    expect(t.halt.message).toMatch(/0x80000008.*8-byte code RAM/);
  });

  it('sequential fall-off past codeBytes at the window end: K, J(PC+4), then TRAP at PC+4', () => {
    const t = trace('_start:\n li a0, 1\n li a1, 2\n li a2, 3\n li a3, 4\n li a4, 5\n', { codeBytes: 16 });
    expectStream(t, [E(1, 1), E(2, 2), E(3, 3), K(4), Jpc(BASE + 16), FETCH], [0, 1, 2, 3, 3, 4],
      [BASE, BASE + 4, BASE + 8, BASE + 12, BASE + 16]);
  });

  it('sequential fall-off past the end of RAM (no codeBytes)', () => {
    const t = trace('_start:\n nop\n nop\n nop\n nop\n', { mem: { size: 16 } });
    expectStream(t, [N(1), N(2), N(3), Jpc(BASE + 16), FETCH], [0, 1, 2, 3, 4], [BASE, BASE + 4, BASE + 8, BASE + 12, BASE + 16]);
    expect(t.halt.message).toMatch(/outside RAM/);
  });

  it('fall-off past the 128 KiB J range: inside a window TRAP at 0x80020000; at the window end TRAP replaces J(PC+4)', () => {
    // far = 0x8001fff8: J(far); li a0 at j0 -> E(1, 1); li a1 at j1 (0x8001fffc) -> E(2, 2); fetch at 0x80020000 traps.
    let t = trace(`_start:\n j far\n .zero ${0x1fff8 - 4}\nfar:\n li a0, 1\n li a1, 2\n`);
    expectStream(t, [Jpc(0x8001fff8), E(1, 1), E(2, 2), FETCH], [0, 1, 2, 3], [BASE, 0x8001fff8, 0x8001fffc, 0x80020000],
      ['jal/jalr', 'alu-imm', 'alu-imm', 'trap']);
    expect(t.halt).toMatchObject({ reason: 'fault', pc: 0x80020000, trap: 'fetch' });
    // far = 0x8001fff0: li a3 at j3 (0x8001fffc) -> K(4), then TRAP instead of J(0x80020000), attributed to it.
    t = trace(`_start:\n j far\n .zero ${0x1fff0 - 4}\nfar:\n li a0, 1\n li a1, 2\n li a2, 3\n li a3, 4\n`);
    expectStream(t, [Jpc(0x8001fff0), E(1, 1), E(2, 2), E(3, 3), K(4), FETCH], [0, 1, 2, 3, 4, 4],
      [BASE, 0x8001fff0, 0x8001fff4, 0x8001fff8, 0x8001fffc], ['jal/jalr', 'alu-imm', 'alu-imm', 'alu-imm', 'alu-imm']);
    expect(t.halt).toMatchObject({ reason: 'fault', pc: 0x80020000, instret: 5, trap: 'fetch' });
  });

  it('a fetch fault at the entry: the prompt, then TRAP(fetch)', () => {
    const t = trace('nop\nnop\n_start:\n li a7, 93\n ecall\n', { codeBytes: 8 });
    expect(t.entry).toBe(BASE + 8);
    expectStream(t, [FETCH], [0], [BASE + 8], ['trap']);
    expect(t.halt).toMatchObject({ reason: 'fault', pc: BASE + 8, instret: 0, trap: 'fetch' });
  });

  it('the instruction limit gives a prefix of the full stream: a jump to an unfetchable pc already traps', () => {
    let t = trace('_start:\n li a0, 5\n jr zero\n', { maxInstructions: 2 });
    expectStream(t, [E(1, 5), FETCH], [0, 1], [BASE, BASE + 4]);
    expect(t.halt.reason).toBe('limit');
    expect(t.halt.trap).toBe('fetch');
    // Sequential fall-off: the limit stops before the fetch, so no TRAP yet.
    t = trace('_start:\n li a0, 1\n li a1, 2\n li a2, 3\n', { codeBytes: 8, maxInstructions: 2 });
    expectStream(t, [E(1, 1), E(2, 2)], [0, 1], [BASE, BASE + 4]);
    expect(t.halt.reason).toBe('limit');
    expect(t.halt.trap).toBeUndefined();
  });

  it('codeBytes must be a positive multiple of 4', () => {
    for (const bad of [0, 2, 6, 1.5, -4]) expectChipcError(() => trace('_start:\n ebreak\n', { codeBytes: bad }), 'protocol.code-bytes');
  });
});

describe('programs that exit normally are unchanged', () => {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  for (const file of ['fixtures/firmware/hello.elf', 'fixtures/isa/div.exit.elf', 'fixtures/isa/fence.elf']) {
    it(`${file}: the same stream with the chip's code RAM (codeBytes) as without, no TRAP`, () => {
      const elf = fs.readFileSync(path.join(root, file));
      const mem = { size: 32 * 1024 };
      const plain = goldenTokens(elf, { mem });
      let words = 64;
      while (words < codeEndWords(loadElf(elf, mem))) words *= 2;
      const withCode = goldenTokens(elf, { mem, codeBytes: 4 * words });
      expect([...withCode.tokens]).toEqual([...plain.tokens]);
      expect(['exit', 'tohost']).toContain(plain.halt.reason);
      expect(plain.halt.trap).toBeUndefined();
      expect(plain.summary.byKind.TRAP).toBe(0);
      expect(plain.summary.byClass.trap.instructions).toBe(0);
    });
  }
});
