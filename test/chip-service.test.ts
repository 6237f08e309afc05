/**
 * Services on the chip (protocol v3 re-entry, src/chip/service.ts): the accum service
 * (firmware/services/accum.c) called several times in the golden emulator and through the
 * compiled weights, every generated token equal to the golden stream; the request prompt's form
 * and errors; writing data-RAM rows into a live session leaves every other head bit-identical; a
 * call that traps stops at its TRAP (v5), and a fed TRAP re-arms the loader like a HALT.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ChipService, ServiceEmulator, requestPrompt } from '../src/chip/service.ts';
import { programOf, type ChipProgram } from '../src/chip/run.ts';
import { chipIr } from '../src/chip/build.ts';
import type { ChipModel } from '../src/chip/loaded.ts';
import { sharedChip } from './helpers/shared-chips.ts';
import { BOS_ID, decodeToken, encodeToken } from '../riscv/protocol.ts';
import { ChipcError } from '../src/util/errors.ts';
import { assembleElf, encode } from '../riscv/asm.ts';
import { goldenTokens } from '../riscv/golden-trace.ts';

const ELF = fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'firmware', 'accum.elf'));
const MEM = 32 * 1024;

/** The calls: [op, value]; the expected outputs are derived here from a running uint32 total. */
const CALLS: [number, number][] = [[1, 5], [1, 1000], [2, 0], [1, 0xffffffff], [9, 3], [1, 70000], [2, 0]];

function expectedOf(calls: [number, number][]): { exit: number; out: string }[] {
  let total = 0;
  return calls.map(([op, v]) => {
    if (op === 1) {
      const after = (total + v) % 2 ** 32;
      const wrapped = total + v >= 2 ** 32;
      total = after;
      return { exit: wrapped ? 1 : 0, out: `${after}\n` };
    }
    if (op === 2) return { exit: 0, out: `${total}\n` };
    return { exit: 2, out: '' };
  });
}

/** Console bytes carried by the OUT tokens of a generated stream. */
function consoleOf(tokens: readonly number[]): string {
  const bytes: number[] = [];
  for (const t of tokens) {
    const d = decodeToken(t);
    if (d.kind === 'OUT') bytes.push(d.b);
  }
  return Buffer.from(bytes).toString('latin1');
}

describe('ServiceEmulator', () => {
  it('carries memory and registers between calls and answers each request', () => {
    const emu = ServiceEmulator.load(ELF, MEM);
    const area = emu.symbol('__service_area');
    const want = expectedOf(CALLS);
    CALLS.forEach(([op, v], i) => {
      const first = emu.firstToken;
      const c = emu.call([[area, op], [area + 4, v]], { trace: i % 2 === 0 });
      expect(c.exitCode).toBe(want[i]!.exit);
      expect(Buffer.from(c.console).toString('latin1')).toBe(want[i]!.out);
      // The prompt: BOS (first call) or the previous call's HALT, 3 tokens per word, J(entry).
      expect(c.prompt.length).toBe(2 + 3 * 2);
      expect(c.prompt[0]).toBe(i === 0 ? BOS_ID : encodeToken({ kind: 'HALT', code: want[i - 1]!.exit }));
      expect(first).toBe(c.prompt[0]);
      if (c.trace) {
        const gen = [...c.trace.tokens.slice(c.prompt.length)];
        expect(gen.at(-1)).toBe(encodeToken({ kind: 'HALT', code: want[i]!.exit }));
        expect(consoleOf(gen)).toBe(want[i]!.out);
      }
    });
    expect(emu.callCount).toBe(CALLS.length);
  });

  it('refuses a missing symbol and a call that does not halt', () => {
    const emu = ServiceEmulator.load(ELF, MEM);
    expect(() => emu.symbol('no_such_symbol')).toThrow(/no symbol "no_such_symbol"/);
    const area = emu.symbol('__service_area');
    expect(() => emu.call([[area, 1], [area + 4, 1]], { maxInstructions: 5 })).toThrow(ChipcError);
  });
});

