import os from 'node:os';
import { defineConfig } from 'vitest/config';
import { TEST_CACHE_DIR } from './test/setup/test-cache-dir.ts';
import HeavyFirstSequencer from './test/setup/sequencer.ts';

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
    // A larger young generation: the compiler and the executors allocate many short-lived objects,
    // and with V8's default (16 MiB semi-spaces) scavenges take a fifth of a chip compile. GC on
    // the worker's own thread: every core already runs a worker, so helper threads only compete.
    poolOptions: { forks: { execArgv: ['--max-semi-space-size=64', '--single-threaded-gc'] } },
    // the longest files first on a clean clone (test/setup/sequencer.ts)
    sequence: { sequencer: HeavyFirstSequencer },
    setupFiles: ['test/setup/yield.ts', 'test/setup/fast-check-seed.ts'],
    // The chip cache of the test run (never the user's): the shared test chips live there
    // (test/helpers/shared-chips.ts), and so does every chip a `chipc run` under test caches.
    globalSetup: ['test/setup/shared-chips.ts'],
    env: { CHIPC_CACHE_DIR: TEST_CACHE_DIR },
  },
});
