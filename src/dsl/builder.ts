/**
 * The circuit DSL: a typed builder in the spirit of hardware construction languages. A circuit
 * file default-exports `defineCircuit(meta, (c) => { … })`; the callback creates signals through
 * `c` and the builder records an IR graph (src/ir/types.ts) with the source location of every
 * call. Problems found while building (bad arguments) are collected, not thrown, so the validator
 * can report all of them together with their `file:line:col`.
 */
import type {
  CircuitIR, CompareOp, EmitDecl, EmitRow, IrNode, LogicOp, LookupDecl, NodeId, Problem, RamDecl, Range, SourceLoc, TokenValues,
} from '../ir/types.ts';
import { callerLoc } from './source-loc.ts';
import { checkEmitRows } from './emit-rows-check.ts';

// (Problem lives in the IR, where the validator reads it; the DSL's surface still names it.)
export type { Problem } from '../ir/types.ts';

/** A signal: an integer value per position, with a range. */
export class Sig {
  constructor(
    readonly c: CircuitBuilder,
    readonly id: NodeId,
  ) {}
  get range(): Range {
    return this.c.node(this.id).range;
  }
  get name(): string {
    return this.c.node(this.id).name;
  }
  add(b: SigLike): Sig {
    return this.c.add(this, b);
  }
  sub(b: SigLike): Sig {
    return this.c.sub(this, b);
  }
  mul(k: number): Sig {
    return this.c.scale(this, k);
  }
  eq(b: SigLike): Sig {
    return this.c.compare('eq', this, b);
  }
  ne(b: SigLike): Sig {
    return this.c.compare('ne', this, b);
  }
  lt(b: SigLike): Sig {
    return this.c.compare('lt', this, b);
  }
  le(b: SigLike): Sig {
    return this.c.compare('le', this, b);
  }
  gt(b: SigLike): Sig {
    return this.c.compare('gt', this, b);
  }
  ge(b: SigLike): Sig {
    return this.c.compare('ge', this, b);
  }
  /** Give this signal a readable name (shown in reports, the manifest and the SVG). */
  named(name: string): Sig {
    this.c.rename(this, name);
    return this;
  }
}

/** A forward reference, assigned once later: how a circuit says "the value defined below". */
export class Wire extends Sig {
  assign(src: SigLike): void {
    this.c.assignWire(this, src);
  }
}

export type SigLike = Sig | number;

export interface RamOptions {
  rows: number;
  /** One range per field of a word; a number n means [0, n−1]. */
  fields: (Range | number)[];
}

export class Ram {
  constructor(
    readonly c: CircuitBuilder,
    readonly id: number,
  ) {}
  /** This position's write: row `addr` ← values (one per field), when `enable` is 1. */
  write(addr: Sig, values: SigLike[], enable?: Sig): void {
    this.c.ramWrite(this, addr, values, enable);
  }
  /** Read row `addr` (after this position's write). A disabled read returns zeros. */
  read(addr: Sig, enable?: Sig): Sig[] {
    return this.c.ramRead(this, addr, enable);
  }
  /**
   * Read row `addr` as `read` does, and also the groups: group g is Σ coef·field over its
   * [field, coef] pairs (fields distinct, coefs positive integers), a linear signal that the
   * compiled read-out writes as a value of its own, so its consumers read one dim instead of
   * one per field (the nibbles of a word stored as bits, for the tables over them).
   */
  readWithGroups(addr: Sig, enable: Sig | undefined, groups: [number, number][][]): { fields: Sig[]; groups: Sig[] } {
    return this.c.ramReadGroups(this, addr, enable, groups);
  }
}

export interface LookupOptions {
  key: SigLike[];
  value: SigLike[];
  query: SigLike[];
  /** Recency stamp: among matches the largest stamp wins. Omit only when keys are unique. */
  stamp?: Sig;
  /** 0/1: whether this position publishes its (key, value). Default: always. */
  publish?: Sig;
  /** Values returned when nothing matches (default all 0). */
  defaults?: number[];
}

