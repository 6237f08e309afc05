/**
 * Building the RV32 chip (the compile side of `chipc run`, `chipc cpu` and the chip cache): the
 * chip circuit's IR (chipIr), its compile (compileChip, compileGenericChip), the run manifest and
 * the written checkpoint (runManifest, emitChip), and the runs that need the circuit itself — on
 * the IR (runOnInterpreter) and the replay that finds where the weights depart from it
 * (locateDivergence). Running a saved chip needs none of it (src/chip/run.ts): a command imports
 * this module only when it compiles, so that a run of a saved or cached chip does not load the
 * compiler, the DSL and the CPU circuit.
 */
import { buildCircuit } from '../dsl/load.ts';
import { compileCircuit, type CompileResult } from '../compile.ts';
import type { ModelConfig } from '../model/config.ts';
import { argmax } from '../exec/executor.ts';
import type { ExecOptions, LayerHookEvent } from '../exec/types.ts';
import { ChipcError } from '../util/errors.ts';
// The one import of a circuit in src/: the builder compiles the CPU (chipIr); its shape is riscv/chip-shape.ts.
import { cpuCircuit } from '../cpu/cpu.ts';
import { MEM_LAYOUT, type CpuOptions } from '../../riscv/chip-shape.ts';
import { MANIFEST_FILE, buildManifest, manifestJson } from '../emit/manifest.ts';
import { saveModel, saveModelChip, type SaveModelOptions } from '../model/save-weights.ts';
import { PROTOCOL_VERSION } from '../../riscv/protocol.ts';
import type { CircuitIR } from '../ir/types.ts';
import { FastEvaluator } from '../ir/evaluate-fast.ts';
import { comparePosition, type Mismatch } from '../verify/check.ts';
import {
  chipExecutor, chipRamContents, follow, type ChipProgram, type GoldenOptions, type RunManifest, type RunResult,
} from './run.ts';
import { genericShape, type GenericChipSpec } from './generic.ts';

/** Write the program's image into the RAMs of a fast evaluator of the chip circuit (the IR's state-file path). */
export function preloadFast(fast: FastEvaluator, prog: ChipProgram): void {
  for (const [name, rows] of chipRamContents(prog)) {
    const ram = fast.ir.rams.findIndex((r) => r.name === name);
    for (const [row, v] of rows) fast.setRamRow(ram, row, v);
  }
}

/** Compile the chip circuit with `opts` for `target`. */
export function compileChip(opts: Required<CpuOptions>, target: ModelConfig): CompileResult {
  return compileCircuit(chipIr(opts), target);
}

/**
 * Where a divergence of runOnChip starts. `tokens` are the run's tokens (RunResult.tokens: the
 * prompt and the generated tokens before the divergent one) and `position` the divergent token's
 * position, so the forward that produced it consumed tokens[position − 1]. Replays the run — the
 * same loading, the same prefill and decode calls — through the weights and, beside it, through
 * the chip circuit (FastEvaluator), and compares at that position every placed signal after every
 * sublayer with the circuit's values (verify/check.ts comparePosition). Returns the mismatches,
 * earliest sublayer first: empty when the weights agree with the circuit everywhere (then the
 * circuit itself differs from the golden trace), only `token` when the residual agrees but the LM
 * head picks another token.
 */
export function locateDivergence(
  res: CompileResult, prog: ChipProgram, tokens: readonly number[], position: number,
  opts: ExecOptions & { load?: 'state' | 'prompt' },
): Mismatch[] {
  const target = position - 1;
  if (!Number.isInteger(target) || target < 0 || target >= tokens.length) {
    throw new ChipcError('chip.locate', `position ${position} is outside the run's ${tokens.length} tokens`);
  }
  const fast = new FastEvaluator(res.ir);
  if (opts.load !== 'prompt') preloadFast(fast, prog);
  let ref = fast.stepResult(tokens[0]!);
  for (let i = 1; i <= target; i++) {
    if (i === target) ref = fast.stepResult(tokens[i]!);
    else fast.step(tokens[i]!);
  }
  const ex = chipExecutor(res, prog, opts);
  const afterSub: Float32Array[] = [];
  const hook = (ev: LayerHookEvent) => {
    if (ev.position !== target) return;
    if (ev.layer === 0) afterSub[0] = ev.residualIn.slice();
    afterSub[2 * ev.layer + 1] = ev.residualMid.slice();
    afterSub[2 * ev.layer + 2] = ev.residualOut.slice();
  };
  const prefillLen = opts.load === 'prompt' ? 1 : Math.min(2, tokens.length);
  if (target < prefillLen) ex.addHook(hook, { gdnStates: false });
  const logits = ex.prefill(tokens.slice(0, prefillLen), { allLogits: true });
  let got = target < prefillLen ? argmax(logits[target]!) : -1;
  for (let i = prefillLen; i <= target; i++) {
    if (i === target) ex.addHook(hook, { gdnStates: false });
    got = ex.decodeArgmax(tokens[i]!);
  }
  return comparePosition(res, ref.values, ref.emitted, afterSub, got, target).mismatches;
}

