/**
 * `chipc trace FILE.elf -o TRACE.json [--code-size BYTES] [--mem-size BYTES] [--max-instructions N]`:
 * writes what an outside engine needs to run a program on the generic chip (`chipc cpu`) by plain
 * greedy decoding and check it (tools/hf_check.py): the loader prompt (token protocol v5,
 * "Loading by prompt": BOS, then E/D/H write tokens for every non-zero word, the two
 * configuration words and sp, then J(entry)) and the golden emulator's generated tokens up to
 * HALT or TRAP. The RAM sizes must be the chip's (defaults: the generic chip's). Atomic write
 * (temporary name, then rename).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { ChipcError } from '../../util/errors.ts';
import { codeSizeOption, inputOption, integerOption, memSizeOption, type InputFlags } from '../support/options.ts';
import { DEFAULT_CODE_BYTES, DEFAULT_MEM_BYTES, checkChipFits, goldenTokens, programOf, readChipCheckpoint } from '../../chip/run.ts';
import { PROTOCOL_VERSION, decodeToken } from '../../../riscv/protocol.ts';
import { fmtInt, makeOut } from '../support/output.ts';
import type { Runner } from '../support/output.ts';
import { prepareOutput } from '../support/files.ts';
import { makeParentDir, removeTemp, tempSibling } from '../../util/temp-files.ts';
import { summaryOf } from '../support/command-table.ts';

/** The trace file (format "chipc-trace", version 1). */
export interface TraceFile {
  format: 'chipc-trace';
  version: 1;
  protocol: string;
  elf: { name: string; sha256: string };
  memBytes: number;
  /** The chip's code RAM in bytes (the golden emulator's fetch limit). */
  codeBytes: number;
  /**
   * Model id of chip token t is t + idOffset: 0 for the chip alone, the host's vocabulary size for a
   * merged model (docs/merge.md). `prompt` and `expected` are model ids.
   */
  idOffset: number;
  /** Fed as the prompt: the loader prompt ending with J(entry). */
  prompt: number[];
  /** What greedy decoding must generate after the prompt (ends with HALT when `halted`, with TRAP when `trap` is set). */
  expected: number[];
  halted: boolean;
  exitCode: number | null;
  /** The cause of the final TRAP (the program stopped on an illegal instruction, an ebreak or a fault), or null. */
  trap: string | null;
  instructions: number;
}

interface TraceCliOptions extends InputFlags { output?: string; overwrite?: boolean; memSize?: string; codeSize?: string; model?: string; maxInstructions: string; json?: boolean }

export function registerTrace(program: Command, run: Runner): void {
  program
    .command('trace')
    .description(summaryOf('trace'))
    .argument('<elf>', 'an RV32IM+Zba ELF (code and data from 0x80000000)')
    .requiredOption('-o, --output <file>', 'the trace file to write')
    .option('--code-size <bytes>', `code RAM size from 0x80000000 (must match the chip; default ${DEFAULT_CODE_BYTES}, with --model the chip's)`)
    .option('--mem-size <bytes>', `data RAM size from 0x80000000 (must match the chip; default ${DEFAULT_MEM_BYTES}, with --model the chip's)`)
    .option('--model <ckpt>', 'take the RAM sizes from this chip checkpoint (chipc cpu) and check that the program fits it')
    .option('--max-instructions <n>', 'instruction budget of the golden run', '10000000')
    .option('--overwrite', 'replace an existing trace file')
    .option('--input <text>', 'console input: these bytes (UTF-8), fed in the prompt after the program (docs/token-protocol.md "Console input")')
    .option('--input-file <file>', 'console input: the bytes of this file')
    .option('--json', 'print one JSON document')
    .action((file: string, o: TraceCliOptions) =>
      run(() => {
        const out = makeOut(Boolean(o.json));
        if (!fs.existsSync(file)) throw new ChipcError('cli.file', `${file} does not exist`);
        prepareOutput(o.output!, { option: '-o', inputs: [file, o.model], overwrite: o.overwrite === true });
        const ck = o.model !== undefined ? readChipCheckpoint(o.model) : null;
        const rv32 = ck?.manifest.rv32;
        if (ck !== null && (typeof rv32?.memWords !== 'number' || typeof rv32.codeWords !== 'number')) {
          throw new ChipcError('run.model', `${o.model}: its manifest does not record the chip's RAM sizes; make the chip with chipc cpu`);
        }
        const memBytes = o.memSize !== undefined ? memSizeOption(o.memSize) : rv32 !== undefined ? rv32.memWords * 4 : DEFAULT_MEM_BYTES;
        const codeBytes = o.codeSize !== undefined ? codeSizeOption(o.codeSize) : rv32 !== undefined ? rv32.codeWords * 4 : DEFAULT_CODE_BYTES;
        const maxInstructions = integerOption(o.maxInstructions, '--max-instructions', 'cli.max-instructions', { min: 1 });
        const elf = fs.readFileSync(file);
        const input = inputOption(o);
        const prog = programOf(elf, { memBytes, codeBytes, label: file, input });
        if (ck !== null) {
          // The chip's bank size (what one GDN layer of its target holds) decides only the fit check here.
          if (typeof rv32?.memBankWords === 'number') prog.chip.memBankWords = rv32.memBankWords;
          checkChipFits(ck, prog);
        }
        const g = goldenTokens(elf, { maxInstructions, mem: { size: prog.memBytes }, codeBytes: prog.codeBytes, input, label: file });
        // The golden stream starts with the start prompt [BOS, input…, J(entry)]; the loader prompt ends with the same tokens.
        const expected = Array.from(g.tokens.subarray(prog.start.length));
        const last = expected.length > 0 ? decodeToken(expected[expected.length - 1]!) : null;
        const halted = last !== null && last.kind === 'HALT';
        const idOffset = ck?.idOffset ?? 0;
        const doc: TraceFile = {
          format: 'chipc-trace', version: 1, protocol: PROTOCOL_VERSION,
          elf: { name: path.basename(file), sha256: crypto.createHash('sha256').update(elf).digest('hex') },
          memBytes: prog.memBytes, codeBytes: prog.codeBytes, idOffset,
          prompt: prog.loader.map((t) => t + idOffset), expected: expected.map((t) => t + idOffset), halted,
          exitCode: last !== null && last.kind === 'HALT' ? last.code : null, trap: g.halt.trap ?? null, instructions: g.summary.instructions,
        };
        const target = o.output as string;
        const tmp = tempSibling(target);
        try {
          makeParentDir(target);
          fs.writeFileSync(tmp, JSON.stringify(doc) + '\n');
          fs.renameSync(tmp, target);
        } catch (e) {
          removeTemp(tmp);
          throw new ChipcError('cli.write', `cannot write ${target}: ${(e as Error).message}`, { cause: e });
        }
        out.emit({ output: target, idOffset, promptTokens: doc.prompt.length, expectedTokens: expected.length, halted, exitCode: doc.exitCode, trap: doc.trap, instructions: doc.instructions });
        out.line(`${file}: ${fmtInt(doc.prompt.length)}-token loader prompt, ${fmtInt(expected.length)} expected tokens${idOffset > 0 ? ` (ids offset by ${fmtInt(idOffset)}: a merged model)` : ''} ` +
          `(${fmtInt(doc.instructions)} instructions${halted ? `, HALT(${doc.exitCode})` : doc.trap !== null ? `, TRAP(${doc.trap})` : ', no HALT within the budget'}) → ${target}`);
        return 0;
      })(),
    );
}
