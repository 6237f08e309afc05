/**
 * The greedy LM head on the sparse path: linearArgmax, exactly executor.ts
 * `argmax(linear(ctx, m, x, path))`, deciding the argmax without computing every row where that is
 * exact (sequential order; anything else runs linear() and scans):
 *  - the scatter form into a SparseOut (scatterInto; scatterLinear's math and argument, matmul.ts):
 *    under its precondition every row no column reaches is exactly +0, so only the touched rows
 *    and the lowest untouched one are compared;
 *  - a memo keyed by the non-zero activations in columns that hold weights: under the same
 *    precondition the logits, and so the argmax, are a pure function of them;
 *  - boundedArgmax: columns are taken smallest first until the best folded row is strictly above
 *    a bound on every row not yet folded (in bf16, both rounded).
 * Each walks the matrix's columns in its ColumnRuns where the columns fall into few runs (the
 * chip's LM head), else in its CscPlan (argmaxColumnsOf): the same entries, weights and per-row
 * order of additions, so the same values.
 */
import { ChipcError } from '../util/errors.ts';
import type { CsrMatrix, Matrix } from '../model/weights.ts';
import type { ExecNumericContext } from './numeric.ts';
import { roundBf16 } from './numeric.ts';
import { linear, type MatmulPath, type MatmulStats } from './matmul.ts';
import { columnExtremesOf, columnRunsOf, cscPlanOf, sparsePlanOf, storedEntries, type ColumnRuns, type CscPlan } from './matmul-plans.ts';
import type { ArgmaxMemo, ArgmaxState, BoundedPrep, ExecPlans, SparseOut } from './plans.ts';
import type { DeltaShare } from './delta.ts';

export type { SparseOut } from './plans.ts';

const f32 = Math.fround;

/** The columns of m's CSR as the argmax walks them: its ColumnRuns, else its CscPlan (null: rows not sorted). */
function argmaxColumnsOf(plans: ExecPlans, m: Matrix, csr: CsrMatrix): ColumnRuns | CscPlan | null {
  return columnRunsOf(plans, m, csr) ?? cscPlanOf(plans, m, csr);
}


export function newSparseOut(rows: number): SparseOut {
  return { out: new Float32Array(rows), mark: new Uint8Array(rows), touched: new Int32Array(rows), n: 0 };
}

/** Resets a SparseOut to all +0 with no touched rows (O(touched)). */
export function clearSparseOut(so: SparseOut): void {
  const { out, mark, touched } = so;
  for (let t = 0; t < so.n; t++) { const r = touched[t]; out[r] = 0; mark[r] = 0; }
  so.n = 0;
}

/**
 * The finiteness / sign scan of the sparse path plus the non-zero positions, from the bits xb of
 * x[0 .. cols): writes the columns with x_c ≠ 0 (ascending) into nz and returns their count, and the
 * count of sign-bit-set activations (x < 0 or −0) in `neg[0]`; returns −1 when some x_c is not
 * finite. (From the bits: the sign of a zero without a division per ±0 activation, most of them.)
 */
export function scanActivations(xb: Uint32Array, cols: number, nz: Int32Array, neg: Int32Array): number {
  let n = 0;
  let negTotal = 0;
  for (let c = 0; c < cols; c++) {
    const b = xb[c];
    if ((b & 0x7f800000) === 0x7f800000) return -1;
    if ((b & 0x7fffffff) !== 0) nz[n++] = c;
    negTotal += b >>> 31;
  }
  neg[0] = negTotal;
  return n;
}

const EXP_MASK = 0x7f800000;

/**
 * scanActivations' answer for the activations x (bits xb) kept in st (its nz, neg[0], and −1 when
 * some x_c is not finite), from the columns `share` lists when st last saw the vector its
 * changes start from (share.since.prevStamp = st.seenStamp), else from a scan of every column.
 * The kept scan is of the vector st.seen holds: a listed column whose bits moved updates the
 * counts from its old bits, and leaves or joins nz (kept ascending) when it turns zero or
 * non-zero. Without `share` nothing is kept (st.seenStamp −1).
 */
