/**
 * Pass — order invariance. For every emitted matmul output (a weight row applied to its input
 * vector), decide whether every partial sum is exact in float32 whatever the summation order,
 * with or without fused multiply-add: then a GPU may sum it in any order, and the executor's
 * shuffled and FMA modes must give the same bits (test/examples.test.ts checks that they do).
 *
 * Rule: products are exact (a bf16 weight has 8 significant bits, an input at most 9 + the
 * quantum's), every product is an integer multiple of q = min over terms of lsb(weight)·quantum
 * (input), and |any partial sum| ≤ B = Σ |weight|·bound(input). If B ≤ 2^24·q every partial sum
 * is a multiple of q of at most 24 bits: exactly representable. A row with at most two non-zero
 * terms is invariant by commutativity. Inputs: residual slots hold integers within their dims'
 * ranges (normalisation scales by a power of two, which changes neither rule), constants come in
 * bf16 parts; FFN unit outputs silu(gate)·up are integers bounded by |gate|max·|up|max; GDN and
 * attention head outputs carry their bound and quantum in the spec (or are not provable).
 */
import type { LayerSpec, Form, VDim } from '../lower/forms.ts';
import type { VDimInfo } from '../lower/lowered.ts';
import { splitBf16 } from '../lower/frame.ts';

export interface InvarianceReport {
  /** Weight matrices (per layer and tensor kind) analysed, and how many are invariant in every row. */
  matmuls: number;
  invariantMatmuls: number;
  /** Non-empty rows analysed, and how many are invariant. */
  rows: number;
  invariantRows: number;
  /** Matrices with at least one row not provably invariant. */
  notInvariant: string[];
}

/** Exponent of the lowest set bit of a finite non-zero float (its quantum). */
function lsb(x: number): number {
  let e = 0;
  let v = Math.abs(x);
  while (!Number.isInteger(v)) {
    v *= 2;
    e--;
  }
  while (v % 2 === 0) {
    v /= 2;
    e++;
  }
  return e;
}

interface Term {
  w: number;
  bound: number;
  /** log2 of the input's quantum. */
  q: number;
  /** A constant part (the input is exactly 1 at every position). */
  fixed?: boolean;
  /** The input is a 0/1 bit. */
  bit?: boolean;
}

/**
 * Exact check for small rows over bits and constants: every subset sum of the products that
 * can occur (each bit 0 or 1, constants always) is a float32 — then so is every partial sum of
 * every summation tree. (Sums are computed in float64, exact for these few bf16 terms.)
 */
function subsetExact(nz: Term[]): boolean {
  // A partial sum of some summation tree is the sum of a subset of the products present, and
  // every subset of the bit products is present for some bit values: so enumerating the subsets
  // of all terms covers every partial sum of every tree and every bit assignment.
  const w = nz.map((t) => t.w);
  for (let sub = 1; sub < 1 << w.length; sub++) {
    let sum = 0;
    for (let i = 0; i < w.length; i++) if ((sub >> i) & 1) sum += w[i]!;
    if (Math.fround(sum) !== sum) return false;
  }
  return true;
}

/** The bound rule of the header: every partial sum a multiple of q and at most 2^24·q in magnitude. */
function boundExact(nz: Term[]): boolean {
  let B = 0;
  let qmin = Infinity;
  for (const t of nz) {
    if (!Number.isFinite(t.bound) || !Number.isFinite(t.q)) return false;
    B += Math.abs(t.w) * t.bound;
    qmin = Math.min(qmin, lsb(t.w) + t.q);
  }
  return B <= 2 ** (24 + qmin);
}

function invariant(terms: Term[]): boolean {
  const nz = terms.filter((t) => t.w !== 0 && t.bound !== 0);
  if (nz.length <= 2) return true;
  // Either rule proves it; the bound rule is linear in the row, the subset rule exponential, so
  // the subset rule runs only on the small rows of bits and constants the bound rule cannot prove.
  if (boundExact(nz)) return true;
  return nz.length <= 14 && nz.every((t) => t.fixed || t.bit) && subsetExact(nz);
}

