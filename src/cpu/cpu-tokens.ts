/**
 * The chip's view of the token alphabet: every id constant comes from riscv/protocol.ts (the one
 * source of truth for token ids); here they are gathered as TOK, and each id is classified into
 * the kind and payload (window slot j, value v) that the chip's token fields are tables over
 * (the embedding). Also the values a fed token commits to a register by itself.
 */
import {
  A_BASE, BOS_ID, D_BASE, E_BASE, E_PER_SLOT, H_BASE, HALT_BASE, J_BASE, K_BASE, N_BASE, OUT_BASE, OUT_PER_SLOT,
  Q_BASE, TRAP_BASE, TRAP_COUNT, WINDOW_SLOTS, wideValue,
} from '../../riscv/protocol.ts';

// ── token alphabet (docs/token-protocol.md "Alphabet") ─────────────────────────────────────────
/** The first id of each token kind (BOS: its one id). */
export const TOK = {
  E: E_BASE, D: D_BASE, J: J_BASE, H: H_BASE, K: K_BASE, N: N_BASE, OUT: OUT_BASE, HALT: HALT_BASE, BOS: BOS_ID, Q: Q_BASE,
  A: A_BASE, TRAP: TRAP_BASE,
} as const;
import { VOCAB } from '../../riscv/chip-shape.ts';
import type { CircuitBuilder, Sig } from '../dsl/index.ts';
import type { TokenValues } from '../ir/types.ts';
import { ChipcError } from '../util/errors.ts';

export { CODE_STORE_WORDS, VOCAB } from '../../riscv/chip-shape.ts';
/** TRAP(cause) ids (protocol v5): 0 illegal instruction, 1 ebreak, 2 fetch fault, 3 load fault, 4 store fault; 5…7 reserved. */
export const TRAP_IDS = TRAP_COUNT;

export const enum Kind { E, D, J, H, K, N, OUT, HALT, BOS, Q, A, TRAP }

/** A token id's kind and payload (the embedding's view): one shared, frozen object per id. */
export interface TokenKind { readonly kind: Kind; readonly j: number; readonly v: number }

let kindTable: readonly TokenKind[] | null = null;

/**
 * The kind and payload of a token id (the embedding's view). Looked up in a table built on first
 * use: every token field of the chip calls this for each of the alphabet's ≈ 248,000 ids, and
 * building a fresh object per call was most of the circuit's build time.
 */
export function tokenKind(t: number): TokenKind {
  const table = kindTable ??= Object.freeze(Array.from({ length: VOCAB }, (_, id) => Object.freeze(classifyToken(id))));
  return table[t] ?? classifyToken(t);
}

function classifyToken(t: number): TokenKind {
  if (t < TOK.D) return { kind: Kind.E, j: Math.floor((t - TOK.E) / E_PER_SLOT), v: (t - TOK.E) % E_PER_SLOT };
  if (t < TOK.J) return { kind: Kind.D, j: 0, v: t - TOK.D };
  if (t < TOK.H) return { kind: Kind.J, j: (t - TOK.J) % WINDOW_SLOTS, v: t - TOK.J };
  if (t < TOK.K) return { kind: Kind.H, j: 0, v: t - TOK.H };
  if (t < TOK.N) return { kind: Kind.K, j: 0, v: t - TOK.K };
  if (t < TOK.OUT) return { kind: Kind.N, j: t - TOK.N, v: 0 };
  if (t < TOK.HALT) return { kind: Kind.OUT, j: Math.floor((t - TOK.OUT) / OUT_PER_SLOT), v: (t - TOK.OUT) % OUT_PER_SLOT };
  if (t < TOK.BOS) return { kind: Kind.HALT, j: 0, v: t - TOK.HALT };
  if (t === TOK.BOS) return { kind: Kind.BOS, j: 0, v: 0 };
  if (t < TOK.A) return { kind: Kind.Q, j: 0, v: t - TOK.Q };
  if (t < TOK.TRAP) return { kind: Kind.A, j: 0, v: t - TOK.A };
  return { kind: Kind.TRAP, j: 0, v: t - TOK.TRAP };
}

/** The low `bits` bits of v, sign-extended to 32. */
export const sext = (v: number, bits: number) => (v << (32 - bits)) >> (32 - bits);
/** Bit k of v. */
export const bit = (v: number, k: number) => (v >>> k) & 1;

