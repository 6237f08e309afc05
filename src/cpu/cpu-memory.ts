/**
 * Memory: the data RAM (one aligned 32-bit word per row at CODE_BASE + 4·row, in banks of one GDN
 * layer each when it is larger than one) and everything loads and stores need around it.
 *
 *  - memoryAddress: the effective address (its own adder: rs1's address port + the I / S
 *    immediate, both 0 unless the instruction loads or stores), its row bits and offset, the
 *    in-RAM test, and which word an access reads or writes at this position (a word-crossing
 *    access spans positions; the second word is row + 1).
 *  - dataRam: the read and write rows as one-hot-friendly digits, the banks, the word written
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
import { add32, constWord, type Word } from './alu.ts';
import {
  CONSOLE_ADDR, READ_DIGIT_BITS, WRITE_DIGIT_BITS, crosses, loadByteSource, loadPrefixLane, rowDigits, storeByteSource, widthOf,
  type CpuShape,
} from './cpu-layout.ts';
import { bitsWord } from './cpu-words.ts';

export interface MemoryInputs {
  shape: CpuShape;
  /** The instruction's bits (fetch) and its decode. */
  ins: Sig[];
  funct3: Sig;
  isLoad: Sig;
  isStore: Sig;
  earlyAny: Sig;
  /** The effective address's base (bits), rs2 as bits and as a word (register file). */
  aE: Sig[];
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
type DataRam = ReturnType<typeof dataRam>;
type Access = ReturnType<typeof memoryAccess>;

function memoryAddress(c: CircuitBuilder, io: MemoryInputs) {
  const { ins, funct3, isLoad, isStore, aE, fedC, ppStart, prevWasH, ppH } = io;
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
  const AE = bitsWord(c, aE);
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
  const secondPhase = c.table('secondPhase', [fedC, ppStart, prevWasH], (f, ps, ph) => ((f === 2 && ps) || (f === 1 && ph) ? 1 : 0), [0, 1]);
  const writeSecond = c.and(fedH, ppH).named('writeSecond');
  const readNext = c.table('readNext', [isStore, memF3, off, atStart, secondPhase], (st, f3, o, at, sp) =>
    (!crosses(f3, o) ? 0 : st ? sp : at ? (4 - o > 2 ? 1 : 0) : (4 - o > 2 ? 0 : 1)), [0, 1]);
  return { ea, rowBits, off, memF3, top, inRamCount, readsOld, readEnable, fedD, fedH, atStart, secondPhase, writeSecond, readNext };
}

