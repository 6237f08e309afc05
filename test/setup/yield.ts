/**
 * Vitest setup: yield one macrotask before and after every test. Our heavy tests run long
 * synchronous stretches (compiling the chip, thousands of executor steps); without a macrotask
 * turn between them the worker cannot take in the runner's RPC replies, and back-to-back stretches
 * over 60 s end in "[vitest-worker]: Timeout calling onTaskUpdate" on a busy machine. One test's
 * stretch must stay under that too: a long run inside a test yields as it goes
 * (test/helpers/chip-lockstep.ts); a loaded worker ran such tests 4–30 times slower than alone.
 */
import { afterEach, beforeEach } from 'vitest';

const turn = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));
beforeEach(turn);
afterEach(turn);
