/**
 * The bad-input catalog: every case (test/helpers/bad-inputs.ts) — malformed safetensors files,
 * checkpoints and configs, circuits, ELF programs, IR files, .chip files, store files, merge hosts
 * and option values — exits 2 with its own error code, a message that names the bad input, no
 * output written, and every input file as it was.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cli } from './helpers/cli.ts';
import { BAD_INPUTS } from './helpers/bad-inputs.ts';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'chipc-bad-inputs-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** name → sha256 of every file under dir (what "nothing lost" compares). */
function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    const p = path.join(e.parentPath ?? (e as unknown as { path: string }).path, e.name);
    out.set(path.relative(dir, p), crypto.createHash('sha256').update(fs.readFileSync(p)).digest('hex'));
  }
  return out;
}

it('the catalog holds at least 60 cases over every area', () => {
  expect(BAD_INPUTS.length).toBeGreaterThanOrEqual(60);
  expect(new Set(BAD_INPUTS.map((c) => c.area))).toEqual(new Set(['safetensors', 'checkpoint', 'circuit', 'elf', 'ir', 'chip', 'store', 'merge', 'cli']));
});

describe('bad input', () => {
  BAD_INPUTS.forEach((c, i) => {
    it(`${c.area}: ${c.label}`, async () => {
      const dir = path.join(root, String(i));
      fs.mkdirSync(dir);
      const { args, names, output } = c.make(dir);
      const before = snapshot(dir);
      const r = await cli(...args);
      expect(r.code, r.err).toBe(2);
      expect(r.err).toContain(`[${c.code}]`);
      expect(r.err).toContain(names);
      if (output !== undefined) expect(fs.existsSync(output)).toBe(false);
      // nothing lost, nothing left behind: the folder holds exactly what it held
      expect(snapshot(dir)).toEqual(before);
    }, 60_000);
  });
});
