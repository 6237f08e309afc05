/**
 * Pass (part of lowering) — RAM to pinned Gated DeltaNet heads. One GDN op per RAM: its inputs are
 * the bits (or one-hot digits, addrDigitsOf) of the write address and the bits of every field of
 * the written word, the write enable, and per read port the bits or digits of the read address and
 * the read enable; its outputs are the read values
 * (gadgets/gdn-ram.ts does the address decode, the row layout and the read-out).
 */
import { SLOT_MAX, type CircuitIR, type IrNode, type RamDecl } from '../ir/types.ts';
import { ChipcError } from '../util/errors.ts';
import { lowerRamToGdn, ramWordsPerRow, type GdnRamIo } from '../gadgets/gdn-ram.ts';
import { gdnDims } from '../model/naming.ts';
import type { ModelConfig } from '../model/config.ts';
import type { LowerContext } from '../lower/context.ts';
import type { Form, VDim } from '../lower/forms.ts';
import { gdnReads } from '../lower/op-io.ts';
import { bitsOf, oneHotOf, readCountsOf, tableBitOf, tableLowOneHotOf, zeroDim } from './lower-encodings.ts';
import type { NodeId } from '../ir/types.ts';
import type { RamAddrDigit } from '../gadgets/gdn-ram.ts';

function ceilLog2(x: number): number {
  let b = 0;
  while (2 ** b < x) b++;
  return b;
}

/**
 * The address as digits, when it is a linear node Σ_g 2^lo_g·x_g (bias 0) over signals x_g with
 * ranges within [0, 2^w_g) on disjoint bit spans inside the address width, and at least one x_g
 * spans two or more bits: each such x_g is read through its one-hot (`oneHotOf`: for a table, the
 * table's own indicator columns, one FFN layer after its inputs like the table), each 0/1 x_g as
 * its bit; a bit no term covers is the constant-0 dim. Otherwise null (the plain bits of the
 * address). A digit's one-hot changes in two dims when the digit changes, each read by the rows
 * with that digit only (gadgets/gdn-ram.ts RamAddrDigit): much less work for incremental decode
 * than bits that every row reads.
 */
function addrDigitsOf(ctx: LowerContext, id: NodeId, width: number, selectBit: number | null): { addrBits: VDim[]; addrDigits: RamAddrDigit[] } | null {
  const n = ctx.resolve(id);
  if (n.op !== 'linear' || n.bias !== 0) return null;
  const covered = new Array<boolean>(width).fill(false);
  const spans: { lo: number; w: number; node: NodeId }[] = [];
  for (const t of n.terms) {
    const lo = Math.log2(t.coef);
    const r = ctx.resolve(t.node).range;
    if (!Number.isInteger(lo) || lo < 0 || r.lo < 0 || !Number.isInteger(r.hi)) return null;
    const w = Math.max(1, ceilLog2(r.hi + 1));
    if (lo + w > width) return null;
    for (let b = lo; b < lo + w; b++) {
      if (covered[b]) return null;
      covered[b] = true;
    }
    spans.push({ lo, w, node: t.node });
  }
  if (!spans.some((sp) => sp.w >= 2)) return null;
  const addrBits: VDim[] = new Array<VDim>(width).fill(zeroDim(ctx));
  const addrDigits: RamAddrDigit[] = [];
  for (const sp of spans) {
    if (sp.w === 1) {
      addrBits[sp.lo] = ctx.scalarDim(sp.node);
      continue;
    }
    const r = ctx.resolve(sp.node).range;
    if (selectBit === sp.lo + sp.w - 1) {
      // the digit's top bit is packed rows' select bit: the digit's low bits as a narrower digit,
      // the select bit as its own dim (β and z read one dim, not half the digit's one-hot)
      const top = tableBitOf(ctx, sp.node, sp.w - 1);
      const low = top === null ? null : sp.w > 2 ? tableLowOneHotOf(ctx, sp.node, sp.w - 1) : tableBitOf(ctx, sp.node, 0);
      if (top !== null && low !== null) {
        addrBits[selectBit] = top;
        if (Array.isArray(low)) addrDigits.push({ lo: sp.lo, width: sp.w - 1, oneHot: low });
        else addrBits[sp.lo] = low;
        continue;
      }
    }
    const dims = oneHotOf(ctx, sp.node);
    addrDigits.push({ lo: sp.lo, width: sp.w, oneHot: Array.from({ length: 2 ** sp.w }, (_, v) => (v >= r.lo && v <= r.hi ? dims[v - r.lo]! : null)) });
  }
  return { addrBits, addrDigits };
}

