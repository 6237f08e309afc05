/**
 * Small I/O helpers of the .chip code: the buffered writer (util/sparse-file.ts), temporary
 * sibling names, and positional reads that refuse short reads.
 */
import * as fs from 'node:fs';
import { ChipcError } from '../util/errors.ts';
export { BufferedWriter, ZEROS } from '../util/sparse-file.ts';
export { removeTemp, tempSibling } from '../util/temp-files.ts';

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
