/**
 * `.chip` everywhere a checkpoint is (src/chipfile/from-sources.ts, open.ts; docs/chip-file.md):
 * `chipc compile --chip` writes the `.chip` straight from the compiled weights, and it equals
 * byte for byte `chipc compact` of the directory `chipc compile -o` writes (f32 and bf16, one
 * file and sharded), and expands to that directory byte for byte; `chipc exec`, `inspect` and
 * `diff` (both sides, --golden, --write-golden) give on a `.chip` what they give on the directory;
 * failed writes leave nothing behind; `--codec none` writes version 1 (= `compact --codec none`).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeChipFromSources } from '../src/chipfile/from-sources.ts';
import { isChipFile } from '../src/chipfile/read.ts';
import { denseSource } from '../src/safetensors/writer.ts';
import type { TensorSource } from '../src/safetensors/types.ts';
import { ChipcError } from '../src/util/errors.ts';
import { cli } from './helpers/cli.ts';
import { expectSameDir, readDir } from './helpers/dirs.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-chip-compile-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const CIRCUIT = 'circuits/examples/counter.ts';
const OTHER = 'circuits/examples/adder.ts';

async function ok(...args: string[]): Promise<string> {
  const r = await cli(...args);
  expect(r.code, `chipc ${args.join(' ')}: ${r.err}`).toBe(0);
  return r.out;
}

/** Compiles CIRCUIT to a directory and (separately) to a .chip with the same options; returns both paths. */
async function compileBoth(tag: string, circuit: string, extra: string[]): Promise<{ dir: string; chip: string }> {
  const dir = path.join(tmp, `${tag}-dir`);
  const chipDir = path.join(tmp, `${tag}-chiponly`);
  const chip = path.join(chipDir, 'model.chip');
  await ok('compile', circuit, '--target', 'tiny', '-o', dir, '--no-progress', ...extra);
  await ok('compile', circuit, '--target', 'tiny', '--chip', chip, '--no-progress', ...extra);
  // --chip alone writes the .chip and nothing else (no dense directory, no temporaries).
  expect(fs.readdirSync(chipDir)).toEqual(['model.chip']);
  return { dir, chip };
}

