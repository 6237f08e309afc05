/**
 * RAM contents ↔ the recurrent state of a RAM's pinned Gated DeltaNet heads (layout in
 * docs/gadgets-gdn.md, format and guarantee in docs/state-files.md). `ramStateRows` computes the
 * exact state the RAM's write path leaves after writing the given rows (so a state written here is
 * bit-identical to the state a prompt of write tokens produces); `applyRamContents` writes it into
 * an Executor; `captureRamContents` decodes a live state back into row contents and refuses a
 * state that is not a valid layout.
 *
 * The layout, per row A of the RAM (block b = ⌊A/R⌋, state row i = A − b·R, R = rowsPerKeyHead):
 * the word's bits (fields packed LSB first, field f from bit fieldOffset[f]) form base-4 digits
 * d_g = bit(2g) + 2·bit(2g+1) (bits past the word are 0, so padding groups hold digit 0). Digit
 * group g sits in word value head vi = ⌊g/G⌋ (G = dv/4), columns 4·(g − vi·G) … +3; word value
 * head vi is value head j = vi − part·r of the key head with role (port, block, part =
 * ⌊vi/r⌋), i.e. model value head keyHead·r + j. Column 4·gl + d_g holds the hot value (T in
 * the f32 profile, bf16(T) in the bf16 profile: the write path stores v = silu(T) after the
 * profile's activation rounding), every other entry +0; an unwritten row is +0 everywhere, and so
 * are the state rows i ≥ R, rows past the RAM's last row and value heads past the word. Every
 * read-port copy holds the same contents.
 */
import { ChipcError } from '../util/errors.ts';
import type { RamPlacement } from '../compile.ts';
import type { Executor } from '../exec/executor.ts';
import type { NumericProfile } from '../exec/types.ts';
import type { ModelConfig } from '../model/config.ts';
import type { RamDecl } from '../ir/types.ts';
import { ramRowOf, type GdnRamHeadRole, type GdnRamLayout, type GdnRamLowering } from '../gadgets/gdn-ram.ts';

/**
 * What the functions here read of a compiled circuit: its model config and its RAM declarations.
 * A CompileResult is one; so is a chip loaded from a checkpoint whose manifest records its RAMs
 * (src/chip/loaded.ts).
 */
export interface RamHost {
  weights: { config: ModelConfig };
  ir: { rams: readonly RamDeclShape[] };
}

/** The part of a RAM declaration the state needs: its name, rows and field ranges. */
export type RamDeclShape = Pick<RamDecl, 'id' | 'name' | 'rows' | 'fields'>;

/** What they read of a RAM's placement (CompileResult.rams): layer, key heads, layout and head roles. */
export type RamStatePlacement = Pick<RamPlacement, 'ram' | 'name' | 'layer' | 'keyHeads'> & {
  lowering: Pick<GdnRamLowering, 'layout' | 'roles'> & { heads?: readonly unknown[] };
};

/** Occupied rows of one RAM: row address → field values (one per field, in declaration order). */
export type RamContents = ReadonlyMap<number, readonly number[]>;

/** What the state computation needs besides the placement. */
export interface RamStateConfig {
  /** The compiled model's config (GDN dims: key/value heads, dk, dv). */
  model: ModelConfig;
  /** The RAM's declaration (rows and field ranges the contents are checked against). */
  decl: RamDeclShape;
  /** Numeric profile of the executor the state is for: selects T or bf16(T). */
  profile: NumericProfile;
}

/** The full recurrent state of one model value head owned by the RAM. */
export interface RamValueHeadState {
  /** Model value head index (keyHead·r + j) and its key head. */
  valueHead: number;
  keyHead: number;
  /** Which read-port copy, row block and word part the key head holds. */
  role: GdnRamHeadRole;
  /** Index of this value head within the word (part·r + j); null when past the word (always +0). */
  wordValueHead: number | null;
  /** S as the executor holds it: S[i, c] at i·dv + c (dk·dv entries). */
  state: Float32Array;
}

export interface RamStateRows {
  layer: number;
  /** Every value head of every key head of the RAM, in placement order then j. */
  heads: RamValueHeadState[];
}

function fail(code: string, msg: string): never {
  throw new ChipcError(code, msg);
}

/** The config for `placement` in compile result `res`, for an executor running `profile`. */
export function ramStateConfig(res: RamHost, placement: RamStatePlacement, profile: NumericProfile): RamStateConfig {
  const decl = res.ir.rams[placement.ram];
  if (!decl || decl.name !== placement.name) {
    fail('state.ram', `RAM placement "${placement.name}" (id ${placement.ram}) does not match the circuit's RAM declarations`);
  }
  return { model: res.weights.config, decl, profile };
}

