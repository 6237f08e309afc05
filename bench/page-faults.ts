/**
 * What a page fault costs on this machine: the wall time of the first write to each 4 KiB page of
 * fresh memory (a buffer above malloc's mmap threshold, so that its pages are mapped only when
 * touched), against a second write to the same pages, and the minor faults counted meanwhile.
 * Compiled chips live in hundreds of MB of typed arrays, each page of which faults once; where a
 * fault is dear (a virtual machine), that is a visible part of opening a chip and of a run's first
 * tokens (docs/benchmarks.md "Page faults").
 *
 *   npx tsx bench/page-faults.ts [--mib N] [--runs R] [--json]
 */
function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(name);
  const v = i >= 0 ? Number(process.argv[i + 1]) : dflt;
  if (!Number.isFinite(v) || v <= 0) {
    console.error(`page-faults: ${name} needs a positive number`);
    process.exit(2);
  }
  return v;
}
const mib = arg('--mib', 64);
const runs = arg('--runs', 3);
const json = process.argv.includes('--json');

const PAGE = 4096;
/** Writes one byte per page; returns milliseconds. */
function touch(b: Uint8Array): number {
  const t = performance.now();
  for (let i = 0; i < b.length; i += PAGE) b[i] = 1;
  return performance.now() - t;
}
touch(new Uint8Array(1 << 20)); // the loop compiled before the timed runs

const rows: { firstUsPerPage: number; againUsPerPage: number; faultsPerPage: number }[] = [];
for (let r = 0; r < runs; r++) {
  const b = new Uint8Array(mib << 20);
  const pages = b.length / PAGE;
  const f0 = process.resourceUsage().minorPageFault;
  const first = touch(b);
  const faults = process.resourceUsage().minorPageFault - f0;
  const again = touch(b);
  rows.push({ firstUsPerPage: (first * 1000) / pages, againUsPerPage: (again * 1000) / pages, faultsPerPage: faults / pages });
}
if (json) console.log(JSON.stringify({ mib, runs: rows }));
else {
  for (const [i, r] of rows.entries()) {
    console.log(`run ${i + 1}: ${mib} MiB, first write ${r.firstUsPerPage.toFixed(2)} µs per 4 KiB page (${r.faultsPerPage.toFixed(2)} faults per page), second ${r.againUsPerPage.toFixed(3)} µs`);
  }
}
