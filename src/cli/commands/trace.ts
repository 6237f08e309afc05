/**
 * `chipc trace FILE.elf -o TRACE.json [--mem-size BYTES] [--max-instructions N]`: writes what an
 * outside engine needs to run a program on an emitted chip checkpoint by plain greedy decoding and
 * check it (tools/hf_check.py): the loader prompt (token protocol v4, "Loading by prompt": BOS,
 * then E/D/H write tokens for every non-zero word and sp, then J(entry)) and the golden emulator's
 * generated tokens up to HALT. Atomic write (temporary name, then rename).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { ChipcError } from '../../util/errors.ts';
import { integerOption, memSizeOption } from '../options.ts';
import { DEFAULT_MEM_BYTES, goldenTokens, programOf } from '../../chip/run.ts';
import { PROTOCOL_VERSION, decodeToken } from '../../../riscv/protocol.ts';
import { fmtInt, makeOut } from '../output.ts';
import type { Runner } from '../main.ts';

/** The trace file (format "chipc-trace", version 1). */
export interface TraceFile {
  format: 'chipc-trace';
  version: 1;
  protocol: string;
  elf: { name: string; sha256: string };
  memBytes: number;
  /** Fed as the prompt: the loader prompt ending with J(entry). */
  prompt: number[];
  /** What greedy decoding must generate after the prompt (ends with HALT when `halted`). */
  expected: number[];
  halted: boolean;
  exitCode: number | null;
  instructions: number;
}

interface TraceCliOptions { output?: string; memSize: string; maxInstructions: string; json?: boolean }

export function registerTrace(program: Command, run: Runner): void {
  program
    .command('trace')
    .description('write a program\'s loader prompt and golden token trace as JSON (for tools/hf_check.py)')
    .argument('<elf>', 'an RV32IM+Zba ELF (code and data from 0x80000000)')
    .requiredOption('-o, --output <file>', 'the trace file to write')
    .option('--mem-size <bytes>', 'data RAM size from 0x80000000 (must match the compiled chip)', String(DEFAULT_MEM_BYTES))
    .option('--max-instructions <n>', 'instruction budget of the golden run', '10000000')
    .option('--json', 'print one JSON document')
    .action((file: string, o: TraceCliOptions) =>
      run(() => {
        const out = makeOut(Boolean(o.json));
        if (!fs.existsSync(file)) throw new ChipcError('cli.file', `${file} does not exist`);
        const memBytes = memSizeOption(o.memSize);
        const maxInstructions = integerOption(o.maxInstructions, '--max-instructions', 'cli.max-instructions', { min: 1 });
        const elf = fs.readFileSync(file);
        const prog = programOf(elf, memBytes);
        const g = goldenTokens(elf, { maxInstructions, mem: { size: prog.memBytes } });
        // The golden stream starts with [BOS, J(entry)]; the loader prompt ends with the same J.
        const expected = Array.from(g.tokens.subarray(2));
        const last = expected.length > 0 ? decodeToken(expected[expected.length - 1]!) : null;
        const halted = last !== null && last.kind === 'HALT';
        const doc: TraceFile = {
          format: 'chipc-trace', version: 1, protocol: PROTOCOL_VERSION,
          elf: { name: path.basename(file), sha256: crypto.createHash('sha256').update(elf).digest('hex') },
          memBytes: prog.memBytes, prompt: prog.loader, expected, halted,
          exitCode: last !== null && last.kind === 'HALT' ? last.code : null, instructions: g.summary.instructions,
        };
        const target = o.output as string;
        const tmp = `${target}.${process.pid}.tmp`;
        try {
          fs.writeFileSync(tmp, JSON.stringify(doc) + '\n');
          fs.renameSync(tmp, target);
        } catch (e) {
          fs.rmSync(tmp, { force: true });
          throw new ChipcError('cli.write', `cannot write ${target}: ${(e as Error).message}`, { cause: e });
        }
        out.emit({ output: target, promptTokens: doc.prompt.length, expectedTokens: expected.length, halted, exitCode: doc.exitCode, instructions: doc.instructions });
        out.line(`${file}: ${fmtInt(doc.prompt.length)}-token loader prompt, ${fmtInt(expected.length)} expected tokens ` +
          `(${fmtInt(doc.instructions)} instructions${halted ? `, HALT(${doc.exitCode})` : ', no HALT within the budget'}) → ${target}`);
        return 0;
      })(),
    );
}
