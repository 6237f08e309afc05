/**
 * Firmware fixture figures: runs each demo image in fixtures/firmware on the golden emulator
 * and measures it (console, exit code, instructions retired, code/data sizes, the M and Zba
 * instructions its functions contain). `npx tsx firmware/expected.ts` writes
 * fixtures/firmware/expected.json; test/firmware.test.ts checks that file against the emulator
 * and against independently derived expectations.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuForProgram, decode, loadElf, parseElf, type RunResult } from '../riscv/index.ts';

/** The demos, in build order (firmware/demos/<name>.c). */
export const DEMOS = ['hello', 'crc32', 'sort', 'fixedpoint', 'calc', 'bench', 'bigfact'] as const;
export type DemoName = (typeof DEMOS)[number];

/** The memory every demo must fit: [0x80000000, 0x80000000 + 32 KiB) (16 KiB code + 16 KiB data/stack). */
export const FIRMWARE_MEM = { base: 0x80000000, size: 32 * 1024 } as const;
export const CODE_LIMIT = 16 * 1024;
export const DATA_LIMIT = 16 * 1024;

export const FIXTURE_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'firmware');

/** Image file names of a demo: the MMIO-console build and the Linux-write build. */
export function imageFiles(name: string): { mmio: string; linux: string } {
  return { mmio: `${name}.elf`, linux: `${name}.linux.elf` };
}

/** Runs an ELF image on the golden emulator in the 32 KiB firmware memory. */
export function runImage(bytes: Uint8Array, maxInstructions = 20_000_000): RunResult {
  return cpuForProgram(loadElf(bytes, FIRMWARE_MEM)).run({ maxInstructions });
}

const PF_X = 1;
const PF_W = 2;
const STT_FUNC = 2;

/** codeBytes: file size of the executable segment (text + rodata); dataBytes: memory size of the writable one (tohost, data, bss, stack). */
export function imageSizes(bytes: Uint8Array): { codeBytes: number; dataBytes: number } {
  const img = parseElf(bytes);
  let codeBytes = 0;
  let dataBytes = 0;
  for (const s of img.segments) {
    if (s.flags & PF_X) codeBytes += s.filesz;
    else if (s.flags & PF_W) dataBytes += s.memsz;
  }
  return { codeBytes, dataBytes };
}

/**
 * The instructions of each function symbol of an image (rodata excluded), in symbol order: its
 * name and, per word in address order, the address and the mnemonic (null for a word that is no
 * instruction). A symbol outside the loaded segments is left out.
 */
export function functionInstructions(bytes: Uint8Array): { name: string; words: { addr: number; mnemonic: string | null }[] }[] {
  const img = parseElf(bytes);
  const out: { name: string; words: { addr: number; mnemonic: string | null }[] }[] = [];
  for (const sym of img.symbols) {
    if (sym.type !== STT_FUNC || sym.size === 0) continue;
    const seg = img.segments.find((s) => sym.value >= s.vaddr && sym.value + sym.size <= s.vaddr + s.filesz);
    if (!seg) continue;
    const dv = new DataView(seg.data.buffer, seg.data.byteOffset, seg.data.byteLength);
    const words: { addr: number; mnemonic: string | null }[] = [];
    for (let a = sym.value; a < sym.value + sym.size; a += 4) words.push({ addr: a, mnemonic: decode(dv.getUint32(a - seg.vaddr, true))?.spec.name ?? null });
    out.push({ name: sym.name, words });
  }
  return out;
}

/** Mnemonic counts of the M, Zba and bignum-unit (bn.mac) instructions inside the image's function symbols (rodata excluded). */
export function mZbaCounts(bytes: Uint8Array): Record<string, number> {
  const counts: Record<string, number> = {};
  const seen = new Set<number>(); // (symbols that alias one address count it once)
  for (const fn of functionInstructions(bytes)) {
    for (const { addr, mnemonic } of fn.words) {
      if (seen.has(addr)) continue;
      seen.add(addr);
      if (mnemonic !== null && /^(mul|div|rem|sh[123]add|bn\.)/.test(mnemonic)) counts[mnemonic] = (counts[mnemonic] ?? 0) + 1;
    }
  }
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => (a < b ? -1 : 1)));
}

export interface DemoFigures {
  console: string;
  exitCode: number;
  /** Instructions retired by <name>.elf (MMIO console). */
  instret: number;
  /** Instructions retired by <name>.linux.elf (one write ecall per byte). */
  linuxInstret: number;
  codeBytes: number;
  dataBytes: number;
  /** M / Zba instructions present in <name>.elf's functions. */
  mZba: Record<string, number>;
}

/** Measures one demo from its two images in dir. */
export function measureDemo(dir: string, name: string): DemoFigures {
  const files = imageFiles(name);
  const mmio = new Uint8Array(fs.readFileSync(path.join(dir, files.mmio)));
  const linux = new Uint8Array(fs.readFileSync(path.join(dir, files.linux)));
  const a = runImage(mmio);
  const b = runImage(linux);
  for (const [file, r] of [[files.mmio, a], [files.linux, b]] as const) {
    if (r.reason !== 'exit' || r.exitCode === null) throw new Error(`${file}: halted with ${r.reason}: ${r.message}`);
  }
  if (a.console !== b.console || a.exitCode !== b.exitCode) throw new Error(`${name}: the MMIO and Linux builds disagree`);
  return {
    console: a.console,
    exitCode: a.exitCode!,
    instret: a.instret,
    linuxInstret: b.instret,
    ...imageSizes(mmio),
    mZba: mZbaCounts(mmio),
  };
}

function main(): void {
  const demos: Record<string, DemoFigures> = {};
  for (const name of DEMOS) demos[name] = measureDemo(FIXTURE_DIR, name);
  const out = {
    note: 'Golden-emulator figures of the firmware demo images (npx tsx firmware/expected.ts); checked by test/firmware.test.ts.',
    demos,
  };
  fs.writeFileSync(path.join(FIXTURE_DIR, 'expected.json'), JSON.stringify(out, null, 2) + '\n');
  for (const [name, d] of Object.entries(demos)) {
    console.log(`${name.padEnd(11)} exit ${d.exitCode}  ${String(d.instret).padStart(8)} instr  code ${d.codeBytes} B  data ${d.dataBytes} B  ${JSON.stringify(d.mZba)}`);
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
