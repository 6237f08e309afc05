/**
 * Random, well-defined C programs for the chip's differential benchmarks (bench/generic-chip.ts):
 * integer arithmetic on uint32_t / int32_t / uint16_t / int8_t arrays, loops with bounded trip
 * counts (for, while, do-while, with break / continue), noinline functions (a recursive one with
 * bounded depth, a table of function pointers), switch statements (dense enough for a jump table),
 * signed and unsigned division and remainder by a nonzero divisor, shifts by a masked amount; then
 * a checksum printed through the console (print_hex and print_i32 of the firmware
 * runtime, firmware/runtime/chipc.h) and a computed exit code (main's return, exit() or
 * exit_tohost()).
 *
 * "Well-defined": no signed overflow (signed arithmetic is done in uint32_t and converted, which
 * gcc defines as modulo 2^32), no division by zero or INT32_MIN / −1 (guarded helpers or divisors
 * forced odd / nonzero), array indices masked to the array's power-of-two length, shift amounts
 * masked to 0…31, every variable initialised. Signed right shifts and uint → int conversions are
 * implementation-defined, and gcc defines them (arithmetic shift, modulo). The text compiles
 * without a warning under the firmware's -Wall -Wextra -Werror (every function is called, every
 * parameter and local used, every comparison of like signedness, every binary operation
 * parenthesised, no literal 0 in a comparison).
 *
 * Deterministic: the same seed gives the same text (xorshift32 below, no Math.random).
 */

/** xorshift32 with a splitmix-style seed scramble: a small deterministic generator. */
export function rng(seed: number): () => number {
  let x = Math.imul((seed >>> 0) ^ 0x9e3779b9, 0x85ebca6b) >>> 0;
  x = (x ^ (x >>> 13)) >>> 0 || 0x1234567;
  return () => {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    return x;
  };
}

export interface RandomCOptions {
  /** Scales the loop trip counts (1 = the default, about 1–5 k instructions a program). */
  scale?: number;
}