export function activationsOf(st: ArgmaxState, xb: Uint32Array, cols: number, share: DeltaShare | undefined): number {
  const nz = st.nz;
  if (share === undefined) {
    st.seenStamp = -1;
    st.nzn = scanActivations(xb, cols, nz, st.neg);
    return st.nzn;
  }
  const since = share.since;
  const seen = (st.seen ??= new Uint32Array(cols));
  if (st.seenStamp === -1 || (st.seenStamp !== share.stamp && (since == null || since.prevStamp !== st.seenStamp))) {
    let n = 0;
    let neg = 0;
    let bad = 0;
    for (let c = 0; c < cols; c++) {
      const b = xb[c];
      seen[c] = b;
      if ((b & EXP_MASK) === EXP_MASK) bad++;
      if ((b & 0x7fffffff) !== 0) nz[n++] = c;
      neg += b >>> 31;
    }
    st.nzn = n;
    st.neg[0] = neg;
    st.nonFinite = bad;
  } else if (st.seenStamp !== share.stamp) {
    const list = (since as NonNullable<typeof since>).changed;
    const m = (since as NonNullable<typeof since>).nChanged;
    let n = st.nzn;
    let neg = st.neg[0];
    let bad = st.nonFinite;
    for (let t = 0; t < m; t++) {
      const c = list[t];
      const b = xb[c];
      const o = seen[c];
      if (b === o) continue;
      seen[c] = b;
      bad += ((b & EXP_MASK) === EXP_MASK ? 1 : 0) - ((o & EXP_MASK) === EXP_MASK ? 1 : 0);
      neg += (b >>> 31) - (o >>> 31);
      const isNz = (b & 0x7fffffff) !== 0;
      if (isNz === ((o & 0x7fffffff) !== 0)) continue;
      let i = 0;
      while (i < n && nz[i] < c) i++;
      if (isNz) {
        for (let j = n; j > i; j--) nz[j] = nz[j - 1];
        nz[i] = c;
        n++;
      } else {
        n--;
        for (let j = i; j < n; j++) nz[j] = nz[j + 1];
      }
    }
    st.nzn = n;
    st.neg[0] = neg;
    st.nonFinite = bad;
  }
  st.seenStamp = share.stamp;
  return st.nonFinite > 0 ? -1 : st.nzn;
}

/**
 * The scatter form (scatterLinear's math and argument) into a SparseOut, visiting only the
 * columns nz[0..nzn) (the non-zero activations, ascending; `negTotal` = sign-bit-set activations
 * among all cols): clears the rows touched by the previous call, then for each listed column c
 * and stored w_rc with t = fl(w_rc·x_c) ≠ 0, out[r] = fl(out[r] + t) from +0, recording r as
 * touched; bf16 rounds the touched rows once. Every row not touched is +0, which is its exact
 * value: its terms are all ±0 and one of them is +0 (precondition below). Returns false and does
 * nothing when the form does not apply: sequential order, CSR-only matrix (or one whose dense
 * form has no −0) with finite weights and sorted rows, and maxRowNnz < cols − negTotal are
 * needed; `maxWork` caps the entries walked (checked before any change; −1: no cap).
 */
