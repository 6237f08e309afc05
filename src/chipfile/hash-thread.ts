/**
 * SHA-256 on a second thread, driven synchronously: `update` copies the bytes into a ring of
 * shared slots that a worker hashes while the caller goes on producing the next chunk, and
 * `digest` waits for the worker's result. Writing a `.chip` hashes every dense byte of the
 * checkpoint (its files' sha256 in the manifest) — ≈ 6.5 GB at qwen3.5-4b, ≈ 4 s of one core —
 * while the same bytes are generated and scanned for non-zero blocks; on a second core the hash
 * costs the writer only the copy.
 *
 * The digest is crypto's own SHA-256 over the same bytes in the same order, so it equals an
 * in-thread hash bit for bit (test/chipfile-hash-thread.test.ts). Small jobs do not pay for a
 * thread: `byteHasher` hashes in-thread below `threadFrom` bytes.
 *
 * Protocol (one Int32 state per slot: 0 free, 1 full): the writer waits for slot i to be free,
 * copies up to SLOT_BYTES into it, stores its length and sets it full; the worker waits for it to
 * be full, hashes it (length −1: finish the current hash, write the 32 digest bytes into the
 * result area, start a new one) and sets it free. Slots are used in turn, so the order of bytes
 * is the order of calls. A worker that stops answering (it died, or a wait exceeds
 * WAIT_LIMIT_MS) is a `chipfile.hash-thread` error, never a hang.
 */
import * as crypto from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { ChipcError } from '../util/errors.ts';

/** The part of crypto.Hash the .chip writers use. */
export interface ByteHash {
  update(bytes: Uint8Array): unknown;
}

const SLOTS = 4;
const SLOT_BYTES = 4 << 20;
const WAIT_LIMIT_MS = 120_000;
// Int32 control words: [0, SLOTS) slot states, [SLOTS, 2·SLOTS) slot lengths, 2·SLOTS the worker's
// error flag; then the 32 result bytes; then the slots.
const CONTROL_INTS = 2 * SLOTS + 1;
const RESULT_AT = 4 * CONTROL_INTS;
const DATA_AT = RESULT_AT + 32;

// Plain JavaScript (run with eval: no loader needed in the worker).
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
const crypto = require('node:crypto');
const { sab, slots, slotBytes, resultAt, dataAt } = workerData;
const ctl = new Int32Array(sab, 0, ${CONTROL_INTS});
const bytes = new Uint8Array(sab);
let hash = crypto.createHash('sha256');
try {
  for (let i = 0; ; i = (i + 1) % slots) {
    while (Atomics.load(ctl, i) !== 1) Atomics.wait(ctl, i, 0);
    const n = ctl[slots + i];
    if (n === -1) {
      bytes.set(hash.digest(), resultAt);
      hash = crypto.createHash('sha256');
    } else {
      hash.update(bytes.subarray(dataAt + i * slotBytes, dataAt + i * slotBytes + n));
    }
    Atomics.store(ctl, i, 0);
    Atomics.notify(ctl, i);
  }
} catch (e) {
  Atomics.store(ctl, ${2 * SLOTS}, 1);
  for (let i = 0; i < slots; i++) { Atomics.store(ctl, i, 0); Atomics.notify(ctl, i); }
}
`;

/** One worker hashing a sequence of byte streams, one digest per stream. */
export class HashThread {
  private readonly sab = new SharedArrayBuffer(DATA_AT + SLOTS * SLOT_BYTES);
  private readonly ctl = new Int32Array(this.sab, 0, CONTROL_INTS);
  private readonly bytes = new Uint8Array(this.sab);
  private readonly worker: Worker;
  private next = 0;
  /** The slot being filled (claimed, not yet posted), or −1, and its bytes so far. */
  private filling = -1;
  private filled = 0;
  private closed = false;

  constructor() {
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { sab: this.sab, slots: SLOTS, slotBytes: SLOT_BYTES, resultAt: RESULT_AT, dataAt: DATA_AT },
    });
    this.worker.unref();
  }

  /**
   * Appends bytes to the current stream. Small pieces gather in the slot being filled, which is
   * handed to the worker when full (a hand-over per piece would cost more than the hash).
   */
  update(data: Uint8Array): void {
    for (let at = 0; at < data.length;) {
      if (this.filling < 0) {
        this.filling = this.claim();
        this.filled = 0;
      }
      const n = Math.min(SLOT_BYTES - this.filled, data.length - at);
      this.bytes.set(data.subarray(at, at + n), DATA_AT + this.filling * SLOT_BYTES + this.filled);
      this.filled += n;
      at += n;
      if (this.filled === SLOT_BYTES) this.postFilling();
    }
  }

  /** Ends the current stream: its SHA-256 (hex); the next update starts a new stream. */
  digestHex(): string {
    this.postFilling();
    const i = this.claim();
    this.post(i, -1);
    this.waitFree(i);
    return Buffer.from(this.bytes.subarray(RESULT_AT, RESULT_AT + 32)).toString('hex');
  }

  /** Stops the worker (pending bytes are dropped). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    void this.worker.terminate();
  }

  private postFilling(): void {
    if (this.filling < 0) return;
    this.post(this.filling, this.filled);
    this.filling = -1;
  }

  private claim(): number {
    if (this.closed) throw new ChipcError('chipfile.hash-thread', 'the hashing thread was closed');
    const i = this.next;
    this.next = (i + 1) % SLOTS;
    this.waitFree(i);
    return i;
  }

  private post(i: number, n: number): void {
    this.ctl[SLOTS + i] = n;
    Atomics.store(this.ctl, i, 1);
    Atomics.notify(this.ctl, i);
  }

  private waitFree(i: number): void {
    const start = Date.now();
    while (Atomics.load(this.ctl, i) !== 0) {
      Atomics.wait(this.ctl, i, 1, 1000);
      if (Date.now() - start > WAIT_LIMIT_MS) {
        this.close();
        throw new ChipcError('chipfile.hash-thread', `the hashing thread did not answer for ${WAIT_LIMIT_MS / 1000} s`);
      }
    }
    if (Atomics.load(this.ctl, 2 * SLOTS) !== 0) {
      this.close();
      throw new ChipcError('chipfile.hash-thread', 'the hashing thread failed');
    }
  }
}

/** A SHA-256 of one stream: in-thread, or on a shared HashThread. */
export interface StreamHash {
  update(bytes: Uint8Array): void;
  digestHex(): string;
}

/**
 * Hashers for a job of `totalBytes`: on a worker thread when the job has at least `threadFrom`
 * bytes (default 256 MiB), else in-thread. `newHash()` starts a stream (one at a time: finish one
 * with digestHex before starting the next); `close()` stops the thread.
 */
export function byteHasher(totalBytes: number, threadFrom = 256 << 20): { newHash: () => StreamHash; close: () => void } {
  if (totalBytes < threadFrom) {
    return {
      newHash: () => {
        const h = crypto.createHash('sha256');
        return { update: (b) => void h.update(b), digestHex: () => h.digest('hex') };
      },
      close: () => {},
    };
  }
  const t = new HashThread();
  return {
    newHash: () => ({ update: (b) => t.update(b), digestHex: () => t.digestHex() }),
    close: () => t.close(),
  };
}