export interface CircuitMeta {
  name: string;
  /** Token ids 0 … vocab−1. */
  vocab: number;
  /** The token that starts every sequence; required when the circuit uses lookups. */
  bos?: number;
  /**
   * Lines describing the circuit's configuration (sizes, capacities, limits) for its users:
   * carried in the IR and printed by `chipc compile --report`.
   */
  notes?: string[];
}

export interface CircuitDef {
  kind: 'chipc-circuit';
  meta: CircuitMeta;
  build: (c: CircuitBuilder) => void;
  /**
   * The same circuit shaped for a target, when its shape depends on one (for example RAM banks
   * sized to what one GDN layer of the target holds). The CLI calls it with the target's config
   * whenever it compiles a circuit file for a target (`loadCircuitFile(file, target)`).
   */
  retarget?: (target: TargetShape) => CircuitDef;
  /** Where defineCircuit was called (problems with the meta data are reported there). */
  loc?: SourceLoc;
}

/** What a circuit may read of a target to shape itself: its GDN key heads and their dimension (and the value heads'). */
export interface TargetShape {
  linearNumKeyHeads: number;
  linearKeyHeadDim: number;
  linearNumValueHeads?: number;
  linearValueHeadDim?: number;
}

export function defineCircuit(meta: CircuitMeta, build: (c: CircuitBuilder) => void): CircuitDef {
  return { kind: 'chipc-circuit', meta, build, loc: callerLoc() };
}

/** A node as given to `push`: everything but the id, location and (optional) name. */
type NodeInit = IrNode extends infer N ? (N extends IrNode ? Omit<N, 'id' | 'name' | 'loc'> & { name?: string } : never) : never;

function fullRange(r: Range | number): Range {
  return typeof r === 'number' ? { lo: 0, hi: r - 1 } : r;
}

export class CircuitBuilder {
  readonly nodes: IrNode[] = [];
  readonly rams: RamDecl[] = [];
  readonly lookups: LookupDecl[] = [];
  emitDecl: EmitDecl | null = null;
  readonly problems: Problem[] = [];
  private readonly names = new Set<string>();
  private prevGroups = 0;

  constructor(readonly meta: CircuitMeta, defLoc?: SourceLoc) {
    if (!Number.isInteger(meta.vocab) || meta.vocab < 1) {
      this.problem('circuit.vocab', `vocab must be a positive integer, got ${meta.vocab}`, defLoc ?? callerLoc());
    }
    if (meta.bos !== undefined && (!Number.isInteger(meta.bos) || meta.bos < 0 || meta.bos >= meta.vocab)) {
      this.problem('circuit.bos', `bos ${meta.bos} is not a token id of the vocabulary [0, ${meta.vocab})`, defLoc ?? callerLoc());
    }
  }

  node(id: NodeId): IrNode {
    const n = this.nodes[id];
    if (!n) throw new Error(`internal: no node ${id}`);
    return n;
  }

  problem(code: string, message: string, loc: SourceLoc): void {
    this.problems.push({ code, message, loc });
  }

  private uniqueName(base: string): string {
    let name = base;
    for (let i = 1; this.names.has(name); i++) name = `${base}_${i}`;
    this.names.add(name);
    return name;
  }

  rename(s: Sig, name: string): void {
    const n = this.node(s.id);
    this.names.delete(n.name);
    if (this.names.has(name)) {
      this.problem('signal.name', `the name "${name}" is already used by another signal`, callerLoc());
      n.name = this.uniqueName(name);
      return;
    }
    this.names.add(name);
    n.name = name;
  }

  private push(partial: NodeInit, loc: SourceLoc): Sig {
    const id = this.nodes.length;
    const name = this.uniqueName(partial.name ?? `${partial.op}${id}`);
    this.nodes.push({ ...partial, id, name, loc } as IrNode);
    return new Sig(this, id);
  }

  /** Turn a number into a const signal; check a signal belongs to this circuit. */
  private sig(x: SigLike, loc: SourceLoc): Sig {
    if (typeof x === 'number') return this.constant(x, loc);
    if (!(x instanceof Sig) || x.c !== this) {
      this.problem('signal.foreign', 'a signal from another circuit (or not a signal) was used', loc);
      return this.constant(0, loc);
    }
    return x;
  }