/** One random C program's text (a whole translation unit with main). */
export function randomCProgram(seed: number, opts: RandomCOptions = {}): string {
  const next = rng(seed);
  const scale = opts.scale ?? 1;
  const pick = <T>(xs: readonly T[]): T => xs[next() % xs.length]!;
  const chance = (p: number): boolean => next() / 0x100000000 < p;
  const between = (lo: number, hi: number): number => lo + (next() % (hi - lo + 1));
  const trips = (lo: number, hi: number): number => Math.max(1, Math.round(between(lo, hi) * scale));

  const N = pick([8, 16]);
  const M = N - 1;
  /** A nonzero unsigned literal, often an edge value. */
  const ulit = (): string => {
    const k = next() % 6;
    const v = k === 0 ? pick([1, 2, 3, 7, 31, 255, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff]) : k === 1 ? 1 + (next() % 100) : next() || 1;
    return `${v >>> 0}u`;
  };
  const hexWord = (): string => `0x${((next() | 1) >>> 0).toString(16).padStart(8, '0')}u`;

  // Variables an expression may read (locals and loop counters of the current function, uint32_t)
  // and those a statement may assign (never a loop counter: every trip count stays bounded).
  let vars: string[] = [];
  let mut: string[] = [];
  /** A random uint32_t expression of depth at most d (fully parenthesised). */
  const expr = (d: number): string => {
    if (d <= 0 || chance(0.25)) {
      const k = next() % 8;
      if (k < 4 && vars.length > 0) return pick(vars);
      if (k < 5) return ulit();
      if (k < 6) return `ua[(${vars.length > 0 ? pick(vars) : ulit()}) & ${M}u]`;
      if (k < 7) return `(uint32_t)sa[(${vars.length > 0 ? pick(vars) : ulit()}) & ${M}u]`;
      return chance(0.5) ? `(uint32_t)hb[(${vars.length > 0 ? pick(vars) : ulit()}) & ${M}u]` : `(uint32_t)sb[(${vars.length > 0 ? pick(vars) : ulit()}) & ${M}u]`;
    }
    const a = () => expr(d - 1);
    const v = () => pick(vars);
    switch (next() % 22) {
      case 0: case 1: return `(${a()} + ${a()})`;
      case 2: return `(${a()} - ${a()})`;
      case 3: case 4: return `(${a()} * ${a()})`;
      case 5: return `(${a()} ^ ${a()})`;
      case 6: return `(${a()} & ${a()})`;
      case 7: return `(${a()} | ${a()})`;
      case 8: return `(${a()} << (${a()} & 31u))`;
      case 9: return `(${a()} >> (${a()} & 31u))`;
      case 10: return `(uint32_t)((int32_t)${a()} >> (${a()} & 31u))`;
      case 11: return `udiv(${a()}, ${a()})`;
      case 12: return `urem(${a()}, ${a()})`;
      case 13: return `(uint32_t)sdiv((int32_t)${a()}, (int32_t)${a()})`;
      case 14: return `(uint32_t)srem((int32_t)${a()}, (int32_t)${a()})`;
      case 15: return `(${a()} / ${ulit()})`;
      case 16: return `(${a()} % (${a()} | 1u))`;
      case 17: return `(uint32_t)((int32_t)${a()} / ${between(2, 1000)})`;
      // Comparisons: each side mixes in a variable and the right a nonzero constant (so neither side is
      // constant or narrow, and the two never fold into a tautology).
      case 18: return `(uint32_t)((${a()} + ${v()}) < (${a()} ^ ${v()} ^ ${hexWord()}))`;
      case 19: return `(uint32_t)((int32_t)(${a()} + ${v()}) < (int32_t)(${a()} ^ ${v()} ^ ${hexWord()}))`;
      case 20: return `((${a()} & 1u) ? ${a()} : ${a()})`;
      default: return `rotl(${a()}, ${a()})`;
    }
  };
  /** An assignment statement to one of `vars` or an array element. */
  const assign = (d: number, ind: string): string => {
    const k = next() % 8;
    const idx = () => `(${expr(1)}) & ${M}u`;
    if (k < 3 && mut.length > 0) return `${ind}${pick(mut)} ${pick(['=', '+=', '^=', '-=', '|='])} ${expr(d)};`;
    if (k < 4) return `${ind}ua[${idx()}] = ${expr(d)};`;
    if (k < 5) return `${ind}sa[${idx()}] = (int32_t)${expr(d)};`;
    if (k < 6) return `${ind}hb[${idx()}] = (uint16_t)${expr(d)};`;
    if (k < 7) return `${ind}sb[${idx()}] = (int8_t)${expr(d)};`;
    return `${ind}ub[${idx()}] ^= ${expr(d)};`;
  };
  /** A block of statements (loops nest at most `depth` more levels). */
  const block = (n: number, depth: number, ind: string, loopVar: string | null): string[] => {
    const out: string[] = [];
    for (let i = 0; i < n; i++) {
      const k = next() % 12;
      if (k < 5 || depth <= 0) out.push(assign(2, ind));
      else if (k < 6) {
        const s = pick(mut);
        const cases = between(3, 7);
        out.push(`${ind}switch ((${expr(1)}) & 7u) {`);
        for (let c = 0; c < cases; c++) {
          out.push(`${ind}case ${c}:`, assign(1, `${ind}  `), `${ind}  break;`);
        }
        out.push(`${ind}default:`, `${ind}  ${s} += ${ulit()};`, `${ind}  break;`, `${ind}}`);
      } else if (k < 7) {
        out.push(`${ind}if (((${expr(2)}) & 3u) == 1u) {`, ...block(between(1, 2), depth - 1, `${ind}  `, loopVar), `${ind}} else {`,
          ...block(1, depth - 1, `${ind}  `, loopVar), `${ind}}`);
      } else if (k < 8 && loopVar !== null) {
        out.push(`${ind}if (((${expr(1)}) & 7u) == 3u) ${pick(['continue', 'break'])};`);
      } else if (k < 9) {
        const v = `i${depth}_${i}`;
        out.push(`${ind}for (uint32_t ${v} = 0; ${v} < ${trips(2, 4)}u; ${v}++) {`);
        vars.push(v);
        out.push(...block(between(1, 3), depth - 1, `${ind}  `, v));
        vars.pop();
        out.push(`${ind}}`);
      } else if (k < 10) {
        const v = `n${depth}_${i}`;
        out.push(`${ind}{`, `${ind}  uint32_t ${v} = (${expr(1)}) & 7u;`, `${ind}  while (${v}-- > 1u) {`);
        vars.push(v);
        out.push(...block(between(1, 2), depth - 1, `${ind}    `, v));
        vars.pop();
        out.push(`${ind}  }`, `${ind}}`);
      } else if (k < 11) {
        const v = `d${depth}_${i}`;
        out.push(`${ind}{`, `${ind}  uint32_t ${v} = ${between(1, 4)}u;`, `${ind}  do {`);
        vars.push(v);
        out.push(...block(1, depth - 1, `${ind}    `, null));
        vars.pop();
        out.push(`${ind}  } while (--${v} != 0u);`, `${ind}}`);
      } else {
        out.push(assign(3, ind));
      }
    }
    return out;
  };

  const lines: string[] = [];
  lines.push(`/* random C program, seed ${seed} (bench/random-c.ts) */`, '#include <stdint.h>', '#include "chipc.h"', '');
  const init = (f: () => string) => Array.from({ length: N }, f).join(', ');
  lines.push(`static uint32_t ua[${N}] = { ${init(hexWord)} };`);
  const s32 = (v: number): string => (v === -0x80000000 ? '(-2147483647 - 1)' : String(v));
  lines.push(`static int32_t sa[${N}] = { ${init(() => s32(next() | 0))} };`);
  lines.push(`static uint16_t hb[${N}] = { ${init(() => `${next() & 0xffff}u`)} };`);
  lines.push(`static int8_t sb[${N}] = { ${init(() => String(((next() & 0xff) << 24) >> 24))} };`);
  lines.push(`static uint32_t ub[${N}];`, '');
  lines.push(
    '__attribute__((noinline)) static uint32_t udiv(uint32_t a, uint32_t b) { return b == 0u ? a : a / b; }',
    '__attribute__((noinline)) static uint32_t urem(uint32_t a, uint32_t b) { return b == 0u ? a : a % b; }',
    '__attribute__((noinline)) static int32_t sdiv(int32_t a, int32_t b) {',
    '  if (b == 0 || (a == INT32_MIN && b == -1)) return a;',
    '  return a / b;',
    '}',
    '__attribute__((noinline)) static int32_t srem(int32_t a, int32_t b) {',
    '  if (b == 0 || (a == INT32_MIN && b == -1)) return 0;',
    '  return a % b;',
    '}',
    'static uint32_t rotl(uint32_t x, uint32_t k) {',
    '  k &= 31u;',
    '  return k == 0u ? x : ((x << k) | (x >> (32u - k)));',
    '}',
    '',
  );
  // Functions f0 … f(K−1): each may call the earlier ones.
  const K = between(2, 4);
  for (let f = 0; f < K; f++) {
    vars = ['x', 'y', 'r'];
    mut = ['x', 'y', 'r'];
    lines.push(`__attribute__((noinline)) static uint32_t f${f}(uint32_t x, uint32_t y) {`, `  uint32_t r = (x ^ y) + ${ulit()};`);
    lines.push(...block(between(2, 4), 2, '  ', null));
    if (f > 0) lines.push(`  r += f${next() % f}(r, ${expr(1)});`);
    lines.push('  return r ^ x ^ y;', '}', '');
  }
  lines.push(
    'typedef uint32_t (*fn_t)(uint32_t, uint32_t);',
    `static const fn_t fns[${K}] = { ${Array.from({ length: K }, (_, f) => `f${f}`).join(', ')} };`,
    '',
    '__attribute__((noinline)) static uint32_t rec(uint32_t n, uint32_t x) {',
    '  if (n == 0u) return x;',
    `  return rec(n - 1u, (x * ${ulit()}) ^ n) + (n & 3u);`,
    '}',
    '',
  );
  // main
  vars = ['h', 'a', 'b'];
  mut = ['h', 'a', 'b'];
  lines.push('int main(void) {', `  uint32_t h = ${hexWord()};`, `  uint32_t a = ${ulit()};`, `  uint32_t b = ${hexWord()};`);
  lines.push('  h ^= udiv(a, b) + urem(b, a) + (uint32_t)sdiv((int32_t)a, (int32_t)b) + (uint32_t)srem((int32_t)b, (int32_t)a);');
  lines.push(`  for (uint32_t i = 0; i < ${trips(4, 10)}u; i++) {`);
  vars.push('i');
  lines.push(...block(between(2, 4), 2, '    ', 'i'));
  lines.push(`    h = rotl(h, 5u) ^ ua[i & ${M}u] ^ (uint32_t)sa[(i * 3u) & ${M}u];`);
  vars.pop();
  lines.push('  }');
  for (let f = 0; f < K; f++) lines.push(`  a += f${f}(h, ${expr(1)});`);
  lines.push(`  b ^= fns[(${expr(1)}) % ${K}u](a, b);`);
  lines.push(`  h += rec((${expr(1)}) & 7u, a);`);
  lines.push(...block(between(1, 3), 2, '  ', null));
  lines.push(
    `  for (uint32_t i = 0; i < ${N}u; i++) {`,
    '    h = (h * 31u) + ua[i] + ub[i];',
    '    h ^= (uint32_t)sa[i] + ((uint32_t)hb[i] << 3) + (uint32_t)(int32_t)sb[i];',
    '  }',
  );
  lines.push('  print_str("h="); print_hex(h); putchar(\' \');');
  lines.push(`  print_i32((int32_t)${pick(['a', 'b'])});`, "  putchar('\\n');");
  const ret = `(h ^ a ^ b)`;
  const how = next() % 6;
  if (how === 0) lines.push(`  exit_tohost((int)(${ret} & 0x3ffu));`);
  else if (how === 1) lines.push(`  exit((int)${ret});`);
  else lines.push(`  return (int)(${ret} % ${pick([251, 256, 200, 97])}u);`);
  lines.push('}', '');
  return lines.join('\n');
}

