/**
 * The manifest written beside an emitted checkpoint (`chipc-manifest.json`): everything a tool
 * needs to decode a residual stream of the compiled model — the frame (anchor and constant dims),
 * every placed signal (residual dim, encoding, the sublayers where it is present), the layer
 * types, and the circuit's token alphabet (which fields each emitted token stands for).
 * Deterministic JSON (fixed key order, no timestamps).
 *
 * Version 2 writes the `emit` section (a chip's ≈ 248,000 emit rows: 11.9 MB of its 12.3 MB)
 * as the last top-level key, so that a reader that needs everything else stops reading there
 * (readManifestHead); version 1 wrote it before `report` (and a chip's `rv32`). Readers take both.
 */
import type { CompileResult } from '../compile.ts';
import { ChipcError } from '../util/errors.ts';
import type { GdnRamHeadRole, GdnRamLayout } from '../lower/ram-lowering.ts';

export const MANIFEST_FILE = 'chipc-manifest.json';
/** The manifest version written (module comment). */
export const MANIFEST_VERSION = 2;

export interface Manifest {
  format: 'chipc-manifest';
  /** 2 (written): `emit` is the last top-level key; 1: anywhere. */
  version: 1 | 2;
  circuit: string;
  source: string;
  target: string;
  hidden: number;
  layerTypes: string[];
  frame: { anchors: { dim: number; value: number }[]; constOnes: number[]; firstSlot: number; normScale: number };
  vocab: { circuit: number; bos: number | null };
  signals: {
    name: string;
    node: number;
    encoding: string;
    index: number;
    base?: number;
    /** residue: the dim holds [(value − base) mod modulus = index]. */
    modulus?: number;
    dim: number;
    birth: number;
    end: number;
    /** Where later than birth: the sublayer after which the value is whole (several RAM read-outs add to the dim). */
    ready?: number;
    cleared: boolean;
  }[];
  /**
   * Every RAM: its layer and model key heads (state files and loaders address them); since
   * 2026-12-01 also its declaration (id, rows, field ranges), the lowering's layout and the role of
   * each key head — what writing and reading its rows straight in the GDN state needs, so a saved
   * chip can be loaded with a state (src/chip/loaded.ts). Absent in older manifests.
   */
  rams: ManifestRam[];
  /** emitted[i] = token emitted for the i-th tuple of the emit fields (row-major over their ranges). */
  emit: { fields: string[]; tokens: number[]; rows?: readonly { readonly token: number; readonly values: readonly (number | null)[] }[] } | null;
  report: ReturnType<typeof compileReport>;
}

export interface ManifestRam {
  name: string;
  layer: number;
  keyHeads: number[];
  ram?: number;
  rows?: number;
  fields?: { lo: number; hi: number }[];
  layout?: GdnRamLayout;
  roles?: GdnRamHeadRole[];
}

export function compileReport(res: CompileResult) {
  return {
    layers: res.layers,
    dims: res.frame.hidden,
    frameDims: res.frame.firstSlot,
    liveMax: res.packing.liveMax,
    slotsUsed: res.packing.slotsUsed,
    virtualDims: res.lowered.dims.length,
    ops: res.lowered.ops.length,
    heads: res.layers.reduce((a, l) => a + l.heads, 0),
    units: res.layers.reduce((a, l) => a + l.units, 0),
    nonZeros: res.layers.reduce((a, l) => a + l.nonZeros, 0) + embedNonZeros(res),
    embeddingNonZeros: embedNonZeros(res),
    orderInvariance: {
      matmuls: res.invariance.matmuls,
      invariantMatmuls: res.invariance.invariantMatmuls,
      rows: res.invariance.rows,
      invariantRows: res.invariance.invariantRows,
      notInvariant: res.invariance.notInvariant,
    },
  };
}

function embedNonZeros(res: CompileResult): number {
  const n = (m: { csr?: { values: Float32Array } }) => m.csr?.values.length ?? 0;
  return n(res.weights.embedTokens) + n(res.weights.lmHead);
}

