/**
 * The build-time check of `c.emitRows` (src/dsl/builder.ts): every row names a token of the
 * vocabulary once, gives one value per field, constrains at least one field, keeps each value
 * within its field's range, and no two rows can match the same field values — two rows conflict
 * exactly when they agree on every field both constrain.
 *
 * Rows are grouped by the set of fields they constrain (a bit mask). Within a group, two rows
 * conflict when their values are equal; across two groups, when their values projected onto the
 * fields both groups constrain are equal. A row's values are keyed as one number in mixed radix
 * over the fields' ranges (a string where the product of the ranges' sizes passes 2^52): the RV32
 * chip emits ≈ 248,000 rows, and string keys built per row were most of the check. Beyond 30
 * fields (no bit masks) every pair of rows is compared. A row with a value outside its field's
 * range is reported and left out of the conflict checks.
 */
import type { EmitRow, Range } from '../ir/types.ts';

/** What the check needs of an emit field. */
export interface EmitField {
  readonly name: string;
  readonly range: Range;
}

type Key = number | string;

/**
 * Checks `rows` against `fields`, reporting each problem found through `problem(code, message)`.
 * Returns false when it stopped at the first problem of a kind that makes the rest meaningless
 * (a bad token, a repeated token, a wrong value count, a row constraining nothing, a conflict);
 * values outside their ranges are all reported and the check goes on.
 */
export function checkEmitRows(
  fields: readonly EmitField[], rows: readonly EmitRow[], vocab: number, problem: (code: string, message: string) => void,
): boolean {
  const nf = fields.length;
  const sizes = fields.map((f) => f.range.hi - f.range.lo + 1);
  const strides: number[] = [];
  let space = 1;
  for (const s of sizes) {
    strides.push(space);
    space *= s;
  }
  const numeric = space <= 2 ** 52;
  /** The key of a row's values on the fields of `mask` (all within their ranges). */
  const keyOf = (values: readonly (number | null)[], mask: number): Key => {
    if (numeric) {
      let key = 0;
      for (let i = 0; i < nf; i++) if (mask & (1 << i)) key += (values[i]! - fields[i]!.range.lo) * strides[i]!;
      return key;
    }
    let key = '';
    for (let i = 0; i < nf; i++) if (mask & (1 << i)) key += `${values[i]},`;
    return key;
  };
  const seenTokens = new Uint8Array(vocab);
  const groups = new Map<number, { mask: number; rows: EmitRow[]; keys: Map<Key, number> }>();
  const wide: EmitRow[] = [];
  for (const row of rows) {
    if (!Number.isInteger(row.token) || row.token < 0 || row.token >= vocab) {
      problem('emit.token', `emit row token ${row.token} is not a token id of the vocabulary [0, ${vocab})`);
      return false;
    }
    if (seenTokens[row.token] === 1) {
      problem('emit.injective', `token ${row.token} appears in two emit rows`);
      return false;
    }
    seenTokens[row.token] = 1;
    const vals = row.values;
    if (vals.length !== nf) {
      problem('emit.rows', `emit row of token ${row.token} has ${vals.length} values for ${nf} fields`);
      return false;
    }
    let mask = 0;
    let outside = false;
    for (let i = 0; i < nf; i++) {
      const v = vals[i];
      if (v === null) continue;
      mask |= 1 << i;
      const r = fields[i]!.range;
      if (!Number.isInteger(v) || v! < r.lo || v! > r.hi) outside = true;
    }
    if (mask === 0) {
      problem('emit.rows', `emit row of token ${row.token} constrains no field`);
      return false;
    }
    if (outside) {
      vals.forEach((v, i) => {
        const r = fields[i]!.range;
        if (v !== null && (!Number.isInteger(v) || v < r.lo || v > r.hi)) {
          problem('emit.rows', `emit row of token ${row.token} requires ${v} of "${fields[i]!.name}", outside its range [${r.lo}, ${r.hi}]`);
        }
      });
      continue;
    }
    if (nf > 30) { // no bit masks: every pair is compared below
      wide.push(row);
      continue;
    }
    let g = groups.get(mask);
    if (!g) groups.set(mask, (g = { mask, rows: [], keys: new Map() }));
    const key = keyOf(vals, mask);
    const other = g.keys.get(key);
    if (other !== undefined) {
      problem('emit.injective', `emit rows of tokens ${other} and ${row.token} require the same values`);
      return false;
    }
    g.keys.set(key, row.token);
    g.rows.push(row);
  }
  if (nf > 30) return checkPairwise(wide, problem);
  // Across groups: each group's rows projected onto the fields a pair both constrain, kept per
  // (group, shared fields) — groups share few field sets. A later row overwrites an earlier one
  // with the same projection (the earlier one then conflicts as well, with the same rows).
  const gl = [...groups.values()];
  const projections = new Map<string, Map<Key, number>>();
  const project = (gi: number, common: number): Map<Key, number> => {
    const g = gl[gi]!;
    if (common === g.mask) return g.keys; // every constrained field is shared
    const id = `${gi}|${common}`;
    let out = projections.get(id);
    if (out === undefined) {
      out = new Map();
      for (const row of g.rows) out.set(keyOf(row.values, common), row.token);
      projections.set(id, out);
    }
    return out;
  };
  for (let a = 0; a < gl.length; a++) {
    for (let b = a + 1; b < gl.length; b++) {
      const common = gl[a]!.mask & gl[b]!.mask;
      const pa = project(a, common);
      for (const [key, token] of project(b, common)) {
        const t = pa.get(key);
        if (t !== undefined) {
          problem('emit.injective', `emit rows of tokens ${t} and ${token} can both match the same field values`);
          return false;
        }
      }
    }
  }
  return true;
}

/** The conflict check for more than 30 fields (no bit masks): every pair of rows. */
function checkPairwise(rows: readonly EmitRow[], problem: (code: string, message: string) => void): boolean {
  for (let a = 0; a < rows.length; a++) {
    for (let b = a + 1; b < rows.length; b++) {
      const va = rows[a]!.values;
      const vb = rows[b]!.values;
      if (va.every((x, i) => x === null || vb[i] === null || x === vb[i])) {
        problem('emit.injective', `emit rows of tokens ${rows[a]!.token} and ${rows[b]!.token} can both match the same field values`);
        return false;
      }
    }
  }
  return true;
}
