import os from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // vitest's default is one worker per core less one: a single worker on a 2-core machine, which
    // left half of it idle (the test files are CPU-bound and independent).
    maxWorkers: Math.max(2, os.availableParallelism() - 1),
    setupFiles: ['test/setup/yield.ts'],
  },
});
