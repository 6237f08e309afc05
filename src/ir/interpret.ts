/**
 * The IR interpreter: runs a circuit token by token with exact integer semantics. It is the
 * oracle the compiled weights are compared against (semantics in types.ts). Every value is
 * checked against its node's range at run time; a violation is a ChipcError naming the signal
 * and its source location.
 */
import { ChipcError } from '../util/errors.ts';
import { topoOrder } from './deps.ts';
import { fmtLoc, type CircuitIR, type CompareOp, type IrNode, type LinearNode, type NodeId, type SelectNode } from './types.ts';

export interface PositionResult {
  position: number;
  token: number;
  /** Value of every node at this position, indexed by node id. */
  values: Int32Array;
  /** The token the circuit emits (null when it has no emit). */
  emitted: number | null;
}

interface Published {
  key: number[];
  value: number[];
  stamp: number;
  position: number;
}

function compare(op: CompareOp, a: number, b: number): number {
  switch (op) {
    case 'eq': return a === b ? 1 : 0;
    case 'ne': return a !== b ? 1 : 0;
    case 'lt': return a < b ? 1 : 0;
    case 'le': return a <= b ? 1 : 0;
    case 'gt': return a > b ? 1 : 0;
    case 'ge': return a >= b ? 1 : 0;
  }
}

/** Index of a tuple of values in a row-major table over the given nodes' ranges. */
function tupleIndex(ir: CircuitIR, nodes: NodeId[], v: Int32Array): number {
  let idx = 0;
  for (const id of nodes) {
    const r = ir.nodes[id]!.range;
    idx = idx * (r.hi - r.lo + 1) + (v[id]! - r.lo);
  }
  return idx;
}

export class Interpreter {
  private readonly order: NodeId[];
  private ram: Int32Array[][] = [];
  private published: Published[][] = [];
  private pos = 0;
  /** Every node's value at the previous position (for `prev`). */
  private last: Int32Array | null = null;

  constructor(readonly ir: CircuitIR) {
    const { order, cyclic } = topoOrder(ir);
    if (cyclic.length > 0) {
      const n = ir.nodes[cyclic[0]!]!;
      throw new ChipcError('ir.cycle', `${fmtLoc(n.loc)}: the circuit has a cycle through "${n.name}" (validate it first)`);
    }
    this.order = order;
    this.reset();
  }

  get position(): number {
    return this.pos;
  }

  reset(): void {
    this.ram = this.ir.rams.map((r) => Array.from({ length: r.rows }, () => new Int32Array(r.fields.length)));
    this.published = this.ir.lookups.map(() => []);
    this.pos = 0;
    this.last = null;
  }

  /** The current contents of a RAM row (a copy). */
  ramRow(ram: number, row: number): number[] {
    return Array.from(this.ram[ram]![row]!);
  }

  private fail(n: { loc: { file: string; line: number; col: number } }, code: string, msg: string): never {
    throw new ChipcError(code, `${fmtLoc(n.loc)}: ${msg} (position ${this.pos})`);
  }

  /** A choice (c.choose) with two conditions that hold is an error naming both cases. */
  private checkChoice(n: LinearNode, v: Int32Array): void {
    let first = -1;
    n.terms.forEach((t, k) => {
      const sel = this.ir.nodes[t.node]!;
      if (sel.op !== 'select' || v[sel.cond] === 0) return;
      if (first >= 0) {
        const name = (i: number) => `"${this.ir.nodes[(this.ir.nodes[n.terms[i]!.node] as SelectNode).cond]!.name}"`;
        this.fail(n, 'interp.choice', `choose "${n.name}": cases ${first} (${name(first)}) and ${k} (${name(k)}) both hold`);
      }
      first = k;
    });
  }

