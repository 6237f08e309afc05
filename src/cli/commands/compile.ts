/**
 * `chipc compile CIRCUIT --target T [-o DIR] [--chip FILE] [--report] [--svg FILE]`: build,
 * validate and compile a circuit; emit the checkpoint (safetensors in T's family layout,
 * config.json, the manifest) atomically, streaming, with progress on stderr (src/cli/support/progress.ts),
 * as a directory (-o) and/or straight as its compact `.chip` file (--chip, never writing the dense
 * form); print the per-layer report.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { loadCircuitFile } from '../../dsl/load.ts';
import { readIR } from '../../ir/serialize.ts';
import { compileCircuit } from '../../compile.ts';
import { resolveTarget } from '../../model/targets.ts';
import { modelCheckpointParts, saveModel } from '../../model/save-weights.ts';
import { writeChipFromSources } from '../../chipfile/from-sources.ts';
import { parseChipCodec } from './chipfile.ts';
import { buildManifest, compileReport, manifestJson, MANIFEST_FILE } from '../../emit/manifest.ts';
import { allocationSvg } from '../../emit/svg.ts';
import { ChipcError } from '../../util/errors.ts';
import { CODEC_HELP, FILE_HASHES_HELP, NO_HOLES_HELP, integerOption, maxShardSizeOption } from '../support/options.ts';
import { fmtInt, makeOut, table } from '../support/output.ts';
import { makeProgressReporter } from '../support/progress.ts';
import type { Runner } from '../support/output.ts';
import { tempSibling } from '../../util/temp-files.ts';
import { prepareOutput } from '../support/files.ts';
import { summaryOf } from '../support/command-table.ts';

interface CompileCliOptions {
  target: string;
  output?: string;
  chip?: string;
  codec: string;
  fileHashes?: boolean;
  holes: boolean;
  maxShardSize?: string;
  dtype: string;
  report?: boolean;
  svg?: string;
  hidden?: string;
  vocab?: string;
  overwrite?: boolean;
  json?: boolean;
  /** undefined: on unless --json; true / false: --progress / --no-progress. */
  progress?: boolean;
}

