/**
 * Positional writes that may leave holes, and a buffered writer built on them. A dense checkpoint of a compiled chip is nearly all
 * zeros (6.2 GB of tensor bytes at qwen3.5-4b, 29 MB of them in stretches that hold a non-zero),
 * so its writers skip long zero runs instead of writing them: the file reads back byte for byte
 * the same (a hole reads as zeros on every POSIX file system, and where the file system keeps no
 * holes it stores the zeros itself), and it is written in a fraction of the time of a copy.
 */
import * as fs from 'node:fs';

/** One shared, never-written buffer of zeros (1 MiB) that zero runs are sliced from. */
export const ZEROS = new Uint8Array(1 << 20);
const BUFFER_BYTES = 1 << 20;

/** Zero runs at least this long are skipped (left as holes) by writers that skip zeros. */
export const HOLE_MIN_BYTES = 64 << 10;

/** Writes all of `bytes` at `position` of `fd` (a short write is continued). */
export function writeFullyAt(fd: number, bytes: Uint8Array, position: number): void {
  let done = 0;
  while (done < bytes.length) done += fs.writeSync(fd, bytes, done, bytes.length - done, position + done);
}

/** Makes the file `size` bytes long when it ended in a skipped zero run (which left it shorter). */
export function extendToSize(fd: number, size: number): void {
  if (fs.fstatSync(fd).size < size) fs.ftruncateSync(fd, size);
}

/**
 * Appends to an open file descriptor through a 1 MiB buffer; hashes what it writes when given a
 * hash. With `holes`, a zero run of at least HOLE_MIN_BYTES (`writeZeros`) is skipped instead of
 * written (util/sparse-file.ts): the hashes still see its zeros, and `end()` gives the file its
 * full size. Writes are positional, so the descriptor's own offset is not used.
 */
export class BufferedWriter {
  /** Bytes written so far (buffered and skipped included). */
  position = 0;
  private readonly buf = new Uint8Array(BUFFER_BYTES);
  private fill = 0;

  constructor(private readonly fd: number, private readonly hashes: { update(bytes: Uint8Array): unknown }[] = [],
    private readonly holes = false) {}

  write(bytes: Uint8Array): void {
    for (const h of this.hashes) h.update(bytes);
    if (this.fill + bytes.length <= this.buf.length) {
      this.buf.set(bytes, this.fill);
      this.fill += bytes.length;
      this.position += bytes.length;
      return;
    }
    this.flush();
    if (bytes.length >= this.buf.length / 2) {
      writeFullyAt(this.fd, bytes, this.position);
    } else {
      this.buf.set(bytes, 0);
      this.fill = bytes.length;
    }
    this.position += bytes.length;
  }

  /** Appends `n` zero bytes (skipped, leaving a hole, when holes are on and n ≥ HOLE_MIN_BYTES). */
  writeZeros(n: number): void {
    if (this.holes && n >= HOLE_MIN_BYTES) {
      for (const h of this.hashes) for (let left = n; left > 0; left -= ZEROS.length) h.update(ZEROS.subarray(0, Math.min(left, ZEROS.length)));
      this.flush();
      this.position += n;
      return;
    }
    while (n > 0) {
      const k = Math.min(n, ZEROS.length);
      this.write(ZEROS.subarray(0, k));
      n -= k;
    }
  }

  flush(): void {
    if (this.fill > 0) {
      writeFullyAt(this.fd, this.buf.subarray(0, this.fill), this.position - this.fill);
      this.fill = 0;
    }
  }

  /** Flushes and makes the file `position` bytes long (a trailing skipped run leaves it shorter). */
  end(): void {
    this.flush();
    if (this.holes) extendToSize(this.fd, this.position);
  }
}
