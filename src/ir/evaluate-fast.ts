/**
 * A fast IR evaluator: the same observable behaviour as the Interpreter (interpret.ts, the oracle)
 * — emitted tokens, every node value, RAM / lookup / delay semantics, range checks and their
 * ChipcError messages — but compiled once per circuit into straight-line JavaScript
 * (`new Function`) over one Int32Array of node values, instead of walking node objects per
 * position. Tables, token fields and RAM rows become typed-array lookups, `c.emitRows` becomes a
 * dense tuple → token map, and the body is split into chunks small enough for V8 to optimise.
 *
 * The generated code is kept with the IR (a WeakMap; an IR is never changed once built), so a
 * second evaluator of the same circuit allocates only its own state: node values, RAMs, delays,
 * lookup entries.
 *
 * Range checks are ON by default (`checks: false` turns the node-range checks off; RAM address
 * and word checks, token and BOS checks always stay). A check is left out of the generated code
 * only where it is proven statically (a table whose every entry lies in the node's range, a
 * compare whose range holds 0 and 1, …), so it can never fire there.
 */
import { ChipcError } from '../util/errors.ts';
import { topoOrder } from './deps.ts';
import { fmtLoc, type CircuitIR, type IrNode, type NodeId, type Range } from './types.ts';
import { checkRamRow, type PositionResult } from './interpret.ts';

export interface FastEvaluatorOptions {
  /** Check every node value against its range (as the Interpreter does). Default true. */
  checks?: boolean;
  /** Statements per generated function (V8 does not optimise very large functions). Default 120. */
  chunkSize?: number;
  /** Largest emit-row tuple space turned into a dense map (else rows are scanned). Default 2^23. */
  maxEmitMap?: number;
}

/** One lookup's published entries, reduced to what a query can observe: per key, the best entry. */
interface LookupState {
  /** key string → the first entry with the largest stamp so far, and whether that stamp repeats. */
  best: Map<string, { stamp: number; value: number[]; tie: boolean }>;
  /** Results of this position's query: values then hit. */
  result: Float64Array;
}

type Num = ArrayLike<number>;

const isInt32 = (x: number): boolean => Number.isInteger(x) && x >= -0x80000000 && x <= 0x7fffffff;
/** `a.every(isInt32)`, faster: `(x | 0) === x` holds exactly for the int32s (and −0, as isInt32). */
function allInt32(a: Num): boolean {
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    if ((x | 0) !== x) return false;
  }
  return true;
}
/** `a` as an Int32Array when every entry is an int32 (exact: a copy unless it is one), else `a` itself. */
function packed(a: Num): Num {
  if (a instanceof Int32Array) return a;
  if (!allInt32(a)) return a;
  return Int32Array.from(a);
}
/** Min and max of the entries (undefined holes count as 0, as an Int32Array store makes them). */
function span(a: Num): Range {
  let lo = Infinity, hi = -Infinity;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] ?? 0;
    if (x < lo) lo = x;
    if (x > hi) hi = x;
  }
  return { lo, hi };
}
const within = (inner: Range, outer: Range): boolean => inner.lo >= outer.lo && inner.hi <= outer.hi;
const lit = (x: number): string => (Object.is(x, -0) ? '-0' : x < 0 ? `(${x})` : String(x));

export class FastEvaluator {
  private readonly checks: boolean;
  private readonly v: Int32Array;
  private readonly ram: Int32Array[];
  private readonly prevState: Float64Array;
  private readonly prevDefaults: Float64Array;
  private readonly lookups: LookupState[];
  private readonly runPosition: (token: number) => number;
  private pos = 0;
  /** How the emit is resolved: 'table' (c.emit), 'map' (dense emitRows map), 'scan', or 'none'. */
  readonly emitMode: 'table' | 'map' | 'scan' | 'none';
  /** Size of the generated code: nodes, range checks left after the static proofs, functions. */
  readonly stats: { nodes: number; checks: number; functions: number; tokenFieldColumns: number };