export function registerCompile(program: Command, run: Runner): void {
  program
    .command('compile')
    .description(summaryOf('compile'))
    .argument('<circuit>', 'a circuit file (.ts) or a built IR file (.chip-ir)')
    .option('--target <name|config.json>', 'target model shape', 'tiny')
    .option('-o, --output <dir>', 'write the checkpoint directory (safetensors, config.json, manifest)')
    .option('--chip <file>', 'write the compact .chip file of the checkpoint directly (no dense directory; byte-identical to `chipc compact` of it)')
    .option('--codec <codec>', `with --chip: ${CODEC_HELP}`, 'br')
    .option('--file-hashes', FILE_HASHES_HELP)
    .option('--no-holes', NO_HOLES_HELP)
    .option('--max-shard-size <bytes>', 'tensor bytes per safetensors shard (default 5000000000, as huggingface_hub)')
    .option('--dtype <d>', 'emitted weight dtype: bf16 or f32 (weights are bf16-exact either way)', 'bf16')
    .option('--report', 'print dims, live maximum, slots, heads, units and non-zeros per layer')
    .option('--svg <file>', 'draw the slot allocation and per-layer resource use')
    .option('--hidden <n>', 'hidden size to emit (default: the target\'s, widened only as needed)')
    .option('--vocab <n>', 'vocabulary size to emit (default: the target\'s, widened to a multiple of 256 only as needed)')
    .option('--overwrite', 'replace an existing output directory or .chip file')
    .option('--json', 'print one JSON document')
    .option('--progress', 'report write progress on stderr even with --json')
    .option('--no-progress', 'do not report write progress')
    .action((file: string, o: CompileCliOptions) =>
      run(async () => {
        const out = makeOut(Boolean(o.json));
        if (o.dtype !== 'bf16' && o.dtype !== 'f32') throw new ChipcError('cli.dtype', `--dtype must be bf16 or f32, not "${o.dtype}"`);
        const hidden = o.hidden === undefined ? undefined : integerOption(o.hidden, '--hidden', 'cli.hidden', { min: 8 });
        const vocab = o.vocab === undefined ? undefined : integerOption(o.vocab, '--vocab', 'cli.vocab', { min: 1 });
        const maxShardSize = o.maxShardSize === undefined ? undefined : maxShardSizeOption(o.maxShardSize);
        const codec = parseChipCodec(o.codec);
        const target = resolveTarget(o.target);
        const inputs = [file, fs.existsSync(o.target) ? o.target : undefined];
        for (const [option, p] of [['-o', o.output], ['--chip', o.chip], ['--svg', o.svg]] as const) {
          if (p !== undefined) prepareOutput(p, { option, inputs, overwrite: Boolean(o.overwrite) });
        }
        const ir = file.endsWith('.chip-ir') ? readIR(file) : await loadCircuitFile(file, target.config);
        const t0 = performance.now();
        const res = compileCircuit(ir, target.config, { hidden, vocab });
        const compileMs = performance.now() - t0;
        const manifest = buildManifest(res, target.name);
        const report = compileReport(res);
        let written: string[] = [];
        const saveOpts = {
          dtype: o.dtype === 'bf16' ? 'BF16' as const : 'F32' as const,
          maxShardSize,
          overwrite: Boolean(o.overwrite),
          metadata: { chipc_circuit: ir.name, chipc_target: target.name },
          extraFiles: { [MANIFEST_FILE]: manifestJson(manifest) },
          holes: o.holes,
        };
        const showProgress = o.progress ?? !o.json;
        if (o.output) {
          const progress = showProgress ? makeProgressReporter({ label: `writing ${o.output}` }) : null;
          try {
            const w = saveModel(o.output, res.weights, { ...saveOpts, onProgress: progress ? (p) => progress.update(p) : undefined });
            written = w.files;
          } finally {
            progress?.finish();
          }
        }
        let chip: { path: string; bytes: number; denseBytes: number; blocks: number } | null = null;
        if (o.chip) {
          const progress = showProgress ? makeProgressReporter({ label: `writing ${o.chip}` }) : null;
          try {
            // saveModelChip's steps, with the codec option it does not carry.
            const { sources, extraFiles } = modelCheckpointParts(res.weights, saveOpts.dtype, saveOpts.extraFiles);
            const c = writeChipFromSources(o.chip, sources, {
              maxShardSize, metadata: saveOpts.metadata, overwrite: saveOpts.overwrite, extraFiles, codec, fileHashes: o.fileHashes === true,
              onProgress: progress ? (p) => progress.update(p) : undefined,
            });
            chip = { path: o.chip, bytes: c.chipBytes, denseBytes: c.denseBytes, blocks: c.blocks };
          } finally {
            progress?.finish();
          }
        }
        if (o.svg) {
          const budget = { units: target.config.intermediateSize, gdnHeads: target.config.linearNumKeyHeads, attnHeads: target.config.numKeyValueHeads };
          fs.mkdirSync(path.dirname(path.resolve(o.svg)), { recursive: true });
          const tmp = tempSibling(o.svg);
          fs.writeFileSync(tmp, allocationSvg(res, budget));
          fs.renameSync(tmp, o.svg);
        }
        out.emit({ circuit: ir.name, target: target.name, compileMs, output: o.output ?? null, files: written, chip, report, notes: ir.notes ?? [] });
        const vocabNote = res.weights.config.vocabSize !== target.config.vocabSize
          ? `, vocabulary ${fmtInt(res.weights.config.vocabSize)} (the target's ${fmtInt(target.config.vocabSize)})` : '';
        out.line(`${ir.name} → ${target.name}: ${res.layers.length} layer(s), hidden ${res.frame.hidden}${vocabNote}, ` +
          `${report.slotsUsed} slots (live max ${report.liveMax}), ${fmtInt(report.units)} FFN units, ${report.heads} heads, ` +
          `${fmtInt(report.nonZeros)} non-zeros, compiled in ${compileMs.toFixed(0)} ms`);
        if (o.report) {
          for (const n of ir.notes ?? []) out.line(`${ir.name}: ${n}`);
          out.line();
          out.line(table(['layer', 'type', 'heads', 'units', 'clears', 'live in', 'non-zeros'],
            res.layers.map((l) => [l.layer, l.type, l.heads, l.units, l.clearUnits, l.liveIn, l.nonZeros])));
          out.line(`dims ${report.dims} (frame ${report.frameDims} + slots ${report.slotsUsed}), live max ${report.liveMax}, ` +
            `embedding + LM head non-zeros ${fmtInt(report.embeddingNonZeros)}`);
          const inv = report.orderInvariance;
          out.line(`order-invariant matmuls: ${inv.invariantMatmuls}/${inv.matmuls} (rows ${fmtInt(inv.invariantRows)}/${fmtInt(inv.rows)})` +
            (inv.notInvariant.length ? `; not provable: ${inv.notInvariant.join(', ')}` : ''));
        }
        if (o.output) out.line(`wrote ${written.join(', ')} to ${o.output}`);
        if (chip) out.line(`wrote ${chip.path}: ${fmtInt(chip.bytes)} bytes (${fmtInt(chip.blocks)} blocks; dense form ${fmtInt(chip.denseBytes)} bytes)`);
        if (o.svg) out.line(`wrote ${o.svg}`);
        return 0;
      })(),
    );
}