function dataRam(c: CircuitBuilder, io: MemoryInputs, at: Address) {
  const { isLoad, isStore, b, tokenWord, loading, loadWord, loadAddr } = io;
  const { memWords, memBits, bankWords, memBankCount, bankBits } = io.shape;
  const { ea, rowBits, off, memF3, inRamCount, readsOld, readEnable, fedH, writeSecond, readNext } = at;
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
  const row = memBankCount > 1 ? null : c.linear(rowDigits(memBits, READ_DIGIT_BITS).map((d, g) => {
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
  const writeRow = memBankCount > 1 ? null : c.linear(rowDigits(memBits, WRITE_DIGIT_BITS).map((d, g) => {
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
  if (memBankCount === 1) {
    const mem = c.ram('mem', { rows: memWords, fields: fields32 });
    mem.write(writeRow!, storeBits, memWrite);
    old = mem.read(row!, readEnable);
  } else {
    // A word-crossing access (v2) touches word w = row and w + 1: row + 1 is carried through the
    // digit tables (the carry count below each digit) and, for the bank, through the carry out of
    // the bank's low bits (bankCarry).
    const hiBits = memBits - bankBits;
    const outs: Sig[][] = [];
    // The bank number of row, and the carry of row + 1 out of the bank's low bits; the loader's bank.
    const hiRow = c.linear(rowBits.slice(bankBits).map((x, k) => [x, 2 ** k] as [Sig, number]), 0, [0, 2 ** hiBits - 1]);
    const bankCarry = carryInto(bankBits);
    const hiLoad = c.linear(loadAddr.slice(bankBits, memBits).map((x, k) => [x, 2 ** k] as [Sig, number]), 0, [0, 2 ** hiBits - 1]);
    // One write row and one read row, as digits of the bank's low bits, shared by the banks (as
    // for one bank: the loader's digit comes in through the row digit; row + 1 through the carry
    // count), and one written word; each bank writes and reads only where its enables say (β and
    // the q gate: an idle bank's state and output stay as they are). Gating the digits per bank
    // as well would cost a layer: the bank of row + 1 is known only from the address bits.
    const wRow = c.linear(rowDigits(bankBits, WRITE_DIGIT_BITS).map((d, g) => {
      const mask = 2 ** d.width - 1;
      const carry = carryInto(d.lo);
      const loaderDigit = c.table(`memLDigit${g}`, [loading, digitOf(loadAddr, d)], (ld, la) => (ld ? la : 0), [0, mask]);
      const digit = c.linear([[digitOf(rowBits, d), 1], [loaderDigit, 1]], 0, [0, mask]);
      return [c.table(`memWDigit${g}`, [writeSrc, digit, carry.count],
        (src, v, cc) => (src === 0 ? idleDigit(2 ** (bankBits - 1), d) : src === 2 && cc === carry.full ? (v + 1) & mask : v), [0, mask]), 2 ** d.lo] as [Sig, number];
    }));
    const rRow = c.linear(rowDigits(bankBits, READ_DIGIT_BITS).map((d, g) => {
      const mask = 2 ** d.width - 1;
      const carry = carryInto(d.lo);
      const next = c.linear([[readNext, 1], [carry.count, 1]], 0, [0, carry.full + 1]);
      return [c.table(`memRDigit${g}`, [readOn, next, digitOf(rowBits, d)],
        (on, nx, v) => (on === 4 ? (nx === carry.full + 1 ? (v + 1) & mask : v) : 0), [0, mask]), 2 ** d.lo] as [Sig, number];
    }));
    // The enables read the bank of row (hiRow) and the carry out of the bank's low bits (the bank
    // of row + 1 is one more then), beside the in-RAM count, all from the address bits' layer;
    // each is a sum of exclusive tables, which the RAM reads as its enable form (no layer of its own).
    // The read's early part: 0 no read needed (bank 0 reads row 0, output unused), 1 + 2·load + next.
    const readCase = c.table('memReadCase', [readsOld, isLoad, readNext], (ro, ld, rn) => (!ro ? 0 : 1 + 2 * ld + rn), [0, 4]);
    const bankOfAccess = (b: number, next: boolean, h: number, cc: number) => (next && cc === bankCarry.full ? h + 1 : h) === b;
    for (let b = 0; b < memBankCount; b++) {
      const bank = c.ram(b === 0 ? 'mem' : `mem${b}`, { rows: Math.min(bankWords, memWords - b * bankWords), fields: fields32 });
      const wenLoad = c.table(`memWLoad${b}`, [writeSrc, hiLoad], (src, hl) => (src === 1 && hl === b ? 1 : 0), [0, 1]);
      const wenRow = c.table(`memWBank${b}`, [writeSrc, inRamCount, hiRow, bankCarry.count],
        (src, n, h, cc) => (src >= 2 && n === 3 && bankOfAccess(b, src === 2, h, cc) ? 1 : 0), [0, 1]);
      bank.write(wRow, storeBits, c.linear([[wenLoad, 1], [wenRow, 1]], 0, [0, 1]).named(`memWEnable${b}`));
      // Bank 0 also reads (row 0, output ignored) when no read is needed or a store is outside the
      // RAM, as for one bank.
      const ren = c.table(`memRBank${b}`, [readCase, inRamCount, hiRow, bankCarry.count], (rc, n, h, cc) => {
        const ld = rc >= 3 ? 1 : 0;
        if (rc === 0 || (!ld && n !== 3)) return b === 0 ? 1 : 0;
        return n === 3 && bankOfAccess(b, (rc - 1) % 2 === 1, h, cc) ? 1 : 0;
      }, [0, 1]);
      outs.push(bank.read(rRow, ren));
    }
    old = Array.from({ length: 32 }, (_, k) => c.linear(outs.map((o) => [o[k]!, 1] as [Sig, number]), 0, [0, 1]));
  }
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
  const fromByte = (sel: Sig[], bytes: Sig[]) => sel.map((s, lane) => [c.select(s, bytes[lane]!, 0), 1] as [Sig, number]);
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
  const prefix = [0, 1].map((jb) => c.linear(fromByte(
    pick(`ldA${jb}_`, (l, f3, o) => (loadPrefixLane(f3, o, jb) === l ? 1 : 0)), oldByte), 0, [0, 255]));
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