  /** Run one position with input `token`. */
  step(token: number): PositionResult {
    const ir = this.ir;
    if (!Number.isInteger(token) || token < 0 || token >= ir.vocab) {
      throw new ChipcError('interp.token', `token ${token} is outside the circuit vocabulary [0, ${ir.vocab})`);
    }
    if (this.pos === 0 && ir.bos !== null && token !== ir.bos) {
      throw new ChipcError('interp.bos', `the first token must be the bos token ${ir.bos}, got ${token}`);
    }
    if (this.pos > 0 && ir.bos !== null && token === ir.bos && ir.lookups.length > 0) {
      // BOS is the lookups' no-match sink: it may only start a sequence.
      throw new ChipcError('interp.bos', `the bos token ${ir.bos} may only start a sequence (it is the lookups' sink); got it at position ${this.pos}`);
    }
    const v = new Int32Array(ir.nodes.length);
    const ramDone = new Set<number>();
    const lookupDone = new Set<number>();
    for (const id of this.order) {
      const n = ir.nodes[id]!;
      const val = this.evalNode(n, v, token, ramDone, lookupDone);
      if (val < n.range.lo || val > n.range.hi) {
        this.fail(n, 'interp.range', `signal "${n.name}" is ${val}, outside its range [${n.range.lo}, ${n.range.hi}]`);
      }
      v[id] = val;
    }
    // RAM writes of RAMs that nobody reads still happen.
    for (const r of ir.rams) if (!ramDone.has(r.id)) this.applyWrite(r.id, v);
    for (const lk of ir.lookups) if (!lookupDone.has(lk.id)) this.publish(lk.id, v);
    const emitted = ir.emit === null ? null : ir.emit.rows ? this.emitRow(v) : ir.emit.tokens[tupleIndex(ir, ir.emit.fields, v)]!;
    const res: PositionResult = { position: this.pos, token, values: v, emitted };
    this.last = v;
    this.pos++;
    return res;
  }

  /** Run a whole token sequence (teacher forcing). */
  run(tokens: number[]): PositionResult[] {
    return tokens.map((t) => this.step(t));
  }

  /** Feed `prompt`, then feed each emitted token back for `n` more positions. */
  generate(prompt: number[], n: number): PositionResult[] {
    const out = this.run(prompt);
    for (let i = 0; i < n; i++) {
      const last = out[out.length - 1]!;
      if (last.emitted === null) throw new ChipcError('interp.emit', 'the circuit has no emit; it cannot generate');
      out.push(this.step(last.emitted));
    }
    return out;
  }

  /** The token of the one emit row whose required values all hold (emitRows). */
  private emitRow(v: Int32Array): number {
    const e = this.ir.emit!;
    const vals = e.fields.map((id) => v[id]!);
    for (const row of e.rows!) {
      if (row.values.every((want, i) => want === null || want === vals[i])) return row.token;
    }
    throw new ChipcError('interp.emit', `${fmtLoc(e.loc)}: no emit row matches the field values (${vals.join(', ')}) (position ${this.pos})`);
  }

  private applyWrite(ramId: number, v: Int32Array): void {
    const r = this.ir.rams[ramId]!;
    const w = r.write;
    if (!w) return;
    if (w.enable !== null && v[w.enable] === 0) return;
    const addr = v[w.addr]!;
    if (addr < 0 || addr >= r.rows) {
      throw new ChipcError('interp.ram', `${fmtLoc(w.loc)}: RAM "${r.name}" write address ${addr} is outside [0, ${r.rows}) (position ${this.pos})`);
    }
    const row = this.ram[ramId]![addr]!;
    w.values.forEach((id, i) => {
      const x = v[id]!;
      const f = r.fields[i]!;
      if (x < f.lo || x > f.hi) {
        throw new ChipcError('interp.ram', `${fmtLoc(w.loc)}: RAM "${r.name}" field ${i} value ${x} is outside [${f.lo}, ${f.hi}] (position ${this.pos})`);
      }
      row[i] = x;
    });
  }

  private publish(lkId: number, v: Int32Array): void {
    const lk = this.ir.lookups[lkId]!;
    if (lk.publish !== null && v[lk.publish] === 0) return;
    this.published[lkId]!.push({
      key: lk.key.map((id) => v[id]!),
      value: lk.value.map((id) => v[id]!),
      stamp: lk.stamp === null ? 0 : v[lk.stamp]!,
      position: this.pos,
    });
  }

