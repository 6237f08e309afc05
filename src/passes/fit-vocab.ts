/**
 * Pass — fit the vocabulary: the target the rest of the compile sees, with the vocabulary the
 * model emits (CompileOptions.vocab): a given size, checked against the circuit's token ids, or
 * the target's, widened to the next multiple of 256 when the circuit's ids do not fit (as a merge
 * extends the host's vocabulary).
 */
import type { CircuitIR } from '../ir/types.ts';
import type { ModelConfig } from '../model/config.ts';
import { ChipcError } from '../util/errors.ts';

/** The vocabulary a compile emits for `ir` at `target` (see CompileOptions.vocab). */
export function vocabFor(ir: CircuitIR, target: ModelConfig, vocab?: number): number {
  if (vocab !== undefined) {
    if (!Number.isInteger(vocab) || vocab < 1) throw new ChipcError('fit.vocab', `vocabulary size ${vocab} is not a positive integer`);
    if (vocab < ir.vocab) throw new ChipcError('fit.vocab', `the circuit uses ${ir.vocab} token ids; the requested vocabulary has ${vocab}`);
    return vocab;
  }
  return target.vocabSize >= ir.vocab ? target.vocabSize : Math.ceil(ir.vocab / 256) * 256;
}

/** `host` with the vocabulary `vocabFor` chooses (`host` itself when it is unchanged). */
export function fitVocab(ir: CircuitIR, host: ModelConfig, vocab?: number): ModelConfig {
  const vocabSize = vocabFor(ir, host, vocab);
  return vocabSize === host.vocabSize ? host : { ...host, vocabSize };
}
