/**
 * The order the test files start in. Files are handed to the workers in this order, each to the
 * next free one, so the run ends soonest when the longest files start first (a long file started
 * last keeps one worker busy while the other idles). vitest orders by the durations of the last
 * run it cached; a clean clone has none, so HEAVY_FILES (the longest files of a measured run,
 * longest first) go first there and the rest follow in vitest's order.
 */
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** The longest test files of a measured run (docs/benchmarks.md "The test suite"), longest first. */
export const HEAVY_FILES: readonly string[] = [
  'test/rv32-cpu.test.ts',
  'test/package.test.ts',
  'test/store-chip.test.ts',
  'test/chunked-prefill.test.ts',
  'test/rv32-generic.test.ts',
  'test/riscv-qemu.test.ts',
  'test/run-merged.test.ts',
  'test/chip-banks.test.ts',
  'test/firmware.test.ts',
  'test/executor-prime.test.ts',
  'test/store-segments.test.ts',
  'test/gadgets-gdn-ram.test.ts',
];

export default class HeavyFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const byVitest = await super.sort(files);
    const cached = byVitest.some((f) => this.ctx.cache.getFileTestResults(`${f.project.name}:${this.rel(f)}`) !== undefined);
    if (cached) return byVitest;
    const rank = (f: TestSpecification): number => {
      const i = HEAVY_FILES.indexOf(this.rel(f));
      return i < 0 ? HEAVY_FILES.length : i;
    };
    return [...byVitest].sort((a, b) => rank(a) - rank(b));
  }

  private rel(f: TestSpecification): string {
    return path.relative(this.ctx.config.root, f.moduleId).split(path.sep).join('/');
  }
}
