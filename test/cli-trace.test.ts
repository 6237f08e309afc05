/**
 * `chipc trace`: the loader prompt and the golden stream an outside engine (tools/hf_check.py)
 * checks a checkpoint against. The prompt must be the program's loader prompt (the one `chipc run
 * --load prompt` feeds, whose RAM state is tested bit-identical to the state file's) and the
 * expected tokens the golden emulator's stream after [BOS, J(entry)], ending with HALT.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from './helpers/cli.ts';
import { programOf } from '../src/chip/run.ts';
import { goldenTokens } from '../riscv/golden-trace.ts';
import { BOS_ID, decodeToken, encodeToken } from '../riscv/protocol.ts';
import { CODE_BASE } from '../circuits/rv32im/cpu.ts';

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
      const prog = programOf(elf);
      expect(doc).toMatchObject({ format: 'chipc-trace', version: 1, protocol: 'v4', memBytes: prog.memBytes, halted: true });
      // the prompt: BOS … J(entry), the loader prompt of the image
      expect(doc.prompt).toEqual(prog.loader);
      expect(doc.prompt[0]).toBe(BOS_ID);
      expect(doc.prompt[doc.prompt.length - 1]).toBe(encodeToken({ kind: 'J', w: (prog.entry - CODE_BASE) / 4 }));
      // the expected tokens: the golden stream after its 2-token prompt, ending with HALT(1) (tohost pass)
      const g = goldenTokens(elf, { mem: { size: prog.memBytes } });
      expect(doc.expected).toEqual(Array.from(g.tokens.subarray(2)));
      expect(decodeToken(doc.expected[doc.expected.length - 1])).toEqual({ kind: 'HALT', code: doc.exitCode });
      expect(doc.instructions).toBe(g.summary.instructions);
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
});
