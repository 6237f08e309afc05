/**
 * A turn of the event loop (one macrotask). A test that runs long synchronous stretches awaits it
 * now and then, so that its worker takes in the test runner's RPC replies: vitest gives up on a
 * reply after 60 s (test/setup/yield.ts).
 */
export const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
