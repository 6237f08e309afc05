/**
 * Executor throughput: decode tokens/s on the built-in `tiny` target (dense and sparse paths) and
 * on a synthetic model at qwen3.5-4b widths whose matrices are 99.95 % zero, built directly as CSR
 * (never dense), run on the sparse path. Prints a table and one JSON line.
 *   npx tsx bench/exec.ts [--tokens N] [--big-tokens N]
 * With --compiled: compiles every circuit of circuits/examples for the tiny target and prints
 * the sparse-path decode tokens/s of each compiled model in the f32 and bf16 profiles (sequential
 * order; greedy feedback of the emitted token, as bench/compile.ts does).
 *   npx tsx bench/exec.ts --compiled [--tokens N]
 */
import fs from 'node:fs';
import path from 'node:path';
import { compileCircuit } from '../src/compile.ts';
import { loadCircuitFile } from '../src/dsl/load.ts';
import { Executor, argmax } from '../src/exec/executor.ts';
import type { LayerType, ModelConfig } from '../src/model/config.ts';
import { randomModelWeights } from '../src/model/random-weights.ts';
import { resolveTarget } from '../src/model/targets.ts';
import type { CsrMatrix, LayerWeights, Matrix, ModelWeights } from '../src/model/weights.ts';
import { Prng } from '../src/model/random-weights.ts';

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}

/** Floats in [0, 1) from the project's seeded PRNG. */
function rng(seed: number): () => number {
  const p = new Prng(seed);
  return () => p.nextU32() / 4294967296;
}

/** A rows×cols CSR matrix with ≈ density·rows·cols random non-zeros in [−1, 1) (bf16-exact). */
function randomCsr(rows: number, cols: number, density: number, r: () => number): Matrix {
  const target = Math.max(1, Math.round(rows * cols * density));
  const perRow = new Uint32Array(rows);
  for (let i = 0; i < target; i++) perRow[Math.floor(r() * rows)]++;
  const rowPtr = new Uint32Array(rows + 1);
  for (let i = 0; i < rows; i++) rowPtr[i + 1] = rowPtr[i] + Math.min(perRow[i], cols);
  const nnz = rowPtr[rows];
  const colIdx = new Uint32Array(nnz);
  const values = new Float32Array(nnz);
  for (let i = 0; i < rows; i++) {
    const n = rowPtr[i + 1] - rowPtr[i];
    const cs = new Set<number>();
    while (cs.size < n) cs.add(Math.floor(r() * cols));
    const sorted = [...cs].sort((a, b) => a - b);
    for (let k = 0; k < n; k++) {
      colIdx[rowPtr[i] + k] = sorted[k];
      values[rowPtr[i] + k] = Math.fround((Math.floor(r() * 256) - 128) / 128) || 0.5;
    }
  }
  const csr: CsrMatrix = { rowPtr, colIdx, values };
  return { rows, cols, csr };
}

/** qwen3.5-4b widths (targets/qwen3.5-4b.json when present; these are the numbers of docs/targets.md "Built-in targets"). */
function bigConfig(): ModelConfig {
  try {
    return resolveTarget('qwen3.5-4b').config;
  } catch {
    const layerTypes = Array.from({ length: 32 }, (_, i): LayerType => ((i + 1) % 4 === 0 ? 'full_attention' : 'linear_attention'));
    return {
      family: 'qwen3_5_text', vocabSize: 248320, hiddenSize: 2560, numLayers: 32, layerTypes, intermediateSize: 9216,
      numAttentionHeads: 16, numKeyValueHeads: 4, headDim: 256, partialRotaryFactor: 0.25, ropeTheta: 1e7,
      linearNumKeyHeads: 16, linearNumValueHeads: 32, linearKeyHeadDim: 128, linearValueHeadDim: 128,
      linearConvKernelDim: 4, rmsNormEps: 1e-6, tieWordEmbeddings: true, moe: null, bosTokenId: null,
      eosTokenId: null, maxPositionEmbeddings: 262144, dtype: 'bfloat16',
    };
  }
}