export function scatterInto(
  ctx: ExecNumericContext, m: Matrix, x: Float32Array, xOff: number, nz: Int32Array, nzn: number, negTotal: number,
  so: SparseOut, maxWork: number, stats?: MatmulStats,
): boolean {
  if (ctx.order.kind !== 'sequential' || so.out.length < m.rows || xOff + m.cols > x.length) return false;
  const plan = sparsePlanOf(ctx.plans, m);
  if (!plan.finite) return false;
  if (plan.denseNegZeroRow) {
    for (let r = 0; r < m.rows; r++) if (plan.denseNegZeroRow[r]) return false;
  }
  const cols = argmaxColumnsOf(ctx.plans, m, plan.csr);
  if (!cols || cols.maxRowNnz >= m.cols - negTotal) return false;
  const colPtr = cols.colPtr;
  if (maxWork >= 0) {
    let work = 0;
    for (let t = 0; t < nzn; t++) work += colPtr[nz[t] + 1] - colPtr[nz[t]];
    if (work > maxWork) return false;
  }
  clearSparseOut(so);
  const { out, mark, touched } = so;
  let n = 0;
  if ('runs' in cols) {
    // a run's entries share one weight, so one product each: the same p as entry by entry
    const { runPtr, runs, weights } = cols;
    for (let t = 0; t < nzn; t++) {
      const c = nz[t];
      const xc = x[xOff + c];
      const q1 = runPtr[c + 1];
      for (let q = runPtr[c]; q < q1; q++) {
        const p = f32(weights[4 * q + 3] * xc);
        if (p === 0) continue;
        const stride = runs[4 * q + 1];
        for (let i = 0, r = runs[4 * q]; i < runs[4 * q + 2]; i++, r += stride) {
          out[r] = f32(out[r] + p);
          if (mark[r] === 0) { mark[r] = 1; touched[n++] = r; }
        }
      }
    }
  } else {
    const { rowIdx, values } = cols;
    for (let t = 0; t < nzn; t++) {
      const c = nz[t];
      const xc = x[xOff + c];
      const k1 = colPtr[c + 1];
      for (let k = colPtr[c]; k < k1; k++) {
        const p = f32(values[k] * xc);
        if (p !== 0) {
          const r = rowIdx[k];
          out[r] = f32(out[r] + p);
          if (mark[r] === 0) { mark[r] = 1; touched[n++] = r; }
        }
      }
    }
  }
  so.n = n;
  if (ctx.profile !== 'f32') for (let t = 0; t < n; t++) out[touched[t]] = ctx.act(out[touched[t]]);
  if (stats) { stats.sparse++; stats.scatter++; }
  return true;
}

const ARGMAX_MEMO_MAX = 1 << 16;

/**
 * linearArgmax's memo of m in ctx (ctx.memos.argmaxMemos; the type ArgmaxMemo is plans.ts's), or
 * null outside sequential order. A matrix given new storage starts a new memo.
 */
function argmaxMemoOf(ctx: ExecNumericContext, m: Matrix): ArgmaxMemo | null {
  if (ctx.order.kind !== 'sequential') return null;
  const byM = ctx.memos.argmaxMemos;
  let memo = byM.get(m);
  const plan = sparsePlanOf(ctx.plans, m);
  if (memo === undefined || memo.csr !== plan.csr) {
    const cols = argmaxColumnsOf(ctx.plans, m, plan.csr);
    let ok = plan.finite && cols !== null;
    if (ok && plan.denseNegZeroRow) for (let r = 0; r < m.rows; r++) if (plan.denseNegZeroRow[r]) { ok = false; break; }
    const colHasEntries = new Uint8Array(m.cols);
    if (cols) for (let c = 0; c < m.cols; c++) colHasEntries[c] = cols.colPtr[c + 1] > cols.colPtr[c] ? 1 : 0;
    memo = {
      csr: plan.csr, colHasEntries, maxRowNnz: ok && cols ? cols.maxRowNnz : Infinity, map: new Map(), entries: 0,
      scratch: new Uint32Array(2 * m.cols),
    };
    byM.set(m, memo);
  }
  return memo;
}


/**
 * argmax of y = x·Wᵀ (lowest index among the maximal values; NaN never wins; ChipcError
 * exec.nan-logits when every value is NaN) — exactly executor.ts `argmax(linear(ctx, m, x, path))`.
 * Sparse path, sequential order: when scatterInto applies, only the touched rows and the lowest
 * untouched row (exactly +0, like every untouched row, which all lose ties to it) are compared.
 * Otherwise the product is written into `buf` (length ≥ rows) and scanned. `share` (x's stamp and
 * its producer's list of changed columns, delta.ts DeltaShare): the scan of x for its non-zero
 * columns reads only the listed ones when this matrix's last call saw the vector they start from
 * (activationsOf).
 */
