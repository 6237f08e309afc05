/**
 * The fast IR evaluator (src/ir/evaluate-fast.ts) against the IR interpreter, the oracle: on every
 * example circuit (random token streams, fast-check) and on the RV32 chip circuit running real
 * programs (teacher-forced on the golden emulator's token stream), the two must agree on the
 * emitted token and on every node value at every position — and, where the interpreter raises a
 * ChipcError (range violations, lookup ties, unmatched emit rows), on its code and message.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import fs from 'node:fs';
import { buildCircuit, loadCircuitFile } from '../src/dsl/load.ts';
import { defineCircuit } from '../src/dsl/index.ts';
import { Interpreter } from '../src/ir/interpret.ts';
import { FastEvaluator } from '../src/ir/evaluate-fast.ts';
import type { CircuitIR } from '../src/ir/types.ts';
import { ChipcError } from '../src/util/errors.ts';
import { chipRamContents, programOf, type ChipProgram } from '../src/chip/run.ts';
import { cpuCircuit } from '../src/cpu/cpu.ts';
import { goldenTokens } from '../riscv/golden-trace.ts';

type Outcome = { emitted: number | null; values: number[] } | { error: string };

function errorOf(e: unknown): { error: string } {
  if (!(e instanceof ChipcError)) throw e;
  return { error: `${e.code}: ${e.message}` };
}

/** Per position: the emitted token and every node value, or the ChipcError that ended the run. */
function runInterpreter(it: Interpreter, tokens: readonly number[]): Outcome[] {
  const out: Outcome[] = [];
  for (const t of tokens) {
    try {
      const r = it.step(t);
      out.push({ emitted: r.emitted, values: Array.from(r.values) });
    } catch (e) {
      out.push(errorOf(e));
      break;
    }
  }
  return out;
}

function runFast(fe: FastEvaluator, tokens: readonly number[]): Outcome[] {
  const out: Outcome[] = [];
  for (const t of tokens) {
    try {
      const emitted = fe.step(t);
      out.push({ emitted, values: Array.from(fe.values) });
    } catch (e) {
      out.push(errorOf(e));
      break;
    }
  }
  return out;
}

const EXAMPLES = fs.readdirSync('circuits/examples').filter((f) => f.endsWith('.ts')).map((f) => f.replace(/\.ts$/, '')).sort();

/** BOS (when the circuit has one), then random ids of its vocabulary other than BOS. */
function streams(ir: CircuitIR, maxLen: number): fc.Arbitrary<number[]> {
  const others = fc.integer({ min: 0, max: ir.vocab - 1 }).filter((t) => t !== ir.bos);
  return fc.array(others, { minLength: 1, maxLength: maxLen }).map((t) => (ir.bos === null ? t : [ir.bos, ...t]));
}

describe('FastEvaluator matches the Interpreter on the example circuits', () => {
  it('finds the example circuits', () => {
    expect(EXAMPLES.length).toBeGreaterThanOrEqual(8);
  });
  for (const name of EXAMPLES) {
    it(`${name}: random token streams, every emitted token and node value`, async () => {
      const ir = await loadCircuitFile(`circuits/examples/${name}.ts`);
      const it = new Interpreter(ir);
      const fe = new FastEvaluator(ir);
      let positions = 0;
      fc.assert(fc.property(streams(ir, 40), (tokens) => {
        it.reset();
        fe.reset();
        const want = runInterpreter(it, tokens);
        const got = runFast(fe, tokens);
        expect(got).toEqual(want);
        positions += want.length;
      }), { numRuns: 60, seed: 20261129 });
      expect(positions).toBeGreaterThan(60);
    });
  }

  it('evaluators of one circuit share its generated code but not its state (RAMs, lookups, delays)', async () => {
    for (const name of ['kv', 'regfile', 'delay']) {
      const ir = await loadCircuitFile(`circuits/examples/${name}.ts`);
      fc.assert(fc.property(streams(ir, 30), streams(ir, 30), (s1, s2) => {
        const want1 = runInterpreter(new Interpreter(ir), s1);
        const want2 = runInterpreter(new Interpreter(ir), s2);
        const a = new FastEvaluator(ir);
        const b = new FastEvaluator(ir); // the second one reuses the code generated for the first
        const got: [Outcome[], Outcome[]] = [[], []];
        const ended = (o: Outcome[]) => o.length > 0 && 'error' in o[o.length - 1]!;
        // interleaved, one position each in turn: a state shared between the two would show in both
        for (let i = 0; i < Math.max(s1.length, s2.length); i++) {
          ([[a, s1], [b, s2]] as const).forEach(([fe, s], k) => {
            if (i < s.length && !ended(got[k]!)) got[k]!.push(...runFast(fe, [s[i]!]));
          });
        }
        expect(got[0]).toEqual(want1);
        expect(got[1]).toEqual(want2);
      }), { numRuns: 20, seed: 20261203 });
    }
  });

  it('kv: ties between published entries raise the same ChipcError in both', async () => {
    const ir = await loadCircuitFile('circuits/examples/kv.ts');
    // Two puts of key 1 with the same stamp 5 (values 2 and 3), then a get of key 1.
    const tokens = [260, 64 * 1 + 16 * 2 + 5, 64 * 1 + 16 * 3 + 5, 256 + 1];
    const want = runInterpreter(new Interpreter(ir), tokens);
    const last = want[want.length - 1]!;
    expect('error' in last && last.error.startsWith('interp.lookup')).toBe(true);
    expect(runFast(new FastEvaluator(ir), tokens)).toEqual(want);
  });
});