  constructor(readonly ir: CircuitIR, opts: FastEvaluatorOptions = {}) {
    this.checks = opts.checks ?? true;
    const prog = fastProgramOf(ir, { checks: this.checks, chunkSize: opts.chunkSize ?? 120, maxEmitMap: opts.maxEmitMap ?? 2 ** 23 });
    this.v = new Int32Array(ir.nodes.length);
    this.ram = ir.rams.map((r) => new Int32Array(r.rows * r.fields.length));
    this.prevDefaults = prog.prevDefaults;
    this.prevState = new Float64Array(prog.prevDefaults.length);
    this.lookups = ir.lookups.map((lk) => ({ best: new Map(), result: new Float64Array(lk.value.length + 1) }));
    this.emitMode = prog.emitMode;
    this.stats = prog.stats;
    const slots = new Float64Array(prog.slots);
    // eslint-disable-next-line @typescript-eslint/no-implied-eval
    this.runPosition = new Function('env', prog.src)([
      this.helpers(), this.v, this.prevState, slots, this.ram, prog.consts, prog.tokenTable, this.lookups.map((l) => l.result),
    ]) as (t: number) => number;
    this.reset();
  }

  /** The functions the generated code calls off its fast path: errors, lookups, emit scans. */
  private helpers() {
    const ir = this.ir;
    const v = this.v;
    return {
      range: (id: NodeId, val: number): never => {
        const n = ir.nodes[id]!;
        throw new ChipcError('interp.range', `${fmtLoc(n.loc)}: signal "${n.name}" is ${val}, outside its range [${n.range.lo}, ${n.range.hi}] (position ${this.pos})`);
      },
      choice: (id: NodeId): never => {
        const n = ir.nodes[id]!;
        const held: string[] = [];
        if (n.op === 'linear') {
          n.terms.forEach((t, k) => {
            const sel = ir.nodes[t.node]!;
            if (sel.op === 'select' && v[sel.cond] !== 0) held.push(`${k} ("${ir.nodes[sel.cond]!.name}")`);
          });
        }
        throw new ChipcError('interp.choice', `${fmtLoc(n.loc)}: choose "${n.name}": cases ${held.slice(0, 2).join(' and ')} both hold (position ${this.pos})`);
      },
      ramWriteAddr: (ramId: number, addr: number): never => {
        const r = ir.rams[ramId]!;
        throw new ChipcError('interp.ram', `${fmtLoc(r.write!.loc)}: RAM "${r.name}" write address ${addr} is outside [0, ${r.rows}) (position ${this.pos})`);
      },
      ramWriteValue: (ramId: number, i: number, x: number): never => {
        const r = ir.rams[ramId]!;
        const f = r.fields[i]!;
        throw new ChipcError('interp.ram', `${fmtLoc(r.write!.loc)}: RAM "${r.name}" field ${i} value ${x} is outside [${f.lo}, ${f.hi}] (position ${this.pos})`);
      },
      ramReadAddr: (ramId: number, port: number, addr: number): never => {
        const r = ir.rams[ramId]!;
        throw new ChipcError('interp.ram', `${fmtLoc(r.reads[port]!.loc)}: RAM "${r.name}" read address ${addr} is outside [0, ${r.rows}) (position ${this.pos})`);
      },
      publish: (lkId: number): void => {
        const lk = ir.lookups[lkId]!;
        if (lk.publish !== null && v[lk.publish] === 0) return;
        const key = lk.key.map((id) => v[id]!).join(',');
        const stamp = lk.stamp === null ? 0 : v[lk.stamp]!;
        const st = this.lookups[lkId]!;
        const cur = st.best.get(key);
        // As the interpreter's scan: a larger stamp replaces the best, an equal one marks a tie.
        if (cur === undefined || stamp > cur.stamp) st.best.set(key, { stamp, value: lk.value.map((id) => v[id]!), tie: false });
        else if (stamp === cur.stamp) cur.tie = true;
      },
      query: (lkId: number): void => {
        const lk = ir.lookups[lkId]!;
        const q = lk.query.map((id) => v[id]!);
        const st = this.lookups[lkId]!;
        const best = st.best.get(q.join(','));
        if (best?.tie) {
          throw new ChipcError('interp.lookup', `${fmtLoc(lk.loc)}: lookup "${lk.name}": two published entries match query (${q.join(', ')}) with the same stamp ${best.stamp} (position ${this.pos})`);
        }
        const m = lk.value.length;
        for (let i = 0; i < m; i++) st.result[i] = best ? best.value[i]! : lk.defaults[i]!;
        st.result[m] = best ? 1 : 0;
      },
      scanEmit: (): number => {
        const e = ir.emit!;
        for (const row of e.rows!) {
          let ok = true;
          for (let i = 0; i < row.values.length && ok; i++) {
            const want = row.values[i];
            if (want !== null && want !== v[e.fields[i]!]) ok = false;
          }
          if (ok) return row.token;
        }
        return -1;
      },
    };
  }

