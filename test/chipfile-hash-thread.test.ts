/**
 * The .chip writer's off-thread SHA-256 (src/chipfile/hash-thread.ts) gives crypto's in-thread
 * digest for any sequence of chunks — empty ones, ones larger than a slot, many streams on one
 * thread — and the writer's file is the same with the thread as without.
 */
import * as crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { HashThread, byteHasher } from '../src/chipfile/hash-thread.ts';

function inThread(chunks: Uint8Array[]): string {
  const h = crypto.createHash('sha256');
  for (const c of chunks) h.update(c);
  return h.digest('hex');
}

describe('HashThread', () => {
  it('equals crypto for random chunk sequences, several streams on one thread', () => {
    const t = new HashThread();
    try {
      fc.assert(fc.property(
        fc.array(fc.uint8Array({ maxLength: 3000 }), { maxLength: 12 }),
        (chunks) => {
          for (const c of chunks) t.update(c);
          expect(t.digestHex()).toBe(inThread(chunks));
        },
      ), { numRuns: 60 });
    } finally {
      t.close();
    }
  });

  it('splits a chunk larger than a slot and keeps the order', () => {
    const big = new Uint8Array((9 << 20) + 5);
    for (let i = 0; i < big.length; i += 4093) big[i] = (i >>> 7) & 255;
    const small = Uint8Array.of(1, 2, 3);
    const t = new HashThread();
    try {
      t.update(small);
      t.update(big);
      t.update(new Uint8Array(0));
      t.update(small);
      expect(t.digestHex()).toBe(inThread([small, big, small]));
      expect(t.digestHex()).toBe(inThread([])); // a new, empty stream
    } finally {
      t.close();
    }
  });

  it('refuses to be used after close', () => {
    const t = new HashThread();
    t.close();
    expect(() => t.update(Uint8Array.of(1))).toThrow(/hashing thread was closed/);
  });

  it('byteHasher gives the same digests in-thread and on the thread', () => {
    const data = [Uint8Array.of(9, 8, 7), new Uint8Array(70_000).fill(3)];
    // threadFrom 0: on the thread; 2^30: in-thread
    const digests = [0, 1 << 30].map((threadFrom) => {
      const hs = byteHasher(1000, threadFrom);
      try {
        const h = hs.newHash();
        for (const d of data) h.update(d);
        return h.digestHex();
      } finally {
        hs.close();
      }
    });
    expect(digests[0]).toBe(inThread(data));
    expect(digests[1]).toBe(inThread(data));
  });
});