export function linearArgmax(
  ctx: ExecNumericContext, m: Matrix, x: Float32Array, path: MatmulPath, buf: Float32Array, stats?: MatmulStats,
  share?: DeltaShare,
): number {
  if (path === 'sparse' && ctx.order.kind === 'sequential' && x.length >= m.cols) {
    // per matrix (ctx.plans.argmaxStates): the sparse output and activation scratch
    const argmaxStates = ctx.plans.argmaxStates;
    let st = argmaxStates.get(m);
    if (!st || st.rows !== m.rows) {
      // (the sparse output is made when the scatter first runs: the memo and boundedArgmax decide
      // the chip's steps without it, and its 2.2 MB at qwen3.5-4b were fresh pages of a fresh
      // process's first step)
      st = {
        rows: m.rows, so: null, nz: new Int32Array(m.cols), nzn: 0, neg: new Int32Array(1), nonFinite: 0, seen: null,
        seenStamp: -1, x: null, xb: null,
      };
      argmaxStates.set(m, st);
    }
    // x's bits (a view kept while the caller passes the same vector: decode steps reuse their buffers)
    if (st.x !== x || st.xb === null) { st.x = x; st.xb = new Uint32Array(x.buffer, x.byteOffset, m.cols); }
    const xb = st.xb;
    const nzn = activationsOf(st, xb, m.cols, share);
    const memo = nzn >= 0 ? argmaxMemoOf(ctx, m) : null;
    let key: Uint32Array | null = null;
    let hash = 0;
    if (memo !== null && memo.maxRowNnz < m.cols - st.neg[0]) {
      // under the scatter precondition the logits are a pure function of the non-zero activations
      // in columns that hold weights: look that key up
      let kn = 0;
      hash = 0x811c9dc5;
      for (let t = 0; t < nzn; t++) {
        const c = st.nz[t];
        if (memo.colHasEntries[c] === 0) continue;
        memo.scratch[kn++] = c;
        memo.scratch[kn++] = xb[c];
        hash = Math.imul(hash ^ c, 0x01000193);
        hash = Math.imul(hash ^ xb[c], 0x01000193);
      }
      key = memo.scratch.subarray(0, kn);
      const bucket = memo.map.get(hash);
      if (bucket !== undefined) {
        for (let b = 0; b < bucket.length; b++) {
          const e = bucket[b];
          if (e.key.length !== kn) continue;
          let same = true;
          for (let i = 0; i < kn; i++) if (e.key[i] !== key[i]) { same = false; break; }
          if (same) {
            if (stats) { stats.sparse++; stats.scatter++; stats.argmaxMemoHits++; }
            return e.best;
          }
        }
      }
    }
    if (memo !== null && key !== null) {
      const best = boundedArgmax(ctx.plans, ctx.tuning.bigColumn, m, x, st.nz, nzn, memo, ctx.profile !== 'f32', stats);
      if (best >= 0) {
        if (stats) { stats.sparse++; stats.scatter++; stats.argmaxBounded++; }
        memoStore(memo, hash, key, best);
        return best;
      }
    }
    const so = nzn >= 0 ? st.so ??= newSparseOut(m.rows) : null;
    if (so !== null && scatterInto(ctx, m, x, 0, st.nz, nzn, st.neg[0], so, storedEntries(ctx.plans, m), stats)) {
      const { out, mark, touched } = so;
      let best = -1;
      let bv = 0;
      for (let t = 0; t < so.n; t++) {
        const r = touched[t];
        const v = out[r];
        if (v !== v) continue;
        if (best < 0 || v > bv || (v === bv && r < best)) { best = r; bv = v; }
      }
      if (so.n < m.rows) {
        let r = 0;
        while (mark[r] === 1) r++;
        if (best < 0 || 0 > bv || (0 === bv && r < best)) best = r;
      }
      if (best < 0) throw new ChipcError('exec.nan-logits', 'argmax: every logit is NaN (or there are none)');
      if (memo !== null && key !== null) memoStore(memo, hash, key, best);
      return best;
    }
  }
  if (buf.length < m.rows) throw new ChipcError('exec.shape', `linearArgmax: buffer has ${buf.length} slots, need ${m.rows}`);
  const y = linear(ctx, m, x, path, { stats, out: buf.subarray(0, m.rows) });
  let best = -1;
  let bv = -Infinity;
  for (let i = 0; i < y.length; i++) {
    const v = y[i];
    if (v > bv || (best < 0 && v === -Infinity)) { bv = v; best = i; }
  }
  if (best < 0) throw new ChipcError('exec.nan-logits', 'argmax: every logit is NaN (or there are none)');
  return best;
}