  private checkInt(v: number, what: string, loc: SourceLoc): number {
    if (!Number.isSafeInteger(v)) {
      this.problem('signal.nonint', `${what} must be an integer, got ${v}`, loc);
      return 0;
    }
    return v;
  }

  private checkRange(r: Range, what: string, loc: SourceLoc): Range {
    if (!Number.isSafeInteger(r.lo) || !Number.isSafeInteger(r.hi) || r.lo > r.hi) {
      this.problem('signal.range', `${what}: [${r.lo}, ${r.hi}] is not a valid integer range`, loc);
      return { lo: 0, hi: 0 };
    }
    return r;
  }

  // ── inputs and constants ──────────────────────────────────────────────────────────────────

  /** A field of the input token: `fn(tokenId)` for every id of the vocabulary (an embedding lookup). */
  tokenField(name: string, fn: (tokenId: number) => number, range?: [number, number]): Sig {
    const loc = callerLoc();
    // This runs for every id of the vocabulary (≈ 248,000 on the RV32 chip, ≈ 100 fields): the
    // array is sized once (growing it by push copied it ≈ 18 times).
    const vocab = this.meta.vocab;
    const values = new Array<number>(vocab);
    for (let t = 0; t < vocab; t++) values[t] = fn(t);
    return this.tokenFieldNode(name, values, range, loc);
  }

  /**
   * A field of the input token given as its table: `values[tokenId]` for every id of the
   * vocabulary. The table is not copied: it must not change afterwards (circuits that build the
   * same field again pass the same array, and its bounds are checked once per array).
   */
  tokenTable(name: string, values: TokenValues, range?: [number, number]): Sig {
    const loc = callerLoc();
    if (values.length !== this.meta.vocab) {
      this.problem('signal.vocab', `token field "${name}" has ${values.length} values; the vocabulary has ${this.meta.vocab} ids`, loc);
    }
    return this.tokenFieldNode(name, values, range, loc);
  }

  private tokenFieldNode(name: string, values: TokenValues, range: [number, number] | undefined, loc: SourceLoc): Sig {
    const bounds = tableBounds(values);
    if (bounds.nonInt >= 0) this.checkInt(values[bounds.nonInt]!, `token field "${name}" at token ${bounds.nonInt}`, loc);
    let r: Range = { lo: bounds.lo, hi: bounds.hi };
    if (range) {
      r = this.checkRange({ lo: range[0], hi: range[1] }, `token field "${name}"`, loc);
      // the values' own bounds decide; the first offending id is searched only when one exists
      let bad = -1;
      if (bounds.lo < r.lo || bounds.hi > r.hi) for (let t = 0; t < values.length && bad < 0; t++) if (values[t]! < r.lo || values[t]! > r.hi) bad = t;
      if (bad >= 0) {
        this.problem('signal.range', `token field "${name}" is ${values[bad]} at token ${bad}, outside its declared range [${r.lo}, ${r.hi}]`, loc);
      }
    }
    return this.push({ op: 'token_field', name, values, range: r }, loc);
  }

  constant(v: number, loc: SourceLoc = callerLoc()): Sig {
    v = this.checkInt(v, 'a constant', loc);
    return this.push({ op: 'const', value: v, range: { lo: v, hi: v } }, loc);
  }

  // ── arithmetic ────────────────────────────────────────────────────────────────────────────

  /**
   * Σ coef·signal + bias, exactly. `range` narrows the interval-arithmetic range to what the
   * circuit knows the value to be (e.g. a byte sum minus 256 × its carry is in [0, 255]); the
   * interpreter checks it at every position, and the compiler relies on it.
   */
  linear(terms: [SigLike, number][], bias = 0, range?: [number, number]): Sig {
    const loc = callerLoc();
    return this.linearAt(terms, bias, loc, range);
  }