/**
 * The manifest file's text: one line per top-level key and per member of a top-level object,
 * one line per element of an array of records (the signals, the emit rows, the RAMs) and
 * everything below that compact. A chip's manifest holds ≈ 250,000 emit rows: indenting every
 * value (`JSON.stringify(m, null, 2)`) made it 32 MB, two thirds of it indentation; this layout is
 * ≈ 12 MB and still reads and greps line by line. The top-level `emit` key comes last (version
 * 2); the others keep the object's order. Deterministic: `JSON.stringify`'s key order and number
 * formatting.
 */
export function manifestJson(m: object): string {
  const lines: string[] = [];
  const write = (v: unknown, depth: number, indent: string, prefix: string, last: boolean): void => {
    const comma = last ? '' : ',';
    const records = Array.isArray(v) && v.length > 0 && v.every((e) => e !== null && typeof e === 'object');
    const expand = v !== null && typeof v === 'object' && (depth === 0 || (depth === 1 && !Array.isArray(v)) || records);
    if (!expand) { lines.push(`${indent}${prefix}${JSON.stringify(v)}${comma}`); return; }
    const inner = `${indent}  `;
    if (Array.isArray(v)) {
      lines.push(`${indent}${prefix}[`);
      v.forEach((e, i) => lines.push(`${inner}${JSON.stringify(e)}${i === v.length - 1 ? '' : ','}`));
      lines.push(`${indent}]${comma}`);
      return;
    }
    const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined);
    // version 2: the top level's `emit` last (module comment)
    if (depth === 0) entries.sort(([a], [b]) => Number(a === 'emit') - Number(b === 'emit'));
    lines.push(`${indent}${prefix}{`);
    entries.forEach(([k, x], i) => write(x, depth + 1, inner, `${JSON.stringify(k)}: `, i === entries.length - 1));
    lines.push(`${indent}}${comma}`);
  };
  write(m, 0, '', '', true);
  return lines.join('\n') + '\n';
}

/**
 * Parses manifest text as JSON, leaving the value of its top-level `emit` key (≈ 12 MB of the chip's
 * 12.3 MB manifest: the token alphabet's emit rows, which running a chip does not read) unparsed
 * until first read: `emit` is then a getter that parses it once (ChipcError `run.model` naming
 * `label` if it is not valid JSON). The section is found by the layout manifestJson writes (every
 * top-level key, and only those, at the start of a line indented by two spaces); text in another
 * layout, or in which the rest does not parse without the section, is parsed whole.
 */
export function parseManifestDeferringEmit(text: string, label: string): unknown {
  const key = '\n  "emit": ';
  const at = text.indexOf(key);
  if (at < 0 || text.indexOf(key, at + 1) >= 0) return JSON.parse(text);
  const from = at + key.length;
  let to = text.indexOf('\n  "', from); // the next top-level key
  let head: string;
  if (to >= 0) {
    head = text.slice(0, at) + text.slice(to);
  } else {
    to = text.lastIndexOf('\n}'); // emit is the last key: drop the comma before it too
    if (to < from) return JSON.parse(text);
    const before = text.slice(0, at);
    if (!before.endsWith(',')) return JSON.parse(text);
    head = before.slice(0, -1) + text.slice(to);
  }
  const section = text.slice(from, to).replace(/,\s*$/, '');
  let obj: unknown;
  try {
    obj = JSON.parse(head);
  } catch {
    return JSON.parse(text);
  }
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj) || 'emit' in obj) return JSON.parse(text);
  return deferEmit(obj, label, () => JSON.parse(section));
}

/**
 * Gives `obj` an enumerable `emit` getter that calls `parse` on first read and keeps its value
 * (ChipcError `run.model` naming `label` when it throws, which happens again on the next read).
 */