export function analyzeOrderInvariance(layers: LayerSpec[], dims: VDimInfo[]): InvarianceReport {
  const bound = (d: VDim) => Math.max(Math.abs(dims[d]!.lo), Math.abs(dims[d]!.hi));
  const formTerms = (f: Form): Term[] => [
    ...f.terms.map((t) => ({ w: t.coef, bound: bound(t.dim), q: 0, bit: dims[t.dim]!.lo === 0 && dims[t.dim]!.hi === 1 })),
    ...splitBf16(f.constant).map((p) => ({ w: p, bound: 1, q: 0, fixed: true })),
  ];
  const formMax = (f: Form) => f.terms.reduce((a, t) => a + Math.abs(t.coef) * bound(t.dim), Math.abs(f.constant));
  /** log2 of the largest power of two dividing every value of an integer form (its quantum). */
  const formQuantum = (f: Form) => Math.min(...f.terms.filter((t) => t.coef !== 0).map((t) => lsb(t.coef)), f.constant !== 0 ? lsb(f.constant) : Infinity);
  const rep: InvarianceReport = { matmuls: 0, invariantMatmuls: 0, rows: 0, invariantRows: 0, notInvariant: [] };
  const matrix = (name: string, rows: Term[][]) => {
    const nonEmpty = rows.filter((r) => r.length > 0);
    if (nonEmpty.length === 0) return;
    const ok = nonEmpty.filter(invariant).length;
    rep.matmuls++;
    rep.rows += nonEmpty.length;
    rep.invariantRows += ok;
    if (ok === nonEmpty.length) rep.invariantMatmuls++;
    else rep.notInvariant.push(name);
  };
  /** Rows of an output projection grouped by the residual dim they write. */
  const byDim = (entries: { dim: VDim; term: Term }[]) => {
    const m = new Map<VDim, Term[]>();
    for (const e of entries) (m.get(e.dim) ?? m.set(e.dim, []).get(e.dim)!).push(e.term);
    return [...m.values()];
  };
  layers.forEach((l, i) => {
    if (l.mixer.kind === 'linear_attention') {
      const heads = l.mixer.heads.filter((h) => h !== null);
      matrix(`layers.${i}.linear_attn.in_proj_qkv`, heads.flatMap((h) => [...h.q, ...h.k, ...h.values.flatMap((v) => v?.v ?? [])].map(formTerms)));
      matrix(`layers.${i}.linear_attn.in_proj_z`, heads.flatMap((h) => h.values.flatMap((v) => v?.z ?? []).map(formTerms)));
      matrix(`layers.${i}.linear_attn.in_proj_b`, heads.flatMap((h) => h.values.flatMap((v) => (v ? [formTerms(v.b)] : []))));
      matrix(`layers.${i}.linear_attn.out_proj`, byDim(heads.flatMap((h) => h.values.flatMap((v) =>
        (v?.out ?? []).map((o) => ({ dim: o.dim, term: { w: o.weight, bound: v!.outBound ?? Infinity, q: v!.outQuantum ? lsb(v!.outQuantum) : NaN } }))))));
    } else {
      const heads = l.mixer.heads.filter((h) => h !== null);
      matrix(`layers.${i}.self_attn.q_proj`, heads.flatMap((h) => h.queries.flatMap((q) => (q ? [...q.q, ...q.gate] : [])).map(formTerms)));
      matrix(`layers.${i}.self_attn.k_proj`, heads.flatMap((h) => h.k.map(formTerms)));
      matrix(`layers.${i}.self_attn.v_proj`, heads.flatMap((h) => h.v.map(formTerms)));
      matrix(`layers.${i}.self_attn.o_proj`, byDim(heads.flatMap((h) => h.queries.flatMap((q) =>
        (q?.out ?? []).map((o) => ({ dim: o.dim, term: { w: o.weight, bound: q!.outBound ?? Infinity, q: q!.outQuantum ? lsb(q!.outQuantum) : NaN } }))))));
    }
    matrix(`layers.${i}.mlp.gate_proj`, l.ffn.map((u) => formTerms(u.gate)));
    matrix(`layers.${i}.mlp.up_proj`, l.ffn.map((u) => formTerms(u.up)));
    matrix(`layers.${i}.mlp.down_proj`, byDim(l.ffn.flatMap((u) => {
      // silu(g)·up: silu(g) ≤ max(g, 0) above 0 and |silu| < 0.28 below; gate and up are integers.
      const h = Math.max(formMax(u.gate), 0.28) * formMax(u.up);
      // Gate and up are integer forms over integer inputs; in silu's exact regions the product is
      // gate·up (a multiple of both quanta) or 0.
      const q = formQuantum(u.gate) + formQuantum(u.up);
      return u.down.map((o) => ({ dim: o.dim, term: { w: o.weight, bound: h, q: Number.isFinite(q) ? q : 0 } }));
    })));
  });
  return rep;
}
