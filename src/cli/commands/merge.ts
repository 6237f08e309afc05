/**
 * `chipc merge --host DIR --chip CHIP -o OUT`: place a compiled chip (checkpoint directory or
 * `.chip` file) in front of a host checkpoint of the same family and write the merged checkpoint
 * (streaming, sharded, atomic; docs/merge.md).
 */
import type { Command } from 'commander';
import { mergeCheckpoints } from '../../merge/merge.ts';
import { FILE_HASHES_HELP, NO_HOLES_HELP, maxShardSizeOption } from '../support/options.ts';
import { fmtInt, makeOut } from '../support/output.ts';
import { makeProgressReporter } from '../support/progress.ts';
import type { Runner } from '../support/output.ts';
import { prepareOutput } from '../support/files.ts';
import { summaryOf } from '../support/command-table.ts';

interface MergeCliOptions {
  host: string;
  chip: string;
  output: string;
  overwrite?: boolean;
  maxShardSize?: string;
  json?: boolean;
  progress?: boolean;
  fileHashes?: boolean;
  holes: boolean;
}

export function registerMerge(program: Command, run: Runner): void {
  program
    .command('merge')
    .description(summaryOf('merge'))
    .requiredOption('--host <dir>', 'host checkpoint directory (config.json + safetensors, sharded or not)')
    .requiredOption('--chip <path>', 'compiled chip: a checkpoint directory from chipc compile, or a .chip file')
    .requiredOption('-o, --output <dir>', 'merged checkpoint directory to write')
    .option('--overwrite', 'replace an existing output (directory, or .chip file)')
    .option('--max-shard-size <bytes>', 'bytes of tensor data per shard (default 5000000000)')
    .option('--file-hashes', FILE_HASHES_HELP)
    .option('--no-holes', NO_HOLES_HELP)
    .option('--json', 'print one JSON document')
    .option('--progress', 'report write progress on stderr even with --json')
    .option('--no-progress', 'do not report write progress')
    .action((o: MergeCliOptions) =>
      run(() => {
        const out = makeOut(Boolean(o.json));
        const maxShardSize = o.maxShardSize === undefined ? undefined : maxShardSizeOption(o.maxShardSize);
        // (an existing output is refused by mergeCheckpoints itself: checkpoint.target-exists)
        prepareOutput(o.output, { option: '-o', inputs: [o.host, o.chip], overwrite: true });
        const progress = (o.progress ?? !o.json) ? makeProgressReporter({ label: `writing ${o.output}` }) : null;
        let r: ReturnType<typeof mergeCheckpoints>;
        try {
          r = mergeCheckpoints(o.host, o.chip, o.output, {
            overwrite: Boolean(o.overwrite), maxShardSize, fileHashes: o.fileHashes === true, holes: o.holes,
            onProgress: progress ? (p) => progress.update(p) : undefined,
          });
        } finally {
          progress?.finish();
        }
        const p = r.plan;
        out.emit({
          output: o.output, files: r.write.files, dtype: r.dtype,
          hidden: p.hidden, hostHidden: p.hostHidden, chipHidden: p.chipHidden,
          hostScale: p.hostScale, chipScale: p.chipScale,
          vocab: p.merged.vocabSize, chipIdOffset: p.chipIdOffset, chipAlphabet: p.chipAlphabet,
          layers: p.merged.numLayers, chipLayers: p.chipLayers,
          parameters: r.write.totalParameters, bytes: r.write.totalSize, notes: p.notes,
        });
        out.line(`merged ${p.chipLayers} chip layer(s) + ${p.host.numLayers} host layer(s) → ${o.output}: hidden ${p.hostHidden} → ${p.hidden} ` +
          `(host dims [0, ${p.hostHidden}), chip dims [${p.hostHidden}, ${p.hostHidden + p.chipHidden})), vocabulary ${fmtInt(p.merged.vocabSize)} ` +
          `(chip token t = id ${fmtInt(p.chipIdOffset)} + t), ${fmtInt(r.write.totalParameters)} parameters, ${r.dtype}`);
        for (const n of p.notes) out.line(`note: ${n}`);
        out.line(`wrote ${r.write.files.join(', ')}`);
        return 0;
      })(),
    );
}
