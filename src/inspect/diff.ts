/**
 * Bitwise, streaming comparison of two tensor stores (`chipc diff`). Two tensors are identical
 * when name, dtype, shape and every byte agree; otherwise the first differing element (flat
 * index, both values) and the number of differing elements are reported. Tensors are read in
 * equal-sized chunks of both stores in lockstep, so memory stays bounded by the chunk size.
 */
import type { DType, TensorStore } from '../safetensors/types.ts';
import { decodeElement, elementBytes } from './elements.ts';

export interface TensorDiff {
  name: string;
  status: 'identical' | 'dtype' | 'shape' | 'different';
  dtypeA: DType;
  dtypeB: DType;
  shapeA: number[];
  shapeB: number[];
  /** Flat element index of the first difference (status 'different'). */
  firstIndex?: number;
  firstA?: string;
  firstB?: string;
  /** Number of differing elements (status 'different'). */
  count?: number;
}

export interface StoreDiff {
  identical: boolean;
  onlyInA: string[];
  onlyInB: string[];
  tensors: TensorDiff[];
  /** Tensors compared byte for byte. */
  compared: number;
  bytesCompared: number;
}

const CHUNK = 8 << 20;

export function diffTensor(a: TensorStore, b: TensorStore, name: string): TensorDiff {
  const ia = a.info(name);
  const ib = b.info(name);
  const base = { name, dtypeA: ia.dtype, dtypeB: ib.dtype, shapeA: ia.shape, shapeB: ib.shape };
  if (ia.dtype !== ib.dtype) return { ...base, status: 'dtype' };
  if (ia.shape.length !== ib.shape.length || ia.shape.some((d, i) => d !== ib.shape[i])) {
    return { ...base, status: 'shape' };
  }
  const elem = elementBytes(ia.dtype);
  const chunk = Math.max(elem, CHUNK - (CHUNK % elem));
  const ita = a.chunks(name, chunk)[Symbol.iterator]();
  const itb = b.chunks(name, chunk)[Symbol.iterator]();
  let offset = 0;
  let count = 0;
  let firstIndex = -1;
  let firstA = '';
  let firstB = '';
  for (;;) {
    const ra = ita.next();
    const rb = itb.next();
    if (ra.done || rb.done) break;
    const ca = ra.value;
    const cb = rb.value;
    const n = Math.min(ca.length, cb.length);
    for (let e = 0; e + elem <= n; e += elem) {
      let same = true;
      for (let k = 0; k < elem; k++) {
        if (ca[e + k] !== cb[e + k]) {
          same = false;
          break;
        }
      }
      if (!same) {
        if (count === 0) {
          firstIndex = (offset + e) / elem;
          firstA = decodeElement(ca, e, ia.dtype);
          firstB = decodeElement(cb, e, ia.dtype);
        }
        count++;
      }
    }
    offset += n;
  }
  if (count === 0) return { ...base, status: 'identical' };
  return { ...base, status: 'different', firstIndex, firstA, firstB, count };
}

export function diffStores(a: TensorStore, b: TensorStore): StoreDiff {
  const setB = new Set(b.names);
  const setA = new Set(a.names);
  const onlyInA = a.names.filter((n) => !setB.has(n));
  const onlyInB = b.names.filter((n) => !setA.has(n));
  const tensors: TensorDiff[] = [];
  let bytesCompared = 0;
  for (const name of a.names) {
    if (!setB.has(name)) continue;
    const d = diffTensor(a, b, name);
    if (d.status === 'identical' || d.status === 'different') bytesCompared += a.info(name).byteLength;
    tensors.push(d);
  }
  const identical = onlyInA.length === 0 && onlyInB.length === 0 && tensors.every((t) => t.status === 'identical');
  return { identical, onlyInA, onlyInB, tensors, compared: tensors.length, bytesCompared };
}
