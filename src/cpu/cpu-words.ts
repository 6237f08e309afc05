/**
 * Small word builders the CPU's stages share: a word from bits (bitsWord), from instruction bit
 * positions (wordFromSpec with the immediate layouts of immSpec) and a bytewise select (muxWord).
 * Each builds the same signals wherever it is called.
 */
import type { CircuitBuilder, Ram, Sig } from '../dsl/index.ts';
import { byteFromNibbles, type Word } from './alu.ts';

/** Every combination of the signals' values in table order (first signal slowest). */
function combinations(sigs: Sig[]): number[][] {
  const spans = sigs.map((s) => s.range.hi - s.range.lo + 1);
  const size = spans.reduce((a, n) => a * n, 1);
  return Array.from({ length: size }, (_, i) => {
    let rem = i;
    const v = new Array<number>(sigs.length);
    for (let k = sigs.length - 1; k >= 0; k--) { v[k] = sigs[k]!.range.lo + (rem % spans[k]!); rem = Math.floor(rem / spans[k]!); }
    return v;
  });
}

/**
 * A class of the early inputs for f(early…, late…): their combinations numbered, in table order,
 * by the values f gives over the late inputs' combinations (first appearance), as one table;
 * `at(k, late…)` is f's value for class k at those late values. A table over (class, late…) is
 * then one FFN layer after the late inputs whatever the early inputs' count, where one table over
 * them all would span more cases than an exact ramp table can.
 */
export function classOverLate(
  c: CircuitBuilder, name: string, early: Sig[], late: Sig[], f: (...v: number[]) => number,
): { klass: Sig; at: (k: number, ...late: number[]) => number } {
  const lates = combinations(late);
  const rows: number[][] = [];
  const index = new Map<string, number>();
  const classOf = (...v: number[]): number => {
    const row = lates.map((x) => f(...v, ...x));
    const key = row.join(',');
    let k = index.get(key);
    if (k === undefined) { k = rows.length; index.set(key, k); rows.push(row); }
    return k;
  };
  // Every combination first, so that the class's range is known.
  for (const v of combinations(early)) classOf(...v);
  const klass = c.table(name, early, classOf, [0, rows.length - 1]);
  const at = (k: number, ...x: number[]) => {
    let i = 0;
    x.forEach((xv, j) => { i = i * (late[j]!.range.hi - late[j]!.range.lo + 1) + xv - late[j]!.range.lo; });
    return rows[k]![i]!;
  };
  return { klass, at };
}

/** f(early…, late) as two tables: the class of the early inputs over late (classOverLate), and the table over (class, late). */
export function tableOverClass(
  c: CircuitBuilder, names: [klass: string, table: string], early: Sig[], late: Sig, f: (...v: number[]) => number, range?: [number, number],
): Sig {
  const { klass, at } = classOverLate(c, names[0], early, [late], f);
  return c.table(names[1], [klass, late], (k, x) => at(k, x), range);
}

/** The 8 nibbles of a word stored as 32 one-bit fields, as read groups (Ram.readWithGroups). */
export const NIBBLE_GROUPS: [number, number][][] = Array.from({ length: 8 }, (_, n) => Array.from({ length: 4 }, (_, k) => [4 * n + k, 2 ** k] as [number, number]));

/**
 * Read a word stored as 32 one-bit fields: its bits, and the word built from nibbles that the
 * read-out writes as values of their own (Ram.readWithGroups), so that a table over a nibble
 * reads one dim where it would read four bits.
 */
export function readWord(c: CircuitBuilder, ram: Ram, addr: Sig, enable?: Sig): { bits: Sig[]; word: Word } {
  const r = ram.readWithGroups(addr, enable, NIBBLE_GROUPS);
  return { bits: r.fields, word: [0, 1, 2, 3].map((b) => byteFromNibbles(c, r.groups[2 * b]!, r.groups[2 * b + 1]!)) };
}

/** The word of 32 bits (LSB first). */
export function bitsWord(c: CircuitBuilder, bits: Sig[]): Word {
  // Each byte is built from two nibbles that are linear forms of its bits, so a consumer that wants
  // the nibbles (multiplier, divider, adders) gets them free instead of through a split layer.
  const nib = (from: number) => c.linear(bits.slice(from, from + 4).map((s, k) => [s, 2 ** k] as [Sig, number]));
  return [0, 1, 2, 3].map((b) => byteFromNibbles(c, nib(8 * b), nib(8 * b + 4)));
}

/** A word from instruction bit positions (null = 0, 'S' = the sign bit 31). */
export function wordFromSpec(c: CircuitBuilder, ins: Sig[], spec: (number | null)[]): Word {
  return [0, 1, 2, 3].map((b) => {
    const terms: [Sig, number][] = [];
    for (let k = 0; k < 8; k++) {
      const src = spec[8 * b + k];
      if (src !== null && src !== undefined) terms.push([ins[src]!, 2 ** k]);
    }
    return c.linear(terms);
  });
}

/** Which instruction bit each immediate bit is, for the I, S, B, U and J layouts (null = 0). */
export function immSpec(kind: 'I' | 'S' | 'B' | 'U' | 'J'): (number | null)[] {
  const s: (number | null)[] = new Array(32).fill(null);
  const sign = (from: number) => { for (let k = from; k < 32; k++) s[k] = 31; };
  if (kind === 'I') { for (let k = 0; k < 11; k++) s[k] = 20 + k; sign(11); }
  if (kind === 'S') {
    for (let k = 0; k <= 4; k++) s[k] = 7 + k; // imm[4:0] = ins[11:7]
    for (let k = 5; k <= 10; k++) s[k] = 20 + k; // imm[10:5] = ins[30:25]
    sign(11);
  }
  if (kind === 'B') {
    for (let k = 1; k <= 4; k++) s[k] = 7 + k; // imm[4:1] = ins[11:8]
    for (let k = 5; k <= 10; k++) s[k] = 20 + k; // imm[10:5] = ins[30:25]
    s[11] = 7; // imm[11] = ins[7]
    sign(12);
  }
  if (kind === 'U') for (let k = 12; k < 32; k++) s[k] = k;
  if (kind === 'J') {
    for (let k = 1; k <= 10; k++) s[k] = 20 + k; // imm[10:1] = ins[30:21]
    s[11] = 20; // imm[11] = ins[20]
    for (let k = 12; k <= 19; k++) s[k] = k; // imm[19:12] = ins[19:12]
    sign(20);
  }
  return s;
}

/** select(cond, a, b) bytewise. */
export function muxWord(c: CircuitBuilder, cond: Sig, a: Word, b: Word): Word {
  return a.map((x, i) => c.select(cond, x, b[i]!));
}