describe('FastEvaluator errors', () => {
  /** The adder with one node's declared range narrowed so that some inputs leave it. */
  async function narrowed(nodeName: string, hi: number): Promise<CircuitIR> {
    const ir = structuredClone(await loadCircuitFile('circuits/examples/adder.ts'));
    const n = ir.nodes.find((x) => x.name === nodeName);
    if (!n) throw new Error(`no node ${nodeName}`);
    n.range = { lo: n.range.lo, hi };
    return ir;
  }

  it('a table value outside its declared range is a ChipcError naming the signal', async () => {
    const ir = await narrowed('c4', 0);
    // 0xff: a = b = 15, the sum 30 carries out: c4 = 1 > 0.
    const tokens = [256, 0x11, 0xff];
    const want = runInterpreter(new Interpreter(ir), tokens);
    expect(want.length).toBe(3);
    const got = runFast(new FastEvaluator(ir), tokens);
    expect(got).toEqual(want);
    const err = got[2]!;
    expect('error' in err ? err.error : '').toMatch(/^interp\.range: .*signal "c4" is 1, outside its range \[0, 0\] \(position 2\)$/);
    expect(() => { const fe = new FastEvaluator(ir); fe.step(256); fe.step(0xff); }).toThrow(ChipcError);
  });

  it('a linear value outside its declared range is caught too; checks: false skips node checks', async () => {
    const ir = await loadCircuitFile('circuits/examples/adder.ts');
    const lin = ir.nodes.find((n) => n.op === 'linear' && n.range.hi >= 2);
    expect(lin).toBeDefined();
    const bad = structuredClone(ir);
    bad.nodes[lin!.id]!.range = { lo: 0, hi: 0 };
    const tokens = [256, 0xff, 0x00];
    const want = runInterpreter(new Interpreter(bad), tokens);
    expect('error' in want[want.length - 1]!).toBe(true);
    expect(runFast(new FastEvaluator(bad), tokens)).toEqual(want);
    // Without node checks the narrowed circuit computes what the original does.
    const unchecked = runFast(new FastEvaluator(bad, { checks: false }), tokens);
    expect(unchecked).toEqual(runInterpreter(new Interpreter(ir), tokens));
  });

  it('no matching emit row, bad tokens and a bad BOS are the same ChipcErrors', () => {
    const ir = buildCircuit(defineCircuit({ name: 'partial', vocab: 5, bos: 4 }, (c) => {
      const x = c.tokenField('x', (t) => t % 4, [0, 3]);
      // Rows for x = 0 and x = 2 only: tokens 1 and 3 have no row.
      c.emitRows([x], [{ token: 0, values: [0] }, { token: 2, values: [2] }]);
    }), '<partial>');
    const fe = new FastEvaluator(ir);
    expect(fe.emitMode).toBe('map');
    for (const tokens of [[4, 0, 2, 2, 3], [0], [4, 7], [4, 1.5]]) {
      expect(runFast(new FastEvaluator(ir), tokens)).toEqual(runInterpreter(new Interpreter(ir), tokens));
    }
    // The row scan (no dense map) behaves the same.
    const scan = new FastEvaluator(ir, { maxEmitMap: 1 });
    expect(scan.emitMode).toBe('scan');
    expect(runFast(scan, [4, 0, 2, 3])).toEqual(runInterpreter(new Interpreter(ir), [4, 0, 2, 3]));
    const last = runFast(new FastEvaluator(ir), [4, 0, 3]).at(-1)!;
    expect('error' in last ? last.error : '').toMatch(/^interp\.emit: .*no emit row matches the field values \(3\)/);
  });

  it('setRamRow refuses bad rows and values as the Interpreter does', async () => {
    const ir = await loadCircuitFile('circuits/examples/regfile.ts');
    const fe = new FastEvaluator(ir);
    const it = new Interpreter(ir);
    const r = ir.rams[0]!;
    const good = r.fields.map((f) => f.hi);
    fe.setRamRow(0, r.rows - 1, good);
    it.setRamRow(0, r.rows - 1, good);
    expect(fe.ramRow(0, r.rows - 1)).toEqual(it.ramRow(0, r.rows - 1));
    const calls: [number, number, number[]][] = [
      [5, 0, good], [0, r.rows, good], [0, -1, good], [0, 0, good.slice(1)], [0, 0, r.fields.map((f) => f.hi + 1)],
    ];
    for (const [ram, row, vals] of calls) {
      let want = '';
      try { it.setRamRow(ram, row, vals); } catch (e) { want = errorOf(e).error; }
      expect(want).toMatch(/^interp\.ram: /);
      expect(() => fe.setRamRow(ram, row, vals)).toThrow(want.replace(/^interp\.ram: /, ''));
    }
  });
});

