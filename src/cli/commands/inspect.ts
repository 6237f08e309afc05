/**
 * `chipc inspect PATH` (a .safetensors file, a checkpoint directory or a .chip file): tensors,
 * dtypes, shapes, non-zeros, sha256, and a per-layer summary; with --slots, the residual
 * allocation of a compiled circuit from its manifest (src/inspect/allocation.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { openCheckpointOrChip, readCheckpointFile } from '../../chipfile/open.ts';
import { isChipFile } from '../../chipfile/read.ts';
import { layerIndexOf, tensorStats, type TensorStats } from '../../inspect/stats.ts';
import { fmtBytes, fmtInt, makeOut, table } from '../support/output.ts';
import type { Runner } from '../support/output.ts';
import { summaryOf } from '../support/command-table.ts';
import { allocationLines, allocationOf } from '../../inspect/allocation.ts';
import { MANIFEST_FILE } from '../../emit/manifest.ts';
import { ChipcError } from '../../util/errors.ts';

interface LayerSummary {
  layer: number;
  type: string | null;
  tensors: number;
  elements: number;
  nonZeros: number;
}

/** A checkpoint's file `name`: inside a .chip, in a checkpoint directory, or beside a .safetensors file; null when there is none. */
function checkpointFile(p: string, name: string): Uint8Array | null {
  if (isChipFile(p)) return readCheckpointFile(p, name);
  const file = path.join(fs.statSync(p).isDirectory() ? p : path.dirname(p), name);
  return fs.existsSync(file) ? fs.readFileSync(file) : null;
}

/** layer_types from the checkpoint's config.json, when there is one. */
function readLayerTypes(p: string): string[] | null {
  const bytes = checkpointFile(p, 'config.json');
  if (bytes === null) return null;
  try {
    const cfg = JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
    const text = (cfg['text_config'] as Record<string, unknown> | undefined) ?? cfg;
    const lt = text['layer_types'];
    return Array.isArray(lt) ? lt.map(String) : null;
  } catch {
    return null;
  }
}

/** The checkpoint's parsed chipc-manifest.json. */
function readManifest(p: string): unknown {
  const bytes = checkpointFile(p, MANIFEST_FILE);
  if (bytes === null) {
    throw new ChipcError('inspect.manifest', `${p}: no ${MANIFEST_FILE}: --slots reads the allocation of a checkpoint that chipc compiled (chipc compile, chipc cpu)`);
  }
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch (e) {
    throw new ChipcError('inspect.manifest', `${p}: ${MANIFEST_FILE} is not valid JSON: ${(e as Error).message}`, { cause: e });
  }
}

export function registerInspect(program: Command, run: Runner): void {
  program
    .command('inspect')
    .description(summaryOf('inspect'))
    .argument('<path>', 'a .safetensors file, a checkpoint directory or a .chip file')
    .option('--json', 'print one JSON document')
    .option('--summary', 'only the totals and the per-layer summary')
    .option('--slots', 'the residual allocation of a compiled circuit instead: every signal\'s dim and the sublayers it holds it over')
    .action((p: string, opts: { json?: boolean; summary?: boolean; slots?: boolean }) =>
      run(() => {
        const out = makeOut(Boolean(opts.json));
        if (opts.slots) {
          if (!fs.existsSync(p)) throw new ChipcError('checkpoint.not-found', `${p} does not exist`);
          const allocation = allocationOf(readManifest(p), `${p}: ${MANIFEST_FILE}`);
          out.emit({ path: p, allocation });
          for (const l of allocationLines(allocation)) out.line(l);
          return 0;
        }
        const store = openCheckpointOrChip(p);
        try {
          const stats: TensorStats[] = store.names.map((n) => tensorStats(store, n));
          const layerTypes = readLayerTypes(p);
          const layers = new Map<number, LayerSummary>();
          for (const s of stats) {
            const li = layerIndexOf(s.name);
            if (li === null) continue;
            let l = layers.get(li);
            if (!l) {
              l = { layer: li, type: layerTypes?.[li] ?? null, tensors: 0, elements: 0, nonZeros: 0 };
              layers.set(li, l);
            }
            l.tensors++;
            l.elements += s.numel;
            l.nonZeros += Math.max(0, s.nonZeros);
          }
          const perLayer = [...layers.values()].sort((a, b) => a.layer - b.layer);
          const totals = {
            tensors: stats.length,
            elements: stats.reduce((a, s) => a + s.numel, 0),
            nonZeros: stats.reduce((a, s) => a + Math.max(0, s.nonZeros), 0),
            bytes: store.names.reduce((a, n) => a + store.info(n).byteLength, 0),
          };
          out.emit({ path: p, metadata: store.metadata, totals, tensors: stats, layers: perLayer });
          out.line(`${p}: ${fmtInt(totals.tensors)} tensors, ${fmtInt(totals.elements)} elements, ` +
            `${fmtInt(totals.nonZeros)} non-zero, ${fmtBytes(totals.bytes)} of data`);
          if (!opts.summary) {
            out.line();
            out.line(table(['tensor', 'dtype', 'shape', 'non-zero', 'sha256'],
              stats.map((s) => [s.name, s.dtype, `[${s.shape.join(', ')}]`,
                s.nonZeros < 0 ? 'n/a' : s.nonZeros, s.sha256.slice(0, 16)])));
          }
          if (perLayer.length > 0) {
            out.line();
            out.line(table(['layer', 'type', 'tensors', 'elements', 'non-zero'],
              perLayer.map((l) => [l.layer, l.type ?? '?', l.tensors, l.elements, l.nonZeros])));
          }
          return 0;
        } finally {
          store.close();
        }
      })(),
    );
}
