/**
 * `chipc compact DIR -o FILE.chip` and `chipc expand FILE.chip -o DIR`: between a dense
 * checkpoint directory and its compact sparse `.chip` form (docs/chip-file.md), both streaming
 * and atomic; expand regenerates the directory byte for byte.
 */
import type { Command } from 'commander';
import { compactCheckpoint } from '../../chipfile/compact.ts';
import { expandChipFile } from '../../chipfile/expand.ts';
import type { ChipCodec } from '../../chipfile/format.ts';
import { ChipcError } from '../../util/errors.ts';
import { CODEC_HELP, FILE_HASHES_HELP, NO_HOLES_HELP, integerOption } from '../support/options.ts';
import { fmtBytes, fmtInt, makeOut } from '../support/output.ts';
import type { Runner } from '../support/output.ts';
import { prepareOutput } from '../support/files.ts';
import { summaryOf } from '../support/command-table.ts';

interface CompactCliOptions {
  output: string;
  minGap: string;
  codec: string;
  fileHashes?: boolean;
  overwrite?: boolean;
  json?: boolean;
}

interface ExpandCliOptions {
  output: string;
  overwrite?: boolean;
  hashes?: boolean;
  holes: boolean;
  json?: boolean;
}

/** The value of a `--codec` option: "br" or "none" (a ChipcError otherwise). */
export function parseChipCodec(v: string): ChipCodec {
  if (v !== 'br' && v !== 'none') throw new ChipcError('cli.codec', `--codec must be br or none, not "${v}"`);
  return v;
}

export function registerChipfile(program: Command, run: Runner): void {
  program
    .command('compact')
    .description(summaryOf('compact'))
    .argument('<dir>', 'a checkpoint directory (safetensors, index, config.json, …)')
    .requiredOption('-o, --output <file>', 'the .chip file to write')
    .option('--min-gap <bytes>', 'zero runs shorter than this stay inside a block', '8')
    .option('--codec <codec>', CODEC_HELP, 'br')
    .option('--file-hashes', FILE_HASHES_HELP)
    .option('--overwrite', 'replace an existing output file')
    .option('--json', 'print one JSON document')
    .action((dir: string, o: CompactCliOptions) =>
      run(() => {
        const out = makeOut(Boolean(o.json));
        const minGap = integerOption(o.minGap, '--min-gap', 'cli.min-gap', { min: 1 });
        const codec = parseChipCodec(o.codec);
        // (an existing output is refused by compactCheckpoint itself: chipfile.target-exists)
        prepareOutput(o.output, { option: '-o', inputs: [dir], overwrite: true });
        const t0 = performance.now();
        const r = compactCheckpoint(dir, o.output, { overwrite: Boolean(o.overwrite), minGap, codec, fileHashes: o.fileHashes === true });
        const ms = performance.now() - t0;
        out.emit({ input: dir, output: r.path, files: r.files, tensors: r.tensors, blocks: r.blocks, denseBytes: r.denseBytes, chipBytes: r.chipBytes, blockBytes: r.blockBytes, ms });
        out.line(`wrote ${r.path}: ${fmtBytes(r.chipBytes)} for ${fmtBytes(r.denseBytes)} dense ` +
          `(${r.files} files, ${fmtInt(r.tensors)} tensors, ${fmtInt(r.blocks)} blocks, ratio ${(r.denseBytes / r.chipBytes).toFixed(1)}×) in ${ms.toFixed(0)} ms`);
        return 0;
      })(),
    );
  program
    .command('expand')
    .description(summaryOf('expand'))
    .argument('<file>', 'a .chip file')
    .requiredOption('-o, --output <dir>', 'the checkpoint directory to write')
    .option('--overwrite', 'replace an existing non-empty output directory')
    .option('--no-holes', NO_HOLES_HELP)
    .option('--hashes', 'compute every written file\'s SHA-256 (printed), not only those the .chip records (which are checked)')
    .option('--json', 'print one JSON document')
    .action((file: string, o: ExpandCliOptions) =>
      run(() => {
        const out = makeOut(Boolean(o.json));
        // (an existing output is refused by expandChipFile itself)
        prepareOutput(o.output, { option: '-o', inputs: [file], overwrite: true });
        const t0 = performance.now();
        const r = expandChipFile(file, o.output, { overwrite: Boolean(o.overwrite), hashes: o.hashes === true, holes: o.holes });
        const ms = performance.now() - t0;
        out.emit({ input: file, output: r.dir, files: r.files, bytes: r.bytes, sha256: r.sha256, ms });
        out.line(`wrote ${r.files.join(', ')} (${fmtBytes(r.bytes)}) to ${r.dir} in ${ms.toFixed(0)} ms`);
        if (o.hashes) for (const [name, sha] of Object.entries(r.sha256)) out.line(`${sha}  ${name}`);
        return 0;
      })(),
    );
}