describe('chipc compile --chip', () => {
  for (const dtype of ['f32', 'bf16']) {
    it(`${dtype}: equals compact of the compiled directory and expands to it, one file and sharded`, async () => {
      const one = await compileBoth(`${dtype}-one`, CIRCUIT, ['--dtype', dtype]);
      expect(fs.readdirSync(one.dir).sort()).toEqual(['chipc-manifest.json', 'config.json', 'model.safetensors']);
      const dataBytes = fs.statSync(path.join(one.dir, 'model.safetensors')).size;
      // A shard limit of a quarter of the data gives several shards and an index.
      const sharded = await compileBoth(`${dtype}-sharded`, CIRCUIT, ['--dtype', dtype, '--max-shard-size', String(Math.floor(dataBytes / 4))]);
      const shardNames = fs.readdirSync(sharded.dir).filter((n) => n.endsWith('.safetensors'));
      expect(shardNames.length).toBeGreaterThan(2);
      expect(fs.existsSync(path.join(sharded.dir, 'model.safetensors.index.json'))).toBe(true);
      for (const [tag, { dir, chip }] of [['one', one], ['sharded', sharded]] as const) {
        const compacted = path.join(tmp, `${dtype}-${tag}-compacted.chip`);
        await ok('compact', dir, '-o', compacted);
        expect(fs.readFileSync(chip).equals(fs.readFileSync(compacted)), `${dtype} ${tag}: compile --chip ≠ compact`).toBe(true);
        const back = path.join(tmp, `${dtype}-${tag}-expanded`);
        await ok('expand', chip, '-o', back);
        expectSameDir(dir, back);
      }
    });
  }

  it('--codec none writes version 1, equal to compact --codec none of the directory; the default is version 4', async () => {
    const { dir, chip } = await compileBoth('codec-none', CIRCUIT, ['--dtype', 'f32', '--codec', 'none']);
    const bytes = fs.readFileSync(chip);
    expect(bytes.readUInt32LE(8)).toBe(1);
    const compacted = path.join(tmp, 'codec-none-compacted.chip');
    await ok('compact', dir, '-o', compacted, '--codec', 'none');
    expect(bytes.equals(fs.readFileSync(compacted))).toBe(true);
    const back = path.join(tmp, 'codec-none-expanded');
    await ok('expand', chip, '-o', back);
    expectSameDir(dir, back);
    const br = path.join(tmp, 'codec-br.chip');
    await ok('compact', dir, '-o', br);
    expect(fs.readFileSync(br).readUInt32LE(8)).toBe(4);
    expect(fs.statSync(br).size).toBeLessThan(bytes.length);
    // --file-hashes: equal to compact --file-hashes of the directory, and unlike the default
    const hashedChip = path.join(tmp, 'codec-br-hashed.chip');
    await ok('compile', CIRCUIT, '--target', 'tiny', '--dtype', 'f32', '--chip', hashedChip, '--file-hashes', '--no-progress');
    const hashedCompact = path.join(tmp, 'codec-br-hashed-compacted.chip');
    await ok('compact', dir, '-o', hashedCompact, '--file-hashes');
    expect(fs.readFileSync(hashedChip).equals(fs.readFileSync(hashedCompact))).toBe(true);
    expect(fs.readFileSync(hashedChip).equals(fs.readFileSync(br))).toBe(false);
    const bad = await cli('compile', CIRCUIT, '--target', 'tiny', '--chip', path.join(tmp, 'x.chip'), '--codec', 'gz', '--no-progress');
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--codec must be br or none');
  });

  it('-o and --chip together write both, consistently; an existing .chip is kept unless --overwrite', async () => {
    const dir = path.join(tmp, 'both-dir');
    const chip = path.join(tmp, 'both.chip');
    const r = await cli('compile', CIRCUIT, '--target', 'tiny', '-o', dir, '--chip', chip, '--json');
    expect(r.code, r.err).toBe(0);
    const doc = JSON.parse(r.out) as { chip: { path: string; bytes: number; denseBytes: number } };
    expect(doc.chip.bytes).toBe(fs.statSync(chip).size);
    expect(doc.chip.denseBytes).toBe([...readDir(dir).values()].reduce((s, b) => s + b.length, 0));
    const back = path.join(tmp, 'both-expanded');
    await ok('expand', chip, '-o', back);
    expectSameDir(dir, back);

    const before = fs.readFileSync(chip);
    const again = await cli('compile', OTHER, '--target', 'tiny', '--chip', chip, '--no-progress');
    expect(again.code).toBe(2);
    expect(again.err).toMatch(/exists/);
    expect(fs.readFileSync(chip).equals(before)).toBe(true);
    await ok('compile', OTHER, '--target', 'tiny', '--chip', chip, '--overwrite', '--no-progress');
    expect(fs.readFileSync(chip).equals(before)).toBe(false);
    expect(fs.readdirSync(tmp).filter((n) => n.startsWith('.both.chip'))).toEqual([]);
  });

  it('refuses a bad --max-shard-size', async () => {
    for (const bad of ['0', '-5', '1.5', '1e3', '0x10', 'x']) {
      const r = await cli('compile', CIRCUIT, '--target', 'tiny', '--chip', path.join(tmp, 'bad.chip'), '--max-shard-size', bad);
      expect(r.code, bad).toBe(2);
      expect(r.err).toMatch(/--max-shard-size/);
    }
    expect(fs.existsSync(path.join(tmp, 'bad.chip'))).toBe(false);
  });

  it('writeChipFromSources: a source of the wrong size is refused and leaves no file or temporary', () => {
    const d = path.join(tmp, 'bad-source');
    fs.mkdirSync(d);
    const good = denseSource('a', 'F32', [4], Float32Array.of(1, 0, 0, 2));
    const short: TensorSource = { name: 'b', dtype: 'F32', shape: [4], *chunks() { yield new Uint8Array(12); } };
    const long: TensorSource = { name: 'b', dtype: 'F32', shape: [1], *chunks() { yield new Uint8Array(8); } };
    // sparseChunks: zero runs as counts, checked as chunks are (and only there)
    const sparse = (...parts: (Uint8Array | number)[]): TensorSource =>
      ({ name: 'b', dtype: 'F32', shape: [4], *chunks() { yield new Uint8Array(16); }, *sparseChunks() { yield* parts; } });
    const numberChunk = { name: 'b', dtype: 'F32', shape: [4], *chunks() { yield 16; } } as unknown as TensorSource;
    for (const [s, code] of [
      [short, 'safetensors.source-size'], [long, 'safetensors.source-size'], [sparse(8, new Uint8Array(4), 8), 'safetensors.source-size'],
      [sparse(12), 'safetensors.source-size'], [sparse(-4, 20), 'safetensors.source-chunk'], [sparse(1.5), 'safetensors.source-chunk'],
      [numberChunk, 'safetensors.source-chunk'],
    ] as const) {
      let err: unknown;
      try {
        writeChipFromSources(path.join(d, 'x.chip'), [good, s]);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ChipcError);
      expect((err as ChipcError).code).toBe(code);
      expect(fs.readdirSync(d)).toEqual([]);
    }
    // a sparse source's counts are its zeros: the same file as the dense source
    const dense = path.join(tmp, 'sparse-vs-dense-a.chip');
    const viaCounts = path.join(tmp, 'sparse-vs-dense-b.chip');
    writeChipFromSources(dense, [good, denseSource('b', 'F32', [4], Float32Array.of(0, 0, 3, 0))], { fileHashes: true });
    writeChipFromSources(viaCounts, [good, sparse(8, new Uint8Array(Float32Array.of(3).buffer), 4)], { fileHashes: true });
    expect(fs.readFileSync(viaCounts).equals(fs.readFileSync(dense))).toBe(true);
    writeChipFromSources(path.join(d, 'x.chip'), [good]);
    expect(isChipFile(path.join(d, 'x.chip'))).toBe(true);
    expect(fs.readdirSync(d)).toEqual(['x.chip']);
  });
});

