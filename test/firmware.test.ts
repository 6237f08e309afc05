/**
 * Tests of the firmware demos (firmware/, fixtures/firmware): every committed image runs on the
 * golden emulator in a 32 KiB memory with the console output, exit code and instruction count
 * of expected.json; that console output is rebuilt here from independent derivations (Node's
 * zlib CRC-32, a JS sort of a JS xorshift32 stream, BigInt square roots, hand-worked RPN
 * results, a JS sieve and known prime counts); the self-checks have teeth (a patched image
 * fails); the images are legal RV32IM+Zba and use M and Zba. With the cross compiler on PATH,
 * firmware/build.sh must reproduce the images byte for byte; with qemu-riscv32, the Linux-write
 * builds must print the same bytes and exit 0 under the strict RV32IM+Zba QEMU core.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { decode, loadElf, parseElf } from '../riscv/index.ts';
import { divisionsByFunction } from './helpers/elf-divisions.ts';
import {
  CODE_LIMIT, DATA_LIMIT, DEMOS, FIRMWARE_MEM, FIXTURE_DIR, imageFiles, imageSizes, mZbaCounts, runImage,
  type DemoFigures,
} from '../firmware/expected.ts';

const BUILD_SH = path.join(FIXTURE_DIR, '..', '..', 'firmware', 'build.sh');
const expected = JSON.parse(fs.readFileSync(path.join(FIXTURE_DIR, 'expected.json'), 'utf8')) as {
  demos: Record<string, DemoFigures>;
};
const readImage = (file: string) => new Uint8Array(fs.readFileSync(path.join(FIXTURE_DIR, file)));
const tmpDirs: string[] = [];
afterAll(() => {
  for (const d of tmpDirs) fs.rmSync(d, { recursive: true, force: true });
});
function tmpDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-fw-'));
  tmpDirs.push(d);
  return d;
}

// ---------------------------------------------------------------------------------------------
// Independent derivations of each demo's console output.

const hex8 = (v: number) => (v >>> 0).toString(16).padStart(8, '0');

function crc32Console(): string {
  // buffer[i] = bits 16..23 of x <- x * 1103515245 + 12345 (mod 2^32), x0 = 1.
  const buf = new Uint8Array(512);
  let x = 1;
  for (let i = 0; i < buf.length; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    buf[i] = (x >>> 16) & 0xff;
  }
  return `crc32("123456789") = cbf43926\ncrc32(lcg[512]) = ${hex8(zlib.crc32(buf))}\ncrc32: ok\n`;
}

/** Marsaglia's xorshift32 (13, 17, 5). */
function xorshift32(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (x ^ (x << 13)) >>> 0;
    x = (x ^ (x >>> 17)) >>> 0;
    x = (x ^ (x << 5)) >>> 0;
    return x;
  };
}

function sortConsole(): string {
  const next = xorshift32(2463534242);
  const values = Array.from({ length: 200 }, () => (next() % 2001) - 1000);
  const sum = values.reduce((a, b) => a + b, 0);
  const sorted = [...values].sort((a, b) => a - b);
  return `sorted 200 values\nfirst: ${sorted.slice(0, 8).join(' ')}\nlast: ${sorted.slice(-8).join(' ')}\nsum: ${sum}\nsort: ok\n`;
}

/** floor(sqrt(n)) by bisection (a different algorithm from the demo's Newton iteration). */
function isqrtBisect(n: bigint): bigint {
  let lo = 0n;
  let hi = 1n << 32n;
  while (hi - lo > 1n) {
    const mid = (lo + hi) >> 1n;
    if (mid * mid <= n) lo = mid;
    else hi = mid;
  }
  return lo;
}

/** Q16.16 r as "<int>.<5 decimals>", the decimals truncated: floor(frac * 100000 / 65536). */
function q16(r: bigint): string {
  return `${r >> 16n}.${(((r & 0xffffn) * 100000n) >> 16n).toString().padStart(5, '0')}`;
}

