/**
 * `chipc compile --svg`: a picture of the residual slot allocation over the sublayer timeline
 * (one row per slot, one bar per signal from the sublayer that writes it to the one that clears
 * it, labelled with the signal's name) above per-layer bars of heads and FFN units used against
 * the target's budget — the view a person wants when a circuit does not fit.
 */
import type { CompileResult } from '../compile.ts';

function esc(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}

/** A stable colour per IR node. */
function colour(node: number): string {
  const h = (node * 137.508) % 360;
  return `hsl(${h.toFixed(1)},55%,62%)`;
}

export function allocationSvg(res: CompileResult, budget: { units: number; gdnHeads: number; attnHeads: number }): string {
  const L = res.weights.config.numLayers;
  const subs = 2 * L + 1; // −1 … 2L−1
  const colW = 56;
  const rowH = 12;
  const left = 64;
  const top = 40;
  const slots = res.packing.slotsUsed;
  const chartH = slots * rowH;
  const barTop = top + chartH + 40;
  const barH = 80;
  const width = left + subs * colW + 20;
  const height = barTop + barH + 50;
  const x = (s: number) => left + (s + 1) * colW;
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="monospace" font-size="9">`);
  out.push(`<rect width="100%" height="100%" fill="white"/>`);
  out.push(`<text x="${left}" y="16" font-size="12">${esc(res.ir.name)}: ${slots} slots (live max ${res.packing.liveMax}), hidden ${res.frame.hidden}, ${L} layers</text>`);
  for (let s = -1; s < 2 * L; s++) {
    const label = s === -1 ? 'emb' : `L${Math.floor(s / 2)}${s % 2 === 0 ? (res.weights.config.layerTypes[Math.floor(s / 2)] === 'full_attention' ? ' attn' : ' gdn') : ' ffn'}`;
    out.push(`<text x="${x(s) + 2}" y="${top - 6}">${esc(label)}</text>`);
    out.push(`<line x1="${x(s)}" y1="${top}" x2="${x(s)}" y2="${top + chartH}" stroke="#ddd"/>`);
  }
  for (let k = 0; k < slots; k++) out.push(`<text x="4" y="${top + k * rowH + 9}">slot ${k}</text>`);
  for (const sig of res.signals) {
    const end = Math.min(sig.end, 2 * L - 1);
    const x0 = x(sig.birth);
    const x1 = x(end) + colW;
    const y = top + sig.slot * rowH;
    out.push(`<rect x="${x0 + 1}" y="${y + 1}" width="${Math.max(2, x1 - x0 - 2)}" height="${rowH - 2}" fill="${colour(sig.node)}"><title>${esc(sig.name)} [${sig.birth}, ${sig.end}]</title></rect>`);
    out.push(`<text x="${x0 + 3}" y="${y + 9}">${esc(sig.name.length > 14 ? sig.name.slice(0, 13) + '…' : sig.name)}</text>`);
  }
  out.push(`<text x="${left}" y="${barTop - 8}" font-size="11">per layer: FFN units / ${budget.units} (blue), heads / budget (orange)</text>`);
  res.layers.forEach((l, i) => {
    const bx = x(2 * i);
    const uh = (l.units / budget.units) * barH;
    const hb = l.type === 'full_attention' ? budget.attnHeads : budget.gdnHeads;
    const hh = hb > 0 ? (l.heads / hb) * barH : 0;
    out.push(`<rect x="${bx + 4}" y="${barTop + barH - uh}" width="${colW - 12}" height="${uh}" fill="#4a7fd4"><title>layer ${i}: ${l.units} units</title></rect>`);
    out.push(`<rect x="${bx + colW + 4}" y="${barTop + barH - hh}" width="${colW - 12}" height="${hh}" fill="#e8913a"><title>layer ${i}: ${l.heads} heads</title></rect>`);
    out.push(`<text x="${bx + 4}" y="${barTop + barH + 12}">${l.units}u ${l.heads}h</text>`);
  });
  out.push(`<line x1="${left}" y1="${barTop}" x2="${width - 20}" y2="${barTop}" stroke="#c00" stroke-dasharray="3,3"/>`);
  out.push('</svg>');
  return out.join('\n') + '\n';
}
