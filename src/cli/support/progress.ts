/**
 * Progress reporting for long writes (checkpoint emission): a reporter that takes WriteProgress
 * updates (src/safetensors/types.ts) and draws either
 * - on a TTY: one line redrawn in place at most every `ttyIntervalMs` (default 100 ms) with a bar,
 *   percentage, bytes, rate and ETA, cleared when the write is done; or
 * - otherwise: quiet, parseable lines `progress WRITTEN/TOTAL bytes PCT% shard I/N`, at most one
 *   per `lineIntervalMs` (default 5 s) unless another 10 % has been crossed, and always a last
 *   line at 100 %.
 * The writer calls back synchronously (the event loop is blocked meanwhile), so throttling is by
 * the clock at each call, never by timers.
 */
import type { WriteProgress } from '../../safetensors/types.ts';
import { fmtBytes } from './output.ts';

/** The part of a stream the reporter uses (process.stderr fits). */
export interface ProgressStream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface ProgressReporterOptions {
  stream?: ProgressStream;
  /** Draw the TTY bar (default: stream.isTTY). */
  tty?: boolean;
  /** Milliseconds clock (default performance.now); tests pass a fake one. */
  now?: () => number;
  ttyIntervalMs?: number;
  lineIntervalMs?: number;
  /** Word shown before the bar on a TTY (default "writing"). */
  label?: string;
}

export interface ProgressReporter {
  update(p: WriteProgress): void;
  /** Clears the TTY line if one is drawn (idempotent); call on errors too. */
  finish(): void;
}

/** One parsed non-TTY progress line. */
export interface ProgressLine {
  bytesWritten: number;
  totalBytes: number;
  percent: number;
  shard: number;
  shards: number;
}

const LINE_RE = /^progress (\d+)\/(\d+) bytes (\d+(?:\.\d)?)% shard (\d+)\/(\d+)$/;

/** Parses a line written by the non-TTY reporter; null when the line is not one. */
export function parseProgressLine(line: string): ProgressLine | null {
  const m = LINE_RE.exec(line);
  if (!m) return null;
  return {
    bytesWritten: Number(m[1]), totalBytes: Number(m[2]), percent: Number(m[3]), shard: Number(m[4]), shards: Number(m[5]),
  };
}

/** written/total as a percentage with one decimal, rounded down (so 100.0 only when complete). */
function percentOf(written: number, total: number): number {
  if (total <= 0) return 100;
  return Math.floor((written / total) * 1000) / 10;
}

/** Seconds as `1h02m`, `3m05s` or `12s`. */
export function fmtDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '?';
  const s = Math.round(seconds);
  if (s >= 3600) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  if (s >= 60) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${s}s`;
}

export function makeProgressReporter(opts: ProgressReporterOptions = {}): ProgressReporter {
  const stream = opts.stream ?? process.stderr;
  const tty = opts.tty ?? Boolean(stream.isTTY);
  const now = opts.now ?? (() => performance.now());
  const ttyInterval = opts.ttyIntervalMs ?? 100;
  const lineInterval = opts.lineIntervalMs ?? 5000;
  const label = opts.label ?? 'writing';
  const start = now();
  let lastDraw = -Infinity;
  let lastDecile = 0;
  let drawn = false; // a TTY line is on screen
  let finished = false;

  const drawTty = (p: WriteProgress, t: number): void => {
    const pct = percentOf(p.bytesWritten, p.totalBytes);
    const elapsed = (t - start) / 1000;
    const rate = elapsed > 0 ? p.bytesWritten / elapsed : 0;
    const eta = rate > 0 ? (p.totalBytes - p.bytesWritten) / rate : Infinity;
    const tail = ` ${pct.toFixed(1).padStart(5)}% ${fmtBytes(p.bytesWritten)}/${fmtBytes(p.totalBytes)} ` +
      `${fmtBytes(Math.round(rate))}/s ETA ${fmtDuration(eta)}` + (p.shards > 1 ? ` shard ${p.shard}/${p.shards}` : '');
    const columns = stream.columns ?? 80;
    const barWidth = Math.max(10, Math.min(40, columns - label.length - tail.length - 4));
    const fill = Math.min(barWidth, Math.floor((pct / 100) * barWidth));
    const text = `${label} [${'#'.repeat(fill)}${'.'.repeat(barWidth - fill)}]${tail}`;
    stream.write(`\r${text.slice(0, Math.max(1, columns - 1))}\u001b[K`);
    drawn = true;
  };

  const finish = (): void => {
    if (finished) return;
    finished = true;
    if (drawn) stream.write('\r\u001b[K');
    drawn = false;
  };

  return {
    update(p) {
      if (finished) return;
      const t = now();
      if (tty) {
        if (p.done) { finish(); return; }
        if (t - lastDraw >= ttyInterval) {
          lastDraw = t;
          drawTty(p, t);
        }
        return;
      }
      const complete = p.done || p.bytesWritten >= p.totalBytes;
      const decile = Math.floor(percentOf(p.bytesWritten, p.totalBytes) / 10);
      if (complete || t - lastDraw >= lineInterval || decile > lastDecile) {
        if (complete && finished) return;
        lastDraw = t;
        lastDecile = decile;
        stream.write(`progress ${p.bytesWritten}/${p.totalBytes} bytes ${percentOf(p.bytesWritten, p.totalBytes).toFixed(1)}% shard ${p.shard}/${p.shards}\n`);
        if (complete) finished = true;
      }
    },
    finish,
  };
}
