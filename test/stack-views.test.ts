/**
 * Row stacks as views (src/exec/stack-rows.ts) and the entry arena that makes them possible
 * (src/model/load-weights.ts): a `.chip` loads the matrices the executor stacks — a GDN layer's
 * in_proj_qkv, z, b and a, an MLP's gate and up — into one pair of entry arrays, part after part,
 * and rowStackOf then takes the stack's entries as a view of them instead of a copy. The stack
 * must hold exactly the entries a copy holds (the same rows, columns and value bits) whether it is
 * a view or not, and it may be a view only when the parts' entries lie end to end.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { rowStackOf } from '../src/exec/stack-rows.ts';
import { ExecPlans } from '../src/exec/plans.ts';
import { loadModel, loadModelFromChipFile } from '../src/model/load-weights.ts';
import { saveModel } from '../src/model/save-weights.ts';
import { randomModelWeights } from '../src/model/random-weights.ts';
import { resolveTarget } from '../src/model/targets.ts';
import { compactCheckpoint } from '../src/chipfile/compact.ts';
import { openChipFile } from '../src/chipfile/read.ts';
import type { CsrMatrix, Matrix, ModelWeights } from '../src/model/weights.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-stack-views-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const u32 = (a: Float32Array): number[] => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));

/** A CSR's stored entries as (row, column, value bits) triples, row by row. */
function entries(csr: CsrMatrix, rows: number): [number, number, number][] {
  const out: [number, number, number][] = [];
  const vb = new Uint32Array(csr.values.buffer, csr.values.byteOffset, csr.values.length);
  for (let r = 0; r < rows; r++) for (let k = csr.rowPtr[r]!; k < csr.rowPtr[r + 1]!; k++) out.push([r, csr.colIdx[k]!, vb[k]!]);
  return out;
}

/** The stack's expected entries: each part's rows after the rows of the parts before it. */
function laidEndToEnd(parts: readonly Matrix[]): [number, number, number][] {
  const out: [number, number, number][] = [];
  let base = 0;
  for (const m of parts) {
    for (const [r, c, v] of entries(m.csr!, m.rows)) out.push([base + r, c, v]);
    base += m.rows;
  }
  return out;
}

/** One random part: rows × cols, each entry present with probability ~1/3 (sorted columns per row). */
const partArb = (cols: number) => fc.record({
  rows: fc.integer({ min: 1, max: 6 }),
  cells: fc.array(fc.tuple(fc.boolean(), fc.boolean(), fc.float({ noNaN: true }).filter((v) => v !== 0)), { minLength: 6 * cols, maxLength: 6 * cols }),
});

/**
 * The parts' CSRs carved from one buffer pair: part p's entries start `gaps[p]` entries after part
 * p − 1's end (a gap of 0 after the first part lays them end to end), and its arrays are views
 * that begin up to `lead[p]` entries before its entries (its rowPtr then starts there, not at 0).
 */
function carve(specs: { rows: number; cells: [boolean, boolean, number][] }[], cols: number, gaps: number[], lead: number[]): Matrix[] {
  const per = specs.map(({ rows, cells }) => {
    const colIdx: number[] = [];
    const values: number[] = [];
    const rowPtr = [0];
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        const [a, b, v] = cells[r * cols + c]!;
        if (a && b) { colIdx.push(c); values.push(v); }
      }
      rowPtr.push(colIdx.length);
    }
    return { rows, colIdx, values, rowPtr };
  });
  const total = per.reduce((n, p, i) => n + gaps[i]! + p.colIdx.length, 0);
  const ci = new Uint32Array(total);
  const vs = new Float32Array(total);
  let at = 0;
  return per.map((p, i) => {
    at += gaps[i]!;
    const start = Math.max(0, at - lead[i]!);
    const rowPtr = Uint32Array.from(p.rowPtr, (k) => k + at - start);
    ci.set(p.colIdx, at);
    vs.set(p.values, at);
    at += p.colIdx.length;
    return { rows: p.rows, cols, csr: { rowPtr, colIdx: ci.subarray(start, at), values: vs.subarray(start, at) } };
  });
}

describe('rowStackOf on parts that share entry arrays', () => {
  it('property: the stack holds the parts\' entries laid end to end, and is a view exactly when they are adjacent', () => {
    fc.assert(fc.property(
      fc.integer({ min: 1, max: 5 }).chain((cols) => fc.tuple(
        fc.constant(cols),
        fc.array(partArb(cols), { minLength: 1, maxLength: 4 }),
      )).chain(([cols, specs]) => fc.tuple(
        fc.constant(cols), fc.constant(specs),
        fc.array(fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 3 }) }), { minLength: specs.length, maxLength: specs.length }),
        fc.array(fc.integer({ min: 0, max: 2 }), { minLength: specs.length, maxLength: specs.length }),
      )),
      ([cols, specs, gaps, lead]) => {
        const parts = carve(specs, cols, gaps, lead);
        const stack = rowStackOf(new ExecPlans(), parts);
        expect(stack).not.toBeNull();
        const rows = parts.reduce((n, m) => n + m.rows, 0);
        expect(entries(stack!.m.csr!, rows)).toEqual(laidEndToEnd(parts));
        // adjacent: no gap after the first part's start (a gap before the first part is no gap between parts)
        const adjacent = gaps.every((g, i) => i === 0 || g === 0);
        const shared = stack!.m.csr!.colIdx.buffer === parts[0]!.csr!.colIdx.buffer;
        expect(shared).toBe(adjacent);
        expect(stack!.m.csr!.values.buffer === parts[0]!.csr!.values.buffer).toBe(adjacent);
      },
    ), { numRuns: 300 });
  });

  it('copies parts whose columns and values come from different buffers', () => {
    const [a, b] = carve([
      { rows: 1, cells: [[true, true, 1], [true, true, 2]] },
      { rows: 1, cells: [[true, true, 3], [false, true, 4]] },
    ], 2, [0, 0], [0, 0]);
    // b's values moved to a buffer of their own: same entries, not adjacent to a's
    const moved: Matrix = { ...b!, csr: { ...b!.csr!, values: b!.csr!.values.slice() } };
    const stack = rowStackOf(new ExecPlans(), [a!, moved])!;
    expect(stack.m.csr!.values.buffer).not.toBe(a!.csr!.values.buffer);
    expect(entries(stack.m.csr!, 2)).toEqual(laidEndToEnd([a!, moved]));
  });
});

