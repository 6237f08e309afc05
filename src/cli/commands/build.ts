/** `chipc build CIRCUIT.ts -o FILE.chip-ir`: build and validate a circuit, write its IR. */
import type { Command } from 'commander';
import { loadCircuitFile } from '../../dsl/load.ts';
import { writeIR } from '../../ir/serialize.ts';
import { makeOut } from '../support/output.ts';
import type { Runner } from '../support/output.ts';
import { prepareOutput } from '../support/files.ts';
import { summaryOf } from '../support/command-table.ts';

export function registerBuild(program: Command, run: Runner): void {
  program
    .command('build')
    .description(summaryOf('build'))
    .argument('<circuit>', 'a circuit file (TypeScript, default-exporting defineCircuit(…))')
    .option('-o, --output <file>', 'where to write the IR (default: <circuit>.chip-ir)')
    .option('--overwrite', 'replace an existing output file')
    .option('--json', 'print one JSON document')
    .action((file: string, opts: { output?: string; overwrite?: boolean; json?: boolean }) =>
      run(async () => {
        const out = makeOut(Boolean(opts.json));
        const target = opts.output ?? file.replace(/\.[cm]?[jt]s$/, '') + '.chip-ir';
        prepareOutput(target, { option: opts.output !== undefined ? '-o' : 'the default output', inputs: [file], overwrite: opts.overwrite === true });
        const ir = await loadCircuitFile(file);
        writeIR(target, ir);
        const summary = {
          circuit: ir.name, output: target, nodes: ir.nodes.length, rams: ir.rams.length,
          lookups: ir.lookups.length, vocab: ir.vocab, emits: ir.emit !== null,
        };
        out.emit(summary);
        out.line(`${ir.name}: ${ir.nodes.length} signals, ${ir.rams.length} RAM(s), ${ir.lookups.length} lookup(s) → ${target}`);
        return 0;
      })(),
    );
}
