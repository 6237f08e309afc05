/**
 * Memory: the data RAM (aligned 32-bit words from CODE_BASE, interleaved over four banks: word w at
 * row w >> 2 of bank w mod 4, riscv/chip-shape.ts memLayout) and everything loads and stores need
 * around it.
 *
 *  - memoryAddress: the effective address (its own adder: rs1's address port + the I / S
 *    immediate, both 0 unless the instruction loads or stores), its bits and offset, and which
 *    word an access reads or writes at this position (a word-crossing access spans positions;
 *    the second word is the next one).
 *  - dataRam: the read and write rows as nibble digits from a carry lookahead, the banks and
 *    their enables (with an in-RAM test from two carry-outs), the word written
 *    (rs2 for an aligned SW, else the merged word the token brings back, or the loader's word),
 *    and the word read (`old`).
 *  - memoryAccess: a load's value (bytes of the word read or of the first position's D latch,
 *    sign-extended), the word a sub-word store leaves (merged), console and code stores.
 *  - memoryFaults: TRAP(load) / TRAP(store) exactly as the emulator, and the emit plan's
 *    overrides for crossing accesses.
 *
 * Reads the instruction and its decode, the address port aE and rs2 (register file), the fed
 * token's fields and delays, loader state and the configured code end; produces the load / store
 * candidates for the result, the memory-side emit signals and the trap causes.
 */
import type { CircuitBuilder, Sig } from '../dsl/index.ts';
import { add32, carries, carryClass, constWord, wordNibbles, type Word } from './alu.ts';
import {
  CONSOLE_ADDR, crosses, loadByteSource, loadPrefixLane, storeByteSource, widthOf,
  type CpuShape,
} from './cpu-layout.ts';
import { bitsWord, tableOverClass } from './cpu-words.ts';

/**
 * Where the bundled firmware's data starts, in bytes from CODE_BASE: the link script
 * (firmware/runtime/link.ld) puts .data, .bss and then the stack at 0x80004000, after the 16 KiB
 * of code. The demos' stores land mostly in the 8 KiB above it (golden traces, docs/cpu-plan.md
 * "The memory ports at rest"), so the data RAM's write port idles at its row (dataRam): a store
 * then moves only the row digits that differ from it. Any other layout runs as exactly (a write
 * at rest has β = 0 whatever its row); only the work per token differs.
 */
export const FIRMWARE_DATA_OFFSET = 0x4000;

export interface MemoryInputs {
  shape: CpuShape;
  /** The instruction's bits (fetch) and its decode. */
  ins: Sig[];
  funct3: Sig;
  isLoad: Sig;
  isStore: Sig;
  earlyAny: Sig;
  /** The effective address's base (bits and word), rs2 as bits and as a word (register file). */
  aE: Sig[];
  AE: Word;
  b: Sig[];
  B: Word;
  /** Token fields: fedC, D's payload, the D latch, the token word {H, D latch} (cpu-input.ts). */
  fedC: Sig;
  dLo: Sig[];
  prevDLo: Sig[];
  tokenWord: Sig[];
  /** Delays of the fed token's kind (register file). */
  prevWasStart: Sig;
  prevWasH: Sig;
  ppStart: Sig;
  ppH: Sig;
  /** Loader state (pcControl) and the configured code end (runtimeConfig). */
  loading: Sig;
  loadWord: Sig;
  loadAddr: Sig[];
  codeEndBits: Sig[];
}

export interface Memory {
  /** The effective address (bytes). */
  ea: Word;
  /** An aligned SW (the tohost check reads it). */
  isSW: Sig;
  /** A load's value and the word a store other than an aligned SW leaves (0 outside loads / stores). */
  loaded: Word;
  merged: Word;
  /** A crossing load's first D payload (2 bytes); a code store's word index (row bits 0…7 and 8…). */
  prefix: Sig[];
  rowLo: Sig;
  rowHi: Sig;
  /** A store other than an aligned SW; the console count (5 ⇔ a console store); a code store. */
  isSubStore: Sig;
  consoleCount: Sig;
  codeStore: Sig;
  /** A load or store fault (0/1) and its TRAP cause (3 load, 4 store; 0 when none). */
  memFaultAny: Sig;
  memFaultCause: Sig;
  /** The emit plan's overrides for crossing accesses. */
  xLoadFirst: Sig;
  xStoreSecond: Sig;
  xLoadSecond: Sig;
  xLoad: Sig;
}

