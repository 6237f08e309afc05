/**
 * Store scripts (`chipc store batch`): store operations one per line, run in one chip session, so
 * the chip is compiled and the store file loaded once for all of them (docs/store.md).
 *
 *   put NAME CONTENT
 *   get NAME
 *   delete NAME
 *   list
 *
 * Blank lines and lines whose first non-blank character is `#` are skipped. Arguments are
 * separated by spaces or tabs; an argument is a run of non-blank characters or a JSON string
 * literal ("buy milk", "say \"hi\""), which may hold blanks. An argument is read as the single
 * commands read theirs (`tokenArgument`): comma-separated token ids ("" is the empty sequence), or
 * with text mode UTF-8 text, one token per byte. The whole script is parsed before anything runs;
 * a problem is a ChipcError `store.script` naming the script, the line and what is wrong.
 */
import { ChipcError } from '../util/errors.ts';
import type { StoreRequest } from './firmware.ts';

/** One operation of a script, with its 1-based line number. */
export interface ScriptOp {
  line: number;
  request: StoreRequest;
}

/**
 * A NAME or CONTENT argument as token ids: comma-separated non-negative integers (blank: none), or
 * with `text` the UTF-8 bytes of `s`. ChipcError `code` naming `what` for anything else.
 */
export function tokenArgument(s: string, text: boolean, what: string, code: string): number[] {
  if (text) return [...Buffer.from(s, 'utf8')];
  if (s.trim() === '') return [];
  return s.split(',').map((x) => {
    const v = Number(x.trim());
    if (x.trim() === '' || !/^\d+$/.test(x.trim()) || !Number.isSafeInteger(v)) {
      throw new ChipcError(code, `${what}: "${x}" is not a token id (use comma-separated non-negative integers, or --text)`);
    }
    return v;
  });
}

const ARITY = { put: 2, get: 1, delete: 1, list: 0 } as const;
type ScriptVerb = keyof typeof ARITY;
const ARG_NAMES: Record<ScriptVerb, string[]> = { put: ['NAME', 'CONTENT'], get: ['NAME'], delete: ['NAME'], list: [] };

function isBlank(ch: string): boolean {
  return ch === ' ' || ch === '\t' || ch === '\r';
}

/** A line's words: runs of non-blank characters and JSON string literals (decoded). */
function words(line: string, where: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < line.length) {
    if (isBlank(line[i]!)) { i++; continue; }
    if (line[i] === '"') {
      let j = i + 1;
      while (j < line.length && line[j] !== '"') j += line[j] === '\\' ? 2 : 1;
      if (j >= line.length) throw new ChipcError('store.script', `${where}: unterminated string (a quoted argument needs its closing ")`);
      let s: unknown;
      try {
        s = JSON.parse(line.slice(i, j + 1));
      } catch (e) {
        throw new ChipcError('store.script', `${where}: ${line.slice(i, j + 1)} is not a valid JSON string literal (${(e as Error).message})`, { cause: e });
      }
      if (j + 1 < line.length && !isBlank(line[j + 1]!)) throw new ChipcError('store.script', `${where}: a quoted argument must be followed by a blank or the end of the line`);
      out.push(s as string);
      i = j + 1;
      continue;
    }
    let j = i;
    while (j < line.length && !isBlank(line[j]!)) j++;
    const w = line.slice(i, j);
    if (w.includes('"')) throw new ChipcError('store.script', `${where}: stray quote in ${w} (quote a whole argument: "…")`);
    out.push(w);
    i = j;
  }
  return out;
}

/**
 * Parses a store script (module comment). `label` names the script in errors (a path, or
 * "stdin"); `text` reads arguments as UTF-8 text instead of token ids.
 */
export function parseStoreScript(src: string, opts: { text: boolean; label: string }): ScriptOp[] {
  const ops: ScriptOp[] = [];
  src.split('\n').forEach((raw, i) => {
    const where = `${opts.label}:${i + 1}`;
    const trimmed = raw.trim();
    if (trimmed === '' || trimmed.startsWith('#')) return;
    const [verb, ...args] = words(raw, where);
    if (!Object.hasOwn(ARITY, verb!)) {
      throw new ChipcError('store.script', `${where}: unknown operation "${verb}" (expected put, get, delete or list)`);
    }
    const v = verb as ScriptVerb;
    if (args.length !== ARITY[v]) {
      const usage = [v, ...ARG_NAMES[v]].join(' ');
      throw new ChipcError('store.script', `${where}: ${v} takes ${ARITY[v]} argument${ARITY[v] === 1 ? '' : 's'} (${usage}), got ${args.length}`);
    }
    const tok = (k: number) => tokenArgument(args[k]!, opts.text, `${where}: ${ARG_NAMES[v][k]}`, 'store.script');
    const request: StoreRequest =
      v === 'put' ? { op: 'put', name: tok(0), content: tok(1) } : v === 'list' ? { op: 'list' } : { op: v, name: tok(0) };
    ops.push({ line: i + 1, request });
  });
  return ops;
}