  get position(): number {
    return this.pos;
  }

  /**
   * Every node's value at the latest position, indexed by node id. A live view: the next `step`
   * overwrites it (copy it to keep it).
   */
  get values(): Int32Array {
    return this.v;
  }

  /** Back to position 0: RAMs zeroed, delays at their defaults, lookups empty. */
  reset(): void {
    for (const r of this.ram) r.fill(0);
    this.prevState.set(this.prevDefaults);
    for (const lk of this.lookups) lk.best.clear();
    this.v.fill(0);
    this.pos = 0;
  }

  /**
   * Run one position with input `token`; returns the emitted token (null when the circuit has no
   * emit). Node values are in `values` afterwards. Errors as the Interpreter's `step`.
   */
  step(token: number): number | null {
    const ir = this.ir;
    if (!Number.isInteger(token) || token < 0 || token >= ir.vocab) {
      throw new ChipcError('interp.token', `token ${token} is outside the circuit vocabulary [0, ${ir.vocab})`);
    }
    if (ir.bos !== null) {
      if (this.pos === 0 && token !== ir.bos) {
        throw new ChipcError('interp.bos', `the first token must be the bos token ${ir.bos}, got ${token}`);
      }
      if (this.pos > 0 && token === ir.bos && ir.lookups.length > 0) {
        throw new ChipcError('interp.bos', `the bos token ${ir.bos} may only start a sequence (it is the lookups' sink); got it at position ${this.pos}`);
      }
    }
    const out = this.runPosition(token);
    if (out === -1) {
      const e = ir.emit!;
      const vals = e.fields.map((id) => this.v[id]!);
      throw new ChipcError('interp.emit', `${fmtLoc(e.loc)}: no emit row matches the field values (${vals.join(', ')}) (position ${this.pos})`);
    }
    this.pos++;
    return out === -2 ? null : out;
  }

  /** `step` with the Interpreter's result shape (values copied). */
  stepResult(token: number): PositionResult {
    const position = this.pos;
    const emitted = this.step(token);
    return { position, token, values: this.v.slice(), emitted };
  }

  /** The current contents of a RAM row (a copy). */
  ramRow(ram: number, row: number): number[] {
    const F = this.ir.rams[ram]!.fields.length;
    return Array.from(this.ram[ram]!.subarray(row * F, row * F + F));
  }

  /** As Interpreter.setRamRow: preload a RAM row; bad indices or values are a ChipcError `interp.ram`. */
  setRamRow(ram: number, row: number, values: readonly number[]): void {
    checkRamRow(this.ir, ram, row, values);
    this.ram[ram]!.set(values, row * this.ir.rams[ram]!.fields.length);
  }
}

/**
 * The emitRows resolution as a dense map over the emit fields' tuple space (row-major, first
 * field slowest): map[tuple] = the token of the FIRST row all of whose required values hold (as
 * the interpreter's scan picks it), −1 where none does. Rows are painted last to first so earlier
 * rows win. Returns null when the space or the painting work exceeds `limit` entries.
 */
function emitRowMap(ir: CircuitIR, limit: number): Int32Array | null {
  const e = ir.emit!;
  const ranges = e.fields.map((f) => ir.nodes[f]!.range);
  const sizes = ranges.map((r) => r.hi - r.lo + 1);
  const space = sizes.reduce((a, b) => a * b, 1);
  if (space > limit) return null;
  const strides = sizes.map((_, i) => sizes.slice(i + 1).reduce((a, b) => a * b, 1));
  let work = 0;
  for (const row of e.rows!) {
    let w = 1;
    row.values.forEach((x, i) => { if (x === null) w *= sizes[i]!; });
    work += w;
    if (work > 4 * limit) return null;
  }
  const map = new Int32Array(space).fill(-1);
  for (let r = e.rows!.length - 1; r >= 0; r--) {
    const row = e.rows![r]!;
    // A required value outside its field's range (or not an integer) can never match.
    if (row.values.some((x, i) => x !== null && !(Number.isInteger(x) && x >= ranges[i]!.lo && x <= ranges[i]!.hi))) continue;
    if (!isInt32(row.token) || row.token < 0) return null;
    let bases = [0];
    row.values.forEach((x, i) => {
      const s = strides[i]!;
      if (x !== null) bases = bases.map((b) => b + (x - ranges[i]!.lo) * s);
      else {
        const next: number[] = [];
        for (const b of bases) for (let d = 0; d < sizes[i]!; d++) next.push(b + d * s);
        bases = next;
      }
    });
    for (const b of bases) map[b] = row.token;
  }
  return map;
}