// Per IR: each RAM read result that is a term of a sum of read-outs (readSumDim) → that sum's node.
const readSums = new WeakMap<CircuitIR, Map<NodeId, NodeId>>();
function readSumsOf(ctx: LowerContext): Map<NodeId, NodeId> {
  let sumOf = readSums.get(ctx.ir);
  if (sumOf !== undefined) return sumOf;
  sumOf = new Map();
  const { uses } = readCountsOf(ctx);
  for (const n of ctx.ir.nodes) {
    if (n.op !== 'linear' || n.choice || n.bias !== 0 || n.terms.length < 2 || n.range.lo < 0 || n.range.hi > SLOT_MAX) continue;
    const results = new Set<NodeId>();
    const rams = new Set<number>();
    for (const t of n.terms) {
      const m = ctx.resolve(t.node);
      if (m.op !== 'ram_read' || uses[t.node] !== 1 || uses[m.id] !== 1 || !Number.isInteger(t.coef) || t.coef < 1 || results.has(m.id)) break;
      results.add(m.id);
      rams.add(m.ram);
    }
    if (results.size === n.terms.length && rams.size >= 2) for (const id of results) sumOf.set(id, n.id);
  }
  readSums.set(ctx.ir, sumOf);
  return sumOf;
}

/** The dim of a sum of read-outs (made on first ask; its RAMs write it). */
function readSumOwnDim(ctx: LowerContext, n: IrNode): VDim {
  return ctx.encoding(`readsum:${n.id}`, () => [ctx.newDim(n.id, 'scalar', 0, n.range.lo, n.range.hi, n.name)])[0]!;
}

/**
 * A sum of RAM read-outs as one dim: L = Σ_k coef_k·r_k (bias 0, positive integer coefficients,
 * range within [0, SLOT_MAX]), every term r_k a read field that nothing but L reads, from two RAMs
 * or more — say, a word read from one of four banks, each bank's read-out 0 but the one that holds
 * it. Every RAM's read-out writes its terms straight into L's dim (a read group whose out_proj
 * weight carries the coefficient), so the residual adds them up as the RAMs are read, layer after
 * layer: L takes one slot from the first RAM's layer on, where its terms took one each until L's
 * readers. Exactness: every read-out is an exact integer (the RAM gadget's bound); every partial
 * sum is an integer in [0, SLOT_MAX], so each addition is exact. The dim has several writers: its
 * slot starts at the first (schedule `bornAt`), its value is whole after the last (`producedAt`:
 * readers and the checker wait for it). `lowerRamOnce` lowers a RAM unless it is lowered already.
 * Null when L is not such a sum.
 */
export function readSumDim(ctx: LowerContext, n: IrNode, lowerRamOnce: (ram: number) => void): VDim | null {
  if (n.op !== 'linear' || n.terms.length === 0) return null;
  const first = ctx.resolve(n.terms[0]!.node);
  if (readSumsOf(ctx).get(first.id) !== n.id) return null;
  const dim = readSumOwnDim(ctx, n);
  for (const t of n.terms) {
    const m = ctx.resolve(t.node);
    if (m.op === 'ram_read') lowerRamOnce(m.ram);
  }
  return dim;
}

