/**
 * Demo circuits for the RV32M multiplier (mul.ts): token t < VOCAB − 1 carries the operands
 * operandA(t), operandB(t) of alu-demo.ts as nibble token fields; the circuit computes one of
 * mul / mulh / mulhsu / mulhu and emits the sum of the result word's 8 nibbles (the result bytes
 * and nibbles are placed in the residual, so `checkCompiled` compares each). Token VOCAB − 1 is
 * BOS. The default export is the mul demo; `mulDemo(op)` builds the others (vocab 4096: compile
 * for a target with a larger vocabulary, e.g. tiny with vocabSize 4096).
 */
import { defineCircuit, type CircuitDef } from '../../src/dsl/index.ts';
import { wordFromTokens, wordNibbles } from '../../src/cpu/alu.ts';
import { mul32, mulh32, mulhsu32, mulhu32 } from '../../src/cpu/mul.ts';
import { BOS, VOCAB, operandA, operandB } from './alu-demo.ts';

export { BOS, VOCAB, operandA, operandB };

export const MUL_OPS = ['mul', 'mulh', 'mulhsu', 'mulhu'] as const;
export type MulOp = (typeof MUL_OPS)[number];

export function mulDemo(op: MulOp): CircuitDef {
  return defineCircuit({ name: `rv32-${op}`, vocab: VOCAB, bos: BOS }, (c) => {
    const a = wordFromTokens(c, 'a', operandA);
    const b = wordFromTokens(c, 'b', operandB);
    const f = op === 'mul' ? mul32 : op === 'mulh' ? mulh32 : op === 'mulhsu' ? mulhsu32 : mulhu32;
    const r = f(c, a, b);
    c.emit([c.add(...wordNibbles(c, r)).named(`${op}.out`)]);
  });
}

export default mulDemo('mul');
