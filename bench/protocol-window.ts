/**
 * Protocol window what-if: the tokens per instruction of the bundled firmware demos if the
 * instruction window had W slots instead of 4, re-priced from the golden token streams of the
 * current protocol (riscv/golden-trace.ts). `E(j, v)` has 2^16 ids, so W slots leave its payload
 * p = 16 − log2(W) bits: W = 4 is today's protocol (p = 14), W = 8 gives p = 13, W = 16 gives
 * p = 12. Nothing else of the protocol changes in the model.
 *
 * The model, per covered instruction (its tokens in the golden stream):
 *  - a jump, a taken branch, HALT or TRAP costs what it costs now, and the next instruction sits in
 *    slot 0 (J re-bases the window);
 *  - a sequential instruction sits in slot j. Its own tokens (division steps, a store's words,
 *    bn.mac's words, a word-crossing load's prefix) are kept. A result committed by `E`/`K` is
 *    re-priced by the p-bit forms:
 *    - narrow (1 token) for v in [−2^(p−2), 2^(p−1));
 *    - `D` + `E` (2) for a value of 16 + p bits whose high part is outside the pointer quadrant
 *      (v outside [−2^(p+15), −2^(p+14))), or a pointer (top nibble 1000) whose bits 16… fit p − 2
 *      bits;
 *    - otherwise `D`, `H`, `N` (3);
 *  - at the window end (j = W − 1) an instruction whose last token commits through `E`/`K`, or an
 *    `OUT`, pays one more token, the `J(PC + 4)`; the next instruction sits in slot 0.
 * With W = 4 the model reproduces every stream's token count exactly (the script checks it and
 * fails otherwise), so the other rows differ from the protocol only by the window.
 * The model ignores the ids: `N(j)` needs W ids and `OUT(j, b)` 256·W, and at W = 8 the 1,024
 * more that `OUT` needs exceed the alphabet's 115 spare ids.
 *
 * Run: npx tsx bench/protocol-window.ts [--windows 4,8,16] [--json]
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { goldenTokens } from '../riscv/golden-trace.ts';
import { decodeToken, wideValue, type Token } from '../riscv/protocol.ts';
import { table } from '../src/cli/support/output.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** The firmware demos are built for a 32 KiB RAM at 0x80000000 (firmware/expected.ts). */
const MEM = { base: 0x80000000, size: 32 * 1024 };

let windows = [4, 8, 16];
let json = false;
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i]!;
  if (a === '--windows') {
    windows = (argv[++i] ?? '').split(',').map(Number);
    if (windows.length === 0 || windows.some((w) => ![2, 4, 8, 16, 32].includes(w))) {
      console.error('protocol-window: --windows takes powers of two from 2 to 32, comma-separated (e.g. 4,8,16)');
      process.exit(2);
    }
  } else if (a === '--json') json = true;
  else {
    console.error(`protocol-window: unknown argument ${a} (usage: npx tsx bench/protocol-window.ts [--windows 4,8,16] [--json])`);
    process.exit(2);
  }
}

/** The tokens a committed result v takes with a p-bit E payload (the model above). */
function resultTokens(v: number, p: number): number {
  const s = v | 0;
  if (s >= -(2 ** (p - 2)) && s < 2 ** (p - 1)) return 1;
  if ((s >>> 28) === 0x8) return ((s >>> 16) & 0xfff) < 2 ** (p - 2) ? 2 : 3;
  const fits = s >= -(2 ** (p + 15)) && s < 2 ** (p + 15);
  const quadrant = s >= -(2 ** (p + 15)) && s < -(2 ** (p + 14));
  return fits && !quadrant ? 2 : 3;
}

interface Priced { instructions: number; tokens: number; actual: number }

