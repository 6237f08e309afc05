/**
 * A deterministic random store workload (for the chip runs in test/store-chip.test.ts and
 * bench/store-chip.ts): puts, gets, deletes and lists over a small pool of names, so files are
 * overwritten, deleted and re-inserted, with every error case mixed in — empty names, names and
 * contents just over the limits, ids ≥ V — and contents up to the maximum, so the store fills up
 * (FULL) and drains again. xorshift32 from a seed: the same seed gives the same requests anywhere.
 */
import type { StoreModel, StoreParams, StoreResult } from './model.ts';
import type { StoreRequest } from './firmware.ts';

export function storeWorkload(seed: number, count: number, p: StoreParams): StoreRequest[] {
  let s = seed >>> 0 || 1;
  const next = () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s;
  };
  const below = (n: number) => next() % n;
  const token = () => below(p.vocab);
  const tokens = (n: number) => Array.from({ length: n }, token);
  const pool = Array.from({ length: Math.max(4, Math.min(3 * p.maxFiles, 48)) }, () => tokens(1 + below(p.nameMax)));
  const name = (): number[] => {
    const r = below(20);
    if (r < 15) return pool[below(pool.length)]!;
    if (r === 15) return [];
    if (r === 16) return tokens(p.nameMax + 1);
    if (r === 17) return [...tokens(below(p.nameMax)), p.vocab + below(3)];
    return tokens(p.nameMax); // a maximum-length name
  };
  const content = (): number[] => {
    const r = below(20);
    if (r < 12) return tokens(below(Math.min(p.contentMax, 3 * p.chunkSize) + 1));
    if (r < 16) return tokens(below(p.contentMax + 1));
    if (r === 16) return tokens(p.contentMax + 1 + below(3));
    if (r === 17) return [...tokens(below(p.contentMax)), p.vocab];
    return tokens(p.contentMax);
  };
  const out: StoreRequest[] = [];
  for (let i = 0; i < count; i++) {
    const r = below(12);
    if (r < 5) out.push({ op: 'put', name: name(), content: content() });
    else if (r < 8) out.push({ op: 'get', name: name() });
    else if (r < 11) out.push({ op: 'delete', name: name() });
    else out.push({ op: 'list' });
  }
  return out;
}

/** One request on the reference model. */
export function applyRequest(m: StoreModel, q: StoreRequest): StoreResult {
  switch (q.op) {
    case 'put': return m.put(q.name, q.content);
    case 'get': return m.get(q.name);
    case 'delete': return m.delete(q.name);
    default: return m.list();
  }
}