describe('requestPrompt', () => {
  const entry = 0x80000000;
  it('encodes each word as E(p) D(lo) H(hi) and ends with J(entry)', () => {
    const p = requestPrompt(BOS_ID, [[0x80000000 + 4 * 0x1234, 0xdeadbeef]], entry, MEM);
    expect(p.map((t) => decodeToken(t))).toEqual([
      { kind: 'BOS' },
      { kind: 'E', j: 0x1234 >> 14, v: 0x1234 },
      { kind: 'D', v: 0xbeef },
      { kind: 'H', v: 0xdead },
      { kind: 'J', w: 0 },
    ]);
  });
  it('refuses misaligned, out-of-RAM and non-word writes', () => {
    expect(() => requestPrompt(BOS_ID, [[0x80000002, 1]], entry, MEM)).toThrow(/4-aligned address/);
    expect(() => requestPrompt(BOS_ID, [[0x80000000 + MEM, 1]], entry, MEM)).toThrow(/data RAM/);
    expect(() => requestPrompt(BOS_ID, [[0x7ffffffc, 1]], entry, MEM)).toThrow(/data RAM/);
    expect(() => requestPrompt(BOS_ID, [[0x80000000, 2 ** 32]], entry, MEM)).toThrow(/unsigned 32-bit/);
    expect(() => requestPrompt(BOS_ID, [[0x80000000, -1]], entry, MEM)).toThrow(/unsigned 32-bit/);
  });
});