  private evalNode(n: IrNode, v: Int32Array, token: number, ramDone: Set<number>, lookupDone: Set<number>): number {
    switch (n.op) {
      case 'token_field':
        return n.values[token]!;
      case 'const':
        return n.value;
      case 'linear': {
        let s = n.bias;
        for (const t of n.terms) s += t.coef * v[t.node]!;
        if (n.choice) this.checkChoice(n, v);
        return s;
      }
      case 'table':
        return n.values[tupleIndex(this.ir, n.inputs, v)]!;
      case 'compare':
        return compare(n.cmp, v[n.a]!, v[n.b]!);
      case 'select':
        return v[n.cond] ? v[n.then]! : v[n.else]!;
      case 'logic': {
        const [a, b] = [v[n.args[0]!]!, n.args.length > 1 ? v[n.args[1]!]! : 0];
        switch (n.logic) {
          case 'and': return a & b;
          case 'or': return a | b;
          case 'xor': return a ^ b;
          case 'not': return 1 - a;
        }
        break;
      }
      case 'wire':
        return v[n.source!]!;
      case 'prev':
        return this.last === null ? n.default : this.last[n.source]!;
      case 'ram_read': {
        if (!ramDone.has(n.ram)) {
          this.applyWrite(n.ram, v);
          ramDone.add(n.ram);
        }
        const r = this.ir.rams[n.ram]!;
        const port = r.reads[n.port]!;
        if (port.enable !== null && v[port.enable] === 0) return 0;
        const addr = v[port.addr]!;
        if (addr < 0 || addr >= r.rows) {
          throw new ChipcError('interp.ram', `${fmtLoc(port.loc)}: RAM "${r.name}" read address ${addr} is outside [0, ${r.rows}) (position ${this.pos})`);
        }
        return this.ram[n.ram]![addr]![n.field]!;
      }
      case 'lookup_value': {
        if (!lookupDone.has(n.lookup)) {
          this.publish(n.lookup, v);
          lookupDone.add(n.lookup);
        }
        const lk = this.ir.lookups[n.lookup]!;
        const q = lk.query.map((id) => v[id]!);
        let best: Published | null = null;
        let tie = false;
        for (const p of this.published[n.lookup]!) {
          if (!p.key.every((k, i) => k === q[i])) continue;
          if (best === null || p.stamp > best.stamp) {
            best = p;
            tie = false;
          } else if (p.stamp === best.stamp) {
            tie = true;
          }
        }
        if (tie) {
          this.fail(lk, 'interp.lookup', `lookup "${lk.name}": two published entries match query (${q.join(', ')}) with the same stamp ${best!.stamp}`);
        }
        if (n.field < 0) return best ? 1 : 0;
        return best ? best.value[n.field]! : lk.defaults[n.field]!;
      }
    }
    throw new Error('internal: unknown node');
  }

  /**
   * Sets RAM `ram`'s row `row` to `values` (one integer per field, within its range), as if a
   * write had stored them: used to preload firmware / state-file contents (src/load/) before or
   * between steps. Bad indices or values are a ChipcError `interp.ram`.
   */
  setRamRow(ram: number, row: number, values: readonly number[]): void {
    checkRamRow(this.ir, ram, row, values);
    this.ram[ram]![row]!.set(values);
  }
}

/**
 * Checks a preload of RAM `ram`'s row `row` (as Interpreter.setRamRow and FastEvaluator.setRamRow
 * take it): a ChipcError `interp.ram` names a bad RAM index, row, field count or field value.
 */
export function checkRamRow(ir: CircuitIR, ram: number, row: number, values: readonly number[]): void {
  const r = ir.rams[ram];
  if (!Number.isInteger(ram) || !r) throw new ChipcError('interp.ram', `RAM index ${ram} is outside [0, ${ir.rams.length})`);
  if (!Number.isInteger(row) || row < 0 || row >= r.rows) {
    throw new ChipcError('interp.ram', `RAM "${r.name}": row ${row} is outside [0, ${r.rows})`);
  }
  if (values.length !== r.fields.length) {
    throw new ChipcError('interp.ram', `RAM "${r.name}" row ${row}: ${values.length} values given, the word has ${r.fields.length} fields`);
  }
  values.forEach((x, i) => {
    const f = r.fields[i]!;
    if (!Number.isInteger(x) || x < f.lo || x > f.hi) {
      throw new ChipcError('interp.ram', `RAM "${r.name}" row ${row} field ${i}: value ${x} is outside [${f.lo}, ${f.hi}]`);
    }
  });
}
