/**
 * The currency between lowering and assembly: linear forms over virtual residual dims, and the
 * per-sublayer unit/head specs built from them. A virtual dim (VDim) is one number per position
 * held in some residual slot; pack-slots maps VDims to slots, assembly turns forms into weights.
 *
 * All coefficients are in raw (un-normalised) units: a form's value is Σ coef·raw(dim) + constant.
 * Assembly multiplies content coefficients by 1/normScale = 2^(m−e) (exact: a power of two) and
 * draws the constant from the frame's constant dims (see src/passes/assemble/rows.ts).
 */

export type VDim = number;

export interface Term {
  dim: VDim;
  coef: number;
}

/** Σ coef·raw(dim) + constant. */
export interface Form {
  terms: Term[];
  constant: number;
}

export function form(terms: Term[] = [], constant = 0): Form {
  return { terms, constant };
}

export function constForm(c: number): Form {
  return { terms: [], constant: c };
}

/** Whether the terms' dims strictly ascend (each dim once): combine's own output, and most forms. */
function strictlyAscending(terms: readonly Term[]): boolean {
  for (let i = 1; i < terms.length; i++) if (terms[i]!.dim <= terms[i - 1]!.dim) return false;
  return true;
}

/**
 * a·f + b·g (terms on the same dim merged; exact for the integer/bf16 coefficients used): each
 * dim's coefficient is (0 + a·c_f) + b·c_g over its terms in order, zeros dropped, dims ascending.
 * Two forms whose dims strictly ascend are merged in one walk (lowering combines forms some
 * hundred thousand times); any others through a map, with the same sums.
 */
export function combine(a: number, f: Form, b = 0, g: Form = constForm(0)): Form {
  const ft = f.terms;
  const gt = g.terms;
  if (strictlyAscending(ft) && strictlyAscending(gt)) {
    const terms: Term[] = [];
    let i = 0;
    let j = 0;
    while (i < ft.length || j < gt.length) {
      let dim: VDim;
      let c: number;
      if (j >= gt.length || (i < ft.length && ft[i]!.dim < gt[j]!.dim)) {
        dim = ft[i]!.dim;
        c = 0 + a * ft[i++]!.coef;
      } else if (i >= ft.length || gt[j]!.dim < ft[i]!.dim) {
        dim = gt[j]!.dim;
        c = 0 + b * gt[j++]!.coef;
      } else {
        dim = ft[i]!.dim;
        c = (0 + a * ft[i++]!.coef) + b * gt[j++]!.coef;
      }
      if (c !== 0) terms.push({ dim, coef: c });
    }
    return { terms, constant: a * f.constant + b * g.constant };
  }
  const m = new Map<VDim, number>();
  for (const t of f.terms) m.set(t.dim, (m.get(t.dim) ?? 0) + a * t.coef);
  for (const t of g.terms) m.set(t.dim, (m.get(t.dim) ?? 0) + b * t.coef);
  const terms = [...m.entries()].filter(([, c]) => c !== 0).map(([dim, coef]) => ({ dim, coef }));
  terms.sort((x, y) => x.dim - y.dim);
  return { terms, constant: a * f.constant + b * g.constant };
}

/** An integer-valued linear form together with the range of values it takes (the FFN gadgets' input). */
export interface IntInput {
  form: Form;
  lo: number;
  hi: number;
}

/** One output of a ramp table (gadgets/ffn-core.ts): dim receives values[i] at x = lo + i. */
export interface RampOutput {
  dim: VDim;
  values: number[];
}

/** Write into a residual dim: residual[dim] += weight · (unit output or head column). */
export interface Out {
  dim: VDim;
  weight: number;
}

/** One SwiGLU unit: for every out, residual[out.dim] += out.weight · silu(gate) · up. */
export interface FfnUnit {
  gate: Form;
  up: Form;
  down: Out[];
  /** What the unit is for (reports, the allocation dump). */
  tag?: string;
}

/** One GDN value head (a pinned RAM bank): v and z rows, β form, gated-norm weight, read-out. */
export interface GdnValueHeadSpec {
  /** dv forms: the value written (before conv tap 1.0 and SiLU). */
  v: Form[];
  /** dv forms: the output gate of the gated RMSNorm (silu(z)). */
  z: Form[];
  /** β pre-activation (sigmoid(b) ∈ {0, 1} exactly: b ≥ 17 or ≤ −89). */
  b: Form;
  /**
   * Which token the v channels' causal-conv tap reads: 0 = the current token (default), 1 = the
   * previous one (a delay line; at position 0 the conv sees zeros). q and k always read the current token.
   */
  vTapOffset?: number;
  /** out_proj: residual[dim] += weight · normed_output[col]. */
  out: { col: number; dim: VDim; weight: number }[];
  /** Every gated-norm output of this head is an integer multiple of outQuantum within ±outBound (order-invariance analysis). */
  outBound?: number;
  outQuantum?: number;
  tag?: string;
}

/** One GDN key head: q and k rows shared by its r value heads. */
export interface GdnKeyHeadSpec {
  /** dk forms each: pre-activations (conv tap 1.0, then SiLU, then L2 norm). */
  q: Form[];
  k: Form[];
  /** Which token the q and k channels' conv tap reads (0 = the current one, default; d = t − d: delay lines). */
  qkTapOffset?: number;
  /** Exactly r = Hv/Hk entries (null = unused value head). */
  values: (GdnValueHeadSpec | null)[];
  tag?: string;
}

/** One attention query head. */
export interface AttnQueryHeadSpec {
  /** D forms: query (before q_norm and RoPE; dims < rotary width must stay 0). */
  q: Form[];
  /** D forms: the sigmoid output gate. */
  gate: Form[];
  /** o_proj: residual[dim] += weight · gated_output[col]. */
  out: { col: number; dim: VDim; weight: number }[];
  /** Every gated attention output is an integer multiple of outQuantum within ±outBound (order-invariance analysis). */
  outBound?: number;
  outQuantum?: number;
  tag?: string;
}

/** One key/value head and the query heads that read it (exactly Hq/Hkv entries, null = unused). */
export interface AttnKvHeadSpec {
  k: Form[];
  v: Form[];
  queries: (AttnQueryHeadSpec | null)[];
  tag?: string;
}

/** Everything one compiled layer holds. */
export interface LayerSpec {
  mixer:
    | {
        kind: 'linear_attention';
        heads: (GdnKeyHeadSpec | null)[];
        /** dv gated-norm weights shared by every value head (plain weight, not 1 + w); default ones. */
        normWeight?: number[];
      }
    | {
        kind: 'full_attention';
        heads: (AttnKvHeadSpec | null)[];
        /** Stored zero-centred q_norm / k_norm weights w (scale 1 + w), D each, shared by all heads; default zeros. */
        qNormWeight?: number[];
        kNormWeight?: number[];
      };
  ffn: FfnUnit[];
}