function fixedpointConsole(): string {
  let out = 'Newton iterates for sqrt(2) in Q16.16:\n';
  // The iterates printed are, by definition, x0 = 2^ceil(bits/2), x <- (x + n/x) / 2 while it decreases.
  const n2 = 2n << 32n;
  let x = 1n << BigInt(Math.ceil(n2.toString(2).length / 2));
  for (;;) {
    out += `  x = ${q16(x)}\n`;
    const y = (x + n2 / x) >> 1n;
    if (y >= x) break;
    x = y;
  }
  expect(x).toBe(isqrtBisect(n2));
  const samples: [string, bigint][] = [
    ['2', 2n << 16n], ['3', 3n << 16n], ['10', 10n << 16n], ['0.5', 1n << 15n],
    ['144', 144n << 16n], ['30000', 30000n << 16n], ['2^-16', 1n],
  ];
  for (const [name, raw] of samples) {
    const r = isqrtBisect(raw << 16n);
    out += `sqrt(${name}) = ${q16(r)}  raw 0x${r.toString(16).padStart(8, '0')}\n`;
  }
  const phi = ((1n << 16n) + isqrtBisect(5n << 32n)) >> 1n;
  const inv = (1n << 32n) / phi;
  return out + `phi = ${q16(phi)}  1/phi = ${q16(inv)}\nfixedpoint: ok\n`;
}

/** RPN lines and their results, worked out by hand. */
const CALC_CASES: [string, string][] = [
  ['3 4 +', '7'],
  ['5 1 2 + 4 * + 3 -', '14'], // 5 + (1 + 2) * 4 - 3
  ['2 3 4 * +', '14'],
  ['100 7 / 100 7 % +', '16'], // 14 + 2
  ['-12 5 *', '-60'],
  ['7 dup *', '49'],
  ['1 2 swap -', '1'], // 2 - 1
  ['4 5 over - *', '4'], // 4 * (5 - 4)
  ['9 neg 3 drop', '-9'],
  ['123456 789 * 1000 /', '97406'], // 97406784 / 1000
  ['-7 2 /', '-3'], // C truncates toward zero
  ['-7 2 %', '-1'],
  ['46341 46341 *', '-2147479015'], // 2147488281 - 2^32
  ['10 0 /', 'error: division by zero'],
  ['1 +', 'error: stack underflow'],
  ['2 3', 'error: expected exactly one value'],
  ['6 7 x', 'error: unknown word'],
];

function calcConsole(): string {
  return CALC_CASES.map(([line, result]) => `> ${line}\n${result}\n`).join('') + 'calc: ok\n';
}

function benchConsole(): string {
  // Plain sieve over every integer below 100000; pi(10^5) = 9592 is the known prime count.
  const composite = new Uint8Array(100000);
  let count = 0;
  let sum = 0;
  let largest = 0;
  for (let i = 2; i < 100000; i++) {
    if (composite[i]) continue;
    count++;
    sum += i;
    largest = i;
    for (let m = i * i; m < 100000; m += i) composite[m] = 1;
  }
  expect([count, sum, largest]).toEqual([9592, 454396537, 99991]);
  return `primes below 100000: ${count}\nsum: ${sum}\nlargest: ${largest}\nbench: ok\n`;
}

/** bigfact's console from BigInt (the same numbers the demo computes with firmware/lib/bignum.c). */
function bigfactConsole(): string {
  let fact = 1n;
  for (let k = 2n; k <= 100n; k++) fact *= k;
  let [fa, fb] = [0n, 1n];
  for (let i = 0; i < 1000; i++) [fa, fb] = [fb, fa + fb];
  const pow = 1n << 4096n;
  const neg = -fa;
  let fq = neg / fact;
  if (neg % fact !== 0n && neg < 0n) fq -= 1n; // floor division (fact > 0)
  return [
    `100! = ${fact}`,
    `fib(1000) = ${fa}`,
    `2^4096 = ${pow}`,
    `2^4096 mod fib(1000) = ${pow % fa}`,
    `trunc(-fib(1000) / 100!) = ${neg / fact}`,
    `  remainder = ${neg % fact}`,
    `floor(-fib(1000) / 100!) = ${fq}`,
    `  remainder = ${neg - fq * fact}`,
    'bigfact: ok',
  ].join('\n') + '\n';
}