// ── building with the firmware's toolchain ───────────────────────────────────────────────────
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** The cross compiler (CROSS=prefix overrides riscv64-unknown-elf-, as firmware/build.sh). */
export const CROSS_CC = `${process.env['CROSS'] ?? 'riscv64-unknown-elf-'}gcc`;

export interface CrossToolchain {
  cc: string;
  /** libgcc of the rv32im/ilp32 multilib (an -march with _zba does not select it). */
  libgcc: string;
  /** gcc --version's first line. */
  version: string;
}

/** The cross compiler and its rv32im/ilp32 libgcc, or a sentence saying why there is none. */
export function findCrossToolchain(): CrossToolchain | string {
  const v = spawnSync(CROSS_CC, ['--version'], { encoding: 'utf8' });
  if (v.error !== undefined || v.status !== 0) {
    return `cross compiler '${CROSS_CC}' not found on PATH (Debian/Ubuntu: apt-get install -y --no-install-recommends gcc-riscv64-unknown-elf binutils-riscv64-unknown-elf)`;
  }
  const libgcc = execFileSync(CROSS_CC, ['-march=rv32im', '-mabi=ilp32', '-print-libgcc-file-name'], { encoding: 'utf8' }).trim();
  if (!libgcc.includes('/rv32im/ilp32/')) return `'${CROSS_CC}' has no rv32im/ilp32 libgcc multilib (got '${libgcc}')`;
  return { cc: CROSS_CC, libgcc, version: v.stdout.split('\n')[0] ?? '' };
}

