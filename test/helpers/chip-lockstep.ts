/**
 * A firmware run on a shared chip under two executor settings in lockstep, every layer's
 * residuals and GDN states compared bit for bit at every position (tests of decode shortcuts
 * that must not change a bit).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chipExecutor, programOf, type ChipProgram } from '../../src/chip/run.ts';
import type { ChipModel } from '../../src/chip/loaded.ts';
import type { Executor } from '../../src/exec/executor.ts';
import type { ExecTuning, LayerHookEvent } from '../../src/exec/types.ts';
import { BOS_ID, CODE_BASE, decodeToken, encodeToken } from '../../riscv/protocol.ts';
import { sharedChip } from './shared-chips.ts';
import { turn } from './turn.ts';

/** The chip-test shape these runs use. */
const LOCKSTEP_SHAPE = { codeBytes: 4096, memBytes: 32 * 1024 };

/** The firmware `name` (fixtures/firmware) on the shared chip-test chip of LOCKSTEP_SHAPE, and its chip model. */
export async function lockstepProgram(name: string): Promise<{ model: ChipModel; prog: ChipProgram }> {
  const model = await sharedChip({ target: 'chip-test', ...LOCKSTEP_SHAPE });
  const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
  const prog = programOf(fs.readFileSync(path.join(root, 'fixtures', 'firmware', `${name}.elf`)), LOCKSTEP_SHAPE);
  return { model, prog };
}

/** One side of a lockstep run: its token ids and its executor. */
export interface LockstepSide { ids: number[]; ex: Executor }

/** What a lockstep run compared: the layer events, the GDN state arrays, and the first difference (null: none). */
export interface LockstepResult { a: LockstepSide; b: LockstepSide; events: number; states: number; mismatch: string | null }

/** Whether two float arrays hold the same bit patterns (+0 ≠ −0, NaN payloads told apart). */
function sameBits(x: Float32Array, y: Float32Array): boolean {
  return x.length === y.length
    && Buffer.from(x.buffer, x.byteOffset, x.byteLength).equals(Buffer.from(y.buffer, y.byteOffset, y.byteLength));
}

/** The first difference between two layer events' residuals, or null. */
function eventDifference(x: LayerHookEvent, y: LayerHookEvent): string | null {
  const at = `layer ${x.layer} @ position ${x.position}`;
  if (x.layer !== y.layer || x.position !== y.position) return `${at}: the other run is at layer ${y.layer} @ position ${y.position}`;
  for (const k of ['residualIn', 'residualMid', 'residualOut'] as const) if (!sameBits(x[k], y[k])) return `${at}: ${k} differs`;
  return null;
}

/** The first GDN state (layer, value head) whose live bits differ between two executors, or null; counts the states compared. */
function stateDifference(a: Executor, b: Executor, layers: number[], token: number, count: { states: number }): string | null {
  for (const l of layers) {
    const sa = a.gdnCacheOf(l).S, sb = b.gdnCacheOf(l).S;
    if (sa.length !== sb.length) return `token ${token}: layer ${l} has ${sa.length} GDN states against ${sb.length}`;
    for (let h = 0; h < sa.length; h++) {
      count.states++;
      if (!sameBits(sa[h]!, sb[h]!)) return `token ${token}: the GDN state of layer ${l}, value head ${h}, differs`;
    }
  }
  return null;
}

/**
 * Fresh sparse f32 executors with tunings `ta` and `tb` decode the program greedily from
 * [BOS, J(entry)] token by token, side by side, for up to `tokens` tokens (to HALT); after each
 * token every layer's residuals (hooks without state copies) and every GDN layer's live recurrent
 * states (each layer's S is written only by its own step, so after the token it is the state that
 * step left) of one are compared with the other's. Async: it yields to the event loop
 * every few tokens, as a test worker must answer its runner within a minute and these runs take
 * tens of seconds on a loaded machine.
 */
export async function lockstepChipRun(
  model: ChipModel, prog: ChipProgram, ta: ExecTuning, tb: ExecTuning, tokens: number,
): Promise<LockstepResult> {
  const open = (tuning: ExecTuning): LockstepSide & { events: LayerHookEvent[] } => {
    const ex = chipExecutor(model, prog, { path: 'sparse', profile: 'f32', order: { kind: 'sequential' }, tuning });
    const events: LayerHookEvent[] = [];
    ex.addHook((ev) => { events.push(ev); }, { gdnStates: false });
    ex.prime([BOS_ID]);
    return { ex, events, ids: [] };
  };
  const a = open(ta), b = open(tb);
  const rec: LockstepResult = { a: { ids: a.ids, ex: a.ex }, b: { ids: b.ids, ex: b.ex }, events: 0, states: 0, mismatch: null };
  const gdnLayers = model.weights.config.layerTypes.flatMap((t, l) => (t === 'linear_attention' ? [l] : []));
  const first = encodeToken({ kind: 'J', w: (prog.entry - CODE_BASE) / 4 });
  for (let i = 0; i <= tokens; i++) {
    const ia = a.ids.length ? a.ids[a.ids.length - 1]! : first;
    const ib = b.ids.length ? b.ids[b.ids.length - 1]! : first;
    if (i > 0 && (decodeToken(ia).kind === 'HALT' || decodeToken(ib).kind === 'HALT')) break;
    a.ids.push(a.ex.decodeArgmax(ia));
    b.ids.push(b.ex.decodeArgmax(ib));
    if (a.events.length !== b.events.length) rec.mismatch ??= `token ${i}: ${a.events.length} layer events against ${b.events.length}`;
    for (let e = 0; e < Math.min(a.events.length, b.events.length); e++) {
      rec.mismatch ??= eventDifference(a.events[e]!, b.events[e]!);
      rec.events++;
    }
    rec.mismatch ??= stateDifference(a.ex, b.ex, gdnLayers, i, rec);
    a.events.length = 0;
    b.events.length = 0;
    if (i % 8 === 7) await turn();
  }
  return rec;
}