function deferEmit(obj: object, label: string, parse: () => unknown): object {
  let parsed: { value: unknown } | null = null;
  Object.defineProperty(obj, 'emit', {
    enumerable: true,
    configurable: true,
    get(): unknown {
      if (parsed === null) {
        try {
          parsed = { value: parse() };
        } catch (e) {
          if (e instanceof ChipcError) throw e;
          throw new ChipcError('run.model', `${label}: its "emit" section is not valid JSON: ${(e as Error).message}`, { cause: e });
        }
      }
      return parsed.value;
    },
  });
  return obj;
}

/**
 * A manifest whose text comes in pieces (a `.chip` file's decoded frames), read no further than
 * needed: a version-2 manifest (`emit` last) only up to its `emit` key, the head parsed and `emit`
 * a getter that reads and parses the whole text (`whole()`) when first read; any other text (version
 * 1, another layout, no `emit` key) whole, through parseManifestDeferringEmit. A chip's head is
 * ≈ 0.45 MB of its 12.3 MB. ChipcError `run.model` naming `label` when the emit section, once read,
 * is not valid JSON.
 */
export function readManifestHead(pieces: Iterable<Uint8Array>, whole: () => Uint8Array, label: string): unknown {
  const key = '\n  "emit": ';
  const decoder = new TextDecoder();
  let text = '';
  let looked = false; // the key was found and the head was not version 2's: read on to the end
  for (const piece of pieces) {
    const from = Math.max(0, text.length - key.length);
    text += decoder.decode(piece, { stream: true });
    if (looked) continue;
    const at = text.indexOf(key, from);
    if (at < 0) continue;
    looked = true;
    const before = text.slice(0, at);
    if (!before.endsWith(',')) continue;
    let head: unknown;
    try {
      head = JSON.parse(`${before.slice(0, -1)}\n}`);
    } catch {
      continue;
    }
    if (head === null || typeof head !== 'object' || Array.isArray(head) || (head as { version?: unknown }).version !== 2 || 'emit' in head) continue;
    return deferEmit(head, label, () => (JSON.parse(new TextDecoder().decode(whole())) as { emit?: unknown }).emit);
  }
  text += decoder.decode();
  return parseManifestDeferringEmit(text, label);
}

export function buildManifest(res: CompileResult, targetName: string): Manifest {
  const f = res.frame;
  return {
    format: 'chipc-manifest',
    version: MANIFEST_VERSION,
    circuit: res.ir.name,
    source: res.ir.source,
    target: targetName,
    hidden: f.hidden,
    layerTypes: res.weights.config.layerTypes,
    frame: {
      anchors: f.anchors.map((a) => ({ dim: a.dim, value: a.n * 2 ** f.m })),
      constOnes: f.constOnes,
      firstSlot: f.firstSlot,
      normScale: f.normScale,
    },
    vocab: { circuit: res.ir.vocab, bos: res.ir.bos },
    signals: res.signals.map((s) => ({
      name: s.name, node: s.node, encoding: s.encoding, index: s.index,
      ...(s.base !== undefined ? { base: s.base } : {}),
      ...(s.modulus !== undefined ? { modulus: s.modulus } : {}),
      dim: res.slotDim(s.slot), birth: s.birth, end: s.end, ...(s.ready !== undefined ? { ready: s.ready } : {}), cleared: s.cleared,
    })),
    rams: res.rams.map((r) => {
      const decl = res.ir.rams[r.ram]!;
      return {
        name: r.name, layer: r.layer, keyHeads: r.keyHeads,
        ram: r.ram, rows: decl.rows, fields: decl.fields.map((f) => ({ lo: f.lo, hi: f.hi })),
        layout: r.lowering.layout, roles: r.lowering.roles,
      };
    }),
    emit: res.ir.emit ? {
      fields: res.ir.emit.fields.map((id) => res.ir.nodes[id]!.name),
      tokens: res.ir.emit.tokens,
      ...(res.ir.emit.rows ? { rows: res.ir.emit.rows } : {}),
    } : null,
    report: compileReport(res),
  };
}
