/**
 * `chipc trace`: the loader prompt and the golden stream an outside engine (tools/hf_check.py)
 * checks a checkpoint against. The prompt must be the program's loader prompt (the one `chipc run
 * --load prompt` feeds, whose RAM state is tested bit-identical to the state file's) and the
 * expected tokens the golden emulator's stream after [BOS, J(entry)], ending with HALT — for the
 * generic chip's RAM sizes (default, or --code-size / --mem-size).
 */
import { MEM_LAYOUT } from '../riscv/chip-shape.ts';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from './helpers/cli.ts';
import { programOf } from '../src/chip/run.ts';
import { goldenTokens } from '../riscv/golden-trace.ts';
import { BOS_ID, PROTOCOL_VERSION, decodeToken, encodeToken } from '../riscv/protocol.ts';
import { CODE_BASE, VOCAB } from '../src/cpu/cpu.ts';

describe('chipc trace', () => {
  it('writes the loader prompt and the golden stream up to HALT; refuses bad input without leaving a file', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-trace-'));
    try {
      const elfPath = 'fixtures/isa/zba.elf';
      const out = path.join(dir, 'zba.trace.json');
      const r = await cli('trace', elfPath, '-o', out);
      expect(r.code).toBe(0);
      const doc = JSON.parse(fs.readFileSync(out, 'utf8'));
      const elf = fs.readFileSync(elfPath);
      // Without size options: the generic chip's RAMs, 16 KiB of code and 64 KiB of data.
      const prog = programOf(elf, { codeBytes: 16 * 1024, memBytes: 64 * 1024 });
      expect(doc).toMatchObject({ format: 'chipc-trace', version: 1, protocol: 'v9', codeBytes: 16 * 1024, memBytes: 64 * 1024, halted: true, trap: null });
      // the prompt: BOS … J(entry), the loader prompt of the image (with the configuration words and sp)
      expect(doc.prompt).toEqual(prog.loader);
      expect(doc.prompt[0]).toBe(BOS_ID);
      expect(doc.prompt[doc.prompt.length - 1]).toBe(encodeToken({ kind: 'J', w: (prog.entry - CODE_BASE) / 4 }));
      // the expected tokens: the golden stream after its 2-token prompt (fetch limited to the code RAM), ending with HALT(1) (tohost pass)
      const g = goldenTokens(elf, { mem: { size: prog.memBytes }, codeBytes: prog.codeBytes });
      expect(doc.expected).toEqual(Array.from(g.tokens.subarray(2)));
      expect(decodeToken(doc.expected[doc.expected.length - 1])).toEqual({ kind: 'HALT', code: doc.exitCode });
      expect(doc.instructions).toBe(g.summary.instructions);
      // --code-size / --mem-size: the prompt of a chip of those sizes (sp is the data RAM's top)
      const small = path.join(dir, 'small.json');
      expect((await cli('trace', elfPath, '-o', small, '--code-size', '2048', '--mem-size', '32768')).code).toBe(0);
      const docSmall = JSON.parse(fs.readFileSync(small, 'utf8'));
      const progSmall = programOf(elf, { codeBytes: 2048, memBytes: 32768 });
      expect(docSmall).toMatchObject({ codeBytes: 2048, memBytes: 32768 });
      expect(docSmall.prompt).toEqual(progSmall.loader);
      expect(docSmall.prompt).not.toEqual(doc.prompt);
      expect(docSmall.expected).toEqual(Array.from(goldenTokens(elf, { mem: { size: 32768 }, codeBytes: 2048 }).tokens.subarray(2)));
      // a missing ELF: exit 2, nothing written
      const bad = path.join(dir, 'bad.json');
      const e = await cli('trace', path.join(dir, 'none.elf'), '-o', bad);
      expect(e.code).toBe(2);
      expect(fs.existsSync(bad)).toBe(false);
      // a malformed ELF: exit 2, nothing written
      const junk = path.join(dir, 'junk.elf');
      fs.writeFileSync(junk, Buffer.from('not an elf at all'));
      const j = await cli('trace', junk, '-o', bad);
      expect(j.code).toBe(2);
      expect(fs.existsSync(bad)).toBe(false);
      expect(fs.readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
  it('--model takes the RAM sizes and bank size from the chip (a qwen3.5-4b-shaped chip: 32 KiB in banks of 2,048 rows)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-trace-'));
    try {
      // The trace reads only config.json and the manifest: a chip directory without tensors is enough.
      const ck = path.join(dir, 'chip');
      fs.mkdirSync(ck);
      fs.writeFileSync(path.join(ck, 'config.json'), JSON.stringify({ vocab_size: 248320 }));
      const manifest = { circuit: 'rv32-v1', vocab: { circuit: VOCAB }, rv32: { codeWords: 4096, memWords: 8192, memBankWords: 2048, memLayout: MEM_LAYOUT, generic: true, protocol: PROTOCOL_VERSION } };
      fs.writeFileSync(path.join(ck, 'chipc-manifest.json'), JSON.stringify(manifest));
      const elfPath = 'fixtures/isa/zba.elf';
      const out = path.join(dir, 'zba.json');
      const r = await cli('trace', elfPath, '-o', out, '--model', ck);
      expect(r.err).toBe('');
      expect(r.code).toBe(0);
      const doc = JSON.parse(fs.readFileSync(out, 'utf8'));
      expect(doc).toMatchObject({ codeBytes: 16 * 1024, memBytes: 32 * 1024 });
      const loader = programOf(fs.readFileSync(elfPath), { codeBytes: 16 * 1024, memBytes: 32 * 1024 }).loader;
      expect(doc.prompt).toEqual(loader);
      expect(doc.idOffset).toBe(0);
      // The same chip merged into a host of 151,936 ids: every token is written as a model id, shifted by the host's vocabulary.
      const merged = path.join(dir, 'merged');
      fs.mkdirSync(merged);
      const hostVocab = 151936;
      fs.writeFileSync(path.join(merged, 'config.json'), JSON.stringify({ vocab_size: hostVocab + 248320, chipc_merge: { vocab: { chipIdOffset: hostVocab } } }));
      fs.writeFileSync(path.join(merged, 'chipc-manifest.json'), JSON.stringify(manifest));
      const mergedOut = path.join(dir, 'zba-merged.json');
      const m = await cli('trace', elfPath, '-o', mergedOut, '--model', merged);
      expect(m.err).toBe('');
      expect(m.code).toBe(0);
      expect(m.out).toContain('offset by 151,936');
      const mdoc = JSON.parse(fs.readFileSync(mergedOut, 'utf8'));
      expect(mdoc.idOffset).toBe(hostVocab);
      expect(mdoc.prompt).toEqual(loader.map((t: number) => t + hostVocab));
      expect(mdoc.expected).toEqual(doc.expected.map((t: number) => t + hostVocab));
      // a run size that disagrees with the chip's: refused, naming the chip's size, nothing written
      const bad = path.join(dir, 'bad.json');
      const e = await cli('trace', elfPath, '-o', bad, '--model', ck, '--mem-size', '65536');
      expect(e.code).toBe(2);
      expect(e.err).toContain('32 KiB');
      expect(fs.existsSync(bad)).toBe(false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
