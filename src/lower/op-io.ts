/** The virtual dims a set of units or heads reads (every dim in any of their input forms). */
import type { AttnKvHeadSpec, FfnUnit, Form, GdnKeyHeadSpec, VDim } from './forms.ts';

function collect(forms: Iterable<Form>, into: Set<VDim>): void {
  for (const f of forms) for (const t of f.terms) into.add(t.dim);
}

export function opReads(units: FfnUnit[]): VDim[] {
  const s = new Set<VDim>();
  for (const u of units) collect([u.gate, u.up], s);
  return [...s].sort((a, b) => a - b);
}

export function gdnReads(heads: GdnKeyHeadSpec[]): VDim[] {
  const s = new Set<VDim>();
  for (const h of heads) {
    collect(h.q, s);
    collect(h.k, s);
    for (const v of h.values) if (v) collect([...v.v, ...v.z, v.b], s);
  }
  return [...s].sort((a, b) => a - b);
}

export function attnReads(heads: AttnKvHeadSpec[]): VDim[] {
  const s = new Set<VDim>();
  for (const h of heads) {
    collect([...h.k, ...h.v], s);
    for (const q of h.queries) if (q) collect([...q.q, ...q.gate], s);
  }
  return [...s].sort((a, b) => a - b);
}
