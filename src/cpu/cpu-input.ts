/**
 * Stage 0, the fed token: the token fields (tables over the token id, i.e. the embedding, free of
 * layers) that every later stage reads — the token's kind tests, what it asks of the pending
 * instruction (fedC), its payload bits (J's word index, A's code word, Q's step and digit, D's
 * low half) and the value bits it commits to a register (narrow E/K, the upper half after a D).
 * Also the D latch (the previous position's D payload, a delay line). Reads nothing; the
 * other stages take these instead of re-deriving them, so each field exists once.
 */
import type { CircuitBuilder, Sig } from '../dsl/index.ts';
import { Q_DIGITS } from '../../riscv/protocol.ts';
import { Kind, narrowCommit, protocolBits, protocolField, tokenKind as kindOfId, wideCommit } from './cpu-tokens.ts';

// A module-level copy of the function the token fields call for each of the alphabet's ≈ 248,000
// ids: an import transpiled to CommonJS (tsx, vitest) is a getter call per use, which cost ≈ 1 s
// per tabulation of the fields (once per process: cpu-tokens.ts protocolField).
const tokenKind = kindOfId;
const Q_RADIX = Q_DIGITS;

/** The fed token's fields (bits LSB first). */
export interface TokenInputs {
  /** Kind tests: E (unused by the stages, kept: the chip's layout counts it), D, J, H, A, Q. */
  isE: Sig;
  isD: Sig;
  isJ: Sig;
  isH: Sig;
  isA: Sig;
  isQ: Sig;
  /** 1 when the token starts an instruction (E, N, J, OUT(j ≥ 1)). */
  isStart: Sig;
  /** What the token asks of the pending instruction: 0 start, 1 D, 2 H, 3 window-end J (K, OUT(0, ·)), 4 Q, 5 A. */
  fedC: Sig;
  /** A(w)'s code word w (10 bits), Q(s, q)'s step s and digit q. */
  aW: Sig[];
  qStep: Sig;
  qDigit: Sig;
  /** 1 when the token starts the instruction in slot s (startSlot[s]; J: slot 0). */
  startSlot: Sig[];
  /** J's word index (15 bits) and the index plus s for s = 1…4 (16 bits each, jwPlus[s − 1]). */
  jw: Sig[];
  jwPlus: Sig[][];
  /**
   * The loader address p a token names (protocol v8; 16 bits): E(j, v) names 0x4000·j + v, K(v)
   * 0x4000 + v, OUT(0, b) 0x8000 + b (a register, or a configuration word from 0x8020); 0 for others.
   */
  loadP: Sig[];
  /** The narrow commit value: its low 14 bits, and all 32 (bits 13… one shared field). */
  cvNLow: Sig[];
  cvN: Sig[];
  /** The upper half (bits 16…31) a token commits after a D. */
  cvW: Sig[];
  /** D's payload (16 bits) and the previous position's (the D latch). */
  dLo: Sig[];
  dLoPrev: Sig[];
}

/** Field names `${prefix}${k}${suffix}` for k = 0…count−1. */
const names = (prefix: string, count: number, suffix = ''): string[] => Array.from({ length: count }, (_, k) => `${prefix}${k}${suffix}`);

export function tokenInputs(c: CircuitBuilder): TokenInputs {
  const is = (k: Kind, name: string) => protocolField(c, name, (t) => (tokenKind(t).kind === k ? 1 : 0), [0, 1]);
  const isE = is(Kind.E, 'isE');
  const isD = is(Kind.D, 'isD');
  const isJ = is(Kind.J, 'isJ');
  const isH = is(Kind.H, 'isH');
  // OUT(0, b) is the window-end console store: it starts nothing (docs/token-protocol.md).
  const startsInstruction = (t: number) => {
    const { kind: k, j: jj } = tokenKind(t);
    return k === Kind.E || k === Kind.N || k === Kind.J || (k === Kind.OUT && jj >= 1);
  };
  const isStart = protocolField(c, 'isStart', (t) => (startsInstruction(t) ? 1 : 0), [0, 1]);
  // What the fed token asks of the pending instruction: 0 start one, 1 fed D, 2 fed H, 3 emit the
  // window-end J (K, OUT(0, ·)), 4 fed Q (a division step), 5 fed A (a code store's word index).
  const fedC = protocolField(c, 'fedC', (t) => {
    const k = tokenKind(t).kind;
    return k === Kind.D ? 1 : k === Kind.H ? 2 : k === Kind.K || (k === Kind.OUT && !startsInstruction(t)) ? 3 : k === Kind.Q ? 4 : k === Kind.A ? 5 : 0;
  }, [0, 5]);
  const isA = is(Kind.A, 'isA');
  const aW = protocolBits(c, names('aW', 10), (t) => (tokenKind(t).kind === Kind.A ? tokenKind(t).v : 0));
  const isQ = is(Kind.Q, 'isQ');
  const qStep = protocolField(c, 'qStep', (t) => (tokenKind(t).kind === Kind.Q ? Math.floor(tokenKind(t).v / Q_RADIX) : 0), [0, 7]);
  const qDigit = protocolField(c, 'qDigit', (t) => (tokenKind(t).kind === Kind.Q ? tokenKind(t).v % Q_RADIX : 0), [0, 15]);
  const startSlot = [0, 1, 2, 3].map((s) => protocolField(c, `startSlot${s}`, (t) => (startsInstruction(t) && (tokenKind(t).kind === Kind.J ? 0 : tokenKind(t).j) === s ? 1 : 0), [0, 1]));
  // J's word index v and v + s for s = 1…4 (16 bits: v + 4 reaches 2^15): the base latch keeps
  // them all, so that the PC (v + slot, mod 2^15) and the link (v + slot + 1) are choices by the
  // slot one FFN layer after the latch (no adder, no table over base and slot before fetch).
  const jw = protocolBits(c, names('jw', 15), (t) => (tokenKind(t).kind === Kind.J ? tokenKind(t).v : 0));
  const jwPlus = [1, 2, 3, 4].map((s) => protocolBits(c, names('jw', 16, `+${s}`), (t) => (tokenKind(t).kind === Kind.J ? tokenKind(t).v + s : 0)));
  const loaderAddress = (t: number) => {
    const { kind: k, j: jj, v } = tokenKind(t);
    return k === Kind.E ? 0x4000 * jj + v : k === Kind.K ? 0x4000 + v : k === Kind.OUT && jj === 0 ? 0x8000 + v : 0;
  };
  const loadP = protocolBits(c, names('loadP', 16), loaderAddress);
  // The narrow commit value is sign-extended from 14 bits: bits 13…31 are one field (the
  // embedding carries each token's bits once, not 19 copies of its sign).
  const cvNLow = protocolBits(c, names('cvN', 14), narrowCommit);
  const cvN = [...cvNLow, ...Array.from({ length: 18 }, () => cvNLow[13]!)];
  const cvW = protocolBits(c, names('cvW', 16), wideCommit, 16);
  const dLo = protocolBits(c, names('dLo', 16), (t) => (tokenKind(t).kind === Kind.D ? tokenKind(t).v : 0));
  const dLoPrev = c.previousAll(dLo); // the D latch: the previous position's D payload

  return { isE, isD, isJ, isH, isA, isQ, isStart, fedC, aW, qStep, qDigit, startSlot, jw, jwPlus, loadP, cvNLow, cvN, cvW, dLo, dLoPrev };
}
