/**
 * Pass 1 — validate. Reports every problem in a circuit at once (never just the first), each
 * with its source location: problems recorded while building (bad arguments), cycles, wires
 * never assigned, a wire assigned a signal whose range exceeds the wire's declared range, RAM
 * addresses or field values outside the RAM's shape, and lookups whose key and query differ.
 * Adds nothing to the IR; throws a ChipcError listing all problems when there are any.
 */
import { ChipcError } from '../util/errors.ts';
import { topoOrder } from '../ir/deps.ts';
import { fmtLoc, type CircuitIR, type NodeId, type Problem, type Range } from '../ir/types.ts';

export class CircuitErrors extends ChipcError {
  constructor(readonly problems: Problem[]) {
    super(
      'circuit.invalid',
      `${problems.length} problem(s) in the circuit:\n` +
        problems.map((p) => `  ${fmtLoc(p.loc)}: error[${p.code}]: ${p.message}`).join('\n'),
    );
  }
}

function within(inner: Range, outer: Range): boolean {
  return inner.lo >= outer.lo && inner.hi <= outer.hi;
}

export function validate(ir: CircuitIR, buildProblems: Problem[] = []): void {
  const problems: Problem[] = [...buildProblems];
  const range = (id: NodeId): Range => ir.nodes[id]!.range;
  const name = (id: NodeId): string => ir.nodes[id]!.name;

  for (const n of ir.nodes) {
    if (n.op !== 'wire') continue;
    if (n.source === null) {
      problems.push({ code: 'wire.unassigned', message: `wire "${n.name}" is read but never assigned (an undefined signal)`, loc: n.loc });
    } else if (!within(range(n.source), n.range)) {
      const r = range(n.source);
      problems.push({
        code: 'signal.range',
        message: `wire "${n.name}" is declared [${n.range.lo}, ${n.range.hi}] but is assigned "${name(n.source)}" with range [${r.lo}, ${r.hi}]`,
        loc: n.loc,
      });
    }
  }

  for (const r of ir.rams) {
    const rowRange = { lo: 0, hi: r.rows - 1 };
    if (r.write) {
      if (!within(range(r.write.addr), rowRange)) {
        const a = range(r.write.addr);
        problems.push({ code: 'ram.addr', message: `RAM "${r.name}" write address "${name(r.write.addr)}" has range [${a.lo}, ${a.hi}], outside the ${r.rows} rows`, loc: r.write.loc });
      }
      r.write.values.forEach((id, i) => {
        const f = r.fields[i];
        if (f && !within(range(id), f)) {
          const vr = range(id);
          problems.push({ code: 'ram.value', message: `RAM "${r.name}" field ${i} holds [${f.lo}, ${f.hi}] but is written "${name(id)}" with range [${vr.lo}, ${vr.hi}]`, loc: r.write!.loc });
        }
      });
    }
    for (const p of r.reads) {
      if (!within(range(p.addr), rowRange)) {
        const a = range(p.addr);
        problems.push({ code: 'ram.addr', message: `RAM "${r.name}" read address "${name(p.addr)}" has range [${a.lo}, ${a.hi}], outside the ${r.rows} rows`, loc: p.loc });
      }
    }
    if (r.reads.length > 0 && r.write === null) {
      problems.push({ code: 'ram.nowrite', message: `RAM "${r.name}" is read but never written (it would always read 0)`, loc: r.loc });
    }
  }

  const { cyclic } = topoOrder(ir);
  if (cyclic.length > 0) {
    const names = cyclic.slice(0, 8).map((id) => `"${name(id)}" (${fmtLoc(ir.nodes[id]!.loc)})`);
    problems.push({
      code: 'circuit.cycle',
      message: `a combinational cycle within one position through ${names.join(', ')}${cyclic.length > 8 ? ', …' : ''}; state that crosses positions must go through a RAM, a lookup or the emitted token`,
      loc: ir.nodes[cyclic[0]!]!.loc,
    });
  }

  if (problems.length > 0) {
    problems.sort((a, b) => a.loc.file.localeCompare(b.loc.file) || a.loc.line - b.loc.line || a.loc.col - b.loc.col);
    throw new CircuitErrors(problems);
  }
}