// Circuits built again from the same tables (the RV32 chip's protocol fields and emit rows, one
// set per process: src/cpu/cpu-tokens.ts) share the tables derived from them below; both are
// read-only. Each is held weakly: it lives as long as some program uses it.
const tableIds = new WeakMap<object, number>();
let nextTableId = 0;
const idOf = (a: object): number => {
  let id = tableIds.get(a);
  if (id === undefined) tableIds.set(a, (id = nextTableId++));
  return id;
};
const tokenTables = new Map<string, WeakRef<Int32Array>>();
const emitMaps = new Map<string, WeakRef<Int32Array>>();
// A key goes when its table is collected (unless a newer table took the key meanwhile).
const forgetKey = new FinalizationRegistry<{ map: Map<string, WeakRef<Int32Array>>; key: string }>(({ map, key }) => {
  if (map.get(key)?.deref() === undefined) map.delete(key);
});
function keepWeakly(map: Map<string, WeakRef<Int32Array>>, key: string, table: Int32Array): void {
  map.set(key, new WeakRef(table));
  forgetKey.register(table, { map, key });
}

/** The token-major table of these token-field columns: table[t·width + col] = columns[col][t]. */
function tokenMajorTable(columns: readonly Num[], vocab: number, width: number): Int32Array {
  const key = `${vocab}|${width}|${columns.map(idOf).join(',')}`;
  const kept = tokenTables.get(key)?.deref();
  if (kept !== undefined) return kept;
  const table = new Int32Array(vocab * width);
  // filled row by row (sequential writes; each column is read sequentially too)
  for (let t = 0, at = 0; t < vocab; t++, at += width) {
    for (let col = 0; col < columns.length; col++) table[at + col] = columns[col]![t]!;
  }
  keepWeakly(tokenTables, key, table);
  return table;
}

/** emitRowMap, shared by circuits whose emit rows are the same array over the same field ranges. */
function sharedEmitRowMap(ir: CircuitIR, limit: number): Int32Array | null {
  const e = ir.emit!;
  const key = `${idOf(e.rows!)}|${limit}|${e.fields.map((f) => `${ir.nodes[f]!.range.lo}:${ir.nodes[f]!.range.hi}`).join(',')}`;
  const kept = emitMaps.get(key)?.deref();
  if (kept !== undefined) return kept;
  const map = emitRowMap(ir, limit);
  if (map !== null) keepWeakly(emitMaps, key, map);
  return map;
}

/** What the generated code of a circuit is, independent of any evaluator's state (fastProgramOf). */
interface FastProgram {
  /** The body of `new Function('env', src)`: env = [helpers, v, P, S, R, K, TF, LR]. */
  src: string;
  /** Read-only constants the code indexes (tables, token-field columns, the emit map). */
  consts: unknown[];
  /** The token-major table of the int32 token fields. */
  tokenTable: Int32Array;
  /** Delay defaults, in the order of the circuit's prev nodes. */
  prevDefaults: Float64Array;
  /** RAM read-port address slots. */
  slots: number;
  emitMode: FastEvaluator['emitMode'];
  stats: FastEvaluator['stats'];
}

const programs = new WeakMap<CircuitIR, Map<string, FastProgram>>();

/**
 * The generated code of `ir` for these options, built on first use and kept with the IR: every
 * evaluator of one circuit (a service per call, a CLI command per store operation, a test per
 * program) shares it and allocates only its own state, instead of generating the code again
 * (≈ 1.5 s for the RV32 chip).
 */
