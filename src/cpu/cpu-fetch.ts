/**
 * Fetch: the instruction word at the PC's word index w (a choice by the slot, cpu-control.ts), from
 * the code RAM (one RAM, or banks of one GDN layer each when it is larger: every bank reads at w's
 * low bits, only the one holding w is enabled). The code RAM is written by the loader (a word below
 * its end) and by code stores (A(w), then the H two positions later writes {H, D latch} to code
 * word w), so fetch sees self-modified code. Reads the PC (w), the loader's state and the token
 * word; produces the 32 instruction bits and fetchOut (w past the code RAM: TRAP(fetch)).
 */
import type { CircuitBuilder, Sig } from '../dsl/index.ts';
import { FETCH_DIGIT_BITS, rowDigits, type CpuShape } from './cpu-layout.ts';

export interface FetchInputs {
  shape: CpuShape;
  /** The instruction's word index (pcControl), and the same as a choice: the slot selects and each slot's word index. */
  w: Sig[];
  slotSel: Sig[];
  slotWords: Sig[][];
  /** Loader mode and its address (pcControl). */
  loading: Sig;
  loadAddr: Sig[];
  /** Token fields: H, A and A's word index (cpu-input.ts), and the token word {H, D latch}. */
  isH: Sig;
  isA: Sig;
  aW: Sig[];
  tokenWord: Sig[];
}

export interface Fetched {
  /** The instruction's 32 bits, LSB first. */
  ins: Sig[];
  /** 1 when w lies past the code RAM (the fetch traps). */
  fetchOut: Sig;
}

export function fetch(c: CircuitBuilder, io: FetchInputs): Fetched {
  const { w, slotSel, slotWords, loading, loadAddr, isH, isA, aW, tokenWord } = io;
  const { addrBits, codeWords, bankWords, codeBankCount, codeBankBits } = io.shape;
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
  // The fetch row as digits of FETCH_DIGIT_BITS bits of the pc's word index, so that the code RAM
  // reads each digit through its one-hot (passes/lower-ram.ts addrDigitsOf): the pc moving by one
  // word changes the low digit's one-hot in two dims, each read by 1/32 of the rows, where a
  // changed bit moved the query of every row of the code RAM. With one bank, each digit is a
  // choice by the slot between the four latched slot words' digits: its one-hot is one FFN layer
  // after the latches, and fetch is in the second GDN layer. Banks gate their digits by the
  // bank (0 when the pc is in another bank): tables over the pc's bits, a layer later.
  // A digit of one or two bits is read as its bits (w's choices): the top one may be the packed
  // rows' select bit, which β and z read as one dim (lower-ram.ts addrDigitsOf).
  const fetchRow = (bank: { index: number; hi: Sig } | null, bits: number): Sig => c.linear(rowDigits(bits, FETCH_DIGIT_BITS).flatMap((d, g) => {
    const mask = 2 ** d.width - 1;
    const digitOf = (word: Sig[]) => c.linear(word.slice(d.lo, d.lo + d.width).map((x, k) => [x, 2 ** k] as [Sig, number]), 0, [0, mask]);
    if (bank === null && d.width <= 2) return Array.from({ length: d.width }, (_, k) => [w[d.lo + k]!, 2 ** (d.lo + k)] as [Sig, number]);
    const t = bank === null
      ? c.choose(slotWords.map((sw, s) => [slotSel[s]!, digitOf(sw)] as [Sig, Sig]), [0, mask]).named(`pcDigit${g}`)
      : c.table(`pcDigit${g}B${bank.index}`, [bank.hi, digitOf(w)], (h, v) => (h === bank.index ? v : 0), [0, mask]);
    return [[t, 2 ** d.lo] as [Sig, number]];
  }));
  let ins: Sig[];
  if (codeBankCount === 1) {
    const code = c.ram('code', { rows: codeWords, fields: fields32Code });
    code.write(c.linear(codeRow.map((x, k) => [x, 2 ** k] as [Sig, number])), codeWord, codeEn);
    ins = code.read(fetchRow(null, addrBits));
  } else {
    // Bank b holds code words [b·bankWords, (b + 1)·bankWords). A code store's word (< 1,024)
    // is in bank 0; the loader's address picks the bank by its high bits. Fetch reads every
    // bank at the pc's low bits, enabled only in the pc's bank: the others read 0.
    const codeHi = c.linear(loadAddr.slice(codeBankBits, addrBits).map((x, k) => [x, 2 ** k] as [Sig, number]), 0, [0, codeBankCount - 1]);
    const pcHi = c.linear(w.slice(codeBankBits, addrBits).map((x, k) => [x, 2 ** k] as [Sig, number]), 0, [0, codeBankCount - 1]);
    const lowRow = c.linear(codeRow.slice(0, codeBankBits).map((x, k) => [x, 2 ** k] as [Sig, number]));
    const outs: Sig[][] = [];
    for (let b = 0; b < codeBankCount; b++) {
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
  return { ins, fetchOut };
}
