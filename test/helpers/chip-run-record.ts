/** A firmware run on a shared chip that records every layer's residuals and GDN states (tests that compare two executor settings). */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chipExecutor, programOf, type ChipProgram } from '../../src/chip/run.ts';
import type { ChipModel } from '../../src/chip/loaded.ts';
import type { Executor } from '../../src/exec/executor.ts';
import type { ExecTuning } from '../../src/exec/types.ts';
import { BOS_ID, CODE_BASE, decodeToken, encodeToken } from '../../riscv/protocol.ts';
import { sharedChip } from './shared-chips.ts';

/** The chip-test shape these runs use. */
export const RECORD_SHAPE = { codeBytes: 4096, memBytes: 32 * 1024 };

/** Every layer's residuals and GDN states at every position, as bit patterns (a hash per array). */
export function layerRecorder(ex: Executor): string[] {
  const rec: string[] = [];
  const hash = (a: Float32Array): string => {
    const u = new Uint32Array(a.buffer, a.byteOffset, a.length);
    let h = 0x811c9dc5;
    for (let i = 0; i < u.length; i++) h = Math.imul(h ^ u[i]!, 0x01000193);
    return (h >>> 0).toString(16);
  };
  ex.addHook((ev) => {
    rec.push(`${ev.layer}@${ev.position} ${hash(ev.residualIn)} ${hash(ev.residualMid)} ${hash(ev.residualOut)} ${(ev.gdnState ?? []).map(hash).join(',')}`);
  });
  return rec;
}

/** The firmware `name` (fixtures/firmware) on the shared chip-test chip of RECORD_SHAPE, and its chip model. */
export async function recordedProgram(name: string): Promise<{ model: ChipModel; prog: ChipProgram }> {
  const model = await sharedChip({ target: 'chip-test', ...RECORD_SHAPE });
  const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
  const prog = programOf(fs.readFileSync(path.join(root, 'fixtures', 'firmware', `${name}.elf`)), RECORD_SHAPE);
  return { model, prog };
}

/**
 * A fresh sparse f32 executor with `tuning` decoding the program greedily from [BOS, J(entry)]
 * for up to `tokens` tokens (to HALT), every layer recorded: the ids, the record and the executor.
 */
export function recordedRun(
  model: ChipModel, prog: ChipProgram, tuning: ExecTuning, tokens: number,
): { ids: number[]; rec: string[]; ex: Executor } {
  const ex = chipExecutor(model, prog, { path: 'sparse', profile: 'f32', order: { kind: 'sequential' }, tuning });
  const rec = layerRecorder(ex);
  ex.prime([BOS_ID]);
  const ids = [ex.decodeArgmax(encodeToken({ kind: 'J', w: (prog.entry - CODE_BASE) / 4 }))];
  for (let i = 0; i < tokens && decodeToken(ids[ids.length - 1]!).kind !== 'HALT'; i++) ids.push(ex.decodeArgmax(ids[ids.length - 1]!));
  return { ids, rec, ex };
}
