/**
 * Small I/O helpers of the .chip code: a buffered, optionally hashing, append-only file writer
 * (zero runs are written from one shared zero buffer, never allocated), temporary sibling names,
 * and positional reads that refuse short reads.
 */
import * as fs from 'node:fs';
import { ChipcError } from '../util/errors.ts';

/** One shared, never-written buffer of zeros (1 MiB) that zero runs are sliced from. */
export const ZEROS = new Uint8Array(1 << 20);
const BUFFER_BYTES = 1 << 20;

export { tempSibling } from '../util/temp-files.ts';

/** Appends to an open file descriptor through a 1 MiB buffer; hashes what it writes when given a hash. */
export class BufferedWriter {
  /** Bytes written so far (buffered included). */
  position = 0;
  private readonly buf = new Uint8Array(BUFFER_BYTES);
  private fill = 0;

  constructor(private readonly fd: number, private readonly hashes: { update(bytes: Uint8Array): unknown }[] = []) {}

  write(bytes: Uint8Array): void {
    for (const h of this.hashes) h.update(bytes);
    this.position += bytes.length;
    if (this.fill + bytes.length <= this.buf.length) {
      this.buf.set(bytes, this.fill);
      this.fill += bytes.length;
      return;
    }
    this.flush();
    if (bytes.length >= this.buf.length / 2) {
      writeFully(this.fd, bytes);
    } else {
      this.buf.set(bytes, 0);
      this.fill = bytes.length;
    }
  }

  /** Appends `n` zero bytes. */
  writeZeros(n: number): void {
    while (n > 0) {
      const k = Math.min(n, ZEROS.length);
      this.write(ZEROS.subarray(0, k));
      n -= k;
    }
  }

  flush(): void {
    if (this.fill > 0) {
      writeFully(this.fd, this.buf.subarray(0, this.fill));
      this.fill = 0;
    }
  }
}

export function writeFully(fd: number, bytes: Uint8Array): void {
  let done = 0;
  while (done < bytes.length) done += fs.writeSync(fd, bytes, done, bytes.length - done);
}

/** Reads exactly `length` bytes at `position` of `fd` into a fresh buffer; a short read is a ChipcError naming `label`. */
export function readExactly(fd: number, position: number, length: number, label: string): Uint8Array {
  const buf = new Uint8Array(length);
  let done = 0;
  while (done < length) {
    const got = fs.readSync(fd, buf, done, Math.min(length - done, 0x40000000), position + done);
    if (got <= 0) throw new ChipcError('chipfile.short-read', `${label}: file ended at byte ${position + done} while reading (was it changed after opening?)`);
    done += got;
  }
  return buf;
}
