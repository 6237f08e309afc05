/**
 * Emit: the token this position outputs, chosen by a plan over (what the fed token asks, the
 * mode, the result's width class). The mode says, by priority, a halt or trap (one TRAP / HALT
 * row: the trap causes of decode, controlFlow and memory fold into one cause here), a taken jump
 * (J), a division step (Q / D / H), a crossing access's or a code store's out-of-turn token, a
 * console store (OUT), or the instruction's result (E / D + E / D + H + N) and the next slot.
 * The kind is a table over a class of the plan's early inputs and the result's width sum
 * (tableOverClass). Each payload byte is a choice over its cases (the early payloads, chosen a
 * layer before, and the jump target, halt code or trap cause, the data RAM's word, the division's
 * remainder, a crossing load's prefix); the kind, slot and payload bytes then pick one of the
 * alphabet's rows (the LM head, through their one-hots). Reads nearly every stage's outputs;
 * produces nothing further (the circuit's output).
 */
import type { CircuitBuilder, Sig } from '../dsl/index.ts';
import type { EmitRow } from '../ir/types.ts';
import { ChipcError } from '../util/errors.ts';
import {
  D_COUNT, E_PER_SLOT, H_COUNT, HALT_COUNT, J_COUNT, K_COUNT, N_COUNT, OUT_PER_SLOT, Q_COUNT, WINDOW_SLOTS, fitsNarrow, wideHi14, wideValue,
} from '../../riscv/protocol.ts';
import type { Word } from './alu.ts';
import { CODE_STORE_WORDS, TOK, TRAP_IDS } from './cpu-tokens.ts';
import { classOverLate, tableOverClass } from './cpu-words.ts';

export interface EmitInputs {
  /** The result word without a load's or store's word (`others`, selectResult), the load's value
   * and the store's merged word (memory): at most one not 0, their sum the result; and the
   * operand rs2 (its low byte is the console byte). */
  others: Word;
  loaded: Word;
  merged: Word;
  B: Word;
  /** The fed token's ask (cpu-input.ts), the window slot (pcControl), the word index + 1 (register file). */
  fedC: Sig;
  j: Sig;
  seq16: Sig[];
  /** Delays of the fed token's kind (register file). */
  prevWasStart: Sig;
  ppStart: Sig;
  ppQ: Sig;
  /** Decode: loads, stores, bn.mac, a destination, the early traps. */
  isLoad: Sig;
  isStore: Sig;
  isBn: Sig;
  hasRd: Sig;
  earlyAny: Sig;
  earlyCause: Sig;
  /** Memory. */
  isSubStore: Sig;
  codeStore: Sig;
  consoleCount: Sig;
  memFaultAny: Sig;
  memFaultCause: Sig;
  xLoad: Sig;
  xLoadFirst: Sig;
  xLoadSecond: Sig;
  xStoreSecond: Sig;
  prefix: Sig[];
  rowLo: Sig;
  rowHi: Sig;
  /** Control: halts, taken jumps and bad targets, the jump target's word index. */
  halting: Sig;
  haltPay: Sig;
  jumpTaken: Sig;
  jumpTrap: Sig;
  twLo: Sig;
  twHi: Sig;
  /** The M unit: the division step's signals and payloads, the product's high word (bn.mac's new carry). */
  stepping: Sig;
  stepKind: Sig;
  stepRem: Word;
  divQPay: Sig;
  mulHigh: Word;
}

/**
 * Weights of the byte classes (byte 3's four, byte 2's three, byte 1's three) whose sum says the
 * value's width, and that width for each sum (−1: no class combination gives it): the smallest
 * weights (sums 0…11) for which the width is a function of the sum. Classes (0, 0, 0) and
 * (1, 1, 1) are narrow, any other with byte 3's class at most 2 wide, the rest neither.
 */
const WIDTH_WEIGHTS: readonly [readonly number[], readonly number[], readonly number[]] = [[0, 2, 1, 7], [0, 2, 1], [0, 2, 1]];
const WIDTH_OF_SUM: readonly number[] = widthBySum();

function widthBySum(): number[] {
  const [w3, w2, w1] = WIDTH_WEIGHTS;
  const bySum: number[] = [];
  for (let x = 0; x < w3.length; x++) for (let y = 0; y < w2.length; y++) for (let z = 0; z < w1.length; z++) {
    const width = x === 3 ? 2 : x === y && y === z && x < 2 ? 0 : 1;
    const sum = w3[x]! + w2[y]! + w1[z]!;
    const known = bySum[sum];
    if (known !== undefined && known !== width) throw new Error(`internal: width sum ${sum} is ambiguous`);
    bySum[sum] = width;
  }
  return Array.from({ length: bySum.length }, (_, k) => bySum[k] ?? -1);
}