function syntheticSparse(cfg: ModelConfig, density: number): ModelWeights {
  const r = rng(12345);
  const H = cfg.hiddenSize;
  const layers: LayerWeights[] = [];
  const hk = cfg.linearNumKeyHeads, hv = cfg.linearNumValueHeads, dk = cfg.linearKeyHeadDim, dv = cfg.linearValueHeadDim;
  const convDim = 2 * hk * dk + hv * dv;
  for (let i = 0; i < cfg.numLayers; i++) {
    const mixer = cfg.layerTypes[i] === 'linear_attention'
      ? {
        kind: 'linear_attention' as const,
        inProjQkv: randomCsr(convDim, H, density, r),
        inProjZ: randomCsr(hv * dv, H, density, r),
        inProjB: randomCsr(hv, H, density, r),
        inProjA: randomCsr(hv, H, density, r),
        conv1d: new Float32Array(convDim * cfg.linearConvKernelDim).map((_, j) => ((j % cfg.linearConvKernelDim) === cfg.linearConvKernelDim - 1 ? 1 : 0)),
        aLog: new Float32Array(hv),
        dtBias: new Float32Array(hv).fill(-128),
        norm: new Float32Array(dv).fill(1),
        outProj: randomCsr(H, hv * dv, density, r),
      }
      : {
        kind: 'full_attention' as const,
        qProj: randomCsr(cfg.numAttentionHeads * cfg.headDim * 2, H, density, r),
        kProj: randomCsr(cfg.numKeyValueHeads * cfg.headDim, H, density, r),
        vProj: randomCsr(cfg.numKeyValueHeads * cfg.headDim, H, density, r),
        oProj: randomCsr(H, cfg.numAttentionHeads * cfg.headDim, density, r),
        qNorm: new Float32Array(cfg.headDim),
        kNorm: new Float32Array(cfg.headDim),
      };
    layers.push({
      inputLayernorm: new Float32Array(H),
      postAttentionLayernorm: new Float32Array(H),
      mixer,
      mlp: {
        kind: 'dense',
        gateProj: randomCsr(cfg.intermediateSize, H, density, r),
        upProj: randomCsr(cfg.intermediateSize, H, density, r),
        downProj: randomCsr(H, cfg.intermediateSize, density, r),
      },
    });
  }
  const embed = randomCsr(cfg.vocabSize, H, density, r);
  return { config: cfg, embedTokens: embed, layers, norm: new Float32Array(H), lmHead: cfg.tieWordEmbeddings ? embed : randomCsr(cfg.vocabSize, H, density, r) };
}

interface Row { model: string; path: string; tokens: number; tokensPerSec: number; msPerToken: number }

function timeDecode(name: string, w: ModelWeights, path: 'dense' | 'sparse', tokens: number): Row {
  const ex = new Executor(w, { path });
  let id = ex.generate([1], 1)[0];
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < tokens; i++) {
    const logits = ex.decode(id % w.config.vocabSize);
    id = (i * 7919 + logits.length) % w.config.vocabSize;
  }
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  return { model: name, path, tokens, tokensPerSec: tokens / s, msPerToken: (1000 * s) / tokens };
}

/**
 * Decode tokens/s of one compiled model: prefill [bos], a warm-up of min(tokens, 200) decodes,
 * then `tokens` timed decodes, each fed the previous argmax (mod bos, so bos is never re-fed).
 */
function timeCompiled(w: ModelWeights, bos: number, profile: 'f32' | 'bf16', tokens: number): number {
  const ex = new Executor(w, { path: 'sparse', profile });
  let tok = argmax(ex.prefill([bos])[0]);
  const next = (t: number): number => (bos > 0 ? t % bos : t);
  for (let i = 0; i < Math.min(tokens, 200); i++) tok = argmax(ex.decode(next(tok)));
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < tokens; i++) tok = argmax(ex.decode(next(tok)));
  return tokens / (Number(process.hrtime.bigint() - t0) / 1e9);
}

async function compiledMode(): Promise<void> {
  const tokens = arg('--tokens', 2000);
  const cfg = resolveTarget('tiny').config;
  const out: { circuit: string; f32: number; bf16: number }[] = [];
  console.log('circuit'.padEnd(14) + 'f32 tok/s'.padStart(12) + 'bf16 tok/s'.padStart(12));
  for (const f of fs.readdirSync('circuits/examples').filter((x) => x.endsWith('.ts')).sort()) {
    const ir = await loadCircuitFile(path.join('circuits/examples', f));
    const res = compileCircuit(ir, cfg);
    const bos = ir.bos ?? 0;
    const row = { circuit: ir.name, f32: timeCompiled(res.weights, bos, 'f32', tokens), bf16: timeCompiled(res.weights, bos, 'bf16', tokens) };
    out.push(row);
    console.log(row.circuit.padEnd(14) + row.f32.toFixed(0).padStart(12) + row.bf16.toFixed(0).padStart(12));
  }
  console.log(JSON.stringify({ bench: 'exec-compiled', target: 'tiny', path: 'sparse', order: 'sequential', tokens, rows: out }));
}

if (process.argv.includes('--compiled')) {
  await compiledMode();
  process.exit(0);
}

const rows: Row[] = [];
const tiny = randomModelWeights(resolveTarget('tiny').config, 1);
const nTiny = arg('--tokens', 200);
rows.push(timeDecode('tiny', tiny, 'dense', nTiny));
rows.push(timeDecode('tiny', tiny, 'sparse', nTiny));
const big = syntheticSparse(bigConfig(), 0.0005);
rows.push(timeDecode('qwen3.5-4b widths, 99.95% zero (CSR only)', big, 'sparse', arg('--big-tokens', 3)));
const maxRssMiB = process.resourceUsage().maxRSS / 1024;

console.log('model'.padEnd(44) + 'path'.padEnd(8) + 'tokens'.padStart(7) + 'tok/s'.padStart(10) + 'ms/tok'.padStart(10));
for (const r of rows) {
  console.log(r.model.padEnd(44) + r.path.padEnd(8) + String(r.tokens).padStart(7) + r.tokensPerSec.toFixed(2).padStart(10) + r.msPerToken.toFixed(1).padStart(10));
}
console.log(`peak RSS ${maxRssMiB.toFixed(0)} MiB`);
console.log(JSON.stringify({ bench: 'exec', rows, maxRssMiB: Math.round(maxRssMiB) }));