/**
 * The same run on the chip circuit without weights (the oracle one link up the chain), any RAM
 * size, in the FastEvaluator (the IR compiled to JavaScript, equal to the IR interpreter node for
 * node: test/ir-fast.test.ts).
 */
export function runOnInterpreter(prog: ChipProgram, opts: GoldenOptions): RunResult {
  const ir = chipIr(prog.chip);
  const interp = fastEvaluators.get(ir) ?? new FastEvaluator(ir);
  fastEvaluators.set(ir, interp);
  interp.reset();
  if (opts.load !== 'prompt') preloadFast(interp, prog);
  const prompt = opts.load === 'prompt' ? prog.loader : prog.start;
  const t0 = performance.now();
  let next = 0;
  for (const t of prompt) next = interp.step(t)!;
  return follow(prog, prompt, next, (t) => interp.step(t)!, opts, t0);
}

// Building the chip circuit takes seconds (its token fields span 248,197 ids): keep the last few.
const irCache = new Map<string, CircuitIR>();
const fastEvaluators = new WeakMap<CircuitIR, FastEvaluator>();

/** The chip circuit's IR for these options (memoised: the 4 most recent option sets). */
export function chipIr(opts: Required<CpuOptions>): CircuitIR {
  const key = JSON.stringify([opts.codeWords, opts.memWords, opts.memBankWords]);
  let ir = irCache.get(key);
  if (ir === undefined) {
    ir = buildCircuit(cpuCircuit(opts), 'src/cpu/cpu.ts');
    if (irCache.size >= 4) irCache.delete(irCache.keys().next().value!);
    irCache.set(key, ir);
  }
  return ir;
}

/** The manifest of a compiled RV32 chip (RunManifest, chip/run.ts): the compile manifest, its shape, `generic` and its token protocol. */
export function runManifest(res: CompileResult, shape: Required<CpuOptions>, targetName: string): RunManifest {
  return {
    ...buildManifest(res, targetName),
    rv32: { codeWords: shape.codeWords, memWords: shape.memWords, memBankWords: shape.memBankWords, memLayout: MEM_LAYOUT, generic: true, protocol: PROTOCOL_VERSION },
  };
}

/**
 * Write a compiled RV32 chip of shape `shape` with its run manifest (`chipc cpu -o OUT`, `chipc
 * run --emit OUT`): a checkpoint directory, or a `.chip` file when OUT ends in `.chip` (straight
 * from the weights' sources). Refuses an existing OUT unless `overwrite`.
 */
export function emitChip(
  out: string, res: CompileResult, shape: Required<CpuOptions>, targetName: string,
  opts: { dtype: 'F32' | 'BF16'; overwrite?: boolean; onProgress?: SaveModelOptions['onProgress']; fileHashes?: boolean; holes?: boolean },
): string {
  const extraFiles = { [MANIFEST_FILE]: manifestJson(runManifest(res, shape, targetName)) };
  if (!out.endsWith('.chip')) {
    saveModel(out, res.weights, { dtype: opts.dtype, overwrite: opts.overwrite, extraFiles, onProgress: opts.onProgress, holes: opts.holes });
    return out;
  }
  // straight from the weights' sources: no dense form written (docs/chip-file.md)
  saveModelChip(out, res.weights, { dtype: opts.dtype, overwrite: opts.overwrite, extraFiles, onProgress: opts.onProgress, fileHashes: opts.fileHashes });
  return out;
}

/** Compile the generic chip of a spec. */
export function compileGenericChip(spec: GenericChipSpec): CompileResult {
  return compileCircuit(chipIr(genericShape(spec)), spec.target, {
    attentionLayer: spec.attentionLayer === true, ...(spec.hidden !== undefined ? { hidden: spec.hidden } : {}),
  });
}
