/** Test helpers: take a `.chip` image apart (manifest text, payload) and put one together again. */
import * as crypto from 'node:crypto';
import { CHECKSUM_BYTES, PREFIX_BYTES } from '../../src/chipfile/format.ts';
import { denseSource, writeCheckpoint } from '../../src/safetensors/writer.ts';

/** Splits a .chip image into its manifest text and payload. */
export function parts(bytes: Uint8Array): { manifest: string; payload: Uint8Array } {
  const m = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(16, true));
  return {
    manifest: new TextDecoder().decode(bytes.subarray(PREFIX_BYTES, PREFIX_BYTES + m)),
    payload: bytes.subarray(PREFIX_BYTES + m, bytes.length - CHECKSUM_BYTES),
  };
}

/** Recomputes the trailing SHA-256 in place (what an attacker or a buggy writer could do). */
export function reseal(bytes: Uint8Array): Uint8Array {
  const body = bytes.subarray(0, bytes.length - CHECKSUM_BYTES);
  bytes.set(crypto.createHash('sha256').update(body).digest(), bytes.length - CHECKSUM_BYTES);
  return bytes;
}

/** Rebuilds a .chip image from a prefix (its first 16 bytes), manifest text and payload, resealed. */
export function assemble(prefixFrom: Uint8Array, manifest: string, payload: Uint8Array): Uint8Array {
  const mb = new TextEncoder().encode(manifest);
  const out = new Uint8Array(PREFIX_BYTES + mb.length + payload.length + CHECKSUM_BYTES);
  out.set(prefixFrom.subarray(0, 16));
  new DataView(out.buffer).setBigUint64(16, BigInt(mb.length), true);
  out.set(mb, PREFIX_BYTES);
  out.set(payload, PREFIX_BYTES + mb.length);
  return reseal(out);
}

/** The small checkpoint of the .chip tests (three tensors, one all zeros; a config.json) in `dir`. */
export function writeSmallCheckpoint(dir: string): void {
  writeCheckpoint(dir, [
    denseSource('a', 'F32', [8], new Float32Array([1, 0, 0, 0, 0, 0, 0, 2])),
    denseSource('b', 'BF16', [2, 3], new Float32Array([0, 0, 0, 0, -3, 0])),
    denseSource('z', 'F32', [4], new Float32Array(4)),
  ], { extraFiles: { 'config.json': '{"x":1}\n' } });
}
