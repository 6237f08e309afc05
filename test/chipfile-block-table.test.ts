/**
 * decodeBlockTable's narrow loop (tensors below 4 GiB) against the checked decoder it falls back
 * to: on every table, valid or damaged, the two must agree — the same starts, lengths and block
 * data offsets, or the same refusal.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { BLOCK_MARK_STRIDE, blockDataPos, blockMarks, decodeBlockTable, decodeBlockTableChecked, encodeBlockTable, type BlockTable } from '../src/chipfile/format.ts';

const fail = (msg: string): never => {
  throw new Error(msg);
};

type Outcome = { table: { starts: number[]; lengths: number[]; dataPos: number[]; kind: string } } | { error: string };

function outcome(decode: typeof decodeBlockTable, bytes: Uint8Array, count: number, byteLength: number, dataLength: number, minGap: number): Outcome {
  let t: BlockTable;
  try {
    t = decode(bytes, count, byteLength, dataLength, minGap, fail);
  } catch (e) {
    return { error: (e as Error).message };
  }
  const dataPos = Array.from(t.starts, (_, k) => blockDataPos(t, k));
  return { table: { starts: [...t.starts], lengths: [...t.lengths], dataPos, kind: t.starts.constructor.name } };
}

/** Blocks as (gap, length) pairs: gaps after the first ≥ minGap, lengths ≥ 1; some values need 4–5 varint bytes. */
const blocksArb = (minGap: number) => fc.array(
  fc.record({
    gap: fc.oneof(fc.integer({ min: minGap, max: minGap + 300 }), fc.integer({ min: minGap, max: 2 ** 31 })),
    length: fc.oneof(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 1, max: 2 ** 24 })),
  }),
  { maxLength: 40 },
);

function layout(blocks: { gap: number; length: number }[], firstGap: number): { starts: number[]; lengths: number[]; end: number; data: number } {
  const starts: number[] = [];
  const lengths: number[] = [];
  let end = 0;
  let data = 0;
  blocks.forEach((b, k) => {
    const start = end + (k === 0 ? firstGap : b.gap);
    starts.push(start);
    lengths.push(b.length);
    end = start + b.length;
    data += b.length;
  });
  return { starts, lengths, end, data };
}

