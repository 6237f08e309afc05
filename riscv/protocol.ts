/**
 * The chip's token protocol, v9 (docs/token-protocol.md): the id ranges of every token kind,
 * encodeToken / decodeToken / formatToken, the sign-extension helpers and range predicates used
 * to choose between the narrow (E), wide (D + E, with v6's pointer quadrant) and full (D + H + N)
 * result forms, the BOS id and the code-address mapping of J(w).
 *
 * Every id below PROTOCOL_ALPHABET_SIZE is a token of exactly one kind; ids at or above it (up to
 * the model's 248,320-id vocabulary) are reserved and decode to a ChipcError.
 */
import { ChipcError } from '../src/util/errors.ts';

export const PROTOCOL_VERSION = 'v9';

/** First id of each kind and the number of ids it owns (ranges are contiguous, in this order). */
export const E_BASE = 0;
export const E_COUNT = 4 * (1 << 14);
export const D_BASE = E_BASE + E_COUNT; // 65,536
export const D_COUNT = 1 << 16;
export const J_BASE = D_BASE + D_COUNT; // 131,072
export const J_COUNT = 1 << 15;
export const H_BASE = J_BASE + J_COUNT; // 163,840
export const H_COUNT = 1 << 16;
export const K_BASE = H_BASE + H_COUNT; // 229,376
export const K_COUNT = 1 << 14;
export const N_BASE = K_BASE + K_COUNT; // 245,760
export const N_COUNT = 4;
export const OUT_BASE = N_BASE + N_COUNT; // 245,764
export const OUT_COUNT = 4 * 256;
export const HALT_BASE = OUT_BASE + OUT_COUNT; // 246,788
export const HALT_COUNT = 256;
/** The beginning-of-sequence token the driver feeds first (v1 decision: the first spare id after HALT). */
export const BOS_ID = HALT_BASE + HALT_COUNT; // 247,044
/** v2: a division step Q(s, q) — step s ∈ 0…7 of radix-16 long division emitted quotient digit q. */
export const Q_BASE = BOS_ID + 1; // 247,045
export const Q_COUNT = 8 * 16;
/** v2: a code store A(w) — the pending store writes code word w (the first 1,024 words are reachable). */
export const A_BASE = Q_BASE + Q_COUNT; // 247,173
export const A_COUNT = 1024;
/** v5: a trap TRAP(cause) — the program stopped on something the chip does not run (TRAP_CAUSE). */
export const TRAP_BASE = A_BASE + A_COUNT; // 248,197
export const TRAP_COUNT = 8;
/** Instruction slots of a window: the j of E(j, v), N(j) and OUT(j, b), j ∈ 0…WINDOW_SLOTS − 1. */
export const WINDOW_SLOTS = 4;
/** E ids per slot j: its 14-bit payload v (K has as many ids, one slot). */
export const E_PER_SLOT = E_COUNT / WINDOW_SLOTS; // 16,384
/** OUT ids per slot j: its byte b. */
export const OUT_PER_SLOT = OUT_COUNT / WINDOW_SLOTS; // 256
/** Quotient digits of a division step Q(s, q) = Q_BASE + Q_DIGITS·s + q. */
export const Q_DIGITS = 16;
/** Number of ids the alphabet uses: [0, PROTOCOL_ALPHABET_SIZE). */
export const PROTOCOL_ALPHABET_SIZE = TRAP_BASE + TRAP_COUNT; // 248,205
/** Qwen3.5's vocabulary size: every token id must be below it. */
export const QWEN_VOCAB_SIZE = 248_320;

/** Code space addressed by J(w): PC = CODE_BASE + 4·w, w < 2^15 (128 KiB). */
export const CODE_BASE = 0x80000000;
export const CODE_WORDS = J_COUNT;
export const CODE_BYTES = 4 * CODE_WORDS;

/**
 * The cause payload of TRAP(cause) (v5): an illegal instruction, an ebreak, an instruction fetch
 * the chip cannot make (outside its code RAM or RAM, beyond the 128 KiB J range, or a jump or
 * branch to a target that is not 4-aligned), a load or a store outside RAM and the console.
 * Causes 5…7 are reserved (encodable, never generated).
 */
