/**
 * Builder of small `qwen3_5_text` models with hand-set weights: ONE Gated DeltaNet layer used as
 * a pinned RAM (docs/numerics.md "The GDN path", docs/gadgets-gdn.md), for the numerics verification tests. Every weight is a
 * power of two, a small integer or an exact constant, so the expected results can be derived by
 * hand. The MLP and LM head are all zero (FFN output 0, logits 0): tests read the GDN state
 * (hook / Executor.gdnState) and the residual after the mixer (hook `residualMid`).
 *
 * Residual layout (dims, in order): anchors | write-address bits | write enable | β enable per
 * value head | read-address bits | read enable | mix flag | data dims | output dims.
 * The whole-vector RMSNorm scales content by 2^−k (anchors: docs/numerics.md "The whole-vector RMSNorm"); each content weight carries 2^k.
 *
 * GDN head (hk = 1 key head, hv value heads sharing it):
 *  - k row i: keyScale·(matches(i, addr) − bits − 1 + 2·en) (+ keyScale·mix on row mixRow):
 *    keyScale for the addressed row, 0 for one wrong bit, ≤ −keyScale otherwise (docs/gadgets-gdn.md "Address decode");
 *  - q the same from the read bits and read enable;
 *  - b_h = 256·ben_h − 128 (β ∈ {0,1}) or 0 (β = 0.5, hazard); a = 0; conv taps (0,…,0,1);
 *  - layouts of a row (dv columns):
 *      'marker': cols 0,1 hold M = 2^40, cols 2.. hold data + offset (dk must be a power of 4 so
 *                that fl(1/√dk) is a power of two; dv = 8 so mean(o²) is a power of four);
 *      'raw':    cols hold data + offset (no markers: the read depends on the neighbours);
 *      'r1p':    R1′ one-hot digits, 32 groups × 4, hot value T = 181.01934814453125
 *                (dk = dv = 128), v_pre = T − 512·(mismatching bits) from bit/complement dims.
 *  - z = 32 (silu(32) = 32), gated-norm weight and out_proj chosen per layout so the output dims
 *    receive the stored data (minus the offset) or the 64 bits of an R1′ row.
 */
import type { ModelConfig } from '../../src/model/config.ts';
import type { GdnWeights, Matrix, ModelWeights } from '../../src/model/weights.ts';

export const T_HOT = 181.01934814453125;
export const MARKER = 2 ** 40;

export type RowLayout = 'marker' | 'raw' | 'r1p';

export interface PinnedGdnOptions {
  /** Hidden size (default 64). */
  H?: number;
  /** Anchor constants at dims 0..n−1 (default [2^40]). */
  anchorValues?: number[];
  /** log2 of the norm scale the weights assume: normalised = x·2^−k (default: derived from the anchors). */
  normShift?: number;
  /** Index of the anchor used as the constant source; its normalised value must be a power of two. */
  constAnchor?: number;
  layout?: RowLayout;
  /** Key head dim (power of two; rows addressable = dk). Default 16 ('r1p': 128). */
  dk?: number;
  /** Value head dim. Default 8 ('r1p': 128). */
  dv?: number;
  /** Value heads sharing the key head (default 1). */
  hv?: number;
  /** Hot key pre-activation (default 128). */
  keyScale?: number;
  dtBias?: number;
  aLog?: number;
  /** β = sigmoid(0) = 0.5 on every token (hazard). */
  betaHalf?: boolean;
  /** Row whose key also gets +keyScale·mix (hazard: a key overlapping two addresses). */
  mixRow?: number;
  /** Offset added to stored data ('marker' / 'raw'); default 128. */
  valueOffset?: number;
  /** Model dtype in the config (the executor's profile is chosen separately). */
  dtype?: 'float32' | 'bfloat16';
}

