/**
 * The seeded arithmetic problems of the interpreter benches (bench/repl-bignum.ts through chipc's
 * executor, bench/merged-generate.ts through transformers): problem i of each kind is a random
 * integer a of 20…60 digits (uniform digit count, then uniform digits with a nonzero first one)
 * and b likewise; a division takes b with at most as many digits as a, so that the quotient has at
 * least 1 digit. The line is `a * b` or `a / b` (floor division; both operands positive), the
 * answer its BigInt value. The same seed gives the same problems on every machine.
 */
export interface Problem { kind: 'mul' | 'div'; a: bigint; b: bigint; line: string; want: string }


/** mulberry32: a small seeded generator, the same on every machine. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A random integer with `digits` decimal digits (first digit nonzero). */
function randomInt(next: () => number, digits: number): bigint {
  let s = String(1 + Math.floor(next() * 9));
  for (let i = 1; i < digits; i++) s += String(Math.floor(next() * 10));
  return BigInt(s);
}

export function bignumProblems(seed: number, mul: number, div: number): Problem[] {
  const next = rng(seed);
  const digits = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
  const out: Problem[] = [];
  for (let i = 0; i < mul; i++) {
    const a = randomInt(next, digits(20, 60));
    const b = randomInt(next, digits(20, 60));
    out.push({ kind: 'mul', a, b, line: `${a} * ${b}`, want: String(a * b) });
  }
  for (let i = 0; i < div; i++) {
    const da = digits(20, 60);
    const a = randomInt(next, da);
    const b = randomInt(next, digits(20, da));
    out.push({ kind: 'div', a, b, line: `${a} / ${b}`, want: String(a / b) });
  }
  return out;
}