/** firmware/ of this repository. */
export const FIRMWARE_DIR = path.resolve(import.meta.dirname, '..', 'firmware');

/**
 * Compile one C file into a chip image (console = the MMIO byte) with firmware/build.sh's flags,
 * runtime (start.S, runtime.c) and linker script (runtime/link.ld). Writes `dir/name.c` and
 * `dir/name.elf`; returns the ELF's bytes. Throws with the compiler's messages when it fails.
 */
export function compileFirmwareC(tc: CrossToolchain, source: string, dir: string, name: string): Uint8Array {
  fs.mkdirSync(dir, { recursive: true });
  const src = path.join(dir, `${name}.c`);
  const out = path.join(dir, `${name}.elf`);
  fs.writeFileSync(src, source);
  const rt = path.join(FIRMWARE_DIR, 'runtime');
  const cflags = [
    '-march=rv32im_zba', '-mabi=ilp32', '-O2', '-std=c11',
    '-ffreestanding', '-fno-builtin', '-fno-tree-loop-distribute-patterns',
    '-ffunction-sections', '-fdata-sections', '-fno-asynchronous-unwind-tables', '-fno-ident',
    `-ffile-prefix-map=${FIRMWARE_DIR}=.`, '-Wall', '-Wextra', '-Werror', `-I${rt}`, `-I${path.join(FIRMWARE_DIR, 'lib')}`,
  ];
  const ldflags = [
    '-nostdlib', '-nostartfiles', '-static', '-T', path.join(rt, 'link.ld'),
    '-Wl,--build-id=none', '-Wl,--strip-debug', '-Wl,--gc-sections', '-Wl,--no-warn-rwx-segments',
  ];
  const r = spawnSync(tc.cc, [...cflags, ...ldflags, path.join(rt, 'start.S'), path.join(rt, 'runtime.c'), src, tc.libgcc, '-o', out], { encoding: 'utf8' });
  if (r.error !== undefined || r.status !== 0) {
    throw new Error(`${tc.cc} failed on ${src} (status ${r.status}):\n${(r.stderr || String(r.error)).trim()}`);
  }
  return new Uint8Array(fs.readFileSync(out));
}
