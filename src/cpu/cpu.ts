/**
 * The RV32IM+Zba chip (circuit `rv32-v1`), speaking token protocol v9 (docs/token-protocol.md):
 * fetch (a code RAM), decode, register file (a RAM with six read ports), ALU and Zba, branches and
 * jumps (the PC one of four slot words after the word a J token names), a data RAM with loads and
 * stores of every width and alignment, the console (OUT), `ecall` exit and `tohost` (HALT), one
 * 32×32 → 64 multiplier for MUL* and the bignum unit's bn.mac / bn.mac1 (src/cpu/mac-unit.ts),
 * radix-16 division steps for DIV/REM (Q tokens), code stores that reach fetch (A tokens), and a
 * loader mode before the first J (loading by prompt). docs/cpu-plan.md describes it.
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
import { defineCircuit, type CircuitDef } from '../dsl/index.ts';
import { TOK, VOCAB } from './cpu-tokens.ts';
import { cpuShape, memBankWordsFor, type CpuOptions } from './cpu-layout.ts';
import { tokenInputs } from './cpu-input.ts';
import { controlFlow, haltCheck, pcControl, runtimeConfig } from './cpu-control.ts';
import { fetch } from './cpu-fetch.ts';
import { decode } from './cpu-decode.ts';
import { registerFile } from './cpu-regfile.ts';
import { bignumUnit, divide, multiply } from './cpu-muldiv.ts';
import { execute, selectResult } from './cpu-execute.ts';
import { memory } from './cpu-memory.ts';
import { emit } from './cpu-emit.ts';

// The chip's constants and helpers live beside its stages; this file re-exports them (the host side,
// src/chip and the tests, imports them from here).
export { TOK, CODE_STORE_WORDS, TRAP_IDS, VOCAB, Kind, tokenKind, type TokenKind } from './cpu-tokens.ts';
export {
  CODE_BASE, CONFIG_CODE_END, CONFIG_TOHOST, CONSOLE_ADDR, MEM_BANK_WORDS, FETCH_DIGIT_BITS,
  codeBanks, crosses, loadByteSource, loadPrefixLane, memBankWordsFor, memLayout, memPlace, memWordAt, rowDigits, storeByteSource, type CpuOptions,
  type MemLayout,
} from './cpu-layout.ts';

/**
 * The chip for these options: the stages in the order they build their signals (each stage's file
 * says what it computes). The order is part of the chip — node ids, and so the compiled weights'
 * layout, follow it — which is why control and execute are entered twice: the PC's slot latches and
 * loader mode come first, branches and halts once the operands and the address exist; the ALU's
 * candidates before memory, its result select after the M unit.
 */
export function cpuCircuit(opts: CpuOptions) {
  const shape = cpuShape(opts);
  return defineCircuit({ name: 'rv32-v1', vocab: VOCAB, bos: TOK.BOS }, (c) => {
    const tok = tokenInputs(c);
    const pc = pcControl(c, tok);
    // The 32-bit word a D, H pair brings back: {H payload, D latch} at a position fed H.
    const tokenWord = [...tok.dLoPrev, ...tok.cvW];
    const config = runtimeConfig(c, { tokenWord, loadConfig: pc.loadConfig });
    const { ins, fetchOut } = fetch(c, { shape, w: pc.w, slotSel: pc.slotSel, slotWords: pc.slotWords, loading: pc.loading, loadAddr: pc.loadAddr, isH: tok.isH, isA: tok.isA, aW: tok.aW, tokenWord });
    const dec = decode(c, { ins, fetchOut, loading: pc.loading });
    const rf = registerFile(c, { ...tok, ...pc, ...dec, ins });
    const mac = bignumUnit(c, { ...rf, ...dec, ins, dLoPrev: tok.dLoPrev, cvW: tok.cvW });
    const alu = execute(c, { ...rf, ins, isOp: dec.isOp, isStore: dec.isStore, aluOp: dec.aluOp });
    const mem = memory(c, {
      shape, ...dec, ...pc, ...rf, ins, fedC: tok.fedC, dLo: tok.dLo, prevDLo: tok.dLoPrev, tokenWord, codeEndBits: config.codeEndBits,
    });
    const mul = multiply(c, { ...rf, clsAlu: dec.clsAlu, funct3: dec.funct3, mac });
    const div = divide(c, { ...tok, ...rf, ...dec, prevDLo: tok.dLoPrev });
    const { others } = selectResult(c, {
      alu, link: rf.link, loaded: mem.loaded, merged: mem.merged, ...mul, ...div, aluOp: dec.aluOp, isSys73: dec.isSys73,
    });
    const flow = controlFlow(c, { shape, ...rf, ...dec, ins, immI: alu.immI });
    const halt = haltCheck(c, { ...rf, ...dec, ...mem, tohostBytes: config.tohostBytes });
    emit(c, { ...tok, ...pc, ...rf, ...dec, ...mem, ...flow, ...halt, ...div, mulHigh: mul.mulHigh, others });
  });
}

/**
 * The chip with a 4 KiB code RAM and a 32 KiB data RAM; compiled for a target (`chipc compile
 * src/cpu/cpu.ts --target T`), its data RAM is split into banks that fit that target's layers.
 */
const DEFAULT_SHAPE: CpuOptions = { codeWords: 1024, memWords: 8192 };
const defaultChip: CircuitDef = {
  ...cpuCircuit(DEFAULT_SHAPE),
  retarget: (t) => cpuCircuit({ ...DEFAULT_SHAPE, memBankWords: memBankWordsFor(t) }),
};
export default defaultChip;
