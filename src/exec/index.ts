/** Public entry of the reference executor (see docs/executor.md). */
export { Executor, argmax, compareCaches, type CacheSnapshot } from './executor.ts';
export {
  makeNumericContext, makeDot, makeSum, addRoundOnce, roundBf16,
  exp32, sigmoid32, silu32, softplus32, rsqrt32, type ExecNumericContext,
} from './numeric.ts';
export { DELTA_ROLES, linear, linearEx, newMatmulStats, type DeltaRole, type DeltaWork, type MatmulPath, type MatmulStats, type LinearResult } from './matmul.ts';
export { csrOf } from './matmul-plans.ts';
export { ExecPlans, ExecMemos, plansOf, DEFAULT_TUNING, type SparseTuning } from './plans.ts';
export { rmsNorm1p, gatedRmsNorm, l2norm } from './norms.ts';
export { softmax32, topK, moeRoute, moeForward, swiglu } from './mlp.ts';
export { recurrentStep, gdnForward } from './gdn.ts';
export { attentionStep, ropeInvFreq, KvCache } from './attention.ts';
export type * from './types.ts';
