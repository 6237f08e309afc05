/**
 * The oracle link between the IR interpreter and the compiled weights: run both on the same
 * tokens and compare, at every position, the emitted token and every signal placed in the
 * residual stream at every layer boundary where it is present — as float32 bit patterns (the
 * residual must hold exactly the integer the interpreter computed). Used by the example tests and
 * by `chipc check`.
 */
import type { CompileResult, SignalPlacement } from '../compile.ts';
import { Executor, argmax } from '../exec/executor.ts';
import type { ExecOptions } from '../exec/types.ts';
import { Interpreter } from '../ir/interpret.ts';

export interface Mismatch {
  position: number;
  /** 'token' for the emitted token, else the signal's display name. */
  what: string;
  /** Sublayer after which the residual was read (−1: the embedding; 2L: layer L's mixer; 2L + 1: its FFN; 2·layers: the LM head). */
  sublayer: number;
  expected: number;
  got: number;
}

export interface CheckResult {
  positions: number;
  tokens: number[];
  emitted: number[];
  signalsCompared: number;
  mismatches: Mismatch[];
}

export interface CheckOptions extends ExecOptions {
  /** 'teacher': feed `tokens` as given; 'generate': feed tokens[0..prompt) then the emitted tokens. */
  mode?: 'teacher' | 'generate';
  /** Generation: how many tokens form the prompt (default 1) and how many positions in total. */
  prompt?: number;
  length?: number;
  /** Tokens fed as one prefill (chunked GDN kernel); default 1. */
  prefill?: number;
  /** Stop collecting after this many mismatches (default 20). */
  maxMismatches?: number;
  /** Prepare both sides before the first token (e.g. load RAM contents: a state file). */
  setup?: (executor: Executor, interpreter: Interpreter) => void;
}

function expectedValue(res: CompileResult, s: SignalPlacement, v: number, position: number): number {
  switch (s.encoding) {
    // A delay's dims hold the source from its tap (index = tap offset d ≥ 1; 0 in older IR = 1):
    // 0 before position d, then the source at t − d, which is the delay node's own value there.
    case 'delayed':
      return position < Math.max(1, s.index) ? 0 : v - (s.base ?? 0);
    case 'delayedBit':
      return position < (s.tap ?? 1) ? 0 : Math.floor((v - (s.base ?? 0)) / 2 ** s.index) % 2;
    case 'valid':
      return position < (s.tap ?? Math.max(1, s.index)) ? 0 : 1;
    case 'scalar':
      return v;
    case 'bits':
      return Math.floor((v - (s.base ?? 0)) / 2 ** s.index) % 2;
    case 'onehot':
      return v === res.ir.nodes[s.node]!.range.lo + s.index ? 1 : 0;
    case 'residue':
      return (((v - (s.base ?? 0)) % s.modulus!) + s.modulus!) % s.modulus! === s.index ? 1 : 0;
    default:
      throw new Error(`internal: encoding ${s.encoding}`);
  }
}

const f32Scratch = new Float32Array(1);
const u32OfF32 = new Uint32Array(f32Scratch.buffer);
/** The float32 bit pattern of x (x rounded to float32 first), from one shared scratch word. */
function f32bits(x: number): number {
  f32Scratch[0] = x;
  return u32OfF32[0]!;
}

/** Is the placed signal in the residual after sublayer s (whole, and not yet cleared)? */
function presentAfter(sig: SignalPlacement, s: number): boolean {
  return (sig.ready ?? sig.birth) <= s && (!sig.cleared || s < sig.end);
}

export function checkCompiled(res: CompileResult, tokensIn: ArrayLike<number>, opts: CheckOptions = {}): CheckResult {
  const tokens = Array.from(tokensIn);
  const mode = opts.mode ?? 'teacher';
  const maxMis = opts.maxMismatches ?? 20;
  const total = mode === 'teacher' ? tokens.length : Math.max(opts.length ?? tokens.length, 1);
  const prompt = mode === 'teacher' ? tokens.length : Math.min(tokens.length, Math.max(1, opts.prompt ?? 1));
  const prefillN = Math.max(1, Math.min(opts.prefill ?? 1, prompt, total));
  const ex = new Executor(res.weights, opts);
  const interp = new Interpreter(res.ir);
  opts.setup?.(ex, interp);
  // afterSub[pos][s + 1]: the residual after sublayer s (s = −1: the embedding).
  const afterSub: Float32Array[][] = [];
  ex.addHook((ev) => {
    const row = (afterSub[ev.position] ??= []);
    if (ev.layer === 0) row[0] = ev.residualIn.slice();
    row[2 * ev.layer + 1] = ev.residualMid.slice();
    row[2 * ev.layer + 2] = ev.residualOut.slice();
  }, { gdnStates: false });
  const mismatches: Mismatch[] = [];
  const fed: number[] = [];
  const emitted: number[] = [];
  const refEmitted: (number | null)[] = [];
  let compared = 0;
  let prefillLogits: Float32Array[] = [];
  for (let pos = 0; pos < total && mismatches.length < maxMis; pos++) {
    // The golden trace drives both sides: after the prompt, feed the interpreter's emitted token.
    const tok = pos < prompt ? tokens[pos]! : (refEmitted[pos - 1] ?? 0);
    fed.push(tok);
    const ref = interp.step(tok);
    refEmitted.push(ref.emitted);
    if (pos === 0) prefillLogits = ex.prefill(tokens.slice(0, prefillN), { allLogits: true });
    // decodeArgmax is exactly argmax(decode(tok)), without a fresh array of every logit
    const got = pos < prefillN ? argmax(prefillLogits[pos]!) : ex.decodeArgmax(tok);
    emitted.push(got);
    const cmp = comparePosition(res, ref.values, ref.emitted, afterSub[pos]!, got, pos);
    compared += cmp.compared;
    mismatches.push(...cmp.mismatches.slice(0, maxMis - mismatches.length));
  }
  return { positions: fed.length, tokens: fed, emitted, signalsCompared: compared, mismatches };
}

/**
 * One position's comparison: the emitted token and every placed signal present after each
 * sublayer, the residual after sublayer s being afterSub[s + 1] (s = −1: the embedding), against
 * the IR's node values at that position. Mismatches come earliest sublayer first (where the
 * residual first differs); the emitted token counts as read after the last sublayer.
 */
export function comparePosition(
  res: CompileResult, values: ArrayLike<number>, refEmitted: number | null, afterSub: Float32Array[], got: number, pos: number,
): { compared: number; mismatches: Mismatch[] } {
  const L = res.weights.config.numLayers;
  const here: Mismatch[] = [];
  let compared = 0;
  if (refEmitted !== null && got !== refEmitted) {
    here.push({ position: pos, what: 'token', sublayer: 2 * L, expected: refEmitted, got });
  }
  for (const sig of res.signals) {
    if (sig.node < 0) continue; // internal temporaries (the is-BOS flag): no IR value to compare
    const want = expectedValue(res, sig, values[sig.node]!, pos);
    const dim = res.slotDim(sig.slot);
    for (let s = -1; s < 2 * L; s++) {
      if (!presentAfter(sig, s)) continue;
      const x = afterSub[s + 1]![dim]!;
      compared++;
      if (f32bits(x) !== f32bits(want)) here.push({ position: pos, what: sig.name, sublayer: s, expected: want, got: x });
    }
  }
  here.sort((a, b) => a.sublayer - b.sublayer);
  return { compared, mismatches: here };
}
