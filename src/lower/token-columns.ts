/**
 * The embedding columns of a token field (an id → value table of vocabulary length, TokenValues):
 * the ids that a dim's column holds. A chip's token fields are 168 tables of 248,205 entries with
 * 12 % of them non-zero: an encoding's entry function called once per id would be ≈ 40 million
 * calls in a process's first compile. So a table is read a 32-bit word at a time where it is a
 * byte or 16-bit table (a word of zeros is four or two zero ids skipped at once), and an
 * encoding's entries are made once per distinct value.
 * Every function returns exactly what the per-token loop over valueAt(t) = values[t] ?? dflt,
 * t = 0 … vocab − 1, would (test/lower-token-columns.test.ts compares them).
 */
import type { TokenValues } from '../ir/types.ts';

/** Whether this machine stores a word's lowest byte first (a Uint32Array's bytes as a byte table reads them). */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/**
 * The ids t < n whose table value is a number other than 0 (±0 and a missing value count as 0),
 * ascending, written into `out` (length ≥ n); returns their count.
 */
export function nonZeroTokensInto(values: TokenValues, n: number, out: Int32Array): number {
  const len = Math.min(n, values.length);
  let count = 0;
  if (LITTLE_ENDIAN && values instanceof Int8Array && values.byteOffset % 4 === 0) {
    const words = len >> 2;
    count = byteWordsInto(new Uint32Array(values.buffer, values.byteOffset, words), out);
    for (let t = 4 * words; t < len; t++) if (values[t] !== 0) out[count++] = t;
    return count;
  }
  if (values instanceof Int16Array && values.byteOffset % 4 === 0) {
    const words = len >> 1;
    count = halfWordsInto(new Uint32Array(values.buffer, values.byteOffset, words), values, out);
    for (let t = 2 * words; t < len; t++) if (values[t] !== 0) out[count++] = t;
    return count;
  }
  for (let t = 0; t < len; t++) {
    const v = values[t];
    if (v !== 0 && v !== undefined) out[count++] = t;
  }
  return count;
}

// The word loops are functions of their own, called once per table with nothing after the loop:
// a first call runs a long loop in on-stack-replaced code, which an operation after the loop, not
// yet run when it was compiled, would throw away — on every later call too (V8 keeps the code).

/**
 * The ids of the non-zero bytes of a byte table read as words, into out; their count. A word's
 * lowest set bit names its lowest non-zero byte (the lowest address on a little-endian machine),
 * which is then cleared: no branch per byte.
 */
function byteWordsInto(u32: Uint32Array, out: Int32Array): number {
  let count = 0;
  for (let w = 0; w < u32.length; w++) {
    let x = u32[w]!;
    while (x !== 0) {
      const b = (31 - Math.clz32(x & -x)) >> 3;
      out[count++] = 4 * w + b;
      x &= ~(0xff << (8 * b));
    }
  }
  return count;
}

/** The ids of the non-zero entries of a 16-bit table (`u32`: its words, two entries each), into out; their count. */
function halfWordsInto(u32: Uint32Array, values: Int16Array, out: Int32Array): number {
  let count = 0;
  for (let w = 0; w < u32.length; w++) {
    if (u32[w] === 0) continue;
    if (values[2 * w] !== 0) out[count++] = 2 * w;
    if (values[2 * w + 1] !== 0) out[count++] = 2 * w + 1;
  }
  return count;
}

/**
 * The values of the table at `tokens`, in the table's own integer type (a plain table's as
 * float64). A function of its own, called once per field (see byteWordsInto).
 */
export function valuesAt(values: TokenValues, tokens: Int32Array): Int8Array | Int16Array | Int32Array | Float64Array {
  const n = tokens.length;
  const out = values instanceof Int8Array ? new Int8Array(n) : values instanceof Int16Array ? new Int16Array(n)
    : values instanceof Int32Array ? new Int32Array(n) : new Float64Array(n);
  for (let k = 0; k < n; k++) out[k] = values[tokens[k]!]!;
  return out;
}

/** The 0/1 columns of a field's encoding: column j holds the ids t where entries(valueAt(t)) puts j. */
export interface FieldColumn { tokens: Int32Array; values: Uint8Array }

/**
 * The `count` columns of an encoding whose entries(v, put) puts (j, x) pairs for a field value v
 * (x must be 0 or 1: a put of x = 0 puts nothing), over ids 0 … vocab − 1 with valueAt(t) =
 * values[t] ?? dflt. Throws the lowering's internal error at the first id (ascending) whose value
 * puts an x other than 0 or 1 (`name` and `encoding` name it).
 */
export function encodingColumns(
  values: TokenValues, vocab: number, dflt: number, count: number,
  entries: (v: number, put: (j: number, x: number) => void) => void, name: string, encoding: string,
): FieldColumn[] {
  // the pairs (j, x ≠ 0) each distinct value puts, made on first sight (entries is a function of v)
  const made = new Map<number, number[]>();
  const putsOf = (v: number): number[] => {
    let p = made.get(v);
    if (p === undefined) {
      const list: number[] = [];
      entries(v, (j, x) => { if (x !== 0) list.push(j, x); });
      made.set(v, (p = list));
    }
    return p;
  };
  const typed = values instanceof Int8Array || values instanceof Int16Array || values instanceof Int32Array;
  const len = Math.min(vocab, values.length);
  // The ids to visit: all of them, or (a typed table whose value 0 puts nothing) the non-zero ones
  // and those past the table's end (whose value is dflt) when dflt puts something.
  let ids: Int32Array | null = null;
  let nIds = vocab;
  if (typed && putsOf(0).length === 0) {
    ids = new Int32Array(vocab);
    nIds = nonZeroTokensInto(values, len, ids);
    if (putsOf(dflt).length > 0) for (let t = len; t < vocab; t++) ids[nIds++] = t;
  }
  const valueAt = (t: number): number => values[t] ?? dflt;
  // (a small typed table's values have a direct index: one array read per id instead of a map lookup)
  const offset = values instanceof Int8Array ? 128 : values instanceof Int16Array ? 32768 : -1;
  const byValue: (number[] | undefined)[] = offset >= 0 ? new Array<number[] | undefined>(2 * offset) : [];
  const pairsAt = (t: number): number[] => {
    if (offset >= 0 && t < len) {
      const v = values[t]!;
      return byValue[v + offset] ??= putsOf(v);
    }
    return putsOf(valueAt(t));
  };
  const sizes = new Int32Array(count);
  for (let i = 0; i < nIds; i++) {
    const p = pairsAt(ids === null ? i : ids[i]!);
    for (let q = 0; q < p.length; q += 2) sizes[p[q]!]!++;
  }
  const cols = Array.from({ length: count }, (_, j) => ({ tokens: new Int32Array(sizes[j]!), values: new Uint8Array(sizes[j]!) }));
  const fill = new Int32Array(count);
  for (let i = 0; i < nIds; i++) {
    const t = ids === null ? i : ids[i]!;
    const p = pairsAt(t);
    for (let q = 0; q < p.length; q += 2) {
      const j = p[q]!;
      const x = p[q + 1]!;
      if (x !== 1) throw new Error(`internal: ${name}: ${encoding} dim ${j} would be ${x} at token ${t}, not 0 or 1`);
      const c = cols[j]!;
      c.tokens[fill[j]!] = t;
      c.values[fill[j]!++] = 1;
    }
  }
  return cols;
}
