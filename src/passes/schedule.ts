/**
 * Pass — schedule: assign every lowered op a sublayer. List scheduling in dependency order, each
 * op as early as its inputs allow (a value written by sublayer s is visible from s + 1), on the
 * sublayer kind that can compute it (FFN ops on odd sublayers 2L + 1; GDN and attention ops on
 * the mixer sublayer 2L of a layer whose mixer type they fix), within the target's per-layer
 * resources (FFN units, GDN key heads, attention key/value heads). Adds to the lowered circuit:
 * `sublayer[op]`, the layer count and each layer's type.
 */
import type { LayerType } from '../model/config.ts';
import { ChipcError } from '../util/errors.ts';
import type { LoweredCircuit, LoweredOp } from '../lower/lowered.ts';

export interface LayerResources {
  ffnUnits: number;
  gdnKeyHeads: number;
  attnKvHeads: number;
  /** Largest number of layers the target allows (default unbounded). */
  maxLayers?: number;
  /** FFN units to keep free per layer (for the slot clears packing adds afterwards). */
  ffnReserve?: number[];
  /**
   * Per op (by id): sublayers added to its height, so that it is placed before ops of the same
   * height (schedule-and-pack boosts the ops a reservation pushed off the critical path).
   */
  boost?: Int32Array;
}

export interface Schedule {
  /** Sublayer index of every op (by op id). */
  sublayer: Int32Array;
  /**
   * Sublayer after which every vdim holds its value (−1 = the embedding): its last writer's. A dim
   * that several ops add to (a sum of RAM read-outs, lower-ram.ts `readSumDim`) is whole only then.
   */
  producedAt: Int32Array;
  /** Sublayer of every vdim's first writer, where its slot starts (= producedAt but for sums). */
  bornAt: Int32Array;
  numLayers: number;
  layerTypes: LayerType[];
  /** Per layer: FFN units, GDN key heads, attention kv heads used by ops (before slot clears). */
  usage: { units: number; gdnHeads: number; attnHeads: number }[];
}

function opCost(op: LoweredOp): { units: number; gdn: number; attn: number } {
  switch (op.kind) {
    case 'ffn': return { units: op.units.length, gdn: 0, attn: 0 };
    case 'gdn': return { units: 0, gdn: op.heads.length, attn: 0 };
    case 'attn': return { units: 0, gdn: 0, attn: op.heads.length };
  }
}

/**
 * Ops in dependency order (an op after the writers of everything it reads). Among the ops whose
 * inputs are all placed, the one with the longest path still ahead of it (its height, in
 * sublayers, to the ops that read nothing it feeds) goes first, ties by id: when a layer's FFN
 * units or heads run short, the ops on the critical path get them and the ops with slack wait.
 */
export function opOrder(lc: LoweredCircuit, boost?: Int32Array): LoweredOp[] {
  // (a dim may have several writers: the GDN ops whose read-outs add up to it, readSumDim)
  const writers: number[][] = Array.from({ length: lc.dims.length }, () => []);
  for (const op of lc.ops) {
    for (const d of op.writes) {
      if (writers[d]!.length > 0 && (op.kind !== 'gdn' || lc.ops[writers[d]![0]!]!.kind !== 'gdn')) {
        throw new Error(`internal: vdim ${lc.dims[d]?.name} written by two ops that are not both RAM read-outs`);
      }
      writers[d]!.push(op.id);
    }
  }
  for (const d of lc.embedDims) {
    if (writers[d]!.length > 0) throw new Error(`internal: vdim ${lc.dims[d]?.name} written by the embedding and an op`);
  }
  const n = lc.ops.length;
  const indeg = new Int32Array(n);
  const users: number[][] = lc.ops.map(() => []);
  for (const op of lc.ops) {
    const deps = new Set<number>();
    for (const d of op.reads) for (const w of writers[d]!) deps.add(w);
    for (const w of deps) {
      indeg[op.id]++;
      users[w]!.push(op.id);
    }
  }
  // A topological order (Kahn, by id) to compute heights from the sinks back.
  const topo: number[] = [];
  const deg = indeg.slice();
  for (let i = 0; i < n; i++) if (deg[i] === 0) topo.push(i);
  for (let k = 0; k < topo.length; k++) for (const u of users[topo[k]!]!) if (--deg[u] === 0) topo.push(u);
  if (topo.length !== n) throw new Error('internal: lowered ops have a cycle');
  // height(o) = max over readers u of height(u) + gap, gap 2 between two FFN ops or two mixer ops
  // (same sublayer parity), 1 between an FFN op and a mixer op; 0 for an op nothing reads.
  const height = new Int32Array(n);
  const isFfn = (id: number) => lc.ops[id]!.kind === 'ffn';
  for (let k = n - 1; k >= 0; k--) {
    const o = topo[k]!;
    let h = 0;
    for (const u of users[o]!) h = Math.max(h, height[u]! + (isFfn(o) === isFfn(u) ? 2 : 1));
    height[o] = h + (boost?.[o] ?? 0);
  }
  // Kahn again with a binary heap on (−height, id).
  const before = (a: number, b: number) => (height[a] !== height[b] ? height[a]! > height[b]! : a < b);
  const heap: number[] = [];
  const push = (x: number) => {
    heap.push(x);
    for (let i = heap.length - 1; i > 0;) {
      const p = (i - 1) >> 1;
      if (!before(heap[i]!, heap[p]!)) break;
      [heap[i], heap[p]] = [heap[p]!, heap[i]!];
      i = p;
    }
  };
  const pop = (): number => {
    const top = heap[0]!;
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      for (let i = 0; ;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && before(heap[l]!, heap[m]!)) m = l;
        if (r < heap.length && before(heap[r]!, heap[m]!)) m = r;
        if (m === i) break;
        [heap[i], heap[m]] = [heap[m]!, heap[i]!];
        i = m;
      }
    }
    return top;
  };
  for (let i = 0; i < n; i++) if (indeg[i] === 0) push(i);
  const out: LoweredOp[] = [];
  while (heap.length > 0) {
    const id = pop();
    out.push(lc.ops[id]!);
    for (const u of users[id]!) if (--indeg[u] === 0) push(u);
  }
  return out;
}