export const TRAP_CAUSE = { illegal: 0, ebreak: 1, fetch: 2, load: 3, store: 4 } as const;
export type TrapCause = keyof typeof TRAP_CAUSE;
/** Cause names by payload (index = TRAP_CAUSE[name]). */
export const TRAP_CAUSE_NAMES: readonly TrapCause[] = ['illegal', 'ebreak', 'fetch', 'load', 'store'];

/** Name of a TRAP payload for messages: the cause name for 0…4, `reserved cause n` for 5…7. */
export function trapCauseName(cause: number): string {
  return TRAP_CAUSE_NAMES[cause] ?? `reserved cause ${cause}`;
}

export type TokenKind = 'E' | 'D' | 'J' | 'H' | 'K' | 'N' | 'OUT' | 'HALT' | 'BOS' | 'Q' | 'A' | 'TRAP';

/** A decoded token. E and K carry a signed 14-bit v; D and H an unsigned 16-bit v. */
export type Token =
  | { kind: 'E'; j: number; v: number }
  | { kind: 'D'; v: number }
  | { kind: 'J'; w: number }
  | { kind: 'H'; v: number }
  | { kind: 'K'; v: number }
  | { kind: 'N'; j: number }
  | { kind: 'OUT'; j: number; b: number }
  | { kind: 'HALT'; code: number }
  | { kind: 'BOS' }
  | { kind: 'Q'; s: number; q: number }
  | { kind: 'A'; w: number }
  | { kind: 'TRAP'; cause: number };

/** What encodeToken accepts: a kind and exactly the fields that kind has. */
export interface TokenFields {
  kind: TokenKind;
  j?: number;
  v?: number;
  w?: number;
  b?: number;
  code?: number;
  s?: number;
  q?: number;
  cause?: number;
}

const FIELDS: Record<TokenKind, readonly (keyof TokenFields)[]> = {
  E: ['j', 'v'], D: ['v'], J: ['w'], H: ['v'], K: ['v'], N: ['j'], OUT: ['j', 'b'], HALT: ['code'], BOS: [], Q: ['s', 'q'], A: ['w'], TRAP: ['cause'],
};

/** The low 14 bits of x as a signed number: ((x mod 2^14) xor 2^13) − 2^13, in [−8192, 8191]. */
export function signExtend14(x: number): number {
  return ((x & 0x3fff) ^ 0x2000) - 0x2000;
}

/** The low 30 bits of x as a signed number: ((x mod 2^30) xor 2^29) − 2^29, in [−2^29, 2^29 − 1]. */
export function signExtend30(x: number): number {
  return ((x & 0x3fffffff) ^ 0x20000000) - 0x20000000;
}

function check32(v: number, what: string): number {
  if (!Number.isInteger(v) || v < -0x80000000 || v > 0xffffffff) {
    throw new ChipcError('protocol.value', `${what}: ${v} is not a 32-bit value (an integer in [-2^31, 2^32))`);
  }
  return v | 0;
}

/** True when the 32-bit value v (signed or unsigned form) equals signExtend30 of its low 30 bits, i.e. −2^29 ≤ (v as int32) < 2^29. */
export function fits30(v: number): boolean {
  const s = check32(v, 'fits30');
  return signExtend30(s) === s;
}

/**
 * v6: the E/K payloads whose two top bits are 10 (as signed 14-bit numbers, [−8192, −4096)) are
 * the **pointer quadrant** of the wide form: after a D they complete the value
 * 0x80000000 + 65,536·(payload mod 2^12) + lo (a pointer into code or data), not a large
 * negative number. The narrow form never emits them (a value in [−8192, −4096) takes the wide
 * form), so each E/K id names one high byte in both forms.
 */
export const POINTER_QUADRANT = 2;

/** True when v (signed or unsigned form) takes the narrow form E(j, v) / K(v): −4096 ≤ (v as int32) ≤ 8191 (v6). */
export function fitsNarrow(v: number): boolean {
  const s = check32(v, 'fitsNarrow');
  return s >= -4096 && s <= 8191;
}

/**
 * The E/K payload (a signed 14-bit number) that completes D(v mod 2^16) to the 32-bit value v, or
 * null when v takes the full form (D, H): the value's bits 16…29 when it fits 30 bits and its top
 * four bits are not 1110 (the quadrant that v6 gave to pointers), or the pointer quadrant's
 * payload when its top four bits are 1000.
 */
