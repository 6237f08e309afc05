/**
 * Pass (part of lowering) — lookups to hard-attention heads (gadgets/attn-lookup.ts).
 */
import type { LookupDecl } from '../ir/types.ts';
import type { ModelConfig } from '../model/config.ts';
import type { LowerContext } from '../lower/context.ts';

export function lowerLookup(ctx: LowerContext, lk: LookupDecl, _target: ModelConfig): void {
  ctx.fail(lk, 'lower.unsupported', `lookup "${lk.name}": attention lookups are not lowered yet`);
}