export function schedule(lc: LoweredCircuit, res: LayerResources): Schedule {
  const producedAt = new Int32Array(lc.dims.length).fill(-2);
  for (const d of lc.embedDims) producedAt[d] = -1;
  const sublayer = new Int32Array(lc.ops.length).fill(-1);
  const types: (LayerType | null)[] = [];
  const usage: { units: number; gdnHeads: number; attnHeads: number }[] = [];
  const ensure = (L: number) => {
    while (usage.length <= L) {
      usage.push({ units: 0, gdnHeads: 0, attnHeads: 0 });
      types.push(null);
    }
  };
  for (const op of opOrder(lc, res.boost)) {
    let ready = -1;
    for (const d of op.reads) {
      const p = producedAt[d]!;
      if (p === -2) throw new Error(`internal: op "${op.what}" reads vdim ${lc.dims[d]?.name} that nothing writes`);
      ready = Math.max(ready, p);
    }
    const cost = opCost(op);
    if (cost.units > res.ffnUnits) {
      throw new ChipcError('fit.units', `${op.what} needs ${cost.units} FFN units in one layer; the target has ${res.ffnUnits}`);
    }
    if (cost.gdn > res.gdnKeyHeads) {
      throw new ChipcError('fit.heads', `${op.what} needs ${cost.gdn} GDN key heads in one layer; the target has ${res.gdnKeyHeads}`);
    }
    if (cost.attn > res.attnKvHeads) {
      throw new ChipcError('fit.heads', `${op.what} needs ${cost.attn} attention key/value heads in one layer; the target has ${res.attnKvHeads}`);
    }
    let s = ready + 1;
    for (;;) {
      const isFfnSlot = s % 2 === 1;
      const L = Math.floor(s / 2);
      if (op.kind === 'ffn' ? isFfnSlot : !isFfnSlot) {
        ensure(L);
        const u = usage[L]!;
        if (op.kind === 'ffn') {
          if (u.units + cost.units <= res.ffnUnits - (res.ffnReserve?.[L] ?? 0)) {
            u.units += cost.units;
            break;
          }
        } else {
          const want: LayerType = op.kind === 'gdn' ? 'linear_attention' : 'full_attention';
          const fits = op.kind === 'gdn' ? u.gdnHeads + cost.gdn <= res.gdnKeyHeads : u.attnHeads + cost.attn <= res.attnKvHeads;
          if ((types[L] === null || types[L] === want) && fits) {
            types[L] = want;
            u.gdnHeads += cost.gdn;
            u.attnHeads += cost.attn;
            break;
          }
        }
      }
      s++;
    }
    sublayer[op.id] = s;
    // (every writer of a dim precedes its readers in opOrder: the running maximum is final)
    for (const d of op.writes) producedAt[d] = Math.max(producedAt[d]!, s);
    const L = Math.floor(s / 2) + 1;
    if (res.maxLayers !== undefined && L > res.maxLayers) {
      throw new ChipcError('fit.layers', `${op.what} lands in layer ${L - 1}; the target allows ${res.maxLayers} layers`);
    }
  }
  const numLayers = Math.max(1, usage.length);
  ensure(numLayers - 1);
  // A layer with no mixer op gets an empty GDN mixer (all-zero weights: its output is exactly 0).
  const layerTypes = types.map((t) => t ?? 'linear_attention');
  return { sublayer, ...writeSublayers(lc, sublayer), numLayers, layerTypes, usage };
}

/** Each dim's first and last writer's sublayer under `sublayer` (−1 for embedded dims, −2 for dims nothing writes). */
export function writeSublayers(lc: LoweredCircuit, sublayer: Int32Array): { producedAt: Int32Array; bornAt: Int32Array } {
  const producedAt = new Int32Array(lc.dims.length).fill(-2);
  const bornAt = new Int32Array(lc.dims.length).fill(-2);
  for (const d of lc.embedDims) producedAt[d] = bornAt[d] = -1;
  for (const op of lc.ops) {
    const s = sublayer[op.id]!;
    for (const d of op.writes) {
      producedAt[d] = Math.max(producedAt[d]!, s);
      bornAt[d] = bornAt[d] === -2 ? s : Math.min(bornAt[d]!, s);
    }
  }
  return { producedAt, bornAt };
}