export function wideHi14(v: number): number | null {
  const s = check32(v, 'wideHi14');
  const top = s >>> 28;
  if (top === 0x8) return signExtend14((POINTER_QUADRANT << 12) | ((s >>> 16) & 0xfff));
  if (top === 0xe || !fits30(s)) return null;
  return signExtend14(s >> 16);
}

/** The value that the E/K payload hi14 (any 14-bit form) completes with D's lo (the commit rule after a D; v6), as an int32. */
export function wideValue(hi14: number, lo: number): number {
  const h = hi14 & 0x3fff;
  const hi16 = h >>> 12 === POINTER_QUADRANT ? 0x8000 | (h & 0xfff) : signExtend14(h) & 0xffff;
  return ((hi16 << 16) | (lo & 0xffff)) | 0;
}

/** The payloads carrying a 32-bit result in the full form: lo = v mod 2^16 (the D payload), hi16 = v >>> 16 (the H payload). */
export function splitResult(v: number): { lo: number; hi16: number } {
  const s = check32(v, 'splitResult');
  return { lo: s & 0xffff, hi16: (s >>> 16) & 0xffff };
}

/** J payload for a code address: w = (pc − 0x80000000) / 4; ChipcError outside the 128 KiB code space or misaligned. */
export function codeWord(pc: number): number {
  const off = pc - CODE_BASE;
  if (!Number.isInteger(pc) || off < 0 || off >= CODE_BYTES || off % 4 !== 0) {
    throw new ChipcError('protocol.code-range',
      `address 0x${(pc >>> 0).toString(16).padStart(8, '0')} is outside the v1 code space ` +
      `[0x80000000, 0x${(CODE_BASE + CODE_BYTES).toString(16)}) or not 4-aligned, so J(w) cannot reach it`);
  }
  return off / 4;
}

/** The address J(w) jumps to: 0x80000000 + 4·w. */
export function codeAddress(w: number): number {
  checkField('J', 'w', w, 0, CODE_WORDS - 1);
  return CODE_BASE + 4 * w;
}

function checkField(kind: TokenKind, name: string, x: number | undefined, lo: number, hi: number): number {
  if (x === undefined) throw new ChipcError('protocol.token', `${kind} token needs the field ${name}`);
  if (!Number.isInteger(x) || x < lo || x > hi) {
    throw new ChipcError('protocol.token', `${kind} token: ${name} = ${x} is not an integer in [${lo}, ${hi}]`);
  }
  return x;
}

/** Token id of a kind and its payload fields (ChipcError for a missing, extra or out-of-range field). */
export function encodeToken(t: TokenFields): number {
  const fields = FIELDS[t.kind];
  if (fields === undefined) throw new ChipcError('protocol.token', `unknown token kind ${JSON.stringify(t.kind)}`);
  for (const k of ['j', 'v', 'w', 'b', 'code', 's', 'q', 'cause'] as const) {
    if (t[k] !== undefined && !fields.includes(k)) {
      throw new ChipcError('protocol.token', `${t.kind} token has no field ${k} (its fields: ${fields.join(', ') || 'none'})`);
    }
  }
  switch (t.kind) {
    case 'E': return E_BASE + checkField('E', 'j', t.j, 0, 3) * 0x4000 + (checkField('E', 'v', t.v, -8192, 8191) & 0x3fff);
    case 'D': return D_BASE + checkField('D', 'v', t.v, 0, 0xffff);
    case 'J': return J_BASE + checkField('J', 'w', t.w, 0, J_COUNT - 1);
    case 'H': return H_BASE + checkField('H', 'v', t.v, 0, 0xffff);
    case 'K': return K_BASE + (checkField('K', 'v', t.v, -8192, 8191) & 0x3fff);
    case 'N': return N_BASE + checkField('N', 'j', t.j, 0, 3);
    case 'OUT': return OUT_BASE + checkField('OUT', 'j', t.j, 0, 3) * 256 + checkField('OUT', 'b', t.b, 0, 255);
    case 'HALT': return HALT_BASE + checkField('HALT', 'code', t.code, 0, 255);
    case 'BOS': return BOS_ID;
    case 'Q': return Q_BASE + checkField('Q', 's', t.s, 0, 7) * 16 + checkField('Q', 'q', t.q, 0, 15);
    case 'A': return A_BASE + checkField('A', 'w', t.w, 0, A_COUNT - 1);
    case 'TRAP': return TRAP_BASE + checkField('TRAP', 'cause', t.cause, 0, TRAP_COUNT - 1);
  }
}

