/**
 * Reader: one crafted failing input per validation rule (asserting its error code), valid edge
 * cases (scalars, empty tensors), range checks, and lazy reading of a multi-GB sparse file proven
 * by counting the bytes that pass through the injected read function.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ChipcError } from '../src/util/errors.ts';
import { openSafetensors, openSafetensorsBuffer } from '../src/safetensors/reader.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-st-reader-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A file image: u64 LE `n` (default: header byte length), the header bytes, then `data`. */
function craft(header: string | Uint8Array, data: Uint8Array | number = 0, n?: bigint): Uint8Array {
  const h = typeof header === 'string' ? new TextEncoder().encode(header) : header;
  const d = typeof data === 'number' ? new Uint8Array(data) : data;
  const out = new Uint8Array(8 + h.length + d.length);
  new DataView(out.buffer).setBigUint64(0, n ?? BigInt(h.length), true);
  out.set(h, 8);
  out.set(d, 8 + h.length);
  return out;
}

function code(img: Uint8Array): string {
  try {
    openSafetensorsBuffer(img, 'crafted.safetensors');
  } catch (e) {
    if (!(e instanceof ChipcError)) throw e;
    expect(e.message.startsWith('crafted.safetensors: ')).toBe(true);
    return e.code;
  }
  return 'OK';
}

const t = (name: string, dtype: string, shape: unknown, offsets: unknown): string =>
  `${JSON.stringify(name)}:{"dtype":${JSON.stringify(dtype)},"shape":${JSON.stringify(shape)},"data_offsets":${JSON.stringify(offsets)}}`;