function memoStore(memo: ArgmaxMemo, hash: number, key: Uint32Array, best: number): void {
  if (memo.entries >= ARGMAX_MEMO_MAX) { memo.map.clear(); memo.entries = 0; }
  const bucket = memo.map.get(hash);
  const e = { key: key.slice(), best };
  if (bucket === undefined) memo.map.set(hash, [e]);
  else bucket.push(e);
  memo.entries++;
}

function boundedPrepOf(plans: ExecPlans, m: Matrix, cols: ColumnRuns | CscPlan): BoundedPrep {
  const boundedPreps = plans.boundedPreps;
  let p = boundedPreps.get(cols);
  if (p === undefined) {
    p = { packed: new Array(m.cols), companions: new Array(m.cols), colMark: null };
    boundedPreps.set(cols, p);
  }
  return p;
}

/**
 * The argmax without walking big columns (under the scatter precondition, which the caller has
 * checked), or −1 when it cannot be decided that way. In the bf16 profile every logit is compared
 * rounded (bf16 = true), as the scatter rounds the rows it touched. The non-zero columns are taken
 * smallest first into A; the rows T they reach get their exact value (the row fold over all their
 * stored entries, as scatterInto computes it). Every other row holds only products of the columns
 * not yet in A (or none: +0), and its fold is at most (1 + 2^−23)^B·Σ_{c ∈ S} max(0, max_r fl(w_rc·x_c))
 * over the set S of those B columns where it holds entries: fl is monotone, and a fold's partial
 * sums stay below the sum of its positive terms times (1 + 2^−24) per addition (a negative term
 * only lowers them), and none overflows to +Inf while that is below float32's overflow threshold
 * (2^128 − 2^103). S is a clique of the columns' companion graph (two columns are companions when
 * some row holds entries in both: companionsOf), so U = (1 + 2^−23)^B times the heaviest clique
 * among the B columns, each column weighing max(0, its top), bounds every row outside T
 * (maxCliqueWeight; with more than CLIQUE_MAX such columns, the sum of all B tops, a clique's
 * bound too). The chip's LM head is why: a row holds its kind's column, its payload's and, for
 * the kinds that carry a slot (E, N, OUT), that slot's column; the sum of every top counted a row
 * with both a slot column and the column of a kind without slots (D, H), which T's best, after the
 * rarest payload column, only tied. After each
 * column, if the best row of T is strictly above fl(U) (+Inf at and above that threshold) it is
 * the argmax (no other row reaches or ties it; T's best is its largest non-NaN value, the lowest
 * row among equal ones, whatever the order its rows were folded in, and a NaN row never wins the
 * argmax). A column with more than `bigColumn` (ctx.tuning) entries is taken only while another
 * such is left out; when the last one would be needed, −1 (the caller scatters everything). So a
 * step whose emitted token is decided by its rarest field folds only that field's rows.
 */
