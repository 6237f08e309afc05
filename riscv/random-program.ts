/**
 * Random straight-line RV32IM+Zba programs (and the chip's bn.mac) for differential tests of the chip (fast-check
 * arbitraries): registers initialised from the generator, then ALU, shift, LUI, MUL/DIV and loads
 * and stores of every width at any offset in the 40 bytes below sp (word-crossing accesses
 * included), then exit with the low byte of the xor of the registers. Assembled by riscv/asm.ts.
 */
import fc from 'fast-check';

const REGS = ['t0', 't1', 't2', 'a0', 'a1', 'a2'];
const R_OPS = ['add', 'sub', 'sll', 'slt', 'sltu', 'xor', 'srl', 'sra', 'or', 'and', 'mul', 'mulh', 'mulhsu', 'mulhu',
  'div', 'divu', 'rem', 'remu', 'sh1add', 'sh2add', 'sh3add', 'bn.mac', 'bn.mac1'];

const reg = fc.constantFrom(...REGS);

/** One instruction's assembly text. */
export const randomInstruction: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(fc.constantFrom(...R_OPS), reg, reg, reg).map(([op, d, a, b]) => `${op} ${d}, ${a}, ${b}`),
  fc.tuple(fc.constantFrom('addi', 'xori', 'andi', 'slti'), reg, reg, fc.integer({ min: -2048, max: 2047 })).map(([op, d, a, i]) => `${op} ${d}, ${a}, ${i}`),
  fc.tuple(fc.constantFrom('slli', 'srai', 'srli'), reg, reg, fc.integer({ min: 0, max: 31 })).map(([op, d, a, i]) => `${op} ${d}, ${a}, ${i}`),
  fc.tuple(reg, fc.integer({ min: 0, max: 0xfffff })).map(([d, i]) => `lui ${d}, ${i}`),
  fc.tuple(fc.constantFrom('lw', 'lh', 'lhu', 'lb', 'lbu'), reg, fc.integer({ min: -40, max: -4 })).map(([op, d, o]) => `${op} ${d}, ${o}(sp)`),
  fc.tuple(fc.constantFrom('sw', 'sh', 'sb'), reg, fc.integer({ min: -40, max: -4 })).map(([op, v, o]) => `${op} ${v}, ${o}(sp)`),
);

/** A whole program's assembly text with `minLength`…`maxLength` random body instructions. */
export function randomProgram(minLength = 8, maxLength = 20): fc.Arbitrary<string> {
  return fc.tuple(fc.array(fc.integer(), { minLength: REGS.length, maxLength: REGS.length }), fc.array(randomInstruction, { minLength, maxLength }))
    .map(([init, body]) => [
      '_start:',
      ...REGS.map((r, i) => `li ${r}, ${init[i]! | 0}`), ...body,
      ...REGS.slice(1).map((r) => `xor t0, t0, ${r}`), 'andi a0, t0, 255', 'li a7, 93', 'ecall',
    ].join('\n'));
}