export function memory(c: CircuitBuilder, io: MemoryInputs): Memory {
  const at = memoryAddress(c, io);
  const ram = dataRam(c, io, at);
  const acc = memoryAccess(c, io, at, ram);
  const flt = memoryFaults(c, io, at, acc);
  return {
    ea: at.ea, isSW: ram.isSW, loaded: acc.loaded, merged: acc.merged, prefix: acc.prefix, rowLo: acc.rowLo, rowHi: acc.rowHi,
    isSubStore: acc.isSubStore, consoleCount: acc.consoleCount, codeStore: acc.codeStore, ...flt,
  };
}

type Address = ReturnType<typeof memoryAddress>;

/**
 * f(early inputs…, offset) from the offset's sum: the offset (the address's bits 0, 1) is (aE's two
 * low bits + the immediate's) mod 4, a sum a table reads straight from the operands, so the result
 * is one FFN layer after them (a table over `offset` would be two).
 */
function overOffset(c: CircuitBuilder, name: string, early: Sig[], offSum: Sig, f: (...v: number[]) => number): Sig {
  return tableOverClass(c, [`${name}Class`, name], early, offSum, (...v) => f(...v.slice(0, -1), v[v.length - 1]! & 3));
}

type DataRam = ReturnType<typeof dataRam>;
type Access = ReturnType<typeof memoryAccess>;

function memoryAddress(c: CircuitBuilder, io: MemoryInputs) {
  const { ins, funct3, isLoad, isStore, aE, AE, fedC, ppStart, prevWasH, ppH } = io;
  const { memBits } = io.shape;
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
  const ea = add32(c, AE, bitsWord(c, eaImmBits), 0, 'ea').sum;
  const addrBit = (k: number) => c.table(`ea${k}`, [ea[k >> 3]!], (v) => (v >> (k & 7)) & 1, [0, 1]);
  const rowBits = Array.from({ length: memBits }, (_, k) => addrBit(2 + k));
  const off = c.table('offset', [aE[0]!, aE[1]!, eaImmBits[0]!, eaImmBits[1]!],
    (a0, a1, i0, i1) => (a0 + 2 * a1 + i0 + 2 * i1) & 3, [0, 3]);
  // funct3 as the memory tables see it: 0 unless the instruction loads or stores. Every table
  // below is gated by the access kind or depends on the offset, which is 0 then too, so its
  // value is the same; its units just stop moving with other instructions' funct3. (The access
  // shape from funct3, loads and stores alike: 0 byte, 1 half, 2 word; 4, 5 unsigned byte / half.)
  const memF3 = c.table('memFunct3', [isMem, funct3], (m, f) => (m ? f : 0), [0, 7]);
  const top = c.table('eaTop', [ea[3]!], (v) => (v === 0x80 ? 1 : 0), [0, 1]);
  const fedD = fedC.eq(1).named('fedD');
  const fedH = fedC.eq(2).named('fedH');
  const atStart = fedC.eq(0).named('atStart');
  // Second word of a crossing store: fed its first H (two after the start) or the D after it.
  const secondPhase = c.table('secondPhase', [fedC, ppStart, prevWasH], (f, ps, ph) => ((f === 2 && ps) || (f === 1 && ph) ? 1 : 0), [0, 1]);
  const writeSecond = c.and(fedH, ppH).named('writeSecond');
  // The offset before its mod 4, for the tables that read it with early inputs (overOffset).
  const offSum = c.linear([[aE[0]!, 1], [aE[1]!, 2], [eaImmBits[0]!, 1], [eaImmBits[1]!, 2]], 0, [0, 6]).named('offsetSum');
  return { ea, eaImmBits, isMem, rowBits, off, offSum, memF3, top, fedD, fedH, atStart, secondPhase, writeSecond };
}

