/**
 * Shared CLI output conventions: every reporting command prints a human table (coloured with
 * chalk when stdout is a TTY) or, with `--json`, exactly one JSON document on stdout.
 * Exit codes (docs/cli.md): 0 success / identical, 1 "different" (diff) or a check failed,
 * 2 a ChipcError (bad input, named problem), 3 an internal bug.
 */
import chalk from 'chalk';
import { groupDigits } from '../../util/group-digits.ts';

export const EXIT_OK = 0;
export const EXIT_DIFFERENT = 1;
export const EXIT_ERROR = 2;
export const EXIT_BUG = 3;

export interface Out {
  json: boolean;
  /** Write a line for humans (suppressed in --json mode). */
  line(text?: string): void;
  /** Emit the JSON document (only in --json mode). */
  emit(doc: unknown): void;
}

export function makeOut(json: boolean, stream: NodeJS.WritableStream = process.stdout): Out {
  return {
    json,
    line(text = '') {
      if (!json) stream.write(text + '\n');
    },
    emit(doc) {
      if (json) stream.write(JSON.stringify(doc, jsonReplacer, 2) + '\n');
    },
  };
}

function jsonReplacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}

/** Render rows as an aligned text table; numbers are right-aligned. */
export function table(header: string[], rows: (string | number)[][]): string {
  const cells = [header, ...rows.map((r) => r.map((c) => (typeof c === 'number' ? fmtInt(c) : c)))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => visibleLength(String(r[i] ?? '')))));
  const numeric = header.map((_, i) => rows.length > 0 && rows.every((r) => typeof r[i] === 'number'));
  return cells
    .map((r, ri) =>
      r
        .map((c, i) => {
          const s = String(c ?? '');
          const pad = ' '.repeat(widths[i]! - visibleLength(s));
          const cell = numeric[i] ? pad + s : s + pad;
          return ri === 0 ? chalk.bold(cell) : cell;
        })
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

function visibleLength(s: string): number {
  // eslint-disable-next-line no-control-regex
  return s.replace(/\u001b\[[0-9;]*m/g, '').length;
}

export function fmtInt(n: number): string {
  return groupDigits(n);
}

export function fmtBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let u = 0;
  let v = n;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${n} B` : `${v.toFixed(2)} ${units[u]}`;
}

/** What a command's action returns: its exit status. */
export type CommandResult = Promise<number> | number;

/** Wraps a command's action so that its exit status reaches the CLI entry (src/cli/main.ts). */
export type Runner = (fn: () => CommandResult) => () => Promise<void>;
