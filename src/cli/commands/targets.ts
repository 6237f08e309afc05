/** `chipc targets [NAME|config.json]`: the built-in model shapes, or one target in detail. */
import type { Command } from 'commander';
import { describeTarget, formatTargetSummary, listTargets, resolveTarget } from '../../model/targets.ts';
import { makeOut, table } from '../output.ts';
import type { Runner } from '../main.ts';

export function registerTargets(program: Command, run: Runner): void {
  program
    .command('targets')
    .description('list the built-in targets, or describe one (a name or a config.json of either family)')
    .argument('[target]', 'a built-in target name or a config.json path')
    .option('--json', 'print one JSON document')
    .action((target: string | undefined, opts: { json?: boolean }) =>
      run(() => {
        const out = makeOut(Boolean(opts.json));
        const names = target === undefined ? listTargets() : [target];
        const rows = names.map((n) => {
          const t = resolveTarget(n);
          return { name: t.name, source: t.source, summary: describeTarget(t.config) };
        });
        out.emit(target === undefined ? { targets: rows } : rows[0]);
        if (target !== undefined) {
          out.line(`${rows[0]!.name} (${rows[0]!.source})`);
          out.line(formatTargetSummary(rows[0]!.summary));
          return 0;
        }
        out.line(table(
          ['target', 'family', 'hidden', 'layers (GDN/attn)', 'GDN heads k/v × d', 'attn q/kv × d', 'FFN', 'vocab', 'parameters'],
          rows.map(({ name, summary: s }) => [
            name, s.family, s.hiddenSize, `${s.numLayers} (${s.linearAttentionLayers}/${s.fullAttentionLayers})`,
            `${s.gdn.keyHeads}/${s.gdn.valueHeads} × ${s.gdn.keyHeadDim}`,
            `${s.attention.queryHeads}/${s.attention.keyValueHeads} × ${s.attention.headDim}`,
            s.ffn.length > 28 ? s.ffn.slice(0, 27) + '…' : s.ffn, s.vocabSize, s.parameters,
          ]),
        ));
        return 0;
      })(),
    );
}