/** Lower one RAM; sets the scalar dims of its read results (but the terms of sums of read-outs). */
export function lowerRam(ctx: LowerContext, ram: RamDecl, target: ModelConfig): void {
  const addrBits = ceilLog2(ram.rows);
  const fieldBits = ram.fields.map((f) => (f.hi <= 0 ? 0 : ceilLog2(f.hi + 1)));
  // An enable is read through its form: a sum of exclusive 0/1 signals then costs no layer.
  const enableDim = (id: number | null): Form | null => (id === null ? null : ctx.formOf(id));
  // Packed rows read the select bit in every β and z: the top address bit, given its own dim
  // where it lies in a digit that is a table (one dim read instead of half the digit's one-hot).
  const selectBit = ramWordsPerRow(ram, gdnDims(target)) === 2 ? addrBits - 1 : null;
  const sumOf = readSumsOf(ctx); // read results that are terms of a sum of read-outs (readSumDim)
  const addrOf = (id: NodeId): { addrBits: VDim[]; addrDigits?: RamAddrDigit[] } =>
    addrDigitsOf(ctx, id, addrBits, selectBit) ?? { addrBits: bitsOf(ctx, id, 0, addrBits) };
  const io: GdnRamIo = {
    write: ram.write
      ? {
          ...addrOf(ram.write.addr),
          enable: enableDim(ram.write.enable),
          fieldBits: ram.write.values.map((v, f) => bitsOf(ctx, v, 0, fieldBits[f]!)),
        }
      : null,
    reads: ram.reads.map((p) => {
      const values = p.results.map((rid) => {
        if (sumOf.has(rid)) return null; // written into its sum's dim (readSumDim)
        const n = ctx.node(rid);
        const d = ctx.newDim(rid, 'scalar', 0, n.range.lo, n.range.hi, n.name);
        ctx.setScalarDim(rid, d);
        return d;
      });
      // read groups: linear nodes over this port's results, written by the read-out as values
      const groups = (p.groups ?? []).map((gid) => {
        const g = ctx.node(gid);
        if (g.op !== 'linear' || g.bias !== 0 || g.terms.some((t) => !p.results.includes(t.node))) {
          ctx.fail(g, 'ram.group', `RAM "${ram.name}": read group "${g.name}" is not a sum of its port's fields with positive coefficients`);
        }
        const d = ctx.newDim(gid, 'scalar', 0, g.range.lo, g.range.hi, g.name);
        ctx.setScalarDim(gid, d);
        return { dim: d, terms: g.terms.map((t) => ({ field: p.results.indexOf(t.node), coef: t.coef })) };
      });
      // each sum of read-outs this port's fields are terms of: a group writing the sum's dim
      const sums = new Map<NodeId, { field: number; coef: number }[]>();
      p.results.forEach((rid, field) => {
        const sid = sumOf.get(rid);
        if (sid === undefined) return;
        const sum = ctx.node(sid);
        if (sum.op !== 'linear') return;
        const coef = sum.terms.find((t) => ctx.resolve(t.node).id === rid)!.coef;
        const terms = sums.get(sid);
        if (terms) terms.push({ field, coef });
        else sums.set(sid, [{ field, coef }]);
      });
      for (const [sid, terms] of sums) groups.push({ dim: readSumOwnDim(ctx, ctx.node(sid)), terms });
      return { addr: { ...addrOf(p.addr), enable: enableDim(p.enable) }, out: { values, ...(groups.length > 0 ? { groups } : {}) } };
    }),
  };
  const low = (() => {
    try {
      return lowerRamToGdn(ram, io, gdnDims(target));
    } catch (e) {
      if (e instanceof ChipcError) ctx.fail(ram, 'fit.ram', `RAM "${ram.name}": ${e.message}`);
      throw e;
    }
  })();
  const writes = io.reads.flatMap((r) => [...(r.out.values ?? []).filter((d): d is VDim => d !== null), ...(r.out.groups ?? []).map((g) => g.dim)]);
  ctx.addOp({
    kind: 'gdn', what: `RAM "${ram.name}"`, heads: low.heads, reads: gdnReads(low.heads), writes,
    normWeight: low.normWeight, ram: { id: ram.id, lowering: low },
  });
}