/** Emit the position's token (the circuit's output: c.emitRows). */
export function emit(c: CircuitBuilder, io: EmitInputs): void {
  const {
    others, loaded, merged, B, fedC, j, seq16, prevWasStart, ppStart, ppQ, isLoad, isStore, isBn, hasRd, earlyAny, earlyCause, isSubStore, codeStore,
    consoleCount, memFaultAny, memFaultCause, xLoad, xLoadFirst, xLoadSecond, xStoreSecond, prefix, rowLo, rowHi, halting, haltPay,
    jumpTaken, jumpTrap, twLo, twHi, stepping, stepKind, stepRem, divQPay, mulHigh,
  } = io;
  // The value's width from its bytes: 0 the narrow form carries it, 1 the wide form (D, E / K), 2
  // neither (D, H). Each byte has a class — byte 3: 0 is 0x00, 1 is 0xff, 2 another top byte
  // that the wide form carries (wideHi14: bits 31…29 equal and bits 31…28 not 1110, or a
  // pointer's 1000), 3 other; byte 2: 0 is 0x00, 1 is 0xff, 2 other; byte 1 (with bytes 2 and 3
  // both 0x00 or both 0xff): 0 or 1 whether the narrow form carries the value then (fitsNarrow:
  // [−4096, 8191]; v6 gave [−8192, −4096) to the pointer quadrant, whose E/K rows read a high
  // byte 0x8·), 2 neither — and the width is narrow for the classes (0, 0, 0) and (1, 1, 1),
  // wide while byte 3's class is at most 2. The classes enter one sum through weights
  // (WIDTH_WEIGHTS) chosen so that the sum alone says the width: the kind table then reads it
  // one layer after the result's bytes.
  const [w3, w2, w1] = WIDTH_WEIGHTS;
  // A byte's class is read as the sum of the classes of its three parts — the result without a
  // load's or store's word, the load's value, the store's merged word — of which at most one is
  // not 0 (and the class of 0x00 weighs 0). The last two are tables of choices, one layer after
  // the word read (the data RAM's banks are the chip's deepest RAMs) instead of two.
  const classOf = (name: string, byte: number, f: (v: number) => number) => c.linear([
    [c.table(`${name}Others`, [others[byte]!], f, [0, 7]), 1],
    [c.table(`${name}Load`, [loaded[byte]!], f, [0, 7], { overCases: true }), 1],
    [c.table(`${name}Store`, [merged[byte]!], f, [0, 7], { overCases: true }), 1],
  ], 0, [0, 7]).named(name);
  const r3cls = classOf('r3cls', 3, (v) => w3[v === 0 ? 0 : v === 255 ? 1 : wideHi14((v << 24) >>> 0) !== null ? 2 : 3]!);
  const r2cls = classOf('r2cls', 2, (v) => w2[v === 0 ? 0 : v === 255 ? 1 : 2]!);
  const r1cls = classOf('r1cls', 1, (v) => w1[fitsNarrow(v << 8) ? 0 : fitsNarrow((0xffff0000 | (v << 8)) >>> 0) ? 1 : 2]!);
  const widthSum = c.linear([[r3cls, 1], [r2cls, 1], [r1cls, 1]], 0, [0, WIDTH_OF_SUM.length - 1]).named('widthSum');
  // Width class: 0 the narrow form (E / K), 1 the wide form (D, E / K), 2 neither (D then H).
  // A store's word always takes the full form (D, H), so it never "fits" (the class of a store
  // that emits no word is not read: the plan's store modes ignore it); nor does a crossing
  // load's value (its second position always emits D), nor bn.mac's low word (a fixed
  // five-token sequence). These flags count as one class, `emitForms`: 0 either form, 1 the
  // wide form only (a crossing load), 2 neither.
  const forms = c.table('emitForms', [isStore, xLoad, isBn], (st, xl, bn) => (st || bn ? 2 : xl ? 1 : 0), [0, 2]);
  const widthClass = (sum: number, fm: number) => { const w = WIDTH_OF_SUM[sum]!; return fm === 0 && w === 0 ? 0 : fm <= 1 && w <= 1 ? 1 : 2; };
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
  const otherK = c.table('otherMode', [xLoadFirst, xStoreSecond, codeStore, fedC, isBn, prevWasStart],
    (xl, xs, cs, f, bn, ps) => (xl ? 1 : xs ? 2 : cs && f === 0 ? 3 : bn && f === 0 ? 4 : bn && f === 1 && ps ? 5 : 0), [0, 5]);
  const modeOf = (hj: number, sk: number, ok: number, rw: number) => (hj === 1 ? 6 : hj === 2 ? 5 : sk ? 6 + sk : ok ? 9 + ok : rw);
  const modeIn = [haltOrJump, stepK, otherK, resW];
  const mode = c.table('mode', modeIn, modeOf, [0, 14]);
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
  const planFed = c.table('planFed', [fedC, ppQ, xLoadSecond, ppStart, isBn],
    (f, ppq, xl, ps, bn) => (f === 4 || f === 5 || (f === 2 && (ppq || (ps && bn))) || xl ? 0 : f), [0, 3]);
  // The kind over (fed, mode, width class): the inputs that come early — fed, mode and the
  // forms — fold into one class (`emitEarly`, tableOverClass: classes by the kinds they give over
  // the width sums), and the kind is one table over that class and the
  // width sum, one FFN layer after the byte classes (on a load, the result's bytes come last:
  // the data RAM's banks are the chip's deepest RAMs).
  const kindOf = (f: number, md: number, wc: number) =>
    (md >= 7 && md <= 9 ? [8, 1, 3][md - 7]! : md === 10 || md === 11 ? 1 : md === 12 ? 10 : plan(f, md, wc)[0]);
  const outKind = tableOverClass(c, ['emitEarly', 'outKind'], [planFed, mode, forms], widthSum,
    (f, md, fm, sum) => kindOf(f!, md!, widthClass(sum!, fm!)), [0, 10]);
  // One bit per payload case straight from the plan (one FFN layer, no compare after it).
  // The payload case never depends on the width class (checked here), so its tables skip it.
  for (let f = 0; f < 4; f++) for (let md = 0; md <= 14; md++) {
    if (new Set([0, 1, 2].map((wc) => plan(f, md, wc)[1])).size !== 1) throw new ChipcError('chip.payload-case', `payload case of (${f}, ${md}) depends on the width class`);
  }
  // (Cases 2, 3 and 10, the result's bytes, are split below; the cases ready early are chosen
  // first, payEarly below: the others have a bit each.)
  const caseBits = new Map<number, Sig>();
  const ca = (k: number): Sig => {
    let bit = caseBits.get(k);
    if (bit === undefined) caseBits.set(k, (bit = c.table(`pcase${k}`, [planFed, mode], (f, md) => (plan(f, md, 0)[1] === k ? 1 : 0), [0, 1])));
    return bit;
  };
  const outJ = c.table('outJ', [j], (v) => (v + 1) & 3, [0, 3]);
  const seq = seq16.slice(0, 15); // w + 1
  const seqLo = c.linear(seq.slice(0, 8).map((x, k) => [x, 2 ** k] as [Sig, number]));
  const seqHi = c.linear(seq.slice(8, 15).map((x, k) => [x, 2 ** k] as [Sig, number]));
  // Cases 2 and 10 both emit (r0, r1), case 3 (r2, r3). Each is split by whether the instruction
  // loads or stores, whose result is the word the data RAM gave (the load's value or the store's
  // merged word, one layer after the RAM), and otherwise `others` (ready layers before: chosen
  // early, below): at most one of the two cases holds.
  const isMem = c.linear([[isLoad, 1], [isStore, 1]], 0, [0, 1]);
  const caseOfMem = (name: string, ks: number[]) => c.table(name, [planFed, mode, isMem],
    (f, md, m) => (ks.includes(plan(f, md, 0)[1]) && m === 1 ? 1 : 0), [0, 1]);
  const memWord = [0, 1, 2, 3].map((b) => c.linear([[loaded[b]!, 1], [merged[b]!, 1]], 0, [0, 255]));
  const caR01Mem = caseOfMem('pcaseR01Mem', [2, 10]), caR23Mem = caseOfMem('pcaseR23Mem', [3]);
  // The payloads ready before the data RAM's word and the division step's remainder — the result
  // without a load's or store's word, w + 1, the console byte, the quotient digit, the code
  // store's word, bn.mac's carry — are chosen first, one FFN layer before the payload's one-hot,
  // by the payload case the mode would give without a halt, trap or taken jump (those take cases
  // 4 and 7 of their own): tables over the mode's other late inputs (otherK, resW) and a class of
  // its early ones with planFed and isMem (classOverLate).
  // Where a halt or jump does set the mode, that choice is not read (its case is 0). The one-hot
  // then has eight cases where it had fifteen (each case of a byte's one-hot is a gated ramp
  // table of ≈ 250 units).
  const payClass = classOverLate(c, 'payEarlyClass', [stepK, planFed, isMem], [otherK, resW], (sk, f, m, ok, rw) => {
    const k = plan(f!, modeOf(0, sk!, ok!, rw!), 0)[1];
    return (k === 2 || k === 10 || k === 3) && m === 1 ? -1 : k; // the result's word from memory: not early
  });
  const early = (name: string, ks: number[]) => c.table(name, [otherK, resW, payClass.klass],
    (ok, rw, cl) => (ks.includes(payClass.at(cl!, ok!, rw!)) ? 1 : 0), [0, 1]);
  const EARLY_CASES = [5, 6, 8, 11, 14, 15];
  const eR01 = early('payEarlyR01', [2, 10]), eR23 = early('payEarlyR23', [3]);
  const ek = new Map(EARLY_CASES.map((k) => [k, early(`payEarly${k}`, [k])] as [number, Sig]));
  const e = (k: number) => ek.get(k)!;
  const pre0 = c.choose([
    [eR01, others[0]!], [eR23, others[2]!], [e(5), seqLo], [e(6), B[0]!], [e(8), divQPay], [e(11), rowLo], [e(14), mulHigh[0]!], [e(15), mulHigh[2]!],
  ], [0, 255]).named('payEarly0');
  const pre1 = c.choose([
    [eR01, others[1]!], [eR23, others[3]!], [e(5), seqHi],
    [e(11), c.table('codeStoreW89', [rowHi], (h) => h & 3, [0, 3])], [e(14), mulHigh[1]!], [e(15), mulHigh[3]!],
  ], [0, 255]).named('payEarly1');
  // The case that reads them, from the mode (as the other cases).
  const caEarly = c.table('pcaseEarly', [planFed, mode, isMem], (f, md, m) => {
    const k = plan(f, md, 0)[1];
    return EARLY_CASES.includes(k) || ((k === 2 || k === 10 || k === 3) && m === 0) ? 1 : 0;
  }, [0, 1]);
  const p0 = c.choose([
    [caEarly, pre0], [ca(4), twLo], [ca(7), c.linear([[haltPay, 1], [trapCause, 1]], 0, [0, 255])],
    [caR01Mem, memWord[0]!], [caR23Mem, memWord[2]!], [ca(12), stepRem[0]!], [ca(13), stepRem[2]!], [ca(9), prefix[0]!],
  ], [0, 255]);
  const p1 = c.choose([
    [caEarly, pre1], [ca(4), twHi], [ca(7), trapAny],
    [caR01Mem, memWord[1]!], [caR23Mem, memWord[3]!], [ca(12), stepRem[1]!], [ca(13), stepRem[3]!], [ca(9), prefix[1]!],
  ], [0, 255]);
  const pay0 = p0;
  c.emitRows([outKind, outJ, pay0, p1], emitTable());
}