  private linearAt(terms: [SigLike, number][], bias: number, loc: SourceLoc, declared?: [number, number]): Sig {
    let lo = this.checkInt(bias, 'a linear bias', loc);
    let hi = lo;
    const out: { node: NodeId; coef: number }[] = [];
    for (const [x, coefRaw] of terms) {
      const coef = this.checkInt(coefRaw, 'a linear coefficient', loc);
      if (typeof x === 'number') {
        lo += coef * x;
        hi += coef * x;
        bias += coef * x;
        continue;
      }
      const s = this.sig(x, loc);
      const r = s.range;
      lo += Math.min(coef * r.lo, coef * r.hi);
      hi += Math.max(coef * r.lo, coef * r.hi);
      if (coef !== 0) out.push({ node: s.id, coef });
    }
    let range = { lo, hi };
    if (declared) {
      const d = this.checkRange({ lo: declared[0], hi: declared[1] }, 'a linear range', loc);
      range = { lo: Math.max(lo, d.lo), hi: Math.min(hi, d.hi) };
      if (range.lo > range.hi) {
        this.problem('signal.range', `linear range [${d.lo}, ${d.hi}] does not meet its possible values [${lo}, ${hi}]`, loc);
        range = { lo, hi };
      }
    }
    return this.push({ op: 'linear', terms: out, bias, range }, loc);
  }

  add(...xs: SigLike[]): Sig {
    return this.linearAt(xs.map((x) => [x, 1] as [SigLike, number]), 0, callerLoc());
  }

  sub(a: SigLike, b: SigLike): Sig {
    return this.linearAt([[a, 1], [b, -1]], 0, callerLoc());
  }

  scale(a: SigLike, k: number): Sig {
    return this.linearAt([[a, k]], 0, callerLoc());
  }

