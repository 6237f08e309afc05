/**
 * Exact big-integer arithmetic handed to the weights: a seeded set of multiplications and
 * divisions of 20- to 60-digit integers, each typed as one line into the bundled interpreter on
 * the generic chip (`chipc repl`: the interpreter loaded once, one evaluation per line), every
 * answer compared with BigInt.
 *
 *   npx tsx bench/repl-bignum.ts [--seed S] [--mul N] [--div N] [--target T | --model CHIP]
 *                                [--engine weights|ir] [--no-check] [--json]
 *
 * Problem i of each kind: a = a random integer of 20…60 digits (uniform digit count, then uniform
 * digits with a nonzero first one) and b likewise; a division takes b with at most as many digits
 * as a, so that the quotient is at least 1 digit. The line is `a * b` or `a / b` (floor division;
 * both operands positive). The answer is the console output up to its newline. `--check` (the
 * default) also runs every evaluation on the golden emulator and compares every generated token.
 *
 * Prints per problem: the line's length, prompt and generated tokens, instructions (with check),
 * seconds and right/wrong; then the totals and the number right. Exit 1 when any answer is wrong
 * or the chip diverges.
 */
import { openInterpreter } from '../src/chip/repl.ts';
import { bignumProblems } from './bignum-problems.ts';

interface Row {
  i: number; kind: 'mul' | 'div'; digits: number[]; ok: boolean; exitCode: number | null;
  promptTokens: number; generatedTokens: number; instructions: number | null; seconds: number;
  line?: string; want?: string; got?: string; divergence?: unknown;
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

async function main(): Promise<number> {
  const seed = Number(arg('--seed') ?? 31);
  const mul = Number(arg('--mul') ?? 40);
  const div = Number(arg('--div') ?? 40);
  const json = process.argv.includes('--json');
  const check = !process.argv.includes('--no-check');
  const engine = (arg('--engine') ?? 'weights') as 'weights' | 'ir';
  const model = arg('--model');
  const target = arg('--target');
  const say = (s: string) => { if (!json) console.log(s); };
  const t0 = performance.now();
  const { interp, where } = await openInterpreter({
    engine, check, ...(model !== undefined ? { model } : {}), ...(target !== undefined ? { target } : {}),
    log: (l) => { if (!json) console.error(l); },
  });
  const openSeconds = (performance.now() - t0) / 1000;
  say(`the interpreter on ${where} (${engine}${check ? ', every token checked against the golden emulator' : ''}), ready in ${openSeconds.toFixed(1)} s`);
  const rows: Row[] = [];
  let right = 0;
  let diverged = false;
  for (const [i, p] of bignumProblems(seed, mul, div).entries()) {
    const e = interp.evaluate(p.line);
    const got = new TextDecoder().decode(e.console).replace(/\n$/, '');
    const ok = e.divergence === null && e.exitCode === 0 && got === p.want;
    if (ok) right++;
    if (e.divergence !== null || e.exitCode === null) diverged = true;
    const row: Row = {
      i, kind: p.kind, digits: [String(p.a).length, String(p.b).length], ok, exitCode: e.exitCode,
      promptTokens: e.promptTokens, generatedTokens: e.generatedTokens, instructions: e.instructions, seconds: e.seconds,
      ...(ok ? {} : { line: p.line, want: p.want, got, divergence: e.divergence }),
    };
    rows.push(row);
    say(`${String(i + 1).padStart(2)} ${p.kind} ${row.digits.join('×')} digits: ${e.promptTokens} prompt + ${e.generatedTokens} generated tokens` +
      (e.instructions !== null ? `, ${e.instructions} instructions` : '') + `, ${e.seconds.toFixed(2)} s — ${ok ? 'right' : `WRONG (want ${p.want}, got ${got})`}`);
    if (diverged) break;
  }
  const sum = (f: (r: Row) => number) => rows.reduce((s, r) => s + f(r), 0);
  const byKind = (k: 'mul' | 'div') => {
    const rs = rows.filter((r) => r.kind === k);
    return {
      problems: rs.length, right: rs.filter((r) => r.ok).length,
      meanTokens: rs.length === 0 ? 0 : rs.reduce((s, r) => s + r.promptTokens + r.generatedTokens, 0) / rs.length,
      meanSeconds: rs.length === 0 ? 0 : rs.reduce((s, r) => s + r.seconds, 0) / rs.length,
    };
  };
  const totalTokens = sum((r) => r.promptTokens + r.generatedTokens);
  const totalSeconds = sum((r) => r.seconds);
  const summary = {
    seed, engine, check, chip: where, openSeconds, problems: rows.length, right, mul: byKind('mul'), div: byKind('div'),
    totalTokens, totalSeconds, tokensPerSecond: totalTokens / Math.max(totalSeconds, 1e-9),
  };
  if (json) console.log(JSON.stringify({ ...summary, rows }));
  else {
    say(`${right}/${rows.length} right (mul ${summary.mul.right}/${summary.mul.problems}, div ${summary.div.right}/${summary.div.problems}); ` +
      `${totalTokens} tokens in ${totalSeconds.toFixed(1)} s (${summary.tokensPerSecond.toFixed(0)} tokens/s); ` +
      `mean per problem: mul ${summary.mul.meanTokens.toFixed(0)} tokens ${summary.mul.meanSeconds.toFixed(2)} s, div ${summary.div.meanTokens.toFixed(0)} tokens ${summary.div.meanSeconds.toFixed(2)} s`);
  }
  return right === rows.length && rows.length === mul + div ? 0 : 1;
}

process.exitCode = await main();
