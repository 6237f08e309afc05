/**
 * `chipc targets [NAME|config.json]`: the built-in model shapes, or one target in detail.
 * `chipc targets --fit CIRCUIT [NAME|config.json]`: compiles the circuit for every built-in target
 * (or the one given) and reports per target whether it fits — and if not, the resource that ran
 * out (the `fit.*` code of the compiler's ChipcError) — and what it costs.
 */
import type { Command } from 'commander';
import { describeTarget, formatTargetSummary, listTargets, resolveTarget } from '../../model/targets.ts';
import { loadCircuitFile } from '../../dsl/load.ts';
import { readIR } from '../../ir/serialize.ts';
import { compileCircuit, type CompileResult } from '../../compile.ts';
import type { CircuitIR } from '../../ir/types.ts';
import type { Matrix } from '../../model/weights.ts';
import { ChipcError } from '../../util/errors.ts';
import { EXIT_DIFFERENT, EXIT_OK, makeOut, table } from '../support/output.ts';
import type { Runner } from '../support/output.ts';
import { defaultChipSizes } from '../../chip/generic.ts';
import { fmtBytes } from '../../chip/run.ts';
import { memBankWordsFor } from '../../../riscv/chip-shape.ts';
import { summaryOf } from '../support/command-table.ts';

/** What compiling one circuit for one target gives. */
export type FitResult =
  | {
    target: string;
    fits: true;
    layers: number;
    /** Hidden size emitted, the target's own, and whether the circuit needed it widened. */
    hidden: number;
    targetHidden: number;
    widened: boolean;
    /** Vocabulary emitted and the target's own (widened when the circuit's token ids do not fit). */
    vocab: number;
    targetVocab: number;
    vocabWidened: boolean;
    slots: number;
    gdnKeyHeads: number;
    attentionHeads: number;
    ffnUnits: number;
    /** Non-zeros of the compiled layers, and of the embedding + LM head. */
    layerNonZeros: number;
    embeddingLmHeadNonZeros: number;
    nonZeros: number;
    compileMs: number;
  }
  | { target: string; fits: false; code: string; resource: string; message: string };

/** `fit.heads` → `heads`, `fit.lookup.margin` → `lookup.margin`. */
function resourceOf(code: string): string {
  return code.slice('fit.'.length);
}

function matrixNonZeros(m: Matrix): number {
  if (m.csr) {
    let n = 0;
    for (const v of m.csr.values) if (v !== 0) n++;
    return n;
  }
  let n = 0;
  for (const v of m.dense ?? []) if (v !== 0) n++;
  return n;
}

function costOf(name: string, res: CompileResult, targetHidden: number, targetVocab: number, compileMs: number): FitResult {
  const w = res.weights;
  const layerNonZeros = res.layers.reduce((s, l) => s + l.nonZeros, 0);
  const io = matrixNonZeros(w.embedTokens) + (w.config.tieWordEmbeddings || w.lmHead === w.embedTokens ? 0 : matrixNonZeros(w.lmHead));
  let normNz = 0;
  for (const v of w.norm) if (v !== 0) normNz++;
  return {
    target: name,
    fits: true,
    layers: res.layers.length,
    hidden: res.frame.hidden,
    targetHidden,
    widened: res.frame.hidden > targetHidden,
    vocab: res.weights.config.vocabSize,
    targetVocab,
    vocabWidened: res.weights.config.vocabSize > targetVocab,
    slots: res.packing.slotsUsed,
    gdnKeyHeads: res.layers.filter((l) => l.type === 'linear_attention').reduce((s, l) => s + l.heads, 0),
    attentionHeads: res.layers.filter((l) => l.type === 'full_attention').reduce((s, l) => s + l.heads, 0),
    ffnUnits: res.layers.reduce((s, l) => s + l.units, 0),
    layerNonZeros,
    embeddingLmHeadNonZeros: io,
    nonZeros: layerNonZeros + io + normNz,
    compileMs: Math.round(compileMs),
  };
}

/**
 * Compiles `ir` for target `name` (a built-in name or a config.json path). A ChipcError whose code
 * starts with `fit.` is a "does not fit" answer; any other error propagates (a broken circuit or
 * target is not a fit question).
 */
export function fitCircuit(ir: CircuitIR, name: string): FitResult {
  const t = resolveTarget(name);
  const t0 = performance.now();
  try {
    const res = compileCircuit(ir, t.config);
    return costOf(t.name, res, t.config.hiddenSize, t.config.vocabSize, performance.now() - t0);
  } catch (e) {
    if (e instanceof ChipcError && e.code.startsWith('fit.')) {
      return { target: t.name, fits: false, code: e.code, resource: resourceOf(e.code), message: e.message };
    }
    throw e;
  }
}