  /**
   * Any function of a few small signals, given by `fn` over the product of their ranges
   * (lowered to a one-hot decode and a weighted sum of FFN units).
   */
  /**
   * A lookup table over the inputs' values. `opts.overCases`: the only input is a `c.choose`, and
   * the table is built from the choice's cases — per case a table of its value gated off by its
   * condition — one FFN layer after the conditions and values instead of two (the choice's
   * selects, then the table), for a table per case (worth it on a critical path only).
   */
  table(name: string, inputs: Sig[], fn: (...vals: number[]) => number, range?: [number, number], opts: { overCases?: boolean } = {}): Sig {
    const loc = callerLoc();
    if (opts.overCases === true) {
      const only = inputs.length === 1 ? this.node(inputs[0]!.id) : null;
      if (only === null || only.op !== 'linear' || only.choice !== true) {
        this.problem('table.cases', `table "${name}" is built over the cases of a choice, so its only input must be a c.choose`, loc);
      }
    }
    const ins = inputs.map((s) => this.sig(s, loc));
    const ranges = ins.map((s) => s.range);
    const size = ranges.reduce((a, r) => a * (r.hi - r.lo + 1), 1);
    const values: number[] = [];
    let lo = Infinity;
    let hi = -Infinity;
    if (size > 1 << 16) {
      this.problem('table.size', `table "${name}" has a domain of ${size} input combinations; the limit is 65,536`, loc);
    } else {
      const vals = ranges.map((r) => r.lo);
      for (let i = 0; i < size; i++) {
        let rem = i;
        for (let k = ranges.length - 1; k >= 0; k--) {
          const span = ranges[k]!.hi - ranges[k]!.lo + 1;
          vals[k] = ranges[k]!.lo + (rem % span);
          rem = Math.floor(rem / span);
        }
        const v = this.checkInt(fn(...vals), `table "${name}" at (${vals.join(', ')})`, loc);
        values.push(v);
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
    }
    if (values.length === 0) lo = hi = 0;
    let r: Range = { lo, hi };
    if (range) {
      r = this.checkRange({ lo: range[0], hi: range[1] }, `table "${name}"`, loc);
      const bad = values.findIndex((v) => v < r.lo || v > r.hi);
      if (bad >= 0) this.problem('signal.range', `table "${name}" yields ${values[bad]}, outside its declared range [${r.lo}, ${r.hi}]`, loc);
    }
    return this.push({ op: 'table', name, inputs: ins.map((s) => s.id), values, range: r, ...(opts.overCases === true ? { overCases: true as const } : {}) }, loc);
  }

  compare(cmp: CompareOp, a: SigLike, b: SigLike): Sig {
    const loc = callerLoc();
    const sa = this.sig(a, loc);
    const sb = this.sig(b, loc);
    return this.push({ op: 'compare', cmp, a: sa.id, b: sb.id, range: { lo: 0, hi: 1 } }, loc);
  }

  private requireBit(s: Sig, what: string, loc: SourceLoc): void {
    const r = s.range;
    if (r.lo < 0 || r.hi > 1) this.problem('signal.notbit', `${what} must be a bit (range [0, 1]), but "${s.name}" has range [${r.lo}, ${r.hi}]`, loc);
  }

  /** cond ? a : b (cond must be a bit). */
  select(cond: Sig, a: SigLike, b: SigLike): Sig {
    const loc = callerLoc();
    const sc = this.sig(cond, loc);
    this.requireBit(sc, 'the condition of select', loc);
    const sa = this.sig(a, loc);
    const sb = this.sig(b, loc);
    const range = { lo: Math.min(sa.range.lo, sb.range.lo), hi: Math.max(sa.range.hi, sb.range.hi) };
    return this.push({ op: 'select', cond: sc.id, then: sa.id, else: sb.id, range }, loc);
  }

  /**
   * The value of the one case whose condition holds, 0 when none does: Σ_k select(cond_k, value_k, 0).
   * At most one condition may hold at any position (the interpreters check it). Lowered as one dim
   * that every case's SWITCH unit writes (passes/lower-encodings.ts choiceDim; the sum of selects
   * where a value is too wide for a switch); as an emit field its one-hot comes straight from the conditions and values
   * (one FFN layer after them instead of two: passes/lower-encodings.ts), and so does a table over
   * it built with `overCases`.
   */
  choose(cases: [Sig, SigLike][], range?: [number, number]): Sig {
    const loc = callerLoc();
    if (cases.length === 0) {
      this.problem('choose.empty', 'choose needs at least one case', loc);
      return this.constant(0, loc);
    }
    const terms = cases.map(([cond, value]) => [this.select(cond, value, 0), 1] as [Sig, number]);
    const out = this.linearAt(terms, 0, loc, range);
    const n = this.node(out.id);
    if (n.op === 'linear') n.choice = true;
    return out;
  }

  private logic(op: LogicOp, args: SigLike[]): Sig {
    const loc = callerLoc();
    const ss = args.map((x) => this.sig(x, loc));
    for (const s of ss) this.requireBit(s, `an input of ${op}`, loc);
    return this.push({ op: 'logic', logic: op, args: ss.map((s) => s.id), range: { lo: 0, hi: 1 } }, loc);
  }
  and(a: SigLike, b: SigLike): Sig {
    return this.logic('and', [a, b]);
  }
  or(a: SigLike, b: SigLike): Sig {
    return this.logic('or', [a, b]);
  }
  xor(a: SigLike, b: SigLike): Sig {
    return this.logic('xor', [a, b]);
  }
  not(a: SigLike): Sig {
    return this.logic('not', [a]);
  }

  /**
   * The value `x` had at the previous position (`dflt` at position 0: a delay line). Lowered to a
   * GDN head fed by the causal conv's previous-token tap; x must not depend on the result.
   */
  previous(x: SigLike, dflt = 0): Sig {
    const loc = callerLoc();
    const s = this.sig(x, loc);
    const d = this.checkInt(dflt, 'the default of previous', loc);
    const r = s.range;
    return this.push({ op: 'prev', source: s.id, default: d, range: { lo: Math.min(r.lo, d), hi: Math.max(r.hi, d) } }, loc);
  }

  /**
   * `previous` of several signals at once: lowered together as one delay (one GDN key head holds
   * their fields side by side), so a wide delayed value costs one head instead of one per signal.
   */
  previousAll(xs: SigLike[], defaults?: number[]): Sig[] {
    const loc = callerLoc();
    const group = this.prevGroups++;
    return xs.map((x, i) => {
      const s = this.sig(x, loc);
      const d = this.checkInt(defaults?.[i] ?? 0, 'a default of previousAll', loc);
      const r = s.range;
      return this.push({ op: 'prev', source: s.id, default: d, group, range: { lo: Math.min(r.lo, d), hi: Math.max(r.hi, d) } }, loc);
    });
  }

  // ── forward references ────────────────────────────────────────────────────────────────────

  /** A signal defined later by `w.assign(x)`; its range is declared here. */
  wire(name: string, range: [number, number]): Wire {
    const loc = callerLoc();
    const r = this.checkRange({ lo: range[0], hi: range[1] }, `wire "${name}"`, loc);
    const s = this.push({ op: 'wire', name, source: null, range: r }, loc);
    return new Wire(this, s.id);
  }

  assignWire(w: Wire, src: SigLike): void {
    const loc = callerLoc();
    const n = this.node(w.id);
    if (n.op !== 'wire') throw new Error('internal: not a wire');
    if (n.source !== null) {
      this.problem('wire.reassigned', `wire "${n.name}" is assigned twice`, loc);
      return;
    }
    n.source = this.sig(src, loc).id;
  }

  // ── RAM on pinned Gated DeltaNet heads ────────────────────────────────────────────────────

  ram(name: string, opts: RamOptions): Ram {
    const loc = callerLoc();
    if (!Number.isInteger(opts.rows) || opts.rows < 1) this.problem('ram.rows', `RAM "${name}": rows must be a positive integer, got ${opts.rows}`, loc);
    const fields = opts.fields.map((f) => this.checkRange(fullRange(f), `RAM "${name}" field`, loc));
    if (fields.length === 0) this.problem('ram.fields', `RAM "${name}" needs at least one field`, loc);
    for (const f of fields) {
      if (f.lo !== 0) this.problem('ram.fields', `RAM "${name}": fields are unsigned (lo must be 0), got [${f.lo}, ${f.hi}]`, loc);
    }
    const id = this.rams.length;
    this.rams.push({ id, name: this.uniqueName(name), rows: opts.rows, fields, write: null, reads: [], loc });
    return new Ram(this, id);
  }

  ramWrite(ram: Ram, addr: Sig, values: SigLike[], enable?: Sig): void {
    const loc = callerLoc();
    const decl = this.rams[ram.id]!;
    if (decl.write !== null) {
      this.problem('ram.write', `RAM "${decl.name}" already has a write port (one write per position)`, loc);
      return;
    }
    if (values.length !== decl.fields.length) {
      this.problem('ram.write', `RAM "${decl.name}" words have ${decl.fields.length} field(s), the write gives ${values.length}`, loc);
    }
    const en = enable ? this.sig(enable, loc) : null;
    if (en) this.requireBit(en, `the enable of RAM "${decl.name}"`, loc);
    decl.write = {
      addr: this.sig(addr, loc).id,
      values: values.map((v) => this.sig(v, loc).id),
      enable: en ? en.id : null,
      loc,
    };
  }

  ramRead(ram: Ram, addr: Sig, enable?: Sig): Sig[] {
    const loc = callerLoc();
    const decl = this.rams[ram.id]!;
    const port = decl.reads.length;
    const a = this.sig(addr, loc);
    const en = enable ? this.sig(enable, loc) : null;
    if (en) this.requireBit(en, `the read enable of RAM "${decl.name}"`, loc);
    const results = decl.fields.map((f, i) =>
      this.push({ op: 'ram_read', name: `${decl.name}.r${port}.f${i}`, ram: decl.id, port, field: i, range: { lo: Math.min(0, f.lo), hi: f.hi } }, loc),
    );
    decl.reads.push({ addr: a.id, enable: en ? en.id : null, results: results.map((s) => s.id), loc });
    return results;
  }

  ramReadGroups(ram: Ram, addr: Sig, enable: Sig | undefined, groups: [number, number][][]): { fields: Sig[]; groups: Sig[] } {
    const loc = callerLoc();
    const decl = this.rams[ram.id]!;
    const fields = this.ramRead(ram, addr, enable);
    const port = decl.reads[decl.reads.length - 1]!;
    const sigs = groups.map((g, i) => {
      const seen = new Set<number>();
      for (const [f, coef] of g) {
        if (!Number.isInteger(f) || f < 0 || f >= fields.length || seen.has(f)) {
          this.problem('ram.group', `RAM "${decl.name}" read group ${i}: field ${f} is not a distinct field of its ${fields.length}`, loc);
        }
        if (!Number.isInteger(coef) || coef < 1) this.problem('ram.group', `RAM "${decl.name}" read group ${i}: coefficient ${coef} is not a positive integer`, loc);
        seen.add(f);
      }
      if (g.length === 0) this.problem('ram.group', `RAM "${decl.name}" read group ${i} has no fields`, loc);
      return this.linear(g.map(([f, coef]) => [fields[f]!, coef] as [Sig, number]), 0).named(`${decl.name}.r${decl.reads.length - 1}.g${i}`);
    });
    port.groups = sigs.map((s) => s.id);
    return { fields, groups: sigs };
  }

  // ── hard-attention lookups ────────────────────────────────────────────────────────────────

  lookup(name: string, opts: LookupOptions): { values: Sig[]; hit: Sig } {
    const loc = callerLoc();
    if (this.meta.bos === undefined) {
      this.problem('lookup.bos', `lookup "${name}" needs the circuit to declare a bos token (the no-match sink)`, loc);
    }
    const key = opts.key.map((x) => this.sig(x, loc));
    const query = opts.query.map((x) => this.sig(x, loc));
    const value = opts.value.map((x) => this.sig(x, loc));
    if (key.length === 0 || key.length !== query.length) {
      this.problem('lookup.key', `lookup "${name}": key and query must be non-empty and of equal length (${key.length} vs ${query.length})`, loc);
    }
    const defaults = opts.defaults ?? value.map(() => 0);
    if (defaults.length !== value.length) {
      this.problem('lookup.defaults', `lookup "${name}": ${defaults.length} default(s) for ${value.length} value field(s)`, loc);
    }
    const stamp = opts.stamp ? this.sig(opts.stamp, loc) : null;
    const publish = opts.publish ? this.sig(opts.publish, loc) : null;
    if (publish) this.requireBit(publish, `the publish flag of lookup "${name}"`, loc);
    const id = this.lookups.length;
    const uname = this.uniqueName(name);
    const results = value.map((v, i) =>
      this.push({
        op: 'lookup_value', name: `${uname}.v${i}`, lookup: id, field: i,
        range: { lo: Math.min(v.range.lo, defaults[i] ?? 0), hi: Math.max(v.range.hi, defaults[i] ?? 0) },
      }, loc),
    );
    const hit = this.push({ op: 'lookup_value', name: `${uname}.hit`, lookup: id, field: -1, range: { lo: 0, hi: 1 } }, loc);
    this.lookups.push({
      id, name: uname, key: key.map((s) => s.id), value: value.map((s) => s.id), query: query.map((s) => s.id),
      stamp: stamp ? stamp.id : null, publish: publish ? publish.id : null, defaults,
      results: results.map((s) => s.id), hit: hit.id, loc,
    });
    return { values: results, hit };
  }

  // ── output ────────────────────────────────────────────────────────────────────────────────

  /**
   * The token emitted at each position: `fn(values of fields)`. Without `fn` a single field is
   * emitted as the token id itself. `fn` must be injective over the fields' ranges (each token
   * is then recognised by the LM head from its digits alone).
   */
  emit(fields: Sig[], fn?: (...vals: number[]) => number): void {
    const loc = callerLoc();
    if (this.emitDecl !== null) {
      this.problem('emit.twice', 'the circuit emits twice; one emit per circuit', loc);
      return;
    }
    const fs = fields.map((f) => this.sig(f, loc));
    const f = fn ?? ((v: number) => v);
    if (!fn && fs.length !== 1) this.problem('emit.fn', 'emit with several fields needs a function mapping them to a token id', loc);
    const ranges = fs.map((s) => s.range);
    const size = ranges.reduce((a, r) => a * (r.hi - r.lo + 1), 1);
    const tokens: number[] = [];
    if (size > 1 << 20) {
      this.problem('emit.size', `emit has ${size} field combinations; the limit is 1,048,576`, loc);
    } else {
      const seen = new Map<number, string>();
      const vals = ranges.map((r) => r.lo);
      for (let i = 0; i < size; i++) {
        let rem = i;
        for (let k = ranges.length - 1; k >= 0; k--) {
          const span = ranges[k]!.hi - ranges[k]!.lo + 1;
          vals[k] = ranges[k]!.lo + (rem % span);
          rem = Math.floor(rem / span);
        }
        const t = f(...vals);
        if (!Number.isInteger(t) || t < 0 || t >= this.meta.vocab) {
          this.problem('emit.token', `emit maps (${vals.join(', ')}) to ${t}, which is not a token id of the vocabulary [0, ${this.meta.vocab})`, loc);
          break;
        }
        const prev = seen.get(t);
        if (prev !== undefined) {
          this.problem('emit.injective', `emit maps both (${prev}) and (${vals.join(', ')}) to token ${t}; the mapping must be injective`, loc);
          break;
        }
        seen.set(t, vals.join(', '));
        tokens.push(t);
      }
    }
    this.emitDecl = { fields: fs.map((s) => s.id), tokens, loc };
  }

  /**
   * The token emitted at each position, given as rows: each token lists the value it requires of
   * every field (null: any). For any field values at most one row may match (checked here) and at
   * run time exactly one must (the interpreter checks). Suits alphabets where token kinds carry
   * different payloads (a kind field plus payload fields that only some kinds use).
   */
  emitRows(fields: Sig[], rows: readonly EmitRow[]): void {
    const loc = callerLoc();
    if (this.emitDecl !== null) {
      this.problem('emit.twice', 'the circuit emits twice; one emit per circuit', loc);
      return;
    }
    const fs = fields.map((f) => this.sig(f, loc));
    // Rows already found sound against the same field ranges (a circuit built again that passes
    // the same rows array) are not checked again.
    const checkedAgainst = `${this.meta.vocab}|${fs.map((f) => `${f.range.lo}:${f.range.hi}`).join(',')}`;
    if (soundEmitRows.get(rows) !== checkedAgainst) {
      const before = this.problems.length;
      if (!checkEmitRows(fs, rows, this.meta.vocab, (code, message) => this.problem(code, message, loc))) return;
      if (this.problems.length === before) soundEmitRows.set(rows, checkedAgainst);
    }
    // (the rows are kept as given: they must not change afterwards)
    this.emitDecl = { fields: fs.map((s) => s.id), tokens: [], rows, loc };
  }

  toIR(source: string): CircuitIR {
    return {
      version: 1,
      name: this.meta.name,
      vocab: this.meta.vocab,
      bos: this.meta.bos ?? null,
      nodes: this.nodes,
      rams: this.rams,
      lookups: this.lookups,
      emit: this.emitDecl,
      source,
      ...(this.meta.notes && this.meta.notes.length ? { notes: [...this.meta.notes] } : {}),
    };
  }
}

/** A token table's bounds and its first id whose value is not a safe integer (−1: none). */
interface TableBounds { readonly lo: number; readonly hi: number; readonly nonInt: number }

// Emit rows found sound, with the vocabulary and field ranges they were checked against.
const soundEmitRows = new WeakMap<readonly EmitRow[], string>();

// Tables passed to tokenTable again (a circuit built twice) are not scanned again.
const boundsOfTable = new WeakMap<TokenValues, TableBounds>();

function tableBounds(values: TokenValues): TableBounds {
  const memo = boundsOfTable.get(values);
  if (memo) return memo;
  const bounds = values instanceof Int8Array ? byteTableBounds(values) : anyTableBounds(values);
  boundsOfTable.set(values, bounds);
  return bounds;
}

/** A byte table's bounds: every value an integer (a loop of its own: most tables are bytes). */
function byteTableBounds(values: Int8Array): TableBounds {
  let lo = 127;
  let hi = -128;
  for (let t = 0; t < values.length; t++) {
    const v = values[t]!;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (lo > hi) lo = hi = 0; // an empty vocabulary
  return { lo, hi, nonInt: -1 };
}

function anyTableBounds(values: TokenValues): TableBounds {
  let lo = Infinity;
  let hi = -Infinity;
  let nonInt = -1;
  for (let t = 0; t < values.length; t++) {
    const v = values[t]!;
    if (!Number.isSafeInteger(v)) {
      if (nonInt < 0) nonInt = t;
      continue;
    }
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (lo > hi) lo = hi = 0; // an empty vocabulary, or no integer value at all (already a problem)
  return { lo, hi, nonInt };
}
