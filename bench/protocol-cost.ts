/**
 * Protocol cost: tokens per instruction of the v1 token protocol on the committed firmware demos
 * (fixtures/firmware/*.elf, MMIO console builds) and the ISA test programs (fixtures/isa/*.elf),
 * from the golden token trace (riscv/golden-trace.ts). Prints a table per set and one JSON line.
 * The `.linux.elf` demo builds print through `ecall` write, which has no v1 token, and are skipped.
 * Run: npx tsx bench/protocol-cost.ts
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { INSTR_CLASSES, goldenTokens, type ProtocolSummary } from '../riscv/golden-trace.ts';
import { PROTOCOL_VERSION } from '../riscv/protocol.ts';
import { ChipcError } from '../src/util/errors.ts';
import { table } from '../src/cli/support/output.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** Both fixture sets are built for a 32 KiB RAM at 0x80000000 (fixtures/isa/index.json, firmware/expected.ts). */
const MEM = { base: 0x80000000, size: 32 * 1024 };

function elfs(dir: string): string[] {
  return fs.readdirSync(path.join(root, dir)).filter((f) => f.endsWith('.elf') && !f.endsWith('.linux.elf')).sort();
}

const fmt = (x: number): string => x.toFixed(3);

function report(title: string, dir: string): Record<string, ProtocolSummary & { halt: string }> {
  const rows: (string | number)[][] = [];
  const out: Record<string, ProtocolSummary & { halt: string }> = {};
  const kinds: Record<string, number> = {};
  const total = { instructions: 0, tokens: 0, cls: Object.fromEntries(INSTR_CLASSES.map((c) => [c, [0, 0]])) as Record<string, [number, number]> };
  const skipped: string[] = [];
  for (const f of elfs(dir)) {
    let t;
    try {
      t = goldenTokens(fs.readFileSync(path.join(root, dir, f)), { mem: MEM });
    } catch (e) {
      // A program the protocol has no stream for (word-crossing accesses) is listed, not counted.
      if (!(e instanceof ChipcError) || e.code !== 'protocol.unsupported') throw e;
      skipped.push(`${f}: ${e.message}`);
      continue;
    }
    const s = t.summary;
    out[f] = { ...s, halt: t.halt.reason };
    total.instructions += s.instructions;
    total.tokens += s.tokens;
    for (const [k, n] of Object.entries(s.byKind)) kinds[k] = (kinds[k] ?? 0) + n;
    for (const c of INSTR_CLASSES) {
      total.cls[c]![0] += s.byClass[c].instructions;
      total.cls[c]![1] += s.byClass[c].tokens;
    }
    rows.push([f, t.halt.reason, s.instructions, s.tokens, fmt(s.tokensPerInstruction),
      ...INSTR_CLASSES.map((c) => (s.byClass[c].instructions === 0 ? '-' : fmt(s.byClass[c].tokensPerInstruction)))]);
  }
  rows.push(['all', '', total.instructions, total.tokens, fmt(total.tokens / total.instructions),
    ...INSTR_CLASSES.map((c) => (total.cls[c]![0] === 0 ? '-' : fmt(total.cls[c]![1] / total.cls[c]![0])))]);
  console.log(`${title}: tokens per instruction (overall and per class)`);
  console.log(table(['program', 'halt', 'instrs', 'tokens', 'tok/instr', ...INSTR_CLASSES], rows));
  for (const line of skipped) console.log(`not counted (no ${PROTOCOL_VERSION} stream): ${line}`);
  const mix = INSTR_CLASSES.map((c) => [c, total.cls[c]![0], total.cls[c]![1]] as (string | number)[]);
  console.log(`${title}: class mix (all programs)`);
  console.log(table(['class', 'instrs', 'tokens'], mix));
  console.log(`${title}: generated tokens by kind (all programs)`);
  console.log(table(Object.keys(kinds).filter((k) => k !== 'BOS'), [Object.keys(kinds).filter((k) => k !== 'BOS').map((k) => kinds[k]!)]));
  console.log('');
  return out;
}

const firmware = report('firmware demos (fixtures/firmware)', 'fixtures/firmware');
const isa = report('ISA tests (fixtures/isa)', 'fixtures/isa');
console.log(JSON.stringify({ protocol: PROTOCOL_VERSION, firmware, isa }));