const DERIVED: Record<string, () => string> = {
  hello: () => 'Hello from chipc: RV32IM+Zba firmware on the golden emulator.\n',
  crc32: crc32Console,
  sort: sortConsole,
  fixedpoint: fixedpointConsole,
  calc: calcConsole,
  bench: benchConsole,
  bigfact: bigfactConsole,
};

// ---------------------------------------------------------------------------------------------

describe('the runtime prints integers without dividing', () => {
  // print_u32 / print_i32 (firmware/runtime/runtime.c) and the interpreter's out_u32 take each digit
  // with chipc.h's div10_u32: gcc 12 compiles v / 10 and v % 10 to divu and remu on RV32, two
  // divisions a digit on the chip.
  const images = fs.readdirSync(FIXTURE_DIR).filter((f) => f.endsWith('.elf'));
  it('print_u32, print_i32 and out_u32 hold no division in any image that links them', () => {
    let linked = 0;
    for (const image of images) {
      const byFn = divisionsByFunction(new Uint8Array(fs.readFileSync(path.join(FIXTURE_DIR, image))), /^(print_[ui]32|out_u32)$/);
      for (const [name, divs] of byFn) {
        linked++;
        expect(divs, `${image} ${name}`).toEqual([]);
      }
    }
    expect(linked).toBeGreaterThanOrEqual(10); // sort, calc, bench, fixedpoint (both builds), accum, interp
  });
});

