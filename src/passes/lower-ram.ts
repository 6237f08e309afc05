/**
 * Pass (part of lowering) — RAM to pinned Gated DeltaNet heads. One GDN op per RAM: its inputs are
 * the bits of the write address and of every field of the written word, the write enable, and per
 * read port the bits of the read address and the read enable; its outputs are the read values
 * (gadgets/gdn-ram.ts does the address decode, the row layout and the read-out).
 */
import type { RamDecl } from '../ir/types.ts';
import { ChipcError } from '../util/errors.ts';
import { gdnDimsOf, lowerRamToGdn, type GdnRamIo } from '../gadgets/gdn-ram.ts';
import type { ModelConfig } from '../model/config.ts';
import type { LowerContext } from '../lower/context.ts';
import type { VDim } from '../lower/forms.ts';
import { gdnReads } from '../lower/op-io.ts';
import { bitsOf } from './lower-encodings.ts';

function ceilLog2(x: number): number {
  let b = 0;
  while (2 ** b < x) b++;
  return b;
}

/** Lower one RAM; sets the scalar dims of all its read results. */
export function lowerRam(ctx: LowerContext, ram: RamDecl, target: ModelConfig): void {
  const addrBits = ceilLog2(ram.rows);
  const fieldBits = ram.fields.map((f) => (f.hi <= 0 ? 0 : ceilLog2(f.hi + 1)));
  const enableDim = (id: number | null): VDim | null => (id === null ? null : ctx.scalarDim(id));
  const io: GdnRamIo = {
    write: ram.write
      ? {
          addrBits: bitsOf(ctx, ram.write.addr, 0, addrBits),
          enable: enableDim(ram.write.enable),
          fieldBits: ram.write.values.map((v, f) => bitsOf(ctx, v, 0, fieldBits[f]!)),
        }
      : null,
    reads: ram.reads.map((p) => {
      const values = p.results.map((rid) => {
        const n = ctx.node(rid);
        const d = ctx.newDim(rid, 'scalar', 0, n.range.lo, n.range.hi, n.name);
        ctx.setScalarDim(rid, d);
        return d;
      });
      return { addr: { addrBits: bitsOf(ctx, p.addr, 0, addrBits), enable: enableDim(p.enable) }, out: { values } };
    }),
  };
  const low = (() => {
    try {
      return lowerRamToGdn(ram, io, gdnDimsOf(target));
    } catch (e) {
      if (e instanceof ChipcError) ctx.fail(ram, 'fit.ram', `RAM "${ram.name}": ${e.message}`);
      throw e;
    }
  })();
  const writes = io.reads.flatMap((r) => (r.out.values ?? []).filter((d): d is VDim => d !== null));
  ctx.addOp({
    kind: 'gdn', what: `RAM "${ram.name}"`, heads: low.heads, reads: gdnReads(low.heads), writes,
    normWeight: low.normWeight, ram: { id: ram.id, lowering: low },
  });
}
