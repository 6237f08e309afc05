/**
 * src/exec/conv-alias.ts: which conv blocks repeat an earlier one (the same stacked in_proj rows and
 * conv weights, bit for bit), and which of those a track runs through their representative (the
 * same window, record and output at its first step). The tracked step with aliased blocks against
 * the full step is in test/exec-sparse-decode.test.ts ("aliased conv blocks") and, on compiled
 * circuits, test/exec-delta.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { aliasesOfTrack, convAlias, copyAliasOutputs, copyAliasWindows } from '../src/exec/conv-alias.ts';
import type { GdnDims } from '../src/model/naming.ts';
import type { CsrMatrix } from '../src/model/weights.ts';

/** 2 key heads and 3 value heads of 2 channels, K = 2: 4 key blocks (channels 0–7) and 3 value blocks (8–13). */
const D: GdnDims = { hk: 2, hv: 3, dk: 2, dv: 2, r: 1.5, keyDim: 4, valueDim: 6, convDim: 14, groupRows: 0, K: 2, qScale: 1 };

/** A CSR of one row per channel from [column, value] lists. */
function csrOf(rows: [number, number][][]): CsrMatrix {
  const rowPtr = new Uint32Array(rows.length + 1);
  const colIdx: number[] = [], values: number[] = [];
  rows.forEach((r, i) => { for (const [c, v] of r) { colIdx.push(c); values.push(v); } rowPtr[i + 1] = colIdx.length; });
  return { rowPtr, colIdx: Uint32Array.from(colIdx), values: Float32Array.from(values) };
}

/** Rows where key blocks 1 and 3 repeat block 0 and value block 2 repeats block 0, with `edit` applied to the rows and weights. */
function layer(edit?: (rows: [number, number][][], cw: Float32Array) => void) {
  type Row = [number, number][];
  const block = (): Row[] => [[[0, 1], [3, 2]], [[1, 0.5]]];
  const rows: Row[] = [...block(), [[2, 1]], [[2, 1], [4, 1]], ...block(), [[5, 1]], [[6, 1]], ...block(), [[7, 3]], [], ...block()];
  const cw = new Float32Array(D.convDim * D.K).fill(1);
  edit?.(rows, cw);
  return { csr: csrOf(rows), cw };
}

describe('conv aliases', () => {
  it('convAlias: a block repeats the first earlier block of its kind with the same rows and conv weights', () => {
    const { csr, cw } = layer();
    const a = convAlias(csr, cw, D);
    // key blocks: 0, 1 (its own), 2 = block 0, 3 (its own); value block 2 = value block 0 (value block 0 has key block 0's rows, but a value block repeats value blocks only)
    expect(Array.from(a.keyRep)).toEqual([-1, -1, 0, -1]);
    expect(Array.from(a.valueRep)).toEqual([-1, -1, 0]);
    expect(a.count).toBe(2);
  });

  it('convAlias: one value bit, column, entry count or conv weight bit apart (−0 against +0 included) is not a repeat', () => {
    const edits: ((rows: [number, number][][], cw: Float32Array) => void)[] = [
      (rows) => { rows[5]![0]![1] = 0.5000001; },
      (rows) => { rows[4]![1]![0] = 2; },
      (rows) => { rows[5]!.push([9, 1]); },
      (_, cw) => { cw[4 * D.K + 1] = -0; cw[0 * D.K + 1] = 0; },
      (_, cw) => { cw[13 * D.K] = 2; },
    ];
    const want = [[-1, -1, -1, -1, -1, -1, 0], [-1, -1, -1, -1, -1, -1, 0], [-1, -1, -1, -1, -1, -1, 0], [-1, -1, -1, -1, -1, -1, 0], [-1, -1, 0, -1, -1, -1, -1]];
    edits.forEach((edit, i) => {
      const { csr, cw } = layer(edit);
      const a = convAlias(csr, cw, D);
      expect([...a.keyRep, ...a.valueRep], `edit ${i}`).toEqual(want[i]);
    });
  });

  it('aliasesOfTrack: only blocks holding their representative\'s window, record and output; their channels leave the active list, flagged active', () => {
    const { csr, cw } = layer();
    const a = convAlias(csr, cw, D);
    const convBits = new Uint32Array(D.convDim * D.K);
    const chan = new Int32Array(4 * D.convDim);
    const conBits = new Uint32Array(D.convDim);
    for (let c = 0; c < D.convDim; c++) { convBits[c * D.K] = 100 + (c % 2); convBits[c * D.K + 1] = 7; chan[4 * c + 3] = 7; conBits[c] = 40 + (c % 2); }
    const active = Int32Array.from([0, 3, 4, 5, 9, 12, 13]);
    const out = new Int32Array(1);
    // value block 2 (channels 12, 13) holds its representative's (8, 9); key block 2 (4, 5) has one tap apart
    convBits[5 * D.K] = 1;
    const stack = { rows: D.convDim, cols: 10, csr };
    const t = aliasesOfTrack(a, stack, D, convBits, chan, conBits, active, active.length, out)!;
    expect(t.stack).toBe(stack);
    expect([t.walk, t.complete]).toEqual([null, false]); // (key block 2 not aliased: the aliases are not complete)
    expect(Array.from(t.keyBlocks)).toEqual([]);
    expect(Array.from(t.valueBlocks)).toEqual([2]);
    expect(Array.from(t.valueReps)).toEqual([0]);
    expect(Array.from(t.src)).toEqual([0, 1, 2, 3, 0, 1, 0]);
    expect(Array.from(active.subarray(0, out[0]))).toEqual([0, 3, 4, 5, 9]);
    expect([12, 13].map((c) => chan[4 * c + 1]! & 1)).toEqual([1, 1]);
    expect([8, 9].map((c) => chan[4 * c + 1]! & 1)).toEqual([0, 0]);
    // a record or an output apart: not aliased either
    for (const apart of [(c: number) => { chan[4 * c] = 3; }, (c: number) => { conBits[c] = 0; }]) {
      const ch2 = new Int32Array(4 * D.convDim);
      const cb2 = conBits.slice();
      const saved = chan.slice();
      chan.set(ch2);
      for (let c = 0; c < D.convDim; c++) chan[4 * c + 3] = 7;
      apart(13);
      const n = new Int32Array(1);
      expect(aliasesOfTrack(a, stack, D, convBits, chan, conBits, Int32Array.from([1]), 1, n)).toBeNull();
      expect(n[0]).toBe(1);
      chan.set(saved);
      conBits.set(cb2);
    }
    // the windows and outputs an aliased block would hold are its representative's
    const conv = Float32Array.from({ length: D.convDim * D.K }, (_, i) => i);
    copyAliasWindows(t, conv);
    expect(Array.from(conv.subarray(12 * D.K, 14 * D.K))).toEqual([16, 17, 18, 19]);
    expect(conv[11 * D.K]).toBe(22);
    const conved = Float32Array.from({ length: D.convDim }, (_, i) => i);
    copyAliasOutputs(t, conved);
    expect(Array.from(conved.subarray(12))).toEqual([8, 9]);
  });
});
