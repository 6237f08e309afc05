import os from 'node:os';
import { defineConfig } from 'vitest/config';
import { TEST_CACHE_DIR } from './test/setup/test-cache-dir.ts';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // The files share a worker's module instances instead of importing the compiler again for each
    // of them (no file mocks a module or leaves process state changed).
    isolate: false,
    // vitest's default is one worker per core less one: a single worker on a 2-core machine, which
    // left half of it idle (the test files are CPU-bound and independent).
    maxWorkers: Math.max(2, os.availableParallelism() - 1),
    setupFiles: ['test/setup/yield.ts'],
    // The chip cache of the test run (never the user's): the shared test chips live there
    // (test/helpers/shared-chips.ts), and so does every chip a `chipc run` under test caches.
    globalSetup: ['test/setup/shared-chips.ts'],
    env: { CHIPC_CACHE_DIR: TEST_CACHE_DIR },
  },
});
