/*
 * The chip's bignum unit as C functions, for the firmware built for the chip (CHIPC_BN_UNIT;
 * docs/bignum-unit.md). Included by the bignum library and the interpreter.
 */
#ifndef CHIPC_BN_UNIT_H
#define CHIPC_BN_UNIT_H

#include <stdint.h>

#ifdef CHIPC_BN_UNIT
/*
 * The chip's bignum unit (docs/bignum-unit.md): bn.mac rd, rs1, rs2 (custom-0) computes
 * t = rs1 * rs2 + rd + C0 over unsigned 32-bit values, rd = t mod 2^32, C0 = t >> 32, where C0 is
 * one of the unit's two carry registers; bn.mac1 (funct7 1) does the same with C1. volatile: the
 * carries are state the compiler cannot see, so the order stays.
 */
static inline uint32_t bn_mac(uint32_t acc, uint32_t a, uint32_t b) {
  __asm__ volatile(".insn r 0x0b, 0, 0, %0, %z1, %z2" : "+r"(acc) : "rJ"(a), "rJ"(b));
  return acc;
}
static inline uint32_t bn_mac1(uint32_t acc, uint32_t a, uint32_t b) {
  __asm__ volatile(".insn r 0x0b, 0, 1, %0, %z1, %z2" : "+r"(acc) : "rJ"(a), "rJ"(b));
  return acc;
}
/* C0 = 0 (t = C0, so the new carry is 0); likewise C1. */
static inline void bn_carry_clear(void) { __asm__ volatile(".insn r 0x0b, 0, 0, zero, zero, zero"); }
static inline void bn_carry_clear1(void) { __asm__ volatile(".insn r 0x0b, 0, 1, zero, zero, zero"); }
/* acc + C0 (mod 2^32), and C0 = 0 after it (for C0 + acc < 2^32, as everywhere below); likewise C1. */
static inline uint32_t bn_carry_take(uint32_t acc) { return bn_mac(acc, 0, 0); }
static inline uint32_t bn_carry_take1(uint32_t acc) { return bn_mac1(acc, 0, 0); }
#endif

#endif