describe('a service through the compiled weights (chip-test)', () => {
  // The generic chip with 4 KiB of code and 32 KiB of data (the test run's shared chip, from its
  // chip cache); the IR engine runs its circuit.
  const SHAPE = { codeBytes: 4096, memBytes: MEM };
  let res: ChipModel;
  let prog: ChipProgram;
  const irEngine = (p: ChipProgram) => new ChipService(null, p, { engine: 'ir', ir: chipIr(p.chip) });
  beforeAll(async () => {
    prog = programOf(ELF, SHAPE);
    res = await sharedChip({ target: 'chip-test', ...SHAPE });
  }, 120_000);

  it('every call generates the golden stream, re-entering after each HALT', () => {
    const emu = ServiceEmulator.load(ELF, MEM, prog.codeBytes);
    const area = emu.symbol('__service_area');
    const chip = new ChipService(res, prog);
    const want = expectedOf(CALLS);
    CALLS.forEach(([op, v], i) => {
      const c = emu.call([[area, op], [area + 4, v]], { trace: true });
      const r = chip.call(c.prompt, { golden: c.trace!.tokens });
      expect(r.divergence).toBeNull();
      expect(r.generated).toEqual([...c.trace!.tokens.slice(c.prompt.length)]);
      expect(r.exitCode).toBe(want[i]!.exit);
      expect(consoleOf(r.generated)).toBe(want[i]!.out);
    });
  }, 300_000);

  it('bf16 profile: the same streams through the weights', () => {
    const emu = ServiceEmulator.load(ELF, MEM, prog.codeBytes);
    const area = emu.symbol('__service_area');
    const chip = new ChipService(res, prog, { profile: 'bf16' });
    for (const [op, v] of CALLS.slice(0, 3)) {
      const c = emu.call([[area, op], [area + 4, v]], { trace: true });
      expect(chip.call(c.prompt, { golden: c.trace!.tokens }).divergence).toBeNull();
    }
  }, 120_000);

  it('the IR engine generates the same streams', () => {
    const emu = ServiceEmulator.load(ELF, MEM, prog.codeBytes);
    const area = emu.symbol('__service_area');
    const chip = irEngine(prog);
    for (const [op, v] of CALLS) {
      const c = emu.call([[area, op], [area + 4, v]], { trace: true });
      expect(chip.call(c.prompt, { golden: c.trace!.tokens }).divergence).toBeNull();
    }
  }, 120_000);

  it('a call that traps stops at TRAP (protocol v5); a fed TRAP re-arms the loader for the next call', () => {
    // Same chip shape as the accum service (one generic chip): ebreak traps with cause 1.
    const src = (stop: string) => `
      _start:
        li a7, 93
        li a0, 9
        ${stop}
        ecall
    `;
    const elf = assembleElf(src('ebreak')).elf;
    const trapProg = programOf(elf, { memBytes: MEM, codeBytes: prog.codeBytes });
    expect(trapProg.chip).toEqual(prog.chip);
    const g = goldenTokens(elf, { mem: { size: MEM }, codeBytes: trapProg.codeBytes });
    expect(g.halt.reason).not.toBe('exit');
    const trapTok = encodeToken({ kind: 'TRAP', cause: 1 });
    expect(g.tokens[g.tokens.length - 1]).toBe(trapTok);
    const chip = irEngine(trapProg);
    const r = chip.call(requestPrompt(BOS_ID, [], trapProg.entry, MEM), { golden: g.tokens });
    expect(r.divergence).toBeNull();
    expect(r.trap).toBe(1);
    expect(r.exitCode).toBeNull();
    expect(r.generated).toEqual([...g.tokens.slice(2)]);
    // Re-entry after the TRAP: the loader replaces the ebreak with a nop; the program then exits with 9,
    // the golden stream of the patched program.
    const patched = assembleElf(src('nop')).elf;
    const asm = assembleElf(src('ebreak')).program;
    const ebreakAt = asm.origin + Buffer.from(asm.bytes).indexOf(Buffer.from([0x73, 0x00, 0x10, 0x00])); // the ebreak word 0x00100073
    expect(ebreakAt).toBe(asm.labels.get('_start')! + 8); // after li a7, li a0 (one word each)
    const g2 = goldenTokens(patched, { mem: { size: MEM }, codeBytes: trapProg.codeBytes });
    expect(g2.halt.exitCode).toBe(9);
    const r2 = chip.call(requestPrompt(trapTok, [[ebreakAt, encode('addi', [0, 0, 0])]], trapProg.entry, MEM));
    expect(r2.divergence).toBeNull();
    expect(r2.trap).toBeNull();
    expect(r2.exitCode).toBe(9);
    expect(r2.generated).toEqual([...g2.tokens.slice(2)]);
  }, 120_000);

  it('a first call that does not start with BOS is refused', () => {
    const chip = new ChipService(res, prog);
    expect(() => chip.call([encodeToken({ kind: 'HALT', code: 0 })])).toThrow(/must start with BOS/);
  });

  it('writing data-RAM rows leaves every other row and every other head bit-identical', () => {
    const emu = ServiceEmulator.load(ELF, MEM, prog.codeBytes);
    const area = emu.symbol('__service_area');
    const chip = new ChipService(res, prog);
    const c = emu.call([[area, 1], [area + 4, 77]], { trace: true });
    expect(chip.call(c.prompt, { golden: c.trace!.tokens }).divergence).toBeNull();
    const ex = chip.executor;
    const snapshot = () => {
      const out: Uint32Array[] = [];
      for (let l = 0; l < res.weights.config.numLayers; l++) {
        if (res.weights.config.layerTypes[l] !== 'linear_attention') continue;
        for (let h = 0; h < res.weights.config.linearNumValueHeads; h++) out.push(new Uint32Array(ex.gdnState(l, h).slice().buffer));
      }
      return out;
    };
    const before = snapshot();
    const memBefore = chip.captureMemory();
    const row = (area - 0x80000000) / 4 + 40; // a row past the accum state
    const bits = Array.from({ length: 32 }, (_, k) => (0x5a5a1234 >>> k) & 1);
    chip.writeMemory(new Map([[row, bits]]));
    const memAfter = chip.captureMemory();
    expect(memAfter.get(row)).toEqual(bits);
    memAfter.delete(row);
    expect(memAfter).toEqual(memBefore);
    const after = snapshot();
    const mem = res.rams.find((r) => r.name === 'mem')!;
    let changedHeads = 0;
    let k = 0;
    for (let l = 0; l < res.weights.config.numLayers; l++) {
      if (res.weights.config.layerTypes[l] !== 'linear_attention') continue;
      for (let h = 0; h < res.weights.config.linearNumValueHeads; h++, k++) {
        const same = before[k]!.every((x, i) => x === after[k]![i]);
        if (!same) {
          expect(l).toBe(mem.layer); // only the data RAM's layer may change
          changedHeads++;
        }
      }
    }
    expect(changedHeads).toBeGreaterThan(0);
    // And the service reads the written word: op 2 prints the total, unchanged by the row write.
    const c2 = emu.call([[area, 2], [area + 4, 0]], { trace: true });
    const r2 = chip.call(c2.prompt, { golden: c2.trace!.tokens });
    expect(r2.divergence).toBeNull();
    expect(consoleOf(r2.generated)).toBe('77\n');
  }, 120_000);
});