describe('exec, inspect and diff take a .chip wherever they take a directory', () => {
  let dir = '';
  let chip = '';
  let otherChip = '';
  const setup = async (): Promise<void> => {
    if (chip !== '') return;
    ({ dir, chip } = await compileBoth('uses', CIRCUIT, ['--dtype', 'bf16']));
    otherChip = path.join(tmp, 'uses-other.chip');
    await ok('compile', CIRCUIT, '--target', 'tiny', '--dtype', 'f32', '--chip', otherChip, '--no-progress');
  };

  it('exec: same logits (bit patterns) and greedy tokens from the .chip as from the directory', async () => {
    await setup();
    const args = ['--tokens', '1,2,3', '--generate', '3', '--top', '8', '--json'];
    const a = JSON.parse(await ok('exec', dir, ...args)) as { top: unknown; generated: number[] };
    const b = JSON.parse(await ok('exec', chip, ...args)) as { top: unknown; generated: number[] };
    expect(b.top).toEqual(a.top);
    expect(b.generated).toEqual(a.generated);
    expect(b.generated.length).toBe(3);
    // The config comes from the .chip's stored config.json: a token past its vocabulary is refused.
    const vocab = (JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')) as { vocab_size?: number; text_config?: { vocab_size: number } });
    const v = vocab.text_config?.vocab_size ?? vocab.vocab_size!;
    expect((await cli('exec', chip, '--tokens', String(v))).code).toBe(2);
    expect((await cli('exec', chip, '--tokens', String(v - 1))).code).toBe(0);
  });

  it('inspect: the same tensors, totals and per-layer summary (layer types from the stored config.json)', async () => {
    await setup();
    const a = JSON.parse(await ok('inspect', dir, '--json')) as Record<string, unknown> & { layers: { type: string | null }[] };
    const b = JSON.parse(await ok('inspect', chip, '--json')) as Record<string, unknown> & { layers: { type: string | null }[] };
    expect(b.path).toBe(chip);
    for (const k of ['metadata', 'totals', 'tensors', 'layers']) expect(b[k], k).toEqual(a[k]);
    expect(b.layers.length).toBeGreaterThan(0);
    expect(b.layers.every((l) => l.type !== null)).toBe(true);
  });

  it('diff: directory vs .chip identical (config.json too), .chip vs .chip of another dtype different', async () => {
    await setup();
    for (const [x, y] of [[dir, chip], [chip, dir], [chip, chip]]) {
      const r = await cli('diff', x!, y!, '--json');
      expect(r.code, r.err).toBe(0);
      const d = JSON.parse(r.out) as { identical: boolean; config: { status: string } | null };
      expect(d.identical).toBe(true);
      expect(d.config?.status).toBe('identical');
    }
    const r = await cli('diff', chip, otherChip, '--json');
    expect(r.code).toBe(1);
    const d = JSON.parse(r.out) as { tensors: { status: string }[]; config: { status: string; keys?: string[] } };
    expect(d.tensors.every((t) => t.status === 'dtype')).toBe(true);
    expect(d.config.status).toBe('different');
    expect(d.config.keys).toContain('dtype');
  });

  it('diff --write-golden from a .chip checks the directory and the .chip; another checkpoint fails', async () => {
    await setup();
    const g1 = path.join(tmp, 'golden-chip.json');
    const g2 = path.join(tmp, 'golden-dir.json');
    await ok('diff', chip, '--write-golden', g1);
    await ok('diff', dir, '--write-golden', g2);
    expect(fs.readFileSync(g1).equals(fs.readFileSync(g2))).toBe(true);
    const golden = JSON.parse(fs.readFileSync(g1, 'utf8')) as { config: { sha256: string } | null };
    expect(golden.config).not.toBeNull();
    for (const p of [dir, chip]) {
      const r = await cli('diff', p, '--golden', g1, '--json');
      expect(r.code, r.err).toBe(0);
      expect((JSON.parse(r.out) as { config: { status: string } }).config.status).toBe('identical');
    }
    expect((await cli('diff', otherChip, '--golden', g1)).code).toBe(1);
  });

  it('a corrupted .chip is an error (exit 2) for exec, inspect and diff', async () => {
    await setup();
    const bad = path.join(tmp, 'corrupt.chip');
    const bytes = fs.readFileSync(chip);
    bytes[bytes.length - 40] ^= 0xff;
    fs.writeFileSync(bad, bytes);
    for (const args of [['exec', bad, '--tokens', '1'], ['inspect', bad], ['diff', bad, dir], ['diff', bad, '--write-golden', path.join(tmp, 'never.json')]]) {
      const r = await cli(...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.err).toMatch(/checksum/i);
    }
    expect(fs.existsSync(path.join(tmp, 'never.json'))).toBe(false);
  });
});
