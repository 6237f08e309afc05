/**
 * Row stacks for the incremental decode. Matrices that read the same input vector — the GDN input
 * projections (qkv, z, b, a), SwiGLU's gate and up — are walked as one CSR matrix
 * [A; B; …]: A's rows, then B's rows offset by A.rows, and so on. delta.ts keeps one memo per
 * matrix, so a stack scans the input's changed columns once, checks each column's bounds once and
 * reaches every part's rows in one walk of the column, where separate calls did all of that once
 * per part. Where the parts' entries already lie end to end in one pair of arrays (a `.chip`
 * loads a stack's parts so: model/load-weights.ts EntryArena) the stack's entry arrays are views
 * of them; otherwise they are copies. Only the stack's row pointers are new either way.
 *
 * Exactness. Row off_p + r of the stack stores exactly part p's row r (the same entries in the
 * same order), and each row of x·Wᵀ is a function of its own entries and x alone (matmul.ts), so
 * the stack's output is the parts' outputs laid end to end, bit for bit. The stack has no dense
 * form, so a part whose dense form holds a −0 entry (where the dense and CSR row folds may differ
 * in the sign of a zero) is refused; delta.ts refuses such a part too.
 */
import type { CsrMatrix, Matrix } from '../model/weights.ts';
import { sparsePlanOf } from './matmul-plans.ts';
import type { ExecPlans, RowStack, StackEntry } from './plans.ts';

export type { RowStack } from './plans.ts';

/**
 * The stack of `parts` (kept while the parts keep their storage), or null when they cannot be
 * stacked: no parts, different column counts, or a part whose dense form has a −0 entry. Kept in
 * plans.stacks, per first part.
 */
export function rowStackOf(plans: ExecPlans, parts: readonly Matrix[]): RowStack | null {
  if (parts.length === 0) return null;
  const stacks = plans.stacks;
  let list = stacks.get(parts[0]);
  if (list === undefined) { list = []; stacks.set(parts[0], list); }
  // (indexed loops: this runs for every decode step's stacks, and must not allocate)
  for (let i = 0; i < list.length; i++) {
    const e = list[i];
    if (e.parts.length !== parts.length) continue;
    let same = true;
    for (let p = 0; p < parts.length && same; p++) {
      same = e.parts[p] === parts[p] && e.csr[p] === parts[p].csr && e.dense[p] === parts[p].dense;
    }
    if (same) return e.stack;
  }
  const entry: StackEntry = {
    parts: parts.slice(), csr: parts.map((m) => m.csr), dense: parts.map((m) => m.dense), stack: buildStack(plans, parts),
  };
  // a part with new storage replaces its old entry (the old stack is garbage)
  const kept = list.filter((e) => e.parts.length !== parts.length || e.parts.some((m, p) => m !== parts[p]));
  kept.push(entry);
  stacks.set(parts[0], kept);
  return entry.stack;
}

/**
 * A call site's memo of rowStackOf for the parts it names (a decode layer's in-projections or gate
 * and up): the parts and their storage it was found for, compared by identity instead of the
 * lookups (plans.stacks and the caller's list of parts, WeakMaps) of every call.
 */
export interface StackSite {
  plans: ExecPlans | null;
  parts: readonly Matrix[];
  csr: (CsrMatrix | undefined)[];
  dense: (Float32Array | undefined)[];
  stack: RowStack | null;
}

export function newStackSite(): StackSite {
  return { plans: null, parts: [], csr: [], dense: [], stack: null };
}

/**
 * rowStackOf(plans, partsOf(plans, key)) through `site`, where p0 … p3 are the parts of `key` now
 * (two or four of them, named by the caller so that a step allocates nothing): the site's stack
 * while they are its parts with the storage it saw, else the lookup, remembered.
 */
export function rowStackAt<K>(
  site: StackSite, plans: ExecPlans, key: K, partsOf: (plans: ExecPlans, key: K) => readonly Matrix[],
  p0: Matrix, p1: Matrix, p2?: Matrix, p3?: Matrix,
): RowStack | null {
  if (site.plans === plans && holdsParts(site, p0, p1, p2, p3)) return site.stack;
  const parts = partsOf(plans, key);
  site.stack = rowStackOf(plans, parts);
  site.plans = plans;
  site.parts = parts.slice();
  site.csr = parts.map((m) => m.csr);
  site.dense = parts.map((m) => m.dense);
  return site.stack;
}

