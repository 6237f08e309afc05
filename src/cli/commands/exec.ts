/**
 * `chipc exec PATH --tokens 1,2,3`: run a checkpoint (directory, .safetensors or .chip) in the reference executor on given token
 * ids; prints the top next tokens of the last position (and greedy continuations with
 * `--generate N`); `--all-positions` adds every position's argmax and logits hash.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { isChipFile, openChipFile } from '../../chipfile/read.ts';
import { openCheckpointOrChip } from '../../chipfile/open.ts';
import { parseHfConfig } from '../../model/hf-config.ts';
import { resolveTarget } from '../../model/targets.ts';
import { loadModelWeights } from '../../model/load-weights.ts';
import type { ModelConfig } from '../../model/config.ts';
import { Executor, argmax } from '../../exec/executor.ts';
import type { ExecOptions, OrderMode } from '../../exec/types.ts';
import { ChipcError } from '../../util/errors.ts';
import { integerOption, profileOption } from '../support/options.ts';
import { prepareOutput } from '../support/files.ts';
import { applyStateFile, captureStateFile, loadStateFile, writeStateFile } from '../../load/state-file.ts';
import { stateHostOf } from '../../chip/loaded.ts';
import { fmtInt, makeOut, table } from '../support/output.ts';
import type { Runner } from '../support/output.ts';
import { summaryOf } from '../support/command-table.ts';

export function parseTokenList(s: string): number[] {
  const parts = s.split(',').map((t) => t.trim()).filter((t) => t.length > 0);
  if (parts.length === 0) throw new ChipcError('cli.tokens', '--tokens needs at least one token id');
  return parts.map((t) => integerOption(t, '--tokens', 'cli.tokens', { min: 0 }));
}

export function parseOrder(s: string): OrderMode {
  if (s === 'sequential') return { kind: 'sequential' };
  if (s === 'fma') return { kind: 'fma' };
  const m = /^shuffled(?::(\d+))?$/.exec(s);
  if (m) return { kind: 'shuffled', seed: Number(m[1] ?? 1) };
  throw new ChipcError('cli.order', `--order must be sequential, fma or shuffled[:SEED], not "${s}"`);
}

/** `--silu`: the SiLU formula (ExecOptions.siluForm): div (ATen's x/(1+exp(−x)), the default) or mul. */
export function siluOption(s: string): 'div' | 'mul' {
  if (s !== 'div' && s !== 'mul') throw new ChipcError('cli.silu', `--silu must be div or mul, not "${s}"`);
  return s;
}

