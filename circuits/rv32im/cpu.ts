/**
 * The RV32IM+Zba chip, v1, speaking token protocol v2 (docs/token-protocol.md): fetch (a code
 * RAM), decode, register file (a RAM with two read ports), ALU and Zba, branches and jumps
 * (PC = base + 4·j, base latched by J tokens), a data RAM with loads and stores of every width and
 * alignment, the console (OUT), `ecall` exit and `tohost` (HALT), one 32×32 → 64 multiplier for
 * MUL* and the bignum unit's bn.mac / bn.mac1 (circuits/bignum/mac-unit.ts), radix-16 division
 * steps for DIV/REM (Q tokens), code stores that reach fetch (A tokens), and a loader mode before
 * the first J (loading by prompt). docs/cpu-plan.md has the status.
 *
 * One position is one micro-step. Positions fed E, N, OUT(j ≥ 1) or J start the instruction at
 * their PC; positions fed D, H, K, Q, A or OUT(0) re-execute the pending one (same PC, same
 * register reads: nothing was committed since) to emit the rest of its tokens. Each position also
 * commits what its token carries into the register named by the previous position's decoded rd
 * (a delay line). Late results reach the next position only through the emitted token, so
 * multi-position sequences (wide results, stores that write back a merged word, word-crossing
 * accesses, division steps) keep their state in tokens, delay lines of the fed kinds and latches
 * written from token fields.
 */
import { defineCircuit, type CircuitBuilder, type CircuitDef, type Sig, type TargetShape } from '../../src/dsl/index.ts';
import { ChipcError } from '../../src/util/errors.ts';
import { mulBytes } from './mul.ts';
import { divStep, negWord, signedResult } from './div.ts';
import { BN_BANKS, BN_OPCODE, macUnit } from '../bignum/mac-unit.ts';
import { add32, byteFromNibbles, wordFromNibbles, wordNibbles, constWord, eq32, shAdd, shiftAmount, sll32, slt, sltu, sra32, srl32, sub32, type Word } from './alu.ts';

// ── token alphabet (docs/token-protocol.md v1) ─────────────────────────────────────────────────
export const TOK = {
  E: 0, D: 65_536, J: 131_072, H: 163_840, K: 229_376, N: 245_760, OUT: 245_764, HALT: 246_788, BOS: 247_044, Q: 247_045,
  A: 247_173, TRAP: 248_197,
} as const;
/** Code words a store can reach through A(w) (the first 4 KiB of code). */
export const CODE_STORE_WORDS = 1024;
/** TRAP(cause) ids (protocol v5): 0 illegal instruction, 1 ebreak, 2 fetch fault, 3 load fault, 4 store fault; 5…7 reserved. */
export const TRAP_IDS = 8;
export const VOCAB = TOK.TRAP + TRAP_IDS;
export const CODE_BASE = 0x8000_0000;
/**
 * Loader addresses of the chip's run-time configuration (docs/token-protocol.md "Loading by
 * prompt"): E(p) with p = 0x8000 + 32 + k, then D(lo), H(hi), writes configuration word k:
 * 0 the program's code end in words (min(code end, CODE_STORE_WORDS): which stores are code
 * stores), 1 its `tohost` address with bit 0 set (0: no tohost).
 */
export const CONFIG_CODE_END = 0x8000 + 32;
export const CONFIG_TOHOST = 0x8000 + 33;

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
  return (t >= 0 && t < VOCAB && Number.isInteger(t) ? table[t] : undefined) ?? classifyToken(t);
}

function classifyToken(t: number): TokenKind {
  if (t < TOK.D) return { kind: Kind.E, j: t >> 14, v: t & 0x3fff };
  if (t < TOK.J) return { kind: Kind.D, j: 0, v: t - TOK.D };
  if (t < TOK.H) return { kind: Kind.J, j: (t - TOK.J) & 3, v: t - TOK.J };
  if (t < TOK.K) return { kind: Kind.H, j: 0, v: t - TOK.H };
  if (t < TOK.N) return { kind: Kind.K, j: 0, v: t - TOK.K };
  if (t < TOK.OUT) return { kind: Kind.N, j: t - TOK.N, v: 0 };
  if (t < TOK.HALT) return { kind: Kind.OUT, j: (t - TOK.OUT) >> 8, v: (t - TOK.OUT) & 255 };
  if (t < TOK.BOS) return { kind: Kind.HALT, j: 0, v: t - TOK.HALT };
  if (t === TOK.BOS) return { kind: Kind.BOS, j: 0, v: 0 };
  if (t < TOK.A) return { kind: Kind.Q, j: 0, v: t - TOK.Q };
  if (t < TOK.TRAP) return { kind: Kind.A, j: 0, v: t - TOK.A };
  return { kind: Kind.TRAP, j: 0, v: t - TOK.TRAP };
}

const sext = (v: number, bits: number) => (v << (32 - bits)) >> (32 - bits);
const bit = (v: number, k: number) => (v >>> k) & 1;

/** Value bits a token commits by itself: narrow E/K (sign-extended 14 bits). */
function narrowCommit(t: number): number {
  const { kind, v } = tokenKind(t);
  return kind === Kind.E || kind === Kind.K ? sext(v, 14) : 0;
}
/** Upper value bits when completing a D: E/K carry bits 16…29 (sign-extended), H bits 16…31. */
function wideCommit(t: number): number {
  const { kind, v } = tokenKind(t);
  if (kind === Kind.E || kind === Kind.K) return sext(v, 14) << 16;
  if (kind === Kind.H) return v << 16;
  return 0;
}

// ── word-crossing accesses (protocol v2): which byte goes where ─────────────────────────────────
/** Width in bytes of a load/store funct3 (0 for an invalid one). */
const widthOf = (f3: number): number => ((f3 & 3) === 3 ? 0 : 1 << (f3 & 3));
/** Does an access of funct3 `f3` at offset `o` in its word cross into the next word? */
export const crosses = (f3: number, o: number): boolean => widthOf(f3) > 0 && o + widthOf(f3) > 4;
/** Bits per digit of the data RAM's write and read rows. */
export const WRITE_DIGIT_BITS = 5;
export const READ_DIGIT_BITS = 5;
/** Digit width of the fetch's read row (the pc's word index inside its code bank). */
export const FETCH_DIGIT_BITS = 5;

/**
 * The data RAM's row bits split into digits of `width` bits from bit 0 up; the last (top) may be
 * narrower (a remainder at the bottom instead measured worse: row bit 0 flips more often).
 */
export function rowDigits(bits: number, width = 3): { lo: number; width: number }[] {
  const out: { lo: number; width: number }[] = [];
  for (let lo = 0; lo < bits; lo += width) out.push({ lo, width: Math.min(width, bits - lo) });
  return out;
}

/**
 * Where byte i of a load's value comes from: 'old<L>' = lane L of the word read at this position,
 * 'latch<j>' = byte j of the first position's D payload (crossing loads), null = not a value byte.
 * A crossing load reads first the word holding at most two of its bytes (the word of the address
 * unless it holds three, i.e. LW at offset 1), and the other word at its later positions.
 */
export function loadByteSource(f3: number, o: number, i: number): string | null {
  const n = widthOf(f3);
  if (i >= n) return null;
  if (!crosses(f3, o)) return `old${o + i}`;
  const firstIsNext = 4 - o > 2;
  const a = o + i;
  const inNext = a >= 4;
  if (inNext === firstIsNext) return `latch${firstIsNext ? a - 4 : i}`;
  return `old${inNext ? a - 4 : a}`;
}
/** The lane of the word read first that goes into byte j of a crossing load's D payload, or −1. */
export function loadPrefixLane(f3: number, o: number, j: number): number {
  if (!crosses(f3, o)) return -1;
  const k1 = 4 - o;
  return k1 <= 2 ? (j < k1 ? o + j : -1) : (j < widthOf(f3) - k1 ? j : -1);
}
/** The byte of rs2 a store puts into lane L of the word it merges (the next word when `second`), or −1 to keep it. */
export function storeByteSource(f3: number, o: number, second: number, lane: number): number {
  const n = widthOf(f3);
  const i = crosses(f3, o) && second ? lane + 4 - o : lane - o;
  return i >= 0 && i < n ? i : -1;
}

/**
 * The chip's shape. Nothing here is program-specific: the program's code end and `tohost` arrive
 * at run time as configuration words (CONFIG_CODE_END, CONFIG_TOHOST), so one compiled chip runs
 * any program that fits its RAMs.
 */
export interface CpuOptions {
  /** Code RAM words (rows, a power of two ≥ 64), from CODE_BASE: what fetch can read; a fetch beyond it traps. */
  codeWords: number;
  /** Data RAM words (rows, a multiple of 64), from CODE_BASE: what loads and stores reach (default 8,192 = 32 KiB). */
  memWords?: number;
  /**
   * Rows of one RAM bank (a power of two, default MEM_BANK_WORDS): what one GDN layer of the
   * target holds (memBankWordsFor: 8,192 at chip-test, 2,048 at qwen3.5-4b). The data RAM and a
   * code RAM larger than one bank are split into banks of this size.
   */
  memBankWords?: number;
}

/** The console device: a store of any width to this address outputs the low byte of rs2. */
export const CONSOLE_ADDR = 0x1000_0000;

function bitsWord(c: CircuitBuilder, bits: Sig[]): Word {
  // Each byte is built from two nibbles that are linear forms of its bits, so a consumer that wants
  // the nibbles (multiplier, divider, adders) gets them free instead of through a split layer.
  const nib = (from: number) => c.linear(bits.slice(from, from + 4).map((s, k) => [s, 2 ** k] as [Sig, number]));
  return [0, 1, 2, 3].map((b) => byteFromNibbles(c, nib(8 * b), nib(8 * b + 4)));
}

/** A word from instruction bit positions (null = 0, 'S' = the sign bit 31). */
function wordFromSpec(c: CircuitBuilder, ins: Sig[], spec: (number | null)[]): Word {
  return [0, 1, 2, 3].map((b) => {
    const terms: [Sig, number][] = [];
    for (let k = 0; k < 8; k++) {
      const src = spec[8 * b + k];
      if (src !== null && src !== undefined) terms.push([ins[src]!, 2 ** k]);
    }
    return c.linear(terms);
  });
}