/** Value bits a token commits by itself: narrow E/K (sign-extended 14 bits). */
export function narrowCommit(t: number): number {
  const { kind, v } = tokenKind(t);
  return kind === Kind.E || kind === Kind.K ? sext(v, 14) : 0;
}
/**
 * Upper value bits when completing a D: E/K carry bits 16…29 (sign-extended), or in the pointer
 * quadrant (payload bits 13…12 = 10, protocol v6) 0x8000 + bits 11…0 as bits 16…31; H bits 16…31.
 */
export function wideCommit(t: number): number {
  const { kind, v } = tokenKind(t);
  if (kind === Kind.E || kind === Kind.K) return wideValue(v, 0);
  if (kind === Kind.H) return v << 16;
  return 0;
}

// ── token fields as protocol constants ─────────────────────────────────────────────────────────
/** A field's table over the alphabet, and the source of the function that made it. */
interface FieldTable { readonly values: TokenValues; readonly source: string }

const fieldTables = new Map<string, FieldTable>();

/**
 * The chip's token field `name`: `fn(id)` for each of the alphabet's ids, as `c.tokenField` would
 * give it. The chip's fields depend on the token protocol alone, never on the chip's options, so
 * each is tabulated once per process and every later chip build passes the same table (about 170
 * fields over ≈ 248,000 ids took a second of each build). A name is one field: asking for it
 * again with a function of different source is a mistake in the chip, reported as one.
 */
export function protocolField(c: CircuitBuilder, name: string, fn: (id: number) => number, range: [number, number]): Sig {
  const source = fn.toString();
  let table = fieldTables.get(name);
  if (table === undefined) {
    table = { values: tabulate(fn), source };
    fieldTables.set(name, table);
  } else if (table.source !== source) {
    throw new ChipcError('cpu.field', `the chip's token field "${name}" is defined twice, by different functions`);
  }
  return c.tokenTable(name, table.values, range);
}


/**
 * The chip's token fields for bits from … from + names.length − 1 of `fn(id)`: field names[k] is
 * bit from + k of fn(id), the field protocolField(c, names[k], (t) => bit(fn(t), from + k), [0, 1])
 * gives, in that order. fn runs once per id for all of them, not once per id and bit (≈ 150 of the
 * chip's fields are bits of a few values per id: a J's word index, a D's payload, the committed
 * value), and each bit is taken from a table of fn's values.
 */
export function protocolBits(c: CircuitBuilder, names: readonly string[], fn: (id: number) => number, from = 0): Sig[] {
  if (!Number.isInteger(from) || from < 0 || from + names.length > 32) throw new Error(`internal: bits ${from}…${from + names.length - 1} of a 32-bit value`);
  const source = (k: number) => `bit ${from + k} of ${fn.toString()}`;
  let words: Uint32Array | null = null;
  return names.map((name, k) => {
    let table = fieldTables.get(name);
    if (table === undefined) {
      words ??= tabulateWords(fn);
      table = { values: bitTable(words, from + k), source: source(k) };
      fieldTables.set(name, table);
    } else if (table.source !== source(k)) {
      throw new ChipcError('cpu.field', `the chip's token field "${name}" is defined twice, by different functions`);
    }
    return c.tokenTable(name, table.values, [0, 1]);
  });
}

/** fn(id) >>> 0 for each of the alphabet's ids (bit k of that is bit(fn(id), k)). */
function tabulateWords(fn: (id: number) => number): Uint32Array {
  const vocab = VOCAB;
  const words = new Uint32Array(vocab);
  for (let t = 0; t < vocab; t++) words[t] = fn(t) >>> 0;
  return words;
}

/** Bit k of each word, one byte per id (the table tabulate gives a 0/1 field). */
function bitTable(words: Uint32Array, k: number): Int8Array {
  const bytes = new Int8Array(words.length);
  for (let t = 0; t < words.length; t++) bytes[t] = (words[t]! >>> k) & 1;
  return bytes;
}


/**
 * fn over the alphabet as a compact table: one byte per id while every value fits a signed byte
 * (all the chip's fields: bits, kinds, small counts), else a plain array. A plain array of ≈ 248,000
 * numbers is 2 MB, and allocating ≈ 100 of them was most of a chip build's first second.
 */
function tabulate(fn: (id: number) => number): TokenValues {
  const vocab = VOCAB; // (read once: an import is a getter call per use where transpiled to CommonJS)
  const bytes = new Int8Array(vocab);
  for (let t = 0; t < vocab; t++) {
    const v = fn(t);
    if (!Number.isInteger(v) || v < -128 || v > 127 || Object.is(v, -0)) {
      const values = Array.from(bytes.subarray(0, t), Number);
      for (let u = t; u < vocab; u++) values.push(fn(u));
      return values;
    }
    bytes[t] = v;
  }
  return bytes;
}
