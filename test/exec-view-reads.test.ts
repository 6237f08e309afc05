/**
 * The decode's calls into its wasm kernels read no typed array's `buffer` or `byteOffset` (round 36,
 * docs/executor.md): in V8 both are builtin calls that the optimising compiler does not inline
 * (bench/view-getters.ts), and the decode made about 1,800 of them a token while its kernels took
 * their arrays' addresses from the views at every call. The addresses are now kept with the arrays'
 * owners or in memos of the views a call site passes (wasm-heap.ts DeltaAt, ViewAt), so after the
 * first steps (which make the memos and the plans) a decode step reads them only where something
 * new meets it. Counted by wrapping the two getters around decode steps of the chip; a count, not
 * a time, so the same on any machine.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { chipExecutor, programOf } from '../src/chip/run.ts';
import { BOS_ID, CODE_BASE, decodeToken, encodeToken } from '../riscv/protocol.ts';
import { sharedChip } from './helpers/shared-chips.ts';

/** Runs `f` with every read of a typed array's `buffer` and `byteOffset` counted; restores the getters. */
function countViewReads(f: () => void): { buffer: number; byteOffset: number } {
  const proto = Object.getPrototypeOf(Uint8Array.prototype) as object;
  const counts = { buffer: 0, byteOffset: 0 };
  const saved = (['buffer', 'byteOffset'] as const).map((name) => {
    const d = Object.getOwnPropertyDescriptor(proto, name)!;
    const get = d.get!;
    Object.defineProperty(proto, name, { ...d, get(this: unknown) { counts[name]++; return get.call(this); } });
    return [name, d] as const;
  });
  try {
    f();
  } finally {
    for (const [name, d] of saved) Object.defineProperty(proto, name, d);
  }
  return counts;
}

describe('the decode reads no view offsets at its kernel calls', () => {
  it('a decode step of the chip (chip-test, hello.elf, f32 with the wasm memory) reads buffer and byteOffset fewer than 4 times on average', async () => {
    const SHAPE = { codeBytes: 4096, memBytes: 32 * 1024 };
    const model = await sharedChip({ target: 'chip-test', ...SHAPE });
    const prog = programOf(fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'firmware', 'hello.elf')), SHAPE);
    const ex = chipExecutor(model, prog, { path: 'sparse', profile: 'f32', order: { kind: 'sequential' } });
    ex.prime([BOS_ID]);
    let last = ex.decodeArgmax(encodeToken({ kind: 'J', w: (prog.entry - CODE_BASE) / 4 }));
    // the first steps make the plans, kernels and memos (their reads are once per array)
    for (let i = 0; i < 60; i++) last = ex.decodeArgmax(last);
    const steps = 300;
    let taken = 0;
    const counts = countViewReads(() => {
      for (; taken < steps && decodeToken(last).kind !== 'HALT'; taken++) last = ex.decodeArgmax(last);
    });
    expect(taken).toBe(steps);
    // the kernels ran: the incremental matmuls' walks and the GDN steps' dots are wasm calls
    expect(ex.stats.deltaByRole['ffn.gateUp'].kernelCalls).toBeGreaterThan(steps);
    // before round 36 a step here read them hundreds of times (every kernel call, every check)
    expect(counts.buffer / steps).toBeLessThan(4);
    expect(counts.byteOffset / steps).toBeLessThan(4);
  });
});