/** The value the write path stores in a hot entry: T (f32 profile) or bf16(T) (bf16 profile). */
export function storedHotValue(placement: RamStatePlacement, profile: NumericProfile): number {
  const hot = placement.lowering.layout.hot;
  if (profile === 'f32') return hot.T;
  if (profile === 'bf16') return hot.Tbf16;
  return fail('state.profile', `unknown numeric profile '${String(profile)}' (expected f32 or bf16)`);
}

/**
 * Checks one RAM's contents against its declaration: every row an integer in [0, rows), every
 * word one integer per field in [lo, hi]. ChipcError `state.contents` naming the RAM, row and field.
 */
export function checkRamContents(decl: RamDeclShape, contents: RamContents): void {
  for (const [row, values] of contents) {
    if (!Number.isInteger(row) || row < 0 || row >= decl.rows) {
      fail('state.contents', `RAM "${decl.name}": row ${row} is outside [0, ${decl.rows})`);
    }
    if (!Array.isArray(values) || values.length !== decl.fields.length) {
      fail('state.contents', `RAM "${decl.name}" row ${row}: ${Array.isArray(values) ? values.length : 'no'} values given, the word has ${decl.fields.length} field${decl.fields.length === 1 ? '' : 's'}`);
    }
    values.forEach((x, f) => {
      const fr = decl.fields[f]!;
      if (!Number.isInteger(x) || x < fr.lo || x > fr.hi) {
        fail('state.contents', `RAM "${decl.name}" row ${row} field ${f}: value ${x} is outside [${fr.lo}, ${fr.hi}]`);
      }
    });
  }
}

/** Bit j of a non-negative integer x (exact for x < 2^53). */
function bitOf(x: number, j: number): number {
  return Math.floor(x / 2 ** j) % 2;
}

/**
 * The base-4 digits of a word over `groups` digit groups: d_g = bit(2g) + 2·bit(2g+1) of the
 * packed word (field f's bit j at word bit fieldOffset[f] + j; bits past the word are 0).
 */
export function wordDigits(placement: RamStatePlacement, values: readonly number[], groups: number): number[] {
  const { fieldOffset, fieldWidth } = placement.lowering.layout;
  const bits = new Array<number>(2 * groups).fill(0);
  values.forEach((x, f) => {
    for (let j = 0; j < fieldWidth[f]!; j++) {
      const pos = fieldOffset[f]! + j;
      if (pos < bits.length) bits[pos] = bitOf(x, j);
    }
  });
  return Array.from({ length: groups }, (_, g) => bits[2 * g]! + 2 * bits[2 * g + 1]!);
}

interface GdnShape { Hk: number; Hv: number; r: number; dk: number; dv: number }

function gdnShape(model: ModelConfig): GdnShape {
  const Hk = model.linearNumKeyHeads;
  const Hv = model.linearNumValueHeads;
  return { Hk, Hv, r: Hv / Hk, dk: model.linearKeyHeadDim, dv: model.linearValueHeadDim };
}

/**
 * Which part of the word value head j of a key head in `role` holds (vi; ≥ valueHeadsPerWord:
 * none) and the RAM row of its state row 0 (state row i holds that row + i). Packed rows
 * (wordsPerRow 2): value heads 0 and 1 hold the whole word of the rows with select bit j.
 */
function headRows(lay: GdnRamLayout, role: GdnRamHeadRole, j: number, r: number): { vi: number; first: number } {
  if ((lay.wordsPerRow ?? 1) === 2) return { vi: j < 2 ? 0 : lay.valueHeadsPerWord, first: ramRowOf(lay, role.block, j < 2 ? j : 0, 0) };
  return { vi: role.part * r + j, first: ramRowOf(lay, role.block, 0, 0) };
}

function checkPlacement(placement: RamStatePlacement, sh: GdnShape): void {
  const { lowering, keyHeads } = placement;
  // (a placement loaded from a manifest has roles but not the lowered heads themselves)
  const lowered = lowering.heads?.length ?? lowering.roles.length;
  if (keyHeads.length !== lowered || lowering.roles.length !== lowered) {
    fail('state.ram', `RAM "${placement.name}": ${keyHeads.length} key heads placed for ${lowered} lowered heads`);
  }
  for (const kh of keyHeads) {
    if (!Number.isInteger(kh) || kh < 0 || kh >= sh.Hk) {
      fail('state.ram', `RAM "${placement.name}": key head ${kh} is outside the model's [0, ${sh.Hk})`);
    }
  }
  const { groupsPerValueHead: G } = lowering.layout;
  if (G * 4 !== sh.dv || !Number.isInteger(sh.r) || lowering.layout.rowsPerKeyHead > sh.dk) {
    fail('state.ram', `RAM "${placement.name}" was lowered for another GDN shape (dk ${sh.dk}, dv ${sh.dv}, ${sh.Hv}/${sh.Hk} value/key heads)`);
  }
}

