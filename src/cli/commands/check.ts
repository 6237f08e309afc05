/**
 * `chipc check CIRCUIT --target T (--tokens IDS | --random N) [--generate N]`: compile the
 * circuit and run the oracle chain — the IR interpreter beside the compiled weights in the
 * reference executor — comparing the emitted token and every placed signal at every sublayer
 * boundary, bit for bit. Exit 0 when they agree, 1 at a divergence (with a report), 2 on error.
 */
import type { Command } from 'commander';
import chalk from 'chalk';
import { loadCircuitFile } from '../../dsl/load.ts';
import { readIR } from '../../ir/serialize.ts';
import { compileCircuit } from '../../compile.ts';
import { resolveTarget } from '../../model/targets.ts';
import { checkCompiled } from '../../verify/check.ts';
import { ChipcError } from '../../util/errors.ts';
import { integerOption, profileOption } from '../support/options.ts';
import { Prng } from '../../model/random-weights.ts';
import { EXIT_DIFFERENT, EXIT_OK, fmtInt, makeOut, table } from '../support/output.ts';
import { parseOrder, parseTokenList } from './exec.ts';
import type { Runner } from '../support/output.ts';
import { summaryOf } from '../support/command-table.ts';

interface CheckCliOptions {
  target: string;
  tokens?: string;
  random?: string;
  seed: string;
  generate?: string;
  profile: string;
  path: string;
  order: string;
  json?: boolean;
}

export function registerCheck(program: Command, run: Runner): void {
  program
    .command('check')
    .description(summaryOf('check'))
    .argument('<circuit>', 'a circuit file (.ts) or IR file (.chip-ir)')
    .option('--target <name|config.json>', 'target model shape', 'tiny')
    .option('-t, --tokens <ids>', 'token ids to feed (the first must be the circuit\'s bos, if it has one)')
    .option('--random <n>', 'feed bos and then n random tokens of the circuit vocabulary')
    .option('--seed <s>', 'seed of --random', '1')
    .option('-g, --generate <n>', 'after the tokens, feed back the emitted token for n positions')
    .option('--profile <p>', 'numeric profile: f32 or bf16', 'f32')
    .option('--path <p>', 'matmul path: dense or sparse', 'sparse')
    .option('--order <o>', 'reduction order: sequential, fma, shuffled[:SEED]', 'sequential')
    .option('--json', 'print one JSON document')
    .action((file: string, o: CheckCliOptions) =>
      run(async () => {
        const out = makeOut(Boolean(o.json));
        const profile = profileOption(o.profile);
        if (o.path !== 'dense' && o.path !== 'sparse') throw new ChipcError('cli.path', `--path must be dense or sparse, not "${o.path}"`);
        const ir = file.endsWith('.chip-ir') ? readIR(file) : await loadCircuitFile(file, resolveTarget(o.target).config);
        let tokens: number[];
        if (o.tokens !== undefined) tokens = parseTokenList(o.tokens);
        else {
          const n = integerOption(o.random ?? '32', '--random', 'cli.random', { min: 0 });
          const prng = new Prng(integerOption(o.seed, '--seed', 'cli.seed', { min: 0, max: 0xffffffff }));
          const rnd = () => prng.nextU32() / 4294967296;
          const alphabet = Array.from({ length: ir.vocab }, (_, i) => i).filter((t) => t !== ir.bos);
          tokens = [...(ir.bos !== null ? [ir.bos] : []), ...Array.from({ length: n }, () => alphabet[Math.floor(rnd() * alphabet.length)]!)];
        }
        const gen = o.generate === undefined ? 0 : integerOption(o.generate, '--generate', 'cli.generate', { min: 0 });
        const res = compileCircuit(ir, resolveTarget(o.target).config);
        const r = checkCompiled(res, tokens, {
          profile, path: o.path, order: parseOrder(o.order),
          mode: gen > 0 ? 'generate' : 'teacher', prompt: tokens.length, length: tokens.length + gen,
        });
        out.emit(r);
        out.line(`${ir.name}: ${fmtInt(r.positions)} positions, ${fmtInt(r.signalsCompared)} signal values compared, ` +
          `${r.mismatches.length === 0 ? chalk.green('0 mismatches') : chalk.red(`${r.mismatches.length} mismatch(es)`)}`);
        if (r.mismatches.length > 0) {
          out.line(table(['position', 'what', 'sublayer', 'expected', 'got'],
            r.mismatches.map((m) => [m.position, m.what, m.sublayer, m.expected, String(m.got)])));
          return EXIT_DIFFERENT;
        }
        return EXIT_OK;
      })(),
    );
}