describe('FastEvaluator matches the Interpreter on the RV32 chip', () => {
  /** Load a program's image and configuration into an evaluator, as src/chip/run.ts does (chipRamContents). */
  function load(ir: CircuitIR, ev: { setRamRow(ram: number, row: number, v: readonly number[]): void }, prog: ChipProgram): void {
    const names = chipRamContents(prog).map(([name]) => name);
    expect(names).toEqual(expect.arrayContaining(['code', 'mem', 'regs', 'codeEnd', 'tohost']));
    for (const [name, rows] of chipRamContents(prog)) {
      const ram = ir.rams.findIndex((r) => r.name === name);
      expect(ram).toBeGreaterThanOrEqual(0);
      for (const [row, v] of rows) ev.setRamRow(ram, row, v);
    }
  }

  const FILES = [['fixtures/isa/alu.elf', 200], ['fixtures/firmware/hello.elf', 200]] as const;
  // One generic chip for both programs (building it is the slow part): a code RAM that holds the
  // larger program's code; each program's code end and tohost arrive as configuration (RAM rows).
  const codeBytes = Math.max(...FILES.map(([f]) => programOf(fs.readFileSync(f)).codeBytes));
  let chip: CircuitIR | undefined;
  function chipFor(prog: ChipProgram): CircuitIR {
    expect(prog.codeBytes).toBe(codeBytes);
    return (chip ??= buildCircuit(cpuCircuit(prog.chip), 'src/cpu/cpu.ts'));
  }

  for (const [file, positions] of FILES) {
    it(`${file}: the first ${positions} positions of the golden stream, every node value`, () => {
      const elf = fs.readFileSync(file);
      const prog = programOf(elf, { codeBytes });
      const golden = goldenTokens(elf, { mem: { size: prog.memBytes }, codeBytes: prog.codeBytes, maxInstructions: positions });
      const ir = chipFor(prog);
      const it = new Interpreter(ir);
      const fe = new FastEvaluator(ir);
      load(ir, it, prog);
      load(ir, fe, prog);
      const n = Math.min(positions, golden.tokens.length);
      expect(n).toBeGreaterThan(100);
      let firstDiff: string | null = null;
      for (let p = 0; p < n; p++) {
        const t = golden.tokens[p]!;
        const want = it.step(t);
        const got = fe.step(t);
        expect(got).toBe(want.emitted);
        // Compare the whole value vector at once (one expect per position keeps this fast).
        if (firstDiff === null && !want.values.every((x, i) => x === fe.values[i])) {
          const i = want.values.findIndex((x, k) => x !== fe.values[k]);
          firstDiff = `position ${p}: node ${i} "${ir.nodes[i]!.name}" is ${fe.values[i]}, the interpreter has ${want.values[i]}`;
        }
        // From position 1 on, the chip generates the golden stream's next token.
        if (p >= 1 && p + 1 < golden.tokens.length) expect(got).toBe(golden.tokens[p + 1]);
      }
      expect(firstDiff).toBeNull();
      // RAM contents agree afterwards too.
      for (let ram = 0; ram < ir.rams.length; ram++) {
        for (let row = 0; row < Math.min(ir.rams[ram]!.rows, 64); row++) expect(fe.ramRow(ram, row)).toEqual(it.ramRow(ram, row));
      }
    }, 60_000);
  }
});
