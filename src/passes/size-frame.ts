/**
 * Pass — size the frame: the hidden size and the residual frame (lower/frame.ts: anchor and
 * constant dims, then the slots). The target's hidden size unless the slots and the frame's own
 * dims do not fit it, or it has no anchor plan: then the smallest usable size that holds them
 * (`chooseHidden`). A hidden size the caller gives (CompileOptions.hidden) replaces the target's:
 * a `fit.width` error when the slots do not fit it, widened like the target's when it has no
 * anchor plan.
 */
import { ChipcError } from '../util/errors.ts';
import { anchorPlan, chooseHidden, CONST_ONES, makeFrame, type ResidualFrame } from '../lower/frame.ts';

export function sizeFrame(slotsUsed: number, targetHidden: number, requested?: number): ResidualFrame {
  const overheadFor = (H: number) => (anchorPlan(H)?.ns.length ?? 4) + CONST_ONES;
  let hidden = requested ?? targetHidden;
  if (requested !== undefined && slotsUsed + overheadFor(hidden) > hidden) {
    throw new ChipcError('fit.width', `the circuit needs ${slotsUsed} slots plus ${overheadFor(hidden)} frame dims; --hidden ${hidden} is too small`);
  }
  if (slotsUsed + overheadFor(hidden) > hidden || anchorPlan(hidden) === null) {
    hidden = chooseHidden(Math.max(hidden, slotsUsed + 6));
    while (slotsUsed + overheadFor(hidden) > hidden) hidden = chooseHidden(hidden + 1);
  }
  return makeFrame(hidden, slotsUsed);
}
