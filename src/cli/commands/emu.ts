/**
 * `chipc emu FILE.elf`: run an RV32IM+Zba ELF on the golden emulator (riscv/). Prints the
 * program's console output, then how it halted and the instruction count (or one JSON document
 * with --json). Exit status: the program's exit code (ecall 93 or tohost) mapped into 0..255
 * (values outside it become 255, so a failure never reads as success); 1 for an illegal
 * instruction, a fault, ebreak or the instruction limit; 2 when the ELF cannot be loaded.
 */
import fs from 'node:fs';
import type { Command } from 'commander';
import chalk from 'chalk';
import { loadElf, cpuForProgram } from '../../../riscv/elf.ts';
import { DEFAULT_MAX_INSTRUCTIONS, type TraceEvent } from '../../../riscv/cpu.ts';
import { DEFAULT_MEM_BASE, DEFAULT_MEM_SIZE, hex } from '../../../riscv/memory.ts';
import { ABI_NAMES } from '../../../riscv/decode.ts';
import { ChipcError } from '../../util/errors.ts';
import { inputOption, parseSize, type InputFlags } from '../support/options.ts';
import { applyWrites, firstRunInputWrites, inputAreaOf } from '../../../riscv/console-input.ts';
import { EXIT_DIFFERENT, fmtInt, makeOut } from '../support/output.ts';
import type { Runner } from '../support/output.ts';
import { summaryOf } from '../support/command-table.ts';

/** One trace line: `pc  word  disassembly  [rd = value]`. */
export function formatTrace(e: TraceEvent): string {
  const w = e.rd === null ? '' : `  ${ABI_NAMES[e.rd]} = 0x${hex(e.rdValue!)}`;
  return `${hex(e.pc)}  ${hex(e.word)}  ${e.disasm.padEnd(28)}${w}`.trimEnd();
}

/** Map a program exit code to a process exit status. */
export function exitStatus(code: number): number {
  return code >= 0 && code <= 255 ? code : 255;
}

export function registerEmu(program: Command, run: Runner): void {
  program
    .command('emu')
    .description(summaryOf('emu'))
    .argument('<file>', 'a static ELF32 RISC-V executable')
    .option('--trace', 'print every retired instruction (pc, word, disassembly, register write)')
    .option('--max-instructions <n>', 'stop after this many instructions', String(DEFAULT_MAX_INSTRUCTIONS))
    .option('--mem-size <bytes>', 'RAM size (k/m suffixes allowed)', String(DEFAULT_MEM_SIZE))
    .option('--mem-base <addr>', 'RAM base address', `0x${DEFAULT_MEM_BASE.toString(16)}`)
    .option('--input <text>', 'console input: these bytes (UTF-8), read by the program\'s getchar (docs/token-protocol.md "Console input")')
    .option('--input-file <file>', 'console input: the bytes of this file')
    .option('--json', 'print one JSON document')
    .action((file: string, opts: { trace?: boolean; maxInstructions: string; memSize: string; memBase: string; json?: boolean } & InputFlags) =>
      run(() => {
        const out = makeOut(Boolean(opts.json));
        const maxInstructions = parseSize(opts.maxInstructions, '--max-instructions');
        const size = parseSize(opts.memSize, '--mem-size');
        const base = parseSize(opts.memBase, '--mem-base');
        let bytes: Uint8Array;
        try {
          bytes = fs.readFileSync(file);
        } catch (e) {
          throw new ChipcError('cli.file', `cannot read ${file}: ${(e as Error).message}`);
        }
        const input = inputOption(opts);
        const prog = loadElf(bytes, { base, size }, file);
        applyWrites(prog.memory, firstRunInputWrites(inputAreaOf(prog.symbols), input, file));
        const cpu = cpuForProgram(prog);
        const trace: ReturnType<typeof traceJson>[] = [];
        const t0 = performance.now();
        const r = cpu.run({
          maxInstructions,
          trace: opts.trace ? (e) => (out.json ? trace.push(traceJson(e)) : out.line(formatTrace(e))) : undefined,
        });
        const seconds = (performance.now() - t0) / 1000;
        const status = r.reason === 'exit' || r.reason === 'tohost' ? exitStatus(r.exitCode!) : EXIT_DIFFERENT;
        out.emit({
          file, reason: r.reason, exitCode: r.exitCode, instret: r.instret, pc: `0x${hex(r.pc)}`, message: r.message,
          console: r.console, status, ...(opts.trace ? { trace } : {}),
        });
        if (!out.json) {
          process.stdout.write(r.consoleBytes);
          if (r.consoleBytes.length > 0 && r.consoleBytes[r.consoleBytes.length - 1] !== 10) out.line();
          const ok = (r.reason === 'exit' || r.reason === 'tohost') && r.exitCode === 0;
          out.line(`${ok ? chalk.green(r.reason) : chalk.red(r.reason)}: ${r.message}; ${fmtInt(r.instret)} instructions ` +
            `(${fmtInt(Math.round(r.instret / Math.max(seconds, 1e-9)))}/s)`);
        }
        return status;
      })(),
    );
}

function traceJson(e: TraceEvent) {
  return { pc: `0x${hex(e.pc)}`, word: `0x${hex(e.word)}`, disasm: e.disasm, rd: e.rd === null ? null : ABI_NAMES[e.rd], value: e.rdValue };
}