/** The token of an id in [0, PROTOCOL_ALPHABET_SIZE); ChipcError for any other number. */
export function decodeToken(id: number): Token {
  if (!Number.isInteger(id) || id < 0 || id >= PROTOCOL_ALPHABET_SIZE) {
    throw new ChipcError('protocol.id', `token id ${id} is outside the ${PROTOCOL_VERSION} alphabet [0, ${PROTOCOL_ALPHABET_SIZE})`);
  }
  if (id < D_BASE) return { kind: 'E', j: (id - E_BASE) >> 14, v: signExtend14(id - E_BASE) };
  if (id < J_BASE) return { kind: 'D', v: id - D_BASE };
  if (id < H_BASE) return { kind: 'J', w: id - J_BASE };
  if (id < K_BASE) return { kind: 'H', v: id - H_BASE };
  if (id < N_BASE) return { kind: 'K', v: signExtend14(id - K_BASE) };
  if (id < OUT_BASE) return { kind: 'N', j: id - N_BASE };
  if (id < HALT_BASE) return { kind: 'OUT', j: (id - OUT_BASE) >> 8, b: (id - OUT_BASE) & 0xff };
  if (id < BOS_ID) return { kind: 'HALT', code: id - HALT_BASE };
  if (id === BOS_ID) return { kind: 'BOS' };
  if (id < A_BASE) return { kind: 'Q', s: (id - Q_BASE) >> 4, q: (id - Q_BASE) & 15 };
  if (id < TRAP_BASE) return { kind: 'A', w: id - A_BASE };
  return { kind: 'TRAP', cause: id - TRAP_BASE };
}

const hex = (x: number, width: number): string => `0x${x.toString(16).padStart(width, '0')}`;

/**
 * Human form of a token id: E(2, -17), D(0x1234), J(0x40), H(0xbeef), K(5), N(1), OUT(1, 0x41),
 * HALT(0), BOS, Q(3, 9), A(0x10), TRAP(illegal) (a reserved cause by its number: TRAP(5)).
 */
export function formatToken(id: number): string {
  const t = decodeToken(id);
  switch (t.kind) {
    case 'E': return `E(${t.j}, ${t.v})`;
    case 'D': return `D(${hex(t.v, 4)})`;
    case 'J': return `J(${hex(t.w, 1)})`;
    case 'H': return `H(${hex(t.v, 4)})`;
    case 'K': return `K(${t.v})`;
    case 'N': return `N(${t.j})`;
    case 'OUT': return `OUT(${t.j}, ${hex(t.b, 2)})`;
    case 'HALT': return `HALT(${t.code})`;
    case 'BOS': return 'BOS';
    case 'Q': return `Q(${t.s}, ${t.q})`;
    case 'A': return `A(${hex(t.w, 1)})`;
    case 'TRAP': return `TRAP(${TRAP_CAUSE_NAMES[t.cause] ?? t.cause})`;
  }
}

/**
 * formatToken(id), and after a D (prev) the 32-bit word that the D and this E / K / H carry
 * together: `E(2, -8192) = 0x80000010` (a pointer in the wide form, v6), `H(0x9765) = 0x97654321`.
 * A stream printer's view: the word is what the two tokens carry, whether or not it is committed
 * to a register (a store's or a division step's H carries a word it does not commit).
 */
export function formatTokenAfter(id: number, prev: number | null): string {
  const text = formatToken(id);
  if (prev === null || prev < D_BASE || prev >= D_BASE + D_COUNT) return text;
  const lo = prev - D_BASE;
  const t = decodeToken(id);
  const word = t.kind === 'E' || t.kind === 'K' ? wideValue(t.v, lo) : t.kind === 'H' ? (t.v << 16) | lo : null;
  return word === null ? text : `${text} = ${hex(word >>> 0, 8)}`;
}
