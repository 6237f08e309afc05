/**
 * ISA test group `load_store`: LB/LH/LW/LBU/LHU with sign and zero extension, aligned and
 * misaligned (including halfwords and words that cross a word boundary), positive and negative
 * offsets, a load into x0; SB/SH/SW aligned and misaligned, checked by reading back the
 * surrounding words so that bytes outside the store must be untouched.
 *
 * Expected values come from a byte-array model of the data (ref.ts readLE/writeLE), not from
 * the emulator. Misaligned accesses must simply work (no trap), as on the golden emulator and
 * qemu-user.
 */
import type { Check, TestGroup } from './program.ts';
import { hx, readLE, sext, writeLE } from './ref.ts';

/** Initialised load data: sign bits set and clear in every byte position. */
const LOAD_DATA = [
  0x00, 0x80, 0x7f, 0xff, 0x01, 0x23, 0x45, 0x67,
  0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0x80, 0x7f,
];
/** The scratch words are reset to these bytes before every store check. */
const SCRATCH_INIT = [0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb];
const STORE_VALUE = 0xdeadbeefn;

const WIDTH: Record<string, number> = { lb: 1, lbu: 1, lh: 2, lhu: 2, lw: 4, sb: 1, sh: 2, sw: 4 };
const SIGNED = new Set(['lb', 'lh', 'lw']);

/** Value loaded by `op` from LOAD_DATA at byte offset `off`. */
function loaded(op: string, mem: readonly number[], off: number): bigint {
  const raw = readLE(mem, off, WIDTH[op]);
  return SIGNED.has(op) ? sext(raw, 8 * WIDTH[op]) : raw;
}

function loadCheck(op: string, off: number): Check {
  return {
    desc: `${op} at ld_data+${off}${off % WIDTH[op] ? ' (misaligned)' : ''}`,
    asm: () => ['la a1, ld_data', `${op} a3, ${off}(a1)`],
    expected: loaded(op, LOAD_DATA, off),
  };
}

/** Reset the scratch words, run `stores`, then read the word at `readOff` into a3. */
function scratchAsm(stores: string[], readOp: string, readOff: number): string[] {
  return [
    'la a1, scratch',
    `li a2, ${hx(readLE(SCRATCH_INIT, 0, 4))}`, 'sw a2, 0(a1)',
    `li a2, ${hx(readLE(SCRATCH_INIT, 4, 4))}`, 'sw a2, 4(a1)',
    `li a2, ${hx(readLE(SCRATCH_INIT, 8, 4))}`, 'sw a2, 8(a1)',
    ...stores,
    `${readOp} a3, ${readOff}(a1)`,
  ];
}

function storeCheck(op: string, off: number, readOff: number): Check {
  const mem = [...SCRATCH_INIT];
  writeLE(mem, off, WIDTH[op], STORE_VALUE);
  return {
    desc: `${op} ${hx(STORE_VALUE)} at scratch+${off}${off % WIDTH[op] ? ' (misaligned)' : ''}, read word scratch+${readOff}`,
    asm: () => scratchAsm([`li a2, ${hx(STORE_VALUE)}`, `${op} a2, ${off}(a1)`], 'lw', readOff),
    expected: readLE(mem, readOff, 4),
  };
}

function checks(): Check[] {
  const out: Check[] = [];
  for (const op of ['lb', 'lbu']) for (const off of [0, 1, 2, 3, 8, 14]) out.push(loadCheck(op, off));
  for (const op of ['lh', 'lhu']) for (const off of [0, 2, 12, 1, 3, 7]) out.push(loadCheck(op, off));
  for (const off of [0, 4, 12, 1, 2, 3, 9]) out.push(loadCheck('lw', off));
  // Negative offsets from a base past the data.
  for (const [op, off] of [['lw', -16], ['lb', -3], ['lhu', -5]] as const) {
    out.push({
      desc: `${op} at ld_data+16${off} (negative offset)`,
      asm: () => ['la a1, ld_data+16', `${op} a3, ${off}(a1)`],
      expected: loaded(op, LOAD_DATA, 16 + off),
    });
  }
  out.push({ desc: 'lw into x0 is discarded', asm: () => ['la a1, ld_data', 'lw zero, 4(a1)', 'mv a3, zero'], expected: 0n });

  for (const off of [0, 1, 2, 3]) out.push(storeCheck('sb', off, 0));
  for (const off of [0, 2, 1]) out.push(storeCheck('sh', off, 0));
  out.push(storeCheck('sh', 3, 0), storeCheck('sh', 3, 4));
  out.push(storeCheck('sw', 0, 0), storeCheck('sw', 4, 4));
  for (const off of [1, 2, 3]) out.push(storeCheck('sw', off, 0), storeCheck('sw', off, 4));
  // Misaligned store read back with a misaligned load at the same address.
  out.push({
    desc: 'sw at scratch+5 then lw at scratch+5',
    asm: () => scratchAsm([`li a2, ${hx(STORE_VALUE)}`, 'sw a2, 5(a1)'], 'lw', 5),
    expected: STORE_VALUE,
  });
  // Store then load back with sign / zero extension.
  for (const [st, ld] of [['sh', 'lh'], ['sh', 'lhu'], ['sb', 'lb'], ['sb', 'lbu']] as const) {
    const v = 0x12348081n;
    const mem = [...SCRATCH_INIT];
    writeLE(mem, 6, WIDTH[st], v);
    out.push({
      desc: `${st} ${hx(v)} at scratch+6, ${ld} back`,
      asm: () => scratchAsm([`li a2, ${hx(v)}`, `${st} a2, 6(a1)`], ld, 6),
      expected: loaded(ld, mem, 6),
    });
  }
  // Negative store offset.
  {
    const mem = [...SCRATCH_INIT];
    writeLE(mem, 10, 2, STORE_VALUE);
    out.push({
      desc: 'sh at scratch+12-2 (negative offset), read word scratch+8',
      asm: () => scratchAsm([`li a2, ${hx(STORE_VALUE)}`, 'addi a4, a1, 12', 'sh a2, -2(a4)'], 'lw', 8),
      expected: readLE(mem, 8, 4),
    });
  }
  return out;
}

export const loadStoreGroup: TestGroup = {
  name: 'load_store',
  summary: 'lb/lh/lw/lbu/lhu and sb/sh/sw: sign/zero extension, misaligned and word-crossing accesses, negative offsets',
  covers: ['lb', 'lh', 'lw', 'lbu', 'lhu', 'sb', 'sh', 'sw'],
  checks: checks(),
  data: [
    `ld_data: .byte ${LOAD_DATA.map((b) => `0x${b.toString(16)}`).join(', ')}`,
    '.balign 16',
    'scratch: .zero 16',
  ],
};
