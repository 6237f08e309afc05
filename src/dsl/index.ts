/** The circuit DSL's public surface: what circuit files import. */
export { defineCircuit, CircuitBuilder, Sig, Wire, Ram } from './builder.ts';
export type { CircuitDef, CircuitMeta, LookupOptions, RamOptions, SigLike, Problem, TargetShape } from './builder.ts';