/**
 * The data RAM, in memBankCount interleaved banks (word w at row w >> memBankShift of bank
 * w mod memBankCount: cpu-layout.ts). Every bank reads the same row and writes the same row and
 * word; each writes and reads only where its enables say (β, the q gate: an idle bank's state and
 * output stay as they are). The rows and enables are ready one FFN layer after the address's
 * carries, without the address itself:
 *  - the bank is the address's bits 2… (at most 2 bits): a table over the low nibbles' sum;
 *  - the row's digits are the address's nibbles (the parts of them above the bank bits), each a
 *    table over aE's nibble + the immediate's nibble + the carry into it, from a carry lookahead
 *    over nibbles; the row of the next word (a crossing access's second word, the address + 4)
 *    adds the difference of a second lookahead's carry;
 *  - "in the RAM" (the enables need it: a console store writes nothing) is c1 − c2, the carries
 *    out of aE + (0x80000000 + imm) and aE + (0x80000000 − memBytes + imm): the address lies in
 *    [CODE_BASE, CODE_BASE + memBytes) exactly when the first carries and the second does not.
 */
function dataRam(c: CircuitBuilder, io: MemoryInputs, at: Address) {
  const { isLoad, isStore, AE, b, ins, funct3, tokenWord, loading, loadWord, loadAddr } = io;
  const { memBankCount, memBankShift: shift, bankBits, memBytes } = io.shape;
  const { eaImmBits, isMem, off, offSum, memF3, fedH, atStart, secondPhase, writeSecond } = at;
  const nibOf = (bits: Sig[], n: number) => c.linear(bits.slice(4 * n, 4 * n + 4).map((x, j) => [x, 2 ** j] as [Sig, number]), 0, [0, 15]);
  // The address's nibbles 0 … top, the sums aE_n + imm_n, and the carries into them for the address
  // and for the address + 4 (its nibble 0 sum plus 4).
  const rowEnd = 2 + shift + bankBits; // address bits [2 + shift, rowEnd) are the row
  const nibbles = Math.ceil(rowEnd / 4);
  const sums = Array.from({ length: nibbles }, (_, n) => c.linear([[wordNibbles(c, AE)[n]!, 1], [nibOf(eaImmBits, n), 1]], 0, [0, 30]).named(`eaNib${n}`));
  const classOf = (x: number) => (x >= 16 ? 1 : x === 15 ? 0 : -1);
  const cls = sums.slice(0, nibbles - 1).map((x, n) => c.table(`eaNibCls${n}`, [x], classOf, [-1, 1]));
  const carry = nibbles > 1 ? carries(c, cls, 0, 'eaNib') : [];
  const carryNext = nibbles > 1 ? carries(c, [c.table('eaNibCls0Next', [sums[0]!], (x) => classOf(x + 4), [-1, 1]), ...cls.slice(1)], 0, 'eaNibNext') : [];
  // s_n = the address's nibble n before the mod 16; d_n = 1 when the next word carries one more into it.
  const nibSum = (n: number) => (n === 0 ? sums[0]! : c.linear([[sums[n]!, 1], [carry[n - 1]!, 1]], 0, [0, 31]));
  const nibNext = (n: number) => (n === 0 ? null : c.linear([[carryNext[n - 1]!, 1], [carry[n - 1]!, -1]], 0, [0, 1]));
  // The row's digits: the part of each nibble in [2 + shift, rowEnd), lo = its first row bit.
  const digits: { n: number; from: number; width: number; lo: number }[] = [];
  for (let n = 0; n < nibbles; n++) {
    const from = Math.max(4 * n, 2 + shift), to = Math.min(4 * n + 4, rowEnd);
    if (from < to) digits.push({ n, from: from - 4 * n, width: to - from, lo: from - 2 - shift });
  }
  // mode: 0 the idle row, 1 the row, 2 the next word's row.
  const digitOf = (m: number, v: number, d: number, dg: { n: number; from: number; width: number }, idle: number) => {
    if (m === 0) return idle;
    const nib = (m === 2 ? v + (dg.n === 0 ? 4 : d) : v) & 15;
    return (nib >> dg.from) & (2 ** dg.width - 1);
  };
  const rowOf = (name: string, mode: Sig, extra: (n: number) => Sig | null, idleRow: number) => c.linear(digits.map((dg, g) => {
    const idle = Math.floor(idleRow / 2 ** dg.lo) & (2 ** dg.width - 1);
    const v = extra(dg.n);
    const value = v === null ? nibSum(dg.n) : c.linear([[nibSum(dg.n), 1], [v, 1]], 0, [0, 31]);
    const next = nibNext(dg.n);
    const table = next === null
      ? c.table(`${name}${g}`, [mode, value], (m, x) => digitOf(m, x, 0, dg, idle), [0, 2 ** dg.width - 1])
      : c.table(`${name}${g}`, [mode, value, next], (m, x, d) => digitOf(m, x, d, dg, idle), [0, 2 ** dg.width - 1]);
    return [table, 2 ** dg.lo] as [Sig, number];
  }));
  // The bank of the address (bits 2 … 2 + shift of the low nibble's sum) and of the loader's word.
  const bankMask = memBankCount - 1;
  const bankRow = shift === 0 ? c.constant(0) : c.table('memBank', [sums[0]!], (x) => (x >> 2) & bankMask, [0, bankMask]);
  const bankLoad = c.linear(loadAddr.slice(0, shift).map((x, k) => [x, 2 ** k] as [Sig, number]), 0, [0, bankMask]);
  // In the RAM: c1 − c2 (see above). Y = 0x80000000 + imm (bytes: linear in the immediate's bits);
  // Y − memBytes differs from Y above byte 0 only, by a function of the immediate's bits 8…11
  // (its sign included), which each byte reads straight from the instruction (as eaImm does).
  const immWord = bitsWord(c, eaImmBits);
  const yWord: Sig[] = [immWord[0]!, immWord[1]!, immWord[2]!, c.linear([[eaImmBits[31]!, -1]], 0x80, [0x7f, 0x80])];
  const upper = (m: number, x: number[]) => {
    const h = m ? x[0]! + 2 * x[1]! + 4 * x[2]! - 8 * x[3]! : 0;
    return (0x800000 - memBytes / 256 + h + 0x1000000) % 0x1000000;
  };
  const yLowWord: Sig[] = [immWord[0]!, ...[0, 1, 2].map((k) => c.table(`eaBound${k + 1}`, [isMem, ins[28]!, ins[29]!, ins[30]!, ins[31]!],
    (m, ...x) => (upper(m, x) >> (8 * k)) & 255, [0, 255]))];
  const carryOut = (y: Sig[], tag: string) => carries(c, [0, 1, 2, 3].map((k) => carryClass(c, c.add(AE[k]!, y[k]!), `${tag}.w${k}`)), 0, tag)[3]!;
  const inRam = c.linear([[carryOut(yWord, 'memAbove'), 1], [carryOut(yLowWord, 'memBelow'), -1]], 0, [0, 1]).named('memInRam');
  const isSW = c.table('isSW', [isStore, memF3, loading, off], (st, f3, ld, o) => (st && f3 === 2 && !ld && o === 0 ? 1 : 0), [0, 1]);
  // The word written: rs2 for an aligned SW, else the token's payload (a merged word at H, the
  // loader's word) — and 0 while nothing is written, so that the RAM's v projection stays put
  // across the instructions that do not store (less work for incremental decode).
  const swShape = c.table('swShape', [isStore, memF3], (st, f3) => (st && f3 === 2 ? 1 : 0), [0, 1]);
  const tokenOn = c.table('memTokenWord', [isStore, swShape, off, fedH, loading, loadWord],
    (st, sws, o, h, ld, lw) => (ld ? lw : st && h && !(sws && o === 0) ? 1 : 0), [0, 1]);
  // (Each bit a sum of two ANDs, exclusive by isSW, rather than one table over the four inputs,
  // all of whose units every change of isSW walked: docs/cpu-plan.md "The register commit at rest".)
  const storeBits = Array.from({ length: 32 }, (_, k) => c.linear([
    [c.table(`memWordB${k}`, [isSW, b[k]!], (sw, bk) => (sw && bk ? 1 : 0), [0, 1]), 1],
    [c.table(`memWordT${k}`, [isSW, tokenOn, tokenWord[k]!], (sw, on, tk) => (!sw && on && tk ? 1 : 0), [0, 1]), 1],
  ], 0, [0, 1]).named(`memWord${k}`));
  // An aligned SW writes at its own position; any other store writes each merged word at the H
  // that brings it back (the second word of a crossing store at the second H); the loader at its H.
  // The write's source: 0 none, 1 the loader's address, 2 the next word (a crossing store's second), 3 the address.
  const srcOf = (st: number, f3: number, h: number, ld: number, lw: number, ws: number, o: number) => {
    const en = ld ? lw : st && ((f3 === 2 && o === 0) || h);
    return !en ? 0 : ld ? 1 : ws ? 2 : 3;
  };
  const writeIn = [isStore, funct3, fedH, loading, loadWord, writeSecond];
  const writeSrc = overOffset(c, 'memWriteSrc', writeIn, offSum, srcOf);
  const writeMode = overOffset(c, 'memWriteMode', writeIn, offSum, (...v) => { const src = srcOf(...(v as [number, number, number, number, number, number, number])); return src === 0 ? 0 : src === 2 ? 2 : 1; });
  // The loader's address enters through the row's nibbles (in loader mode aE and the immediate are 0):
  // nibble n of the byte address 4·loadAddr, gated by loader mode.
  const loaderNib = (n: number) => {
    const bits = Array.from({ length: 4 }, (_, j) => 4 * n + j - 2).filter((w) => w >= 0 && w < loadAddr.length);
    if (bits.length === 0) return null;
    const v = c.linear(bits.map((w) => [loadAddr[w]!, 2 ** (w + 2 - 4 * n)] as [Sig, number]), 0, [0, 15]);
    return c.table(`memLNib${n}`, [loading, v], (ld, x) => (ld ? x : 0), [0, 15]);
  };
  // The write port idles at the row of the firmware's data start (bank 0's row of that word; the
  // row digits wrap in a RAM too small to hold it): the stores of the bundled firmware land in its
  // top digit mostly (docs/cpu-plan.md "The memory ports at rest"); the read port idles at row 0.
  const idleWriteRow = ((FIRMWARE_DATA_OFFSET >> 2) >> shift) & (2 ** bankBits - 1);
  const writeRow = rowOf('memWDigit', writeMode, loaderNib, idleWriteRow);
  // The read: whether the word read is needed (loads and the stores that keep old bytes — sub-word
  // or word-crossing; an aligned SW writes its whole word) and whether it is the next word (a
  // crossing access's other word), from their early inputs and the offset sum. Mode 0 row 0 (idle:
  // the read port's q projection then stays constant across runs of other instructions, less work
  // for incremental decode, docs/executor.md "Incremental matmuls"), 1 the row, 2 the next
  // word's; case 0 no read needed, else 1 + 2·load + next.
  const readsOldOf = (ld: number, st: number, f3: number, o: number) => ld || (st && (f3 < 2 || o !== 0));
  const readNextOf = (st: number, f3: number, o: number, as: number, sp: number) =>
    (!crosses(f3, o) ? 0 : st ? sp : as ? (4 - o > 2 ? 1 : 0) : (4 - o > 2 ? 0 : 1));
  const readIn = [isLoad, isStore, funct3, atStart, secondPhase];
  const readMode = overOffset(c, 'memReadMode', readIn, offSum, (ld, st, f3, as, sp, o) =>
    (!readsOldOf(ld!, st!, f3!, o!) ? 0 : readNextOf(st!, f3!, o!, as!, sp!) ? 2 : 1));
  const readRow = rowOf('memRDigit', readMode, () => null, 0);
  const readCase = overOffset(c, 'memReadCase', readIn, offSum, (ld, st, f3, as, sp, o) =>
    (!readsOldOf(ld!, st!, f3!, o!) ? 0 : 1 + 2 * ld! + readNextOf(st!, f3!, o!, as!, sp!)));
  const fields32 = Array.from({ length: 32 }, () => 2);
  const outs: Sig[][] = [];
  for (let bk = 0; bk < memBankCount; bk++) {
    // (rows: a power of two, the row digits' whole range — an access outside the RAM still has
    // digits, and its enables are 0; the host places the image in the first memWords / 4: memLayout)
    const bank = c.ram(bk === 0 ? 'mem' : `mem${bk}`, { rows: 2 ** bankBits, fields: fields32 });
    // Written by the loader (its bank) or by a store in the RAM (the bank of the address, or of the next word).
    const wenLoad = c.table(`memWLoad${bk}`, [writeSrc, bankLoad], (src, bl) => (src === 1 && bl === bk ? 1 : 0), [0, 1]);
    const wenAccess = c.table(`memWBank${bk}`, [writeSrc, inRam, bankRow],
      (src, ok, br) => (src >= 2 && ok && ((src === 2 ? br + 1 : br) & bankMask) === bk ? 1 : 0), [0, 1]);
    bank.write(writeRow, storeBits, c.linear([[wenLoad, 1], [wenAccess, 1]], 0, [0, 1]).named(`memWEnable${bk}`));
    // Read by a load in the RAM (the bank of the word it reads) or by a store keeping old bytes.
    // Otherwise every bank is off (the word read is 0): no read needed, or an access outside the
    // RAM. So a bank's read enable moves only around its own reads (docs/cpu-plan.md "The memory
    // ports at rest": bank 0, reading row 0 at rest, turned its enable off and on around every read
    // of another bank).
    const ren = c.table(`memRBank${bk}`, [readCase, inRam, bankRow],
      (rc, ok, br) => (rc !== 0 && ok && ((rc - 1) % 2 === 1 ? br + 1 : br) % memBankCount === bk ? 1 : 0), [0, 1]);
    outs.push(bank.read(readRow, ren));
  }
  const old = Array.from({ length: 32 }, (_, k) => c.linear(outs.map((o) => [o[k]!, 1] as [Sig, number]), 0, [0, 1]));
  return { old, isSW };
}