function holdsParts(site: StackSite, p0: Matrix, p1: Matrix, p2: Matrix | undefined, p3: Matrix | undefined): boolean {
  const ps = site.parts;
  const n = ps.length;
  if (n !== (p2 === undefined ? 2 : p3 === undefined ? 3 : 4)) return false;
  if (ps[0] !== p0 || ps[1] !== p1 || (n > 2 && ps[2] !== p2) || (n > 3 && ps[3] !== p3)) return false;
  for (let i = 0; i < n; i++) if (ps[i].csr !== site.csr[i] || ps[i].dense !== site.dense[i]) return false;
  return true;
}

function buildStack(plans: ExecPlans, parts: readonly Matrix[]): RowStack | null {
  const cols = parts[0].cols;
  const csrs: CsrMatrix[] = [];
  const offsets = [0];
  let nnz = 0;
  for (const m of parts) {
    if (m.cols !== cols) return null;
    const plan = sparsePlanOf(plans, m);
    if (plan.denseNegZeroRow !== null && plan.denseNegZeroRow.includes(1)) return null;
    csrs.push(plan.csr);
    offsets.push(offsets[offsets.length - 1] + m.rows);
    nnz += plan.csr.rowPtr[m.rows];
  }
  const rows = offsets[parts.length];
  const rowPtr = new Uint32Array(rows + 1);
  const adjacent = adjacentEntries(csrs, parts);
  const colIdx = adjacent?.colIdx ?? new Uint32Array(nnz);
  const values = adjacent?.values ?? new Float32Array(nnz);
  let k = 0;
  for (let p = 0; p < parts.length; p++) {
    const { rowPtr: rp, colIdx: ci, values: v } = csrs[p];
    const n = parts[p].rows;
    const base = offsets[p];
    if (adjacent === null) {
      colIdx.set(ci.subarray(rp[0], rp[n]), k);
      values.set(v.subarray(rp[0], rp[n]), k);
    }
    // the first part's pointers (k = rp[0] = 0) are a copy (qkv's 8,192 of a GDN stack's 12,352
    // rows, gate's half of SwiGLU's): a fresh process builds every stack in its first step, where
    // the loop runs unoptimised
    if (k === rp[0]) rowPtr.set(rp.subarray(1, n + 1), base + 1);
    else shiftPointers(rp, n, k - rp[0], rowPtr, base + 1);
    k += rp[n] - rp[0];
  }
  return { m: { rows, cols, csr: { rowPtr, colIdx, values } }, offsets };
}

/** out[at + r] = rp[r + 1] + shift for r < n. */
function shiftPointers(rp: Uint32Array, n: number, shift: number, out: Uint32Array, at: number): void {
  for (let r = 0; r < n; r++) out[at + r] = rp[r + 1] + shift;
}

/**
 * The stack's entry arrays as views, when the parts' stored entries already lie end to end in one
 * buffer each for columns and values (a `.chip` loads stacked matrices so: model/load-weights.ts
 * EntryArena): part p's entries rp[0] … rp[rows) start where part p − 1's end. Null otherwise.
 */
function adjacentEntries(csrs: readonly CsrMatrix[], parts: readonly Matrix[]): { colIdx: Uint32Array; values: Float32Array } | null {
  const first = csrs[0];
  const ci0 = first.colIdx;
  const v0 = first.values;
  // byte offsets, in each buffer, of where the next part's entries must start
  let ciAt = ci0.byteOffset + 4 * first.rowPtr[0];
  let vAt = v0.byteOffset + 4 * first.rowPtr[0];
  const ciStart = ciAt;
  const vStart = vAt;
  let nnz = 0;
  for (let p = 0; p < csrs.length; p++) {
    const { rowPtr: rp, colIdx: ci, values: v } = csrs[p];
    if (ci.buffer !== ci0.buffer || v.buffer !== v0.buffer) return null;
    if (ci.byteOffset + 4 * rp[0] !== ciAt || v.byteOffset + 4 * rp[0] !== vAt) return null;
    const n = rp[parts[p].rows] - rp[0];
    ciAt += 4 * n;
    vAt += 4 * n;
    nnz += n;
  }
  return { colIdx: new Uint32Array(ci0.buffer, ciStart, nnz), values: new Float32Array(v0.buffer, vStart, nnz) };
}
