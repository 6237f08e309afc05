/**
 * `chipc diff A B`: bitwise per-tensor comparison of two checkpoints, streaming (bounded memory
 * whatever their size; sharding may differ), plus config.json when both are directories.
 * `chipc diff DIR --golden FILE`: check against recorded per-tensor hashes;
 * `chipc diff DIR --write-golden FILE`: record them. Exit 0 identical (or written), 1 different,
 * 2 error — the contract CI pipelines rely on. A `.chip` file is accepted wherever a directory is.
 */
import type { Command } from 'commander';
import chalk from 'chalk';
import { diffCheckpoints, type StoreDiff } from '../../inspect/diff.ts';
import { checkGolden, computeGolden, readGoldenFile, writeGoldenFile, type GoldenCheck } from '../../inspect/golden.ts';
import { ChipcError } from '../../util/errors.ts';
import { EXIT_DIFFERENT, EXIT_OK, fmtBytes, fmtInt, makeOut, type Out } from '../support/output.ts';
import type { Runner } from '../support/output.ts';
import { prepareOutput } from '../support/files.ts';
import { summaryOf } from '../support/command-table.ts';

interface DiffOpts {
  json?: boolean;
  golden?: string;
  writeGolden?: string;
  overwrite?: boolean;
}

export function registerDiff(program: Command, run: Runner): void {
  program
    .command('diff')
    .description(summaryOf('diff'))
    .argument('<a>', 'a .safetensors file, checkpoint directory or .chip file')
    .argument('[b]', 'the .safetensors file, checkpoint directory or .chip file to compare with (not with --golden / --write-golden)')
    .option('--golden <file>', 'compare A against recorded per-tensor sha256 hashes instead of a second checkpoint')
    .option('--write-golden <file>', "record A's per-tensor sha256 hashes (and config.json's) to FILE")
    .option('--overwrite', 'with --write-golden: replace an existing file')
    .option('--json', 'print one JSON document')
    .action((a: string, b: string | undefined, opts: DiffOpts) =>
      run(() => {
        const modes = [b !== undefined, opts.golden !== undefined, opts.writeGolden !== undefined].filter(Boolean).length;
        if (modes !== 1) {
          throw new ChipcError('diff.usage', 'give exactly one of: a second checkpoint B, --golden FILE, or --write-golden FILE');
        }
        const out = makeOut(Boolean(opts.json));
        if (opts.writeGolden !== undefined) {
          prepareOutput(opts.writeGolden, { option: '--write-golden', inputs: [a], overwrite: opts.overwrite === true });
          const g = computeGolden(a);
          writeGoldenFile(opts.writeGolden, g);
          const n = Object.keys(g.tensors).length;
          out.emit({ written: opts.writeGolden, tensors: n, config: g.config !== null });
          out.line(`wrote ${opts.writeGolden}: ${fmtInt(n)} tensor hash(es)${g.config !== null ? ' and config.json' : ''}`);
          return EXIT_OK;
        }
        if (opts.golden !== undefined) {
          const r = checkGolden(a, readGoldenFile(opts.golden));
          reportGolden(out, r);
          return r.identical ? EXIT_OK : EXIT_DIFFERENT;
        }
        const d = diffCheckpoints(a, b!);
        reportDiff(out, d);
        return d.identical ? EXIT_OK : EXIT_DIFFERENT;
      })(),
    );
}

function reportDiff(out: Out, d: StoreDiff): void {
  out.emit(d);
  for (const n of d.onlyInA) out.line(`${chalk.red('only in A')}  ${n}`);
  for (const n of d.onlyInB) out.line(`${chalk.red('only in B')}  ${n}`);
  for (const t of d.tensors) {
    if (t.status === 'dtype') out.line(`${chalk.red('dtype')}      ${t.name}: ${t.dtypeA} vs ${t.dtypeB}`);
    else if (t.status === 'shape') out.line(`${chalk.red('shape')}      ${t.name}: [${t.shapeA}] vs [${t.shapeB}]`);
    else if (t.status === 'different') {
      const unit = t.unit === 'byte' ? 'byte' : 'element';
      out.line(`${chalk.red('different')}  ${t.name}: ${fmtInt(t.count!)} ${unit}(s) differ; ` +
        `first at ${unit} ${fmtInt(t.firstIndex!)}: ${t.firstA} vs ${t.firstB}`);
    }
  }
  const c = d.config;
  if (c !== null && c.status !== 'identical' && c.status !== 'absent') {
    const what = c.status === 'only-in-a' ? 'only in A' : c.status === 'only-in-b' ? 'only in B' :
      c.keys !== undefined && c.keys.length > 0 ? `differs at ${c.keys.join(', ')}` : `differs${c.note ? ` (${c.note})` : ''}`;
    out.line(`${chalk.red('config')}     config.json ${what}`);
  }
  const same = d.tensors.filter((t) => t.status === 'identical').length;
  const cfg = c === null ? '' : `, config.json ${c.status}`;
  out.line(`${d.identical ? chalk.green('identical') : chalk.red('different')}: ${fmtInt(same)}/` +
    `${fmtInt(d.compared)} common tensors identical, ${d.onlyInA.length} only in A, ` +
    `${d.onlyInB.length} only in B${cfg} (${fmtInt(d.elementsCompared)} elements, ${fmtBytes(d.bytesCompared)} compared)`);
}

function reportGolden(out: Out, r: GoldenCheck): void {
  out.emit(r);
  for (const n of r.missing) out.line(`${chalk.red('missing')}    ${n} (recorded, not in the checkpoint)`);
  for (const n of r.extra) out.line(`${chalk.red('extra')}      ${n} (in the checkpoint, not recorded)`);
  for (const t of r.tensors) {
    if (t.status === 'dtype') out.line(`${chalk.red('dtype')}      ${t.name}: ${t.actual.dtype}, recorded ${t.expected.dtype}`);
    else if (t.status === 'shape') out.line(`${chalk.red('shape')}      ${t.name}: [${t.actual.shape}], recorded [${t.expected.shape}]`);
    else if (t.status === 'different') out.line(`${chalk.red('different')}  ${t.name}: sha256 ${t.actual.sha256}, recorded ${t.expected.sha256}`);
  }
  const c = r.config;
  if (c.status === 'different') out.line(`${chalk.red('config')}     config.json sha256 ${c.actual}, recorded ${c.expected}`);
  else if (c.status === 'missing') out.line(`${chalk.red('config')}     config.json missing (recorded ${c.expected})`);
  else if (c.status === 'extra') out.line(`${chalk.red('config')}     config.json present, none recorded`);
  const same = r.tensors.filter((t) => t.status === 'identical').length;
  out.line(`${r.identical ? chalk.green('identical') : chalk.red('different')}: ${fmtInt(same)}/${fmtInt(r.tensors.length)} ` +
    `recorded tensors match, ${r.missing.length} missing, ${r.extra.length} extra, config.json ${c.status} ` +
    `(${fmtInt(r.elementsHashed)} elements, ${fmtBytes(r.bytesHashed)} hashed)`);
}