describe('validation rules (one crafted input each)', () => {
  const cases: [string, Uint8Array, string][] = [
    ['file shorter than 8 bytes', new Uint8Array(5), 'safetensors.file-too-small'],
    ['header size above 100,000,000', craft('{}', 0, 100_000_001n), 'safetensors.header-too-large'],
    ['header size 2^64 − 1', craft('{}', 0, 2n ** 64n - 1n), 'safetensors.header-too-large'],
    ['header runs past EOF', craft('{}', 0, 100n), 'safetensors.header-past-eof'],
    ['header not UTF-8', craft(new Uint8Array([0x7b, 0xff, 0x7d])), 'safetensors.header-utf8'],
    ['header starts with a space', craft(' {}'), 'safetensors.header-start'],
    ['header is an array', craft('[]'), 'safetensors.header-start'],
    ['header is empty', craft(''), 'safetensors.header-start'],
    ['header starts with a BOM', craft('\ufeff{}'), 'safetensors.header-start'],
    ['header is not JSON', craft('{"a":'), 'safetensors.header-json'],
    ['trailing comma', craft('{"a":1,}'), 'safetensors.header-json'],
    ['deep nesting', craft('{"a":' + '['.repeat(200) + ']'.repeat(200) + '}'), 'safetensors.header-json'],
    ['newline padding', craft('{}\n'), 'safetensors.header-padding'],
    ['NUL padding', craft('{}\0\0'), 'safetensors.header-padding'],
    ['junk after the object', craft('{}  x'), 'safetensors.header-padding'],
    ['unknown dtype', craft(`{${t('a', 'F33', [1], [0, 4])}}`, 4), 'safetensors.dtype'],
    ['dtype not a string', craft('{"a":{"dtype":7,"shape":[1],"data_offsets":[0,1]}}', 1), 'safetensors.dtype'],
    ['shape not an array', craft(`{${t('a', 'U8', 'x', [0, 1])}}`, 1), 'safetensors.shape'],
    ['negative dimension', craft(`{${t('a', 'U8', [-1], [0, 1])}}`, 1), 'safetensors.shape'],
    ['fractional dimension', craft('{"a":{"dtype":"U8","shape":[1.5],"data_offsets":[0,1]}}', 1), 'safetensors.shape'],
    ['exponent dimension', craft('{"a":{"dtype":"U8","shape":[1e0],"data_offsets":[0,1]}}', 1), 'safetensors.shape'],
    ['string dimension', craft(`{${t('a', 'U8', ['1'], [0, 1])}}`, 1), 'safetensors.shape'],
    ['data_offsets of one integer', craft(`{${t('a', 'U8', [1], [0])}}`, 1), 'safetensors.data-offsets'],
    ['data_offsets of three integers', craft(`{${t('a', 'U8', [1], [0, 1, 2])}}`, 1), 'safetensors.data-offsets'],
    ['data_offsets not integers', craft('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0.0,1]}}', 1), 'safetensors.data-offsets'],
    ['data_offsets end before begin', craft(`{${t('a', 'U8', [0], [1, 0])}}`, 1), 'safetensors.data-offsets'],
    ['__metadata__ value not a string', craft('{"__metadata__":{"format":1}}'), 'safetensors.metadata'],
    ['__metadata__ not an object', craft('{"__metadata__":"pt"}'), 'safetensors.metadata'],
    ['__metadata__ nested object', craft('{"__metadata__":{"a":{}}}'), 'safetensors.metadata'],
    ['duplicate tensor name', craft(`{${t('a', 'U8', [1], [0, 1])},${t('a', 'U8', [1], [1, 2])}}`, 2), 'safetensors.duplicate-key'],
    ['duplicate key inside __metadata__', craft('{"__metadata__":{"format":"pt","format":"pt"}}'), 'safetensors.duplicate-key'],
    ['duplicate __metadata__', craft('{"__metadata__":{},"__metadata__":{}}'), 'safetensors.duplicate-key'],
    ['duplicate field in an entry', craft('{"a":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}}', 1), 'safetensors.duplicate-key'],
    ['entry not an object', craft('{"a":[1]}'), 'safetensors.tensor-entry'],
    ['entry missing shape', craft('{"a":{"dtype":"U8","data_offsets":[0,1]}}', 1), 'safetensors.tensor-entry'],
    ['entry with an unknown field', craft('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":1}}', 1), 'safetensors.tensor-entry'],
    ['first tensor not at 0', craft(`{${t('a', 'U8', [4], [4, 8])}}`, 8), 'safetensors.offset-start'],
    ['gap between tensors', craft(`{${t('a', 'U8', [4], [0, 4])},${t('b', 'U8', [4], [8, 12])}}`, 12), 'safetensors.offset-gap'],
    ['overlapping tensors', craft(`{${t('a', 'U8', [4], [0, 4])},${t('b', 'U8', [4], [2, 6])}}`, 6), 'safetensors.offset-overlap'],
    ['size ≠ numel·bits/8', craft(`{${t('a', 'F32', [2], [0, 4])}}`, 4), 'safetensors.tensor-size'],
    ['numel overflowing 2^64 (exact BigInt check)', craft(`{${t('a', 'U8', [2 ** 47, 2 ** 47], [0, 0])}}`), 'safetensors.tensor-size'],
    ['F4 with an odd element count', craft(`{${t('a', 'F4', [3], [0, 2])}}`, 2), 'safetensors.misaligned'],
    ['F6 with one element', craft(`{${t('a', 'F6_E2M3', [1], [0, 1])}}`, 1), 'safetensors.misaligned'],
    ['trailing bytes', craft(`{${t('a', 'U8', [2], [0, 2])}}`, 3), 'safetensors.trailing-bytes'],
    ['trailing bytes, no tensors', craft('{}', 1), 'safetensors.trailing-bytes'],
    ['truncated data', craft(`{${t('a', 'U8', [2], [0, 2])}}`, 1), 'safetensors.truncated'],
    ['dimension 2^48', craft(`{${t('a', 'U8', [2 ** 48], [0, 0])}}`), 'safetensors.int-range'],
    ['offset 2^48', craft(`{${t('a', 'U8', [0], [2 ** 48, 2 ** 48])}}`), 'safetensors.int-range'],
    ['20-digit integer', craft('{"a":{"dtype":"U8","shape":[99999999999999999999],"data_offsets":[0,0]}}'), 'safetensors.int-range'],
  ];
  for (const [what, img, want] of cases) it(`${what} → ${want}`, () => expect(code(img)).toBe(want));

  it('accepts what the reference accepts', () => {
    expect(code(craft('{}'))).toBe('OK');
    expect(code(craft('{}      '))).toBe('OK');
    expect(code(craft('{ "__metadata__" : { "format" : "pt" } , "a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]} }', 2))).toBe('OK');
    // dimension 2^48 − 1 is allowed when numel is 0
    expect(code(craft(`{${t('a', 'U8', [0, 2 ** 48 - 1], [0, 0])}}`))).toBe('OK');
    // F4 pairs and F6 quadruples pack into whole bytes
    expect(code(craft(`{${t('a', 'F4', [2], [0, 1])},${t('b', 'F6_E3M2', [4], [1, 4])}}`, 4))).toBe('OK');
  });

  it('scalars, empty tensors in any key order, sorting by offsets', () => {
    const data = new Uint8Array(8);
    new DataView(data.buffer).setFloat32(0, 2.5, true);
    new DataView(data.buffer).setInt32(4, -7, true);
    const hdr = `{${t('z_empty', 'F32', [0, 5], [4, 4])},${t('s', 'F32', [], [0, 4])},${t('e2', 'BF16', [3, 0], [4, 4])},${t('i', 'I32', [1], [4, 8])},${t('c', 'U8', [0], [4, 4])}}`;
    const st = openSafetensorsBuffer(craft(hdr, data));
    expect(st.names).toEqual(['c', 'e2', 'i', 's', 'z_empty']);
    expect(st.info('s')).toEqual({ name: 's', dtype: 'F32', shape: [], dataOffsets: [0, 4], numel: 1, byteLength: 4 });
    expect(Array.from(st.readF32('s'))).toEqual([2.5]);
    expect(st.readF32('z_empty').length).toBe(0);
    expect(Array.from(st.readF32('i'))).toEqual([-7]);
    expect(st.metadata).toEqual({});
    expect([...st.chunks('z_empty')]).toEqual([]);
  });

  it('readBytes is range-checked; unknown names and closed stores are errors', () => {
    const st = openSafetensorsBuffer(craft(`{${t('a', 'U8', [4], [0, 4])}}`, new Uint8Array([1, 2, 3, 4])));
    expect(Array.from(st.readBytes('a', 1, 3))).toEqual([2, 3]);
    expect(Array.from(st.readBytes('a', 4))).toEqual([]);
    expect(() => st.readBytes('a', 2, 5)).toThrow(expect.objectContaining({ code: 'safetensors.range' }));
    expect(() => st.readBytes('a', 3, 2)).toThrow(expect.objectContaining({ code: 'safetensors.range' }));
    expect(() => st.readBytes('a', -1)).toThrow(expect.objectContaining({ code: 'safetensors.range' }));
    expect(() => st.readBytes('a', 0.5)).toThrow(expect.objectContaining({ code: 'safetensors.range' }));
    expect(() => st.info('b')).toThrow(expect.objectContaining({ code: 'safetensors.no-tensor' }));
    expect([...st.chunks('a', 3)].map((c) => Array.from(c))).toEqual([[1, 2, 3], [4]]);
    expect(() => [...st.chunks('a', 0)]).toThrow(expect.objectContaining({ code: 'safetensors.range' }));
    st.close();
    expect(() => st.readBytes('a')).toThrow(expect.objectContaining({ code: 'safetensors.closed' }));
  });

  it('file errors name the file', () => {
    const p = path.join(tmp, 'bad.safetensors');
    fs.writeFileSync(p, craft(`{${t('a', 'F32', [2], [0, 4])}}`, 4));
    expect(() => openSafetensors(p)).toThrow(expect.objectContaining({ code: 'safetensors.tensor-size', message: expect.stringContaining(`${p}: tensor "a"`) }));
    expect(() => openSafetensors(path.join(tmp, 'missing.safetensors'))).toThrow(expect.objectContaining({ code: 'safetensors.open' }));
    expect(() => openSafetensors(tmp)).toThrow(expect.objectContaining({ code: 'safetensors.open' }));
  });
});

