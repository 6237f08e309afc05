/**
 * The residual allocation of a compiled circuit, readable as text (`chipc inspect PATH --slots`):
 * from a checkpoint's chipc-manifest.json, the frame's dims (anchors, constant ones) and every placed
 * signal with its dim and the sublayers over which it holds that dim — from the sublayer that
 * writes it to the one whose FFN clears it, or to the LM head ("out"). pack-slots.ts makes this
 * allocation (docs/passes.md, pass 4); `chipc compile --svg` draws the same intervals.
 */
import { ChipcError } from '../util/errors.ts';
import { groupDigits } from '../util/group-digits.ts';

/** One placed signal: residual dim `dim` over sublayers [from, to] (−1 the embedding, 2k layer k's mixer, 2k + 1 its FFN, 2L the LM head). */
export interface AllocationRow {
  dim: number;
  from: number;
  to: number;
  name: string;
  encoding: string;
  /** Whether an FFN unit clears the dim at `to` for a later signal. */
  cleared: boolean;
  /** A dim that several RAM read-outs add to: the sublayer after which its value is whole. */
  ready?: number;
}

export interface Allocation {
  circuit: string;
  target: string;
  hidden: number;
  layerTypes: string[];
  /** The frame's dims: anchors (their value) and constant ones. */
  frame: { dim: number; what: string }[];
  /** Residual slots the packing uses (the report's slotsUsed). */
  slots: number;
  /** Sorted by dim, then by `from`. */
  rows: AllocationRow[];
}

/** A sublayer's short name: `emb`, `3M` (layer 3's mixer), `3F` (its FFN), `out` (the LM head). */
export function sublayerName(s: number, layers: number): string {
  if (s < 0) return 'emb';
  if (s >= 2 * layers) return 'out';
  return `${Math.floor(s / 2)}${s % 2 === 0 ? 'M' : 'F'}`;
}

const isInt = (x: unknown): x is number => Number.isSafeInteger(x);

/**
 * Reads the allocation out of a parsed chipc-manifest.json. Refuses (ChipcError
 * `inspect.manifest`, naming `label` and the field) a manifest without the fields it needs.
 */
export function allocationOf(manifest: unknown, label: string): Allocation {
  const bad = (what: string): never => {
    throw new ChipcError('inspect.manifest', `${label}: ${what}`);
  };
  if (manifest === null || typeof manifest !== 'object' || Array.isArray(manifest)) bad('not a JSON object');
  const m = manifest as Record<string, unknown>;
  const layerTypes = m['layerTypes'];
  if (!Array.isArray(layerTypes) || !layerTypes.every((t) => typeof t === 'string')) bad('"layerTypes" must be an array of strings');
  const hidden = m['hidden'];
  if (!isInt(hidden) || hidden < 1) bad('"hidden" must be a positive integer');
  const frame: { dim: number; what: string }[] = [];
  const f = m['frame'] as Record<string, unknown> | undefined;
  if (f === undefined || f === null || typeof f !== 'object') bad('no "frame"');
  const anchors = f!['anchors'];
  const ones = f!['constOnes'];
  if (!Array.isArray(anchors) || !Array.isArray(ones)) bad('"frame" must list "anchors" and "constOnes"');
  for (const a of anchors as unknown[]) {
    const r = a as Record<string, unknown>;
    if (!isInt(r?.['dim']) || typeof r['value'] !== 'number') bad('a frame anchor must have an integer "dim" and a number "value"');
    frame.push({ dim: r['dim'] as number, what: `anchor (${r['value']})` });
  }
  for (const d of ones as unknown[]) {
    if (!isInt(d)) bad('"frame.constOnes" must hold integer dims');
    frame.push({ dim: d as number, what: 'constant 1' });
  }
  frame.sort((a, b) => a.dim - b.dim);
  const signals = m['signals'];
  if (!Array.isArray(signals)) bad('"signals" must be an array');
  const rows: AllocationRow[] = [];
  for (const [i, s] of (signals as unknown[]).entries()) {
    const r = s as Record<string, unknown>;
    if (r === null || typeof r !== 'object' || typeof r['name'] !== 'string' || !isInt(r['dim']) || !isInt(r['birth']) || !isInt(r['end'])) {
      bad(`signal ${i} must have a "name", and integer "dim", "birth" and "end"`);
    }
    const row: AllocationRow = {
      dim: r['dim'] as number, from: r['birth'] as number, to: r['end'] as number, name: r['name'] as string,
      encoding: typeof r['encoding'] === 'string' ? r['encoding'] : '?', cleared: r['cleared'] === true,
    };
    if (isInt(r['ready'])) row.ready = r['ready'];
    rows.push(row);
  }
  rows.sort((a, b) => a.dim - b.dim || a.from - b.from || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const report = m['report'] as Record<string, unknown> | undefined;
  const slots = isInt(report?.['slotsUsed']) ? report!['slotsUsed'] as number : new Set(rows.map((r) => r.dim)).size;
  return {
    circuit: typeof m['circuit'] === 'string' ? m['circuit'] : '?', target: typeof m['target'] === 'string' ? m['target'] : '?',
    hidden: hidden as number, layerTypes: layerTypes as string[], frame, slots, rows,
  };
}

/** The allocation as lines: a heading, the frame, then one line per signal (dim, sublayers, name, encoding). */
export function allocationLines(a: Allocation): string[] {
  const L = a.layerTypes.length;
  const kinds = a.layerTypes.map((t) => (t === 'full_attention' ? 'attention' : 'GDN'));
  const lines = [
    `${a.circuit} at ${a.target}: hidden ${a.hidden}, ${L} layer${L === 1 ? '' : 's'} (${kinds.join(', ')}), ${groupDigits(a.slots)} slots, ${groupDigits(a.rows.length)} placed signals`,
    `sublayers: emb (the embedding), kM (layer k's mixer), kF (its FFN), out (read by the LM head)`,
    `frame: ${a.frame.map((f) => `dim ${f.dim} ${f.what}`).join(', ')}`,
    '',
  ];
  const w = Math.max(3, String(Math.max(a.hidden - 1, 0)).length);
  lines.push(`${'dim'.padStart(w)}  ${'held'.padEnd(9)}  signal (encoding)`);
  for (const r of a.rows) {
    const held = `${sublayerName(r.from, L)}–${sublayerName(r.to, L)}`;
    const notes = [r.encoding, ...(r.cleared ? ['cleared'] : []), ...(r.ready !== undefined ? [`whole after ${sublayerName(r.ready, L)}`] : [])];
    lines.push(`${String(r.dim).padStart(w)}  ${held.padEnd(9)}  ${r.name} (${notes.join(', ')})`);
  }
  return lines;
}
