/**
 * Progress reporting of checkpoint writes: writeCheckpoint's onProgress (monotone byte counts
 * that end at the shards' size on disk, no effect on the bytes written), the CLI reporter
 * (src/cli/support/progress.ts: parseable, throttled non-TTY lines; a throttled TTY bar that is cleared)
 * and `chipc compile -o` with and without progress.
 */
import * as crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { denseSource, sparseSource, writeCheckpoint, zerosSource } from '../src/safetensors/writer.ts';
import type { TensorSource, WriteProgress } from '../src/safetensors/types.ts';
import { makeProgressReporter, parseProgressLine, type ProgressStream } from '../src/cli/support/progress.ts';
import { cli } from './helpers/cli.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-emit-progress-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A handful of tensors of mixed dtypes and sizes (fresh sources each call: a source is iterated once per write). */
function sources(): TensorSource[] {
  const ramp = new Float32Array(3000).map((_, i) => (i % 7) - 3);
  return [
    denseSource('a.dense', 'F32', [30, 100], ramp),
    zerosSource('b.zeros', 'BF16', [1000, 700]), // 1.4 MB: several 1 MiB chunks
    sparseSource('c.sparse', 'BF16', [512, 512], [0, 5, 262143], new Float32Array([1, -2, 0.5])),
    denseSource('d.small', 'F32', [4], new Float32Array([1, 2, 3, 4])),
    zerosSource('e.empty', 'F32', [0, 8]),
  ];
}

function sha256Dir(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of fs.readdirSync(dir).sort()) out[f] = crypto.createHash('sha256').update(fs.readFileSync(path.join(dir, f))).digest('hex');
  return out;
}

describe('writeCheckpoint onProgress', () => {
  const withDir = path.join(tmp, 'with');
  const withoutDir = path.join(tmp, 'without');
  const events: WriteProgress[] = [];
  // 1 MB shards: the zeros tensor gets a shard of its own, so there are several shards.
  const res = writeCheckpoint(withDir, sources(), { maxShardSize: 1_000_000, onProgress: (p) => events.push({ ...p }) });
  writeCheckpoint(withoutDir, sources(), { maxShardSize: 1_000_000 });
  const shardFiles = res.files.filter((f) => f.endsWith('.safetensors'));
  const onDisk = shardFiles.reduce((s, f) => s + fs.statSync(path.join(withDir, f)).size, 0);

  it('reports monotone byte counts that end at the shards\' size on disk, then done once', () => {
    expect(shardFiles.length).toBeGreaterThan(1);
    expect(events.length).toBeGreaterThan(shardFiles.length);
    for (const e of events) expect(e.totalBytes).toBe(onDisk);
    for (let i = 1; i < events.length; i++) {
      expect(events[i]!.bytesWritten).toBeGreaterThanOrEqual(events[i - 1]!.bytesWritten);
      expect(events[i]!.shard).toBeGreaterThanOrEqual(events[i - 1]!.shard);
    }
    expect(events.filter((e) => e.done)).toHaveLength(1);
    const last = events[events.length - 1]!;
    expect(last.done).toBe(true);
    expect(last.bytesWritten).toBe(onDisk);
    expect(events[events.length - 2]!.bytesWritten).toBe(onDisk);
    expect(events.every((e) => e.bytesWritten <= e.totalBytes && e.shards === shardFiles.length)).toBe(true);
  });

  it('names each tensor with the shard file that holds it (weight map)', () => {
    for (const e of events) {
      expect(e.file).toBe(shardFiles[e.shard - 1]);
      if (e.tensor !== null) expect(res.weightMap[e.tensor]).toBe(e.file);
    }
    // Every non-empty tensor is reported at least once.
    const seen = new Set(events.map((e) => e.tensor));
    for (const n of ['a.dense', 'b.zeros', 'c.sparse', 'd.small']) expect(seen.has(n)).toBe(true);
  });

  it('per-shard increments add up to each shard file\'s size', () => {
    const perShard = new Map<number, number>();
    let prev = 0;
    for (const e of events.filter((x) => !x.done)) {
      perShard.set(e.shard, (perShard.get(e.shard) ?? 0) + e.bytesWritten - prev);
      prev = e.bytesWritten;
    }
    shardFiles.forEach((f, i) => expect(perShard.get(i + 1)).toBe(fs.statSync(path.join(withDir, f)).size));
  });

  it('does not change a byte of any file', () => {
    expect(sha256Dir(withDir)).toEqual(sha256Dir(withoutDir));
  });

  it('a single-file checkpoint reports too, ending at the file size', () => {
    const dir = path.join(tmp, 'single');
    const ev: WriteProgress[] = [];
    const r = writeCheckpoint(dir, sources(), { onProgress: (p) => ev.push({ ...p }) });
    expect(r.files).toEqual(['model.safetensors']);
    const size = fs.statSync(path.join(dir, 'model.safetensors')).size;
    expect(ev[ev.length - 1]).toMatchObject({ bytesWritten: size, totalBytes: size, shard: 1, shards: 1, done: true });
  });

  it('reports no done event when the write fails', () => {
    const ev: WriteProgress[] = [];
    const bad: TensorSource = { name: 'bad', dtype: 'F32', shape: [4], *chunks() { yield new Uint8Array(8); } };
    expect(() => writeCheckpoint(path.join(tmp, 'bad'), [bad], { onProgress: (p) => ev.push({ ...p }) })).toThrow(/needs 16/);
    expect(ev.some((e) => e.done)).toBe(false);
    expect(fs.existsSync(path.join(tmp, 'bad'))).toBe(false);
  });
});

/** A stream that records what is written. */
function recorder(isTTY: boolean): ProgressStream & { text: string } {
  const s = { text: '', isTTY, columns: 100, write(t: string) { s.text += t; return true; } };
  return s;
}