describe('block tables: the narrow loop and the checked decoder', () => {
  it('decode valid tables to the blocks they encode, as Uint32Arrays below 4 GiB (lengths in a Uint16Array when they fit) and Float64Arrays above', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 0, max: 2 ** 20 }), fc.integer({ min: 0, max: 1000 }), fc.boolean(),
      (minGap, firstGap, slack, wide) => fc.assert(fc.property(blocksArb(minGap), (blocks) => {
        const { starts, lengths, end, data } = layout(blocks, firstGap);
        const byteLength = wide ? 2 ** 33 + end + slack : Math.min(0xffffffff, end + slack);
        if (end > byteLength) return;
        const bytes = encodeBlockTable(starts, lengths, blocks.length);
        const fast = outcome(decodeBlockTable, bytes, blocks.length, byteLength, data, minGap);
        expect(fast).toEqual(outcome(decodeBlockTableChecked, bytes, blocks.length, byteLength, data, minGap));
        expect('table' in fast).toBe(true);
        if (!('table' in fast)) return;
        expect(fast.table.starts).toEqual(starts);
        expect(fast.table.lengths).toEqual(lengths);
        expect(fast.table.kind).toBe(wide ? 'Float64Array' : 'Uint32Array');
        // lengths in 16 bits where every block is shorter than 64 KiB (the fast loop's tables)
        const t = decodeBlockTable(bytes, blocks.length, byteLength, data, minGap, fail);
        expect(t.lengths.constructor.name).toBe(wide ? 'Float64Array' : lengths.every((l) => l <= 0xffff) ? 'Uint16Array' : 'Uint32Array');
      }), { numRuns: 5 })), { numRuns: 40 });
  });

  it('place every block in the block data by its marks: the prefix sums of the lengths, over many mark strides', () => {
    fc.assert(fc.property(
      fc.array(fc.integer({ min: 1, max: 5000 }), { maxLength: 5 * BLOCK_MARK_STRIDE + 3 }), fc.boolean(), fc.nat({ max: 1000 }),
      (lengths, wide, first) => {
        const starts = lengths.map((_, k) => 10 * k + lengths.slice(0, k).reduce((a, b) => a + b, 0));
        const end = lengths.length === 0 ? 0 : starts[starts.length - 1]! + lengths[lengths.length - 1]!;
        const data = lengths.reduce((a, b) => a + b, 0);
        const bytes = encodeBlockTable(starts, lengths, lengths.length);
        const prefix = [0];
        for (const l of lengths) prefix.push(prefix[prefix.length - 1]! + l);
        for (const decode of [decodeBlockTable, decodeBlockTableChecked]) {
          const t = decode(bytes, lengths.length, wide ? 2 ** 33 : end, data, 10, fail);
          expect(Array.from({ length: lengths.length + 1 }, (_, k) => blockDataPos(t, k))).toEqual(prefix);
          expect([...t.marks]).toEqual([...blockMarks(lengths, lengths.length)]);
        }
        // blocks whose bytes start elsewhere in the block data (a row cut from a table)
        const shifted: BlockTable = { starts: Float64Array.from(starts), lengths: Float64Array.from(lengths), marks: blockMarks(lengths, lengths.length, first) };
        expect(Array.from({ length: lengths.length + 1 }, (_, k) => blockDataPos(shifted, k))).toEqual(prefix.map((p) => p + first));
      }), { numRuns: 300 });
  });

  it('agree on damaged tables: flipped, inserted and dropped bytes, over-long and long varints, wrong counts and sums', () => {
    const edit = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), at: fc.nat(), byte: fc.oneof(fc.constantFrom(0x00, 0x80, 0x81, 0xff, 0x7f), fc.integer({ min: 0, max: 255 })) }),
      fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), byte: fc.constantFrom(0x00, 0x80, 0x81, 0xff) }),
      fc.record({ kind: fc.constant('drop' as const), at: fc.nat(), byte: fc.constant(0) }),
    );
    fc.assert(fc.property(
      fc.integer({ min: 1, max: 16 }), blocksArb(4), fc.array(edit, { maxLength: 3 }),
      fc.integer({ min: -1, max: 1 }), fc.integer({ min: -1, max: 1 }), fc.integer({ min: -2, max: 2 }),
      (minGap, blocks, edits, countShift, dataShift, lengthShift) => {
        const { starts, lengths, end, data } = layout(blocks.map((b) => ({ gap: b.gap + minGap, length: b.length })), 3);
        let bytes = [...encodeBlockTable(starts, lengths, blocks.length)];
        for (const e of edits) {
          const at = bytes.length === 0 ? 0 : e.at % (bytes.length + (e.kind === 'insert' ? 1 : 0));
          if (e.kind === 'set' && bytes.length > 0) bytes[at] = e.byte;
          else if (e.kind === 'insert') bytes.splice(at, 0, e.byte);
          else if (e.kind === 'drop' && bytes.length > 0) bytes.splice(at, 1);
        }
        const u8 = Uint8Array.from(bytes);
        const count = Math.max(0, blocks.length + countShift);
        const byteLength = Math.min(0xffffffff, Math.max(0, end + lengthShift));
        const dataLength = Math.max(0, data + dataShift);
        expect(outcome(decodeBlockTable, u8, count, byteLength, dataLength, minGap))
          .toEqual(outcome(decodeBlockTableChecked, u8, count, byteLength, dataLength, minGap));
      }), { numRuns: 3000 });
  });

  it('refuse what the checked decoder names, with its message (hand-made tables)', () => {
    // (gap, length) = (2, 2), (27, 1) in a 32-byte tensor, 3 bytes of block data, minGap 8
    const ok = [2, 2, 27, 1];
    const decode = (bytes: number[], count = 2, byteLength = 32, dataLength = 3) =>
      outcome(decodeBlockTable, Uint8Array.from(bytes), count, byteLength, dataLength, 8);
    expect(decode(ok)).toEqual({ table: { starts: [2, 31], lengths: [2, 1], dataPos: [0, 2], kind: 'Uint32Array' } });
    expect(decode([2, 2, 0x9b, 0x00, 1])).toEqual({ error: "block 1's gap is an over-long varint" });
    expect(decode([2, 2, 27, 1, 0])).toEqual({ error: 'block table has 1 bytes after its 2 blocks' });
    expect(decode([2, 2, 7, 1])).toMatchObject({ error: expect.stringMatching(/less than minGap 8/) });
    expect(decode(ok, 2, 31)).toMatchObject({ error: expect.stringMatching(/runs past the tensor's 31 bytes/) });
    expect(decode(ok, 3)).toEqual({ error: "block table ends inside block 2's gap" });
    expect(decode([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 1], 1, 32, 1)).toEqual({ error: "block 0's gap has more than 8 varint bytes" });
    // a six-byte varint is canonical but past any tensor below 4 GiB: the checked decoder names it
    expect(decode([0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 1], 1, 0xffffffff, 1)).toMatchObject({ error: expect.stringMatching(/runs past/) });
  });
});
