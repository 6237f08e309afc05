/**
 * Control: what decides where the program goes and when it stops.
 *
 *  - pcControl (first, after the token fields): the window base latched by J (the word index of
 *    each of its four slots, and each one's successor), the slot latch (the slot of the last
 *    instruction start, which positions re-executing an instruction read), the PC and the link as
 *    choices by the slot, loader mode (before the first J, and again after a HALT or TRAP), and the
 *    loader's address and write enables.
 *  - runtimeConfig: the two configuration words the loader writes (code end, tohost).
 *  - controlFlow (after execute and the M unit): branch condition, jump / branch targets and
 *    whether they are good — a taken jump emits J(target word), a bad target TRAP(fetch).
 *  - haltCheck: ecall exit (a7 = 93) and stores to tohost, with the HALT code.
 *
 * The trap causes themselves come from decode (early traps), controlFlow (jumpTrap) and memory
 * (faults); the emit stage folds them into one TRAP token.
 */
import type { CircuitBuilder, Sig } from '../dsl/index.ts';
import { add32, constWord, eq32, slt, sltu, type Word } from './alu.ts';
import type { CpuShape } from './cpu-layout.ts';
import { Kind, protocolField, tokenKind } from './cpu-tokens.ts';
import { immSpec, wordFromSpec } from './cpu-words.ts';

export interface PcControlInputs {
  /** Token fields (cpu-input.ts). */
  isH: Sig;
  isJ: Sig;
  isStart: Sig;
  startSlot: Sig[];
  jw: Sig[];
  jwPlus: Sig[][];
  loadP: Sig[];
}

export interface PcControl {
  /** 1 in loader mode (no J yet, or a HALT / TRAP since the last J). */
  loading: Sig;
  /** The loader's address p (16 bits: E(p) two positions back). */
  loadAddr: Sig[];
  /** 1 at a loader H that writes a data-RAM word / a register. */
  loadWord: Sig;
  loadReg: Sig;
  /** 1 at a loader H that writes configuration word k (built when first asked for, in the caller's order). */
  loadConfig: (k: number) => Sig;
  /** The instruction's word index (15 bits, LSB first; choices by the slot) and its window slot j (0…3). */
  w: Sig[];
  j: Sig;
  /**
   * The PC as a choice: slotSel[s] is 1 when the instruction sits in slot s of the window (at most
   * one is), slotWords[s] the word index of slot s (15 bits). Fetch builds its row digits as
   * choices over these, so that the code RAM reads them one FFN layer after the latches.
   */
  slotSel: Sig[];
  slotWords: Sig[][];
  /** The word index + 1 (16 bits: the link is 0x80000000 + 4 times it), a choice by the slot like w. */
  seq16: Sig[];
}

export function pcControl(c: CircuitBuilder, io: PcControlInputs): PcControl {
  const { isH, isJ, isStart, startSlot, jw, jwPlus, loadP } = io;
  // ── PC: the window's base latched by J — as the word index of each of its four slots — and the
  //    slot of the last instruction start, latched beside it. Both latches are written from token
  //    fields, so both sit in the first GDN layer, and the PC is a choice between four latched
  //    words one FFN layer later: fetch reads the code RAM in the second GDN layer. ────────────
  // The same latch remembers that a J came: before the first J the chip is in loader mode, and
  // (v3) a fed HALT clears it, so a request's write tokens and J(entry) can follow a HALT
  // (re-entry: services, docs/token-protocol.md).
  const isJorHalt = protocolField(c, 'isJorHALT', (t) => { const k = tokenKind(t).kind; return k === Kind.J || k === Kind.HALT || k === Kind.TRAP ? 1 : 0; }, [0, 1]);
  const latchedBits = [...jw, ...jwPlus.flat(), isJ];
  const baseRam = c.ram('base', { rows: 1, fields: latchedBits.map(() => 2) });
  baseRam.write(c.constant(0), latchedBits, isJorHalt);
  const baseRead = baseRam.read(c.constant(0));
  const plus = [1, 2, 3, 4].map((s) => baseRead.slice(15 + 16 * (s - 1), 15 + 16 * s));
  // Slot s's word index (v + s mod 2^15) and its successor (v + s + 1, 16 bits).
  const slotWords = [baseRead.slice(0, 15), ...plus.slice(0, 3).map((p) => p.slice(0, 15))];
  const nextWords = plus;
  const loading = c.linear([[baseRead[latchedBits.length - 1]!, -1]], 1).named('loading');
  // The slot latch: the one-hot of the slot of the last token that started an instruction (J: 0),
  // read only at positions that start none (D, H, K, Q, A, OUT(0, ·) re-execute the pending
  // instruction); a start takes its slot from its own token. In a loader prompt every start is an
  // E(p) of slot 0 or the final J (the loader's other addresses come through K and OUT(0, ·)), so
  // the latch's row changes at most once there (docs/numerics.md "Chunked prefill").
  const slotRam = c.ram('slot', { rows: 1, fields: [2, 2, 2, 2] });
  slotRam.write(c.constant(0), startSlot, isStart);
  // (the enable is read through its form: 1 − isStart costs no field and no layer)
  const latchedSlot = slotRam.read(c.constant(0), c.linear([[isStart, -1]], 1, [0, 1]));
  const slotSel = [0, 1, 2, 3].map((s) => c.linear([[startSlot[s]!, 1], [latchedSlot[s]!, 1]], 0, [0, 1]).named(`slot${s}`));
  const w = Array.from({ length: 15 }, (_, k) => c.choose(slotWords.map((sw, s) => [slotSel[s]!, sw[k]!] as [Sig, Sig]), [0, 1]).named(`pc${k}`));
  const j = c.linear(slotSel.map((x, s) => [x, s] as [Sig, number]), 0, [0, 3]).named('j');
  const seq16 = Array.from({ length: 16 }, (_, k) => c.choose(nextWords.map((nw, s) => [slotSel[s]!, nw[k]!] as [Sig, Sig]), [0, 1]).named(`seq${k}`));

  // ── loader (docs/token-protocol.md "Loading by prompt"): before the first J, a token naming a
  //    load address p — E(0, p), K(p − 0x4000), OUT(0, p − 0x8000) — latches it (bit 15:
  //    register p mod 32 or a configuration word, else word p of memory), and the H of D(lo),
  //    H(hi) writes {hi, lo} there ─────────────────────────────────────────────────────────
  // The H takes p from the token two positions back (a delay of delays: the conv's tap at t − 2),
  // not from a latch RAM rewritten at every address — a chunked prefill reads such a row exactly
  // only while it was rewritten at most once in the chunk (docs/numerics.md "Chunked prefill").
  const loadAddr = c.previousAll(c.previousAll(loadP));
  const loadWord = c.table('loadWord', [loading, isH, loadAddr[15]!], (l, h, r) => (l && h && !r ? 1 : 0), [0, 1]);
  // p = 0x8000 + r (r < 32) is register r; p = 0x8000 + 32 + k is configuration word k.
  const loadReg = c.table('loadReg', [loading, isH, loadAddr[15]!, loadAddr[5]!], (l, h, r, cf) => (l && h && r && !cf ? 1 : 0), [0, 1]);
  const loadConfig = (k: number) => c.table(`loadConfig${k}`, [loading, isH, loadAddr[15]!, loadAddr[5]!, loadAddr[0]!],
    (l, h, r, cf, b0) => (l && h && r && cf && b0 === k ? 1 : 0), [0, 1]);
  return { loading, loadAddr, loadWord, loadReg, loadConfig, w, j, slotSel, slotWords, seq16 };
}