function memoryAccess(c: CircuitBuilder, io: MemoryInputs, at: Address, ram: DataRam) {
  const { isLoad, isStore, B, dLo, prevDLo, prevWasStart, loading, codeEndBits } = io;
  const { ea, rowBits, off, memF3, top, secondPhase } = at;
  const { old } = ram;
  const oldByte = bitsWord(c, old);
  // Every lane choice is gated by the access kind (isLoad / isStore), so `loaded` and `merged` are 0
  // outside their instructions and enter the result sum without a select of their own.
  const pick = (name: string, f: (lane: number, f3: number, o: number) => number) =>
    [0, 1, 2, 3].map((lane) => c.table(`${name}${lane}`, [memF3, off, isLoad], (f3, o, ld) => (ld ? f(lane, f3, o) : 0), [0, 1]));
  // Loads (LB LH LW LBU LHU): byte i of the value is at address byte off + i — lane off + i of the
  // word read, or for a crossing load (second and third positions) either a lane of the word read
  // now or a byte of the first position's D payload (fed now at the second position, the previous
  // position's at the third).
  const latch = [0, 1].map((jb) => c.linear(Array.from({ length: 8 }, (_, k) =>
    [c.select(prevWasStart, dLo[8 * jb + k]!, prevDLo[8 * jb + k]!), 2 ** k] as [Sig, number])).named(`latch${jb}`));
  const loaded: Word = [0, 1, 2, 3].map((i) => {
    const fromOld = pick(`ld${i}_`, (l, f3, o) => (loadByteSource(f3, o, i) === `old${l}` ? 1 : 0));
    const fromLatch = [0, 1].map((jb) => c.table(`ld${i}L${jb}`, [memF3, off, isLoad], (f3, o, ld) => (ld && loadByteSource(f3, o, i) === `latch${jb}` ? 1 : 0), [0, 1]));
    // Sign extension: 255 · bit 7 of the value's top byte (always a lane of the word read now).
    const sx = pick(`sx${i}_`, (l, f3, o) => (f3 < 4 && i >= 1 << (f3 & 3) && loadByteSource(f3, o, (1 << (f3 & 3)) - 1) === `old${l}` ? 1 : 0));
    // One source per byte (at most one condition holds): a choice, so that a table of the value
    // (emit's width class) is one layer after the word read, not two.
    return c.choose([
      ...fromOld.map((s, l) => [s, oldByte[l]!] as [Sig, Sig]),
      ...fromLatch.map((sl, jb) => [sl, latch[jb]!] as [Sig, Sig]),
      ...sx.map((s, l) => [s, c.linear([[old[8 * l + 7]!, 255]])] as [Sig, Sig]),
    ], [0, 255]).named(`load${i}`);
  });
  // The first position of a crossing load brings back the bytes of the word it read (at most two).
  const prefix = [0, 1].map((jb) => c.choose(
    pick(`ldA${jb}_`, (l, f3, o) => (loadPrefixLane(f3, o, jb) === l ? 1 : 0)).map((s, lane) => [s, oldByte[lane]!] as [Sig, Sig]), [0, 255]));
  // Stores other than an aligned SW: the word they leave in memory (old bytes outside the stored
  // lanes); for a crossing store, the first or the second word.
  const merged: Word = [0, 1, 2, 3].map((lane) => {
    const keep = c.table(`keep${lane}`, [memF3, off, secondPhase, isStore], (f3, o, sp, st) => (st && storeByteSource(f3, o, sp, lane) === -1 ? 1 : 0), [0, 1]);
    const from = [0, 1, 2, 3].map((i) => c.table(`st${lane}B${i}`, [memF3, off, secondPhase, isStore], (f3, o, sp, st) => (st && storeByteSource(f3, o, sp, lane) === i ? 1 : 0), [0, 1]));
    // One source per lane: a choice, as for loads.
    return c.choose([[keep, oldByte[lane]!], ...from.map((sl, i) => [sl, B[i]!] as [Sig, Sig])], [0, 255]).named(`merged${lane}`);
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
  return { loaded, prefix, merged, isSubStore, consoleWord, consoleCount, crossing, rowLo, rowHi, codeStore };
}

function memoryFaults(c: CircuitBuilder, io: MemoryInputs, at: Address, acc: Access) {
  const { isLoad, isStore, earlyAny, ppStart, prevWasStart } = io;
  const { memBytes } = io.shape;
  const { ea, memF3, top, fedD, fedH, atStart } = at;
  const { isSubStore, consoleWord, consoleCount, crossing } = acc;
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
  const xStoreSecond = c.table('xStoreSecond', [isSubStore, consoleCount, crossing, fedH, ppStart],
    (sb, cc, x, h, ps) => (sb && cc !== 5 && x && h && ps ? 1 : 0), [0, 1]);
  const xLoadSecond = c.table('xLoadSecond', [isLoad, crossing, fedD, prevWasStart], (ld, x, d, ps) => (ld && x && d && ps ? 1 : 0), [0, 1]);
  const xLoad = c.and(isLoad, crossing).named('xLoad');
  return { memFaultAny, memFaultCause, xLoadFirst, xStoreSecond, xLoadSecond, xLoad };
}
