/**
 * `.chip` file → the dense checkpoint directory it was made from, byte for byte. Streaming:
 * verbatim files and block bytes are copied in bounded pieces, zero runs are written from one
 * shared zero buffer. A file's SHA-256 is computed while writing (on a second thread) where the
 * manifest records one, and checked; with `hashes`, every file's is computed. The dense bytes are
 * nearly all zeros: runs of 64 KiB or more are skipped, leaving holes (`holes: false` writes
 * them), so a version-4 file, whose safetensors files carry no SHA-256 by default, expands several
 * times faster than its output can be copied byte for byte; hashing is then most of the work. The directory is written as a temporary sibling and renamed into place, so it is
 * complete or absent.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ChipcError } from '../util/errors.ts';
import { openChipFile, type ChipFile } from './read.ts';
import { BufferedWriter, removeTemp, tempSibling } from './io.ts';
import { byteHasher } from './hash-thread.ts';
import { moveDirIntoPlace } from '../safetensors/writer.ts';

export interface ExpandOptions {
  /** Replace an existing non-empty directory (default: refuse). */
  overwrite?: boolean;
  /** Compute every file's SHA-256 (ExpandResult.sha256), not only the ones the manifest records. */
  hashes?: boolean;
  /**
   * Skip zero runs of 64 KiB or more, leaving holes (default true): the files read the same and
   * are written in a fraction of a copy's time (util/sparse-file.ts). false writes every byte.
   */
  holes?: boolean;
  /**
   * Bytes of stored data read per positional read (default 4 MiB). A tensor whose blocks hold more
   * is copied in several reads, each of whole blocks where they fit; smaller values make test
   * chips take that path.
   */
  copyBytes?: number;
}

export interface ExpandResult {
  dir: string;
  files: string[];
  /** Bytes written in all. */
  bytes: number;
  /** The SHA-256 (hex) of every file hashed (those the manifest records, or all with `hashes`), by name. */
  sha256: Record<string, string>;
}

/** Bytes of stored data read per positional read, by default. */
const COPY_BYTES = 4 << 20;

function copyPayload(chip: ChipFile, w: BufferedWriter, offset: number, length: number, copyBytes: number): void {
  for (let at = 0; at < length; at += copyBytes) w.write(chip.readPayload(offset + at, Math.min(copyBytes, length - at)));
}

/** Writes the directory that the open `chip` stands for into `dir` (see the module comment). */
export function expandChip(chip: ChipFile, dir: string, opts: ExpandOptions = {}): ExpandResult {
  const copyBytes = opts.copyBytes ?? COPY_BYTES;
  if (!Number.isSafeInteger(copyBytes) || copyBytes < 1) throw new ChipcError('chipfile.bad-option', `copyBytes must be a positive integer, not ${copyBytes}`);
  const target = path.resolve(dir);
  if (fs.existsSync(target)) {
    if (!fs.statSync(target).isDirectory()) throw new ChipcError('chipfile.target-exists', `${dir}: exists and is not a directory`);
    if (fs.readdirSync(target).length > 0 && !opts.overwrite) throw new ChipcError('chipfile.target-exists', `${dir}: directory exists and is not empty (pass overwrite to replace it)`);
  }
  fs.mkdirSync(path.dirname(target), { recursive: true });
  const tmpDir = tempSibling(target, 'tmpdir');
  fs.mkdirSync(tmpDir);
  let bytes = 0;
  const sha256: Record<string, string> = {};
  const hashed = new Set(chip.manifest.files.filter((f) => opts.hashes === true || f.sha256 !== null));
  // the files' SHA-256 on a second thread while this one writes (hash-thread.ts)
  const hasher = byteHasher([...hashed].reduce((s, f) => s + f.size, 0));
  try {
    for (const f of chip.manifest.files) {
      const file = path.join(tmpDir, f.name);
      const hash = hashed.has(f) ? hasher.newHash() : null;
      const fd = fs.openSync(file, 'wx');
      try {
        const w = new BufferedWriter(fd, hash ? [hash] : [], opts.holes !== false);
        if (f.kind === 'raw') {
          if (f.codec === 'none') copyPayload(chip, w, f.data[0], f.data[1], copyBytes);
          else w.write(chip.readFile(f.name));
        } else {
          copyPayload(chip, w, f.header[0], f.header[1], copyBytes);
          for (const t of f.tensors) {
            const { starts, lengths } = chip.blocks(t.name);
            const byteLength = t.dataOffsets[1] - t.dataOffsets[0];
            let pos = 0;
            let at0 = 0; // block k's offset in the block data (the blocks' bytes are contiguous)
            // Block bytes are contiguous in the block data: copy them in big pieces, splitting at block ends.
            let k = 0;
            while (k < starts.length) {
              w.writeZeros(starts[k] - pos);
              if (lengths[k] > copyBytes) {
                for (let at = 0; at < lengths[k]; at += copyBytes) {
                  w.write(chip.readBlockData(t.name, at0 + at, at0 + Math.min(lengths[k], at + copyBytes)));
                }
                pos = starts[k] + lengths[k];
                at0 += lengths[k];
                k++;
                continue;
              }
              let runEnd = k + 1;
              let stored = lengths[k];
              while (runEnd < starts.length && stored + lengths[runEnd] <= copyBytes) stored += lengths[runEnd++];
              const data = chip.readBlockData(t.name, at0, at0 + stored);
              at0 += stored;
              let off = 0;
              for (let j = k; j < runEnd; j++) {
                if (j > k) w.writeZeros(starts[j] - (starts[j - 1] + lengths[j - 1]));
                w.write(data.subarray(off, off + lengths[j]));
                off += lengths[j];
              }
              pos = starts[runEnd - 1] + lengths[runEnd - 1];
              k = runEnd;
            }
            w.writeZeros(byteLength - pos);
          }
        }
        w.end();
        if (w.position !== f.size) throw new ChipcError('chipfile.expand-mismatch', `${chip.path}: regenerated ${f.name} has ${w.position} bytes, the manifest says ${f.size}`);
        const sha = hash?.digestHex() ?? null;
        if (f.sha256 !== null && sha !== f.sha256) throw new ChipcError('chipfile.expand-mismatch', `${chip.path}: regenerated ${f.name} has SHA-256 ${sha}, the manifest says ${f.sha256}`);
        fs.fsyncSync(fd);
        bytes += w.position;
        if (sha !== null) sha256[f.name] = sha;
      } finally {
        fs.closeSync(fd);
      }
    }
    moveDirIntoPlace(tmpDir, target);
  } catch (e) {
    removeTemp(tmpDir);
    throw e;
  } finally {
    hasher.close();
  }
  return { dir, files: chip.fileNames(), bytes, sha256 };
}

/** Opens `chipPath`, validates it, writes its directory to `dir`, closes it. */
export function expandChipFile(chipPath: string, dir: string, opts: ExpandOptions = {}): ExpandResult {
  const chip = openChipFile(chipPath);
  try {
    return expandChip(chip, dir, opts);
  } finally {
    chip.close();
  }
}