function fastProgramOf(ir: CircuitIR, o: { checks: boolean; chunkSize: number; maxEmitMap: number }): FastProgram {
  const key = `${o.checks}|${o.chunkSize}|${o.maxEmitMap}`;
  let byOpts = programs.get(ir);
  if (byOpts === undefined) programs.set(ir, (byOpts = new Map()));
  const hit = byOpts.get(key);
  if (hit !== undefined) return hit;
  const { order, cyclic } = topoOrder(ir);
  if (cyclic.length > 0) {
    const n = ir.nodes[cyclic[0]!]!;
    throw new ChipcError('ir.cycle', `${fmtLoc(n.loc)}: the circuit has a cycle through "${n.name}" (validate it first)`);
  }
  const prevNodes = ir.nodes.filter((n): n is Extract<IrNode, { op: 'prev' }> => n.op === 'prev');
  let emitMode: FastEvaluator['emitMode'];
  // ── code generation ───────────────────────────────────────────────────────────────────────
  const consts: unknown[] = [];
  const constOf = new Map<unknown, string>();
  /** A name in the generated code for a constant object (deduplicated by identity). */
  const k = (obj: unknown): string => {
    let name = constOf.get(obj);
    if (name === undefined) {
      name = `K${consts.length}`;
      consts.push(obj);
      constOf.set(obj, name);
    }
    return name;
  };
  const tfArrays = new Map<Num, Num>();
  // Token fields with int32 values become the columns of one token-major table, so a position
  // touches one contiguous row instead of one cache line per field.
  const tfColumn = new Map<Num, number>();
  for (const n of ir.nodes) {
    if (n.op === 'token_field' && !tfColumn.has(n.values) && n.values.length === ir.vocab && allInt32(n.values)) {
      tfColumn.set(n.values, tfColumn.size);
    }
  }
  const tfWidth = Math.max(1, tfColumn.size);
  const tokenTable = tokenMajorTable([...tfColumn.keys()], ir.vocab, tfWidth);
  let checksEmitted = 0;
  const rangeOf = (id: NodeId): Range => ir.nodes[id]!.range;
  const prevIndex = new Map<NodeId, number>(prevNodes.map((n, i) => [n.id, i]));
  const portSlot = new Map<string, number>();
  const ramWritten = new Set<number>();
  const lookupDone = new Set<number>();
  const stmts: string[] = [];

  const writeCode = (ramId: number): string => {
    const r = ir.rams[ramId]!;
    const w = r.write;
    if (!w) return '';
    const F = r.fields.length;
    const R = `R${ramId}`;
    const parts: string[] = [];
    parts.push(`a = v[${w.addr}]; if (a < 0 || a >= ${r.rows}) E.ramWriteAddr(${ramId}, a);`);
    parts.push(`b = a * ${F};`);
    w.values.forEach((id, i) => {
      const f = r.fields[i]!;
      if (within(rangeOf(id), f)) parts.push(`${R}[b + ${i}] = v[${id}];`);
      else parts.push(`x = v[${id}]; if (x < ${f.lo} || x > ${f.hi}) E.ramWriteValue(${ramId}, ${i}, x); ${R}[b + ${i}] = x;`);
    });
    const body = parts.join(' ');
    return w.enable === null ? `{ ${body} }` : `if (v[${w.enable}] !== 0) { ${body} }`;
  };
  const publishCode = (lkId: number): string => `E.publish(${lkId});`;

  for (const id of order) {
    const n = ir.nodes[id]!;
    let expr: string;
    /** The range the expression's value provably lies in (null: unknown). */
    let proven: Range | null = null;
    let pre = '';
    switch (n.op) {
      case 'token_field': {
        const col = tfColumn.get(n.values);
        if (col !== undefined) expr = `TF[tb + ${col}]`;
        else {
          let arr = tfArrays.get(n.values);
          if (!arr) tfArrays.set(n.values, (arr = packed(n.values)));
          expr = `${k(arr)}[tok]`;
        }
        proven = n.values.length >= ir.vocab ? span(n.values) : null;
        break;
      }
      case 'const':
        expr = lit(n.value);
        proven = { lo: n.value, hi: n.value };
        break;
      case 'linear': {
        // Same operations in the same order as the interpreter: ((bias + c0·x0) + c1·x1) + …
        expr = [lit(n.bias), ...n.terms.map((t) => `${lit(t.coef)} * v[${t.node}]`)].join(' + ');
        // Interval arithmetic; exact while every partial sum stays an integer below 2^53.
        let lo = n.bias, hi = n.bias;
        let exact = Number.isInteger(n.bias);
        for (const t of n.terms) {
          const r = rangeOf(t.node);
          lo += Math.min(t.coef * r.lo, t.coef * r.hi);
          hi += Math.max(t.coef * r.lo, t.coef * r.hi);
          if (!Number.isInteger(t.coef)) exact = false;
        }
        if (exact && Math.max(Math.abs(lo), Math.abs(hi)) < 2 ** 52) proven = { lo, hi };
        if (n.choice) {
          // at most one case of a choice holds (always checked, like the interpreter)
          const conds = n.terms.map((t) => { const sel = ir.nodes[t.node]!; return sel.op === 'select' ? `(v[${sel.cond}] !== 0 ? 1 : 0)` : '0'; });
          pre += `if (${conds.join(' + ')} > 1) E.choice(${id}); `;
        }
        break;
      }
      case 'table': {
        let stride = 1;
        const idx: string[] = [];
        for (let i = n.inputs.length - 1; i >= 0; i--) {
          const r = rangeOf(n.inputs[i]!);
          idx.unshift(`(v[${n.inputs[i]}] - ${lit(r.lo)}) * ${stride}`);
          stride *= r.hi - r.lo + 1;
        }
        expr = `${k(packed(n.values))}[${idx.length ? idx.join(' + ') : '0'}]`;
        proven = n.values.length >= stride ? span(n.values) : null;
        break;
      }
      case 'compare': {
        const op = { eq: '===', ne: '!==', lt: '<', le: '<=', gt: '>', ge: '>=' }[n.cmp];
        expr = `v[${n.a}] ${op} v[${n.b}] ? 1 : 0`;
        proven = { lo: 0, hi: 1 };
        break;
      }
      case 'select': {
        expr = `v[${n.cond}] !== 0 ? v[${n.then}] : v[${n.else}]`;
        const t = rangeOf(n.then), e = rangeOf(n.else);
        proven = { lo: Math.min(t.lo, e.lo), hi: Math.max(t.hi, e.hi) };
        break;
      }
      case 'logic': {
        const a = `v[${n.args[0]}]`;
        const b = n.args.length > 1 ? `v[${n.args[1]}]` : '0';
        expr = n.logic === 'and' ? `${a} & ${b}` : n.logic === 'or' ? `${a} | ${b}` : n.logic === 'xor' ? `${a} ^ ${b}` : `1 - ${a}`;
        const bits = (id: NodeId | undefined) => id === undefined || within(rangeOf(id), { lo: 0, hi: 1 });
        if (bits(n.args[0]) && (n.logic === 'not' || bits(n.args[1]))) proven = { lo: 0, hi: 1 };
        break;
      }
      case 'wire':
        if (n.source === null) {
          throw new ChipcError('fast.unsupported', `${fmtLoc(n.loc)}: wire "${n.name}" is never assigned (validate the circuit first)`);
        }
        expr = `v[${n.source}]`;
        proven = rangeOf(n.source);
        break;
      case 'prev': {
        expr = `P[${prevIndex.get(n.id)}]`;
        const s = rangeOf(n.source);
        proven = { lo: Math.min(s.lo, n.default), hi: Math.max(s.hi, n.default) };
        break;
      }
      case 'ram_read': {
        const r = ir.rams[n.ram]!;
        // The interpreter applies the RAM's write when it evaluates the RAM's first read node.
        if (!ramWritten.has(n.ram)) {
          ramWritten.add(n.ram);
          pre += writeCode(n.ram);
        }
        const key = `${n.ram}:${n.port}`;
        let slot = portSlot.get(key);
        if (slot === undefined) {
          // Every read node of a port sees the same address and enable: check them once, at the
          // port's first node (where the interpreter would raise the same error).
          slot = portSlot.size;
          portSlot.set(key, slot);
          const port = r.reads[n.port]!;
          const addr = `a = v[${port.addr}]; if (a < 0 || a >= ${r.rows}) E.ramReadAddr(${n.ram}, ${n.port}, a); S[${slot}] = a * ${r.fields.length};`;
          pre += port.enable === null ? addr : `if (v[${port.enable}] === 0) S[${slot}] = -1; else { ${addr} }`;
        }
        expr = `S[${slot}] < 0 ? 0 : R${n.ram}[S[${slot}] + ${n.field}]`;
        const f = r.fields[n.field];
        const en = r.reads[n.port]!.enable !== null;
        proven = f ? { lo: en ? Math.min(0, f.lo) : f.lo, hi: en ? Math.max(0, f.hi) : f.hi } : null;
        break;
      }
      case 'lookup_value': {
        if (!lookupDone.has(n.lookup)) {
          lookupDone.add(n.lookup);
          pre += `${publishCode(n.lookup)} E.query(${n.lookup});`;
        }
        const lk = ir.lookups[n.lookup]!;
        expr = `LR${n.lookup}[${n.field < 0 ? lk.value.length : n.field}]`;
        break;
      }
      default:
        throw new ChipcError('fast.unsupported', `node kind "${(n as IrNode).op}" is not supported by the fast evaluator`);
    }
    const check = o.checks && !(proven !== null && within(proven, n.range));
    if (check) checksEmitted++;
    stmts.push(
      pre + (check
        ? `x = ${expr}; if (x < ${lit(n.range.lo)} || x > ${lit(n.range.hi)}) E.range(${id}, x); v[${id}] = x;`
        : `v[${id}] = ${expr};`),
    );
  }
  // Writes of RAMs nobody reads and publishes nobody queried still happen, after every node.
  const tail: string[] = [];
  for (const r of ir.rams) if (!ramWritten.has(r.id)) tail.push(writeCode(r.id));
  for (const lk of ir.lookups) if (!lookupDone.has(lk.id)) tail.push(publishCode(lk.id));
  prevNodes.forEach((p, i) => tail.push(`P[${i}] = v[${p.source}];`));

  // The emitted token (−1: no emit row matched).
  let emitExpr = '-2';
  const e = ir.emit;
  if (e === null) {
    emitMode = 'none';
  } else {
    let stride = 1;
    const idx: string[] = [];
    const sizes = e.fields.map((f) => rangeOf(f).hi - rangeOf(f).lo + 1);
    for (let i = e.fields.length - 1; i >= 0; i--) {
      idx.unshift(`(v[${e.fields[i]}] - ${lit(rangeOf(e.fields[i]!).lo)}) * ${stride}`);
      stride *= sizes[i]!;
    }
    const index = idx.length ? idx.join(' + ') : '0';
    if (!e.rows) {
      emitMode = 'table';
      emitExpr = `${k(packed(e.tokens))}[${index}]`;
    } else {
      const map = sharedEmitRowMap(ir, o.maxEmitMap);
      if (map) {
        emitMode = 'map';
        emitExpr = `${k(map)}[${index}]`;
      } else {
        emitMode = 'scan';
        emitExpr = 'E.scanEmit()';
      }
    }
  }

  const chunks: string[] = [];
  for (let i = 0; i < stmts.length; i += o.chunkSize) {
    chunks.push(`function c${chunks.length}(tok, v) {\n  let x = 0, a = 0, b = 0;\n  const tb = tok * ${tfWidth};\n  ${stmts.slice(i, i + o.chunkSize).join('\n  ')}\n}`);
  }
  chunks.push(`function cTail(v) {\n  let x = 0, a = 0, b = 0;\n  ${tail.join('\n  ')}\n  return ${emitExpr};\n}`);
  const calls = chunks.slice(0, -1).map((_, i) => `c${i}(tok, v);`).join(' ');
  const src = [
    '"use strict";',
    'const [E, v, P, S, R, K, TF, LR] = env;',
    ...ir.rams.map((r) => `const R${r.id} = R[${r.id}];`),
    ...ir.lookups.map((lk) => `const LR${lk.id} = LR[${lk.id}];`),
    ...consts.map((_, i) => `const K${i} = K[${i}];`),
    ...chunks,
    `return function runPosition(tok) { ${calls} return cTail(v); };`,
  ].join('\n');

  const prog: FastProgram = {
    src, consts, tokenTable, prevDefaults: Float64Array.from(prevNodes.map((n) => n.default)), slots: Math.max(1, portSlot.size), emitMode,
    stats: { nodes: ir.nodes.length, checks: checksEmitted, functions: chunks.length, tokenFieldColumns: tfColumn.size },
  };
  byOpts.set(key, prog);
  return prog;
}
