/**
 * `chipc diff A B`: bitwise per-tensor comparison, streaming. Exit 0 identical, 1 different,
 * 2 error — the contract CI pipelines rely on.
 */
import type { Command } from 'commander';
import chalk from 'chalk';
import { openCheckpoint } from '../../safetensors/checkpoint.ts';
import { diffStores } from '../../inspect/diff.ts';
import { EXIT_DIFFERENT, EXIT_OK, fmtBytes, fmtInt, makeOut } from '../output.ts';
import type { Runner } from '../main.ts';

export function registerDiff(program: Command, run: Runner): void {
  program
    .command('diff')
    .description('compare two checkpoints tensor by tensor, bit for bit (exit 0 identical, 1 different, 2 error)')
    .argument('<a>', 'a .safetensors file or checkpoint directory')
    .argument('<b>', 'a .safetensors file or checkpoint directory')
    .option('--json', 'print one JSON document')
    .action((a: string, b: string, opts: { json?: boolean }) =>
      run(() => {
        const out = makeOut(Boolean(opts.json));
        const sa = openCheckpoint(a);
        try {
          const sb = openCheckpoint(b);
          try {
            const d = diffStores(sa, sb);
            out.emit(d);
            for (const n of d.onlyInA) out.line(`${chalk.red('only in A')}  ${n}`);
            for (const n of d.onlyInB) out.line(`${chalk.red('only in B')}  ${n}`);
            for (const t of d.tensors) {
              if (t.status === 'dtype') out.line(`${chalk.red('dtype')}      ${t.name}: ${t.dtypeA} vs ${t.dtypeB}`);
              else if (t.status === 'shape') out.line(`${chalk.red('shape')}      ${t.name}: [${t.shapeA}] vs [${t.shapeB}]`);
              else if (t.status === 'different') {
                out.line(`${chalk.red('different')}  ${t.name}: ${fmtInt(t.count!)} element(s) differ; ` +
                  `first at ${fmtInt(t.firstIndex!)}: ${t.firstA} vs ${t.firstB}`);
              }
            }
            const same = d.tensors.filter((t) => t.status === 'identical').length;
            out.line(`${d.identical ? chalk.green('identical') : chalk.red('different')}: ${fmtInt(same)}/` +
              `${fmtInt(d.compared)} common tensors identical, ${d.onlyInA.length} only in A, ` +
              `${d.onlyInB.length} only in B (${fmtBytes(d.bytesCompared)} compared)`);
            return d.identical ? EXIT_OK : EXIT_DIFFERENT;
          } finally {
            sb.close();
          }
        } finally {
          sa.close();
        }
      })(),
    );
}