export interface RuntimeConfigInputs {
  /** The 32-bit word a D, H pair brings back ({H payload, D latch} at a position fed H). */
  tokenWord: Sig[];
  loadConfig: PcControl['loadConfig'];
}

export interface RuntimeConfig {
  /** The program's code end in words (11 bits): stores below it are code stores. */
  codeEndBits: Sig[];
  /** Its tohost address (bit 0 set when there is one) as 4 bytes, least significant first: read groups of its bits. */
  tohostBytes: Sig[];
}

export function runtimeConfig(c: CircuitBuilder, io: RuntimeConfigInputs): RuntimeConfig {
  const { tokenWord, loadConfig } = io;
  // ── run-time configuration (written by the loader, read at every position): the program's
  //    code end (which stores are code stores) and its tohost address (bit 0 set when present) ──
  const codeEndRam = c.ram('codeEnd', { rows: 1, fields: Array.from({ length: 11 }, () => 2) });
  codeEndRam.write(c.constant(0), tokenWord.slice(0, 11), loadConfig(0));
  const codeEndBits = codeEndRam.read(c.constant(0));
  const tohostRam = c.ram('tohost', { rows: 1, fields: Array.from({ length: 32 }, () => 2) });
  tohostRam.write(c.constant(0), tokenWord, loadConfig(1));
  const byteGroups = [0, 1, 2, 3].map((k) => Array.from({ length: 8 }, (_, i) => [8 * k + i, 2 ** i] as [number, number]));
  const tohostBytes = tohostRam.readWithGroups(c.constant(0), undefined, byteGroups).groups;
  return { codeEndBits, tohostBytes };
}

export interface ControlFlowInputs {
  shape: CpuShape;
  /** Operands (rs1, rs2 words), funct3, the instruction's bits and its PC as a word. */
  A: Word;
  B: Word;
  funct3: Sig;
  ins: Sig[];
  pcWord: Word;
  /** The I immediate (execute) and the decoded jump / branch classes. */
  immI: Word;
  isJal: Sig;
  isJalr: Sig;
  isBranch: Sig;
  /** 1 when the instruction traps right after fetch (decode). */
  earlyAny: Sig;
}

export interface ControlFlow {
  /** A taken jump or branch to a good target (emits J), or to a bad one (TRAP(fetch)). */
  jumpTaken: Sig;
  jumpTrap: Sig;
  /** The J payload: the target's word index, low 8 bits and the 7 above. */
  twLo: Sig;
  twHi: Sig;
}

export function controlFlow(c: CircuitBuilder, io: ControlFlowInputs): ControlFlow {
  const { A, B, funct3, ins, pcWord, immI, isJal, isJalr, isBranch, earlyAny } = io;
  const { codeBytes } = io.shape;
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
  // of their own in the emit plan, cpu-emit.ts).
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
  return { jumpTaken, jumpTrap, twLo, twHi };
}

export interface HaltInputs {
  /** Operands: A is a7 and B (bits b) a0 for ecall; B is the stored word for a store. */
  A: Word;
  B: Word;
  b: Sig[];
  /** 1 for an ecall (decode); 1 for an aligned SW (memory) and its effective address. */
  isSystem: Sig;
  isSW: Sig;
  ea: Word;
  /** The configured tohost address's bytes (runtimeConfig) and the early-trap flag (decode). */
  tohostBytes: Sig[];
  earlyAny: Sig;
}

export interface Halt {
  /** 1 when the instruction halts, and the HALT code (0…255). */
  halting: Sig;
  haltPay: Sig;
}

export function haltCheck(c: CircuitBuilder, io: HaltInputs): Halt {
  const { A, B, b, isSystem, isSW, ea, tohostBytes, earlyAny } = io;
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
    const tohostByte = (k: number) => c.linear([[tohostBytes[k]!, 1]], k === 0 ? -1 : 0);
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
  return { halting, haltPay };
}