describe('lazy reading', () => {
  it('opens a 6 GB sparse file and reads a tiny tensor with only a few KB of reads', () => {
    const huge = 6 * 2 ** 30;
    const hdr = `{"__metadata__":{"format":"pt"},${t('tiny', 'F32', [2], [0, 8])},${t('huge', 'U8', [huge], [8, 8 + huge])}}`;
    const padded = hdr + ' '.repeat((8 - (hdr.length % 8)) % 8);
    const tiny = new Uint8Array(8);
    new DataView(tiny.buffer).setFloat32(0, 1.5, true);
    new DataView(tiny.buffer).setFloat32(4, -3, true);
    const p = path.join(tmp, 'sparse.safetensors');
    const fd = fs.openSync(p, 'w');
    fs.writeSync(fd, craft(padded, tiny));
    fs.ftruncateSync(fd, 8 + padded.length + 8 + huge); // a hole: costs no disk
    fs.closeSync(fd);
    expect(fs.statSync(p).size).toBe(8 + padded.length + 8 + huge);

    let bytesRead = 0;
    let calls = 0;
    const st = openSafetensors(p, {
      read: (fd2, buf, off, len, pos) => { calls++; const n = fs.readSync(fd2, buf, off, len, pos); bytesRead += n; return n; },
    });
    expect(Array.from(st.readF32('tiny'))).toEqual([1.5, -3]);
    expect(bytesRead).toBe(8 + padded.length + 8); // length, header, the tiny tensor: nothing else
    expect(bytesRead).toBeLessThan(4096);
    // A positional read deep inside the huge tensor reads just that range.
    const slice = st.readBytes('huge', 5 * 2 ** 30, 5 * 2 ** 30 + 16);
    expect(Array.from(slice)).toEqual(new Array(16).fill(0));
    expect(bytesRead).toBe(8 + padded.length + 8 + 16);
    expect(calls).toBe(4);
    st.close();
    fs.rmSync(p);
  });
});