export interface TokenSpec {
  /** Write: address, data (one value per data column, or 64 bits for 'r1p'), per-head β enable. */
  write?: { addr: number; data: number[]; betaEnable?: (0 | 1)[] };
  /** Key present but β = 0 on every head (a masked write). */
  maskedWrite?: { addr: number; data: number[] };
  read?: number;
  mix?: 0 | 1;
  /** Extra content in the data dims' neighbourhood: values written to named residual dims. */
  extra?: [dim: number, value: number][];
}

const f = Math.fround;

function matrix(rows: number, cols: number): Matrix {
  return { rows, cols, dense: new Float32Array(rows * cols) };
}

function isPow2(x: number): boolean {
  return x > 0 && Number.isInteger(Math.log2(x));
}

export class PinnedGdnModel {
  readonly H: number; readonly dk: number; readonly dv: number; readonly hv: number;
  readonly bits: number; readonly layout: RowLayout;
  readonly anchorValues: number[];
  readonly shift: number;
  readonly dataCols: number;
  /** Dim indexes. */
  readonly dim: {
    waddr: number; wen: number; ben: number; raddr: number; ren: number; mix: number;
    data: number; dataCount: number; out: number; outCount: number;
  };
  private readonly opts: PinnedGdnOptions;
  private readonly rows: Float32Array[] = [];

  constructor(opts: PinnedGdnOptions = {}) {
    this.opts = opts;
    this.layout = opts.layout ?? 'marker';
    const r1p = this.layout === 'r1p';
    this.H = opts.H ?? 64;
    this.dk = opts.dk ?? (r1p ? 128 : 16);
    this.dv = opts.dv ?? (r1p ? 128 : 8);
    this.hv = opts.hv ?? 1;
    this.bits = Math.log2(this.dk);
    if (!Number.isInteger(this.bits)) throw new Error('dk must be a power of two');
    this.anchorValues = opts.anchorValues ?? [2 ** 40];
    const sumSq = this.anchorValues.reduce((s, a) => s + a * a, 0);
    this.shift = opts.normShift ?? Math.log2(Math.sqrt(sumSq / this.H));
    if (!Number.isInteger(this.shift)) throw new Error(`anchors do not give a power-of-four mean (shift ${this.shift})`);
    this.dataCols = this.layout === 'marker' ? this.dv - 2 : this.layout === 'raw' ? this.dv : 64;
    let d = this.anchorValues.length;
    const take = (n: number) => { const s = d; d += n; return s; };
    const waddr = take(this.bits), wen = take(1), ben = take(this.hv), raddr = take(this.bits);
    const ren = take(1), mix = take(1);
    const dataCount = r1p ? 128 : this.dataCols;
    const data = take(dataCount);
    const outCount = this.dataCols;
    const out = take(outCount);
    if (d > this.H) throw new Error(`layout needs ${d} dims > H = ${this.H}`);
    this.dim = { waddr, wen, ben, raddr, ren, mix, data, dataCount, out, outCount };
  }

  /** 2^k: normalised content = x / P. */
  get P(): number { return 2 ** this.shift; }

  /** Adds a token (embedding row) and returns its id. */
  token(spec: TokenSpec): number {
    const x = new Float32Array(this.H);
    this.anchorValues.forEach((a, i) => { x[i] = a; });
    const { dim } = this;
    const w = spec.write ?? (spec.maskedWrite ? { ...spec.maskedWrite, betaEnable: new Array(this.hv).fill(0) } : undefined);
    if (w) {
      for (let b = 0; b < this.bits; b++) x[dim.waddr + b] = (w.addr >> b) & 1;
      x[dim.wen] = 1;
      const be = w.betaEnable ?? new Array(this.hv).fill(1);
      for (let h = 0; h < this.hv; h++) x[dim.ben + h] = be[h];
      if (this.layout === 'r1p') {
        if (w.data.length !== 64) throw new Error('r1p write needs 64 bits');
        for (let i = 0; i < 64; i++) { x[dim.data + i] = w.data[i]; x[dim.data + 64 + i] = 1 - w.data[i]; }
      } else {
        if (w.data.length !== this.dataCols) throw new Error(`write needs ${this.dataCols} values`);
        for (let i = 0; i < this.dataCols; i++) x[dim.data + i] = w.data[i];
      }
    }
    if (spec.read !== undefined) {
      for (let b = 0; b < this.bits; b++) x[dim.raddr + b] = (spec.read >> b) & 1;
      x[dim.ren] = 1;
    }
    if (spec.mix) x[dim.mix] = 1;
    for (const [i, v] of spec.extra ?? []) x[i] = v;
    this.rows.push(x);
    return this.rows.length - 1;
  }