describe('firmware fixtures', () => {
  it('cover exactly the demos (two images each), the services (one image each), the interpreter (two images) and expected.json', () => {
    const services = fs.readdirSync(path.join(FIXTURE_DIR, '..', '..', 'firmware', 'services')).filter((f) => f.endsWith('.c')).map((f) => `${f.slice(0, -2)}.elf`);
    expect(services).toContain('accum.elf');
    // the interpreter (firmware/interp) is tested by test/interp.test.ts
    const want = DEMOS.flatMap((n) => [imageFiles(n).mmio, imageFiles(n).linux]).concat('expected.json', services, 'interp.elf', 'interp.linux.elf').sort();
    expect(fs.readdirSync(FIXTURE_DIR).sort()).toEqual(want);
    expect(Object.keys(expected.demos)).toEqual([...DEMOS]);
    const sources = fs.readdirSync(path.join(FIXTURE_DIR, '..', '..', 'firmware', 'demos')).filter((f) => f.endsWith('.c'));
    expect(sources.map((f) => f.slice(0, -2)).sort()).toEqual([...DEMOS].sort());
  });

  it('the independent derivations have their anchors right', () => {
    expect(zlib.crc32(Buffer.from('123456789'))).toBe(0xcbf43926);
    expect(xorshift32(2463534242)()).toBe(723471715); // Marsaglia (2003), first output for this seed
    expect(q16(isqrtBisect(2n << 32n))).toBe('1.41419'); // 92681 / 65536 = 1.4141998...
    expect(isqrtBisect(2n << 32n)).toBe(0x16a09n);
  });

  for (const name of DEMOS) {
    describe(name, () => {
      const figures = expected.demos[name]!;

      it('expected.json console matches the independent derivation; exit code 0 (self-check passed)', () => {
        expect(figures.console).toBe(DERIVED[name]!());
        expect(figures.exitCode).toBe(0);
      });

      it('MMIO image: golden emulator reproduces expected.json in a 32 KiB memory', () => {
        const r = runImage(readImage(imageFiles(name).mmio));
        expect(r.reason).toBe('exit');
        expect(r.exitCode).toBe(figures.exitCode);
        expect(r.console).toBe(figures.console);
        expect(r.instret).toBe(figures.instret);
      });

      it('Linux-write image: same console and exit code, its own instruction count', () => {
        const r = runImage(readImage(imageFiles(name).linux));
        expect(r.reason).toBe('exit');
        expect(r.exitCode).toBe(figures.exitCode);
        expect(r.console).toBe(figures.console);
        expect(r.instret).toBe(figures.linuxInstret);
      });

      it('fits the memory map: code <= 16 KiB at 0x80000000, data+stack <= 16 KiB at 0x80004000, tohost present', () => {
        const bytes = readImage(imageFiles(name).mmio);
        const sizes = imageSizes(bytes);
        expect(sizes).toEqual({ codeBytes: figures.codeBytes, dataBytes: figures.dataBytes });
        expect(sizes.codeBytes).toBeLessThanOrEqual(CODE_LIMIT);
        expect(sizes.dataBytes).toBeLessThanOrEqual(DATA_LIMIT);
        const img = parseElf(bytes);
        expect(img.entry).toBe(0x80000000);
        for (const s of img.segments) {
          const region = s.flags & 1 ? [0x80000000, CODE_LIMIT] : [0x80004000, DATA_LIMIT];
          expect(s.vaddr).toBeGreaterThanOrEqual(region[0]!);
          expect(s.vaddr + s.memsz).toBeLessThanOrEqual(region[0]! + region[1]!);
        }
        const tohost = loadElf(bytes, FIRMWARE_MEM).tohost;
        expect(tohost).not.toBeNull();
        expect(tohost! >= 0x80004000 && tohost! < 0x80004000 + DATA_LIMIT).toBe(true);
      });

      it('every instruction word in its functions is legal RV32IM+Zba; M/Zba use as recorded', () => {
        const bytes = readImage(imageFiles(name).mmio);
        const img = parseElf(bytes);
        let words = 0;
        for (const sym of img.symbols) {
          if (sym.type !== 2 || sym.size === 0) continue;
          const seg = img.segments.find((s) => sym.value >= s.vaddr && sym.value + sym.size <= s.vaddr + s.filesz)!;
          expect(seg).toBeDefined();
          const dv = new DataView(seg.data.buffer, seg.data.byteOffset, seg.data.byteLength);
          for (let a = sym.value; a < sym.value + sym.size; a += 4, words++) {
            const w = dv.getUint32(a - seg.vaddr, true);
            expect(decode(w), `${sym.name}+${a - sym.value}: 0x${hex8(w)}`).not.toBeNull();
          }
        }
        expect(words).toBeGreaterThan(20);
        expect(mZbaCounts(bytes)).toEqual(figures.mZba);
      });
    });
  }

  it('instruction budgets: the small demos <= 200k, bigfact <= 2M, bench 1M..5M', () => {
    for (const name of DEMOS) {
      const n = expected.demos[name]!.instret;
      if (name === 'bench') {
        expect(n).toBeGreaterThanOrEqual(1_000_000);
        expect(n).toBeLessThanOrEqual(5_000_000);
      } else if (name === 'bigfact') {
        expect(n).toBeLessThanOrEqual(2_000_000);
      } else {
        expect(n).toBeLessThanOrEqual(200_000);
      }
    }
  });

  it('M and Zba are exercised: every demo but hello uses M; sh1add, sh2add and sh3add all occur', () => {
    const all: Record<string, number> = {};
    for (const name of DEMOS) {
      const m = mZbaCounts(readImage(imageFiles(name).mmio));
      if (name !== 'hello') expect(Object.keys(m).some((k) => /^(mul|div|rem)/.test(k)), name).toBe(true);
      for (const [k, v] of Object.entries(m)) all[k] = (all[k] ?? 0) + v;
    }
    for (const op of ['sh1add', 'sh2add', 'sh3add', 'mul', 'mulhu', 'div', 'divu', 'rem', 'remu']) {
      expect(all[op], op).toBeGreaterThan(0);
    }
  });
});