/** The model config for a checkpoint: its own config.json (a .chip's stored one), else the --target given. */
export function configFor(p: string, target: string | undefined): ModelConfig {
  if (target !== undefined) return resolveTarget(target).config;
  if (isChipFile(p)) {
    const chip = openChipFile(p);
    let text: string;
    try {
      if (!chip.hasFile('config.json')) throw new ChipcError('cli.config', `${p} holds no config.json; pass --target NAME|config.json`);
      text = new TextDecoder().decode(chip.readFile('config.json'));
    } finally {
      chip.close();
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (e) {
      throw new ChipcError('cli.config', `config.json stored in ${p} is not valid JSON: ${(e as Error).message}`);
    }
    return namingFile(`config.json stored in ${p}`, () => parseHfConfig(json));
  }
  const dir = fs.existsSync(p) && fs.statSync(p).isDirectory() ? p : path.dirname(p);
  const cfgPath = path.join(dir, 'config.json');
  if (!fs.existsSync(cfgPath)) {
    throw new ChipcError('cli.config', `no config.json beside ${p}; pass --target NAME|config.json`);
  }
  let json: unknown;
  try {
    json = JSON.parse(fs.readFileSync(cfgPath, 'utf8'));
  } catch (e) {
    throw new ChipcError('cli.config', `${cfgPath} is not valid JSON: ${(e as Error).message}`);
  }
  return namingFile(cfgPath, () => parseHfConfig(json));
}

/** body(), its ChipcError's message prefixed with `label` (what the error is about). */
function namingFile<T>(label: string, body: () => T): T {
  try {
    return body();
  } catch (e) {
    if (e instanceof ChipcError) throw new ChipcError(e.code, `${label}: ${e.message}`, { cause: e });
    throw e;
  }
}

interface ExecCliOptions {
  state?: string;
  saveState?: string;
  overwrite?: boolean;
  tokens: string;
  generate?: string;
  target?: string;
  profile: string;
  path: string;
  order: string;
  silu: string;
  top: string;
  allPositions?: boolean;
  json?: boolean;
}

export function registerExec(program: Command, run: Runner): void {
  program
    .command('exec')
    .description(summaryOf('exec'))
    .argument('<path>', 'checkpoint directory (with config.json), .chip file or .safetensors file')
    .requiredOption('-t, --tokens <ids>', 'comma-separated prompt token ids, e.g. 1,2,3')
    .option('-g, --generate <n>', 'greedily generate n tokens after the prompt')
    .option('--target <name|config.json>', 'model config when PATH has no config.json')
    .option('--profile <p>', 'numeric profile: f32 or bf16', 'f32')
    .option('--path <p>', 'matmul path: dense or sparse', 'sparse')
    .option('--order <o>', 'reduction order: sequential, fma, shuffled[:SEED]', 'sequential')
    .option('--silu <form>', 'SiLU formula: div = x/(1+exp(-x)) (torch\'s kernel) or mul = x·sigmoid(x)', 'div')
    .option('--top <k>', 'how many top next tokens to print', '5')
    .option('--all-positions', 'print every position\'s argmax and the sha256 of its float32 logits (little-endian), prompt and generated, to compare with another engine position by position')
    .option('--state <file>', 'load this .chip-state file (the rows of every RAM, docs/state-files.md) into the GDN state before the prompt')
    .option('--save-state <out>', 'after the prompt and generation, write the RAMs\' rows as a .chip-state file')
    .option('--overwrite', 'with --save-state: replace an existing file')
    .option('--json', 'print one JSON document')
    .action((p: string, o: ExecCliOptions) =>
      run(() => {
        const out = makeOut(Boolean(o.json));
        const profile = profileOption(o.profile);
        if (o.path !== 'dense' && o.path !== 'sparse') {
          throw new ChipcError('cli.path', `--path must be dense or sparse, not "${o.path}"`);
        }
        const top = integerOption(o.top, '--top', 'cli.top', { min: 1 });
        const siluForm = siluOption(o.silu);
        const gen = o.generate === undefined ? 0 : integerOption(o.generate, '--generate', 'cli.generate', { min: 0 });
        const tokens = parseTokenList(o.tokens);
        const cfg = configFor(p, o.target);
        for (const t of tokens) {
          if (t >= cfg.vocabSize) throw new ChipcError('cli.tokens', `token id ${t} is outside the vocabulary (size ${cfg.vocabSize})`);
        }
        if (o.saveState !== undefined) prepareOutput(o.saveState, { option: '--save-state', inputs: [p, o.state], overwrite: o.overwrite === true });
        const stateIn = o.state === undefined ? null : loadStateFile(o.state);
        const store = openCheckpointOrChip(p);
        const t0 = performance.now();
        let weights;
        try {
          weights = namingFile(p, () => loadModelWeights(store, cfg, { mode: o.path === 'sparse' ? 'sparse' : 'dense' }));
        } finally {
          store.close();
        }
        const loadMs = performance.now() - t0;
        const opts: ExecOptions = { profile, path: o.path, order: parseOrder(o.order), siluForm };
        const ex = new Executor(weights, opts);
        // The RAMs' placements come from the checkpoint's manifest (state files address RAMs by name).
        const host = stateIn !== null || o.saveState !== undefined ? stateHostOf(p, weights) : null;
        if (stateIn !== null) applyStateFile(ex, host!, stateIn);
        const t1 = performance.now();
        const all = o.allPositions === true;
        const prefillLogits = ex.prefill(tokens, { allLogits: all });
        const positions: PositionRecord[] = [];
        if (all) prefillLogits.forEach((l, i) => positions.push(positionRecord(i, tokens[i]!, l)));
        const logits = prefillLogits[prefillLogits.length - 1]!;
        const topK = topTokens(logits, top);
        const generated: number[] = [];
        if (gen > 0) {
          let next = argmax(logits);
          generated.push(next);
          for (let i = 1; i < gen; i++) {
            const l = ex.decode(next);
            if (all) positions.push(positionRecord(tokens.length + i - 1, next, l));
            next = argmax(l);
            generated.push(next);
          }
        }
        const runMs = performance.now() - t1;
        if (o.saveState !== undefined) writeStateFile(o.saveState, captureStateFile(ex, host!));
        out.emit({ tokens, top: topK, generated, ...(all ? { positions } : {}), loadMs, runMs, profile: o.profile, path: o.path, order: o.order, silu: siluForm });
        if (all) {
          out.line(table(['position', 'token', 'argmax', 'max logit bits', 'sha256 of the float32 logits'],
            positions.map((r) => [r.position, r.token, r.argmax, r.maxBits, r.sha256])));
        }
        out.line(`prompt ${tokens.length} token(s) → next-token logits (top ${top}):`);
        out.line(table(['token', 'logit', 'bits'], topK.map((t) => [t.token, String(t.logit), t.bits])));
        if (gen > 0) out.line(`generated: ${generated.join(',')}`);
        out.line(`loaded in ${fmtInt(Math.round(loadMs))} ms, ran ${tokens.length + Math.max(0, gen - 1)} position(s) in ${fmtInt(Math.round(runMs))} ms`);
        return 0;
      })(),
    );
}

/** One position of `--all-positions`: its input token, its argmax and the hash of its logits. */
export interface PositionRecord {
  position: number;
  token: number;
  argmax: number;
  /** float32 bit pattern of the largest logit, hex. */
  maxBits: string;
  /** sha256 of the position's logits as little-endian float32 (numpy: `logits.astype('<f4').tobytes()`). */
  sha256: string;
}

export function positionRecord(position: number, token: number, logits: Float32Array): PositionRecord {
  const best = argmax(logits);
  const bytes = new Uint8Array(logits.length * 4);
  const view = new DataView(bytes.buffer);
  // (bit patterns, not values: a NaN's payload survives)
  const bits = new Uint32Array(logits.buffer, logits.byteOffset, logits.length);
  for (let i = 0; i < logits.length; i++) view.setUint32(4 * i, bits[i]!, true);
  return {
    position, token, argmax: best,
    maxBits: '0x' + bits[best]!.toString(16).padStart(8, '0'),
    sha256: crypto.createHash('sha256').update(bytes).digest('hex'),
  };
}

export interface TopToken {
  token: number;
  logit: number;
  /** float32 bit pattern, hex. */
  bits: string;
}

/** The k largest logits, ties broken by the lower token id. */
export function topTokens(logits: Float32Array, k: number): TopToken[] {
  const idx = Array.from({ length: logits.length }, (_, i) => i);
  idx.sort((a, b) => logits[b]! - logits[a]! || a - b);
  const u = new Uint32Array(logits.buffer, logits.byteOffset, logits.length);
  return idx.slice(0, k).map((i) => ({ token: i, logit: logits[i]!, bits: '0x' + u[i]!.toString(16).padStart(8, '0') }));
}