/** Every float32 array in `w`, cut to bfloat16 (its low 16 bits cleared), in place. */
function toBf16(w: unknown, seen = new Set<unknown>()): void {
  if (w === null || typeof w !== 'object' || seen.has(w)) return;
  seen.add(w);
  if (w instanceof Float32Array) {
    const b = new Uint32Array(w.buffer, w.byteOffset, w.length);
    for (let k = 0; k < b.length; k++) b[k] = b[k]! & 0xffff0000;
    return;
  }
  if (ArrayBuffer.isView(w)) return;
  for (const v of Object.values(w)) toBf16(v, seen);
}

/** A random tiny model (bfloat16 values) with most weights zeroed (so a `.chip` stores them in several blocks) and in_proj_b all zero. */
function sparseTinyModel(seed: number): ModelWeights {
  const w = randomModelWeights(resolveTarget('tiny').config, seed);
  toBf16(w);
  let i = 0;
  const thin = (m: Matrix, keepEvery: number): void => {
    for (let k = 0; k < m.dense!.length; k++) if ((k * 7919 + i) % keepEvery !== 0) m.dense![k] = 0;
    i++;
  };
  for (const layer of w.layers) {
    if (layer.mixer.kind === 'linear_attention') {
      thin(layer.mixer.inProjQkv, 5);
      thin(layer.mixer.inProjZ, 3);
      layer.mixer.inProjB.dense!.fill(0);
      thin(layer.mixer.inProjA, 2);
    }
    if (layer.mlp.kind === 'dense') {
      thin(layer.mlp.gateProj, 4);
      thin(layer.mlp.upProj, 6);
    }
  }
  return w;
}

describe('a .chip loads the stacked matrices into one entry arena', () => {
  for (const dtype of ['BF16', 'F32'] as const) {
    it(`${dtype}: the same matrices as the safetensors load, adjacent, and stacked as views`, () => {
      const dir = path.join(tmp, `tiny-${dtype}`);
      saveModel(dir, sparseTinyModel(dtype === 'BF16' ? 3 : 4), { dtype });
      const chipPath = path.join(tmp, `tiny-${dtype}.chip`);
      compactCheckpoint(dir, chipPath);
      const plain = loadModel(dir, { mode: 'sparse' });
      const file = openChipFile(chipPath);
      const chip = loadModelFromChipFile(file, chipPath, { mode: 'sparse' });
      file.close();
      let groups = 0;
      chip.layers.forEach((layer, li) => {
        const want = plain.layers[li]!;
        const pairs: [Matrix[], Matrix[]][] = [];
        if (layer.mixer.kind === 'linear_attention' && want.mixer.kind === 'linear_attention') {
          const m = layer.mixer;
          const p = want.mixer;
          pairs.push([[m.inProjQkv, m.inProjZ, m.inProjB, m.inProjA], [p.inProjQkv, p.inProjZ, p.inProjB, p.inProjA]]);
        }
        if (layer.mlp.kind === 'dense' && want.mlp.kind === 'dense') {
          pairs.push([[layer.mlp.gateProj, layer.mlp.upProj], [want.mlp.gateProj, want.mlp.upProj]]);
        }
        for (const [got, ref] of pairs) {
          groups++;
          got.forEach((m, k) => {
            expect(m.rows).toBe(ref[k]!.rows);
            expect(Array.from(m.csr!.rowPtr)).toEqual(Array.from(ref[k]!.csr!.rowPtr));
            expect(Array.from(m.csr!.colIdx)).toEqual(Array.from(ref[k]!.csr!.colIdx));
            expect(u32(m.csr!.values)).toEqual(u32(ref[k]!.csr!.values));
          });
          const stack = rowStackOf(new ExecPlans(), got)!;
          const copied = rowStackOf(new ExecPlans(), ref)!;
          expect(stack.m.csr!.colIdx.buffer).toBe(got[0]!.csr!.colIdx.buffer);
          expect(stack.m.csr!.values.buffer).toBe(got[0]!.csr!.values.buffer);
          expect(copied.m.csr!.colIdx.buffer).not.toBe(ref[0]!.csr!.colIdx.buffer);
          const rows = got.reduce((n, m) => n + m.rows, 0);
          expect(entries(stack.m.csr!, rows)).toEqual(entries(copied.m.csr!, rows));
        }
      });
      // tiny: three GDN layers and four dense MLPs
      expect(groups).toBe(7);
    });
  }
});