/** Feeds `n` evenly spaced updates of a write of `total` bytes, the clock advancing `stepMs` per update. */
function feed(rep: ReturnType<typeof makeProgressReporter>, clock: { t: number }, total: number, n: number, stepMs: number): void {
  for (let i = 1; i <= n; i++) {
    clock.t += stepMs;
    const written = Math.round((total * i) / n);
    rep.update({ bytesWritten: written, totalBytes: total, shard: i <= n / 2 ? 1 : 2, shards: 2, file: 'f', tensor: 't', done: false });
  }
  clock.t += stepMs;
  rep.update({ bytesWritten: total, totalBytes: total, shard: 2, shards: 2, file: 'f', tensor: null, done: true });
  rep.finish();
}

describe('progress reporter', () => {
  it('non-TTY: parseable lines, monotone, ending at 100 %, at most one per 10 % when the clock is fast', () => {
    const s = recorder(false);
    const clock = { t: 0 };
    const total = 9_876_543;
    feed(makeProgressReporter({ stream: s, now: () => clock.t }), clock, total, 1000, 1); // 1 s in all: no time-based lines
    const lines = s.text.split('\n').filter((l) => l !== '');
    const parsed = lines.map((l) => parseProgressLine(l));
    expect(parsed.every((p) => p !== null)).toBe(true);
    // the first update, one per decile crossed (10 %, …, 90 %), and the complete one
    expect(lines.length).toBeLessThanOrEqual(11);
    expect(lines.length).toBeGreaterThanOrEqual(10);
    for (let i = 1; i < parsed.length; i++) expect(parsed[i]!.bytesWritten).toBeGreaterThan(parsed[i - 1]!.bytesWritten);
    const last = parsed[parsed.length - 1]!;
    expect(last).toEqual({ bytesWritten: total, totalBytes: total, percent: 100, shard: 2, shards: 2 });
    for (const p of parsed) {
      // percent is written / total rounded down to 0.1 (recomputed here in float64)
      expect(p!.percent).toBe(Math.floor((p!.bytesWritten * 1000) / total) / 10);
    }
    expect(s.text).not.toContain('\r');
  });

  it('non-TTY: a slow write gets a line per interval, not one per update', () => {
    const s = recorder(false);
    const clock = { t: 0 };
    // 100 updates over 100 s, all inside the first 10 %: lines only by time (every 5 s) plus the end.
    const rep = makeProgressReporter({ stream: s, now: () => clock.t });
    for (let i = 1; i <= 100; i++) {
      clock.t += 1000;
      rep.update({ bytesWritten: i, totalBytes: 10_000, shard: 1, shards: 1, file: 'f', tensor: 't', done: false });
    }
    const lines = s.text.split('\n').filter((l) => l !== '');
    expect(lines.length).toBe(20); // t = 1 s, 6 s, 11 s, …, 96 s
    expect(lines.every((l) => parseProgressLine(l) !== null)).toBe(true);
    expect(parseProgressLine('progress 12/34 bytes 35.2% shard 1/1 extra')).toBeNull();
  });

  it('TTY: redraws in place at most every 100 ms and clears the line at the end', () => {
    const s = recorder(true);
    const clock = { t: 0 };
    feed(makeProgressReporter({ stream: s, now: () => clock.t }), clock, 5_000_000, 1000, 1); // 1 s of updates
    const draws = s.text.split('\r').filter((x) => x !== '');
    // ≤ 1 draw per 100 ms over ~1 s, plus the clear
    expect(draws.length).toBeLessThanOrEqual(12);
    expect(draws.length).toBeGreaterThanOrEqual(5);
    expect(s.text.endsWith('\r\u001b[K')).toBe(true);
    expect(s.text).not.toContain('\n');
    expect(draws[0]).toMatch(/%.*B\/s ETA/);
  });
});

describe('chipc compile -o with progress', () => {
  it('non-TTY stderr gets parseable progress lines; --no-progress and --json give none; files are identical', async () => {
    const desc = Object.getOwnPropertyDescriptor(process.stderr, 'isTTY');
    Object.defineProperty(process.stderr, 'isTTY', { value: false, configurable: true, writable: true });
    try {
      const a = path.join(tmp, 'cli-a');
      const b = path.join(tmp, 'cli-b');
      const c = path.join(tmp, 'cli-c');
      const ra = await cli('compile', 'circuits/examples/adder.ts', '--target', 'tiny', '-o', a);
      expect(ra.code).toBe(0);
      const lines = ra.err.split('\n').filter((l) => l !== '');
      expect(lines.length).toBeGreaterThan(0);
      const parsed = lines.map(parseProgressLine);
      expect(parsed.every((p) => p !== null)).toBe(true);
      const size = fs.statSync(path.join(a, 'model.safetensors')).size;
      expect(parsed[parsed.length - 1]).toMatchObject({ bytesWritten: size, totalBytes: size, percent: 100 });
      const rb = await cli('compile', 'circuits/examples/adder.ts', '--target', 'tiny', '-o', b, '--no-progress');
      expect(rb.code).toBe(0);
      expect(rb.err).toBe('');
      const rc = await cli('compile', 'circuits/examples/adder.ts', '--target', 'tiny', '-o', c, '--json');
      expect(rc.code).toBe(0);
      expect(rc.err).toBe('');
      expect(JSON.parse(rc.out).files).toContain('model.safetensors');
      expect(sha256Dir(a)).toEqual(sha256Dir(b));
      expect(sha256Dir(a)).toEqual(sha256Dir(c));
    } finally {
      if (desc) Object.defineProperty(process.stderr, 'isTTY', desc);
      else delete (process.stderr as { isTTY?: boolean }).isTTY;
    }
  });
});