let emitRowsTable: readonly EmitRow[] | null = null;

/**
 * The emit rows: each token and the values it requires of the emit fields (kind, window slot,
 * payload bytes 0 and 1; null: any). They depend on the token protocol alone, so they are made
 * once per process and every chip build passes the same array (the builder checks it once).
 */
function emitTable(): readonly EmitRow[] {
  if (emitRowsTable !== null) return emitRowsTable;
  const rows: EmitRow[] = [];
  // E / K: the top byte of the word the payload completes after a D (wideValue): the payload's high
  // byte sign-extended (bits 8…13 and copies of bit 13), as the value's own byte 1 (or 3) holds it
  // in the narrow (or wide) form, or in the pointer quadrant 0x80 + bits 11…8, a pointer's byte 3.
  const sxHi = (v: number) => wideValue(v, 0) >>> 24;
  for (let jj = 0; jj < WINDOW_SLOTS; jj++) for (let v = 0; v < E_PER_SLOT; v++) rows.push({ token: TOK.E + E_PER_SLOT * jj + v, values: [0, jj, v & 255, sxHi(v)] });
  for (let v = 0; v < D_COUNT; v++) rows.push({ token: TOK.D + v, values: [1, null, v & 255, v >> 8] });
  for (let v = 0; v < J_COUNT; v++) rows.push({ token: TOK.J + v, values: [2, null, v & 255, v >> 8] });
  for (let v = 0; v < H_COUNT; v++) rows.push({ token: TOK.H + v, values: [3, null, v & 255, v >> 8] });
  for (let v = 0; v < K_COUNT; v++) rows.push({ token: TOK.K + v, values: [4, null, v & 255, sxHi(v)] });
  for (let jj = 0; jj < N_COUNT; jj++) rows.push({ token: TOK.N + jj, values: [5, jj, null, null] });
  for (let jj = 0; jj < WINDOW_SLOTS; jj++) for (let v = 0; v < OUT_PER_SLOT; v++) rows.push({ token: TOK.OUT + OUT_PER_SLOT * jj + v, values: [6, jj, v, null] });
  for (let v = 0; v < HALT_COUNT; v++) rows.push({ token: TOK.HALT + v, values: [7, null, v, 0] });
  for (let v = 0; v < Q_COUNT; v++) rows.push({ token: TOK.Q + v, values: [8, null, v, null] });
  for (let v = 0; v < CODE_STORE_WORDS; v++) rows.push({ token: TOK.A + v, values: [10, null, v & 255, v >> 8] });
  for (let v = 0; v < TRAP_IDS; v++) rows.push({ token: TOK.TRAP + v, values: [7, null, v, 1] });
  emitRowsTable = rows;
  return rows;
}
