/**
 * Writes chipc's self-checking ISA test programs to `fixtures/isa/` (or a given directory):
 * for every group of riscv/isa-tests/, `<name>.elf` (reports through `tohost`) and
 * `<name>.exit.elf` (reports through `ecall` exit, for qemu-user), mode 0755, plus `index.json`
 * with each program's checks and its instruction counts on the golden emulator.
 *
 * Deterministic: the same sources give byte-identical files. Exits 1 (writing nothing) when a
 * program does not pass on the golden emulator.
 * Usage: npx tsx tools/make-isa-tests.ts [outDir]
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuForProgram, loadElf } from '../riscv/index.ts';
import { ISA_TEST_GROUPS, RAM_SIZE, buildProgram, type ExitMode, type TestGroup } from '../riscv/isa-tests/index.ts';

/** One program's entry in index.json. */
export interface IsaIndexEntry {
  name: string;
  /** The tohost image and the ecall-exit image, relative to the index. */
  file: string;
  exitFile: string;
  summary: string;
  covers: string[];
  /** Uses the chip's custom-0 bignum unit: runs on the golden emulator and the chip, not under qemu-user. */
  chipOnly?: boolean;
  /** Instructions retired on the golden emulator until the pass report (tohost store / exit ecall). */
  instret: number;
  exitInstret: number;
  codeBytes: number;
  dataBytes: number;
  /** Check descriptions; case k is `cases[k - 1]`. */
  cases: string[];
}

export interface IsaIndex {
  /** RAM the programs need at 0x80000000. */
  memSize: number;
  tests: IsaIndexEntry[];
}

/** Runs an image on the golden emulator; throws unless it passes in the expected way. */
function measure(group: TestGroup, mode: ExitMode, elf: Uint8Array): number {
  const r = cpuForProgram(loadElf(elf, { size: RAM_SIZE })).run({ maxInstructions: 100_000 });
  const wantReason = mode === 'tohost' ? 'tohost' : 'exit';
  if (r.reason !== wantReason || r.exitCode !== 0) {
    const k = r.exitCode ?? 0;
    const what = k > 0 && k <= group.checks.length ? ` (case ${k}: ${group.checks[k - 1].desc})` : '';
    throw new Error(`ISA test ${group.name} (${mode}) does not pass on the golden emulator: ${r.reason}, exit ${r.exitCode}${what}: ${r.message}`);
  }
  return r.instret;
}

/** Build every program in memory: file name → bytes, including index.json. */
export function makeIsaTests(): Map<string, Uint8Array> {
  const files = new Map<string, Uint8Array>();
  const tests: IsaIndexEntry[] = [];
  for (const g of ISA_TEST_GROUPS) {
    const t = buildProgram(g, { mode: 'tohost' });
    const e = buildProgram(g, { mode: 'exit' });
    const file = `${g.name}.elf`;
    const exitFile = `${g.name}.exit.elf`;
    files.set(file, t.elf);
    files.set(exitFile, e.elf);
    tests.push({
      name: g.name, file, exitFile, summary: g.summary, covers: g.covers, ...(g.chipOnly ? { chipOnly: true } : {}),
      instret: measure(g, 'tohost', t.elf), exitInstret: measure(g, 'exit', e.elf),
      codeBytes: t.codeBytes, dataBytes: t.dataBytes,
      cases: g.checks.map((c) => c.desc),
    });
  }
  const index: IsaIndex = { memSize: RAM_SIZE, tests };
  files.set('index.json', new TextEncoder().encode(JSON.stringify(index, null, 2) + '\n'));
  return files;
}

function main(): void {
  const repoRoot = fileURLToPath(new URL('..', import.meta.url));
  const outDir = process.argv[2] ?? path.join(repoRoot, 'fixtures', 'isa');
  let files: Map<string, Uint8Array>;
  try {
    files = makeIsaTests();
  } catch (e) {
    console.error(e instanceof Error ? e.message : String(e));
    process.exit(1);
  }
  fs.mkdirSync(outDir, { recursive: true });
  for (const [name, bytes] of files) {
    const p = path.join(outDir, name);
    fs.writeFileSync(p, bytes);
    // qemu-user silently exits 1 on a non-executable ELF.
    fs.chmodSync(p, name.endsWith('.elf') ? 0o755 : 0o644);
  }
  console.log(`wrote ${files.size} files to ${path.relative(process.cwd(), outDir) || '.'}`);
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
