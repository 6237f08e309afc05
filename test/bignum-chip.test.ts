/**
 * The bignum service through the compiled weights (chip-test) and the IR: a few operations on
 * multi-limb operands, every generated token equal to the golden stream, the results read back
 * from the chip's data RAM equal to BigInt's. (Long operands: bench/bignum-chip.ts.)
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { BignumService, BIGNUM_OPS, operandOf, valueOf, type BignumOp } from '../src/bignum/service.ts';
import { ChipService } from '../src/chip/service.ts';
import { programOf, type ChipProgram } from '../src/chip/run.ts';
import { compileChip } from '../src/chip/build.ts';
import type { CompileResult } from '../src/compile.ts';
import { resolveTarget } from '../src/model/targets.ts';

const ELF = fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'firmware', 'bignum.elf'));
const MEM = 32 * 1024;

/** C-style truncating division of BigInts (BigInt's / and % already truncate toward zero). */
const CASES: { op: BignumOp; a: bigint; b: bigint; want: bigint[] }[] = (() => {
  const a = (1n << 95n) + 0x1234_5678_9abc_def0n;
  const b = -((1n << 64n) - 12345n);
  const c = (3n ** 60n) * 7n;
  return [
    { op: 'mul', a, b, want: [a * b] },
    { op: 'divmod', a: -c, b: 0xfedc_ba98n, want: [-c / 0xfedc_ba98n, -c % 0xfedc_ba98n] },
    { op: 'add', a: b, b: c, want: [b + c] },
    { op: 'udivmod', a: c * c, b: c + 1n, want: [(c * c) / (c + 1n), (c * c) % (c + 1n)] },
  ];
})();

function readNumber(read32: (address: number) => number, area: number, index: number): { value: bigint; len: number } {
  const word = (i: number) => read32(area + 4 * i);
  const len = word(index + 1);
  return { value: valueOf(word(index), Array.from({ length: len }, (_, k) => word(index + 2 + k))), len };
}

describe('bignum through the chip (chip-test)', () => {
  let prog: ChipProgram;
  let res: CompileResult;
  beforeAll(() => {
    prog = programOf(ELF, MEM);
    res = compileChip(prog.chip, resolveTarget('chip-test').config);
  }, 120_000);

  for (const engine of ['weights', 'ir'] as const) {
    it(`${engine}: every call generates the golden stream and leaves BigInt's results in RAM`, () => {
      const svc = BignumService.load(ELF, MEM, prog.codeBytes);
      const chip = new ChipService(res, prog, { engine });
            // The weights run the two signed cases (CI time); the IR runs them all.
      for (const { op, a, b, want } of engine === 'weights' ? CASES.slice(0, 2) : CASES) {
        const call = svc.emu.call(svc.requestWrites(BIGNUM_OPS[op], operandOf(a), operandOf(b)), { trace: true });
        expect(call.exitCode).toBe(0);
        const r = chip.call(call.prompt, { golden: call.trace!.tokens });
        expect(r.divergence, op).toBeNull();
        expect(r.exitCode).toBe(0);
        const mem = chip.memoryReader();
        const first = readNumber(mem, svc.area, 2);
        expect(first.value, op).toBe(want[0]);
        if (want.length === 2) expect(readNumber(mem, svc.area, 4 + first.len).value, op).toBe(want[1]);
      }
      // Division by zero: exit code 1 through the weights too.
      const call = svc.emu.call(svc.requestWrites(BIGNUM_OPS.divmod, operandOf(5n), operandOf(0n)), { trace: true });
      expect(call.exitCode).toBe(1);
      const r = chip.call(call.prompt, { golden: call.trace!.tokens });
      expect(r.divergence).toBeNull();
      expect(r.exitCode).toBe(1);
    }, 300_000);
  }
});