/**
 * The non-+0 entries of one value head's state (RamStateEntries): S[index[t]] = hot for t < count,
 * every other entry +0.
 */
export interface RamValueHeadEntries extends Omit<RamValueHeadState, 'state'> {
  index: Int32Array;
  count: number;
}

/** ramStateRows as entries: per value head, where its hot values are (the hot value is one per RAM). */
export interface RamStateEntries {
  layer: number;
  hot: number;
  heads: RamValueHeadEntries[];
}

/**
 * The exact state of every value head of the RAM's key heads after writing `contents` (row →
 * field values) into an empty RAM through its write path, in profile `cfg.profile`:
 * S[i, 4·gl + d] = hot for the row's digit d of each group, +0 elsewhere (see the module header).
 */
export function ramStateRows(placement: RamStatePlacement, contents: RamContents, cfg: RamStateConfig): RamStateRows {
  const sh = gdnShape(cfg.model);
  const entries = ramStateEntries(placement, contents, cfg);
  return {
    layer: entries.layer,
    heads: entries.heads.map(({ index, count, ...head }) => {
      const state = new Float32Array(sh.dk * sh.dv); // +0 everywhere
      for (let t = 0; t < count; t++) state[index[t]!] = entries.hot;
      return { ...head, state };
    }),
  };
}

/**
 * ramStateRows' states as their hot entries (ascending positions within each head): what
 * `applyRamContents` writes, so that a load touches only those entries of the executor's state.
 */
export function ramStateEntries(placement: RamStatePlacement, contents: RamContents, cfg: RamStateConfig): RamStateEntries {
  const sh = gdnShape(cfg.model);
  checkPlacement(placement, sh);
  checkRamContents(cfg.decl, contents);
  const lay = placement.lowering.layout;
  const G = lay.groupsPerValueHead;
  const R = lay.rowsPerKeyHead;
  const hot = storedHotValue(placement, cfg.profile);
  const totalGroups = lay.valueHeadsPerWord * G;
  // Digits of each occupied row, once.
  const digits = new Map<number, number[]>();
  for (const [row, values] of contents) digits.set(row, wordDigits(placement, values, totalGroups));
  const heads: RamValueHeadEntries[] = [];
  placement.lowering.roles.forEach((role, h) => {
    const keyHead = placement.keyHeads[h]!;
    for (let j = 0; j < sh.r; j++) {
      const { vi, first } = headRows(lay, role, j, sh.r);
      const used = vi < lay.valueHeadsPerWord;
      let count = 0;
      if (used) for (let i = 0; i < R; i++) if (digits.has(first + i)) count += G;
      const index = new Int32Array(count);
      if (used && count > 0) {
        let t = 0;
        for (let i = 0; i < R; i++) {
          const d = digits.get(first + i);
          if (!d) continue;
          for (let gl = 0; gl < G; gl++) index[t++] = i * sh.dv + 4 * gl + d[vi * G + gl]!;
        }
      }
      heads.push({ valueHead: keyHead * sh.r + j, keyHead, role, wordValueHead: used ? vi : null, index, count });
    }
  });
  return { layer: placement.layer, hot, heads };
}

function checkExecutor(executor: Executor, res: RamHost): void {
  const a = executor.config;
  const b = res.weights.config;
  if (a.numLayers !== b.numLayers || a.linearNumKeyHeads !== b.linearNumKeyHeads || a.linearNumValueHeads !== b.linearNumValueHeads
    || a.linearKeyHeadDim !== b.linearKeyHeadDim || a.linearValueHeadDim !== b.linearValueHeadDim
    || a.layerTypes.some((t, i) => t !== b.layerTypes[i])) {
    fail('state.model', `the executor's model (${a.numLayers} layers, GDN ${a.linearNumKeyHeads}/${a.linearNumValueHeads} heads, dk ${a.linearKeyHeadDim}, dv ${a.linearValueHeadDim}) is not the compiled circuit's`);
  }
}

/**
 * Loads `contents` into the RAM's GDN state of `executor` (which runs `res`'s weights): every
 * value head of the RAM's key heads is overwritten with `ramStateRows` for the executor's
 * profile, so rows not in `contents` become unwritten (+0). Other layers and heads are untouched.
 */
export function applyRamContents(executor: Executor, res: RamHost, placement: RamStatePlacement, contents: RamContents): void {
  checkExecutor(executor, res);
  const rows = ramStateEntries(placement, contents, ramStateConfig(res, placement, executor.ctx.profile));
  for (const h of rows.heads) executor.setGdnStateEntries(rows.layer, h.valueHead, h.index, h.count, rows.hot);
}

const u32 = new Uint32Array(1);
const f32view = new Float32Array(u32.buffer);
function bitsOf(x: number): number {
  f32view[0] = x;
  return u32[0]!;
}

