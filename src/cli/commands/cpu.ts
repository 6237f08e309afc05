/**
 * `chipc cpu -o OUT [--target T] [--code-size BYTES] [--mem-size BYTES] [--dtype bf16|f32]`:
 * compile the generic RV32IM+Zba chip (src/chip/generic.ts) — one checkpoint that runs any
 * program fitting its code and data RAMs, loaded by prompt or by state — and write it with its
 * manifest: a checkpoint directory, or a compact `.chip` file when OUT ends in `.chip`. Run
 * programs on it with `chipc run PROG.elf --model OUT`. Refuses an existing OUT before compiling
 * unless `--overwrite`; the write is atomic (a temporary name, then a rename).
 */
import fs from 'node:fs';
import type { Command } from 'commander';
import { resolveTarget } from '../../model/targets.ts';
import { ChipcError } from '../../util/errors.ts';
import { codeSizeOption, FILE_HASHES_HELP, NO_HOLES_HELP, integerOption, memSizeOption } from '../support/options.ts';
import { defaultChipSizes, describeSizes, genericShape, type GenericChipSpec } from '../../chip/generic.ts';
import { compileGenericChip, emitChip } from '../../chip/build.ts';
import { fmtBytes } from '../../chip/run.ts';
import type { Matrix } from '../../model/weights.ts';
import { fmtInt, makeOut } from '../support/output.ts';
import type { Runner } from '../support/output.ts';
import { prepareOutput } from '../support/files.ts';
import { summaryOf } from '../support/command-table.ts';

interface CpuCliOptions { output: string; target: string; codeSize?: string; memSize?: string; dtype: string; overwrite?: boolean; json?: boolean; attentionLayer?: boolean; hidden?: string; fileHashes?: boolean; holes: boolean }

/** Non-zero weights of a matrix (CSR values, or the dense array's non-zeros). */
const nonZeros = (m: Matrix): number => (m.csr ? m.csr.values.length : (m.dense ?? new Float32Array()).reduce((s, v) => s + (v !== 0 ? 1 : 0), 0));

export function registerCpu(program: Command, run: Runner): void {
  const sizes = defaultChipSizes();
  program
    .command('cpu')
    .description(summaryOf('cpu'))
    .requiredOption('-o, --output <out>', 'a checkpoint directory, or a .chip file')
    .option('--target <name|config.json>', 'target model shape', 'chip-test')
    .option('--code-size <bytes>', `code RAM size from 0x80000000 (a power of two, 256 bytes … 64 KiB; default ${fmtBytes(sizes.codeBytes)})`)
    .option('--mem-size <bytes>', `data RAM size from 0x80000000 (a multiple of 256, at most 128 KiB; default 64 KiB, or 4 banks where less)`)
    .option('--dtype <d>', 'bf16 or f32 (the chip\'s weights are bf16-exact: both hold the same values)', 'bf16')
    .option('--overwrite', 'replace an existing output')
    .option('--attention-layer', 'make the last layer with an empty mixer a full-attention layer that adds exactly 0, so transformers\' generate() runs the chip alone (its cache takes its length from an attention layer); costs no layer, but every token then attends over all positions')
    .option('--hidden <n>', 'hidden size to emit (default: the target\'s, widened only as needed); a chip to merge into a host needs the host\'s times a power of four (docs/merge.md)')
    .option('--file-hashes', FILE_HASHES_HELP)
    .option('--no-holes', NO_HOLES_HELP)
    .option('--json', 'print one JSON document')
    .action((o: CpuCliOptions) =>
      run(() => {
        const out = makeOut(Boolean(o.json));
        if (o.dtype !== 'bf16' && o.dtype !== 'f32') throw new ChipcError('cli.dtype', `--dtype must be bf16 or f32, not "${o.dtype}"`);
        const target = resolveTarget(o.target);
        const sizes = defaultChipSizes(target.config);
        const spec: GenericChipSpec = {
          targetName: target.name, target: target.config,
          codeBytes: o.codeSize !== undefined ? codeSizeOption(o.codeSize) : sizes.codeBytes,
          memBytes: o.memSize !== undefined ? memSizeOption(o.memSize) : sizes.memBytes,
          attentionLayer: o.attentionLayer === true,
          ...(o.hidden !== undefined ? { hidden: integerOption(o.hidden, '--hidden', 'cli.hidden', { min: 8 }) } : {}),
        };
        const shape = genericShape(spec);
        // refused before the compile, not after it
        prepareOutput(o.output, { option: '-o', inputs: [fs.existsSync(o.target) ? o.target : undefined], overwrite: Boolean(o.overwrite) });
        const t0 = performance.now();
        const res = compileGenericChip(spec);
        const compileSeconds = (performance.now() - t0) / 1000;
        const t1 = performance.now();
        emitChip(o.output, res, shape, target.name, { dtype: o.dtype === 'bf16' ? 'BF16' : 'F32', overwrite: Boolean(o.overwrite), fileHashes: o.fileHashes === true, holes: o.holes });
        const writeSeconds = (performance.now() - t1) / 1000;
        const chipNonZeros = res.layers.reduce((s, l) => s + l.nonZeros, 0);
        const io = nonZeros(res.weights.embedTokens) + (res.weights.lmHead === res.weights.embedTokens ? 0 : nonZeros(res.weights.lmHead));
        const bytes = fs.statSync(o.output).isFile() ? fs.statSync(o.output).size : fs.readdirSync(o.output).reduce((s, f) => s + fs.statSync(`${o.output}/${f}`).size, 0);
        out.emit({
          output: o.output, target: target.name, codeBytes: spec.codeBytes, memBytes: spec.memBytes, chip: shape,
          layers: res.layers.length, layerTypes: res.weights.config.layerTypes, hidden: res.weights.config.hiddenSize, slots: res.packing.slotsUsed,
          nonZeros: chipNonZeros, embeddingLmHeadNonZeros: io, bytes, compileSeconds, writeSeconds,
        });
        out.line(`${o.output}: the generic RV32IM+Zba chip (${describeSizes(spec)}) for ${target.name}: ${res.layers.length} layers, ` +
          `hidden ${fmtInt(res.weights.config.hiddenSize)}, ${fmtInt(res.packing.slotsUsed)} slots, ${fmtInt(chipNonZeros)} non-zeros in its layers ` +
          `(+ ${fmtInt(io)} in the embedding and LM head); compiled in ${compileSeconds.toFixed(1)} s, written in ${writeSeconds.toFixed(1)} s ` +
          `(${(bytes / 1e6).toFixed(1)} MB). Run a program on it: chipc run PROG.elf --model ${o.output}`);
        return 0;
      })(),
    );
}
