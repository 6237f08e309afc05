/**
 * Model targets as data. The built-in targets are config.json-like files in `targets/` at the
 * repository root (read at runtime, so a new shape needs no code); any config.json of either
 * family can be used as a target too. `describeTarget` summarises a config, with the parameter
 * count computed from the tensor list.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ChipcError } from '../util/errors.ts';
import type { Family, ModelConfig } from './config.ts';
import { isMoeLayer } from './config.ts';
import { parseHfConfig } from './hf-config.ts';
import { parameterCount } from './naming.ts';
import { PACKAGE_ROOT } from '../util/package-root.ts';
import { groupDigits } from '../util/group-digits.ts';

/** Directory holding the built-in target files (`<name>.json`). */
export const TARGETS_DIR = path.join(PACKAGE_ROOT, 'targets') + path.sep;

export interface ResolvedTarget {
  /** The built-in name, or the config file's path as given. */
  name: string;
  config: ModelConfig;
  /** `builtin:<name>` or the path of the config.json that was read. */
  source: string;
}

/** Names of the built-in targets, sorted. */
export function listTargets(): string[] {
  return fs.readdirSync(TARGETS_DIR)
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.slice(0, -'.json'.length))
    .sort();
}

function readConfigFile(file: string): ModelConfig {
  let json: unknown;
  try {
    json = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw new ChipcError('target.config', `cannot read config ${file}: ${(e as Error).message}`, { cause: e });
  }
  try {
    return parseHfConfig(json);
  } catch (e) {
    if (e instanceof ChipcError) throw new ChipcError(e.code, `${file}: ${e.message}`, { cause: e });
    throw e;
  }
}

/**
 * A built-in target name (see listTargets), a path to a config.json, or a directory containing
 * one. Anything else is a ChipcError listing the known names.
 */
export function resolveTarget(nameOrPath: string): ResolvedTarget {
  const builtins = listTargets();
  if (builtins.includes(nameOrPath)) {
    return {
      name: nameOrPath,
      config: readConfigFile(path.join(TARGETS_DIR, `${nameOrPath}.json`)),
      source: `builtin:${nameOrPath}`,
    };
  }
  if (fs.existsSync(nameOrPath)) {
    const file = fs.statSync(nameOrPath).isDirectory() ? path.join(nameOrPath, 'config.json') : nameOrPath;
    if (!fs.existsSync(file)) {
      throw new ChipcError('target.unknown', `target directory ${nameOrPath} has no config.json`);
    }
    return { name: nameOrPath, config: readConfigFile(file), source: file };
  }
  throw new ChipcError('target.unknown',
    `unknown target "${nameOrPath}": not a built-in target (${builtins.join(', ')}) and no such config.json file or directory`);
}

export interface TargetSummary {
  family: Family;
  hiddenSize: number;
  numLayers: number;
  linearAttentionLayers: number;
  fullAttentionLayers: number;
  attention: { queryHeads: number; keyValueHeads: number; headDim: number };
  gdn: { keyHeads: number; valueHeads: number; keyHeadDim: number; valueHeadDim: number; convKernel: number };
  /** e.g. "dense 9216" or "MoE 512 experts × 512, top-10, shared 512 (48 MoE layers, 0 dense)". */
  ffn: string;
  vocabSize: number;
  tiedEmbeddings: boolean;
  /** Σ of tensor sizes over the text-only tensor list (lm_head counted only when untied). */
  parameters: number;
}

/** Summary of a target config (family, sizes, layer mix, FFN kind, parameter count). */
export function describeTarget(cfg: ModelConfig): TargetSummary {
  const full = cfg.layerTypes.filter((t) => t === 'full_attention').length;
  let ffn = `dense ${cfg.intermediateSize}`;
  if (cfg.moe !== null) {
    const m = cfg.moe;
    let moeLayers = 0;
    for (let i = 0; i < cfg.numLayers; i++) if (isMoeLayer(cfg, i)) moeLayers++;
    ffn = `MoE ${m.numExperts} experts × ${m.moeIntermediateSize}, top-${m.numExpertsPerTok}, shared ${m.sharedExpertIntermediateSize}`
      + ` (${moeLayers} MoE layers, ${cfg.numLayers - moeLayers} dense ${cfg.intermediateSize})`;
  }
  return {
    family: cfg.family,
    hiddenSize: cfg.hiddenSize,
    numLayers: cfg.numLayers,
    linearAttentionLayers: cfg.numLayers - full,
    fullAttentionLayers: full,
    attention: { queryHeads: cfg.numAttentionHeads, keyValueHeads: cfg.numKeyValueHeads, headDim: cfg.headDim },
    gdn: {
      keyHeads: cfg.linearNumKeyHeads, valueHeads: cfg.linearNumValueHeads,
      keyHeadDim: cfg.linearKeyHeadDim, valueHeadDim: cfg.linearValueHeadDim,
      convKernel: cfg.linearConvKernelDim,
    },
    ffn,
    vocabSize: cfg.vocabSize,
    tiedEmbeddings: cfg.tieWordEmbeddings,
    parameters: parameterCount(cfg),
  };
}

/** One-paragraph human-readable form of describeTarget. */
export function formatTargetSummary(s: TargetSummary): string {
  return [
    `family ${s.family}, hidden ${s.hiddenSize}, ${s.numLayers} layers (${s.linearAttentionLayers} GDN, ${s.fullAttentionLayers} full attention)`,
    `attention ${s.attention.queryHeads}/${s.attention.keyValueHeads} heads × ${s.attention.headDim}`,
    `GDN ${s.gdn.keyHeads}/${s.gdn.valueHeads} heads, dk ${s.gdn.keyHeadDim}, dv ${s.gdn.valueHeadDim}, conv ${s.gdn.convKernel}`,
    `FFN ${s.ffn}`,
    `vocab ${s.vocabSize}${s.tiedEmbeddings ? ' (tied)' : ''}, ${groupDigits(s.parameters)} parameters`,
  ].join('; ');
}