/**
 * Decodes the RAM's live GDN state in `executor` back into its occupied rows. Refused with
 * ChipcError `state.layout` (naming layer, value head, row and group) unless the state is exactly
 * a layout the write path produces: each row all +0 (unwritten) or, in every used value head of
 * every copy, exactly one entry per digit group equal to the profile's hot value and +0 elsewhere;
 * padding digits 0; field values within their ranges; all read-port copies equal; everything
 * outside the rows (state rows ≥ R, rows past the RAM, value heads past the word) +0.
 */
export function captureRamContents(executor: Executor, res: RamHost, placement: RamStatePlacement): Map<number, number[]> {
  checkExecutor(executor, res);
  const cfg = ramStateConfig(res, placement, executor.ctx.profile);
  const sh = gdnShape(cfg.model);
  checkPlacement(placement, sh);
  const { decl } = cfg;
  const lay = placement.lowering.layout;
  const G = lay.groupsPerValueHead;
  const R = lay.rowsPerKeyHead;
  const hotBits = bitsOf(storedHotValue(placement, cfg.profile));
  const totalGroups = lay.valueHeadsPerWord * G;
  const where = (vh: number, i: number) => `RAM "${decl.name}" (layer ${placement.layer}, value head ${vh}, state row ${i})`;
  const bad = (msg: string): never => fail('state.layout', msg);

  // Per row: the digits seen so far (from the first copy) and whether it is written.
  const rowDigits = new Map<number, (number | null)[]>();
  placement.lowering.roles.forEach((role, h) => {
    const keyHead = placement.keyHeads[h]!;
    for (let j = 0; j < sh.r; j++) {
      const vh = keyHead * sh.r + j;
      const { vi, first } = headRows(lay, role, j, sh.r);
      const S = executor.gdnStateCopy(placement.layer, vh);
      const U = new Uint32Array(S.buffer, S.byteOffset, S.length);
      for (let i = 0; i < sh.dk; i++) {
        const A = first + i;
        const live = vi < lay.valueHeadsPerWord && i < R && A < decl.rows;
        if (!live) {
          for (let c = 0; c < sh.dv; c++) {
            if (U[i * sh.dv + c] !== 0) bad(`${where(vh, i)}: entry ${c} is ${S[i * sh.dv + c]}, but this state row holds no RAM row and must be +0`);
          }
          continue;
        }
        const digits = (rowDigits.get(A) ?? rowDigits.set(A, new Array<number | null>(totalGroups).fill(null)).get(A))!;
        for (let gl = 0; gl < G; gl++) {
          let digit = -1;
          for (let d = 0; d < 4; d++) {
            const u = U[i * sh.dv + 4 * gl + d]!;
            if (u === 0) continue;
            if (u !== hotBits) bad(`${where(vh, i)} group ${gl}: entry ${d} is ${S[i * sh.dv + 4 * gl + d]}, neither +0 nor the hot value`);
            if (digit >= 0) bad(`${where(vh, i)} group ${gl}: two hot entries (${digit} and ${d})`);
            digit = d;
          }
          const g = vi * G + gl;
          const seen = digits[g];
          const got = digit < 0 ? null : digit;
          if (seen === null && role.port === 0) digits[g] = got;
          else if (seen !== got) {
            bad(`${where(vh, i)} group ${gl}: digit ${got ?? 'none'} differs from digit ${seen ?? 'none'} of the same row in ${role.port === 0 ? 'another value head' : 'read-port copy 0'}`);
          }
        }
      }
    }
  });

  const out = new Map<number, number[]>();
  for (const A of [...rowDigits.keys()].sort((a, b) => a - b)) {
    const digits = rowDigits.get(A)!;
    const written = digits.filter((d) => d !== null).length;
    if (written === 0) continue;
    if (written !== totalGroups) bad(`RAM "${decl.name}" row ${A}: ${written} of ${totalGroups} digit groups are written (a row is always written whole)`);
    const bits: number[] = [];
    for (const d of digits) bits.push(d! & 1, d! >> 1);
    for (let pos = lay.wordBits; pos < bits.length; pos++) {
      if (bits[pos] !== 0) bad(`RAM "${decl.name}" row ${A}: padding bit ${pos} of the word is 1`);
    }
    const values = decl.fields.map((fr, f) => {
      let x = 0;
      for (let j = 0; j < lay.fieldWidth[f]!; j++) x += bits[lay.fieldOffset[f]! + j]! * 2 ** j;
      if (x < fr.lo || x > fr.hi) bad(`RAM "${decl.name}" row ${A} field ${f}: value ${x} is outside [${fr.lo}, ${fr.hi}]`);
      return x;
    });
    out.set(A, values);
  }
  return out;
}