  /** The normalised value of the constant anchor (a power of two) and its dim. */
  private constSource(): { dim: number; value: number } {
    const i = this.opts.constAnchor ?? this.anchorValues.length - 1;
    const value = this.anchorValues[i] / this.P;
    if (!isPow2(value)) throw new Error(`normalised anchor ${i} = ${value} is not a power of two`);
    return { dim: i, value };
  }

  config(): ModelConfig {
    return {
      family: 'qwen3_5_text', vocabSize: Math.max(1, this.rows.length), hiddenSize: this.H, numLayers: 1,
      layerTypes: ['linear_attention'], intermediateSize: 4, numAttentionHeads: 1, numKeyValueHeads: 1,
      headDim: 64, partialRotaryFactor: 0.25, ropeTheta: 10000, linearNumKeyHeads: 1,
      linearNumValueHeads: this.hv, linearKeyHeadDim: this.dk, linearValueHeadDim: this.dv,
      linearConvKernelDim: 4, rmsNormEps: 1e-6, tieWordEmbeddings: false, moe: null, bosTokenId: null,
      eosTokenId: null, maxPositionEmbeddings: 4096, dtype: this.opts.dtype ?? 'float32',
    };
  }

  /** The model weights (every token added so far is in the vocabulary). */
  weights(): ModelWeights {
    const cfg = this.config();
    const { H, dk, dv, hv, bits, dim, P } = this;
    const c = this.constSource();
    const keyScale = this.opts.keyScale ?? 128;
    const conv = 2 * dk + hv * dv;
    const qkv = matrix(conv, H);
    const W = qkv.dense!;
    const set = (m: Float32Array, cols: number, r: number, col: number, v: number) => {
      if (f(v) !== v) throw new Error(`weight ${v} is not float32-exact`);
      m[r * cols + col] = v;
    };
    // Address decode rows for q (rows 0..dk) and k (rows dk..2dk).
    for (const [rowBase, addrDim, enDim] of [[0, dim.raddr, dim.ren], [dk, dim.waddr, dim.wen]]) {
      for (let i = 0; i < dk; i++) {
        let zeros = 0;
        for (let b = 0; b < bits; b++) {
          const s = (i >> b) & 1 ? 1 : -1;
          if (s < 0) zeros++;
          set(W, H, rowBase + i, addrDim + b, keyScale * s * P);
        }
        set(W, H, rowBase + i, enDim, 2 * keyScale * P);
        set(W, H, rowBase + i, c.dim, (keyScale * (zeros - bits - 1)) / c.value);
        if (rowBase === dk && this.opts.mixRow === i) set(W, H, rowBase + i, dim.mix, keyScale * P);
      }
    }
    // Value rows.
    const offset = this.opts.valueOffset ?? 128;
    for (let h = 0; h < hv; h++) {
      const base = 2 * dk + h * dv;
      if (this.layout === 'r1p') {
        const tParts = [T_HOT]; // one exact product: (T / c) · c
        for (let g = 0; g < 32; g++) {
          for (let dg = 0; dg < 4; dg++) {
            const r = base + g * 4 + dg;
            set(W, H, r, c.dim, tParts[0] / c.value);
            for (let bit = 0; bit < 2; bit++) {
              const want = (dg >> bit) & 1;
              const src = want ? dim.data + 64 + 2 * g + bit : dim.data + 2 * g + bit; // mismatch indicator
              set(W, H, r, src, -512 * P);
            }
          }
        }
      } else {
        let col = 0;
        if (this.layout === 'marker') {
          set(W, H, base, c.dim, MARKER / c.value);
          set(W, H, base + 1, c.dim, MARKER / c.value);
          col = 2;
        }
        for (let j = 0; j < this.dataCols; j++) {
          set(W, H, base + col + j, dim.data + j, P);
          set(W, H, base + col + j, c.dim, offset / c.value);
        }
      }
    }
    const z = matrix(hv * dv, H);
    for (let r = 0; r < hv * dv; r++) set(z.dense!, H, r, c.dim, 32 / c.value);
    const b = matrix(hv, H);
    const a = matrix(hv, H);
    for (let h = 0; h < hv; h++) {
      if (!this.opts.betaHalf) {
        set(b.dense!, H, h, dim.ben + h, 256 * P);
        set(b.dense!, H, h, c.dim, -128 / c.value);
      }
    }
    const conv1d = new Float32Array(conv * 4);
    for (let ch = 0; ch < conv; ch++) conv1d[ch * 4 + 3] = 1;
    // Gated norm weight and out_proj (value head 0 feeds the output dims).
    const norm = new Float32Array(dv);
    const outProj = matrix(H, hv * dv);
    const O = outProj.dense!;
    if (this.layout === 'r1p') {
      norm.fill(1); // n_hot = 16/8 = 2, ×silu(32) = 64
      for (let g = 0; g < 32; g++) {
        for (let dg = 0; dg < 4; dg++) {
          for (let bit = 0; bit < 2; bit++) {
            if ((dg >> bit) & 1) set(O, hv * dv, dim.out + 2 * g + bit, g * 4 + dg, 1 / 64);
          }
        }
      }
    } else if (this.layout === 'marker') {
      // o = S·s (s = 2^−bits/2), Σo² = 2·(M·s)² absorbs the data, mean = 2·M²·s²/dv, rsqrt = 2^−r.
      const s = 2 ** (-bits / 2);
      const mean = (2 * MARKER * MARKER * s * s) / dv;
      const rs = 1 / Math.sqrt(mean);
      if (!isPow2(rs)) throw new Error('marker layout: mean(o²) is not a power of four (dk must be a power of 4, dv = 8)');
      norm.fill(1 / (s * rs)); // n = (x + off)·s·rs·w = x + off
      const markerOut = MARKER * s * rs * norm[0] * 32;
      for (let j = 0; j < this.dataCols; j++) {
        set(O, hv * dv, dim.out + j, 2 + j, 1 / 32);
        set(O, hv * dv, dim.out + j, 0, -offset / markerOut);
      }
    } else {
      norm.fill(1);
      for (let j = 0; j < this.dataCols; j++) set(O, hv * dv, dim.out + j, j, 1 / 32);
    }
    const gdn: GdnWeights = {
      kind: 'linear_attention', inProjQkv: qkv, inProjZ: z, inProjB: b, inProjA: a, conv1d,
      aLog: new Float32Array(hv).fill(this.opts.aLog ?? 0),
      dtBias: new Float32Array(hv).fill(this.opts.dtBias ?? -128),
      norm, outProj,
    };
    const vocab = cfg.vocabSize;
    const embed = matrix(vocab, H);
    this.rows.forEach((row, i) => embed.dense!.set(row, i * H));
    return {
      config: cfg,
      embedTokens: embed,
      layers: [{
        inputLayernorm: new Float32Array(H), postAttentionLayernorm: new Float32Array(H), mixer: gdn,
        mlp: { kind: 'dense', gateProj: matrix(4, H), upProj: matrix(4, H), downProj: matrix(H, 4) },
      }],
      norm: new Float32Array(H),
      lmHead: matrix(vocab, H),
    };
  }
}