function boundedArgmax(
  plans: ExecPlans, bigColumn: number, m: Matrix, x: Float32Array, nz: Int32Array, nzn: number, memo: ArgmaxMemo,
  bf16: boolean, stats?: MatmulStats,
): number {
  const plan = sparsePlanOf(plans, m);
  const cols = argmaxColumnsOf(plans, m, plan.csr);
  if (cols === null) return -1;
  const colPtr = cols.colPtr;
  const sizeOf = (c: number) => colPtr[c + 1] - colPtr[c];
  const order: number[] = [];
  let nBig = 0;
  for (let t = 0; t < nzn; t++) {
    const c = nz[t];
    const n = sizeOf(c);
    if (n === 0) continue;
    order.push(c);
    if (n > bigColumn) nBig++;
  }
  if (nBig === 0) return -1; // nothing to save: the scatter is small
  order.sort((a, b) => sizeOf(a) - sizeOf(b) || a - b);
  const pre = boundedPrepOf(plans, m, cols);
  const { colMax, colMin } = columnExtremesOf(cols);
  const mark = memo.rowMark ??= new Uint8Array(m.rows);
  const rows = memo.rowList ??= new Int32Array(m.rows);
  const { rowPtr, colIdx, values } = plan.csr;
  let nr = 0;
  let folded = 0;
  let best = -1;
  let bv = 0;
  // Whether every row of T is marked: the first column folded leaves its rows unmarked (a
  // column's rows are distinct: the CSR's rows are strictly ascending), and they are marked only
  // when a second column joins T — most steps are decided by the first.
  let marked = true;
  const markT = () => {
    if (!marked) { for (let t = 0; t < nr; t++) mark[rows[t]] = 1; marked = true; }
  };
  /** Marks the rows of column c as in T. */
  const absorb = (c: number) => {
    markT();
    if ('runs' in cols) {
      const { runPtr, runs } = cols;
      for (let q = runPtr[c]; q < runPtr[c + 1]; q++) {
        const stride = runs[4 * q + 1];
        for (let i = 0, r = runs[4 * q]; i < runs[4 * q + 2]; i++, r += stride) {
          if (mark[r] === 0) { mark[r] = 1; rows[nr++] = r; }
        }
      }
    } else {
      const rowIdx = cols.rowIdx;
      for (let k = colPtr[c]; k < colPtr[c + 1]; k++) {
        const r = rowIdx[k];
        if (mark[r] === 0) { mark[r] = 1; rows[nr++] = r; }
      }
    }
  };
  /**
   * Column c's rows join T and are folded at once, from the column's packed copy of its rows (a
   * sequential walk instead of a CSR row lookup per row; each row's entries in the CSR's order).
   */
  const absorbFolding = (c: number) => {
    const pk = pre.packed[c] ??= packedRowsOf(plan.csr, cols, c);
    const { u, f } = pk;
    // the first column to join T: its rows join unmarked (markT marks them if another column joins)
    const first = nr === 0;
    if (first) marked = false;
    else markT();
    for (let p = 0; p < u.length;) {
      const r = u[p];
      const n = u[p + 1];
      p += 2;
      if (!first) {
        if (mark[r] !== 0) { p += 2 * n; continue; }
        mark[r] = 1;
      }
      rows[nr++] = r;
      let acc = 0;
      for (const end = p + 2 * n; p < end; p += 2) {
        const pr = f32(f[p + 1] * x[u[p]]);
        if (pr !== 0) acc = f32(acc + pr);
      }
      if (bf16) acc = roundBf16(acc);
      if (acc === acc && (best < 0 || acc > bv || (acc === bv && r < best))) { best = r; bv = acc; }
    }
    folded = nr;
  };
  /** Folds the rows added to T since the last call; T's best row in (best, bv). */
  const foldNew = () => {
    for (; folded < nr; folded++) {
      const r = rows[folded];
      let acc = 0;
      for (let k = rowPtr[r]; k < rowPtr[r + 1]; k++) {
        const p = f32(values[k] * x[colIdx[k]]);
        if (p !== 0) acc = f32(acc + p);
      }
      if (bf16) acc = roundBf16(acc);
      if (acc === acc && (best < 0 || acc > bv || (acc === bv && r < best))) { best = r; bv = acc; }
    }
  };
  let answer = -1;
  for (let i = 0; i < order.length; i++) {
    const c = order[i];
    if (sizeOf(c) <= bigColumn) absorbFolding(c);
    else {
      if (nBig <= 1) break; // the last big column: the caller scatters
      nBig--;
      absorb(c);
      foldNew();
    }
    if (best < 0) continue;
    // the columns still out with a positive top, and their tops
    let nw = 0;
    let sum = 0;
    for (let j = i + 1; j < order.length; j++) {
      const cj = order[j];
      const xv = x[cj];
      const top = f32((xv > 0 ? colMax[cj] : colMin[cj]) * xv);
      if (top > 0) {
        sum += top;
        if (nw < CLIQUE_MAX) { cliqueCols[nw] = cj; cliqueW[nw] = top; }
        nw++;
      }
    }
    const inflate = (1 + 2 ** -23) ** (order.length - i - 1);
    let bound = sum;
    if (nw > 1 && nw <= CLIQUE_MAX && !(bv > f32(sum * inflate))) {
      // the heaviest clique of companions among them (a row holds entries in a clique's columns only)
      // (each pair looked up in the smaller column's companions: a kind's column has tens of thousands of rows)
      cliqueAdj.fill(0);
      for (let a = 0; a < nw; a++) {
        for (let b = a + 1; b < nw; b++) {
          const ca = cliqueCols[a];
          const cb = cliqueCols[b];
          const small = sizeOf(ca) <= sizeOf(cb);
          if (holds(companionsOf(pre, plan.csr, cols, m.cols, small ? ca : cb), small ? cb : ca)) {
            cliqueAdj[a] |= 1 << b;
            cliqueAdj[b] |= 1 << a;
          }
        }
      }
      bound = maxCliqueWeight((1 << nw) - 1, 0, 0);
    }
    bound *= inflate;
    // against U rounded to float32: a fold whose real partial sums stay ≤ U stays ≤ U unless U
    // reaches float32's overflow (then such a fold can be +Inf, tying with a +Inf best), and
    // fround(U) is +Inf exactly then; below it, bv > fround(U) gives bv > U
    // (bf16: a row's logit is bf(fold), and fold ≤ fround(U) gives bf(fold) ≤ bf(fround(U)), RNE
    // being monotone: T's best rounded logit strictly above it is the argmax)
    const u = f32(bound);
    if (bv > (bf16 ? roundBf16(u) : u)) { answer = best; break; }
  }
  if (marked) for (let t = 0; t < nr; t++) mark[rows[t]] = 0;
  if (stats) stats.argmaxBoundedRows += nr;
  return answer;
}