/** Replaces the one occurrence of `from` in the image with `to` (same length). */
function patch(bytes: Uint8Array, from: string, to: string): Uint8Array {
  const hay = Buffer.from(bytes);
  const at = hay.indexOf(from);
  expect(at).toBeGreaterThanOrEqual(0);
  expect(hay.indexOf(from, at + 1)).toBe(-1);
  const out = new Uint8Array(bytes);
  out.set(Buffer.from(to), at);
  return out;
}

describe('firmware self-checks have teeth', () => {
  it('crc32 with its check string patched fails both CRC checks (status 3)', () => {
    const r = runImage(patch(readImage('crc32.elf'), '123456789\0', '123456780\0'));
    expect(r.reason).toBe('exit');
    expect(r.exitCode).toBe(3);
    expect(r.console).toContain(`crc32("123456789") = ${hex8(zlib.crc32(Buffer.from('123456780')))}`);
    expect(r.console).toContain('crc32: FAIL');
  });

  it('calc with one line patched reports one mismatch (status 1)', () => {
    const r = runImage(patch(readImage('calc.elf'), '7 dup *', '7 dup +'));
    expect(r.exitCode).toBe(1);
    expect(r.console).toContain('> 7 dup +\n14\n');
    expect(r.console).toContain('calc: FAIL');
  });

  it('hello with a shortened message fails its length check (status 1)', () => {
    const r = runImage(patch(readImage('hello.elf'), 'emulator.', 'emulator\0'));
    expect(r.exitCode).toBe(1);
  });
});

const CC = 'riscv64-unknown-elf-gcc';
const haveCc = spawnSync(CC, ['--version']).status === 0;
const QEMU = 'qemu-riscv32';
const QEMU_CPU = 'rv32,zba=true,zbb=false,zbc=false,zbs=false,a=false,f=false,d=false,c=false';
const haveQemu = spawnSync(QEMU, ['--version']).status === 0;

describe('firmware/build.sh', () => {
  it('fails with a clear message when the cross compiler is missing', () => {
    const r = spawnSync('bash', [BUILD_SH, tmpDir()], { encoding: 'utf8', env: { ...process.env, CROSS: 'no-such-cross-' } });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("cross compiler 'no-such-cross-gcc' not found");
    expect(r.stderr).toContain('gcc-riscv64-unknown-elf binutils-riscv64-unknown-elf');
  });

  it.skipIf(!haveCc)('rebuilds every image byte-identical to the committed fixtures', () => {
    const out = tmpDir();
    const r = spawnSync('bash', [BUILD_SH, out], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const built = fs.readdirSync(out).sort();
    expect(built).toEqual(fs.readdirSync(FIXTURE_DIR).filter((f) => f.endsWith('.elf')).sort());
    for (const f of built) {
      expect(Buffer.compare(fs.readFileSync(path.join(out, f)), fs.readFileSync(path.join(FIXTURE_DIR, f))), f).toBe(0);
    }
  });
});

describe.skipIf(!haveQemu)('firmware under qemu-riscv32 (strict RV32IM+Zba core)', () => {
  for (const name of DEMOS) {
    it(`${name}.linux.elf prints the expected console and exits 0`, () => {
      // Copy with mode 0755: qemu-user silently exits 1 on a non-executable file.
      const file = path.join(tmpDir(), imageFiles(name).linux);
      fs.copyFileSync(path.join(FIXTURE_DIR, imageFiles(name).linux), file);
      fs.chmodSync(file, 0o755);
      const r = spawnSync(QEMU, ['-cpu', QEMU_CPU, file], { encoding: 'utf8' });
      expect(r.stderr).toBe('');
      expect(r.stdout).toBe(expected.demos[name]!.console);
      expect(r.status).toBe(expected.demos[name]!.exitCode);
    });
  }
});