function immSpec(kind: 'I' | 'S' | 'B' | 'U' | 'J'): (number | null)[] {
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
function muxWord(c: CircuitBuilder, cond: Sig, a: Word, b: Word): Word {
  return a.map((x, i) => c.select(cond, x, b[i]!));
}

/**
 * bits + small (a 0…3 addend given as two bits, or a constant) over bits.length bits, modulo
 * 2^bits.length: the low two bits and a carry from one table, then each higher bit flips when
 * the carry runs through all the bits below it (one table per bit) — 2 FFN layers.
 */
function addSmall(c: CircuitBuilder, bits: Sig[], addend: (Sig | number)[], tag: string): Sig[] {
  const low = c.linear([[bits[0]!, 1], [bits[1]!, 2], [addend[0]!, 1], [addend[1]!, 2]]).named(`${tag}Low`);
  const carry = c.table(`${tag}Carry`, [low], (v) => (v >= 4 ? 1 : 0), [0, 1]);
  const out: Sig[] = [
    c.table(`${tag}0`, [low], (v) => v & 1, [0, 1]),
    c.table(`${tag}1`, [low], (v) => (v >> 1) & 1, [0, 1]),
  ];
  for (let k = 2; k < bits.length; k++) {
    const run = c.linear([[carry, 1], ...bits.slice(2, k).map((x) => [x, 1] as [Sig, number])]);
    out.push(c.table(`${tag}${k}`, [bits[k]!, run], (bk, r) => bk ^ (r === k - 1 ? 1 : 0), [0, 1]));
  }
  return out;
}

/**
 * Default rows of one data-RAM bank: 8,192 words (32 KiB), what one GDN layer holds at chip-test
 * (64 key heads × 128 rows of one 32-bit word); qwen3.5-4b's layer holds 2,048 (16 × 128), so a
 * chip for it uses 2,048-word banks (CpuOptions.memBankWords). A data RAM larger than one bank is
 * split into banks "mem", "mem1", … placed in different layers.
 */
export const MEM_BANK_WORDS = 8192;

/**
 * Rows of one data-RAM bank for a target: what one GDN layer holds of one 32-bit word per row
 * (key heads × key head dim, rounded down to a power of two, at most MEM_BANK_WORDS).
 */
export function memBankWordsFor(target: TargetShape): number {
  const rows = Math.min(MEM_BANK_WORDS, target.linearNumKeyHeads * target.linearKeyHeadDim);
  return 2 ** Math.floor(Math.log2(Math.max(1, rows)));
}

/** The data RAM's banks for memWords words: [RAM name, first word, rows]. */
export function memBanks(memWords: number, bankWords: number = MEM_BANK_WORDS): [name: string, first: number, rows: number][] {
  const out: [string, number, number][] = [];
  for (let b = 0; b * bankWords < memWords; b++) out.push([b === 0 ? 'mem' : `mem${b}`, b * bankWords, Math.min(bankWords, memWords - b * bankWords)]);
  return out;
}

/** The code RAM's banks for codeWords words (one RAM "code" when it fits one bank): [RAM name, first word, rows]. */
export function codeBanks(codeWords: number, bankWords: number = MEM_BANK_WORDS): [name: string, first: number, rows: number][] {
  if (codeWords <= bankWords) return [['code', 0, codeWords]];
  return Array.from({ length: Math.ceil(codeWords / bankWords) }, (_, b) => [b === 0 ? 'code' : `code${b}`, b * bankWords, bankWords]);
}

export function cpuCircuit(opts: CpuOptions) {
  if (!Number.isInteger(opts.codeWords) || opts.codeWords < 64 || !Number.isInteger(Math.log2(opts.codeWords)) || opts.codeWords > 16384) {
    throw new ChipcError('chip.code', `a code RAM of ${opts.codeWords} words is not a power of two in [64, 16,384] (256 bytes … 64 KiB)`);
  }
  const addrBits = Math.log2(opts.codeWords);
  const memWords = opts.memWords ?? 8192;
  if (!Number.isInteger(memWords) || memWords < 64 || memWords % 64 !== 0) {
    throw new ChipcError('chip.mem', `a data RAM of ${memWords} words is not a positive multiple of 64 words (256 bytes)`);
  }
  const memBits = Math.max(1, Math.ceil(Math.log2(memWords)));
  if (memBits > 15) throw new ChipcError('chip.mem', `data RAM of ${memWords} words is larger than the 128 KiB (32,768 words) the loader addresses`);
  const bankWords = opts.memBankWords ?? MEM_BANK_WORDS;
  if (!Number.isInteger(Math.log2(bankWords)) || bankWords < 1) throw new ChipcError('chip.mem', `a data-RAM bank of ${bankWords} words is not a power of two`);
  const banks = Math.ceil(memWords / bankWords);
  const bankBits = banks === 1 ? memBits : Math.log2(bankWords);
  // The code RAM in banks of the same size when it is larger than one (fetch reads every bank; the
  // one holding the pc is enabled, the others read 0).
  const codeBanks = Math.max(1, Math.ceil(opts.codeWords / bankWords));
  const codeBankBits = codeBanks === 1 ? addrBits : Math.log2(bankWords);
  if (codeBanks > 1 && bankWords < CODE_STORE_WORDS) {
    throw new ChipcError('chip.code', `RAM banks of ${bankWords} words are smaller than the ${CODE_STORE_WORDS} code words a code store reaches; use a code RAM of at most one bank`);
  }
  /** Data RAM bytes (a multiple of 256) and code RAM bytes: the bounds of the fault checks. */
  const memBytes = 4 * memWords;
  const codeBytes = 4 * opts.codeWords;
  return defineCircuit({ name: 'rv32-v1', vocab: VOCAB, bos: TOK.BOS }, (c) => {
    // ── token fields ───────────────────────────────────────────────────────────────────────
    const is = (k: Kind, name: string) => c.tokenField(name, (t) => (tokenKind(t).kind === k ? 1 : 0), [0, 1]);
    const isE = is(Kind.E, 'isE');
    const isD = is(Kind.D, 'isD');
    const isJ = is(Kind.J, 'isJ');
    const isH = is(Kind.H, 'isH');
    // OUT(0, b) is the window-end console store: it starts nothing (docs/token-protocol.md).
    const startsInstruction = (t: number) => {
      const { kind: k, j: jj } = tokenKind(t);
      return k === Kind.E || k === Kind.N || k === Kind.J || (k === Kind.OUT && jj >= 1);
    };
    const isStart = c.tokenField('isStart', (t) => (startsInstruction(t) ? 1 : 0), [0, 1]);
    // What the fed token asks of the pending instruction: 0 start one, 1 fed D, 2 fed H, 3 emit the
    // window-end J (K, OUT(0, ·)), 4 fed Q (a division step), 5 fed A (a code store's word index).
    const fedC = c.tokenField('fedC', (t) => {
      const k = tokenKind(t).kind;
      return k === Kind.D ? 1 : k === Kind.H ? 2 : k === Kind.K || (k === Kind.OUT && !startsInstruction(t)) ? 3 : k === Kind.Q ? 4 : k === Kind.A ? 5 : 0;
    }, [0, 5]);
    const isA = is(Kind.A, 'isA');
    const aW = Array.from({ length: 10 }, (_, k) => c.tokenField(`aW${k}`, (t) => (tokenKind(t).kind === Kind.A ? bit(tokenKind(t).v, k) : 0), [0, 1]));
    const isQ = is(Kind.Q, 'isQ');
    const qStep = c.tokenField('qStep', (t) => (tokenKind(t).kind === Kind.Q ? tokenKind(t).v >> 4 : 0), [0, 7]);
    const qDigit = c.tokenField('qDigit', (t) => (tokenKind(t).kind === Kind.Q ? tokenKind(t).v & 15 : 0), [0, 15]);
    const tj = [0, 1].map((k) => c.tokenField(`tj${k}`, (t) => (tokenKind(t).kind === Kind.J ? 0 : bit(tokenKind(t).j, k)), [0, 1]));
    const jw = Array.from({ length: 15 }, (_, k) => c.tokenField(`jw${k}`, (t) => (tokenKind(t).kind === Kind.J ? bit(tokenKind(t).v, k) : 0), [0, 1]));
    // J's word index shifted right by 2, plus 1 (mod 2^13): the high bits of base + j when j carries
    // out of the low two (so PC = base + j is one table layer, not an adder's two).
    const jwUp = Array.from({ length: 13 }, (_, k) => c.tokenField(`jwUp${k}`, (t) => (tokenKind(t).kind === Kind.J ? bit(((tokenKind(t).v >> 2) + 1) & 0x1fff, k) : 0), [0, 1]));
    // The narrow commit value is sign-extended from 14 bits: bits 13…31 are one field (the
    // embedding carries each token's bits once, not 19 copies of its sign).
    const cvNLow = Array.from({ length: 14 }, (_, k) => c.tokenField(`cvN${k}`, (t) => bit(narrowCommit(t), k), [0, 1]));
    const cvN = [...cvNLow, ...Array.from({ length: 18 }, () => cvNLow[13]!)];
    const cvW = Array.from({ length: 16 }, (_, k) => c.tokenField(`cvW${k}`, (t) => bit(wideCommit(t), 16 + k), [0, 1]));
    const dLo = Array.from({ length: 16 }, (_, k) => c.tokenField(`dLo${k}`, (t) => (tokenKind(t).kind === Kind.D ? bit(tokenKind(t).v, k) : 0), [0, 1]));
    const dLoPrev = c.previousAll(dLo); // the D latch: the previous position's D payload

    // ── PC: the window base (J's word index) latched by J; PC = base + j at instruction starts,
    //    latched so that positions fed D, H or K re-execute the same instruction ───────────────
    // The same latch remembers that a J came: before the first J the chip is in loader mode, and
    // (v3) a fed HALT clears it, so a request's write tokens and J(entry) can follow a HALT
    // (re-entry: services, docs/token-protocol.md).
    // The enable is a token field (free, in the embedding) so the latch is written in the first GDN layer.
    const isJorHalt = c.tokenField('isJorHALT', (t) => { const k = tokenKind(t).kind; return k === Kind.J || k === Kind.HALT || k === Kind.TRAP ? 1 : 0; }, [0, 1]);
    const baseRam = c.ram('base', { rows: 1, fields: [...jw.map(() => 2), ...jwUp.map(() => 2), 2] });
    baseRam.write(c.constant(0), [...jw, ...jwUp, isJ], isJorHalt);
    const baseRead = baseRam.read(c.constant(0));
    const base = baseRead.slice(0, 15);
    const baseUp = baseRead.slice(15, 28);
    const loading = c.linear([[baseRead[28]!, -1]], 1).named('loading');

    // ── loader (docs/token-protocol.md "Loading by prompt"): before the first J, E(p) latches a
    //    load address p (bit 15: register p mod 32, else word p of memory) and the H of D(lo),
    //    H(hi) writes {hi, lo} there ─────────────────────────────────────────────────────────
    // E(p)'s id is p itself: bits 0…13 are the narrow payload bits (cvN) and bits 14, 15 the
    // window index j (tj), so the loader address needs no token fields of its own.
    // The H of E(p), D(lo), H(hi) takes p from the token two positions back (a delay of delays:
    // the conv's tap at t − 2), not from a latch RAM rewritten at every E — a chunked prefill reads
    // such a row exactly only while it was rewritten at most once in the chunk (docs/numerics.md
    // "Chunked prefill").
    const la = [...cvNLow, ...tj];
    const loadAddr = c.previousAll(c.previousAll(la));
    const loadWord = c.table('loadWord', [loading, isH, loadAddr[15]!], (l, h, r) => (l && h && !r ? 1 : 0), [0, 1]);
    // p = 0x8000 + r (r < 32) is register r; p = 0x8000 + 32 + k is configuration word k.
    const loadReg = c.table('loadReg', [loading, isH, loadAddr[15]!, loadAddr[5]!], (l, h, r, cf) => (l && h && r && !cf ? 1 : 0), [0, 1]);
    const loadConfig = (k: number) => c.table(`loadConfig${k}`, [loading, isH, loadAddr[15]!, loadAddr[5]!, loadAddr[0]!],
      (l, h, r, cf, b0) => (l && h && r && cf && b0 === k ? 1 : 0), [0, 1]);
    // PC = base + j (mod 2^15): the low two bits from a table, each higher bit base's or baseUp's
    // (= (base >> 2) + 1) by the carry out of the low two bits — one table per bit.
    const start = Array.from({ length: 15 }, (_, k) => k < 2
      ? c.table(`pc${k}`, [base[0]!, base[1]!, tj[0]!, tj[1]!], (b0, b1, t0, t1) => ((b0 + 2 * b1 + t0 + 2 * t1) >> k) & 1, [0, 1])
      : c.table(`pc${k}`, [base[0]!, base[1]!, tj[0]!, tj[1]!, base[k]!, baseUp[k - 2]!],
        (b0, b1, t0, t1, bk, uk) => (b0 + 2 * b1 + t0 + 2 * t1 >= 4 ? uk : bk), [0, 1]));
    // The latch also keeps the instruction's window index j for the positions that re-execute it.
    const pcl = c.ram('pc', { rows: 1, fields: Array.from({ length: 17 }, () => 2) });
    // Written only outside loader mode: a loader prompt then writes it once (at its J), so reads
    // of it inside a chunked prefill sum at most one change (docs/numerics.md "Chunked prefill").
    const pcWrite = c.table('pcWrite', [isStart, loading], (st, ld) => (st && !ld ? 1 : 0), [0, 1]);
    pcl.write(c.constant(0), [...start, ...tj], pcWrite);
    const latched = pcl.read(c.constant(0));
    const w = latched.slice(0, 15); // word index bits, LSB first
    const j = c.linear([[latched[15]!, 1], [latched[16]!, 2]]).named('j');

    // ── fetch ──────────────────────────────────────────────────────────────────────────────
    // The 32-bit word a D, H pair brings back: {H payload, D latch} at a position fed H.
    const tokenWord = [...dLoPrev, ...cvW];
    // ── run-time configuration (written by the loader, read at every position): the program's
    //    code end (which stores are code stores) and its tohost address (bit 0 set when present) ──
    const codeEndRam = c.ram('codeEnd', { rows: 1, fields: Array.from({ length: 11 }, () => 2) });
    codeEndRam.write(c.constant(0), tokenWord.slice(0, 11), loadConfig(0));
    const codeEndBits = codeEndRam.read(c.constant(0));
    const tohostRam = c.ram('tohost', { rows: 1, fields: Array.from({ length: 32 }, () => 2) });
    tohostRam.write(c.constant(0), tokenWord, loadConfig(1));
    const tohostBits = tohostRam.read(c.constant(0));
    // Written by the loader (a word below the code RAM's end) or by a code store; both enables and
    // the row from the raw signals (tables over the latches and token fields: fetch waits for them).
    const loadHigh = addrBits >= 15 ? c.constant(0) : c.linear(loadAddr.slice(addrBits, 15).map((x) => [x, 1] as [Sig, number]));
    // Code stores (v2): A(w) latches w; the H two positions later writes {H, D latch} to code word w
    // (the same position writes it to the data RAM), so fetch sees the new instruction.
    const smcRam = c.ram('codeStoreAddr', { rows: 1, fields: aW.map(() => 2) });
    smcRam.write(c.constant(0), aW, isA);
    const smcAddr = smcRam.read(c.constant(0));
    const [prevIsA] = c.previousAll([isA]);
    const [ppA] = c.previousAll([prevIsA!]);
    const codeEn = c.table('codeWrite', [loading, isH, loadAddr[15]!, loadHigh, ppA!],
      (ld, h, r, hi, pa) => ((ld && h && !r && hi === 0) || (h && pa) ? 1 : 0), [0, 1]);
    // The write row is 0 outside loader mode and code stores, and the written word is 0 outside
    // the H positions that can write code, so that the code RAM's k and v projections stay put
    // while a program runs (they followed every token's payload: work for incremental decode).
    const codeRow = Array.from({ length: addrBits }, (_, k) =>
      c.table(`codeWRow${k}`, [isH, ppA!, loading, k < 10 ? smcAddr[k]! : c.constant(0), loadAddr[k]!], (h, pa, ld, a, l) => (h && pa ? a : ld ? l : 0), [0, 1]));
    const codeWord = tokenWord.map((x, k) => c.table(`codeWBit${k}`, [isH, ppA!, loading, x], (h, pa, ld, v) => (h && (pa || ld) ? v : 0), [0, 1]));
    const fields32Code = Array.from({ length: 32 }, () => 2);
    // The fetch row as digits of FETCH_DIGIT_BITS bits of the pc's word index, each a table over
    // its bits (gated by the bank: 0 when the pc is in another bank), so that the code RAM reads
    // each digit through its one-hot (passes/lower-ram.ts addrDigitsOf): the pc moving by one word
    // changes the low digit's one-hot in two dims, each read by 1/32 of the rows, where a changed
    // bit moved the query of every row of the code RAM. The tables sit in the FFN sublayer between
    // the pc latch and fetch, so fetch stays where it was.
    const fetchRow = (bank: { index: number; hi: Sig } | null, bits: number): Sig => c.linear(rowDigits(bits, FETCH_DIGIT_BITS).map((d, g) => {
      const mask = 2 ** d.width - 1;
      const digit = c.linear(w.slice(d.lo, d.lo + d.width).map((x, k) => [x, 2 ** k] as [Sig, number]), 0, [0, mask]);
      const t = bank === null
        ? (d.width === 1 ? w[d.lo]! : c.table(`pcDigit${g}`, [digit], (v) => v, [0, mask]))
        : c.table(`pcDigit${g}B${bank.index}`, [bank.hi, digit], (h, v) => (h === bank.index ? v : 0), [0, mask]);
      return [t, 2 ** d.lo] as [Sig, number];
    }));
    let ins: Sig[];
    if (codeBanks === 1) {
      const code = c.ram('code', { rows: opts.codeWords, fields: fields32Code });
      code.write(c.linear(codeRow.map((x, k) => [x, 2 ** k] as [Sig, number])), codeWord, codeEn);
      ins = code.read(fetchRow(null, addrBits));
    } else {
      // Bank b holds code words [b·bankWords, (b + 1)·bankWords). A code store's word (< 1,024)
      // is in bank 0; the loader's address picks the bank by its high bits. Fetch reads every
      // bank at the pc's low bits, enabled only in the pc's bank: the others read 0.
      const codeHi = c.linear(loadAddr.slice(codeBankBits, addrBits).map((x, k) => [x, 2 ** k] as [Sig, number]), 0, [0, codeBanks - 1]);
      const pcHi = c.linear(w.slice(codeBankBits, addrBits).map((x, k) => [x, 2 ** k] as [Sig, number]), 0, [0, codeBanks - 1]);
      const lowRow = c.linear(codeRow.slice(0, codeBankBits).map((x, k) => [x, 2 ** k] as [Sig, number]));
      const outs: Sig[][] = [];
      for (let b = 0; b < codeBanks; b++) {
        const bank = c.ram(b === 0 ? 'code' : `code${b}`, { rows: bankWords, fields: fields32Code });
        const en = c.table(`codeWrite${b}`, [loading, isH, loadAddr[15]!, loadHigh, ppA!, codeHi],
          (ld, h, r, hi, pa, ch) => ((ld && h && !r && hi === 0 && ch === b) || (h && pa && b === 0) ? 1 : 0), [0, 1]);
        bank.write(lowRow, codeWord, en);
        outs.push(bank.read(fetchRow({ index: b, hi: pcHi }, codeBankBits), pcHi.eq(b).named(`codeRead${b}`)));
      }
      ins = Array.from({ length: 32 }, (_, k) => c.linear(outs.map((o) => [o[k]!, 1] as [Sig, number]), 0, [0, 1]));
    }
    // A fetch beyond the code RAM (the pc's word index past codeWords) traps (TRAP(fetch)).
    const fetchOut = addrBits >= 15 ? c.constant(0) : c.linear(w.slice(addrBits, 15).map((x) => [x, 1] as [Sig, number])).gt(0).named('fetchOut');

    // ── decode ─────────────────────────────────────────────────────────────────────────────
    const field = (lo: number, n: number, name: string) =>
      c.linear(ins.slice(lo, lo + n).map((b, k) => [b, 2 ** k] as [Sig, number])).named(name);
    const opcode = field(0, 7, 'opcode');
    const funct3 = field(12, 3, 'funct3');
    const rd = field(7, 5, 'rd');
    // Classes: 0 OP-IMM, 1 OP, 2 LUI, 3 AUIPC, 4 JAL, 5 JALR, 6 BRANCH, 7 SYSTEM/FENCE/other, 8 LOAD, 9 STORE.
    const CLASS: Record<number, number> = { 0x13: 0, 0x33: 1, 0x37: 2, 0x17: 3, 0x6f: 4, 0x67: 5, 0x63: 6, 0x03: 8, 0x23: 9 };
    const cls = c.table('class', [opcode], (op) => CLASS[op] ?? 7, [0, 9]);
    const isClass = (k: number, name: string) => cls.eq(k).named(name);
    const isOp = isClass(1, 'isOp');
    const isJal = isClass(4, 'isJal');
    const isJalr = isClass(5, 'isJalr');
    const isBranch = isClass(6, 'isBranch');
    // Loads and stores only outside loader mode: while the loader writes, the word at the pc is not
    // an instruction, and the effective address must stay 0 (the data RAM's write row reads the
    // loader's address through the same digits, below).
    const isStore = c.table('isStore', [opcode, loading], (op, ld) => (!ld && op === 0x23 ? 1 : 0), [0, 1]);
    const isLoad = c.table('isLoad', [opcode, loading], (op, ld) => (!ld && op === 0x03 ? 1 : 0), [0, 1]);
    // The bignum unit's multiply-accumulate (custom-0, docs/bignum-unit.md): MUL with two more addends.
    const isBn = c.table('isBnMac', [opcode], (op) => (op === BN_OPCODE ? 1 : 0), [0, 1]);
    // The ALU's view of the class (loads, stores and the rest as 7) keeps aluOp's table within one index.
    // 6 is the M extension (OP with funct7 = 1; bit 25 set), which the full class table has no room for.
    // bn.mac (custom-0, funct3 0) is MUL's class too: its low word is the MUL candidate.
    const clsAlu = c.table('classAlu', [opcode, ins[25]!], (op, b25) =>
      ((op === 0x33 && b25 === 1) || op === BN_OPCODE ? 6 : Math.min(7, CLASS[op] === 6 ? 7 : CLASS[op] ?? 7)), [0, 7]);
    // Memory access shape from funct3 (loads and stores alike): 0 byte, 1 half, 2 word; 4, 5 unsigned byte/half.
    // ── legality (protocol v5 traps): exactly the emulator's RV32IM + Zba + bn.mac encodings.
    //    Classes by opcode: 0 always legal (LUI, AUIPC, JAL), 1 JALR, 2 BRANCH, 3 LOAD, 4 STORE,
    //    5 OP-IMM, 6 OP, 7 custom-0 (bn.mac), 8 MISC-MEM, 9 SYSTEM, 10 illegal (also every
    //    compressed encoding: its low two bits are not 11). funct7 as 0 0x00, 1 0x20, 2 0x01,
    //    3 0x10, 4 other. SYSTEM is legal only as ecall (0x00000073) or ebreak (0x00100073).
    const LEGAL_CLASS: Record<number, number> = { 0x37: 0, 0x17: 0, 0x6f: 0, 0x67: 1, 0x63: 2, 0x03: 3, 0x23: 4, 0x13: 5, 0x33: 6, [BN_OPCODE]: 7, 0x0f: 8, 0x73: 9 };
    const legalClass = c.table('legalClass', [opcode], (op) => LEGAL_CLASS[op] ?? 10, [0, 10]);
    const f7 = field(25, 7, 'funct7');
    const f7Class = c.table('funct7Class', [f7], (v) => (v === 0 ? 0 : v === 0x20 ? 1 : v === 0x01 ? 2 : v === 0x10 ? 3 : 4), [0, 4]);
    // By class and funct3: 0 illegal, 1 legal, 2 SYSTEM (decided by the other bits below), or the
    // funct7 classes that make it legal: 3 {0x00}, 4 {0x00, 0x20}, 5 {0x00, 0x20, 0x01},
    // 6 {0x00, 0x01, 0x10}, 7 {0x00, 0x01}. Two small tables (one over 440 cases has no exact ramp form).
    const F7_SETS = [[], [], [], [0], [0, 1], [0, 1, 2], [0, 2, 3], [0, 2]];
    const legalByF3 = c.table('legalByFunct3', [legalClass, funct3], (k, f3) => {
      switch (k) {
        case 0: return 1;
        case 1: return f3 === 0 ? 1 : 0;
        case 2: return f3 === 2 || f3 === 3 ? 0 : 1;
        case 3: return f3 === 3 || f3 >= 6 ? 0 : 1;
        case 4: return f3 <= 2 ? 1 : 0;
        case 5: return f3 === 1 ? 3 : f3 === 5 ? 4 : 1;
        case 6: return f3 === 0 || f3 === 5 ? 5 : f3 === 2 || f3 === 4 || f3 === 6 ? 6 : 7;
        case 7: return f3 === 0 ? 7 : 0;
        case 8: return f3 <= 1 ? 1 : 0;
        case 9: return 2;
        default: return 0;
      }
    }, [0, 7]);
    const legalBase = c.table('legal', [legalByF3, f7Class], (l, f7c) => (l <= 2 ? l : F7_SETS[l]!.includes(f7c) ? 1 : 0), [0, 2]);
    // SYSTEM: every bit but 20 (and the opcode) must be 0.
    const sysRest = c.linear([...ins.slice(7, 20), ...ins.slice(21, 32)].map((x) => [x, 1] as [Sig, number])).eq(0).named('systemRestZero');
    // 0 none, 1 illegal, 2 ebreak, 3 fetch fault — the traps known right after fetch.
    const early = (fo: number, lg: number, rz: number, b20: number) => (fo ? 3 : lg === 0 ? 1 : lg === 2 ? (!rz ? 1 : b20 ? 2 : 0) : 0);
    const earlyTrap = c.table('earlyTrap', [fetchOut, legalBase, sysRest, ins[20]!], early, [0, 3]);
    const earlyAny = c.table('earlyTrapAny', [fetchOut, legalBase, sysRest, ins[20]!], (...v) => (early(v[0]!, v[1]!, v[2]!, v[3]!) ? 1 : 0), [0, 1]);
    // Its TRAP cause: illegal 0, ebreak 1, fetch 2 (0 also when none: trapAny says whether).
    const earlyCause = c.table('earlyTrapCause', [fetchOut, legalBase, sysRest, ins[20]!], (...v) => [0, 0, 1, 2][early(v[0]!, v[1]!, v[2]!, v[3]!)]!, [0, 2]);
    // ecall exactly (the only SYSTEM word besides ebreak that is legal), never at a trapping fetch.
    const isSystem = c.table('isEcall', [fetchOut, legalBase, sysRest, ins[20]!], (fo, lg, rz, b20) => (!fo && lg === 2 && rz && !b20 ? 1 : 0), [0, 1]);
    // Result: 0 add 1 sub 2 sll 3 slt 4 sltu 5 xor 6 srl 7 sra 8 or 9 and 10 sh1add 11 sh2add 12 sh3add 13 lui 14 auipc 15 link
    // 16 none (the results 16 loaded value and 17 the word a sub-word store leaves are chosen by isLoad / isStore)
    // 18 mul 19 mulh 20 mulhsu 21 mulhu 22 div 23 divu 24 rem 25 remu
    const aluOp = c.table('aluOp', [clsAlu, funct3, ins[30]!, ins[29]!], (k, f3, b30, b29) => {
      if (k === 7) return 16;
      if (k === 6) return 18 + f3;
      if (k === 2) return 13;
      if (k === 3) return 14;
      if (k === 4 || k === 5) return 15;
      if (k === 1 && b29 === 1 && b30 === 0) return f3 === 2 ? 10 : f3 === 4 ? 11 : f3 === 6 ? 12 : 0;
      if (k === 0 || k === 1) {
        if (f3 === 0) return k === 1 && b30 ? 1 : 0;
        if (f3 === 5) return b30 ? 7 : 6;
        return [0, 2, 3, 4, 5, 6, 8, 9][f3]!;
      }
      return 0;
    }, [0, 25]);
    // Straight from the opcode (not through the class): these start the register commit's path.
    // A non-exit ecall leaves −38 (ENOSYS) in a0, as the emulator: SYSTEM writes x10 (an exit ecall
    // halts first, and every other SYSTEM word traps, so only that ecall's write is ever committed).
    const writesRd = c.table('writesRd', [opcode], (op) => { const k = CLASS[op] ?? 7; return k <= 5 || k === 8 || op === BN_OPCODE || op === 0x73 ? 1 : 0; }, [0, 1]);
    const isSys73 = c.table('isSystemOpcode', [opcode], (op) => (op === 0x73 ? 1 : 0), [0, 1]);
    const isJump = c.table('isJump', [opcode], (op) => (op === 0x6f || op === 0x67 ? 1 : 0), [0, 1]);

    // ── register file: commit (previous instruction's rd) then read rs1 / rs2 ─────────────────
    // One delay for everything the commit needs from the previous position's decode (all ready
    // right after fetch); the commit enable and each committed bit are then one table each.
    // The destination is not x0: rd ≠ 0, or SYSTEM (a0).
    const rdNZ = rd.ne(0).named('rdNonZero');
    const hasRd = c.table('hasRd', [writesRd, rdNZ, isSys73], (wr, nz, sys) => (wr && (nz || sys) ? 1 : 0), [0, 1]); // for the emit plan (the commit uses its parts)
    const [prevRd0, prevRd1, prevRd2, prevRd3, prevRd4, prevWasD, prevWritesRd, prevRdFieldNZ, prevIsJump, prevIsBn, prevBnBank, prevIsSys] =
      c.previousAll([...ins.slice(7, 12), isD, writesRd, rdNZ, isJump, isBn, ins[25]!, isSys73]);
    // ≥ 1 when the previous instruction's destination is not x0 (a sum of two delayed bits: no layer of its own)
    const prevRdNZ = c.linear([[prevRdFieldNZ!, 1], [prevIsSys!, 1]], 0, [0, 2]);
    // The link (PC + 4) from the word index + 1 over 16 bits (a carry out of bit 14 lands in bit 17).
    const seq16 = addSmall(c, [...w, c.constant(0)], [1, 0], 'seq');
    const linkBits = [c.constant(0), c.constant(0), ...seq16, ...Array.from({ length: 13 }, () => c.constant(0)), c.constant(1)];
    const link = bitsWord(c, linkBits);
    const pcWord = bitsWord(c, [c.constant(0), c.constant(0), ...w, ...Array.from({ length: 14 }, () => c.constant(0)), c.constant(1)].slice(0, 32));
    const prevLink = c.previousAll(linkBits.slice(2, 18));
    const prevDLo = dLoPrev;
    const commitValue = c.tokenField('commitsValue', (t) => { const k = tokenKind(t).kind; return k === Kind.E || k === Kind.K || k === Kind.H ? 1 : 0; }, [0, 1]);
    // Division steps (v2): the H of a step brings back the partial remainder and commits nothing. It
    // is the H two positions after a Q.
    const prevIsQ = c.previous(isQ).named('prevIsQ');
    const ppQ = c.previous(prevIsQ).named('prevPrevIsQ');
    const remTransfer = c.and(isH, ppQ).named('remTransfer');
    // bn.mac emits its new carry first (D, H) and its low word after (D, H, N): the carry's H — fed
    // two positions after the start — commits nothing and latches the carry as pending; the low
    // word's H (two after that H) commits rd and moves the pending carry into the instruction's
    // carry bank, so every position of the instruction recomputes the same t = rs1·rs2 + rd + carry.
    const [prevWasStart, prevWasH] = c.previousAll([isStart, isH]);
    const [ppStart, ppH] = c.previousAll([prevWasStart!, prevWasH!]);
    const bnCarryIn = c.table('bnCarryIn', [isH, ppStart!, prevIsBn!, loading], (h, ps, pb, ld) => (h && ps && pb && !ld ? 1 : 0), [0, 1]);
    // The carry bank (funct7 bit 0) of the instruction whose low word's H this is.
    const bnCarryMoves = Array.from({ length: BN_BANKS }, (_, b) => c.table(`bnCarryMove${b}`, [isH, ppH!, prevIsBn!, loading, prevBnBank!],
      (h, ph, pb, ld, bk) => (h && ph && pb && !ld && bk === b ? 1 : 0), [0, 1]));
    // What the fed token may commit: 0 nothing (also a division step's H, two after a Q), 1 a value
    // (E, K, H), 2 the link (J), 3 a value unless the pending instruction is bn.mac (an H two after
    // a start: bn.mac's carry). From token fields and their delays only (no layer of its own).
    const commitTok = c.table('commitTok', [commitValue, isJ, isH, ppQ, ppStart!], (v, jj, h, q, ps) =>
      (jj ? 2 : !v || (h && q) ? 0 : h && ps ? 3 : 1), [0, 3]);
    // Loader mode: 0 off, 1 on, 2 on and this H writes a register (loadReg implies loading).
    const loaderCase = c.linear([[loading, 1], [loadReg, 1]], 0, [0, 2]).named('loaderCase');
    // In loader mode only the loader's register words are written (their bits are {H, D latch}, as a D + H commit).
    const commitEn = c.table('commitEn', [commitTok, prevIsJump!, prevIsBn!, prevWritesRd!, prevRdNZ!, loaderCase], (ct, pj, pb, wr, nz, lc) => {
      if (lc !== 0) return lc === 2 ? 1 : 0;
      const commits = ct === 1 || (ct === 3 && !pb) || (ct === 2 && pj);
      return commits && wr && nz ? 1 : 0;
    }, [0, 1]);
    const commitBits = Array.from({ length: 32 }, (_, k) => {
      const linkBit = k >= 2 && k < 18 ? prevLink[k - 2]! : c.constant(k === 31 ? 1 : 0);
      const wide = k < 16 ? prevDLo[k]! : cvW[k - 16]!;
      return c.table(`commit${k}`, [isJ, prevIsJump!, linkBit, prevWasD!, wide, cvN[k]!],
        (jj, pj, l, wd, x, n) => (jj && pj ? l : wd ? x : n), [0, 1]);
    });
    const regs = c.ram('regs', { rows: 32, fields: Array.from({ length: 32 }, () => 2) });
    const prevRd = [prevRd0!, prevRd1!, prevRd2!, prevRd3!, prevRd4!];
    // (a SYSTEM instruction's destination is a0, x10)
    const commitRow = c.linear(prevRd.map((x, k) => [c.table(`commitRow${k}`, [loading, loadAddr[k]!, x, prevIsSys!], (ld, la, r, sys) => (ld ? la : sys ? (10 >> k) & 1 : r), [0, 1]), 2 ** k] as [Sig, number]));
    regs.write(commitRow, commitBits, commitEn);
    // ecall reads a7 (x17) and a0 (x10) instead of rs1 / rs2.
    // Each address bit is one table over (opcode, the instruction's bit): straight after fetch.
    // An instruction without an rs2 field (its bits 20… are immediate bits) reads x0 there: B is
    // then 0 rather than an unrelated register, so the tables over B's bits (the multiplier's
    // nibble products, the comparators) see no change across runs of such instructions, which
    // incremental decode skips (the value is unused: B feeds only OP, STORE, BRANCH and bn.mac).
    const usesRs2 = (op: number) => op === 0x33 || op === 0x23 || op === 0x63 || op === BN_OPCODE;
    // (`off`: x0 while it is 1 — the effective address's port reads x0 in loader mode)
    const regAddr = (from: number, sys: number, name: string, used: (op: number) => boolean, off?: Sig) => c.linear(Array.from({ length: 5 }, (_, k) =>
      [off === undefined
        ? c.table(`${name}b${k}`, [opcode, ins[from + k]!], (op, x) => (op === 0x73 ? (sys >> k) & 1 : used(op) ? x : 0), [0, 1])
        : c.table(`${name}b${k}`, [opcode, ins[from + k]!, off], (op, x, o) => (o ? 0 : op === 0x73 ? (sys >> k) & 1 : used(op) ? x : 0), [0, 1]),
      2 ** k] as [Sig, number])).named(name);
    const rs1 = regAddr(15, 17, 'rs1', () => true);
    const rs2 = regAddr(20, 10, 'rs2', usesRs2);
    const a = regs.read(rs1);
    const b = regs.read(rs2);
    // The multiplier's operands through two more read ports that read x0 unless the instruction
    // multiplies (MUL…MULHU, bn.mac): its 64 digit-pair tables and everything after them then
    // see constant operands across runs of other instructions (incremental decode skips them).
    // (ALU class 6 is the M extension and bn.mac; funct3 < 4 the multiplies among them.)
    const mulAddr = (from: number, name: string) => c.linear(Array.from({ length: 5 }, (_, k) =>
      [c.table(`${name}b${k}`, [clsAlu, ins[14]!, ins[from + k]!], (cls, f3hi, x) => (cls === 6 && f3hi === 0 ? x : 0), [0, 1]), 2 ** k] as [Sig, number])).named(name);
    const am = regs.read(mulAddr(15, 'rs1m'));
    const bm = regs.read(mulAddr(20, 'rs2m'));
    // The effective address's base through one more read port that reads x0 unless the instruction
    // loads or stores: with its immediate gated the same way (below), the address and every table
    // over it stay constant across runs of other instructions (incremental decode skips them).
    const usesEa = (op: number) => op === 0x03 || op === 0x23;
    const aE = regs.read(regAddr(15, 0, 'rs1e', usesEa, loading));
    const Am = bitsWord(c, am);
    const Bm = bitsWord(c, bm);
    const A = bitsWord(c, a);
    const B = bitsWord(c, b);
    // The bignum unit (circuits/bignum/mac-unit.ts): rd through a third read port, the carry banks
    // (funct7 bit 0 picks one; the other custom-0 encodings are illegal and never decoded here).
    const bnBankRead = Array.from({ length: BN_BANKS }, (_, b) =>
      c.table(`isBnMac${b}`, [opcode, ins[25]!], (op, b25) => (op === BN_OPCODE && b25 === b ? 1 : 0), [0, 1]));
    const mac = macUnit(c, { regs, rd, isMac: isBn, bankRead: bnBankRead, bankMove: bnCarryMoves, tokenWord: [...dLoPrev, ...cvW], carryIn: bnCarryIn });

    // ── execute ────────────────────────────────────────────────────────────────────────────
    const immI = wordFromSpec(c, ins, immSpec('I'));
    // Stores add their S-immediate: `sum` is then the effective address of every load and store.
    const immIS = muxWord(c, isStore, wordFromSpec(c, ins, immSpec('S')), immI);
    const opB = muxWord(c, isOp, B, immIS);
    const sum = add32(c, A, opB, 0, 'sum').sum;
    const diff = sub32(c, A, opB, 'diff').diff;
    const shamt = shiftAmount(c, c.linear([0, 1, 2, 3, 4].map((k) => [c.select(isOp, b[k]!, ins[20 + k]!), 2 ** k] as [Sig, number])));
    const sll = sll32(c, A, shamt);
    const srl = srl32(c, A, shamt);
    const sra = sra32(c, A, shamt);
    const bBits = Array.from({ length: 32 }, (_, k) => c.select(isOp, b[k]!, k < 11 ? ins[20 + k]! : ins[31]!));
    const bitOp = (name: string, f: (s: number) => number) => bitsWord(c, a.map((x, k) => c.table(`${name}${k}`, [c.add(x, bBits[k]!)], f, [0, 1])));
    const xorW = bitOp('xor', (s) => (s === 1 ? 1 : 0));
    const orW = bitOp('or', (s) => (s >= 1 ? 1 : 0));
    const andW = bitOp('and', (s) => (s === 2 ? 1 : 0));
    const lt = slt(c, A, opB);
    const ltu = sltu(c, A, opB);
    const immU = wordFromSpec(c, ins, immSpec('U'));
    const auipc = add32(c, pcWord, immU, 0, 'auipc').sum;
    const shadd = [1, 2, 3].map((k) => shAdd(c, A, B, k as 1 | 2 | 3, `sh${k}`));
    const zero = c.constant(0);

    // ── data memory: one aligned 32-bit word per row at CODE_BASE + 4·row ─────────────────────
    // `sum` is the effective address. Its bits 2… address the row; offset = bits 0, 1. An address
    // outside [CODE_BASE, CODE_BASE + 4·memWords) reads 0 and writes nothing (the enable).
    // The address has its own adder, aE + immediate, beside the ALU's A + opB: no operand mux
    // before it. Base and immediate are both 0 unless the instruction loads or stores (aE from its
    // own read port; each immediate bit a small table: I and S agree from bit 5 up, bits 0…4 pick
    // the S or I field), so any other instruction's address is 0 and the tables over it stay put.
    // Its offset (bits 0, 1) comes straight from the operands' low bits, two layers before the sum.
    const isMem = c.linear([[isLoad, 1], [isStore, 1]], 0, [0, 1]).named('isMem');
    const immSign = c.table('eaImmS', [isMem, ins[31]!], (m, x) => (m ? x : 0), [0, 1]);
    const eaImmBits = Array.from({ length: 32 }, (_, k) => k < 5
      ? c.table(`eaImm${k}`, [isStore, isLoad, ins[7 + k]!, ins[20 + k]!], (st, ld, sb, ib) => (st ? sb : ld ? ib : 0), [0, 1])
      : k < 11 ? c.table(`eaImm${k}`, [isMem, ins[20 + k]!], (m, x) => (m ? x : 0), [0, 1]) : immSign);
    const AE = bitsWord(c, aE);
    const ea = add32(c, AE, bitsWord(c, eaImmBits), 0, 'ea').sum;
    const addrBit = (k: number) => c.table(`ea${k}`, [ea[k >> 3]!], (v) => (v >> (k & 7)) & 1, [0, 1]);
    const rowBits = Array.from({ length: memBits }, (_, k) => addrBit(2 + k));
    const off = c.table('offset', [aE[0]!, aE[1]!, eaImmBits[0]!, eaImmBits[1]!],
      (a0, a1, i0, i1) => (a0 + 2 * a1 + i0 + 2 * i1) & 3, [0, 3]);
    // funct3 as the memory tables see it: 0 unless the instruction loads or stores. Every table
    // below is gated by the access kind or depends on the offset, which is 0 then too, so its
    // value is the same; its units just stop moving with other instructions' funct3.
    const memF3 = c.table('memFunct3', [isMem, funct3], (m, f) => (m ? f : 0), [0, 7]);
    const highOk = [1, 2].map((b) => {
      const mask = 0xff & ~((1 << Math.max(0, Math.min(8, 2 + memBits - 8 * b))) - 1);
      return c.table(`eaHigh${b}`, [ea[b]!], (v) => ((v & mask) === 0 ? 1 : 0), [0, 1]);
    });
    const top = c.table('eaTop', [ea[3]!], (v) => (v === 0x80 ? 1 : 0), [0, 1]);
    // In RAM ⇔ all three checks hold ⇔ their count is 3: tables read the count (no AND layer).
    const inRamCount = c.linear([[top, 1], [highOk[0]!, 1], [highOk[1]!, 1]]).named('inRamCount');
    // The word read (`old`) feeds only loads and the stores that keep old bytes (sub-word or
    // word-crossing; an aligned SW writes its whole word): every other instruction's read is
    // disabled, so its row stays 0 and the read port's q projection stays constant across runs of
    // such instructions (much less work for incremental decode, docs/executor.md round 3).
    const readsOld = c.table('readsOld', [isLoad, isStore, memF3, off], (ld, st, f3, o) =>
      (ld || (st && (f3 < 2 || o !== 0)) ? 1 : 0), [0, 1]);
    // The read port's enable is 0 only for a load outside the RAM (which must read 0). An idle port
    // stays enabled at row 0, and so does a store outside the RAM (the console's SB: it writes
    // nothing, so the old word it would merge is unused); every consumer of the word read is gated
    // by the access kind. The q projection then does not move when a read starts or ends: 8,192
    // channels on a 32 KiB RAM (docs/cpu-plan.md, "Less work per token").
    const readEnable = c.table('memReadEnable', [inRamCount, isLoad], (n, ld) => (ld && n !== 3 ? 0 : 1), [0, 1]);
    const fedD = fedC.eq(1).named('fedD');
    const fedH = fedC.eq(2).named('fedH');
    const atStart = fedC.eq(0).named('atStart');
    // Second word of a crossing store: fed its first H (two after the start) or the D after it.
    const secondPhase = c.table('secondPhase', [fedC, ppStart!, prevWasH!], (f, ps, ph) => ((f === 2 && ps) || (f === 1 && ph) ? 1 : 0), [0, 1]);
    const writeSecond = c.and(fedH, ppH!).named('writeSecond');
    const readNext = c.table('readNext', [isStore, memF3, off, atStart, secondPhase], (st, f3, o, at, sp) =>
      (!crosses(f3, o) ? 0 : st ? sp : at ? (4 - o > 2 ? 1 : 0) : (4 - o > 2 ? 0 : 1)), [0, 1]);
    // The read address is row 0 when no read is needed (the word is unused then): an idle
    // port's q projection then stays constant from one instruction to the next, which the
    // executor's incremental decode turns into skipped work (docs/executor.md, round 3).
    // One bank: the row as digits of READ_DIGIT_BITS bits, each a table over the digit's bits (a
    // free linear of them) and the carry of row + 1 into it, so that the RAM reads each digit
    // through its one-hot (passes/lower-ram.ts addrDigitsOf): a changed digit then moves
    // 2 × 8,192/32 query channels where a changed bit moved all 8,192 (docs/cpu-plan.md, "One-hot
    // address digits" and round 4).
    const digitOf = (bits: Sig[], d: { lo: number; width: number }) =>
      c.linear(bits.slice(d.lo, d.lo + d.width).map((x, j) => [x, 2 ** j] as [Sig, number]));
    // Row + 1 carries into the digit at row bit lo iff row bits 0 … lo−1 (address bits 2 … lo+1)
    // are all 1: a count of per-byte tests over the address bytes (a table layer before the bits'
    // consumers, like the bits themselves), full iff it equals the bytes tested. Its few values
    // keep the digit tables small (a count of the ones below bit lo would have lo + 1).
    const carries = new Map<number, { count: Sig; full: number }>();
    const carryInto = (lo: number): { count: Sig; full: number } => {
      const known = carries.get(lo);
      if (known) return known;
      const tests: [Sig, number][] = [];
      for (let byte = 0; 8 * byte < lo + 2; byte++) {
        const from = Math.max(2, 8 * byte), to = Math.min(lo + 2, 8 * byte + 8); // address bits [from, to)
        if (from >= to) continue;
        const mask = ((1 << (to - from)) - 1) << (from - 8 * byte);
        tests.push([c.table(`rowCarry${lo}B${byte}`, [ea[byte]!], (v) => ((v & mask) === mask ? 1 : 0), [0, 1]), 1]);
      }
      const r = { count: tests.length === 0 ? c.constant(0) : c.linear(tests), full: tests.length };
      carries.set(lo, r);
      return r;
    };
    // The row a port reads or writes when idle, as digits. The write port idles at the middle row
    // (only the top row bit set): stores go mostly to the stack, in the top half, in every demo
    // (golden traces), and the top bit is a one-bit digit that every channel reads. Loads are
    // split between the stack and the data below; the read port idles at row 0 (measured better).
    const idleDigit = (idleRow: number, d: { lo: number; width: number }) => Math.floor(idleRow / 2 ** d.lo) & (2 ** d.width - 1);
    const writeIdleRow = 2 ** (memBits - 1);
    // Each read digit's table reads two sums instead of four gate inputs, so that it spans 5-bit
    // digits: inRamCount + readsOld is 4 iff the read is in the RAM and needed, readNext + the
    // carry count is full + 1 iff the row is row + 1 here (5 × (full + 2) × 32 ≤ 640 cases; with
    // the four inputs, 3-bit digits took 384).
    const readOn = c.linear([[inRamCount, 1], [readsOld, 1]], 0, [0, 4]).named('memReadOn');
    const row = banks > 1 ? null : c.linear(rowDigits(memBits, READ_DIGIT_BITS).map((d, g) => {
      const mask = 2 ** d.width - 1;
      const carry = carryInto(d.lo);
      const next = c.linear([[readNext, 1], [carry.count, 1]], 0, [0, carry.full + 1]);
      return [c.table(`memRDigit${g}`, [readOn, next, digitOf(rowBits, d)],
        (on, nx, v) => (on === 4 ? (nx === carry.full + 1 ? (v + 1) & mask : v) : 0), [0, mask]), 2 ** d.lo] as [Sig, number];
    })).named('memRow');
    const isSW = c.table('isSW', [isStore, memF3, loading, off], (st, f3, ld, o) => (st && f3 === 2 && !ld && o === 0 ? 1 : 0), [0, 1]);
    // An aligned SW writes at its own position; any other store writes each merged word at the H
    // that brings it back (the second word of a crossing store at the second H).
    const memWrite = c.table('memWrite', [inRamCount, isStore, isSW, fedH, loading, loadWord],
      (n, st, sw, h, ld, lw) => (ld ? lw : n === 3 && st && (sw || h) ? 1 : 0), [0, 1]);
    // memWrite without the in-RAM check (which comes a layer later), folded into the write row's
    // source below: isSW from its parts (SW shape, offset 0, not loading) so no table waits for another.
    const swShape = c.table('swShape', [isStore, memF3], (st, f3) => (st && f3 === 2 ? 1 : 0), [0, 1]);
    // The word written: B for an aligned SW, else the token's payload (a merged word at H, the
    // loader's word) — and 0 while nothing is written, so that the RAM's v projection stays put
    // across the instructions that do not store (less work for incremental decode).
    const tokenOn = c.table('memTokenWord', [isStore, swShape, off, fedH, loading, loadWord],
      (st, sws, o, h, ld, lw) => (ld ? lw : st && h && !(sws && o === 0) ? 1 : 0), [0, 1]);
    const storeBits = Array.from({ length: 32 }, (_, k) => c.table(`memWord${k}`, [isSW, tokenOn, b[k]!, tokenWord[k]!],
      (sw, on, bk, tk) => (sw ? bk : on ? tk : 0), [0, 1]));
    // In loader mode the write goes to the loader's address (bit by bit: a row number can exceed a
    // slot's ±256). The idle row when no store is under way (constant k projection, as for the read); a
    // store outside the RAM (console, tohost) keeps its row but writes nothing (memWrite = 0).
    // The write row's source: 0 none, 1 the loader's address, 2 row + 1 (a crossing store's second word), 3 row.
    const writeSrc = c.table('memWriteSrc', [isStore, swShape, off, fedH, loading, loadWord, writeSecond], (st, sws, o, h, ld, lw, ws) => {
      const en = ld ? lw : st && ((sws && o === 0) || h);
      return !en ? 0 : ld ? 1 : ws ? 2 : 3;
    }, [0, 3]);
    // The write row as digits too, of 5 bits: a table over the source, the row's digit and the
    // carry of row + 1 (4 × 32 × 3 = 384 cases; 6 bits find no exact ramp construction). The loader's
    // address comes in through the row digit: in loader mode the effective address is 0 (no load
    // or store, its port reads x0), so the digit plus the loader's digit gated by loader mode (a
    // table of its own, layers earlier) is the one that applies, 0 … 31 either way. A changed
    // digit moves 2 × rows/32 key channels: a store's row and the idle row differ in at most 3
    // digits at 32 KiB. (When the loader's digit was a fourth input, it kept
    // the digits at 2 bits — 3 bits would have needed 768 cases, past what one exact ramp table
    // spans — and a changed digit moved 2 × rows/4 channels. `docs/cpu-plan.md`, round 4.)
    const writeRow = banks > 1 ? null : c.linear(rowDigits(memBits, WRITE_DIGIT_BITS).map((d, g) => {
      const mask = 2 ** d.width - 1;
      const carry = carryInto(d.lo);
      const loaderDigit = c.table(`memLDigit${g}`, [loading, digitOf(loadAddr, d)], (ld, la) => (ld ? la : 0), [0, mask]);
      const digit = c.linear([[digitOf(rowBits, d), 1], [loaderDigit, 1]], 0, [0, mask]);
      return [c.table(`memWDigit${g}`, [writeSrc, digit, carry.count],
        (src, v, cc) => (src === 0 ? idleDigit(writeIdleRow, d) : src === 2 && cc === carry.full ? (v + 1) & mask : v), [0, mask]), 2 ** d.lo] as [Sig, number];
    }));
    // The data RAM in banks of MEM_BANK_WORDS rows (one GDN layer's worth, docs/cpu-plan.md): bank b
    // is RAM "mem" (b = 0) or "mem<b>", written and read when the address's bits from bankBits up
    // equal b. Each bank's enables, row digits and written word are tables no later than the
    // one-bank ones (no extra layer); an idle bank's rows and word are 0 (constant projections, as
    // above); a disabled read gives 0, so the word read is the sum of the banks' outputs.
    const fields32 = Array.from({ length: 32 }, () => 2);
    let old: Sig[];
    if (banks === 1) {
      const mem = c.ram('mem', { rows: memWords, fields: fields32 });
      mem.write(writeRow!, storeBits, memWrite);
      old = mem.read(row!, readEnable);
    } else {
      // A word-crossing access (v2) touches word w = row and w + 1 (row + 1: bit k flips when every
      // bit below it is 1, i.e. when the count of ones below it is k — the tables read that count
      // beside bit k, so row + 1 costs no layer of its own; the bank enables use its high bits).
      const onesBelow = rowBits.map((_, k) => c.linear(rowBits.slice(0, k).map((x) => [x, 1] as [Sig, number])));
      const rowPlus1 = (x: number, below: number, k: number) => x ^ (below === k ? 1 : 0);
      const rowBits4 = rowBits.map((x, k) => c.table(`row1_${k}`, [x, onesBelow[k]!], (v, lo) => rowPlus1(v, lo, k), [0, 1]));
      const hiBits = memBits - bankBits;
      const bankOf = (bitsHi: number[]) => bitsHi.reduce((a, x, k) => a + (x << k), 0);
      const outs: Sig[][] = [];
      // The bank number of row, and the carry of row + 1 out of the bank's low bits.
      const hiRow = c.linear(rowBits.slice(bankBits).map((x, k) => [x, 2 ** k] as [Sig, number]), 0, [0, 2 ** hiBits - 1]);
      const bankCarry = carryInto(bankBits);
      const hiLoad = c.linear(loadAddr.slice(bankBits, memBits).map((x, k) => [x, 2 ** k] as [Sig, number]), 0, [0, 2 ** hiBits - 1]);
      // The write row's digits before the bank picks them (as for one bank: the loader's digit
      // comes in through the row digit).
      const wDigits = rowDigits(bankBits, WRITE_DIGIT_BITS).map((d, g) => {
        const mask = 2 ** d.width - 1;
        const carry = carryInto(d.lo);
        const loaderDigit = c.table(`memLDigit${g}`, [loading, digitOf(loadAddr, d)], (ld, la) => (ld ? la : 0), [0, mask]);
        return { d, mask, carry, digit: c.linear([[digitOf(rowBits, d), 1], [loaderDigit, 1]], 0, [0, mask]) };
      });
      for (let b = 0; b < banks; b++) {
        const bank = c.ram(b === 0 ? 'mem' : `mem${b}`, { rows: Math.min(bankWords, memWords - b * bankWords), fields: fields32 });
        const wIn = [memWrite, loading, writeSecond, ...loadAddr.slice(bankBits, memBits), ...rowBits.slice(bankBits), ...rowBits4.slice(bankBits)];
        const wen = c.table(`memWBank${b}`, wIn, (...v) => {
          const [en, ld, ws] = v as [number, number, number];
          const la = v.slice(3, 3 + hiBits), r0 = v.slice(3 + hiBits, 3 + 2 * hiBits), r1 = v.slice(3 + 2 * hiBits);
          return en && bankOf(ld ? la : ws ? r1 : r0) === b ? 1 : 0;
        }, [0, 1]);
        // This bank's write (docs/cpu-plan.md "Read and write digits in every bank"): 0 none, 1 at
        // row (or the loader's address), 2 at row + 1 — the bank of row + 1 is the bank of row plus
        // the carry out of its low bits. Only this bank's write row and word then move on a store:
        // an idle bank's are 0 (its k and v projections stay put).
        const wmode = c.table(`memWMode${b}`, [writeSrc, hiRow, bankCarry.count, hiLoad], (src, h, cc, hl) => {
          if (src === 0) return 0;
          const bank = src === 1 ? hl : src === 2 && cc === bankCarry.full ? h + 1 : h;
          return bank !== b ? 0 : src === 2 ? 2 : 1;
        }, [0, 2]);
        const wRow = c.linear(wDigits.map(({ d, mask, carry, digit }, g) => [c.table(`memWDigit${g}B${b}`, [wmode, digit, carry.count],
          (md, v, cc) => (md === 0 ? 0 : md === 2 && cc === carry.full ? (v + 1) & mask : v), [0, mask]), 2 ** d.lo] as [Sig, number]));
        const word = storeBits.map((x, k) => c.table(`memWord${k}B${b}`, [x, wmode], (v, md) => (md === 0 ? 0 : v), [0, 1]));
        bank.write(wRow, word, wen);
        // Bank 0 also reads (row 0, output ignored) when no read is needed or a store is outside the
        // RAM, as for one bank.
        const ren = c.table(`memRBank${b}`, [inRamCount, readsOld, isLoad, readNext, ...rowBits.slice(bankBits), ...rowBits4.slice(bankBits)], (...v) => {
          const [n, ro, ld, rn] = v as [number, number, number, number];
          if (!ro || (!ld && n !== 3)) return b === 0 ? 1 : 0;
          return n === 3 && bankOf(rn ? v.slice(4 + hiBits) : v.slice(4, 4 + hiBits)) === b ? 1 : 0;
        }, [0, 1]);
        // The bank's read row as digits, as for one bank: `memRSel<b>` says whether this bank
        // reads (a read in the RAM whose word — row, or row + 1 for a crossing access's second
        // word — lies in bank b; the bank of row + 1 is the bank of row plus the carry out of the
        // bank's low bits), and each digit table gives the digit of row or row + 1 when it does,
        // else 0. A changed digit moves 2 × bankWords/32 query channels where each row bit moved
        // all of them (docs/cpu-plan.md, "Read and write digits in every bank").
        const sel = c.table(`memRSel${b}`, [readOn, readNext, hiRow, bankCarry.count],
          (on, rn, h, cc) => (on === 4 && (rn && cc === bankCarry.full ? h + 1 : h) === b ? 1 : 0), [0, 1]);
        const rRow = c.linear(rowDigits(bankBits, READ_DIGIT_BITS).map((d, g) => {
          const mask = 2 ** d.width - 1;
          const carry = carryInto(d.lo);
          const next = c.linear([[readNext, 1], [carry.count, 1]], 0, [0, carry.full + 1]);
          return [c.table(`memRDigit${g}B${b}`, [sel, next, digitOf(rowBits, d)],
            (on, nx, v) => (on ? (nx === carry.full + 1 ? (v + 1) & mask : v) : 0), [0, mask]), 2 ** d.lo] as [Sig, number];
        }));
        outs.push(bank.read(rRow, ren));
      }
      old = Array.from({ length: 32 }, (_, k) => c.linear(outs.map((o) => [o[k]!, 1] as [Sig, number]), 0, [0, 1]));
    }
    const oldByte = bitsWord(c, old);
    // Every lane choice is gated by the access kind (isLoad / isStore), so `loaded` and `merged` are 0
    // outside their instructions and enter the result sum without a select of their own.
    const pick = (name: string, f: (lane: number, f3: number, o: number) => number) =>
      [0, 1, 2, 3].map((lane) => c.table(`${name}${lane}`, [memF3, off, isLoad], (f3, o, ld) => (ld ? f(lane, f3, o) : 0), [0, 1]));
    const fromByte = (sel: Sig[], bytes: Sig[]) => sel.map((s, lane) => [c.select(s, bytes[lane]!, 0), 1] as [Sig, number]);
    // Loads (LB LH LW LBU LHU): byte i of the value is at address byte off + i — lane off + i of the
    // word read, or for a crossing load (second and third positions) either a lane of the word read
    // now or a byte of the first position's D payload (fed now at the second position, the previous
    // position's at the third).
    const latch = [0, 1].map((jb) => c.linear(Array.from({ length: 8 }, (_, k) =>
      [c.select(prevWasStart!, dLo[8 * jb + k]!, prevDLo[8 * jb + k]!), 2 ** k] as [Sig, number])).named(`latch${jb}`));
    const loaded: Word = [0, 1, 2, 3].map((i) => {
      const fromOld = pick(`ld${i}_`, (l, f3, o) => (loadByteSource(f3, o, i) === `old${l}` ? 1 : 0));
      const fromLatch = [0, 1].map((jb) => c.table(`ld${i}L${jb}`, [memF3, off, isLoad], (f3, o, ld) => (ld && loadByteSource(f3, o, i) === `latch${jb}` ? 1 : 0), [0, 1]));
      // Sign extension: 255 · bit 7 of the value's top byte (always a lane of the word read now).
      const sx = pick(`sx${i}_`, (l, f3, o) => (f3 < 4 && i >= 1 << (f3 & 3) && loadByteSource(f3, o, (1 << (f3 & 3)) - 1) === `old${l}` ? 1 : 0));
      return c.linear([
        ...fromByte(fromOld, oldByte),
        ...fromLatch.map((sl, jb) => [c.select(sl, latch[jb]!, 0), 1] as [Sig, number]),
        ...fromByte(sx, old.filter((_, k) => k % 8 === 7).map((bit) => c.linear([[bit, 255]]))),
      ], 0, [0, 255]).named(`load${i}`);
    });
    // The first position of a crossing load brings back the bytes of the word it read (at most two).
    const prefix = [0, 1].map((jb) => c.linear(fromByte(
      pick(`ldA${jb}_`, (l, f3, o) => (loadPrefixLane(f3, o, jb) === l ? 1 : 0)), oldByte), 0, [0, 255]));
    // Stores other than an aligned SW: the word they leave in memory (old bytes outside the stored
    // lanes); for a crossing store, the first or the second word.
    const merged: Word = [0, 1, 2, 3].map((lane) => {
      const keep = c.table(`keep${lane}`, [memF3, off, secondPhase, isStore], (f3, o, sp, st) => (st && storeByteSource(f3, o, sp, lane) === -1 ? 1 : 0), [0, 1]);
      const from = [0, 1, 2, 3].map((i) => c.table(`st${lane}B${i}`, [memF3, off, secondPhase, isStore], (f3, o, sp, st) => (st && storeByteSource(f3, o, sp, lane) === i ? 1 : 0), [0, 1]));
      return c.linear([[c.select(keep, oldByte[lane]!, 0), 1], ...from.map((sl, i) => [c.select(sl, B[i]!, 0), 1] as [Sig, number])], 0, [0, 255]).named(`merged${lane}`);
    });
    const isSubStore = c.table('isSubStore', [isStore, memF3, off], (st, f3, o) => (st && (f3 < 2 || o !== 0) ? 1 : 0), [0, 1]);
    // A store whose four address bytes all equal the console's: one compare over the byte tests and isStore.
    const consoleWord = constWord(c, CONSOLE_ADDR);
    // consoleCount = 5 ⇔ a store to the console: the tables that need "console store" read the count
    // (a free sum of the byte tests) rather than a compare after it.
    const consoleCount = c.linear([...[0, 1, 2, 3].map((k) => [ea[k]!.eq(consoleWord[k]!), 1] as [Sig, number]), [isStore, 1]]).named('consoleCount');
    const crossing = c.table('crossing', [memF3, off], (f3, o) => (crosses(f3, o) ? 1 : 0), [0, 1]);
    // A store into the program's code (row < the code end configured at load time, which the host
    // caps at CODE_STORE_WORDS): A(w) first, then the word it leaves through D + H like a sub-word store.
    const rowLo = c.linear(rowBits.slice(0, 8).map((x, k) => [x, 2 ** k] as [Sig, number]));
    const rowHi = c.linear(rowBits.slice(8).map((x, k) => [x, 2 ** k] as [Sig, number]));
    // From the address bytes (not its bits: a layer sooner). Code words lie below 4 KiB, so a code
    // store's address is 0x80000000 + 4·w with w < codeEnd ≤ 1,024: byte 3 is 0x80, byte 2 is 0,
    // byte 1's high nibble is 0, and w = (byte 1's low nibble)·64 + byte 0 / 4. With codeEnd =
    // 64·eHi + eLo (eLo < 64): w < codeEnd ⇔ byte 1 < eHi, or byte 1 = eHi and byte 0 < 4·eLo —
    // differences of signals within ±256, one compare layer after the address bytes.
    const endLo = c.linear(codeEndBits.slice(0, 6).map((x, k) => [x, 4 * 2 ** k] as [Sig, number]), 0, [0, 252]);
    const endHi = c.linear(codeEndBits.slice(6, 11).map((x, k) => [x, 2 ** k] as [Sig, number]), 0, [0, 16]);
    const b1MinusEnd = c.linear([[ea[1]!, 1], [endHi, -1]]);
    const hiCmp = c.linear([[b1MinusEnd.lt(0).named('codeStoreHiLt'), 2], [b1MinusEnd.eq(0).named('codeStoreHiEq'), 1]], 0, [0, 2]);
    const loLt = c.linear([[ea[0]!, 1], [endLo, -1]]).lt(0).named('codeStoreLo');
    // byte 2 = 0, byte 3 = 0x80 and byte 1's high nibble 0: a count, 3 when all hold
    const codeRegion = c.linear([[top, 1], [c.table('codeStoreB2', [ea[2]!], (v) => (v === 0 ? 1 : 0), [0, 1]), 1],
      [c.table('codeStoreB1', [ea[1]!], (v) => (v >> 4 === 0 ? 1 : 0), [0, 1]), 1]], 0, [0, 3]);
    const codeStore = c.table('codeStore', [isStore, codeRegion, crossing, hiCmp, loLt, loading],
      (st, rg, x, h, l, ld) => (st && rg === 3 && !x && !ld && (h === 2 || (h === 1 && l)) ? 1 : 0), [0, 1]);

    // ── memory faults (protocol v5: TRAP(load) / TRAP(store)), exactly as the emulator: an access
    //    faults unless all its bytes lie in the data RAM [CODE_BASE, CODE_BASE + memBytes), or it
    //    is a console access (a store at exactly CONSOLE_ADDR, any width; a load within the
    //    console word [CONSOLE_ADDR, CONSOLE_ADDR + 4), which reads 0). ───────────────────────
    // In RAM: byte 3 = 0x80 and the offset (bytes 2, 1) below memBytes / 256 (memBytes ≤ 128 KiB):
    // byte 2 below memBytes >> 16 (2), equal to it with byte 1 below the rest (1 + 1) — so the
    // count 3·top + m2 + m1 is at least 5 exactly when the word is in the RAM.
    const m2 = c.table('memOkB2', [ea[2]!], (v) => (v < memBytes >> 16 ? 2 : v === memBytes >> 16 ? 1 : 0), [0, 2]);
    const m1 = c.table('memOkB1', [ea[1]!], (v) => (v < ((memBytes >> 8) & 255) ? 1 : 0), [0, 1]);
    const memOkCount = c.linear([[top, 3], [m2, 1], [m1, 1]], 0, [0, 6]);
    // The last word of the RAM (a crossing access there runs past its end): bytes 2, 1 and byte 0 ≥ 252.
    const lastWord = memBytes - 4;
    const lastCount = c.linear([
      [c.table('memLastB2', [ea[2]!], (v) => (v === lastWord >> 16 ? 1 : 0), [0, 1]), 1],
      [c.table('memLastB1', [ea[1]!], (v) => (v === ((lastWord >> 8) & 255) ? 1 : 0), [0, 1]), 1],
      [c.table('memLastB0', [ea[0]!], (v) => (v >= 252 ? 1 : 0), [0, 1]), 1],
      [crossing, 1],
    ], 0, [0, 4]);
    // Console: bytes 3…1 of the address equal the console's (a count, 3 when all do) and byte 0
    // (capped at 4) plus the access width within the word.
    const consoleHigh = c.linear([1, 2, 3].map((k) => [ea[k]!.eq(consoleWord[k]!), 1] as [Sig, number]), 0, [0, 3]);
    const consoleLow = c.table('consoleB0', [ea[0]!], (v) => Math.min(v, 4), [0, 4]);
    // The access at the instruction's start position only: the positions that re-execute it may
    // already have committed its rd (a load into its own base register) and see another address.
    const memKind = c.table('memKind', [isLoad, isStore, atStart], (ld, st, at) => (!at ? 0 : ld ? 1 : st ? 2 : 0), [0, 2]);
    const consoleOk = c.table('consoleAccess', [memKind, consoleHigh, consoleLow, memF3], (k, hi, lo, f3) =>
      (hi !== 3 ? 0 : k === 2 ? (lo === 0 ? 1 : 0) : k === 1 ? (widthOf(f3) > 0 && lo + widthOf(f3) <= 4 ? 1 : 0) : 0), [0, 1]);
    // 1 when the access faults (never at an early trap: its instruction is not what it seems), and
    // its TRAP cause (3 load, 4 store): two tables over the same inputs, one layer.
    const faults = (k: number, e: number, ok: number, last: number, con: number) => k !== 0 && !e && !con && !(ok >= 5 && last !== 4);
    const memFaultIn = [memKind, earlyAny, memOkCount, lastCount, consoleOk];
    const memFaultAny = c.table('memFault', memFaultIn, (k, e, ok, last, con) => (faults(k, e, ok, last, con) ? 1 : 0), [0, 1]);
    const memFaultCause = c.table('memFaultCause', memFaultIn, (k, e, ok, last, con) => (faults(k, e, ok, last, con) ? 2 + k : 0), [0, 4]);
    // Overrides of the emit plan: a crossing load's first position emits D(prefix); a crossing
    // store's first H position emits D(second word's low half); a crossing load's second position
    // is planned as a start whose value must take the wide form.
    const xLoadFirst = c.table('xLoadFirst', [isLoad, crossing, atStart], (ld, x, at) => (ld && x && at ? 1 : 0), [0, 1]);
    // A crossing sub-word store that is not to the console (a code store never crosses).
    const xStoreSecond = c.table('xStoreSecond', [isSubStore, consoleCount, crossing, fedH, ppStart!],
      (sb, cc, x, h, ps) => (sb && cc !== 5 && x && h && ps ? 1 : 0), [0, 1]);
    const xLoadSecond = c.table('xLoadSecond', [isLoad, crossing, fedD, prevWasStart!], (ld, x, d, ps) => (ld && x && d && ps ? 1 : 0), [0, 1]);
    const xLoad = c.and(isLoad, crossing).named('xLoad');

    // ── M extension: one unsigned 32×32 → 64 multiplier (mul.ts); the signed high words by
    //    MULH = MULHU − [a < 0]·b − [b < 0]·a and MULHSU = MULHU − [a < 0]·b (mod 2^32), the
    //    correction summed beside the multiplier and subtracted after it ────────────────────
    // The corrections enter the multiplier's own column sums: −[a < 0]·b·2^32 ≡ [a < 0]·(~b + 1)·2^32
    // (mod 2^64), so the nibbles of ~b (gated) go into columns 8…15 and the +1 into column 8,
    // likewise for a; the high word is then read straight off the product (no subtractor after it).
    const aNeg = am[31]!;
    const bNeg = bm[31]!;
    // MULH (funct3 1) and MULHSU (2) from the ALU class and funct3 (not through aluOp: a layer sooner).
    const corrBSel = c.table('mulCorrBSel', [clsAlu, funct3], (k, f3) => (k === 6 && (f3 === 1 || f3 === 2) ? 1 : 0), [0, 1]);
    const corrASel = c.table('mulCorrASel', [clsAlu, funct3], (k, f3) => (k === 6 && f3 === 1 ? 1 : 0), [0, 1]);
    const corrBOn = c.table('mulCorrB', [aNeg, corrBSel], (n, s) => n & s, [0, 1]);
    const corrAOn = c.table('mulCorrA', [bNeg, corrASel], (n, s) => n & s, [0, 1]);
    const product = mulBytes(c, Am, Bm, false, false, 8, 'mul', (na, nb) => {
      const cols: [Sig | number, number][][] = Array.from({ length: 16 }, () => []);
      for (let j = 0; j < 8; j++) {
        // The nibble is the fastest input: the values are then 0, then one straight run (3 ramps).
        cols[8 + j]!.push([c.table(`mulNotB${j}`, [aNeg, corrBSel, nb[j]!], (n, s, x) => (n && s ? 15 - x : 0), [0, 15]), 1]);
        cols[8 + j]!.push([c.table(`mulNotA${j}`, [bNeg, corrASel, na[j]!], (n, s, x) => (n && s ? 15 - x : 0), [0, 15]), 1]);
      }
      cols[8]!.push([corrBOn, 1], [corrAOn, 1]);
      mac.columns(cols); // bn.mac: + rd + C in the low columns (both 0 for every other instruction)
      return cols;
    });
    const mulHigh = product.slice(4);

    // ── M extension: division by radix-16 steps, one per position (docs/token-protocol.md v2) ──
    //    Latches written from tokens: the step s (Q), the digits q_s (Q), the partial remainder
    //    R (the step's H, with the D latch); all three cleared / reset when a division starts.
    const isDivOp = c.table('isDivOp', [clsAlu, funct3], (k, f3) => (k === 6 && f3 >= 4 ? 1 : 0), [0, 1]);
    const signedDiv = c.table('signedDiv', [clsAlu, funct3], (k, f3) => (k === 6 && (f3 === 4 || f3 === 6) ? 1 : 0), [0, 1]);
    const divStart = c.table('divStart', [isStart, isDivOp, loading], (st, dv, ld) => (st && dv && !ld ? 1 : 0), [0, 1]);
    const sRam = c.ram('divS', { rows: 1, fields: [8] });
    sRam.write(c.constant(0), [qStep], isQ);
    const [sLatch] = sRam.read(c.constant(0));
    const digits = Array.from({ length: 8 }, (_, i) => {
      const d = c.ram(`divQ${i}`, { rows: 1, fields: [16] });
      d.write(c.constant(0), [qDigit], c.table(`divQ${i}en`, [isQ, qStep, divStart], (q, st, ds) => ((q && st === i) || ds ? 1 : 0), [0, 1]));
      return d.read(c.constant(0))[0]!;
    });
    const rRam = c.ram('divR', { rows: 1, fields: Array.from({ length: 32 }, () => 2) });
    const rIn = Array.from({ length: 32 }, (_, k) => c.and(isH, k < 16 ? prevDLo[k]! : cvW[k - 16]!));
    rRam.write(c.constant(0), rIn, c.or(remTransfer, divStart));
    const remLatch = bitsWord(c, rRam.read(c.constant(0)));
    // Operands: magnitudes for DIV / REM, the values for DIVU / REMU.
    const nA = wordNibbles(c, A);
    const nB = wordNibbles(c, B);
    const negA = c.table('divNegA', [nA[7]!, signedDiv], (n, sg) => (sg && n >= 8 ? 1 : 0), [0, 1]);
    const negB = c.table('divNegB', [nB[7]!, signedDiv], (n, sg) => (sg && n >= 8 ? 1 : 0), [0, 1]);
    const magOf = (n: Sig[], neg: Sig, w: Word, tag: string) => {
      const nn = wordNibbles(c, negWord(c, w, tag));
      return n.map((x, j) => c.select(neg, nn[j]!, x).named(`${tag}${j}`));
    };
    const magA = magOf(nA, negA, A, 'divMagA');
    const magB = wordFromNibbles(c, magOf(nB, negB, B, 'divMagB'));
    const bZero = c.linear(b.map((x) => [x, 1] as [Sig, number])).eq(0).named('divBZero');
    // The step this position runs: at the start s0 (the leading zero nibbles of a non-negative
    // dividend, at most 7; 0 for a negative one or a zero divisor), after a step's H s + 1, else s.
    const zeroNib = nA.map((x, i) => x.eq(0).named(`divZ${i}`));
    const startGe = [divStart, ...Array.from({ length: 7 }, (_, m) => {
      const k = m + 1;
      const form = c.linear([...zeroNib.slice(8 - k).map((z) => [z, 1] as [Sig, number]), [negA, -8], [bZero, -8], [divStart, -32]], 32);
      return form.eq(k).named(`divS0ge${k}`);
    }), c.constant(0)];
    const stepSel = Array.from({ length: 8 }, (_, k) => {
      const later = c.table(`divStep${k}`, [fedC, sLatch!], (f, sl) => (f !== 0 && (f === 2 ? sl + 1 : sl) === k ? 1 : 0), [0, 1]);
      return c.linear([[startGe[k]!, 1], [startGe[k + 1]!, -1], [later, 1]], 0, [0, 1]).named(`divSel${k}`);
    });
    const nib = c.linear(stepSel.map((sel, k) => [c.select(sel, magA[7 - k]!, 0), 1] as [Sig, number]), 0, [0, 15]).named('divNib');
    const step = divStep(c, remLatch, nib, magB, 'div');
    const sUse = c.linear(stepSel.map((sel, k) => [sel, k] as [Sig, number]), 0, [0, 7]);
    const Qword = wordFromNibbles(c, Array.from({ length: 8 }, (_, j) => digits[7 - j]!));
    const divRes = signedResult(c, Qword, remLatch, negA, negB, bZero, 'sdiv');
    // Stepping: this position emits Q(s, q) (at the start and after a step's H), D(R lo) (fed Q)
    // or H(R hi) (fed the step's D); the result follows the last step's H like any result.
    const stepping = c.table('stepping', [isDivOp, fedC, prevIsQ, ppQ, sLatch!], (dv, f, pq, ppq, sl) =>
      (dv && (f === 0 || f === 4 || (f === 1 && pq) || (f === 2 && ppq && sl < 7)) ? 1 : 0), [0, 1]);
    const stepKind = c.tokenField('divStepKind', (t) => {
      const k = tokenKind(t).kind;
      return k === Kind.Q ? 1 : k === Kind.D ? 2 : 0; // emits: 0 Q (at the start, after H), 1 D (fed Q), 2 H (fed D)
    }, [0, 2]);
    // A step's payloads are cases of the emit plan (mode 7 / 8 / 9 from stepKind): Q(s, q) carries
    // 16·s + q, D the remainder's low half, H its high half.
    const divQPay = c.linear([[sUse, 16], [step.q, 1]], 0, [0, 255]).named('divQPay');

    const candidates: Word[] = [
      sum, diff, sll, [lt, zero, zero, zero], [ltu, zero, zero, zero], xorW, srl, sra, orW, andW,
      shadd[0]!, shadd[1]!, shadd[2]!, immU, auipc, link, loaded, merged,
      product.slice(0, 4), mulHigh, mulHigh, mulHigh, divRes.quot, Qword, divRes.rem, remLatch,
    ];
    // loaded (16) and merged (17) are already 0 outside loads / stores (their lane tables are gated).
    const sel = candidates.map((_, k) => aluOp.eq(k));
    // A SYSTEM instruction's result (aluOp 16, no candidate) is −38 = 0xffffffda: its bytes enter the sum.
    const enosys = [0xda, 0xff, 0xff, 0xff];
    const result: Word = [0, 1, 2, 3].map((byte) =>
      c.linear([...candidates.map((cw, k) => (k === 16 || k === 17 ? [cw[byte]!, 1] : [c.select(sel[k]!, cw[byte]!, 0), 1]) as [Sig, number]),
        [isSys73, enosys[byte]!]], 0, [0, 255]).named(`r${byte}`));

    // ── control flow ───────────────────────────────────────────────────────────────────────
    const eq = eq32(c, A, B, 'beq');
    const blt = slt(c, A, B, 'blt');
    const bltu = sltu(c, A, B, 'bltu');
    const cond = c.table('branchCond', [funct3, eq, blt, bltu], (f3, e, l, lu) => {
      switch (f3) {
        case 0: return e;
        case 1: return 1 - e;
        case 4: return l;
        case 5: return 1 - l;
        case 6: return lu;
        case 7: return 1 - lu;
        default: return 0;
      }
    }, [0, 1]);
    // A jump or branch that is taken (the division steps and the out-of-turn D / A tokens are modes
    // of their own in the emit plan below).
    const targetB = add32(c, pcWord, wordFromSpec(c, ins, immSpec('B')), 0, 'tb').sum;
    const targetJ = add32(c, pcWord, wordFromSpec(c, ins, immSpec('J')), 0, 'tj').sum;
    const targetR = add32(c, A, immI, 0, 'tr').sum;
    // One case per kind, 0 for every other instruction: the tables over the target (its word index
    // for the J payload) then stay put across runs of instructions that do not jump or branch.
    const target = [0, 1, 2, 3].map((k) =>
      c.choose([[isJalr, targetR[k]!], [isJal, targetJ[k]!], [isBranch, targetB[k]!]], [0, 255]));
    // The target must be 4-aligned (JALR clears bit 0, so bit 1 decides) and inside the code RAM
    // [CODE_BASE, CODE_BASE + codeBytes): byte 3 = 0x80 and bytes 2, 1 below codeBytes / 256, as a
    // count like the data RAM's — 6·top + 3·aligned + t2 + t1 ≥ 11 exactly when the target is good.
    const targetOk = c.linear([
      [c.table('targetTop', [target[3]!], (v) => (v === 0x80 ? 1 : 0), [0, 1]), 6],
      [c.table('targetAligned', [target[0]!], (v) => ((v & 2) === 0 ? 1 : 0), [0, 1]), 3],
      [c.table('targetB2', [target[2]!], (v) => (v < codeBytes >> 16 ? 2 : v === codeBytes >> 16 ? 1 : 0), [0, 2]), 1],
      [c.table('targetB1', [target[1]!], (v) => (v < ((codeBytes >> 8) & 255) ? 1 : 0), [0, 1]), 1],
    ], 0, [0, 12]).named('targetOkCount');
    const jumps = c.or(isJal, isJalr);
    // A taken jump emits J unless its target is bad (then TRAP(fetch) instead: jumpTrap) or the
    // instruction itself traps early.
    const jumpTaken = c.table('jumpTaken', [jumps, isBranch, cond, earlyAny, targetOk], (jp, br, cd, e, ok) =>
      ((jp || (br && cd)) && !e && ok >= 11 ? 1 : 0), [0, 1]);
    const jumpTrap = c.table('jumpTrap', [jumps, isBranch, cond, earlyAny, targetOk], (jp, br, cd, e, ok) =>
      ((jp || (br && cd)) && !e && ok < 11 ? 1 : 0), [0, 1]);
    // Word index of the target: bits 2…16 of (target − CODE_BASE).
    const tw0 = c.table('tw0', [target[0]!], (v) => v >> 2, [0, 63]);
    const tw1 = target[1]!;
    const tw2 = c.table('tw2', [target[2]!], (v) => v & 1, [0, 1]);
    const twLo = c.linear([[tw0, 1], [c.table('tw1lo', [tw1], (v) => v & 3, [0, 3]), 64]]);
    const twHi = c.linear([[c.table('tw1hi', [tw1], (v) => v >> 2, [0, 63]), 1], [tw2, 64]]);

    // ── halt: ecall with a7 = 93 (code a0), or a nonzero word stored to tohost (code value >>> 1);
    //    the code is clipped to 255 outside 0…255 (docs/token-protocol.md) ─────────────────────
    const a7is93 = c.and(eq32(c, A, constWord(c, 93), 'a7'), isSystem).named('exit');
    const bHigh = c.table('haltHi', [B[1]!], (v) => (v === 0 ? 0 : v === 1 ? 1 : 2), [0, 2]);
    const bTopZero = c.table('haltTop', [B[2]!, c.table('haltB3', [B[3]!], (v) => (v === 0 ? 1 : 0), [0, 1])],
      (v, z3) => (v === 0 && z3 === 1 ? 1 : 0), [0, 1]);
    const exitSmall = c.table('exitSmall', [bTopZero, bHigh], (z, h) => (z && h === 0 ? 1 : 0), [0, 1]);
    const exitCode = c.select(exitSmall, B[0]!, 255);
    let halting = a7is93;
    let haltPay = c.select(a7is93, exitCode, 0);
    {
      // One compare over a count (the address byte tests, isSW, B ≠ 0, no early trap): a layer after
      // the address bytes, so the halt reaches the mode table with the other address tests. The
      // tohost address comes from its configuration word, whose bit 0 says one is set (tohost is
      // word-aligned): byte 0 must equal that byte − 1, which no address byte does without it.
      const nonZero = c.not(eq32(c, B, constWord(c, 0), 'tohostZero'));
      const tohostByte = (k: number) => c.linear(tohostBits.slice(8 * k, 8 * k + 8).map((x, i) => [x, 2 ** i] as [Sig, number]), k === 0 ? -1 : 0);
      const tohostHalt = c.linear([
        ...[0, 1, 2, 3].map((k) => [c.linear([[ea[k]!, 1], [tohostByte(k), -1]]).eq(0), 1] as [Sig, number]),
        [isSW, 1], [nonZero, 1], [earlyAny, -6],
      ]).eq(6).named('tohostHalt');
      const tohostSmall = c.table('tohostSmall', [bTopZero, bHigh], (z, h) => (z && h <= 1 ? 1 : 0), [0, 1]);
      // (value >>> 1) & 255 from B's bits: bits 1…7 are a linear form (a table over byte 0 would
      // be 254 ramp units that move with every change of rs2's low byte), bit 8 a table over bHigh
      const half = c.linear([
        ...Array.from({ length: 7 }, (_, k) => [b[k + 1]!, 2 ** k] as [Sig, number]),
        [c.table('tohostBit8', [bHigh], (h) => (h === 1 ? 1 : 0), [0, 1]), 128],
      ], 0, [0, 255]);
      const tohostCode = c.select(tohostSmall, half, 255);
      halting = c.linear([[a7is93, 1], [tohostHalt, 1]], 0, [0, 1]).named('halting'); // never both (ecall vs a store)
      haltPay = c.linear([[haltPay, 1], [c.select(tohostHalt, tohostCode, 0), 1]], 0, [0, 255]);
    }

    // ── what to emit ───────────────────────────────────────────────────────────────────────
    const r3 = result[3]!;
    // r3: 0 is 0x00, 1 is 0xff, 2 other with bits 31…29 equal (fits 30 bits), 3 other.
    const signTop = c.table('r3cls', [r3], (v) => (v === 0 ? 0 : v === 255 ? 1 : (v >> 5) === 0 || (v >> 5) === 7 ? 2 : 3), [0, 3]);
    const r2cls = c.table('r2cls', [result[2]!], (v) => (v === 0 ? 0 : v === 255 ? 1 : 2), [0, 2]);
    const r1cls = c.table('r1cls', [result[1]!], (v) => ((v >> 5) === 0 ? 0 : (v >> 5) === 7 ? 1 : 2), [0, 2]);
    // A store's word always takes the full form (D, H), so it never "fits" (the class of a store
    // that emits no word is not read: the plan's store modes ignore it).
    // Nor does a crossing load's value (its second position always emits D).
    // Width class: 0 the value fits 14 bits (E / K), 1 it fits 30 bits, 2 neither (D then H).
    // bn.mac's low word always takes the full form too (a fixed five-token sequence).
    const widthClass = c.table('widthClass', [signTop, r2cls, r1cls, isStore, xLoad, isBn],
      (x, y, z, st, xl, bn) => (!st && !xl && !bn && x === y && y === z && x < 2 ? 0 : !st && !bn && x <= 2 ? 1 : 2), [0, 2]);
    const wend = j.eq(3).named('windowEnd');
    // The mode of this position, by priority (the out-of-turn modes never coincide): 6 a halt or a trap, 5 a
    // taken jump, 7 / 8 / 9 a division step emitting Q / D / H, 10 a crossing load's first D, 11 a
    // crossing store's second-word D, 12 a code store's A, 4 a console store, else 2 / 3 an
    // instruction with a result (or a memory store's word) to emit, 0 / 1 one without (odd: at the
    // window end). Built from four small signals so that the kind over (fed, mode, width class)
    // stays one table; the payload case is a table over (fed, mode) alone (E and K carry their
    // high byte sign-extended, as the value holds it), so the selects need not wait for the width
    // class; every payload is one case of one select layer after it.
    // bn.mac emits its low word even for rd = x0 (the carry moves at that word's H).
    const resW = c.table('resultWindow', [hasRd, isSubStore, codeStore, consoleCount, wend, isBn],
      (h, sb, cs, cc, we, bn) => (cc === 5 ? 4 : (h || bn || sb || cs ? 2 : 0) + we), [0, 4]);
    // Traps (protocol v5): the early ones (illegal, ebreak, a fetch beyond the code RAM), a jump to a
    // bad target, a memory fault — never two at once (the later ones are gated by the early ones),
    // and never with a halt or a taken jump (gated the same way), so one linear form says which.
    const trapAny = c.linear([[earlyAny, 1], [jumpTrap, 1], [memFaultAny, 1]], 0, [0, 1]).named('trapAny');
    // The TRAP payload: 0 illegal, 1 ebreak, 2 fetch, 3 load, 4 store.
    const trapCause = c.linear([[earlyCause, 1], [jumpTrap, 2], [memFaultCause, 1]], 0, [0, 4]).named('trapCause');
    // A trap is planned as a halt (mode 6: kind 7, payload case 7); the emitted row tells them apart
    // by the second payload byte, 1 for TRAP(cause) and 0 for HALT(code) — so the mode table keeps
    // its size. Its first payload byte is the exit code or the cause (never both nonzero).
    const haltOrJump = c.linear([[halting, 1], [trapAny, 1], [jumpTaken, 2]], 0, [0, 2]).named('haltOrJump'); // never two
    const stepK = c.table('stepMode', [stepping, stepKind], (st, sk) => (st ? 1 + sk : 0), [0, 3]);
    const otherK = c.table('otherMode', [xLoadFirst, xStoreSecond, codeStore, fedC, isBn, prevWasStart!],
      (xl, xs, cs, f, bn, ps) => (xl ? 1 : xs ? 2 : cs && f === 0 ? 3 : bn && f === 0 ? 4 : bn && f === 1 && ps ? 5 : 0), [0, 5]);
    const mode = c.table('mode', [haltOrJump, stepK, otherK, resW],
      (hj, sk, ok, rw) => (hj === 1 ? 6 : hj === 2 ? 5 : sk ? 6 + sk : ok ? 9 + ok : rw), [0, 14]);
    // Emitted kind: 0 E 1 D 2 J 3 H 4 K 5 N 6 OUT 7 HALT (the out-of-turn kinds Q / D / H / A are set
    // in the kind table beside the plan); payload case: 0 none (payload 0: N, whose row reads no
    // payload, so the LM head's argmax memo sees one key per N token), 1 unused, 2
    // r0/r1 (E, D and K from a start), 3 r2/r3 (E, K or H after a D), 4 the jump target word,
    // 5 w+1, 6 console byte, 7 the halt's exit code, 8 a division step's Q, 9 a crossing load's
    // prefix, 10 a crossing store's second word (low half), 11 a code store's word index, 12 a
    // division step's D (remainder low half), 13 its H (remainder high half), 14 bn.mac's new
    // carry, low half (D), 15 its high half (H).
    const plan = (f: number, md: number, wc: number): [number, number] => {
      if (md === 6) return [7, 7];
      if (md === 5) return [2, 4];
      if (md === 13) return [1, 14];
      if (md === 14) return [3, 15];
      if (md >= 7) return [2, [8, 12, 13, 9, 10, 11][md - 7]!];
      if (md === 4) return f === 0 ? [6, 6] : [2, 5]; // OUT(j+1, b), or OUT(0, b) then J at the window end
      const we = md & 1;
      if (md <= 1) return we ? [2, 5] : [5, 0];
      // E / K carry their 14 bits as (low byte, sign-extended high byte): the same payload bytes as
      // D / H's (r0, r1) or (r2, r3), so the payload case does not wait for the width class.
      if (f === 0) return wc === 0 ? (we ? [4, 2] : [0, 2]) : [1, 2];
      if (f === 1) return wc === 1 ? (we ? [4, 3] : [0, 3]) : [3, 3];
      if (f === 2) return we ? [2, 5] : [5, 0];
      return [2, 5]; // fed K or OUT(0, ·): re-base after the window end
    };
    // The division's result phase starts at its last step's H: plan it as a start.
    // So does a crossing load's second position.
    // So does bn.mac's low word, after its carry's H.
    const planFed = c.table('planFed', [fedC, ppQ, xLoadSecond, ppStart!, isBn],
      (f, ppq, xl, ps, bn) => (f === 4 || f === 5 || (f === 2 && (ppq || (ps && bn))) || xl ? 0 : f), [0, 3]);
    const planIn = [planFed, mode, widthClass];
    const planOf = (a: number[]) => plan(a[0]!, a[1]!, a[2]!);
    // Out-of-turn kinds: a division step emits Q, D, H; crossing accesses D; a code store A.
    const outKind = c.table('outKind', planIn, (...a) => {
      const md = a[1]!;
      return md >= 7 && md <= 9 ? [8, 1, 3][md - 7]! : md === 10 || md === 11 ? 1 : md === 12 ? 10 : planOf(a)[0];
    }, [0, 10]);
    // One bit per payload case straight from the plan (one FFN layer, no compare after it).
    // The payload case never depends on the width class (checked here), so its tables skip it.
    for (let f = 0; f < 4; f++) for (let md = 0; md <= 14; md++) {
      if (new Set([0, 1, 2].map((wc) => plan(f, md, wc)[1])).size !== 1) throw new ChipcError('internal', `payload case of (${f}, ${md}) depends on the width class`);
    }
    const caseBits = Array.from({ length: 16 }, (_, k) =>
      k <= 1 ? c.constant(0) : c.table(`pcase${k}`, [planFed, mode], (f, md) => (plan(f, md, 0)[1] === k ? 1 : 0), [0, 1]));
    const ca = (k: number) => caseBits[k]!;
    const outJ = c.table('outJ', [j], (v) => (v + 1) & 3, [0, 3]);
    const seq = seq16.slice(0, 15); // w + 1
    const seqLo = c.linear(seq.slice(0, 8).map((x, k) => [x, 2 ** k] as [Sig, number]));
    const seqHi = c.linear(seq.slice(8, 15).map((x, k) => [x, 2 ** k] as [Sig, number]));
    // Cases 2 and 10 both emit (r0, r1): one case of each choice on their sum (never both).
    const caR01 = c.linear([[ca(2), 1], [ca(10), 1]], 0, [0, 1]).named('pcaseR01');
    const p0 = c.choose([
      [caR01, result[0]!],
      [ca(3), result[2]!], [ca(4), twLo], [ca(5), seqLo],
      [ca(6), B[0]!], [ca(7), c.linear([[haltPay, 1], [trapCause, 1]], 0, [0, 255])], [ca(8), divQPay], [ca(12), step.rem[0]!], [ca(13), step.rem[2]!],
      [ca(9), prefix[0]!], [ca(11), rowLo],
      [ca(14), mulHigh[0]!], [ca(15), mulHigh[2]!],
    ], [0, 255]);
    const p1 = c.choose([
      [caR01, result[1]!],
      [ca(3), result[3]!], [ca(4), twHi], [ca(5), seqHi],
      [ca(12), step.rem[1]!], [ca(13), step.rem[3]!], [ca(9), prefix[1]!],
      [ca(11), c.table('codeStoreW89', [rowHi], (h) => h & 3, [0, 3])],
      [ca(14), mulHigh[1]!], [ca(15), mulHigh[3]!], [ca(7), trapAny],
    ], [0, 255]);
    const pay0 = p0;
    // Rows: each token and the field values it requires.
    const rows: { token: number; values: (number | null)[] }[] = [];
    // E / K: the payload's high byte sign-extended (bits 8…13 and copies of bit 13), as the value's
    // own byte 1 (or 3) holds it when the value fits 14 (or 30) bits.
    const sxHi = (v: number) => (sext(v, 14) >> 8) & 255;
    for (let jj = 0; jj < 4; jj++) for (let v = 0; v < 1 << 14; v++) rows.push({ token: TOK.E + (jj << 14) + v, values: [0, jj, v & 255, sxHi(v)] });
    for (let v = 0; v < 1 << 16; v++) rows.push({ token: TOK.D + v, values: [1, null, v & 255, v >> 8] });
    for (let v = 0; v < 1 << 15; v++) rows.push({ token: TOK.J + v, values: [2, null, v & 255, v >> 8] });
    for (let v = 0; v < 1 << 16; v++) rows.push({ token: TOK.H + v, values: [3, null, v & 255, v >> 8] });
    for (let v = 0; v < 1 << 14; v++) rows.push({ token: TOK.K + v, values: [4, null, v & 255, sxHi(v)] });
    for (let jj = 0; jj < 4; jj++) rows.push({ token: TOK.N + jj, values: [5, jj, null, null] });
    for (let jj = 0; jj < 4; jj++) for (let v = 0; v < 256; v++) rows.push({ token: TOK.OUT + 256 * jj + v, values: [6, jj, v, null] });
    for (let v = 0; v < 256; v++) rows.push({ token: TOK.HALT + v, values: [7, null, v, 0] });
    for (let v = 0; v < 128; v++) rows.push({ token: TOK.Q + v, values: [8, null, v, null] });
    for (let v = 0; v < CODE_STORE_WORDS; v++) rows.push({ token: TOK.A + v, values: [10, null, v & 255, v >> 8] });
    for (let v = 0; v < TRAP_IDS; v++) rows.push({ token: TOK.TRAP + v, values: [7, null, v, 1] });
    c.emitRows([outKind, outJ, pay0, p1], rows);
  });
}

/**
 * The chip with a 4 KiB code RAM and a 32 KiB data RAM; compiled for a target (`chipc compile
 * circuits/rv32im/cpu.ts --target T`), its data RAM is split into banks that fit that target's layers.
 */
const DEFAULT_SHAPE: CpuOptions = { codeWords: 1024, memWords: 8192 };
const defaultChip: CircuitDef = {
  ...cpuCircuit(DEFAULT_SHAPE),
  retarget: (t) => cpuCircuit({ ...DEFAULT_SHAPE, memBankWords: memBankWordsFor(t) }),
};
export default defaultChip;