/** Re-prices one program's golden stream for each window size. */
function price(file: string): Map<number, Priced> {
  const t = goldenTokens(fs.readFileSync(file), { mem: MEM });
  const groups: Token[][] = [];
  for (let i = 0; i < t.tokens.length; i++) {
    const k = t.tokenInstr[i]!;
    if (k >= 0) (groups[k] ??= []).push(decodeToken(t.tokens[i]!));
  }
  const out = new Map<number, Priced>();
  for (const W of windows) {
    const p = 16 - Math.log2(W);
    let j = 0;
    let tokens = 0;
    for (let i = 0; i < groups.length; i++) {
      const toks = groups[i]!;
      const last = toks[toks.length - 1]!;
      const sequential = i + 1 < groups.length ? t.instrPc[i + 1] === ((t.instrPc[i]! + 4) >>> 0) : last.kind !== 'J';
      if (!sequential || last.kind === 'HALT' || last.kind === 'TRAP') {
        tokens += toks.length;
        j = 0;
        continue;
      }
      // a sequential instruction: its tokens without a window-end J
      const core = last.kind === 'J' ? toks.slice(0, -1) : toks;
      const fin = core[core.length - 1];
      let cost: number;
      let commits = false;
      if (fin !== undefined && (fin.kind === 'E' || fin.kind === 'K')) {
        commits = true;
        const prev = core[core.length - 2];
        // D + E/K is the wide form (a division's last step ends with H, so its result's D is its
        // own); a word-crossing load's prefix D comes before it (D, D, E)
        const wide = prev !== undefined && prev.kind === 'D';
        const v = wide ? wideValue(fin.v, (prev as { v: number }).v) : fin.v;
        const own = core.length - (wide ? 2 : 1);
        const crossingLoad = wide && own > 0 && core[own - 1]!.kind === 'D';
        cost = own + (crossingLoad ? 2 : resultTokens(v, p));
      } else if (fin !== undefined && fin.kind === 'OUT') {
        commits = true;
        cost = core.length;
      } else if (fin !== undefined && fin.kind === 'H') cost = core.length + 1; // D, H and N (J at the window end)
      else cost = Math.max(1, core.length); // N, or the window-end J alone
      if (j === W - 1) {
        if (commits) cost++;
        j = 0;
      } else j++;
      tokens += cost;
    }
    out.set(W, { instructions: groups.length, tokens, actual: t.tokens.length - 2 });
  }
  return out;
}

const dir = path.join(root, 'fixtures', 'firmware');
const files = fs.readdirSync(dir).filter((f) => f.endsWith('.elf') && !f.endsWith('.linux.elf')).sort();
const results = files.map((f) => ({ name: f.replace(/\.elf$/, ''), priced: price(path.join(dir, f)) }));
if (windows.includes(4)) {
  for (const r of results) {
    const p = r.priced.get(4)!;
    if (p.tokens !== p.actual) {
      console.error(`protocol-window: the model gives ${r.name} ${p.tokens} tokens at W = 4, the golden stream has ${p.actual}`);
      process.exit(1);
    }
  }
}
const summary = windows.map((W) => {
  const per = results.map((r) => r.priced.get(W)!.tokens / r.priced.get(W)!.instructions);
  const allMean = per.reduce((a, b) => a + b, 0) / per.length;
  const without = results.map((r, i) => (r.name === 'bigfact' ? null : per[i]!)).filter((x): x is number => x !== null);
  return { window: W, payloadBits: 16 - Math.log2(W), meanAll: allMean, meanWithoutBigfact: without.reduce((a, b) => a + b, 0) / without.length, perProgram: Object.fromEntries(results.map((r, i) => [r.name, per[i]!])) };
});
if (json) console.log(JSON.stringify({ summary }));
else {
  console.log('tokens per instruction of the firmware demos with a W-slot window (E payload 16 − log2 W bits; W = 4 is the protocol)');
  console.log(table(['W', 'payload bits', 'mean, all', 'mean, without bigfact', ...results.map((r) => r.name)],
    summary.map((s) => [s.window, s.payloadBits, s.meanAll.toFixed(3), s.meanWithoutBigfact.toFixed(3), ...results.map((r) => s.perProgram[r.name]!.toFixed(3))])));
}
