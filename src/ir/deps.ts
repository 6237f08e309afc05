/**
 * Data dependencies inside one position, and a deterministic topological order over them.
 * A RAM read depends on the RAM's write port (read sees write); a lookup result depends on the
 * lookup's key, value, query, stamp and publish signals (the current position publishes first).
 */
import type { CircuitIR, IrNode, NodeId } from './types.ts';

export function nodeDeps(ir: CircuitIR, n: IrNode): NodeId[] {
  switch (n.op) {
    case 'token_field':
    case 'const':
      return [];
    case 'linear':
      return n.terms.map((t) => t.node);
    case 'table':
      return n.inputs;
    case 'compare':
      return [n.a, n.b];
    case 'select':
      return [n.cond, n.then, n.else];
    case 'logic':
      return n.args;
    case 'wire':
      return n.source === null ? [] : [n.source];
    case 'prev':
      // Not a data dependency within a position, but the compiled delay needs the source before
      // the layer that holds it, so a loop through a delay is reported as a cycle.
      return [n.source];
    case 'ram_read': {
      const ram = ir.rams[n.ram]!;
      const port = ram.reads[n.port]!;
      const deps = [port.addr];
      if (port.enable !== null) deps.push(port.enable);
      if (ram.write) {
        deps.push(ram.write.addr, ...ram.write.values);
        if (ram.write.enable !== null) deps.push(ram.write.enable);
      }
      return deps;
    }
    case 'lookup_value': {
      const lk = ir.lookups[n.lookup]!;
      const deps = [...lk.key, ...lk.value, ...lk.query];
      if (lk.stamp !== null) deps.push(lk.stamp);
      if (lk.publish !== null) deps.push(lk.publish);
      return deps;
    }
  }
}

/**
 * Nodes in dependency order (Kahn's algorithm, smallest id first among ready nodes, so the order
 * is deterministic). Returns the order and, when there is a cycle, the ids left on it.
 */
export function topoOrder(ir: CircuitIR): { order: NodeId[]; cyclic: NodeId[] } {
  const n = ir.nodes.length;
  const indeg = new Int32Array(n);
  const users: NodeId[][] = Array.from({ length: n }, () => []);
  for (const node of ir.nodes) {
    for (const d of new Set(nodeDeps(ir, node))) {
      indeg[node.id]++;
      users[d]!.push(node.id);
    }
  }
  const ready: NodeId[] = [];
  for (let i = 0; i < n; i++) if (indeg[i] === 0) ready.push(i);
  const order: NodeId[] = [];
  const heap = new MinHeap(ready);
  while (heap.size > 0) {
    const id = heap.pop();
    order.push(id);
    for (const u of users[id]!) {
      if (--indeg[u] === 0) heap.push(u);
    }
  }
  const cyclic: NodeId[] = [];
  if (order.length < n) for (let i = 0; i < n; i++) if (indeg[i]! > 0) cyclic.push(i);
  return { order, cyclic };
}

class MinHeap {
  private a: number[] = [];
  constructor(init: number[]) {
    for (const x of init) this.push(x);
  }
  get size(): number {
    return this.a.length;
  }
  push(x: number): void {
    const a = this.a;
    a.push(x);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (a[p]! <= x) break;
      a[i] = a[p]!;
      i = p;
    }
    a[i] = x;
  }
  pop(): number {
    const a = this.a;
    const top = a[0]!;
    const last = a.pop()!;
    if (a.length > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        let mv = last;
        if (l < a.length && a[l]! < mv) {
          m = l;
          mv = a[l]!;
        }
        if (r < a.length && a[r]! < mv) m = r;
        if (m === i) break;
        a[i] = a[m]!;
        i = m;
      }
      a[i] = last;
    }
    return top;
  }
}