export function registerTargets(program: Command, run: Runner): void {
  program
    .command('targets')
    .description(summaryOf('targets'))
    .argument('[target]', 'a built-in target name or a config.json path')
    .option('--fit <circuit>', 'compile this circuit (.ts or .chip-ir) for every built-in target (or the one given)')
    .option('--json', 'print one JSON document')
    .action((target: string | undefined, opts: { json?: boolean; fit?: string }) =>
      run(async () => {
        const out = makeOut(Boolean(opts.json));
        if (opts.fit !== undefined) {
          const file = opts.fit;
          // Resolve every target first, so a bad name fails before any slow compile.
          const names = target === undefined ? listTargets() : [resolveTarget(target).name];
          // A circuit file is built once per target (its `retarget` form, when it has one).
          const irFor = async (n: string) => (file.endsWith('.chip-ir') ? readIR(file) : loadCircuitFile(file, resolveTarget(n).config));
          const results: FitResult[] = [];
          let ir: CircuitIR | null = null;
          for (const n of names) {
            ir = await irFor(n);
            results.push(fitCircuit(ir, n));
          }
          if (ir === null) throw new ChipcError('cli.targets', 'no target to fit');
          out.emit({ circuit: ir.name, results });
          out.line(`${ir.name}: fit per target (non-zeros = compiled layers + embedding / LM head)`);
          out.line(table(
            ['target', 'fits', 'layers', 'hidden', 'vocab', 'slots', 'GDN heads', 'attn heads', 'FFN units', 'non-zeros'],
            results.map((r) => r.fits
              ? [r.target, 'yes', r.layers, r.widened ? `${r.hidden} (widened from ${r.targetHidden})` : String(r.hidden),
                r.vocabWidened ? `${r.vocab} (widened from ${r.targetVocab})` : String(r.vocab),
                r.slots, r.gdnKeyHeads, r.attentionHeads, r.ffnUnits, r.nonZeros]
              : [r.target, `no: ${r.resource}`, '', '', '', '', '', '', '', '']),
          ));
          for (const r of results) if (!r.fits) out.line(`${r.target}: does not fit [${r.code}]: ${r.message}`);
          // One named target: exit 1 when it does not fit (a check). The whole list is a report.
          return target !== undefined && !results[0]!.fits ? EXIT_DIFFERENT : EXIT_OK;
        }
        const names = target === undefined ? listTargets() : [target];
        const rows = names.map((n) => {
          const t = resolveTarget(n);
          // the generic RV32 chip's default RAM sizes here (chipc cpu; depths in docs/benchmarks.md)
          const cpu = { ...defaultChipSizes(t.config), bankBytes: 4 * memBankWordsFor(t.config) };
          return { name: t.name, source: t.source, summary: describeTarget(t.config), cpu };
        });
        out.emit(target === undefined ? { targets: rows } : rows[0]);
        if (target !== undefined) {
          out.line(`${rows[0]!.name} (${rows[0]!.source})`);
          out.line(formatTargetSummary(rows[0]!.summary));
          const c = rows[0]!.cpu;
          out.line(`generic RV32 chip (chipc cpu): ${fmtBytes(c.codeBytes)} code RAM, ${fmtBytes(c.memBytes)} data RAM by default; one GDN layer holds a ${fmtBytes(c.bankBytes)} bank`);
          return 0;
        }
        out.line(table(
          ['target', 'family', 'hidden', 'layers (GDN/attn)', 'GDN heads k/v × d', 'attn q/kv × d', 'FFN', 'vocab', 'parameters', 'CPU code/data'],
          rows.map(({ name, summary: s, cpu }) => [
            name, s.family, s.hiddenSize, `${s.numLayers} (${s.linearAttentionLayers}/${s.fullAttentionLayers})`,
            `${s.gdn.keyHeads}/${s.gdn.valueHeads} × ${s.gdn.keyHeadDim}`,
            `${s.attention.queryHeads}/${s.attention.keyValueHeads} × ${s.attention.headDim}`,
            s.ffn.length > 28 ? s.ffn.slice(0, 27) + '…' : s.ffn, s.vocabSize, s.parameters,
            cpu.bankBytes < 4096 ? '— (layers too small)' : `${fmtBytes(cpu.codeBytes)} / ${fmtBytes(cpu.memBytes)}`,
          ]),
        ));
        return 0;
      })(),
    );
}