/** boundedArgmax takes the heaviest clique of at most this many columns (more: the sum of their tops). */
const CLIQUE_MAX = 12;
/** maxCliqueWeight's graph: columns, weights and adjacency bitmasks (module scratch: one call at a time). */
const cliqueCols = new Int32Array(CLIQUE_MAX);
const cliqueW = new Float64Array(CLIQUE_MAX);
const cliqueAdj = new Int32Array(CLIQUE_MAX);

/**
 * The largest sum of cliqueW over a clique of the graph cliqueAdj within the vertex set `cand` (a
 * bitmask), plus `sum`, or `best` when none exceeds it: include-or-exclude on the lowest vertex,
 * a branch dropped when its sum with every candidate left cannot pass `best`. Weights are positive.
 */
function maxCliqueWeight(cand: number, sum: number, best: number): number {
  if (cand === 0) return sum > best ? sum : best;
  let rest = 0;
  for (let c = cand; c !== 0; c &= c - 1) rest += cliqueW[31 - Math.clz32(c & -c)];
  if (sum + rest <= best) return best;
  const v = 31 - Math.clz32(cand & -cand);
  const without = cand & ~(1 << v);
  best = maxCliqueWeight(without & cliqueAdj[v], sum + cliqueW[v], best);
  return maxCliqueWeight(without, sum, best);
}

