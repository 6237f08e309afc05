/**
 * Tests of the ELF32 loader (riscv/elf.ts) and writer (riscv/elf-write.ts): round trip, bss
 * zero-fill, symbols, one test per malformation (each a ChipcError with its code), and a
 * fast-check fuzz: mutated valid ELFs and random bytes load or give a ChipcError, nothing else.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { loadElf, parseElf, writeElf, assembleElf, cpuForProgram } from '../riscv/index.ts';
import { ChipcError } from '../src/util/errors.ts';

const BASE = 0x80000000;

function sample(): Uint8Array {
  return writeElf({
    entry: BASE,
    segments: [
      { vaddr: BASE, data: Uint8Array.from([0x13, 0, 0, 0, 0x73, 0, 0x10, 0]) },
      { vaddr: BASE + 0x2000, data: Uint8Array.from([1, 2, 3]), memsz: 16, flags: 6 },
    ],
    symbols: [{ name: 'tohost', value: BASE + 0x2000, size: 8 }, { name: '_start', value: BASE }],
  });
}

function code(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (e instanceof ChipcError) return e.code;
    throw e;
  }
  return 'ok';
}

function patch(bytes: Uint8Array, edit: (dv: DataView) => void): Uint8Array {
  const b = bytes.slice();
  edit(new DataView(b.buffer));
  return b;
}

describe('ELF loader', () => {
  it('round-trips the writer: segments, bss zero-fill, entry, symbols, tohost', () => {
    const p = loadElf(sample());
    expect(p.entry).toBe(BASE);
    expect(p.tohost).toBe(BASE + 0x2000);
    expect(p.symbols.get('_start')).toBe(BASE);
    expect(p.image.segments.map((s) => [s.vaddr, s.filesz, s.memsz, s.flags])).toEqual([[BASE, 8, 8, 7], [BASE + 0x2000, 3, 16, 6]]);
    expect([...p.memory.readBytes(BASE + 0x2000, 17)]).toEqual([1, 2, 3, ...new Array(14).fill(0)]);
    expect(p.memory.read32(BASE)).toBe(0x13);
    const tohostSym = p.image.symbols.find((s) => s.name === 'tohost')!;
    expect([tohostSym.size, tohostSym.bind, tohostSym.shndx]).toEqual([8, 1, 0xfff1]);
    const r = cpuForProgram(p).run();
    expect([r.reason, r.instret]).toEqual(['ebreak', 2]);
  });

  it('names each malformation with its own code', () => {
    const good = sample();
    const cases: [string, Uint8Array, string][] = [
      ['truncated header', good.subarray(0, 40), 'elf.truncated'],
      ['bad magic', patch(good, (d) => d.setUint8(1, 0x46)), 'elf.magic'],
      ['ELF64', patch(good, (d) => d.setUint8(4, 2)), 'elf.class'],
      ['big-endian', patch(good, (d) => d.setUint8(5, 2)), 'elf.endian'],
      ['x86 machine', patch(good, (d) => d.setUint16(18, 3, true)), 'elf.machine'],
      ['shared object', patch(good, (d) => d.setUint16(16, 3, true)), 'elf.type'],
      ['phentsize', patch(good, (d) => d.setUint16(42, 56, true)), 'elf.phdr'],
      ['no phdrs', patch(good, (d) => d.setUint16(44, 0, true)), 'elf.phdr'],
      ['phdr table past end', patch(good, (d) => d.setUint32(28, good.length - 8, true)), 'elf.truncated'],
      ['segment past end of file', patch(good, (d) => d.setUint32(52 + 4, good.length - 2, true)), 'elf.truncated'],
      ['filesz > memsz', patch(good, (d) => d.setUint32(52 + 20, 4, true)), 'elf.segment'],
      ['overlapping segments', patch(good, (d) => d.setUint32(52 + 32 + 8, BASE + 4, true)), 'elf.overlap'],
      ['entry outside segments', patch(good, (d) => d.setUint32(24, BASE + 0x1000, true)), 'elf.entry'],
      ['misaligned entry', patch(good, (d) => d.setUint32(24, BASE + 2, true)), 'elf.entry'],
      ['segment outside RAM', patch(good, (d) => { d.setUint32(52 + 32 + 8, 0x1000, true); }), 'elf.range'],
      ['shentsize', patch(good, (d) => d.setUint16(46, 64, true)), 'elf.shdr'],
      ['section table past end', patch(good, (d) => d.setUint32(32, good.length - 10, true)), 'elf.truncated'],
    ];
    for (const [what, bytes, want] of cases) expect([what, code(() => loadElf(bytes))]).toEqual([what, want]);
    const msg = (() => { try { loadElf(cases[4][1]); } catch (e) { return (e as Error).message; } return ''; })();
    expect(msg).toMatch(/e_machine is 3, expected 243/);
  });

  it('rejects a segment outside a smaller RAM and accepts it with a larger one', () => {
    const { elf } = assembleElf('ebreak', { bss: 0x2000 });
    expect(code(() => loadElf(elf, { size: 4096 }))).toBe('elf.range');
    expect(code(() => loadElf(elf, { size: 0x4000 }))).toBe('ok');
  });

  it('fuzz: mutated ELFs and random bytes give an image or a ChipcError, never another exception', () => {
    const good = sample();
    const mutated = fc.array(fc.tuple(fc.nat(good.length - 1), fc.nat(255)), { minLength: 1, maxLength: 8 }).map((muts) => {
      const b = good.slice();
      for (const [i, v] of muts) b[i] = v;
      return b;
    });
    // Mutations concentrated in the headers, where they matter.
    const headerMut = fc.array(fc.tuple(fc.nat(52 + 64 - 1), fc.nat(255)), { minLength: 1, maxLength: 4 }).map((muts) => {
      const b = good.slice();
      for (const [i, v] of muts) b[i] = v;
      return b;
    });
    const truncated = fc.nat(good.length).map((n) => good.slice(0, n));
    const random = fc.uint8Array({ maxLength: 300 }).map((b) => {
      const c = b.slice();
      if (c.length >= 20) c.set([0x7f, 0x45, 0x4c, 0x46, 1, 1, 1, 0]);
      return c;
    });
    fc.assert(fc.property(fc.oneof(mutated, headerMut, truncated, random), (bytes) => {
      try {
        const p = loadElf(bytes);
        expect(p.image.segments.length).toBeGreaterThan(0);
      } catch (e) {
        expect(e).toBeInstanceOf(ChipcError);
        expect((e as ChipcError).code).toMatch(/^elf\./);
      }
    }), { numRuns: 3000 });
  });

  it('parseElf exposes all symbols in file order', () => {
    expect(parseElf(sample()).symbols.map((s) => s.name)).toEqual(['', 'tohost', '_start']);
  });
});