/** Whether the ascending list `list` holds c (binary search). */
function holds(list: Int32Array, c: number): boolean {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid] < c) lo = mid + 1;
    else hi = mid;
  }
  return lo < list.length && list[lo] === c;
}

/**
 * The columns other than c that hold an entry in some row where c holds one, ascending (kept in
 * pre.companions): every row of column c read from the CSR once.
 */
function companionsOf(pre: BoundedPrep, csr: CsrMatrix, cols: ColumnRuns | CscPlan, nCols: number, c: number): Int32Array {
  const known = pre.companions[c];
  if (known !== undefined) return known;
  const mark = pre.colMark ??= new Uint8Array(nCols);
  const found: number[] = [];
  mark[c] = 1;
  if ('runs' in cols) {
    const { runPtr, runs } = cols;
    for (let q = runPtr[c]; q < runPtr[c + 1]; q++) {
      const stride = runs[4 * q + 1];
      for (let i = 0, r = runs[4 * q]; i < runs[4 * q + 2]; i++, r += stride) markRowColumns(csr, r, mark, found);
    }
  } else {
    const { colPtr, rowIdx } = cols;
    for (let k = colPtr[c]; k < colPtr[c + 1]; k++) markRowColumns(csr, rowIdx[k], mark, found);
  }
  mark[c] = 0;
  for (let t = 0; t < found.length; t++) mark[found[t]] = 0;
  const list = Int32Array.from(found).sort();
  pre.companions[c] = list;
  return list;
}

/** companionsOf's step: the columns of row r not yet marked, marked and appended to `found`. */
function markRowColumns(csr: CsrMatrix, r: number, mark: Uint8Array, found: number[]): void {
  const { rowPtr, colIdx } = csr;
  for (let k = rowPtr[r]; k < rowPtr[r + 1]; k++) {
    const cc = colIdx[k];
    if (mark[cc] === 0) { mark[cc] = 1; found.push(cc); }
  }
}

/**
 * The rows column c reaches: a CscPlan's ascending, in place; a ColumnRuns' run after run (runs of
 * one column may interleave). boundedArgmax folds them in any order: its answer is the largest
 * non-NaN row value, the lowest row among equal ones.
 */
function columnRows(cols: ColumnRuns | CscPlan, c: number): Uint16Array | Uint32Array {
  const { colPtr } = cols;
  if (!('runs' in cols)) return cols.rowIdx.subarray(colPtr[c], colPtr[c + 1]);
  const { runPtr, runs } = cols;
  const out = new Uint32Array(colPtr[c + 1] - colPtr[c]);
  let n = 0;
  for (let q = runPtr[c]; q < runPtr[c + 1]; q++) {
    const stride = runs[4 * q + 1];
    for (let i = 0, r = runs[4 * q]; i < runs[4 * q + 2]; i++, r += stride) out[n++] = r;
  }
  return out;
}

/**
 * The rows of column c (at most ctx.tuning.bigColumn) with their whole CSR rows, in columnRows'
 * order: per row r, [r, n, c_1, w_1, …, c_n, w_n] with w as float32 bits (`f` is the float view).
 */
function packedRowsOf(csr: CsrMatrix, cols: ColumnRuns | CscPlan, c: number): { u: Uint32Array; f: Float32Array } {
  const { rowPtr, colIdx, values } = csr;
  const rowsOfC = columnRows(cols, c);
  let len = 0;
  for (let k = 0; k < rowsOfC.length; k++) { const r = rowsOfC[k]; len += 2 + 2 * (rowPtr[r + 1] - rowPtr[r]); }
  const u = new Uint32Array(len);
  const f = new Float32Array(u.buffer);
  let p = 0;
  for (let k = 0; k < rowsOfC.length; k++) {
    const r = rowsOfC[k];
    u[p++] = r;
    u[p++] = rowPtr[r + 1] - rowPtr[r];
    for (let j = rowPtr[r]; j < rowPtr[r + 1]; j++) { u[p++] = colIdx[j]; f[p++] = values[j]; }
  }
  return { u, f };
}

